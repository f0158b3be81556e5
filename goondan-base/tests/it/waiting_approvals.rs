//! Approvals that wait, end to end: `goondan run` keeps each approval
//! question in its state directory; the question outlives a crash of the whole run (SIGKILL),
//! `goondan approvals list|answer` sees and answers it from another process, the next run
//! shows it and resumes its Turn under the same question, the first answer stands, and a
//! question nobody answers expires into `E_TOOL_DENIED` with the reason `expired`.

use crate::run_support as support;
use goondan_test_peers::replay;

use std::path::Path;

use goondan_runtime::calls::approval::SqliteQuestions;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use replay::ReplayServer;
use serde_json::{Value, json};
use support::{KEY, bundle, call, goondan, text, tool_results};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

/// A `goondan run` whose terminal never answers: its stdin open and silent until it ends.
struct Run {
    child: Child,
    _stdin: Option<tokio::process::ChildStdin>,
}

impl Run {
    /// Waits for the run to end: its exit status and standard output.
    async fn finish(mut self) -> (std::process::ExitStatus, String) {
        let mut stdout = self.child.stdout.take().unwrap();
        let read = tokio::spawn(async move {
            let mut text = String::new();
            tokio::io::AsyncReadExt::read_to_string(&mut stdout, &mut text)
                .await
                .unwrap();
            text
        });
        let status = tokio::time::timeout(Duration::from_secs(60), self.child.wait())
            .await
            .expect("the run did not finish")
            .unwrap();
        (status, read.await.unwrap())
    }
}

/// `goondan run BUNDLE --input INPUT [extra]` in its own process group, with a terminal that
/// never answers (stdin open and silent) and its standard error collected line by line.
fn start_run(bundle: &Path, input: &str, extra: &[&str]) -> (Run, Arc<Mutex<Vec<String>>>) {
    let mut child = Command::new(goondan())
        .arg("run")
        .arg(bundle)
        .args(["--input", input])
        .args(extra)
        .env("GOONDAN_TEST_KEY", KEY)
        .current_dir(bundle.parent().unwrap())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let lines = Arc::new(Mutex::new(Vec::new()));
    let stderr = child.stderr.take().unwrap();
    let collected = Arc::clone(&lines);
    tokio::spawn(async move {
        let mut reader = BufReader::new(stderr).lines();
        while let Ok(Some(line)) = reader.next_line().await {
            collected.lock().unwrap().push(line);
        }
    });
    let stdin = child.stdin.take();
    (
        Run {
            child,
            _stdin: stdin,
        },
        lines,
    )
}

/// Waits until a line of `lines` contains `needle`; returns that line.
async fn wait_for_line(lines: &Mutex<Vec<String>>, needle: &str) -> String {
    let start = Instant::now();
    loop {
        if let Some(line) = lines.lock().unwrap().iter().find(|l| l.contains(needle)) {
            return line.clone();
        }
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "no line with `{needle}` in:\n{}",
            lines.lock().unwrap().join("\n")
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Where the questions are: a state directory, or the NATS server of the journals.
struct Place {
    state: std::path::PathBuf,
    nats: Option<String>,
}

/// `goondan approvals ARGS --state STATE [--journal URL]`: exit status and stdout.
async fn approvals(place: &Place, args: &[&str]) -> (i32, String) {
    let mut command = Command::new(goondan());
    command
        .arg("approvals")
        .args(args)
        .arg("--state")
        .arg(&place.state);
    if let Some(url) = &place.nats {
        command.args(["--journal", url]);
    }
    let out = command.stdin(Stdio::null()).output().await.unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr);
    (out.status.code().unwrap_or(-1), format!("{stdout}{stderr}"))
}

/// The questions `goondan approvals list --json [--all]` prints.
async fn listed(place: &Place, all: bool) -> Vec<Value> {
    let mut args = vec!["list", "--json"];
    if all {
        args.push("--all");
    }
    let (code, out) = approvals(place, &args).await;
    assert_eq!(code, 0, "{out}");
    serde_json::from_str::<Vec<Value>>(&out).unwrap_or_else(|e| panic!("{e}: {out}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn approvals_wait_across_a_crash_and_are_answered_from_another_process_once() {
    approvals_wait_across_a_crash(None).await;
}

/// The same with the journals on JetStream (`--journal nats://...`): the questions are kept on
/// the NATS server, so they are listed and answered with `--journal` from any machine, and
/// the state directory holds none.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn approvals_on_jetstream_wait_across_a_crash_and_are_answered_from_anywhere_once() {
    let nats = goondan_test_peers::nats::NatsServer::start_jetstream();
    approvals_wait_across_a_crash(Some(&nats.url)).await;
}

async fn approvals_wait_across_a_crash(nats: Option<&str>) {
    let server = ReplayServer::start([
        // Run 1: a destructive write; its question waits, and the run is killed.
        call(
            "call_w",
            "file-system__write",
            &json!({"path": "x.txt", "content": "kept"}),
        ),
        // Run 2: the resumed Turn goes on after the approved write...
        text(&["Wrote x.txt."]),
        // ...and then the new input's Turn.
        text(&["Nothing else."]),
    ])
    .await;
    let dir = tempfile::tempdir().unwrap();
    let file = bundle(dir.path(), &server);
    let place = Place {
        state: dir.path().join(".goondan"),
        nats: nats.map(str::to_owned),
    };
    let journal: Vec<&str> = match nats {
        Some(url) => vec!["--journal", url, "--journal-lease", "2s"],
        None => Vec::new(),
    };

    // Before anything was asked: an empty list, not an error.
    assert!(listed(&place, true).await.is_empty());

    let (mut first, first_err) = start_run(&file, "write x", &journal);
    let asked = wait_for_line(&first_err, "goondan approvals answer").await;
    let waiting = listed(&place, false).await;
    assert_eq!(waiting.len(), 1, "{waiting:?}");
    let id = waiting[0]["id"].as_str().unwrap().to_owned();
    assert!(asked.contains(&format!("question {id}")), "{asked}");
    assert_eq!(waiting[0]["toolName"], "file-system__write");
    assert_eq!(waiting[0]["agent"], "assistant");
    // Kill the whole run, agent processes included, while the question waits.
    let pgid = nix::unistd::Pid::from_raw(i32::try_from(first.child.id().unwrap()).unwrap());
    nix::sys::signal::killpg(pgid, nix::sys::signal::Signal::SIGKILL).unwrap();
    let _ = first.child.wait().await;
    assert_eq!(server.requests().len(), 1);
    assert!(!dir.path().join(".goondan/workspace/x.txt").exists());

    // The question outlived the crash.
    let (code, out) = approvals(&place, &["list"]).await;
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains(&id) && out.contains("file-system__write"),
        "{out}"
    );
    // An answer for another agent's question, or for no question, changes nothing.
    let (code, out) = approvals(&place, &["answer", &id, "approve", "--agent", "other"]).await;
    assert_eq!(code, 2, "{out}");
    assert!(out.contains("`assistant`'s, not `other`'s"), "{out}");
    let (code, out) = approvals(&place, &["answer", "000000000000", "approve"]).await;
    assert_eq!(code, 2, "{out}");
    assert!(out.contains("no approval question has the id"), "{out}");
    let (code, out) = approvals(&place, &["answer", &id, "edit", "[1, 2]"]).await;
    assert_eq!(code, 2, "{out}");
    assert_eq!(listed(&place, false).await.len(), 1);

    // The next run shows it, resumes the Turn and asks again under the same id; another
    // process answers while the terminal still asks.
    let (second, second_err) = start_run(&file, "anything else?", &journal);
    let shown = wait_for_line(&second_err, "wait from an earlier session").await;
    assert!(shown.starts_with("1 approval question"), "{shown}");
    wait_for_line(&second_err, &format!("question {id}: answer here")).await;
    let (code, out) = approvals(&place, &["answer", &id, "approve"]).await;
    assert_eq!(code, 0, "{out}");
    assert_eq!(out.trim(), format!("{id}: approved by cli"));
    let (status, stdout) = second.finish().await;
    let stderr = second_err.lock().unwrap().join("\n");
    assert!(status.success(), "{stderr}");
    assert_eq!(stdout, "Nothing else.\n");
    assert!(
        stderr.contains("answered elsewhere: approved by cli"),
        "{stderr}"
    );

    // The write ran once, with the approved arguments; the model was not asked again for
    // the answer it had given before the crash.
    assert_eq!(
        std::fs::read_to_string(dir.path().join(".goondan/workspace/x.txt")).unwrap(),
        "kept"
    );
    let seen = server.requests();
    assert_eq!(seen.len(), 3);
    let results = tool_results(&seen[1].body);
    assert_eq!(results.len(), 1, "{}", seen[1].body);
    assert!(results[0].contains("\"written\":true"), "{}", results[0]);

    // A second answer is told the first one stands.
    let (code, out) = approvals(&place, &["answer", &id, "deny", "too late"]).await;
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("the first answer stands"), "{out}");
    assert!(listed(&place, false).await.is_empty());
    let all = listed(&place, true).await;
    assert_eq!(all[0]["answer"]["decision"], "approve");
    assert_eq!(all[0]["answer"]["by"], "cli");
    let kept_here = SqliteQuestions::file_in(&place.state).exists();
    assert_eq!(
        kept_here,
        nats.is_none(),
        "the questions are kept where the journals are"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approval_question_nobody_answers_expires_into_a_denial_the_model_reads() {
    let server = ReplayServer::start([
        call(
            "call_y",
            "file-system__write",
            &json!({"path": "y.txt", "content": "never"}),
        ),
        text(&["Nobody approved y.txt."]),
    ])
    .await;
    let dir = tempfile::tempdir().unwrap();
    let file = bundle(dir.path(), &server);
    let place = Place {
        state: dir.path().join(".goondan"),
        nats: None,
    };

    let (run, lines) = start_run(&file, "write y", &["--approval-expiry", "1s"]);
    let (status, stdout) = run.finish().await;
    let stderr = lines.lock().unwrap().join("\n");
    assert!(status.success(), "{stderr}");
    assert_eq!(stdout, "Nobody approved y.txt.\n");
    assert!(
        stderr.contains("answered elsewhere: denied by expiry"),
        "{stderr}"
    );
    assert!(!dir.path().join(".goondan/workspace/y.txt").exists());
    let results = tool_results(&server.requests()[1].body);
    assert!(
        results[0].starts_with("error E_TOOL_DENIED"),
        "{}",
        results[0]
    );
    assert!(results[0].contains("suggestion: expired"), "{}", results[0]);

    let all = listed(&place, true).await;
    assert_eq!(all.len(), 1);
    assert_eq!(all[0]["answer"]["by"], "expiry");
    let id = all[0]["id"].as_str().unwrap();
    let (code, out) = approvals(&place, &["answer", id, "approve"]).await;
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("the first answer stands"), "{out}");
}
