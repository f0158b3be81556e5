//! `goondan_runtime::mcp::server` seen by rmcp's own client over an in-process duplex: every
//! Goondan rule holds over MCP.
#![cfg(feature = "mcp")]

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use goondan_runtime::mcp::server::McpServer;
use goondan_runtime::prelude::*;
use goondan_runtime::{Export, ToolExecutor, ToolSource, from_fn, handler_fn};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, CancelTaskParams, ClientCapabilities,
    ClientConfig, ClientRequest, GetTaskParams, Implementation, PaginatedRequestParams,
    ProgressNotificationParam, ProtocolVersion, Request, RequestMetaObject, TaskStatus, Tool,
};
use rmcp::service::{NotificationContext, PeerRequestOptions, RunningService};
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use serde_json::{Value, json};
use tokio::sync::mpsc;

/// A calculator.
#[tool(name = "calc")]
pub mod calc {
    use super::*;

    /// Adds two numbers.
    #[export(title = "Add two numbers", read_only, idempotent, output_schema)]
    pub fn add(a: i64, b: i64) -> i64 {
        a + b
    }

    /// Divides `a` by `b`.
    #[export(destructive = false, open_world = false)]
    pub fn div(a: i64, b: i64) -> Result<i64, ToolError> {
        if b == 0 {
            return Err(
                ToolError::new(format!("cannot divide {a} by zero{}", ".".repeat(300)))
                    .with_code("E_CALC_DIV_ZERO")
                    .with_suggestion("pass a non-zero `b`"),
            );
        }
        Ok(a / b)
    }

    /// A point.
    #[export(output_schema)]
    pub fn point(x: i64, y: i64) -> Point {
        Point { x, y }
    }
}

/// A point on the plane.
#[derive(Serialize, JsonSchema)]
pub struct Point {
    x: i64,
    y: i64,
}

static WAIT_STARTED: AtomicBool = AtomicBool::new(false);
static WAIT_CANCELLED: AtomicBool = AtomicBool::new(false);
static JOB_DROPPED: AtomicUsize = AtomicUsize::new(0);

/// Sets a flag when dropped: the background work stopped.
struct DropFlag;
impl Drop for DropFlag {
    fn drop(&mut self) {
        JOB_DROPPED.fetch_add(1, Ordering::SeqCst);
    }
}

/// Slow work.
#[tool(name = "slow")]
pub mod slow {
    use super::*;

    /// Waits until cancelled. The executor stops a cancelled call by dropping its future, so
    /// the flag is set when the work ends either way.
    pub async fn wait(ctx: &ToolContext) -> String {
        struct Ended;
        impl Drop for Ended {
            fn drop(&mut self) {
                WAIT_CANCELLED.store(true, Ordering::SeqCst);
            }
        }
        let _ended = Ended;
        WAIT_STARTED.store(true, Ordering::SeqCst);
        ctx.cancellation().cancelled().await;
        "stopped".to_owned()
    }

    /// Counts to `n`, reporting each step.
    pub async fn steps(ctx: &ToolContext, n: u32) -> u32 {
        for i in 1..=n {
            ctx.progress(f64::from(i), Some(f64::from(n)), Some(&format!("step {i}")));
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        n
    }

    /// Submits work that finishes after `ms` milliseconds.
    pub fn job(ms: u64) -> Pending {
        Pending::new(async move {
            let _flag = DropFlag;
            tokio::time::sleep(Duration::from_millis(ms)).await;
            Ok::<_, ToolError>(json!({"slept": ms}))
        })
    }

    /// Submits work longer than its timeout.
    #[export(timeout_ms = 150)]
    pub fn late() -> Pending {
        Pending::new(async move {
            tokio::time::sleep(Duration::from_secs(30)).await;
            Ok::<_, ToolError>(1)
        })
    }
}

/// Registered, but outside the served catalog.
#[tool(name = "hidden")]
pub fn secret() -> String {
    "s3cr3t".to_owned()
}

/// What the client saw besides responses.
#[derive(Clone)]
struct Client {
    tasks: bool,
    progress: mpsc::UnboundedSender<ProgressNotificationParam>,
    list_changed: mpsc::UnboundedSender<()>,
}

impl ClientHandler for Client {
    fn get_info(&self) -> ClientConfig {
        let caps = if self.tasks {
            ClientCapabilities::builder().enable_tasks().build()
        } else {
            ClientCapabilities::default()
        };
        ClientConfig::new(caps, Implementation::new("test-client", "1.0"))
            .with_protocol_version(ProtocolVersion::V_2025_11_25)
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let _ = self.progress.send(params);
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        let _ = self.list_changed.send(());
    }
}

struct Session {
    client: RunningService<RoleClient, Client>,
    progress: mpsc::UnboundedReceiver<ProgressNotificationParam>,
    list_changed: mpsc::UnboundedReceiver<()>,
}

fn registry() -> Arc<ToolRegistry> {
    Arc::new(
        ToolRegistry::builder()
            .tool(calc::TOOL)
            .tool(slow::TOOL)
            .tool(secret::TOOL)
            .build()
            .expect("registry"),
    )
}

async fn connect(server: McpServer, tasks: bool) -> Session {
    let (client_io, server_io) = tokio::io::duplex(64 * 1024);
    tokio::spawn(async move {
        if let Ok(running) = server.serve(server_io).await {
            let _ = running.waiting().await;
        }
    });
    let (ptx, progress) = mpsc::unbounded_channel();
    let (ltx, list_changed) = mpsc::unbounded_channel();
    let client = Client {
        tasks,
        progress: ptx,
        list_changed: ltx,
    }
    .serve(client_io)
    .await
    .expect("client connects");
    Session {
        client,
        progress,
        list_changed,
    }
}

fn served(registry: &Arc<ToolRegistry>) -> McpServer {
    McpServer::builder(Arc::clone(registry))
        .tools(["slow", "calc"])
        .build()
        .expect("server")
}

fn params(name: &str, args: Value) -> CallToolRequestParams {
    let mut p = CallToolRequestParams::new(name.to_owned());
    if let Value::Object(o) = args {
        p = p.with_arguments(o);
    }
    p
}

fn text(result: &CallToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect()
}

async fn list_all(session: &Session) -> Vec<Tool> {
    let mut tools = Vec::new();
    let mut cursor = None;
    loop {
        let page = session
            .client
            .list_tools(Some(PaginatedRequestParams::default().with_cursor(cursor)))
            .await
            .expect("tools/list");
        tools.extend(page.tools);
        match page.next_cursor {
            Some(c) => cursor = Some(c),
            None => return tools,
        }
    }
}

#[tokio::test]
async fn mcp_server_lists_the_catalog_in_order_with_goondan_names_in_pages() {
    let registry = registry();
    let server = McpServer::builder(Arc::clone(&registry))
        .tools(["slow", "calc"])
        .page_size(2)
        .build()
        .expect("server");
    let session = connect(server.clone(), false).await;
    let first = session.client.list_tools(None).await.expect("tools/list");
    assert_eq!(first.tools.len(), 2);
    assert_eq!(first.next_cursor.as_deref(), Some("2"));
    let names: Vec<String> = list_all(&session)
        .await
        .into_iter()
        .map(|t| t.name.to_string())
        .collect();
    // The Agent's order (slow, then calc), exports in declaration order, names unchanged.
    assert_eq!(
        names,
        [
            "slow__wait",
            "slow__steps",
            "slow__job",
            "slow__late",
            "calc__add",
            "calc__div",
            "calc__point"
        ]
    );
    assert_eq!(names, server.catalog().names().collect::<Vec<_>>());
    // The same list twice.
    let again: Vec<String> = list_all(&session)
        .await
        .into_iter()
        .map(|t| t.name.to_string())
        .collect();
    assert_eq!(names, again);
    // A cursor we never gave is a protocol error.
    let bad = session
        .client
        .list_tools(Some(
            PaginatedRequestParams::default().with_cursor(Some("x".into())),
        ))
        .await;
    assert!(bad.is_err());
}

#[tokio::test]
async fn mcp_server_refuses_a_tool_outside_the_catalog_with_the_unknown_tool_error() {
    let registry = registry();
    let session = connect(served(&registry), false).await;
    let err = session
        .client
        .call_tool(params("hidden__secret", json!({})))
        .await
        .expect_err("refused");
    let rmcp::ServiceError::McpError(data) = err else {
        panic!("expected a JSON-RPC error, got {err:?}");
    };
    assert_eq!(data.code.0, -32602);
    assert!(
        data.message.contains("Unknown tool: hidden__secret"),
        "{}",
        data.message
    );
    let data = data.data.expect("structured error");
    assert_eq!(data["error"]["code"], "E_TOOL_NOT_IN_CATALOG");
}

#[tokio::test]
async fn mcp_server_error_is_an_is_error_result_with_the_structured_error_cut_to_the_limit() {
    let registry = registry();
    let session = connect(served(&registry), false).await;
    let r = session
        .client
        .call_tool(params("calc__div", json!({"a": 1, "b": 0})))
        .await
        .expect("a result");
    assert_eq!(r.is_error, Some(true));
    let t = text(&r);
    assert!(t.starts_with("error E_CALC_DIV_ZERO"), "{t}");
    assert!(t.contains("suggestion: pass a non-zero `b`"), "{t}");
    let err = &r.structured_content.as_ref().expect("structured")["error"];
    assert_eq!(err["code"], "E_CALC_DIV_ZERO");
    assert_eq!(err["suggestion"], "pass a non-zero `b`");
    assert!(err["helpUrl"].is_null() || err["helpUrl"].is_string());
    // The executor cut the message to the resource's limit (1000 by default) as usual.
    let message = err["message"].as_str().expect("message");
    assert!(message.chars().count() <= 1000 + "... (truncated)".len());
    // Invalid arguments are a result the model can correct, not a protocol error.
    let r = session
        .client
        .call_tool(params("calc__div", json!({"a": "one", "b": 2})))
        .await
        .expect("a result");
    assert_eq!(r.is_error, Some(true));
    assert_eq!(
        r.structured_content.expect("structured")["error"]["code"],
        "E_TOOL_INVALID_ARGS"
    );
}

#[tokio::test]
async fn mcp_server_runs_every_call_through_the_executor_middleware() {
    let registry = registry();
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let log = Arc::clone(&seen);
    let executor = ToolExecutor::builder(Arc::clone(&registry))
        .middleware(from_fn(move |call, next| {
            let log = Arc::clone(&log);
            async move {
                log.lock()
                    .expect("lock")
                    .push((call.tool_name().to_owned(), call.annotations().read_only));
                next.run(call).await
            }
        }))
        .build();
    let server = McpServer::builder(Arc::clone(&registry))
        .tools(["calc"])
        .executor(executor)
        .build()
        .expect("server");
    let session = connect(server, false).await;
    let r = session
        .client
        .call_tool(params("calc__add", json!({"a": 2, "b": 3})))
        .await
        .expect("ok");
    assert_eq!(r.is_error, Some(false));
    // The middleware ran, and saw the export's annotations.
    assert_eq!(
        *seen.lock().expect("lock"),
        vec![("calc__add".to_owned(), Some(true))]
    );
}

#[tokio::test]
async fn mcp_server_publishes_output_schemas_and_structured_content_valid_against_them() {
    let registry = registry();
    let session = connect(served(&registry), false).await;
    let tools = list_all(&session).await;
    let add = tools.iter().find(|t| t.name == "calc__add").expect("add");
    let schema = Value::Object((*add.output_schema.clone().expect("output schema")).clone());
    assert_eq!(schema["type"], "object");
    assert_eq!(schema["properties"]["result"]["type"], "integer");
    let point = tools
        .iter()
        .find(|t| t.name == "calc__point")
        .expect("point");
    let point_schema = Value::Object((*point.output_schema.clone().expect("schema")).clone());
    assert_eq!(point_schema["properties"]["x"]["type"], "integer");
    // No output schema unless the export opts in.
    let div = tools.iter().find(|t| t.name == "calc__div").expect("div");
    assert!(div.output_schema.is_none());

    for (tool, args, schema) in [
        ("calc__add", json!({"a": 2, "b": 3}), &schema),
        ("calc__point", json!({"x": 1, "y": -1}), &point_schema),
    ] {
        let r = session
            .client
            .call_tool(params(tool, args))
            .await
            .expect("ok");
        let structured = r.structured_content.clone().expect("structured content");
        let validator = jsonschema::validator_for(schema).expect("a valid schema");
        assert!(
            validator.is_valid(&structured),
            "{structured} against {schema}"
        );
        // The same JSON as text.
        assert_eq!(
            serde_json::from_str::<Value>(&text(&r)).expect("json text"),
            structured
        );
    }
    let r = session
        .client
        .call_tool(params("calc__add", json!({"a": 2, "b": 3})))
        .await
        .expect("ok");
    assert_eq!(r.structured_content, Some(json!({"result": 5})));
}

#[tokio::test]
async fn mcp_server_publishes_titles_and_annotations_from_export_yaml_and_registrations() {
    let registry = registry();
    registry
        .register_export(
            "db",
            Export::new(
                "drop",
                json!({"type": "object"}),
                handler_fn(|_ctx, _args| async { Ok::<_, ToolError>(()) }),
            )
            .with_annotations(
                goondan_runtime::tools::annotations::ExportAnnotations::new()
                    .title("Drop the table")
                    .destructive(true),
            ),
            ToolSource::extension("db-extension"),
        )
        .expect("registered");
    let session = connect(served(&registry), false).await;
    let tools = list_all(&session).await;
    let add = tools.iter().find(|t| t.name == "calc__add").expect("add");
    assert_eq!(add.title.as_deref(), Some("Add two numbers"));
    let a = add.annotations.clone().expect("annotations");
    assert_eq!(
        (
            a.title.as_deref(),
            a.read_only_hint,
            a.idempotent_hint,
            a.destructive_hint
        ),
        (Some("Add two numbers"), Some(true), Some(true), None)
    );
    let div = tools.iter().find(|t| t.name == "calc__div").expect("div");
    let a = div.annotations.clone().expect("annotations");
    assert_eq!(
        (a.destructive_hint, a.open_world_hint),
        (Some(false), Some(false))
    );
    assert!(div.title.is_none());
    // A dynamic registration, served because registered tools join the catalog (CAT-5).
    let drop = tools
        .iter()
        .find(|t| t.name == "db__drop")
        .expect("db__drop");
    assert_eq!(drop.title.as_deref(), Some("Drop the table"));
    assert_eq!(
        drop.annotations.clone().and_then(|a| a.destructive_hint),
        Some(true)
    );
    // Steps without annotations publish none.
    let steps = tools
        .iter()
        .find(|t| t.name == "slow__steps")
        .expect("steps");
    assert!(steps.annotations.is_none() && steps.title.is_none());
}

#[tokio::test]
async fn mcp_server_cancelled_notification_cancels_the_tool_context() {
    let registry = registry();
    let session = connect(served(&registry), false).await;
    let request = ClientRequest::CallToolRequest(Request::new(params("slow__wait", json!({}))));
    let handle = session
        .client
        .peer()
        .send_cancellable_request(request, PeerRequestOptions::no_options())
        .await
        .expect("sent");
    // Cancel only once the call runs: a cancellation that overtakes its request is dropped.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while !WAIT_STARTED.load(Ordering::SeqCst) {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the call never started"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(!WAIT_CANCELLED.load(Ordering::SeqCst));
    handle
        .cancel(Some("user pressed stop".into()))
        .await
        .expect("cancel sent");
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while !WAIT_CANCELLED.load(Ordering::SeqCst) {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the tool's context was not cancelled"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test]
async fn mcp_server_forwards_progress_when_the_client_sent_a_progress_token() {
    let registry = registry();
    let mut session = connect(served(&registry), false).await;
    let mut p = params("slow__steps", json!({"n": 3}));
    p.meta = Some(RequestMetaObject::with_progress_token(
        rmcp::model::ProgressToken(rmcp::model::NumberOrString::String("tok-1".into())),
    ));
    let r = session.client.call_tool(p).await.expect("ok");
    assert_eq!(r.structured_content, Some(json!({"result": 3})));
    let mut seen = Vec::new();
    while let Ok(Some(n)) =
        tokio::time::timeout(Duration::from_millis(500), session.progress.recv()).await
    {
        seen.push(n);
        if seen.len() == 3 {
            break;
        }
    }
    let values: Vec<(f64, Option<f64>, Option<String>)> = seen
        .iter()
        .map(|n| (n.progress, n.total, n.message.clone()))
        .collect();
    assert_eq!(
        values,
        vec![
            (1.0, Some(3.0), Some("step 1".into())),
            (2.0, Some(3.0), Some("step 2".into())),
            (3.0, Some(3.0), Some("step 3".into())),
        ]
    );
    // rmcp's client puts its own token on every request; every report carries the one sent.
    assert!(
        seen.iter()
            .all(|n| n.progress_token == seen[0].progress_token)
    );
}

#[tokio::test]
async fn mcp_server_pending_result_is_a_task_polled_to_the_call_s_result() {
    let registry = registry();
    let session = connect(served(&registry), true).await;
    let response = session
        .client
        .call_tool_once(params("slow__job", json!({"ms": 50})))
        .await
        .expect("response");
    let CallToolResponse::Task(created) = response else {
        panic!("expected a task, got {response:?}");
    };
    assert_eq!(created.task.status, TaskStatus::Working);
    let id = created.task.task_id.clone();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    let result = loop {
        let got = session
            .client
            .get_task(GetTaskParams::new(id.clone()))
            .await
            .expect("tasks/get");
        match got.task.payload {
            rmcp::model::TaskPayload::Completed { result } => break result,
            rmcp::model::TaskPayload::Working => {}
            other => panic!("unexpected {other:?}"),
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the task never completed"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert_eq!(result["structuredContent"], json!({"slept": 50}));
    assert_eq!(result["isError"], false);
}

#[tokio::test]
async fn mcp_server_cancelling_a_task_cancels_its_work() {
    let registry = registry();
    let session = connect(served(&registry), true).await;
    let before = JOB_DROPPED.load(Ordering::SeqCst);
    let CallToolResponse::Task(created) = session
        .client
        .call_tool_once(params("slow__job", json!({"ms": 30_000})))
        .await
        .expect("response")
    else {
        panic!("expected a task");
    };
    let id = created.task.task_id;
    session
        .client
        .cancel_task(CancelTaskParams::new(id.clone()))
        .await
        .expect("tasks/cancel");
    let got = session
        .client
        .get_task(GetTaskParams::new(id))
        .await
        .expect("tasks/get");
    assert_eq!(got.task.task.status, TaskStatus::Cancelled);
    // The work itself stopped (its future was dropped), long before its 30 s.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while JOB_DROPPED.load(Ordering::SeqCst) == before {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the work was not cancelled"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test]
async fn mcp_server_client_without_tasks_waits_for_a_pending_result_bounded_by_the_timeout() {
    let registry = registry();
    let session = connect(served(&registry), false).await;
    let r = session
        .client
        .call_tool(params("slow__job", json!({"ms": 30})))
        .await
        .expect("ok");
    assert_eq!(r.structured_content, Some(json!({"slept": 30})));
    let started = std::time::Instant::now();
    let r = session
        .client
        .call_tool(params("slow__late", json!({})))
        .await
        .expect("result");
    assert!(started.elapsed() < Duration::from_secs(10));
    assert_eq!(r.is_error, Some(true));
    assert_eq!(
        r.structured_content.expect("structured")["error"]["code"],
        "E_TOOL_TIMEOUT"
    );
}

#[tokio::test]
async fn mcp_server_announces_list_changed_when_a_registration_changes_the_catalog() {
    let registry = registry();
    let mut session = connect(served(&registry), false).await;
    assert!(
        !list_all(&session)
            .await
            .iter()
            .any(|t| t.name == "late__tool")
    );
    tokio::time::sleep(Duration::from_millis(50)).await;
    registry
        .register_item(
            "late__tool",
            Some("Registered at run time".into()),
            json!({"type": "object"}),
            handler_fn(|_ctx, _args| async { Ok::<_, ToolError>("late") }),
            ToolSource::extension("ext"),
        )
        .expect("registered");
    tokio::time::timeout(Duration::from_secs(5), session.list_changed.recv())
        .await
        .expect("list_changed within 5 s")
        .expect("a notification");
    let names: Vec<String> = list_all(&session)
        .await
        .into_iter()
        .map(|t| t.name.to_string())
        .collect();
    assert_eq!(names.last().map(String::as_str), Some("late__tool"));
    let r = session
        .client
        .call_tool(params("late__tool", json!({})))
        .await
        .expect("ok");
    assert_eq!(text(&r), "late");
}

const BUNDLE: &str = r#"
apiVersion: goondan.ai/v1
kind: Model
metadata: {name: m}
spec: {provider: anthropic, model: claude-sonnet-4-5}
---
apiVersion: goondan.ai/v1
kind: Tool
metadata: {name: calc}
spec:
  entry: "rust:calc"
  exports:
    - name: add
      annotations: {title: "Sum", openWorld: false}
    - name: div
      annotations: {readOnly: true}
    - name: point
---
apiVersion: goondan.ai/v1
kind: Agent
metadata: {name: helper}
spec:
  modelConfig: {modelRef: "Model/m"}
  tools: ["Tool/calc"]
"#;

#[tokio::test]
async fn mcp_server_serves_an_agent_of_a_bundle_with_its_yaml_annotations() {
    let bundle = goondan_runtime::Bundle::from_yaml(BUNDLE, "goondan.yaml");
    assert!(!bundle.has_errors(), "{:?}", bundle.diagnostics());
    let library = goondan_runtime::ToolLibrary::new([calc::TOOL]);
    let server = McpServer::for_agent(&bundle, &library, "helper")
        .expect("the agent")
        .build()
        .expect("server");
    let session = connect(server, false).await;
    let tools = list_all(&session).await;
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    // The Agent's catalog: the exports its Tool resource declares.
    assert_eq!(names, ["calc__add", "calc__div", "calc__point"]);
    let add = &tools[0];
    // The YAML's title wins over the compiled one; hints merge key by key.
    assert_eq!(add.title.as_deref(), Some("Sum"));
    let a = add.annotations.clone().expect("annotations");
    assert_eq!(
        (a.read_only_hint, a.idempotent_hint, a.open_world_hint),
        (Some(true), Some(true), Some(false))
    );
    let div = tools[1].annotations.clone().expect("annotations");
    assert_eq!(
        (
            div.read_only_hint,
            div.destructive_hint,
            div.open_world_hint
        ),
        (Some(true), Some(false), Some(false))
    );
}

#[test]
fn mcp_bundle_export_annotations_of_the_wrong_shape_are_reported() {
    let yaml = BUNDLE.replace(
        "annotations: {readOnly: true}",
        "annotations: {readOnly: \"yes\"}",
    );
    let bundle = goondan_runtime::Bundle::from_yaml(&yaml, "goondan.yaml");
    assert!(bundle.has_errors());
    assert!(
        bundle
            .diagnostics()
            .iter()
            .any(|d| d.message.contains("`annotations` must be a mapping")),
        "{:?}",
        bundle.diagnostics()
    );
}

// ---- Streamable HTTP: bad bodies and bounded sessions ----

/// A POST of `body` to `url` as an MCP client sends it (JSON, both media types accepted).
async fn post_raw(
    url: &str,
    body: impl Into<reqwest::Body>,
    session: Option<&str>,
) -> (u16, Value) {
    goondan_runtime::tls::install_crypto_provider();
    let mut request = reqwest::Client::new()
        .post(url)
        .header("Accept", "application/json, text/event-stream")
        .header("Content-Type", "application/json")
        .body(body);
    if let Some(id) = session {
        request = request
            .header("Mcp-Session-Id", id)
            .header("MCP-Protocol-Version", "2025-11-25");
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    let text = response.text().await.unwrap();
    let json = serde_json::from_str(&text).unwrap_or_else(|_| {
        text.lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .find_map(|d| serde_json::from_str(d.trim()).ok())
            .unwrap_or(Value::String(text.clone()))
    });
    (status, json)
}

const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}"#;

/// Opens a session; its id.
async fn open_session(url: &str) -> Option<String> {
    goondan_runtime::tls::install_crypto_provider();
    let response = reqwest::Client::new()
        .post(url)
        .header("Accept", "application/json, text/event-stream")
        .header("Content-Type", "application/json")
        .body(INITIALIZE)
        .send()
        .await
        .ok()?;
    let id = response
        .headers()
        .get("mcp-session-id")?
        .to_str()
        .ok()?
        .to_owned();
    let _ = response.bytes().await;
    Some(id)
}

fn echo_server() -> McpServer {
    let registry = Arc::new(ToolRegistry::builder().tool(echo_tool()).build().unwrap());
    McpServer::builder(registry).build().unwrap()
}

/// A tool for the HTTP tests.
fn echo_tool() -> goondan_runtime::Tool {
    goondan_runtime::Tool::builder("echo")
        .export(Export::new(
            "say",
            json!({"type": "object", "properties": {"text": {"type": "string"}}}),
            handler_fn(|_ctx, args| async move { Ok::<_, ToolError>(Value::Object(args)) }),
        ))
        .build()
        .unwrap()
}

/// What the server answers a POST whose `Host` is `host` (none: no `Host` header), sent on a
/// connection of its own: the status and the body. The request accepts JSON only, so a host
/// that passes the check gets rmcp's 406 and nothing is served.
async fn post_with_host(addr: std::net::SocketAddr, host: Option<&str>) -> (u16, String) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let host = host.map_or_else(String::new, |h| format!("Host: {h}\r\n"));
    let request = format!(
        "POST /mcp HTTP/1.1\r\n{host}Accept: application/json\r\nContent-Type: application/json\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{{}}"
    );
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).await.unwrap();
    let answer = String::from_utf8_lossy(&answer);
    let status = answer
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let body = answer.split_once("\r\n\r\n").map_or("", |(_, b)| b);
    (status, body.to_owned())
}

/// Only loopback `Host`s are served (a defence against DNS rebinding): `localhost`,
/// `127.0.0.1` and `::1`, with any port, pass on to the request's own checks (here: rmcp's 406
/// for an `Accept` without SSE); any other host is HTTP 403, and a request without a `Host`, or
/// with one that does not parse, HTTP 400.
#[tokio::test]
async fn mcp_http_only_loopback_hosts_are_served() {
    let http = echo_server()
        .serve_http("127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    let port = http.local_addr().port();
    let own = format!("127.0.0.1:{port}");
    for host in [
        own.as_str(),
        "localhost",
        "LocalHost:80",
        "127.0.0.1",
        "[::1]",
        "[::1]:8080",
    ] {
        let (status, body) = post_with_host(http.local_addr(), Some(host)).await;
        assert_eq!(status, 406, "Host {host}: {body}");
    }
    for host in [
        "evil.example",
        "localhost.evil",
        "127.0.0.2",
        "evil.example:80",
    ] {
        let (status, body) = post_with_host(http.local_addr(), Some(host)).await;
        assert_eq!(status, 403, "Host {host}: {body}");
        assert!(
            body.contains("Host header is not allowed"),
            "Host {host}: {body}"
        );
    }
    for host in [None, Some("[::1")] {
        let (status, body) = post_with_host(http.local_addr(), host).await;
        assert_eq!(status, 400, "Host {host:?}: {body}");
    }
    http.shutdown().await.unwrap();
}

#[tokio::test]
async fn mcp_http_a_body_that_is_not_json_is_400_with_a_parse_error_and_the_server_goes_on() {
    let http = echo_server()
        .serve_http("127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    let url = http.url();
    let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
    for (what, body) in [
        ("not JSON", b"this is not json".to_vec()),
        ("invalid UTF-8", vec![b'{', 0xff, 0xfe, b'}']),
        ("nested too deep", deep.into_bytes()),
        (
            "cut short",
            br#"{"jsonrpc":"2.0","id":1,"method":"initi"#.to_vec(),
        ),
    ] {
        let (status, answer) = post_raw(&url, body, None).await;
        assert_eq!(status, 400, "{what}: {answer}");
        assert_eq!(answer["error"]["code"], -32700, "{what}: {answer}");
        assert_eq!(answer["jsonrpc"], "2.0", "{what}: {answer}");
    }
    // JSON, but no JSON-RPC message: the invalid-request error.
    let (status, answer) = post_raw(&url, r#"{"hello": "world"}"#, None).await;
    assert_eq!(
        (status, answer["error"]["code"].clone()),
        (400, json!(-32600)),
        "{answer}"
    );
    // A body over the cap is refused before it is read whole.
    let huge = vec![b' '; 5 * 1024 * 1024];
    let (status, _) = post_raw(&url, huge, None).await;
    assert_eq!(status, 413);
    // The server goes on serving.
    assert!(open_session(&url).await.is_some());
    http.shutdown().await.unwrap();
}

#[tokio::test]
async fn mcp_http_an_idle_session_expires() {
    use goondan_runtime::mcp::server::HttpLimits;
    let registry = Arc::new(ToolRegistry::builder().tool(echo_tool()).build().unwrap());
    let http = McpServer::builder(registry)
        .http_limits(HttpLimits::default().idle_timeout(Duration::from_secs(1)))
        .build()
        .unwrap()
        .serve_http("127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    let url = http.url();
    let id = open_session(&url).await.expect("a session");
    let ping = r#"{"jsonrpc":"2.0","id":2,"method":"ping"}"#;
    let (status, _) = post_raw(&url, ping, Some(&id)).await;
    assert_eq!(status, 200, "a fresh session answers");
    tokio::time::sleep(Duration::from_millis(2_500)).await;
    let (status, answer) = post_raw(&url, ping, Some(&id)).await;
    assert_eq!(status, 404, "an idle session is gone: {answer}");
    http.shutdown().await.unwrap();
}

/// The resident memory of process `pid`, in KiB.
fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap()
}

/// 10,000 `initialize` requests against a real server process with the default limits:
/// 1,024 sessions open, the rest are refused with a clear error, the server's memory stays
/// under 160 MiB, and it goes on serving the open sessions.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_http_ten_thousand_sessions_stay_under_the_cap_and_a_memory_bound() {
    use std::io::BufRead;
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_goondan-test-mcp-conformance"))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut url = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut url)
        .unwrap();
    let url = url.trim().to_owned();
    let pid = child.id();
    let before = rss_kib(pid);
    let opened = Arc::new(AtomicUsize::new(0));
    let refused = Arc::new(AtomicUsize::new(0));
    let first = Arc::new(std::sync::Mutex::new(None::<String>));
    let mut workers = Vec::new();
    for _ in 0..50 {
        let (url, opened, refused, first) =
            (url.clone(), opened.clone(), refused.clone(), first.clone());
        workers.push(tokio::spawn(async move {
            goondan_runtime::tls::install_crypto_provider();
            let client = reqwest::Client::new();
            for _ in 0..200 {
                let response = client
                    .post(&url)
                    .header("Accept", "application/json, text/event-stream")
                    .header("Content-Type", "application/json")
                    .body(INITIALIZE)
                    .send()
                    .await
                    .unwrap();
                let status = response.status().as_u16();
                let session = response
                    .headers()
                    .get("mcp-session-id")
                    .and_then(|v| v.to_str().ok())
                    .map(str::to_owned);
                let text = response.text().await.unwrap();
                match (status, session) {
                    (200, Some(id)) => {
                        opened.fetch_add(1, Ordering::Relaxed);
                        first.lock().unwrap().get_or_insert(id);
                    }
                    (503, _) => {
                        assert!(text.contains("too many open sessions"), "{text}");
                        refused.fetch_add(1, Ordering::Relaxed);
                    }
                    other => panic!("unexpected answer {other:?}: {text}"),
                }
            }
        }));
    }
    for w in workers {
        w.await.unwrap();
    }
    let after = rss_kib(pid);
    let (opened, refused) = (
        opened.load(Ordering::Relaxed),
        refused.load(Ordering::Relaxed),
    );
    eprintln!("sessions opened {opened}, refused {refused}; RSS {before} -> {after} KiB");
    assert_eq!(opened + refused, 10_000);
    assert_eq!(opened, 1024, "the default cap");
    assert!(after < 160 * 1024, "RSS {after} KiB");
    // The open sessions still work.
    let id = first.lock().unwrap().clone().unwrap();
    let ping = r#"{"jsonrpc":"2.0","id":2,"method":"ping"}"#;
    let (status, answer) = post_raw(&url, ping, Some(&id)).await;
    assert_eq!(status, 200, "{answer}");
    let _ = child.kill();
    let _ = child.wait();
}
