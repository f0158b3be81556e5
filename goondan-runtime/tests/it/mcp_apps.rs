//! MCP Apps on the server (issue 53, item 1): the `io.modelcontextprotocol/ui` extension over
//! Streamable HTTP on 127.0.0.1, on both revisions (2025-11-25 sessions and 2026-07-28
//! stateless requests), with a client that declares the extension and one that does not.
//! A page is served as a `ui://` resource with its `_meta.ui`, each tool is linked to its page
//! in `tools/list`, a tool only a page may call is hidden from (and refused to) a client that
//! renders no page, a call from a page goes through the executor, and a page that cannot be
//! served fails the build with a clear error.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use goondan_runtime::mcp::server::{
    APP_MIME_TYPE, APPS_EXTENSION_ID, AppPage, AppPageError, Csp, MAX_PAGE_BYTES, McpServer,
    McpServerError, Permissions,
};
use goondan_runtime::prelude::*;
use goondan_runtime::{ToolExecutor, from_fn};
use serde_json::{Value, json};

const PAGE: &str = "ui://counter/view.html";
const HTML: &str = "<!DOCTYPE html><html><body><p id=\"count\">0</p></body></html>";

/// The count, as a page reads it.
#[derive(Serialize, JsonSchema)]
pub struct Count {
    count: u64,
}

/// A counter a page shows.
#[derive(Default)]
pub struct Counter {
    count: AtomicU64,
}

/// A counter shown on a page.
#[tool(name = "counter")]
impl Counter {
    /// Shows the counter.
    #[export(ui = "ui://counter/view.html", read_only)]
    pub fn show(&self) -> Count {
        Count {
            count: self.count.load(Ordering::SeqCst),
        }
    }

    /// Adds one (the page's button).
    #[export(ui = "ui://counter/view.html", visibility = "app")]
    pub fn increment(&self) -> Count {
        Count {
            count: self.count.fetch_add(1, Ordering::SeqCst) + 1,
        }
    }

    /// Sets it back to zero (the model's only).
    #[export(visibility = "model")]
    pub fn reset(&self) -> Count {
        self.count.store(0, Ordering::SeqCst);
        Count { count: 0 }
    }
}

fn registry() -> Arc<ToolRegistry> {
    Arc::new(
        ToolRegistry::builder()
            .tool(Counter::default())
            .build()
            .unwrap(),
    )
}

fn page() -> AppPage {
    AppPage::html(PAGE, HTML)
        .description("The counter.")
        .csp(Csp::new().connect_domains(["https://api.example.com"]))
        .permissions(Permissions::new().clipboard_write())
        .prefers_border(true)
}

/// The `_meta.ui` the page is served with.
fn page_meta() -> Value {
    json!({"ui": {
        "csp": {"connectDomains": ["https://api.example.com"]},
        "permissions": {"clipboardWrite": {}},
        "prefersBorder": true,
    }})
}

/// A server of the counter and its page whose executor records each call's tool name, and
/// the names it recorded.
fn served() -> (McpServer, Arc<Mutex<Vec<String>>>) {
    let registry = registry();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let record = Arc::clone(&seen);
    let executor = ToolExecutor::builder(Arc::clone(&registry))
        .middleware(from_fn(move |call, next| {
            record.lock().unwrap().push(call.tool_name().to_owned());
            async move { next.run(call).await }
        }))
        .build();
    let server = McpServer::builder(registry)
        .executor(executor)
        .app_page(page())
        .build()
        .unwrap();
    (server, seen)
}

/// The capabilities of a host that renders pages.
fn renders_pages() -> Value {
    json!({"extensions": {APPS_EXTENSION_ID: {"mimeTypes": [APP_MIME_TYPE]}}})
}

/// A client of one revision over Streamable HTTP, speaking raw JSON-RPC so the test sees the
/// wire: a 2025-11-25 session (`initialize`, then its session id on each request), or
/// 2026-07-28 stateless requests (the revision and capabilities in each request's `_meta`).
struct Client {
    url: String,
    revision: &'static str,
    capabilities: Value,
    session: Option<String>,
    next_id: u64,
    http: reqwest::Client,
}

impl Client {
    /// Connects; a 2025-11-25 client initializes its session and answers the `initialize`
    /// result, a 2026-07-28 client asks `server/discover`.
    async fn connect(url: &str, revision: &'static str, capabilities: Value) -> (Self, Value) {
        goondan_runtime::tls::install_crypto_provider();
        let mut client = Self {
            url: url.to_owned(),
            revision,
            capabilities,
            session: None,
            next_id: 0,
            http: reqwest::Client::new(),
        };
        let hello = if revision == "2025-11-25" {
            let params = json!({
                "protocolVersion": revision,
                "capabilities": client.capabilities,
                "clientInfo": {"name": "apps-test", "version": "1.0"},
            });
            let (answer, session) = client.post("initialize", params, None).await;
            client.session = session;
            client.post_notification("notifications/initialized").await;
            answer
        } else {
            client.request("server/discover", json!({}), None).await
        };
        (client, hello)
    }

    /// One request; answers its JSON-RPC response.
    async fn request(&mut self, method: &str, params: Value, name: Option<&str>) -> Value {
        self.post(method, params, name).await.0
    }

    async fn post(
        &mut self,
        method: &str,
        mut params: Value,
        name: Option<&str>,
    ) -> (Value, Option<String>) {
        self.next_id += 1;
        let id = self.next_id;
        if self.revision != "2025-11-25" {
            params["_meta"] = json!({
                "io.modelcontextprotocol/protocolVersion": self.revision,
                "io.modelcontextprotocol/clientCapabilities": self.capabilities,
                "io.modelcontextprotocol/clientInfo": {"name": "apps-test", "version": "1.0"},
            });
        }
        let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        let mut request = self
            .http
            .post(&self.url)
            .header("Accept", "application/json, text/event-stream")
            .header("Content-Type", "application/json")
            .header("MCP-Protocol-Version", self.revision)
            .header("Mcp-Method", method);
        if let Some(name) = name {
            request = request.header("Mcp-Name", name);
        }
        if let Some(session) = &self.session {
            request = request.header("Mcp-Session-Id", session);
        }
        let response = request.body(body.to_string()).send().await.unwrap();
        let session = response
            .headers()
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let text = response.text().await.unwrap();
        let answer = serde_json::from_str::<Value>(&text)
            .ok()
            .unwrap_or_else(|| {
                text.lines()
                    .filter_map(|l| l.strip_prefix("data:"))
                    .filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
                    .find(|m| m.get("id") == Some(&json!(id)))
                    .unwrap_or_else(|| panic!("no response to {method} in {text}"))
            });
        (answer, session)
    }

    async fn post_notification(&self, method: &str) {
        let body = json!({"jsonrpc": "2.0", "method": method});
        let mut request = self
            .http
            .post(&self.url)
            .header("Accept", "application/json, text/event-stream")
            .header("Content-Type", "application/json")
            .header("MCP-Protocol-Version", self.revision);
        if let Some(session) = &self.session {
            request = request.header("Mcp-Session-Id", session);
        }
        let sent = request.body(body.to_string()).send().await.unwrap();
        assert!(sent.status().is_success(), "{}", sent.status());
    }

    async fn call(&mut self, name: &str) -> Value {
        let params = json!({"name": name, "arguments": {}});
        self.request("tools/call", params, Some(name)).await
    }

    async fn tools(&mut self) -> Vec<Value> {
        let listed = self.request("tools/list", json!({}), None).await;
        listed["result"]["tools"]
            .as_array()
            .unwrap_or_else(|| panic!("{listed}"))
            .clone()
    }
}

fn tool<'a>(tools: &'a [Value], name: &str) -> Option<&'a Value> {
    tools.iter().find(|t| t["name"] == name)
}

/// The text of a result's first content block.
fn text(answer: &Value) -> &str {
    answer["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("no text in {answer}"))
}

/// A host that renders pages: the server announces the extension, lists and serves the page
/// with its mime type and `_meta.ui`, links each tool to it with its visibility, lists the
/// tool only a page may call, and runs the page's call of it through the executor; the
/// result carries text beside its structured content.
async fn a_host_with_the_extension(revision: &'static str) {
    let (server, seen) = served();
    let http = server
        .serve_http("127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    let (mut client, hello) = Client::connect(&http.url(), revision, renders_pages()).await;
    let capabilities = &hello["result"]["capabilities"];
    assert_eq!(
        capabilities["extensions"][APPS_EXTENSION_ID],
        json!({"mimeTypes": [APP_MIME_TYPE]}),
        "{hello}"
    );
    assert!(capabilities["resources"].is_object(), "{hello}");

    let listed = client.request("resources/list", json!({}), None).await;
    assert_eq!(
        listed["result"]["resources"],
        json!([{
            "uri": PAGE,
            "name": "counter/view.html",
            "description": "The counter.",
            "mimeType": APP_MIME_TYPE,
            "size": HTML.len(),
            "_meta": page_meta(),
        }]),
        "{listed}"
    );
    let read = client
        .request("resources/read", json!({"uri": PAGE}), Some(PAGE))
        .await;
    assert_eq!(
        read["result"]["contents"],
        json!([{"uri": PAGE, "mimeType": APP_MIME_TYPE, "text": HTML, "_meta": page_meta()}]),
        "{read}"
    );
    let missing = client
        .request(
            "resources/read",
            json!({"uri": "ui://counter/nothing.html"}),
            Some("ui://counter/nothing.html"),
        )
        .await;
    assert!(missing["error"].is_object(), "{missing}");

    let tools = client.tools().await;
    let meta = |name: &str| tool(&tools, name).map(|t| t["_meta"]["ui"].clone());
    assert_eq!(
        meta("counter__show"),
        Some(json!({"resourceUri": PAGE, "visibility": ["model", "app"]}))
    );
    assert_eq!(
        meta("counter__increment"),
        Some(json!({"resourceUri": PAGE, "visibility": ["app"]}))
    );
    assert_eq!(
        meta("counter__reset"),
        Some(json!({"visibility": ["model"]}))
    );

    // The page's button: an ordinary `tools/call`, through the executor.
    let first = client.call("counter__increment").await;
    assert_eq!(first["result"]["structuredContent"], json!({"count": 1}));
    assert_eq!(first["result"]["isError"], false);
    assert_eq!(text(&first), r#"{"count":1}"#);
    let again = client.call("counter__increment").await;
    assert_eq!(again["result"]["structuredContent"], json!({"count": 2}));
    assert_eq!(
        *seen.lock().unwrap(),
        ["counter__increment", "counter__increment"]
    );
    http.shutdown().await.unwrap();
}

/// A host without the extension: it is not shown the tool only a page may call and cannot
/// call it (the protocol's unknown-tool error), and the tools with a page answer it with text.
async fn a_host_without_the_extension(revision: &'static str) {
    let (server, seen) = served();
    let http = server
        .serve_http("127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    let (mut client, _) = Client::connect(&http.url(), revision, json!({})).await;
    let tools = client.tools().await;
    let names: Vec<&str> = tools.iter().filter_map(|t| t["name"].as_str()).collect();
    assert_eq!(names, ["counter__show", "counter__reset"], "{tools:?}");

    let shown = client.call("counter__show").await;
    assert_eq!(shown["result"]["isError"], false, "{shown}");
    assert_eq!(shown["result"]["content"][0]["type"], "text");
    assert_eq!(text(&shown), r#"{"count":0}"#);

    let refused = client.call("counter__increment").await;
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    let error = &refused["error"]["data"]["error"];
    assert_eq!(error["code"], "E_TOOL_NOT_IN_CATALOG", "{refused}");
    assert!(
        error["suggestion"]
            .as_str()
            .is_some_and(|s| s.contains("MCP Apps page only") && s.contains(APPS_EXTENSION_ID)),
        "{refused}"
    );
    // The refusal is the executor's catalog gate, before any middleware: nothing ran.
    assert_eq!(*seen.lock().unwrap(), ["counter__show"]);
    let still = client.call("counter__show").await;
    assert_eq!(still["result"]["structuredContent"], json!({"count": 0}));
    http.shutdown().await.unwrap();
}

#[tokio::test]
async fn mcp_apps_a_2025_11_25_host_with_the_extension_gets_the_page_the_links_and_the_app_only_tool()
 {
    a_host_with_the_extension("2025-11-25").await;
}

#[tokio::test]
async fn mcp_apps_a_2026_07_28_host_with_the_extension_gets_the_page_the_links_and_the_app_only_tool()
 {
    a_host_with_the_extension("2026-07-28").await;
}

#[tokio::test]
async fn mcp_apps_a_2025_11_25_host_without_the_extension_gets_text_and_no_app_only_tool() {
    a_host_without_the_extension("2025-11-25").await;
}

#[tokio::test]
async fn mcp_apps_a_2026_07_28_host_without_the_extension_gets_text_and_no_app_only_tool() {
    a_host_without_the_extension("2026-07-28").await;
}

/// A page read from a file in the workdir is served as the file says.
#[tokio::test]
async fn mcp_apps_a_page_file_is_read_from_the_workdir() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("pages")).unwrap();
    std::fs::write(dir.path().join("pages/view.html"), HTML).unwrap();
    let server = McpServer::builder(registry())
        .workdir(dir.path())
        .app_page(AppPage::file(PAGE, "pages/view.html"))
        .build()
        .unwrap();
    let http = server
        .serve_http("127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    let (mut client, _) = Client::connect(&http.url(), "2025-11-25", renders_pages()).await;
    let read = client
        .request("resources/read", json!({"uri": PAGE}), Some(PAGE))
        .await;
    assert_eq!(
        read["result"]["contents"],
        json!([{"uri": PAGE, "mimeType": APP_MIME_TYPE, "text": HTML}]),
        "{read}"
    );
    http.shutdown().await.unwrap();
}

fn build_error(page: AppPage, workdir: &std::path::Path) -> AppPageError {
    match McpServer::builder(registry())
        .workdir(workdir)
        .app_page(page)
        .build()
    {
        Err(McpServerError::App(error)) => error,
        other => panic!("expected a page error, got {other:?}"),
    }
}

/// What cannot be served fails the build, each with an error that names the page and what to
/// do: an oversized page (string or file, of which only the limit is read), a file that climbs
/// out of the workdir by `..` or by a link, a missing file, a URI that is not `ui://`, two
/// pages with one URI, and a tool naming a page that is not registered.
#[test]
fn mcp_apps_a_page_that_cannot_be_served_fails_the_build_with_a_clear_error() {
    let root = tempfile::tempdir().unwrap();
    let workdir = root.path().join("work");
    std::fs::create_dir(&workdir).unwrap();
    std::fs::write(root.path().join("secret.html"), HTML).unwrap();
    std::os::unix::fs::symlink(root.path().join("secret.html"), workdir.join("link.html")).unwrap();
    let big = "x".repeat(MAX_PAGE_BYTES + 1);
    std::fs::write(workdir.join("big.html"), &big).unwrap();
    std::fs::write(workdir.join("binary.html"), [0xff, 0xfe, 0x00]).unwrap();

    let error = build_error(AppPage::html(PAGE, big.clone()), &workdir);
    assert!(
        matches!(&error, AppPageError::TooLarge { uri, limit } if uri == PAGE && *limit == MAX_PAGE_BYTES),
        "{error}"
    );
    let error = build_error(AppPage::file(PAGE, "big.html"), &workdir);
    assert!(matches!(error, AppPageError::TooLarge { .. }), "{error}");
    for climbing in ["../secret.html", "link.html"] {
        let error = build_error(AppPage::file(PAGE, climbing), &workdir);
        assert!(
            matches!(&error, AppPageError::OutsideRoot { .. }),
            "{climbing}: {error}"
        );
        assert!(error.to_string().contains("outside"), "{error}");
    }
    let error = build_error(AppPage::file(PAGE, "nothing.html"), &workdir);
    assert!(
        matches!(&error, AppPageError::Read { .. }) && error.to_string().contains(PAGE),
        "{error}"
    );
    let error = build_error(AppPage::file(PAGE, "binary.html"), &workdir);
    assert!(matches!(error, AppPageError::NotUtf8 { .. }), "{error}");
    let error = build_error(
        AppPage::html("https://example.com/view.html", HTML),
        &workdir,
    );
    assert!(matches!(error, AppPageError::NotUi { .. }), "{error}");

    let twice = McpServer::builder(registry())
        .app_page(page())
        .app_page(page())
        .build();
    assert!(
        matches!(
            twice,
            Err(McpServerError::App(AppPageError::Duplicate { .. }))
        ),
        "{twice:?}"
    );
    // The counter's tools show `ui://counter/view.html`; another page does not stand in for it.
    let unregistered = McpServer::builder(registry())
        .app_page(AppPage::html("ui://counter/other.html", HTML))
        .build()
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert_eq!(
        unregistered,
        "the tool `counter__show` shows the page `ui://counter/view.html`, which is not \
         registered; add it with `McpServerBuilder::app_page` (registered pages: \
         ui://counter/other.html)"
    );
}

/// A bundle's export names its page file and the rest of its `_meta.ui`; the page's URI comes
/// from the compiled export when the YAML does not give one, the YAML's `visibility` wins over
/// the compiled one, and the file is read from the bundle's folder.
#[test]
fn mcp_apps_a_bundle_export_names_its_page_and_its_visibility() {
    use goondan_runtime::bundle::{Bundle, ToolLibrary};
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("view.html"), HTML).unwrap();
    let yaml = "apiVersion: goondan.ai/v1
kind: Tool
metadata: {name: counter}
spec:
  exports:
    - name: show
      ui: {page: view.html, prefersBorder: false}
    - name: increment
    - name: reset
      ui: {visibility: [model, app]}
---
apiVersion: goondan.ai/v1
kind: Agent
metadata: {name: counting}
spec:
  tools: [\"Tool/counter\"]
";
    let file = dir.path().join("goondan.yaml");
    std::fs::write(&file, yaml).unwrap();
    let bundle = Bundle::read(&file).unwrap();
    let library = ToolLibrary::new([Counter::default()]);
    let server = McpServer::for_agent(&bundle, &library, "counting")
        .unwrap()
        .build()
        .unwrap();
    let catalog = server.catalog();
    let ui = |name: &str| catalog.get(name).and_then(|i| i.ui().cloned());
    use goondan_runtime::tools::ui::{ExportUi, Visibility};
    assert_eq!(ui("counter__show"), Some(ExportUi::page(PAGE)));
    assert_eq!(
        ui("counter__reset"),
        Some(ExportUi::visible_to(Visibility::Both))
    );
    let listed = goondan_runtime::dialect::mcp::tools_list(&catalog).unwrap();
    assert_eq!(
        listed["tools"][2]["_meta"],
        json!({"ui": {"visibility": ["model", "app"]}}),
        "{listed}"
    );
}

/// A bundle export's `ui` of the wrong form is a diagnostic at its line, not a server that
/// serves something else.
#[test]
fn mcp_apps_a_bundle_export_s_ui_of_the_wrong_form_is_a_diagnostic() {
    use goondan_runtime::bundle::Bundle;
    let yaml = "apiVersion: goondan.ai/v1
kind: Tool
metadata: {name: counter}
spec:
  exports:
    - name: show
      ui: {resourceUri: \"https://example.com/view.html\", page: 5, colour: red}
    - name: increment
      ui: {visibility: [user]}
    - name: reset
";
    let bundle = Bundle::from_yaml(yaml, "goondan.yaml");
    let messages: Vec<&str> = bundle
        .diagnostics()
        .iter()
        .map(|d| d.message.as_str())
        .collect();
    for expected in [
        "`resourceUri` must be a `ui://` URI",
        "`page` must be a file",
        "unknown key `colour` in `ui`",
        "unknown visibility `user`",
    ] {
        assert!(
            messages.iter().any(|m| m.contains(expected)),
            "{expected}: {messages:?}"
        );
    }
}
