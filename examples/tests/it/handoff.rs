//! `examples/handoff` hands a task between two real agent processes and prints the correlation
//! id on both sides. `cargo test` builds the examples next to this binary's directory.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

fn example_binary() -> PathBuf {
    let deps = std::env::current_exe().unwrap();
    let profile_dir = deps.parent().unwrap().parent().unwrap();
    profile_dir.join("examples").join("handoff")
}

#[test]
fn handoff_runs_between_two_agent_processes() {
    let bin = example_binary();
    assert!(bin.exists(), "{} was not built", bin.display());
    let mut child = std::process::Command::new(&bin)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("the example did not finish in time");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();

    // `[who pid N] ...`: three processes.
    let mut pids: HashMap<String, String> = HashMap::new();
    for line in text.lines() {
        let (head, _) = line.split_once(']').unwrap();
        let mut words = head.trim_start_matches('[').split_whitespace();
        let who = words.next().unwrap().to_owned();
        let pid = words.nth(1).unwrap().to_owned();
        pids.insert(who, pid);
    }
    assert_eq!(pids.len(), 3, "{text}");
    let distinct: std::collections::HashSet<_> = pids.values().collect();
    assert_eq!(distinct.len(), 3, "{text}");

    // The id planner's `agents__request` got back is the one coder saw.
    let seen = text
        .lines()
        .find(|l| l.contains("[coder") && l.contains("correlationId="))
        .unwrap();
    let id = seen.rsplit("correlationId=").next().unwrap();
    assert!(id.starts_with("planner/default#"), "{seen}");
    assert!(
        text.contains(&format!("agents__request -> Ok (correlationId=\"{id}\")")),
        "{text}"
    );
    assert!(text.contains("kernel: "), "{text}");
    assert!(text.contains("all agent processes shut down"), "{text}");
}
