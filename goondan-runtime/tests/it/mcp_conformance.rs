//! The MCP conformance suite (`@modelcontextprotocol/conformance`, pinned by
//! `scripts/mcp-peers`) against our Streamable HTTP server, the fixture
//! `tests/mcp_hosts/conformance.rs`: its tools are `#[tool]` functions run by the executor,
//! its resources, prompts and completion the fixture's own rmcp handler composed with
//! `McpServerBuilder::others`.
//!
//! Every server scenario of the suite runs, for `--spec-version 2025-11-25` and for
//! `2026-07-28`, and so does every scenario of the tasks and Skills extensions (`--force`). The suite
//! itself judges the run against `tests/mcp_conformance_baseline.yml`, the scenarios we do
//! not pass yet, each with why: a failure outside it fails the test, and so does a scenario
//! in it that passes (the list must be kept true).
#![cfg(feature = "mcp")]

use goondan_test_peers::mcp_peers;

use crate::mcp_conformance_client::passed;

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};

/// The scenarios of the tasks extension (not part of a revision's suite).
const TASK_SCENARIOS: &[&str] = &[
    "tasks-lifecycle",
    "tasks-capability-negotiation",
    "tasks-wire-fields",
    "tasks-request-state-removal",
    "tasks-mrtr-input",
    "tasks-request-headers",
    "tasks-dispatch-and-envelope",
    "tasks-status-notifications",
    "tasks-required-task-error",
    "tasks-mrtr-composition",
];

/// The scenarios of the Skills extension (SEP-2640), not part of a revision's suite either.
const SKILL_SCENARIOS: &[&str] = &[
    "sep-2640-skills-enumeration",
    "sep-2640-skills-manifest",
    "sep-2640-skills-directory",
];

/// The fixture server; killed when dropped.
struct Fixture(Child);

impl Drop for Fixture {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn start_fixture() -> (Fixture, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_goondan-test-mcp-conformance"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("the fixture server starts");
    let stdout = child.stdout.take().expect("stdout");
    let fixture = Fixture(child);
    let mut url = String::new();
    BufReader::new(stdout)
        .read_line(&mut url)
        .expect("the fixture prints its URL");
    let url = url.trim().to_owned();
    assert!(url.starts_with("http://127.0.0.1:"), "{url}");
    (fixture, url)
}

/// One run of the suite: whether the suite's own baseline check passed, its total line, and
/// its whole output.
fn suite(url: &str, args: &[&str]) -> (bool, String, String) {
    let baseline = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp_conformance_baseline.yml");
    let out = Command::new(mcp_peers::peer("conformance"))
        .env("PATH", mcp_peers::path_with_peers())
        .args(["server", "--url", url, "--expected-failures"])
        .arg(&baseline)
        .args(args)
        .output()
        .expect("the conformance suite runs");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let total = text
        .lines()
        .find(|l| l.starts_with("Total: ") || l.starts_with("Passed: "))
        .unwrap_or("no summary")
        .to_owned();
    (out.status.success(), total, text)
}

#[test]
fn mcp_conformance_every_server_scenario_of_both_revisions_and_the_tasks_extension() {
    let (fixture, url) = start_fixture();
    let mut report = Vec::new();
    for revision in ["2025-11-25", "2026-07-28"] {
        let run = suite(&url, &["--suite", "all", "--spec-version", revision]);
        report.push((revision.to_owned(), run));
    }
    for scenario in TASK_SCENARIOS.iter().chain(SKILL_SCENARIOS) {
        let run = suite(
            &url,
            &[
                "--scenario",
                scenario,
                "--spec-version",
                "2026-07-28",
                "--force",
            ],
        );
        report.push(((*scenario).to_owned(), run));
    }
    drop(fixture);
    for (name, (passed, total, _)) in &report {
        eprintln!(
            "{name}: {} ({total})",
            if *passed { "as expected" } else { "FAILED" }
        );
    }
    let failed: Vec<_> = report.iter().filter(|r| !r.1.0).collect();
    assert!(
        failed.is_empty(),
        "conformance runs failed against the baseline:\n{}",
        failed
            .iter()
            .map(|(name, (_, _, text))| format!("== {name}\n{text}"))
            .collect::<Vec<_>>()
            .join("\n")
    );
    // The README says how many scenarios pass; it says what this run counted (the baseline is
    // empty, so every scenario a revision's run reports passed).
    let counts: Vec<String> = report[..2]
        .iter()
        .map(|(revision, (_, _, text))| format!("{} for {revision}", passed(text).len()))
        .collect();
    let readme = std::fs::read_to_string(goondan_test_peers::workspace_root().join("README.md"))
        .unwrap()
        .replace('\n', " ");
    let claim = format!(
        "server scenario of the MCP conformance suite: {}, the tasks extension's {} and the Skills extension's {}",
        counts.join(" and "),
        TASK_SCENARIOS.len(),
        SKILL_SCENARIOS.len()
    );
    assert!(readme.contains(&claim), "the README should say `{claim}`");
}
