//! Upstream's own bundles, validated by `goondan validate` as a process: the brain-persona
//! sample and the `@goondan/base` package manifest (see `fixtures/upstream/ORIGIN.md`; validated
//! with goondan-rs's two added parameters, `bash`'s `limits` and `escalate`, declared). The
//! manifest's Tool resources are also compared, export by export, with the compiled tools:
//! same names, same parameter names, same required parameters.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use goondan_runtime::bundle::Bundle;
use goondan_runtime::testing::TestKit;
use serde_json::Value;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/upstream")
        .join(name)
        .join("goondan.yaml")
}

fn validate(path: &Path) -> Value {
    let out = Command::new(env!("CARGO_BIN_EXE_goondan"))
        .args(["--json", "validate"])
        .arg(path)
        .output()
        .unwrap();
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(out.status.code(), Some(0), "{report:#}");
    report
}

#[test]
fn base_5_brain_persona_sample_validates() {
    let report = validate(&fixture("brain-persona"));
    assert_eq!(report["ok"], true);
    assert_eq!(report["diagnostics"], serde_json::json!([]));
    assert_eq!(report["resources"], 16);
}

/// goondan-rs's additions to upstream's `@goondan/base` exports: `bash`'s per-call resource
/// `limits` and its `escalate` (to run outside the sandbox when a person approves), on
/// `bash__exec` and `bash__script`, declared after each of their `env` parameters.
const BASH_ENV: &str = r#"          env:
            type: "object"
            description: "Optional environment variable overrides merged with process.env before execution."
"#;
const BASH_LIMITS: &str = r#"          limits:
            type: "object"
            description: "Lower resource limits for this call (memory, processes, cpu)."
          escalate:
            type: "object"
            description: "Run outside the sandbox, once a person approves."
"#;

#[test]
fn base_5_upstream_base_package_manifest_validates() {
    // Upstream's manifest as it is, with goondan-rs's additions declared: every other export and
    // parameter must match the compiled tools.
    let upstream = std::fs::read_to_string(fixture("base")).unwrap();
    assert_eq!(upstream.matches(BASH_ENV).count(), 2, "bash's two exports");
    let dir = tempfile::tempdir().unwrap();
    let manifest = dir.path().join("goondan.yaml");
    std::fs::write(
        &manifest,
        upstream.replace(BASH_ENV, &format!("{BASH_ENV}{BASH_LIMITS}")),
    )
    .unwrap();
    let report = validate(&manifest);
    assert_eq!(report["ok"], true);
    assert_eq!(report["diagnostics"], serde_json::json!([]));
    assert_eq!(report["resources"], 24);
}

fn names(v: &Value) -> BTreeSet<String> {
    match v {
        Value::Object(map) => map.keys().cloned().collect(),
        Value::Array(items) => items
            .iter()
            .filter_map(|i| i.as_str().map(str::to_owned))
            .collect(),
        _ => BTreeSet::new(),
    }
}

#[test]
fn base_5_exports_and_parameters_match_upstream() {
    let bundle = Bundle::read(fixture("base")).unwrap();
    let kit = TestKit::with_tools(goondan_base::tools()).unwrap();
    let mut checked = 0;
    for resource in bundle.resources() {
        let tool = &resource.value;
        let name = tool["metadata"]["name"].as_str().unwrap();
        if tool["kind"] != "Tool"
            || ![
                "json-query",
                "text-transform",
                "wait",
                "self-restart",
                "telegram",
                "slack",
            ]
            .contains(&name)
        {
            continue;
        }
        let limit = tool["spec"]["errorMessageLimit"].as_u64().unwrap_or(1000);
        for export in tool["spec"]["exports"].as_array().unwrap() {
            let full = format!("{name}__{}", export["name"].as_str().unwrap());
            let entry = kit
                .registry()
                .get(&full)
                .unwrap_or_else(|| panic!("no compiled export {full}"));
            let ours = entry.export().parameters();
            let theirs = &export["parameters"];
            assert_eq!(
                names(&ours["properties"]),
                names(&theirs["properties"]),
                "{full}"
            );
            assert_eq!(
                names(&ours["required"]),
                names(&theirs["required"]),
                "{full}"
            );
            checked += 1;
        }
        let resource = goondan_base::resolve_ref(goondan_base::PACKAGE, name)
            .unwrap()
            .unwrap();
        assert_eq!(resource.error_message_limit() as u64, limit, "{name}");
    }
    assert_eq!(checked, 4 + 6 + 1 + 1 + 6 + 6);
}
