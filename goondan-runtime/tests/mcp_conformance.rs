//! Issue 10, 12(c): the MCP conformance suite's server scenarios against our Streamable HTTP
//! server (the fixture `tests/mcp_hosts/conformance.rs`, started here): every scenario for the
//! features the server announces (tools, with progress; the lifecycle, ping, the Streamable
//! HTTP transport and its DNS-rebinding protection) must pass. Logging, completions,
//! resources, prompts, sampling and elicitation are not announced, so their scenarios do not
//! apply; neither do image, audio and embedded-resource contents, which Goondan outputs (JSON)
//! never produce.
#![allow(clippy::unwrap_used, clippy::expect_used)]
#![cfg(feature = "mcp")]

#[path = "support/mcp_peers.rs"]
mod mcp_peers;

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

/// The scenarios that apply to our server.
const SCENARIOS: &[&str] = &[
    "server-initialize",
    "ping",
    "tools-list",
    "tools-call-simple-text",
    "tools-call-error",
    "tools-call-with-progress",
    "json-schema-2020-12",
    "server-sse-polling",
    "server-sse-multiple-streams",
    "dns-rebinding-protection",
];

/// The fixture server; killed when dropped.
struct Fixture(Child);

impl Drop for Fixture {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn mcp_conformance_server_scenarios_pass_against_our_streamable_http_server() {
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

    let mut report = Vec::new();
    for scenario in SCENARIOS {
        let out = Command::new(mcp_peers::peer("conformance"))
            .env("PATH", mcp_peers::path_with_peers())
            .args(["server", "--url", &url, "--scenario", scenario])
            .output()
            .expect("the conformance suite runs");
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        let summary = text
            .lines()
            .find(|l| l.starts_with("Passed: "))
            .unwrap_or("no summary")
            .to_owned();
        let passed = out.status.success() && summary.contains(", 0 failed");
        report.push((scenario, passed, summary, text));
    }
    drop(fixture);
    for (scenario, passed, summary, _) in &report {
        eprintln!(
            "{scenario}: {} ({summary})",
            if *passed { "passed" } else { "FAILED" }
        );
    }
    let failed: Vec<_> = report.iter().filter(|r| !r.1).collect();
    assert!(
        failed.is_empty(),
        "conformance scenarios failed:\n{}",
        failed
            .iter()
            .map(|(s, _, _, text)| format!("== {s}\n{text}"))
            .collect::<Vec<_>>()
            .join("\n")
    );
}
