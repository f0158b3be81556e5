//! A small MCP server over stdio for `tests/it/mcp_client.rs`, written on rmcp's `ServerHandler`
//! by hand. Its tools:
//!
//! - `fail {message}`: answers `isError: true` with `message`.
//! - `wait {ms}`: sleeps; when the client cancels it, appends `cancelled wait` to the file
//!   named by `MCP_TEST_LOG`.
//! - `add-tool {name, quiet?}` / `remove-tool {name}`: changes the list and announces
//!   `notifications/tools/list_changed` (not when `quiet`); an added tool answers its own
//!   name.
//! - `where`: the working directory and `MCP_TEST_GREETING`.
//! - `fs.read__all`: a name our names cannot hold; answers `mapped`.
//!
//! - `huge {mib}`: answers a text of `mib` MiB.
//!
//! While the file named by `MCP_TEST_REFUSE_FILE` exists, it exits at once instead. With
//! `MCP_TEST_ENDLESS_LIST` set, every `tools/list` page names a next one. With `MCP_TEST_TTL_MS`,
//! every listing says it is fresh that long, and each listing appends `listed` to
//! `MCP_TEST_LOG`.
//!
//! With the argument `goondan`, it serves instead the Goondan tool `calc` (`add`, `div`,
//! `later`) with `goondan_runtime::mcp::server::McpServer`: our server, for the end-to-end
//! test of our client.
//!
//! - `slow-task {ms}`: for a client with the tasks extension, a task that completes after
//!   `ms` (`tasks/get`); `tasks/cancel` appends `cancelled task` to `MCP_TEST_LOG`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashMap;
use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, CancelTaskParams, ContentBlock,
    CreateTaskResult, DetailedTask, GetTaskParams, GetTaskResult, Implementation, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig, Task, TaskPayload, TaskStatus, Tool,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::{ErrorData, ServerHandler, serve_server};
use serde_json::{Value, json};

struct TestServer {
    extra: Arc<Mutex<Vec<String>>>,
    /// Tasks: when each started, how long it takes, whether it was cancelled.
    tasks: Mutex<HashMap<String, (Instant, Duration, bool)>>,
}

fn log(line: &str) {
    if let Some(path) = std::env::var_os("MCP_TEST_LOG") {
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .unwrap();
        writeln!(f, "{line}").unwrap();
    }
}

fn schema(v: Value) -> Arc<serde_json::Map<String, Value>> {
    match v {
        Value::Object(m) => Arc::new(m),
        _ => Arc::new(serde_json::Map::new()),
    }
}

/// The sound `audio` answers: a WAV header and four samples, in base64.
const AUDIO_BASE64: &str =
    "UklGRiwAAABXQVZFZm10IBAAAAABAAEAQB8AAIA+AAACABAAZGF0YQgAAAAAAP9/AID/fw==";

fn text(s: impl Into<String>) -> CallToolResponse {
    CallToolResult::success(vec![ContentBlock::text(s)]).into()
}

fn arg<'a>(request: &'a CallToolRequestParams, key: &str) -> Option<&'a Value> {
    request.arguments.as_ref().and_then(|a| a.get(key))
}

impl ServerHandler for TestServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tool_list_changed()
                .enable_tasks()
                .build(),
        )
        .with_server_info(Implementation::new("goondan-test-mcp-server", "0.0.0"))
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let named = json!({"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]});
        let mut tools = vec![
            Tool::new(
                "fail",
                "Fails with the message.",
                schema(
                    json!({"type": "object", "properties": {"message": {"type": "string"}}, "required": ["message"]}),
                ),
            ),
            Tool::new(
                "wait",
                "Sleeps `ms` milliseconds.",
                schema(
                    json!({"type": "object", "properties": {"ms": {"type": "integer"}}, "required": ["ms"]}),
                ),
            ),
            Tool::new("add-tool", "Adds a tool.", schema(named.clone())),
            Tool::new("remove-tool", "Removes a tool.", schema(named)),
            Tool::new(
                "where",
                "Tells the working directory and MCP_TEST_GREETING.",
                schema(json!({"type": "object", "properties": {}})),
            ),
            Tool::new(
                "slow-task",
                "A task that completes after `ms` milliseconds.",
                schema(
                    json!({"type": "object", "properties": {"ms": {"type": "integer"}}, "required": ["ms"]}),
                ),
            ),
            Tool::new(
                "fs.read__all",
                "A name that needs mapping.",
                schema(json!({"type": "object", "properties": {}})),
            ),
        ];
        for name in self.extra.lock().unwrap().iter() {
            tools.push(Tool::new(
                name.clone(),
                "Added at run time.",
                schema(json!({"type": "object", "properties": {}})),
            ));
        }
        tools.push(Tool::new(
            "audio",
            "Answers a short WAV sound (the bytes of AUDIO_BYTES) and a line of text.",
            schema(json!({"type": "object", "properties": {}})),
        ));
        tools.push(Tool::new(
            "huge",
            "Answers `mib` MiB of text.",
            schema(json!({"type": "object", "properties": {"mib": {"type": "integer"}}, "required": ["mib"]})),
        ));
        if let Some(ttl) = std::env::var("MCP_TEST_TTL_MS")
            .ok()
            .and_then(|t| t.parse().ok())
        {
            log("listed");
            let mut result = ListToolsResult::with_all_items(tools);
            result.ttl_ms = Some(ttl);
            return Ok(result);
        }
        if std::env::var_os("MCP_TEST_ENDLESS_LIST").is_some() {
            // A server that never ends its list: every page has new names and a next page.
            let page: u64 = request
                .and_then(|r| r.cursor)
                .and_then(|c| c.parse().ok())
                .unwrap_or(0);
            for t in &mut tools {
                t.name = format!("{}-{page}", t.name).into();
            }
            let mut result = ListToolsResult::with_all_items(tools);
            result.next_cursor = Some((page + 1).to_string());
            return Ok(result);
        }
        Ok(ListToolsResult::with_all_items(tools))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let name = request.name.to_string();
        match name.as_str() {
            "fail" => {
                let message = arg(&request, "message")
                    .and_then(Value::as_str)
                    .unwrap_or("failed");
                Ok(CallToolResult::error(vec![ContentBlock::text(message)]).into())
            }
            "wait" => {
                let ms = arg(&request, "ms").and_then(Value::as_u64).unwrap_or(0);
                tokio::select! {
                    () = tokio::time::sleep(Duration::from_millis(ms)) => Ok(text(format!("waited {ms}"))),
                    () = context.ct.cancelled() => {
                        log("cancelled wait");
                        Ok(text("cancelled"))
                    }
                }
            }
            "add-tool" | "remove-tool" => {
                let tool = arg(&request, "name")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned();
                {
                    let mut extra = self.extra.lock().unwrap();
                    if name == "add-tool" {
                        extra.push(tool);
                    } else {
                        extra.retain(|t| *t != tool);
                    }
                }
                let quiet = arg(&request, "quiet").and_then(Value::as_bool) == Some(true);
                if !quiet {
                    let _ = context.peer.notify_tool_list_changed().await;
                }
                Ok(text("changed"))
            }
            "audio" => Ok(CallToolResult::success(vec![
                ContentBlock::text("a short beep"),
                ContentBlock::audio(AUDIO_BASE64, "audio/wav"),
            ])
            .into()),
            "huge" => {
                let mib = arg(&request, "mib").and_then(Value::as_u64).unwrap_or(1);
                let size = usize::try_from(mib).unwrap_or(1) << 20;
                Ok(text("x".repeat(size)))
            }
            "where" => Ok(CallToolResult::structured(json!({
                "cwd": std::env::current_dir().unwrap().display().to_string(),
                "greeting": std::env::var("MCP_TEST_GREETING").unwrap_or_default(),
            }))
            .into()),
            "fs.read__all" => Ok(text("mapped")),
            "slow-task" => {
                let ms = arg(&request, "ms").and_then(Value::as_u64).unwrap_or(0);
                let tasks_ok = context
                    .client_capabilities()
                    .is_some_and(|c| c.supports_tasks());
                if !tasks_ok {
                    return Err(ErrorData::invalid_params(
                        "slow-task needs the tasks extension",
                        None,
                    ));
                }
                let mut tasks = self.tasks.lock().unwrap();
                let id = format!("task-{}", tasks.len() + 1);
                tasks.insert(
                    id.clone(),
                    (Instant::now(), Duration::from_millis(ms), false),
                );
                let task = Task::new(
                    id,
                    TaskStatus::Working,
                    "2026-01-01T00:00:00Z",
                    "2026-01-01T00:00:00Z",
                )
                .with_poll_interval_ms(30);
                Ok(CallToolResponse::Task(CreateTaskResult::new(task)))
            }
            other if self.extra.lock().unwrap().iter().any(|t| t == other) => Ok(text(other)),
            other => Err(ErrorData::invalid_params(
                format!("no tool `{other}`"),
                None,
            )),
        }
    }

    async fn get_task(
        &self,
        request: GetTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, ErrorData> {
        self.task_state(&request.task_id).map(GetTaskResult::new)
    }

    async fn cancel_task(
        &self,
        request: CancelTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        if let Some(t) = self.tasks.lock().unwrap().get_mut(&request.task_id) {
            t.2 = true;
        }
        log("cancelled task");
        Ok(())
    }
}

impl TestServer {
    fn task_state(&self, id: &str) -> Result<DetailedTask, ErrorData> {
        let tasks = self.tasks.lock().unwrap();
        let Some((started, takes, cancelled)) = tasks.get(id) else {
            return Err(ErrorData::invalid_params(format!("no task `{id}`"), None));
        };
        let task = Task::new(
            id,
            TaskStatus::Working,
            "2026-01-01T00:00:00Z",
            "2026-01-01T00:00:00Z",
        )
        .with_poll_interval_ms(30);
        let payload = if *cancelled {
            TaskPayload::Cancelled
        } else if started.elapsed() >= *takes {
            let result = CallToolResult::structured(json!({"done": takes.as_millis() as u64}));
            match serde_json::to_value(result).unwrap() {
                Value::Object(result) => TaskPayload::Completed { result },
                _ => unreachable!(),
            }
        } else {
            TaskPayload::Working
        };
        Ok(DetailedTask::new(task, payload))
    }
}

/// A calculator, served by our own MCP server.
#[goondan_runtime::tool(name = "calc")]
pub mod calc {
    use goondan_runtime::prelude::*;

    /// Adds two numbers.
    pub fn add(a: i64, b: i64) -> i64 {
        a + b
    }

    /// Divides `a` by `b`.
    pub fn div(a: i64, b: i64) -> Result<i64, ToolError> {
        if b == 0 {
            return Err(ToolError::new(format!("cannot divide {a} by zero"))
                .with_code("E_CALC_DIV_ZERO")
                .with_suggestion("pass a non-zero `b`"));
        }
        Ok(a / b)
    }

    /// Answers `ms` after `ms` milliseconds, in the background.
    pub fn later(ms: u64) -> Pending {
        Pending::new(async move {
            tokio::time::sleep(std::time::Duration::from_millis(ms)).await;
            Ok::<_, ToolError>(ms)
        })
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    // A server that will not start while this file exists (the restart test).
    if let Some(refuse) = std::env::var_os("MCP_TEST_REFUSE_FILE")
        && std::path::Path::new(&refuse).exists()
    {
        std::process::exit(3);
    }
    if std::env::args().nth(1).as_deref() == Some("goondan") {
        let registry = Arc::new(
            goondan_runtime::ToolRegistry::builder()
                .tool(calc::TOOL)
                .build()
                .expect("the calc tool"),
        );
        goondan_runtime::mcp::server::McpServer::builder(registry)
            .build()
            .expect("the server")
            .serve_stdio()
            .await
            .expect("serving over stdio");
        return;
    }
    let server = TestServer {
        extra: Arc::new(Mutex::new(Vec::new())),
        tasks: Mutex::new(HashMap::new()),
    };
    let running = serve_server(server, rmcp::transport::stdio())
        .await
        .expect("the MCP handshake");
    let _ = running.waiting().await;
}
