//! The counter example's page in a real browser: `goondan_examples_mcp::counter::server()`, over
//! Streamable HTTP on 127.0.0.1, in Chromium under the official MCP Apps host bridge
//! (`goondan_test_peers::browser`, installed by `scripts/browser-peers`). The page shows the
//! count the model's `counter__show` answered, and its button calls `counter__increment`
//! through the host, whose answer the page shows. The screenshot is kept under Cargo's
//! `CARGO_TARGET_TMPDIR`, its path on stderr.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

use goondan_examples_mcp::counter::{PAGE_URI, server};
use goondan_test_peers::browser::{browser_host, listed_tool};
use serde_json::{Value, json};

fn visibility<'a>(verdict: &'a Value, name: &str) -> &'a Value {
    &listed_tool(verdict, name)["visibility"]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn counter_example_page_counts_in_chromium() {
    let http = server()
        .unwrap()
        .serve_http("127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    let out = tempfile::tempdir().unwrap();
    let config = json!({
        "mcp": http.url(),
        "protocol": "2025-11-25",
        "tool": "counter__show",
        "arguments": {},
        "ready": "#count",
        "readyText": "0",
        "steps": [
            {"click": "#increment", "read": "#count", "text": "1"},
            {"click": "#increment", "read": "#count", "text": "2"},
        ],
        "out": out.path(),
        "timeoutMs": 30_000,
    });
    let verdict = browser_host().run_clean(config).await;
    http.shutdown().await.unwrap();
    let host = &verdict["host"];
    assert_eq!(host["resource"]["uri"], PAGE_URI, "{verdict:#}");
    assert_eq!(host["resource"]["mimeType"], "text/html;profile=mcp-app");
    assert_eq!(
        visibility(&verdict, "counter__show"),
        &json!(["model", "app"])
    );
    assert_eq!(visibility(&verdict, "counter__increment"), &json!(["app"]));
    assert_eq!(visibility(&verdict, "counter__reset"), &json!(["model"]));

    // The page showed the model's answer, then each of its own calls' answers.
    assert_eq!(verdict["rendered"], "0", "{verdict:#}");
    let texts: Vec<&Value> = verdict["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| &s["text"])
        .collect();
    assert_eq!(texts, [&json!("1"), &json!("2")], "{verdict:#}");
    let calls = host["appCalls"].as_array().unwrap();
    assert_eq!(calls.len(), 2, "{verdict:#}");
    for call in calls {
        assert_eq!(call["name"], "counter__increment", "{verdict:#}");
        assert_eq!(call["decision"], "forwarded", "{verdict:#}");
    }

    let shot = &verdict["screenshot"];
    let path = Path::new(shot["path"].as_str().unwrap());
    assert!(
        shot["bytes"].as_u64().unwrap() > 3 * shot["blankBytes"].as_u64().unwrap(),
        "the screenshot is hardly larger than a blank page: {shot}"
    );
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("mcp-apps-browser");
    std::fs::create_dir_all(&dir).unwrap();
    let kept = dir.join("counter-example.png");
    std::fs::copy(path, &kept).unwrap();
    eprintln!("the counter example in Chromium: {}", kept.display());
}
