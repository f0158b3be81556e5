//! `goondan run` end to end: the `goondan` program as a real process, its agents as real
//! processes under its Orchestrator, the model a replay server on 127.0.0.1 answering with
//! recorded OpenAI Chat Completions streams.

use crate::run_support as support;
use goondan_test_peers::replay;

use std::process::Stdio;
use std::time::Duration;

use replay::ReplayServer;
use serde_json::json;
use support::{KEY, bundle, call, goondan, text, tool_results};

async fn run_input(args: &[&str], cwd: &std::path::Path) -> std::process::Output {
    let child = tokio::process::Command::new(goondan())
        .arg("run")
        .args(args)
        .env("GOONDAN_TEST_KEY", KEY)
        .current_dir(cwd)
        .stdin(Stdio::null())
        .kill_on_drop(true)
        .output();
    tokio::time::timeout(Duration::from_secs(60), child)
        .await
        .expect("goondan run did not finish in time")
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_input_writes_a_file_through_file_system_write() {
    let server = ReplayServer::start([
        call(
            "call_w",
            "file-system__write",
            &json!({"path": "notes/hello.txt", "content": "hello from the model"}),
        ),
        text(&["I wrote ", "notes/hello.txt."]),
    ])
    .await;
    let dir = tempfile::tempdir().unwrap();
    let file = bundle(dir.path(), &server);
    let out = run_input(
        &[
            file.to_str().unwrap(),
            "--input",
            "write a note",
            "--approve",
            "never",
        ],
        dir.path(),
    )
    .await;
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert_eq!(stdout, "I wrote notes/hello.txt.\n", "{stderr}");
    // The state directory is next to the bundle; the tools work in its `workspace`.
    let written = dir.path().join(".goondan/workspace/notes/hello.txt");
    assert_eq!(
        std::fs::read_to_string(&written).unwrap(),
        "hello from the model"
    );
    // The call was shown on stderr, on one line with its result.
    assert!(stderr.contains("file-system__write"), "{stderr}");
    assert!(
        !stdout.contains(KEY) && !stderr.contains(KEY),
        "the key is never printed"
    );
    // The model saw the result of the call in its second request, and the key was sent.
    let seen = server.requests();
    assert_eq!(seen.len(), 2);
    assert_eq!(
        seen[0].header("authorization"),
        Some(format!("Bearer {KEY}").as_str())
    );
    let results = tool_results(&seen[1].body);
    assert_eq!(results.len(), 1, "{}", seen[1].body);
    let output: serde_json::Value = serde_json::from_str(&results[0]).unwrap();
    assert_eq!(output["written"], true, "{output}");
    assert_eq!(output["path"], "notes/hello.txt", "{output}");
}

/// A conversation file of an earlier version is moved into the run journal once: the model
/// sees its messages, the file is renamed `*.jsonl.imported`, and the journal holds both the
/// old messages and the new Turn.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_moves_an_old_conversation_file_into_the_run_journal_once() {
    use goondan_runtime::step::journal::{Durability, SqliteJournal};

    let server = ReplayServer::start([text(&["Still here."])]).await;
    let dir = tempfile::tempdir().unwrap();
    let file = bundle(dir.path(), &server);
    let old = dir
        .path()
        .join(".goondan/conversations/assistant.default.jsonl");
    std::fs::create_dir_all(old.parent().unwrap()).unwrap();
    let lines = [
        json!({"id": "m1", "role": "user", "content": "my name is Ada", "createdAt": 1}),
        json!({"id": "m2", "role": "assistant", "content": "Hello, Ada.", "createdAt": 2}),
    ];
    let text_of = |v: &serde_json::Value| v.to_string();
    std::fs::write(
        &old,
        lines.iter().map(text_of).collect::<Vec<_>>().join("\n"),
    )
    .unwrap();

    let out = run_input(
        &[file.to_str().unwrap(), "--input", "what is my name?"],
        dir.path(),
    )
    .await;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let seen = server.requests();
    let contents: Vec<&str> = seen[0].body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["content"].as_str())
        .collect();
    assert!(
        contents.ends_with(&["my name is Ada", "Hello, Ada.", "what is my name?"]),
        "{contents:?}"
    );
    assert!(!old.exists(), "the file was read once");
    assert!(old.with_extension("jsonl.imported").exists());

    let journal = SqliteJournal::file_in(&dir.path().join(".goondan"), "assistant", "default");
    // Its agent process may still be exiting: wait for it to let go of the journal.
    let replay = SqliteJournal::open_waiting(&journal, Durability::Normal, Duration::from_secs(10))
        .unwrap()
        .replay()
        .unwrap();
    let texts: Vec<_> = replay
        .conversation
        .iter()
        .filter_map(|m| m.content.as_deref())
        .collect();
    assert_eq!(
        texts,
        [
            "my name is Ada",
            "Hello, Ada.",
            "what is my name?",
            "Still here."
        ]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_session_in_a_terminal_approves_denies_cancels_and_goes_on_in_the_next_run() {
    use expectrl::{ControlCode, Session};

    let server = ReplayServer::start([
        // Turn 1: a write, approved.
        call(
            "call_a",
            "file-system__write",
            &json!({"path": "a.txt", "content": "approved"}),
        ),
        text(&["Wrote ", "a.txt."]),
        // Turn 2: a write, denied with a reason.
        call(
            "call_b",
            "file-system__write",
            &json!({"path": "b.txt", "content": "denied"}),
        ),
        text(&["Understood, ", "no b.txt."]),
        // Turn 2b: a write whose arguments the person edits.
        call(
            "call_c",
            "file-system__write",
            &json!({"path": "c.txt", "content": "as asked"}),
        ),
        text(&["Wrote what you said."]),
        // Turn 3: a model that takes its time; Ctrl-C cancels the Turn.
        text(&["too late"]).delay(Duration::from_secs(30)),
        // Turn 4: the session goes on.
        text(&["Still ", "here."]),
        // The next run.
        text(&["Welcome back."]),
    ])
    .await;
    let dir = tempfile::tempdir().unwrap();
    let file = bundle(dir.path(), &server);
    let workspace = dir.path().join(".goondan/workspace");

    tokio::task::block_in_place(|| {
        let mut command = std::process::Command::new(goondan());
        command
            .arg("run")
            .arg(&file)
            .env("GOONDAN_TEST_KEY", KEY)
            .current_dir(dir.path());
        let mut p = Session::spawn(command).unwrap();
        p.set_expect_timeout(Some(Duration::from_secs(30)));
        p.expect("> ").unwrap();

        // file-system__write is destructive: the default policy asks.
        p.send_line("write a.txt").unwrap();
        p.expect("? file-system__write").unwrap();
        p.expect("approve [y] / deny [n] (reason) / edit [e] (JSON arguments): ")
            .unwrap();
        p.send_line("y").unwrap();
        p.expect("Wrote a.txt.").unwrap();
        p.expect("> ").unwrap();
        assert_eq!(
            std::fs::read_to_string(workspace.join("a.txt")).unwrap(),
            "approved"
        );

        p.send_line("write b.txt").unwrap();
        p.expect("approve [y]").unwrap();
        p.send_line("n not in this folder").unwrap();
        p.expect("E_TOOL_DENIED").unwrap();
        p.expect("Understood, no b.txt.").unwrap();
        p.expect("> ").unwrap();
        assert!(!workspace.join("b.txt").exists());

        p.send_line("write c.txt").unwrap();
        p.expect("approve [y]").unwrap();
        p.send_line(r#"e {"path": "edited.txt", "content": "as edited"}"#)
            .unwrap();
        p.expect("Wrote what you said.").unwrap();
        p.expect("> ").unwrap();
        assert!(!workspace.join("c.txt").exists());
        assert_eq!(
            std::fs::read_to_string(workspace.join("edited.txt")).unwrap(),
            "as edited"
        );

        p.send_line("take your time").unwrap();
        server.wait_for_requests_blocking(7);
        p.send(ControlCode::EndOfText).unwrap();
        p.expect("cancelled").unwrap();
        p.expect("> ").unwrap();

        p.send_line("are you there?").unwrap();
        p.expect("Still here.").unwrap();
        p.expect("> ").unwrap();
        p.send(ControlCode::EndOfTransmission).unwrap();
        let status = p.get_process_mut().wait().unwrap();
        assert_eq!(
            status,
            expectrl::WaitStatus::Exited(p.get_process().pid(), 0)
        );
    });

    let seen = server.requests();
    assert_eq!(
        seen.len(),
        8,
        "the cancelled Turn's answer was never waited for"
    );
    // The model read the denial, with the person's reason as the suggestion.
    let results = tool_results(&seen[3].body);
    assert_eq!(results.len(), 2, "{}", seen[3].body);
    assert!(results[0].contains("\"written\":true"), "{}", results[0]);
    let denial = &results[1];
    assert!(denial.starts_with("error E_TOOL_DENIED"), "{denial}");
    assert!(
        denial.contains("suggestion: not in this folder"),
        "{denial}"
    );
    // The edited call ran with the person's arguments; the model read its result.
    let results = tool_results(&seen[5].body);
    assert!(results[2].contains("edited.txt"), "{}", results[2]);

    // The next run goes on with the same conversation.
    let out = run_input(
        &[file.to_str().unwrap(), "--input", "do you remember?"],
        dir.path(),
    )
    .await;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout), "Welcome back.\n");
    let seen = server.requests();
    let messages = seen[8].body["messages"].as_array().unwrap().clone();
    let users: Vec<&str> = messages
        .iter()
        .filter(|m| m["role"] == "user")
        .filter_map(|m| m["content"].as_str())
        .collect();
    assert_eq!(
        users,
        [
            "write a.txt",
            "write b.txt",
            "write c.txt",
            "take your time",
            "are you there?",
            "do you remember?"
        ]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_self_restart_restarts_the_agent_process_and_the_session_goes_on() {
    use expectrl::{ControlCode, Session};

    let server = ReplayServer::start([
        call(
            "call_r",
            "self-restart__request",
            &json!({"reason": "reload the prompt"}),
        ),
        text(&["Restarting."]),
        text(&["Back."]),
    ])
    .await;
    let dir = tempfile::tempdir().unwrap();
    let file = bundle(dir.path(), &server);
    tokio::task::block_in_place(|| {
        let mut command = std::process::Command::new(goondan());
        command
            .args(["run", "--approve", "never"])
            .arg(&file)
            .env("GOONDAN_TEST_KEY", KEY)
            .current_dir(dir.path());
        let mut p = Session::spawn(command).unwrap();
        p.set_expect_timeout(Some(Duration::from_secs(30)));
        p.expect("> ").unwrap();
        p.send_line("restart yourself").unwrap();
        p.expect("Restarting.").unwrap();
        // After the answer: the notice, then the prompt; the new process says hello to the
        // terminal as soon as it is up (before or after the prompt).
        let turn_end = p.expect("> ").unwrap();
        let turn_end = String::from_utf8_lossy(turn_end.before()).into_owned();
        assert!(
            turn_end.contains("restarting `assistant`: reload the prompt"),
            "{turn_end}"
        );
        if !turn_end.contains("`assistant/default` restarted (pid") {
            p.expect("`assistant/default` restarted (pid").unwrap();
        }
        p.send_line("are you back?").unwrap();
        p.expect("Back.").unwrap();
        p.expect("> ").unwrap();
        p.send(ControlCode::EndOfTransmission).unwrap();
        p.get_process_mut().wait().unwrap();
    });
    // The new process went on with the conversation of the old one.
    let seen = server.requests();
    assert_eq!(seen.len(), 3);
    let messages = seen[2].body["messages"].as_array().unwrap();
    let contents: Vec<&str> = messages
        .iter()
        .filter_map(|m| m["content"].as_str())
        .collect();
    assert!(contents.contains(&"restart yourself"), "{contents:?}");
    assert!(contents.contains(&"Restarting."), "{contents:?}");
    assert_eq!(contents.last(), Some(&"are you back?"));
}

fn assistant_dir() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/assistant")
}

#[test]
fn the_assistant_example_validates() {
    let out = std::process::Command::new(goondan())
        .args(["validate", "goondan.yaml"])
        .current_dir(assistant_dir())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("0 warning(s)"), "{stdout}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_assistant_example_runs_against_an_openai_compatible_server_named_by_the_environment() {
    let server = ReplayServer::start([
        call(
            "call_w",
            "file-system__write",
            &json!({"path": "todo.md", "content": "- buy milk\n"}),
        ),
        text(&["Added it to ", "todo.md."]),
    ])
    .await;
    let state = tempfile::tempdir().unwrap();
    let child = tokio::process::Command::new(goondan())
        .args([
            "run",
            "goondan.yaml",
            "--input",
            "note: buy milk",
            "--approve",
            "never",
        ])
        .arg("--state")
        .arg(state.path())
        .env("OPENAI_BASE_URL", server.url("/v1"))
        .env("OPENAI_API_KEY", KEY)
        .env("GOONDAN_MODEL", "replayed-model")
        .current_dir(assistant_dir())
        .stdin(Stdio::null())
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(Duration::from_secs(60), child)
        .await
        .unwrap()
        .unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert_eq!(stdout, "Added it to todo.md.\n");
    assert_eq!(
        std::fs::read_to_string(state.path().join("workspace/todo.md")).unwrap(),
        "- buy milk\n"
    );
    let seen = server.requests();
    assert_eq!(seen.len(), 2);
    assert_eq!(seen[0].path, "/v1/chat/completions");
    assert_eq!(
        seen[0].body["model"], "replayed-model",
        "GOONDAN_MODEL names the model"
    );
    assert_eq!(
        seen[0].header("authorization"),
        Some(format!("Bearer {KEY}").as_str())
    );
    assert!(!stdout.contains(KEY) && !stderr.contains(KEY));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_input_that_fails_prints_one_line_and_exits_non_zero() {
    let server = ReplayServer::start([replay::Reply::json(
        400,
        &json!({"error": {"message": "the model `gpt-test` does not exist", "type": "invalid_request_error"}}),
    )])
    .await;
    let dir = tempfile::tempdir().unwrap();
    let file = bundle(dir.path(), &server);
    let out = run_input(&[file.to_str().unwrap(), "--input", "hello"], dir.path()).await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(out.stdout.is_empty());
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), 1, "{stderr}");
    assert!(lines[0].starts_with("error: "), "{stderr}");
    assert!(lines[0].contains("does not exist"), "{stderr}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_asks_before_destructive_tools_by_default_and_denies_when_nobody_can_answer() {
    let server = ReplayServer::start([
        call("call_l", "file-system__list", &json!({"path": "."})),
        call(
            "call_w",
            "file-system__write",
            &json!({"path": "x.txt", "content": "x"}),
        ),
        text(&["I could not write x.txt."]),
    ])
    .await;
    let dir = tempfile::tempdir().unwrap();
    let file = bundle(dir.path(), &server);
    // No `--approve`: the default asks before destructive calls; stdin is empty.
    let out = run_input(&[file.to_str().unwrap(), "--input", "write x"], dir.path()).await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("? file-system__write"), "{stderr}");
    assert!(!dir.path().join(".goondan/workspace/x.txt").exists());
    let seen = server.requests();
    assert_eq!(seen.len(), 3);
    let results = tool_results(&seen[2].body);
    // The read-only call was not asked about; the write was denied.
    assert!(results[0].contains("\"entries\""), "{}", results[0]);
    assert!(
        results[1].starts_with("error E_TOOL_DENIED"),
        "{}",
        results[1]
    );
    assert!(
        results[1].contains("nobody is at the terminal"),
        "{}",
        results[1]
    );
}

#[tokio::test]
async fn run_approve_tool_sets_the_policy_of_some_tools_first_match_first() {
    let server = ReplayServer::start([
        call(
            "call_w",
            "file-system__write",
            &json!({"path": "y.txt", "content": "y"}),
        ),
        call("call_l", "file-system__list", &json!({"path": "."})),
        text(&["Done."]),
    ])
    .await;
    let dir = tempfile::tempdir().unwrap();
    let file = bundle(dir.path(), &server);
    // The write is let through without asking; every other file-system call is refused; the
    // default (ask before destructive calls) would have denied the write with nobody there.
    let out = run_input(
        &[
            file.to_str().unwrap(),
            "--input",
            "write y",
            "--approve-tool",
            "file-system__write=never",
            "--approve-tool",
            "file-system__*=deny",
        ],
        dir.path(),
    )
    .await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(
        std::fs::read_to_string(dir.path().join(".goondan/workspace/y.txt")).unwrap(),
        "y"
    );
    let seen = server.requests();
    let results = tool_results(&seen[2].body);
    assert!(results[0].contains("\"written\":true"), "{}", results[0]);
    assert!(
        results[1].starts_with("error E_TOOL_DENIED"),
        "{}",
        results[1]
    );
}

#[test]
fn run_approve_tool_refuses_a_malformed_rule() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_goondan"))
        .args(["run", "--approve-tool", "bash__exec", "--input", "x"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("PATTERN=POLICY"), "{err}");
}

/// A bridged MCP server that asks for input mid-call (server-everything's
/// `trigger-elicitation-request`, over stdio, a form of every kind of field) is answered at
/// the terminal of `goondan run`: the person fills the form in field by field (an empty line
/// takes the default, a wrong value is asked again), and the next time declines it; the model
/// reads what the server made of each answer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_asks_the_person_at_the_terminal_to_fill_a_bridged_server_s_form() {
    use expectrl::Session;

    let form = "everything__trigger-elicitation-request";
    let server = ReplayServer::start([
        call("call_a", form, &json!({})),
        text(&["Thanks, ", "Ada."]),
        call("call_b", form, &json!({})),
        text(&["No form, ", "then."]),
    ])
    .await;
    let dir = tempfile::tempdir().unwrap();
    let mut yaml = support::replayed_model(&server);
    yaml.push_str(&format!(
        r#"apiVersion: goondan.ai/v1
kind: Extension
metadata: {{name: mcp}}
spec:
  mcp:
    servers:
{everything}---
apiVersion: goondan.ai/v1
kind: Agent
metadata: {{name: assistant}}
spec:
  modelConfig: {{modelRef: "Model/replayed"}}
  tools: []
  extensions: ["Extension/mcp"]
"#,
        everything = support::everything_server(
            "trigger-elicitation-request",
            "        callTimeoutMs: 60000\n"
        ),
    ));
    let file = dir.path().join("goondan.yaml");
    std::fs::write(&file, yaml).unwrap();

    tokio::task::block_in_place(|| {
        let mut command = std::process::Command::new(goondan());
        command
            .arg("run")
            .arg(&file)
            .env("GOONDAN_TEST_KEY", KEY)
            .current_dir(dir.path());
        let mut p = Session::spawn(command).unwrap();
        p.set_expect_timeout(Some(Duration::from_secs(60)));
        p.expect("> ").unwrap();

        p.send_line("tell the server about me").unwrap();
        p.expect("? a call asks you: Please provide inputs for the following fields:")
            .unwrap();
        p.expect("fill it in [y] / decline [n] / cancel [c]: ")
            .unwrap();
        p.send_line("y").unwrap();
        p.expect("String* (Your full, legal name) [text]: ")
            .unwrap();
        p.send_line("Ada Lovelace").unwrap();
        p.expect("Boolean (Agree to the terms and conditions) [y/n]: ")
            .unwrap();
        p.send_line("maybe").unwrap();
        p.expect("answer y or n").unwrap();
        p.expect("[y/n]: ").unwrap();
        p.send_line("y").unwrap();
        // The default of the story's first line, on an empty line.
        p.expect("default It was a dark and stormy night.]: ")
            .unwrap();
        p.send_line("").unwrap();
        p.expect("[text, email]: ").unwrap();
        p.send_line("ada@example.com").unwrap();
        p.expect("[text, uri]: ").unwrap();
        p.send_line("").unwrap();
        p.expect("[text, date]: ").unwrap();
        p.send_line("1815-12-10").unwrap();
        p.expect("[integer 1..100, default 42]: ").unwrap();
        p.send_line("101").unwrap();
        p.expect("out of range").unwrap();
        p.expect("[integer 1..100, default 42]: ").unwrap();
        p.send_line("7").unwrap();
        p.expect("default 3.14]: ").unwrap();
        p.send_line("").unwrap();
        p.expect("one of Monica, Rachel, Joey").unwrap();
        p.send_line("phoebe").unwrap();
        p.expect("comma-separated, default Guitar]: ").unwrap();
        p.send_line("Piano, Violin").unwrap();
        p.expect("one of 1 Superman, 2 Green Lantern").unwrap();
        p.send_line("3").unwrap();
        p.expect("some of 1 Tuna, 2 Salmon, 3 Trout, comma-separated, default fish-1]: ")
            .unwrap();
        p.send_line("").unwrap();
        p.expect("one of 1 Cats, 2 Dogs").unwrap();
        p.send_line("dogs").unwrap();
        p.expect("Thanks, Ada.").unwrap();
        p.expect("> ").unwrap();

        p.send_line("again").unwrap();
        p.expect("fill it in [y] / decline [n] / cancel [c]: ")
            .unwrap();
        p.send_line("n").unwrap();
        p.expect("No form, then.").unwrap();
        p.expect("> ").unwrap();
        p.send_line("exit").unwrap();
        let status = p.get_process_mut().wait().unwrap();
        assert_eq!(
            status,
            expectrl::WaitStatus::Exited(p.get_process().pid(), 0)
        );
    });

    let seen = server.requests();
    assert_eq!(seen.len(), 4);
    let results = tool_results(&seen[1].body);
    let filled = &results[0];
    for typed in [
        "Ada Lovelace",
        "It was a dark and stormy night.",
        "ada@example.com",
        "1815-12-10",
        "Phoebe",
        "Piano",
        "Violin",
        "hero-3",
        "fish-1",
        "pet-2",
        "Agreed to terms: true",
        "Favorite Integer: 7",
        "Favorite Number: 3.14",
    ] {
        assert!(filled.contains(typed), "{typed} is not in {filled}");
    }
    assert!(
        !filled.contains("homepage"),
        "an empty optional field is left out: {filled}"
    );
    let results = tool_results(&seen[3].body);
    assert!(
        results[1].to_lowercase().contains("decline"),
        "{}",
        results[1]
    );
}

/// A bridged server that never answers `initialize` (here `sleep`), whose startup timeout is
/// longer than the agent process's start deadline (10 s), takes nothing else down: the agent
/// process starts, the slow server is left out once its startup timeout has passed, with a
/// warning naming it, and the other server's tool is called as the model asked.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_a_bridged_server_that_never_starts_is_left_out_and_the_others_serve() {
    let server = ReplayServer::start([
        call(
            "call_e",
            "everything__echo",
            &json!({"message": "still here"}),
        ),
        text(&["The echo ", "answered."]),
    ])
    .await;
    let dir = tempfile::tempdir().unwrap();
    let mut yaml = support::replayed_model(&server);
    yaml.push_str(&format!(
        r#"apiVersion: goondan.ai/v1
kind: Extension
metadata: {{name: mcp}}
spec:
  mcp:
    servers:
      - name: slow
        command: sleep
        args: ["600"]
        startupTimeoutMs: 15000
{everything}---
apiVersion: goondan.ai/v1
kind: Agent
metadata: {{name: assistant}}
spec:
  modelConfig: {{modelRef: "Model/replayed"}}
  tools: []
  extensions: ["Extension/mcp"]
"#,
        everything = support::everything_server("echo", ""),
    ));
    let file = dir.path().join("goondan.yaml");
    std::fs::write(&file, yaml).unwrap();
    let out = run_input(
        &[
            file.to_str().unwrap(),
            "--input",
            "echo something",
            "--approve",
            "never",
        ],
        dir.path(),
    )
    .await;
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert_eq!(stdout, "The echo answered.\n", "{stderr}");
    assert!(
        stderr.contains("slow"),
        "the slow server is named: {stderr}"
    );
    let seen = server.requests();
    assert_eq!(seen.len(), 2, "{stderr}");
    let results = tool_results(&seen[1].body);
    assert!(results[0].contains("still here"), "{results:?}");
    // The model was shown the echo and nothing of the slow server.
    assert!(seen[0].body.to_string().contains("everything__echo"));
    assert!(!seen[0].body.to_string().contains("slow__"));
}

/// A bridged server that is up with a tool whose schema nests 5,000 levels: `goondan run`
/// says which tool is left out and why, and the model is shown the server's other tool and
/// nothing of the one left out.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_names_the_tool_a_bridged_server_leaves_out_and_the_model_sees_only_the_others() {
    let server = ReplayServer::start([text(&["Done."])]).await;
    let dir = tempfile::tempdir().unwrap();
    let mut yaml = support::replayed_model(&server);
    yaml.push_str(&format!(
        r#"apiVersion: goondan.ai/v1
kind: Extension
metadata: {{name: mcp}}
spec:
  mcp:
    servers:
{deep}---
apiVersion: goondan.ai/v1
kind: Agent
metadata: {{name: assistant}}
spec:
  modelConfig: {{modelRef: "Model/replayed"}}
  tools: []
  extensions: ["Extension/mcp"]
"#,
        deep = support::deep_schema_server(),
    ));
    let file = dir.path().join("goondan.yaml");
    std::fs::write(&file, yaml).unwrap();
    let out = run_input(
        &[
            file.to_str().unwrap(),
            "--input",
            "hello",
            "--approve",
            "never",
        ],
        dir.path(),
    )
    .await;
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(
        stderr.contains(
            "MCP server `deep` of `mcp` is up; 1 tool left out: `deep`: its definition nests 5003 levels deep"
        ),
        "{stderr}"
    );
    let seen = server.requests();
    let shown = seen[0].body.to_string();
    assert!(shown.contains("deep__fine"), "{shown}");
    assert!(!shown.contains("deep__deep"), "{shown}");
}

/// A bundle whose MCP Extension bridges `goondan mcp serve --skills` (over stdio) with one
/// skill, `tidy-imports`, and shows its skills as `shown` (`spec.mcp.skills`).
fn skills_bundle(dir: &std::path::Path, server: &ReplayServer, shown: &str) -> std::path::PathBuf {
    let skills = dir.join("skills");
    std::fs::create_dir_all(skills.join("tidy-imports/examples")).unwrap();
    std::fs::write(skills.join("tidy-imports/SKILL.md"), TIDY_SKILL).unwrap();
    std::fs::write(
        skills.join("tidy-imports/examples/before.rs"),
        "use b;\nuse a;\n",
    )
    .unwrap();
    let bin = std::path::Path::new(goondan()).parent().unwrap();
    let mut yaml = support::replayed_model(server);
    yaml.push_str(&format!(
        r#"apiVersion: goondan.ai/v1
kind: Extension
metadata: {{name: mcp}}
spec:
  mcp:
    servers:
      - name: docs
        command: "{goondan}"
        args: [mcp, serve, --tools, json-query, --skills, "{skills}"]
        sandbox: {{read: ["{skills}", "{bin}"]}}
    skills: {shown}
---
apiVersion: goondan.ai/v1
kind: Agent
metadata: {{name: assistant}}
spec:
  modelConfig: {{modelRef: "Model/replayed"}}
  systemPrompt: "You are a careful assistant."
  tools: []
  extensions: ["Extension/mcp"]
"#,
        goondan = goondan(),
        skills = skills.display(),
        bin = bin.display(),
    ));
    bundle_file(dir, &yaml)
}

const TIDY_SKILL: &str =
    "---\nname: tidy-imports\ndescription: Sorts and groups a file's imports.\n---\n\nSort them.\n";

/// The names of the tools a model request shows.
fn shown_tools(body: &serde_json::Value) -> Vec<String> {
    body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap().to_owned())
        .collect()
}

/// An MCP Extension's `spec.mcp.skills: prompt`: the system prompt lists the skills its
/// server serves (here `goondan mcp serve --skills`, bridged over stdio), the model loads one
/// with `skills__load` and reads its checked `SKILL.md`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_shows_a_bridged_server_s_skills_in_the_system_prompt_and_the_model_loads_one() {
    let server = ReplayServer::start([
        call(
            "call_s",
            "skills__load",
            &json!({"server": "docs", "uri": "skill://tidy-imports/SKILL.md"}),
        ),
        text(&["Loaded."]),
    ])
    .await;
    let dir = tempfile::tempdir().unwrap();
    let file = skills_bundle(dir.path(), &server, "prompt");
    let out = run_input(
        &[
            file.to_str().unwrap(),
            "--input",
            "tidy my imports",
            "--approve",
            "never",
        ],
        dir.path(),
    )
    .await;
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert_eq!(stdout, "Loaded.\n", "{stderr}");
    let seen = server.requests();
    assert_eq!(seen.len(), 2, "{stderr}");
    let system = seen[0].body["messages"][0]["content"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(
        system.starts_with("You are a careful assistant.")
            && system.contains(
                "- tidy-imports (server `docs`, uri `skill://tidy-imports/SKILL.md`): Sorts and groups a file's imports."
            ),
        "{system}"
    );
    let shown = shown_tools(&seen[0].body);
    assert!(shown.contains(&"skills__load".to_owned()), "{shown:?}");
    assert!(!shown.contains(&"skills__list".to_owned()), "{shown:?}");
    let results = tool_results(&seen[1].body);
    assert!(results[0].contains("Sort them."), "{results:?}");
}

/// `spec.mcp.skills: tool`: the model lists the skills with `skills__list` (nothing in the
/// system prompt), then reads one of a skill's files with `skills__read`; a file the skill
/// does not list is refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_shows_a_bridged_server_s_skills_as_a_tool_and_the_model_reads_a_skill_s_file() {
    let skill = "skill://tidy-imports/SKILL.md";
    let server = ReplayServer::start([
        call("call_l", "skills__list", &json!({})),
        call(
            "call_r",
            "skills__read",
            &json!({"server": "docs", "skill": skill, "file": "skill://tidy-imports/examples/before.rs"}),
        ),
        call(
            "call_x",
            "skills__read",
            &json!({"server": "docs", "skill": skill, "file": "skill://tidy-imports/../secret"}),
        ),
        text(&["Read."]),
    ])
    .await;
    let dir = tempfile::tempdir().unwrap();
    let file = skills_bundle(dir.path(), &server, "tool");
    let out = run_input(
        &[
            file.to_str().unwrap(),
            "--input",
            "show me the example",
            "--approve",
            "never",
        ],
        dir.path(),
    )
    .await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let seen = server.requests();
    assert_eq!(seen.len(), 4, "{stderr}");
    let system = seen[0].body["messages"][0]["content"]
        .as_str()
        .unwrap_or_default();
    assert_eq!(system, "You are a careful assistant.");
    assert!(shown_tools(&seen[0].body).contains(&"skills__list".to_owned()));
    let listed = tool_results(&seen[1].body);
    assert!(
        listed[0].contains("tidy-imports") && listed[0].contains("examples/before.rs"),
        "{listed:?}"
    );
    let read = tool_results(&seen[2].body);
    assert!(read[1].contains("use b;"), "{read:?}");
    let refused = tool_results(&seen[3].body);
    assert!(refused[2].contains("E_TOOL_INVALID_ARGS"), "{refused:?}");
}

/// An Agent's `spec.codeMode` in a bundle: the model is shown the code tool alone
/// (`callable: false`), its program calls the agent's tools as functions in the agent's
/// workspace, the terminal shows the program, then each of its calls and what it prints as
/// they happen, and the model reads what the program printed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_code_mode_runs_the_model_s_program_whose_calls_are_the_agent_s_tools() {
    let program = "print(\"writing\")\n\
                   file_system.write(path=\"notes/a.txt\", content=\"from code\")\n\
                   text = file_system.read(path=\"notes/a.txt\")[\"content\"]\n\
                   print(text)\n\
                   text.upper()";
    let server = ReplayServer::start([
        call("call_c", "code__run", &json!({"code": program})),
        text(&["Done."]),
    ])
    .await;
    let dir = tempfile::tempdir().unwrap();
    let file = support::bundle_with(dir.path(), &server, &["file-system"], None);
    let mut yaml = std::fs::read_to_string(&file).unwrap();
    yaml.push_str("  codeMode: {callable: false}\n");
    std::fs::write(&file, yaml).unwrap();
    let out = run_input(
        &[
            file.to_str().unwrap(),
            "--input",
            "keep a note",
            "--approve",
            "never",
        ],
        dir.path(),
    )
    .await;
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert_eq!(stdout, "Done.\n", "{stderr}");
    let written = dir.path().join(".goondan/workspace/notes/a.txt");
    assert_eq!(std::fs::read_to_string(&written).unwrap(), "from code");
    // The terminal showed the program, each of its calls under it, and what it printed.
    let lines: Vec<&str> = stderr.lines().collect();
    let at = |text: &str| {
        lines
            .iter()
            .position(|l| *l == text)
            .unwrap_or_else(|| panic!("no line {text:?} in:\n{stderr}"))
    };
    let started = at("  → code__run");
    let program = at("    │ file_system.write(path=\"notes/a.txt\", content=\"from code\")");
    let writing = at("    ┆ writing");
    let write = at("    → file-system__write path=notes/a.txt content=from code");
    let read = at("    → file-system__read path=notes/a.txt");
    let printed = at("    ┆ from code");
    // Each line as it happened: a print before the calls is shown before them.
    assert!(started < program && program < writing && writing < write);
    assert!(write < read && read < printed);
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("    ✓ file-system__read path=notes/a.txt (")),
        "{stderr}"
    );
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("  ✓ code__run (") && l.ends_with("→ FROM CODE")),
        "{stderr}"
    );
    let seen = server.requests();
    assert_eq!(seen.len(), 2, "{stderr}");
    let shown: Vec<_> = seen[0].body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(shown, ["code__run"]);
    let described = seen[0].body["tools"][0]["function"]["description"]
        .as_str()
        .unwrap();
    assert!(
        described.contains("class file_system:") && described.contains("def read(*, path: str"),
        "{described}"
    );
    let results = tool_results(&seen[1].body);
    assert!(results[0].contains("from code"), "{results:?}");
}

/// `yaml` written as `goondan.yaml` in `dir`.
fn bundle_file(dir: &std::path::Path, yaml: &str) -> std::path::PathBuf {
    let file = dir.join("goondan.yaml");
    std::fs::write(&file, yaml).unwrap();
    file
}

/// `goondan validate FILE`: whether the bundle is valid, and the report.
fn validate(file: &std::path::Path) -> (bool, String) {
    let out = std::process::Command::new(goondan())
        .arg("validate")
        .arg(file)
        .output()
        .unwrap();
    let report = String::from_utf8_lossy(&out.stdout).into_owned();
    (out.status.success(), report)
}

/// An Agent's `spec.skills` that names no folder is a problem of the bundle, on its line.
#[test]
fn run_validate_reports_a_skills_folder_that_is_not_there_on_its_line() {
    let dir = tempfile::tempdir().unwrap();
    let file = bundle_file(
        dir.path(),
        "apiVersion: goondan.ai/v1\nkind: Agent\nmetadata: {name: assistant}\nspec:\n  skills: ./no-skills\n",
    );
    let (valid, report) = validate(&file);
    assert!(!valid, "{report}");
    assert!(
        report.contains(":5") && report.contains("`./no-skills`, which is not a folder"),
        "{report}"
    );
    std::fs::create_dir(dir.path().join("no-skills")).unwrap();
    let (_, report) = validate(&file);
    assert!(!report.contains("spec.skills"), "{report}");
}

/// A `spec.mcp.skills` that is neither `tool` nor `prompt` is a problem of the bundle, on its
/// line.
#[test]
fn run_validate_reports_a_wrong_way_of_showing_skills_on_its_line() {
    let dir = tempfile::tempdir().unwrap();
    let file = bundle_file(
        dir.path(),
        "apiVersion: goondan.ai/v1\nkind: Extension\nmetadata: {name: mcp}\nspec:\n  mcp:\n    servers: [{name: docs, url: \"http://127.0.0.1:9/mcp\"}]\n    skills: sometimes\n",
    );
    let (valid, report) = validate(&file);
    assert!(!valid, "{report}");
    assert!(
        report.contains(":7") && report.contains("`spec.mcp.skills` is `tool`"),
        "{report}"
    );
}

/// A wrong `spec.codeMode` is a problem of the bundle, on its line.
#[test]
fn run_validate_reports_a_wrong_code_mode_on_its_line() {
    let dir = tempfile::tempdir().unwrap();
    let file = bundle_file(
        dir.path(),
        "apiVersion: goondan.ai/v1\nkind: Agent\nmetadata: {name: assistant}\nspec:\n  codeMode: {maxCals: 3}\n",
    );
    let (valid, report) = validate(&file);
    assert!(!valid, "{report}");
    assert!(
        report.contains(":5") && report.contains("`codeMode` has no `maxCals`"),
        "{report}"
    );
}
