//! MCP Apps in a real browser: our MCP server, over Streamable HTTP on 127.0.0.1, serves a tool
//! with a page, and Chromium (Debian's package) runs a host page built on the official host
//! bridge (`AppBridge` of `@modelcontextprotocol/ext-apps`) and the MCP TypeScript SDK's client
//! (`goondan_test_peers::browser`, installed by `scripts/browser-peers`). The host calls the
//! tool as a model would, reads its page, renders it in a sandboxed frame behind a sandbox proxy
//! on another origin, and answers the page's tool calls as the extension says a host must.
//!
//! Each test, once per protocol revision (2025-11-25 by the SDK's `initialize`, 2026-07-28 by
//! its `server/discover`, pinned): the page renders the tool's result (a known element's text,
//! and a screenshot larger than the same viewport's blank page, copied under Cargo's
//! `CARGO_TARGET_TMPDIR` and named in the test's output); a click in the page calls a tool only
//! the page may call, and the server's answer reaches the page; a click that calls a tool only
//! the model may call, and one that calls a tool the server does not have, are refused by the
//! host with a JSON-RPC error the page shows, and neither reaches the server.
#![cfg(feature = "mcp")]

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use goondan_runtime::mcp::server::{AppPage, McpServer};
use goondan_runtime::prelude::*;
use goondan_test_peers::browser::{browser_host, listed_tool};
use serde_json::{Value, json};

/// How many times `counter__reset`, a tool only the model may call, ran: a page's call of it
/// must never reach the server.
static RESETS: AtomicUsize = AtomicUsize::new(0);

const PAGE_URI: &str = "ui://counter/view.html";

/// A counter with a page.
#[tool(name = "counter")]
pub mod counter {
    use super::*;

    /// Shows the counter, at `start`, in its page.
    #[export(ui = "ui://counter/view.html")]
    pub fn show(start: i64) -> String {
        format!("counter at {start}")
    }

    /// Adds `b` to `a`; only the counter's page calls it.
    #[export(ui = "ui://counter/view.html", visibility = "app")]
    pub fn add(a: i64, b: i64) -> String {
        format!("sum {}", a + b)
    }

    /// Sets the counter back to zero; only the model calls it.
    #[export(visibility = "model")]
    pub fn reset() -> String {
        RESETS.fetch_add(1, Ordering::SeqCst);
        "reset".to_owned()
    }
}

/// The counter's page: plain JSON-RPC over `postMessage` to its host, as the extension's
/// specification shows it (no library). It shows the tool's result in `#total`; `#call-allowed`
/// calls `counter__add` with 20 and 22 and shows the answer in `#allowed-result`;
/// `#call-refused` calls `counter__reset` and shows the answer, or the error, in
/// `#refused-result`; `#call-unknown` calls `counter__missing`, which the server does not
/// have, and shows the same in `#unknown-result`.
const PAGE: &str = r##"<!doctype html>
<html>
<head>
<meta charset="utf-8">
<title>counter</title>
<style>
  body { font: 16px sans-serif; margin: 12px; background: #fff6d5; color: #222; }
  #total { font-size: 28px; font-weight: bold; color: #0b5394; }
  button { margin: 4px; }
</style>
</head>
<body>
<h2>Counter</h2>
<p id="total"></p>
<button id="call-allowed">add 20 and 22</button>
<button id="call-refused">reset</button>
<button id="call-unknown">a tool the server lacks</button>
<p>Page call: <span id="allowed-result"></span></p>
<p>Refused call: <span id="refused-result"></span></p>
<p>Unknown tool: <span id="unknown-result"></span></p>
<script>
  let next = 1;
  const pending = new Map();
  function request(method, params) {
    const id = next++;
    parent.postMessage({ jsonrpc: "2.0", id, method, params }, "*");
    return new Promise((ok, fail) => pending.set(id, { ok, fail }));
  }
  function notify(method, params) {
    parent.postMessage({ jsonrpc: "2.0", method, params }, "*");
  }
  function text(result) {
    return (result.content || []).filter((c) => c.type === "text").map((c) => c.text).join(" ");
  }
  window.addEventListener("message", (event) => {
    const m = event.data;
    if (!m || m.jsonrpc !== "2.0") return;
    if (m.id !== undefined && !m.method && pending.has(m.id)) {
      const p = pending.get(m.id);
      pending.delete(m.id);
      m.error ? p.fail(m.error) : p.ok(m.result);
    } else if (m.method === "ui/notifications/tool-result") {
      document.getElementById("total").textContent = text(m.params);
    } else if (m.id !== undefined && m.method) {
      parent.postMessage({ jsonrpc: "2.0", id: m.id, result: {} }, "*");
    }
  });
  async function call(name, args, out) {
    const el = document.getElementById(out);
    try {
      el.textContent = "ok: " + text(await request("tools/call", { name, arguments: args }));
    } catch (e) {
      el.textContent = "error " + e.code + ": " + e.message;
    }
  }
  document.getElementById("call-allowed").onclick = () => call("counter__add", { a: 20, b: 22 }, "allowed-result");
  document.getElementById("call-refused").onclick = () => call("counter__reset", {}, "refused-result");
  document.getElementById("call-unknown").onclick = () => call("counter__missing", {}, "unknown-result");
  request("ui/initialize", {
    appInfo: { name: "counter", version: "1.0.0" },
    appCapabilities: {},
    protocolVersion: "2026-01-26",
  }).then(() => notify("ui/notifications/initialized", {}));
</script>
</body>
</html>
"##;

fn server() -> McpServer {
    let registry = Arc::new(
        ToolRegistry::builder()
            .tool(counter::TOOL)
            .build()
            .expect("the counter registers"),
    );
    McpServer::builder(registry)
        .app_page(AppPage::html(PAGE_URI, PAGE).prefers_border(true))
        .build()
        .expect("the server builds")
}

/// Copies the screenshot where it outlives the test (Cargo's temporary folder for the
/// integration tests) and says where in the test's output.
/// The verdict is kept beside it.
fn keep(screenshot: &Path, verdict: &Value, protocol: &str) {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("mcp-apps-browser");
    std::fs::create_dir_all(&dir).expect("the screenshot folder");
    let kept = dir.join(format!("counter-{protocol}.png"));
    std::fs::copy(screenshot, &kept).expect("the screenshot is copied");
    std::fs::write(
        dir.join(format!("counter-{protocol}.json")),
        format!("{verdict:#}"),
    )
    .expect("the verdict is written");
    eprintln!("MCP Apps screenshot ({protocol}): {}", kept.display());
}

async fn page_renders_calls_back_and_is_refused_a_model_only_tool(protocol: &str) {
    let http = server()
        .serve_http("127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    let out = tempfile::tempdir().unwrap();
    let config = json!({
        "mcp": http.url(),
        "protocol": protocol,
        "tool": "counter__show",
        "arguments": {"start": 41},
        "ready": "#total",
        "steps": [
            {"click": "#call-allowed", "read": "#allowed-result"},
            {"click": "#call-refused", "read": "#refused-result"},
            {"click": "#call-unknown", "read": "#unknown-result"},
        ],
        "out": out.path(),
        "timeoutMs": 30_000,
    });
    let verdict = browser_host().run_clean(config).await;
    http.shutdown().await.unwrap();
    let host = &verdict["host"];

    // The protocol revision asked for, on every request after the handshake.
    assert_eq!(host["negotiatedProtocol"], protocol, "{verdict:#}");
    let proxied = verdict["proxied"].as_array().unwrap();
    let first = if protocol == "2026-07-28" {
        "server/discover"
    } else {
        "initialize"
    };
    assert_eq!(proxied[0]["jsonrpc"], json!([first]), "{verdict:#}");
    assert!(
        proxied
            .iter()
            .skip(1)
            .all(|r| r["protocolVersionHeader"] == protocol),
        "{verdict:#}"
    );
    let initializes = proxied
        .iter()
        .filter(|r| r["jsonrpc"] == json!(["initialize"]))
        .count();
    assert_eq!(
        initializes,
        usize::from(protocol == "2025-11-25"),
        "{verdict:#}"
    );

    // The tools as the server links them to the page, and the page as it serves it.
    assert_eq!(
        listed_tool(&verdict, "counter__show")["resourceUri"],
        PAGE_URI
    );
    assert_eq!(
        listed_tool(&verdict, "counter__show")["visibility"],
        json!(["model", "app"])
    );
    assert_eq!(
        listed_tool(&verdict, "counter__add")["visibility"],
        json!(["app"])
    );
    assert_eq!(
        listed_tool(&verdict, "counter__reset")["visibility"],
        json!(["model"])
    );
    assert_eq!(host["resource"]["uri"], PAGE_URI, "{verdict:#}");
    assert_eq!(host["resource"]["mimeType"], "text/html;profile=mcp-app");
    assert_eq!(host["resource"]["bytes"], PAGE.len());
    assert_eq!(host["resource"]["ui"]["prefersBorder"], true, "{verdict:#}");

    // The page rendered the tool's result, and the screenshot shows it.
    assert_eq!(host["appInitialized"], true, "{verdict:#}");
    assert_eq!(verdict["rendered"], "counter at 41", "{verdict:#}");
    let shot = &verdict["screenshot"];
    let path = PathBuf::from(shot["path"].as_str().unwrap());
    let png = std::fs::read(&path).unwrap();
    assert_eq!(png.len() as u64, shot["bytes"].as_u64().unwrap());
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
    assert!(
        shot["bytes"].as_u64().unwrap() > 3 * shot["blankBytes"].as_u64().unwrap(),
        "the screenshot is hardly larger than a blank page: {shot}"
    );
    keep(&path, &verdict, protocol);

    // The page's call of a tool it may call went to the server, and the answer reached it.
    let calls = host["appCalls"].as_array().unwrap();
    assert_eq!(calls.len(), 3, "{verdict:#}");
    assert_eq!(calls[0]["name"], "counter__add");
    assert_eq!(calls[0]["decision"], "forwarded", "{verdict:#}");
    assert_eq!(verdict["steps"][0]["text"], "ok: sum 42", "{verdict:#}");

    // Its call of a tool only the model may call was refused by the host and never ran.
    assert_eq!(calls[1]["name"], "counter__reset");
    assert_eq!(calls[1]["decision"], "refused", "{verdict:#}");
    let refused = verdict["steps"][1]["text"].as_str().unwrap();
    assert!(
        refused.starts_with("error -32602:") && refused.contains("not visible to apps"),
        "{refused}"
    );
    // So was its call of a tool the server does not have.
    assert_eq!(calls[2]["name"], "counter__missing");
    assert_eq!(calls[2]["decision"], "refused", "{verdict:#}");
    let unknown = verdict["steps"][2]["text"].as_str().unwrap();
    assert!(
        unknown.starts_with("error -32602:") && unknown.contains("lists no tool counter__missing"),
        "{unknown}"
    );
    // Two calls reached the server: the model's and the page's allowed one.
    let tool_calls = proxied
        .iter()
        .filter(|r| r["jsonrpc"] == json!(["tools/call"]))
        .count();
    assert_eq!(tool_calls, 2, "{verdict:#}");
    assert_eq!(RESETS.load(Ordering::SeqCst), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_apps_in_chromium_at_2025_11_25() {
    page_renders_calls_back_and_is_refused_a_model_only_tool("2025-11-25").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_apps_in_chromium_at_2026_07_28() {
    page_renders_calls_back_and_is_refused_a_model_only_tool("2026-07-28").await;
}
