//! The MCP conformance suite (`@modelcontextprotocol/conformance`, pinned by
//! `scripts/mcp-peers`) against our MCP client, the bridge: the suite starts
//! `tests/mcp_hosts/conformance_client.rs` (an `McpExtension` with one HTTP server, an agent,
//! calls through the executor) once per scenario, with the scenario's server URL.
//!
//! Every client scenario the suite lists for `--spec-version 2025-11-25` and for `2026-07-28`
//! runs, the authorization ones included, and so does every scenario it lists as an
//! extension's (`--force`, at both revisions): the OAuth extension's client credentials, DPoP
//! (with and without the servers' nonces), enterprise-managed authorization, workload identity
//! federation, and the Skills extension's client scenarios. None is left out and none may
//! fail: there is no baseline.
#![cfg(feature = "mcp")]

use std::process::Command;

use goondan_test_peers::mcp_peers;

/// Runs the suite's client mode with `args`: its exit status and its whole output.
fn client_suite(args: &[&str]) -> (bool, String) {
    let out = Command::new(mcp_peers::peer("conformance"))
        .env("PATH", mcp_peers::path_with_peers())
        .args(["client", "--command"])
        .arg(env!("CARGO_BIN_EXE_goondan-test-mcp-conformance-client"))
        .args(args)
        .output()
        .expect("the conformance suite runs");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

/// The client scenarios the suite lists (for `revision`, else all), each with the revisions
/// it is listed for (`[2025-11-25,2026-07-28]`, `[extension]`).
fn listed(revision: Option<&str>) -> Vec<(String, String)> {
    let mut list = Command::new(mcp_peers::peer("conformance"));
    list.env("PATH", mcp_peers::path_with_peers())
        .args(["list", "--client"]);
    if let Some(revision) = revision {
        list.args(["--spec-version", revision]);
    }
    let out = list
        .output()
        .expect("the conformance suite lists its scenarios");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.trim().strip_prefix("- "))
        .map(|l| {
            let (name, tags) = l.split_once(' ').unwrap_or((l, ""));
            (name.to_owned(), tags.trim().to_owned())
        })
        .collect()
}

/// The scenarios a suite run reports as passed (`✓ name: N passed, 0 failed`), with their
/// check counts.
pub(crate) fn passed(text: &str) -> Vec<(String, usize)> {
    text.lines()
        .filter_map(|l| l.trim().strip_prefix("✓ "))
        .filter_map(|l| {
            let (name, rest) = l.split_once(": ")?;
            let (n, _) = rest.split_once(" passed, 0 failed")?;
            Some((name.to_owned(), n.parse().ok()?))
        })
        .collect()
}

/// The numbers of the last `Total: N passed, M failed` line (a single scenario's run says
/// `Passed: N/T, M failed`).
fn failed_checks(text: &str) -> Option<usize> {
    text.lines().rev().find_map(|l| {
        let rest = l
            .strip_prefix("Total: ")
            .or_else(|| l.strip_prefix("Passed: "))?;
        let (_, failed) = rest.split_once(", ")?;
        failed.split_whitespace().next()?.parse().ok()
    })
}

#[test]
fn mcp_client_conformance_every_client_scenario_of_both_revisions_and_every_extension() {
    let mut problems = Vec::new();
    let mut summary = Vec::new();
    let mut counts = Vec::new();
    let extensions: Vec<String> = listed(None)
        .into_iter()
        .filter(|(_, tags)| tags == "[extension]")
        .map(|(name, _)| name)
        .collect();
    for expected in [
        "auth/client-credentials-basic",
        "auth/dpop-nonce",
        "auth/enterprise-managed-authorization",
        "auth/wif-jwt-bearer",
        "sep-2640-client-verify-digest",
    ] {
        assert!(
            extensions.iter().any(|e| e == expected),
            "the suite lists `{expected}` as an extension's scenario: {extensions:?}"
        );
    }
    for revision in ["2025-11-25", "2026-07-28"] {
        let scenarios: Vec<String> = listed(Some(revision))
            .into_iter()
            .map(|(name, _)| name)
            .collect();
        assert!(
            scenarios.len() > 15 && scenarios.iter().any(|s| s.starts_with("auth/")),
            "the suite lists the client scenarios of {revision}: {scenarios:?}"
        );
        let (ok, text) = client_suite(&["--suite", "all", "--spec-version", revision]);
        let passed = passed(&text);
        let missing: Vec<_> = scenarios
            .iter()
            .filter(|s| !passed.iter().any(|(p, _)| p == *s))
            .collect();
        if !ok || !missing.is_empty() || failed_checks(&text) != Some(0) {
            problems.push(format!("== {revision}: not passed: {missing:?}\n{text}"));
        }
        counts.push(format!("{} for {revision}", scenarios.len()));
        let checks: usize = passed.iter().map(|(_, n)| n).sum();
        summary.push(format!(
            "{revision}: {} of {} scenarios, {checks} checks",
            passed.len(),
            scenarios.len()
        ));
        let mut extension_checks = 0;
        for scenario in &extensions {
            let (ok, text) = client_suite(&[
                "--scenario",
                scenario,
                "--spec-version",
                revision,
                "--force",
            ]);
            if !ok || failed_checks(&text) != Some(0) {
                problems.push(format!("== {revision} {scenario}\n{text}"));
            }
            extension_checks += passed_checks(&text).unwrap_or_default();
        }
        summary.push(format!(
            "{revision}: {} extension scenarios, {extension_checks} checks",
            extensions.len()
        ));
    }
    eprintln!("{}", summary.join("\n"));
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    // The README says how many scenarios pass; it says what this run counted.
    let readme = std::fs::read_to_string(goondan_test_peers::workspace_root().join("README.md"))
        .unwrap()
        .replace('\n', " ");
    let claim = format!(
        "suite: {}, authorization included, and its {} extension scenarios",
        counts.join(" and "),
        extensions.len()
    );
    assert!(readme.contains(&claim), "the README should say `{claim}`");
}

/// The passed checks of a single scenario's run (`Passed: N/T, 0 failed`).
fn passed_checks(text: &str) -> Option<usize> {
    text.lines().rev().find_map(|l| {
        let (n, _) = l.strip_prefix("Passed: ")?.split_once('/')?;
        n.parse().ok()
    })
}

#[test]
fn the_summary_reader_counts_passed_scenarios_and_failed_checks() {
    let text = "✓ initialize: 1 passed, 0 failed\n✗ tools_call: 1 passed, 1 failed\n\
                ✓ auth/basic-cimd: 13 passed, 0 failed\nTotal: 15 passed, 1 failed, 0 warnings\n";
    assert_eq!(
        passed(text),
        [
            ("initialize".to_owned(), 1),
            ("auth/basic-cimd".to_owned(), 13)
        ]
    );
    assert_eq!(failed_checks(text), Some(1));
    assert_eq!(failed_checks("Passed: 7/7, 0 failed, 0 warnings"), Some(0));
    assert_eq!(failed_checks("nothing"), None);
    assert_eq!(passed_checks("Passed: 7/7, 0 failed, 0 warnings"), Some(7));
}
