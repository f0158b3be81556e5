#![allow(clippy::unwrap_used, clippy::expect_used)]
//! `goondan run` end to end: the `goondan` program as a real process, its agents as real
//! processes under its Orchestrator, the model a replay server on 127.0.0.1 answering with
//! recorded OpenAI Chat Completions streams.

#[path = "../../goondan-runtime/tests/replay/mod.rs"]
mod replay;
#[path = "support/run.rs"]
mod support;

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
    assert_eq!(results[0]["written"], true, "{}", results[0]);
    assert_eq!(results[0]["path"], "notes/hello.txt", "{}", results[0]);
}
