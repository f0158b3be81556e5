//! `goondan mcp serve --bundle`: the pages a bundle's Tool resources name (MCP Apps, an
//! export's `ui: {page: ...}`) are served to a host that renders them, read from the bundle's
//! folder; a page file that climbs out of it stops the server before it serves.

use std::process::Command;

use rmcp::model::{
    ClientCapabilities, ClientConfig, ExtensionCapabilities, Implementation, ProtocolVersion,
    ReadResourceRequestParams,
};
use rmcp::transport::TokioChildProcess;
use rmcp::{ClientHandler, ServiceExt};
use serde_json::{Value, json};

const HTML: &str = "<!DOCTYPE html><html><body><pre id=\"out\"></pre></body></html>";

/// A host that renders MCP Apps.
#[derive(Clone)]
struct Host;

impl ClientHandler for Host {
    fn get_info(&self) -> ClientConfig {
        let mut caps = ClientCapabilities::default();
        let mut extensions = ExtensionCapabilities::new();
        let settings = json!({"mimeTypes": ["text/html;profile=mcp-app"]});
        if let Value::Object(settings) = settings {
            extensions.insert("io.modelcontextprotocol/ui".to_owned(), settings);
        }
        caps.extensions = Some(extensions);
        ClientConfig::new(caps, Implementation::new("apps-host", "1.0"))
            .with_protocol_version(ProtocolVersion::V_2025_11_25)
    }
}

/// A bundle serving `json-query`, whose `query` shows `page` and whose `pick` only the page
/// may call.
fn bundle(dir: &std::path::Path, page: &str) -> std::path::PathBuf {
    let yaml = format!(
        "apiVersion: goondan.ai/v1
kind: Tool
metadata: {{name: json-query}}
spec:
  exports:
    - name: query
      ui: {{resourceUri: \"ui://json/view.html\", page: \"{page}\", prefersBorder: true, csp: {{connectDomains: [\"https://api.example.com\"]}}}}
    - name: pick
      ui: {{resourceUri: \"ui://json/view.html\", visibility: [app]}}
    - name: count
    - name: flatten
---
apiVersion: goondan.ai/v1
kind: Agent
metadata: {{name: viewer}}
spec:
  tools: [\"Tool/json-query\"]
"
    );
    let path = dir.join("goondan.yaml");
    std::fs::write(&path, yaml).unwrap();
    path
}

#[tokio::test]
async fn goondan_mcp_serve_serves_the_pages_a_bundle_s_exports_name() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("pages")).unwrap();
    std::fs::write(dir.path().join("pages/view.html"), HTML).unwrap();
    let file = bundle(dir.path(), "pages/view.html");
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_goondan"));
    cmd.args(["mcp", "serve", "--bundle"]).arg(&file);
    let session = Host
        .serve(TokioChildProcess::new(cmd).unwrap())
        .await
        .unwrap();

    let info = serde_json::to_value(session.peer_info().unwrap()).unwrap();
    assert_eq!(
        info["capabilities"]["extensions"]["io.modelcontextprotocol/ui"],
        json!({"mimeTypes": ["text/html;profile=mcp-app"]}),
        "{info}"
    );
    let resources = session.list_all_resources().await.unwrap();
    let uris: Vec<&str> = resources.iter().map(|r| r.uri.as_str()).collect();
    assert_eq!(uris, ["ui://json/view.html"]);
    let read = session
        .read_resource(ReadResourceRequestParams::new("ui://json/view.html"))
        .await
        .unwrap();
    assert_eq!(
        serde_json::to_value(&read).unwrap()["contents"],
        json!([{
            "uri": "ui://json/view.html",
            "mimeType": "text/html;profile=mcp-app",
            "text": HTML,
            "_meta": {"ui": {
                "csp": {"connectDomains": ["https://api.example.com"]},
                "prefersBorder": true,
            }},
        }])
    );
    let tools = session.list_all_tools().await.unwrap();
    let ui = |name: &str| {
        tools
            .iter()
            .find(|t| t.name == name)
            .and_then(|t| t.meta.as_ref())
            .map(|m| m.0["ui"].clone())
    };
    assert_eq!(
        ui("json-query__query"),
        Some(json!({"resourceUri": "ui://json/view.html", "visibility": ["model", "app"]}))
    );
    assert_eq!(
        ui("json-query__pick"),
        Some(json!({"resourceUri": "ui://json/view.html", "visibility": ["app"]}))
    );
    assert_eq!(ui("json-query__count"), None);
    session.cancel().await.unwrap();
}

#[test]
fn goondan_mcp_serve_refuses_a_bundle_page_outside_the_bundle_s_folder() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("bundle");
    std::fs::create_dir(&dir).unwrap();
    std::fs::write(root.path().join("secret.html"), HTML).unwrap();
    let file = bundle(&dir, "../secret.html");
    let out = Command::new(env!("CARGO_BIN_EXE_goondan"))
        .args(["mcp", "serve", "--bundle"])
        .arg(&file)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("ui://json/view.html") && stderr.contains("outside"),
        "{stderr}"
    );
}
