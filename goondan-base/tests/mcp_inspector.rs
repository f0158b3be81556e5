//! Issue 10, 12(b): the MCP inspector (a real MCP client, in CLI mode) against
//! `goondan mcp serve` over stdio: it lists our tools, and calls one that succeeds and one
//! that fails with our structured error.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../../goondan-runtime/tests/support/mcp_peers.rs"]
mod mcp_peers;

use std::process::Command;

use serde_json::Value;

/// Runs `mcp-inspector --cli goondan mcp serve --tools json-query <args>` and returns its
/// first JSON document and its exit status.
fn inspect(args: &[&str]) -> (Value, bool) {
    let out = Command::new(mcp_peers::peer("mcp-inspector"))
        .env("PATH", mcp_peers::path_with_peers())
        .arg("--cli")
        .arg(env!("CARGO_BIN_EXE_goondan"))
        .args(["mcp", "serve", "--tools", "json-query"])
        .args(args)
        .output()
        .expect("the inspector runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let first = serde_json::Deserializer::from_str(&stdout)
        .into_iter::<Value>()
        .next()
        .and_then(Result::ok)
        .unwrap_or_else(|| {
            panic!(
                "no JSON from the inspector; stdout: {stdout}\nstderr: {}",
                String::from_utf8_lossy(&out.stderr)
            )
        });
    (first, out.status.success())
}

#[test]
fn mcp_inspector_lists_and_calls_goondan_mcp_serve_over_stdio() {
    let (listed, ok) = inspect(&["--method", "tools/list"]);
    assert!(ok, "{listed}");
    let names: Vec<&str> = listed["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    // The served catalog, in order, with the Goondan names unchanged.
    assert_eq!(
        names,
        [
            "json-query__query",
            "json-query__pick",
            "json-query__count",
            "json-query__flatten"
        ]
    );
    assert_eq!(listed["tools"][0]["inputSchema"]["type"], "object");

    let (called, ok) = inspect(&[
        "--method",
        "tools/call",
        "--tool-name",
        "json-query__count",
        "--tool-arg",
        "data=\"[1,2,3]\"",
    ]);
    assert!(ok, "{called}");
    assert_ne!(called["isError"], true, "{called}");
    assert_eq!(called["structuredContent"]["count"], 3, "{called}");

    let (failed, ok) = inspect(&[
        "--method",
        "tools/call",
        "--tool-name",
        "json-query__count",
        "--tool-arg",
        "data=\"not json\"",
    ]);
    // The inspector reports a tool error as a failed command, after printing the result.
    assert!(!ok, "{failed}");
    assert_eq!(failed["isError"], true, "{failed}");
    assert_eq!(failed["structuredContent"]["error"]["code"], "E_JSON_PARSE");
    let text = failed["content"][0]["text"].as_str().expect("text");
    assert!(text.starts_with("error E_JSON_PARSE"), "{text}");
    assert!(text.contains("suggestion: "), "{text}");
}
