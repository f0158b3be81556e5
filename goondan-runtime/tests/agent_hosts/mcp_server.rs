//! A small MCP server over stdio for `tests/mcp_client.rs`, written on rmcp's `ServerHandler`
//! by hand. Its tools:
//!
//! - `fail {message}`: answers `isError: true` with `message`.
//! - `wait {ms}`: sleeps; when the client cancels it, appends `cancelled wait` to the file
//!   named by `MCP_TEST_LOG`.
//! - `add-tool {name}` / `remove-tool {name}`: changes the list and announces
//!   `notifications/tools/list_changed`; an added tool answers its own name.
//! - `where`: the working directory and `MCP_TEST_GREETING`.
//! - `fs.read__all`: a name our names cannot hold; answers `mapped`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::{ErrorData, ServerHandler, serve_server};
use serde_json::{Value, json};

struct TestServer {
    extra: Arc<Mutex<Vec<String>>>,
}

fn schema(v: Value) -> Arc<serde_json::Map<String, Value>> {
    match v {
        Value::Object(m) => Arc::new(m),
        _ => Arc::new(serde_json::Map::new()),
    }
}

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
                .build(),
        )
        .with_server_info(Implementation::new("goondan-test-mcp-server", "0.0.0"))
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
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
                        if let Some(path) = std::env::var_os("MCP_TEST_LOG") {
                            let mut f = std::fs::OpenOptions::new().create(true).append(true).open(path).unwrap();
                            writeln!(f, "cancelled wait").unwrap();
                        }
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
                let _ = context.peer.notify_tool_list_changed().await;
                Ok(text("changed"))
            }
            "where" => Ok(CallToolResult::structured(json!({
                "cwd": std::env::current_dir().unwrap().display().to_string(),
                "greeting": std::env::var("MCP_TEST_GREETING").unwrap_or_default(),
            }))
            .into()),
            "fs.read__all" => Ok(text("mapped")),
            other if self.extra.lock().unwrap().iter().any(|t| t == other) => Ok(text(other)),
            other => Err(ErrorData::invalid_params(
                format!("no tool `{other}`"),
                None,
            )),
        }
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let server = TestServer {
        extra: Arc::new(Mutex::new(Vec::new())),
    };
    let running = serve_server(server, rmcp::transport::stdio())
        .await
        .expect("the MCP handshake");
    let _ = running.waiting().await;
}
