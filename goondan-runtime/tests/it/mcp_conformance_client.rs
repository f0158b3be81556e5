//! The MCP conformance suite (`@modelcontextprotocol/conformance`, pinned by
//! `scripts/mcp-peers`) against our MCP client, the bridge: the suite starts
//! `tests/mcp_hosts/conformance_client.rs` (an `McpExtension` with one HTTP server, an agent,
//! calls through the executor) once per scenario, with the scenario's server URL.
//!
//! Every client scenario the suite lists for `--spec-version 2025-11-25` and for `2026-07-28`
//! runs, the authorization ones included, and so do the client-credentials scenarios of the
//! OAuth extension and the Skills extension's client scenarios (`--force`, at both
//! revisions). None may fail: there is no baseline.
//!
//! Not run, each an extension this bridge does not implement (not part of either revision):
//! - `auth/dpop`, `auth/dpop-nonce`: DPoP-bound tokens (RFC 9449);
//! - `auth/enterprise-managed-authorization`: identity-provider-issued ID-JAG grants;
//! - `auth/wif-jwt-bearer`: workload identity federation.
#![cfg(feature = "mcp")]

use std::process::Command;

use goondan_test_peers::mcp_peers;

/// The client-credentials scenarios of the OAuth extension.
const CLIENT_CREDENTIALS: &[&str] = &[
    "auth/client-credentials-basic",
    "auth/client-credentials-jwt",
];

/// The Skills extension's client scenarios (SEP-2640): a host lists skills without reading
/// them, and refuses a skill file that does not match its listing.
const SKILLS: &[&str] = &[
    "sep-2640-client-no-prefetch",
    "sep-2640-client-verify-digest",
    "sep-2640-client-verify-frontmatter",
    "sep-2640-client-verify-size",
];

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

/// The client scenarios the suite lists for `revision`.
fn listed(revision: &str) -> Vec<String> {
    let out = Command::new(mcp_peers::peer("conformance"))
        .env("PATH", mcp_peers::path_with_peers())
        .args(["list", "--client", "--spec-version", revision])
        .output()
        .expect("the conformance suite lists its scenarios");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.trim().strip_prefix("- "))
        .filter_map(|l| l.split_whitespace().next())
        .map(str::to_owned)
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
fn mcp_client_conformance_every_client_scenario_of_both_revisions_and_client_credentials() {
    let mut problems = Vec::new();
    let mut summary = Vec::new();
    let mut counts = Vec::new();
    for revision in ["2025-11-25", "2026-07-28"] {
        let scenarios = listed(revision);
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
        for scenario in CLIENT_CREDENTIALS.iter().chain(SKILLS) {
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
        }
    }
    eprintln!("{}", summary.join("\n"));
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    // The README says how many scenarios pass; it says what this run counted.
    let readme = std::fs::read_to_string(goondan_test_peers::workspace_root().join("README.md"))
        .unwrap()
        .replace('\n', " ");
    let claim = format!("suite: {}, authorization included", counts.join(" and "));
    assert!(readme.contains(&claim), "the README should say `{claim}`");
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
}
