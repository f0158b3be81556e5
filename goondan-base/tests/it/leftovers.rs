//! Nothing outlives its agent: what a `bash` call started ends when the
//! `goondan` process running it is stopped by a signal, or, after a crash, before the agent
//! resumes. Each command is a `sleep` with an argument no other process has, found in `/proc`
//! by its command line (the sandbox stays on: its processes are in the host's `/proc` too).

use std::process::Stdio;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use goondan_test_peers::replay::ReplayServer;
use nix::sys::signal::{Signal, kill, killpg};
use nix::unistd::Pid;
use serde_json::json;

use crate::run_support::{KEY, bundle_with, call, goondan, text, tool_results};

/// A `sleep` argument no other process has: long, and unique to this test run and call.
fn unique_sleep() -> String {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .subsec_nanos();
    format!("1234.{}{nanos:09}", std::process::id())
}

/// The processes one of whose arguments is `arg`.
fn running_with(arg: &str) -> Vec<i32> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        if cmdline.split(|b| *b == 0).any(|a| a == arg.as_bytes()) {
            found.push(pid);
        }
    }
    found
}

/// Kills what is left of the `sleep` when the test ends, failed or not.
struct Reaper(String);

impl Drop for Reaper {
    fn drop(&mut self) {
        for pid in running_with(&self.0) {
            let _ = kill(Pid::from_raw(pid), Signal::SIGKILL);
        }
    }
}

/// Waits until the `sleep` runs (a bound only for a test that went wrong).
fn wait_running(arg: &str) {
    let start = Instant::now();
    while running_with(arg).is_empty() {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "the command never started"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Asserts that no process with `arg` survives; ones being killed get a few seconds to go.
fn assert_gone(arg: &str) {
    let start = Instant::now();
    while !running_with(arg).is_empty() && start.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(20));
    }
    let left = running_with(arg);
    assert!(
        left.is_empty(),
        "the call's `sleep {arg}` survived: {left:?}"
    );
}

/// Waits until the child `pid` has exited (a bound only for a test that went wrong); it stays
/// unreaped, a zombie, until waited for.
fn wait_exited(pid: u32) {
    let start = Instant::now();
    loop {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
        // `pid (name) state ...`
        let state = stat.rsplit_once(')').unwrap().1.split_whitespace().next();
        if state == Some("Z") {
            return;
        }
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "the program never exited"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// `goondan tools call bash__exec` running `command`, stopped by `signal` once the `sleep` of
/// `arg` runs; asserts the `sleep` did not survive the program, and returns the program's exit
/// status, when it ended by one.
fn stop_tools_call(command: &str, arg: &str, signal: Signal) -> Option<i32> {
    let dir = tempfile::tempdir().unwrap();
    let args = json!({"command": command, "timeoutMs": 600_000}).to_string();
    let child = std::process::Command::new(goondan())
        .args(["tools", "call", "bash__exec", &args, "--workdir"])
        .arg(dir.path())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_running(arg);
    let pid = Pid::from_raw(i32::try_from(child.id()).unwrap());
    kill(pid, signal).unwrap();
    // Checked before the program is reaped: while its pid exists, no other process's sweep of
    // what dead processes left (bash::end_stale_calls) ends the command in its place.
    wait_exited(child.id());
    assert_gone(arg);
    child.wait_with_output().unwrap().status.code()
}

#[test]
fn tools_call_stopped_by_sigterm_ends_its_command_even_one_deaf_to_sigterm() {
    let arg = unique_sleep();
    let _reaper = Reaper(arg.clone());
    // `sleep` inherits the ignored SIGTERM: only the SIGKILL after the grace period ends it.
    let command = format!("trap '' TERM; sleep {arg}");
    let status = stop_tools_call(&command, &arg, Signal::SIGTERM);
    assert_eq!(status, Some(143));
}

#[test]
fn tools_call_stopped_by_sigint_ends_its_command() {
    let arg = unique_sleep();
    let _reaper = Reaper(arg.clone());
    let status = stop_tools_call(&format!("sleep {arg}"), &arg, Signal::SIGINT);
    assert_eq!(status, Some(130));
}

/// `goondan run` of `bundle` with `input`, calls approved without asking, in a process group of
/// its own (with its agent processes).
fn run(bundle: &std::path::Path, input: &str, dir: &std::path::Path) -> tokio::process::Command {
    let mut cmd = tokio::process::Command::new(goondan());
    cmd.arg("run")
        .arg(bundle)
        .args(["--approve", "never", "--input", input])
        .env("GOONDAN_TEST_KEY", KEY)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    cmd
}

/// `goondan run` and its agent process killed (SIGKILL, the whole process group) while a
/// `bash__exec` runs: the command runs on, and the next run's agent ends it before it resumes
/// the Turn, whose model is told the call was interrupted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_command_left_by_a_killed_agent_ends_before_the_agent_resumes() {
    let arg = unique_sleep();
    let _reaper = Reaper(arg.clone());
    let server = ReplayServer::start([
        call(
            "b1",
            "bash__exec",
            &json!({"command": format!("sleep {arg}"), "timeoutMs": 600_000}),
        ),
        // The second run: the resumed Turn, told the call was interrupted...
        text(&["The command was cut off."]),
        // ...then the new Turn.
        text(&["Nothing runs now."]),
    ])
    .await;
    let dir = tempfile::tempdir().unwrap();
    let file = bundle_with(dir.path(), &server, &["bash"], None);

    let first = run(&file, "start the command", dir.path()).spawn().unwrap();
    let waiting = arg.clone();
    tokio::task::spawn_blocking(move || wait_running(&waiting))
        .await
        .unwrap();
    let pgid = Pid::from_raw(i32::try_from(first.id().unwrap()).unwrap());
    killpg(pgid, Signal::SIGKILL).unwrap();
    let killed = first.wait_with_output().await.unwrap();
    assert!(!killed.status.success());
    // The command outlived its agent (its cgroup and process group are its own). Not asserted
    // here: the first `bash` call of any other `goondan` in this cgroup, another test's, may
    // already have ended it.

    let out = tokio::time::timeout(
        Duration::from_secs(120),
        run(&file, "is it still running?", dir.path()).output(),
    )
    .await
    .expect("the second run did not finish")
    .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("Nothing runs now."),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert_gone(&arg);

    let seen = server.requests();
    assert_eq!(seen.len(), 3, "the first answer was not asked for again");
    let told = tool_results(&seen[1].body);
    assert_eq!(told.len(), 1, "{}", seen[1].body);
    assert!(
        told[0].contains("E_TOOL_INTERRUPTED") && told[0].contains("`bash__exec`"),
        "{}",
        told[0]
    );
}
