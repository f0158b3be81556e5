//! Approvals under `McpServer`: the person behind the MCP client approves or denies a risky
//! call through MCP elicitation, seen by rmcp's own client.
#![cfg(feature = "mcp")]

use std::sync::{Arc, Mutex};

use goondan_runtime::ToolExecutor;
use goondan_runtime::calls::approval::Approvals;
use goondan_runtime::mcp::server::{ElicitationApprover, McpServer};
use goondan_runtime::prelude::*;
use rmcp::model::{
    CallToolRequestParams, CallToolResult, ClientCapabilities, ClientConfig, ElicitRequestParams,
    ElicitResult, ElicitationAction, ElicitationCapability, Implementation, ProtocolVersion,
};
use rmcp::service::{RequestContext, RunningService};
use rmcp::{ClientHandler, ErrorData, RoleClient, ServiceExt};
use serde_json::{Value, json};

/// Files.
#[tool(name = "files")]
pub mod files {

    /// Delete a file.
    #[export(destructive)]
    pub fn delete(
        /// Which.
        path: String,
    ) -> String {
        format!("deleted {path}")
    }

    /// Read a file.
    #[export(read_only)]
    pub fn read(
        /// Which.
        path: String,
    ) -> String {
        format!("read {path}")
    }
}

/// A client whose user answers from a script, and which records what it was asked.
#[derive(Clone)]
struct Client {
    elicitation: bool,
    answers: Arc<Mutex<Vec<ElicitResult>>>,
    asked: Arc<Mutex<Vec<(String, Value)>>>,
}

impl ClientHandler for Client {
    fn get_info(&self) -> ClientConfig {
        let mut caps = ClientCapabilities::default();
        if self.elicitation {
            caps.elicitation = Some(ElicitationCapability::default());
        }
        ClientConfig::new(caps, Implementation::new("approving-client", "1.0"))
            .with_protocol_version(ProtocolVersion::V_2025_11_25)
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        if let ElicitRequestParams::FormElicitationParams {
            message,
            requested_schema,
            ..
        } = request
        {
            let schema = serde_json::to_value(&requested_schema).unwrap();
            self.asked.lock().unwrap().push((message, schema));
        }
        let mut answers = self.answers.lock().unwrap();
        Ok(answers.remove(0))
    }
}

fn answer(action: ElicitationAction, content: Option<Value>) -> ElicitResult {
    let mut r = ElicitResult::new(action);
    r.content = content;
    r
}

/// Our server over `files`, asking the client before risky calls.
fn approving_server() -> McpServer {
    let registry = Arc::new(ToolRegistry::builder().tool(files::TOOL).build().unwrap());
    let executor = ToolExecutor::builder(Arc::clone(&registry))
        .middleware(Approvals::new(ElicitationApprover::new()))
        .build();
    McpServer::builder(registry)
        .executor(executor)
        .build()
        .unwrap()
}

async fn connect(
    elicitation: bool,
    answers: Vec<ElicitResult>,
) -> (RunningService<RoleClient, Client>, Client) {
    let server = approving_server();
    let (client_io, server_io) = tokio::io::duplex(64 * 1024);
    tokio::spawn(async move {
        if let Ok(running) = server.serve(server_io).await {
            let _ = running.waiting().await;
        }
    });
    let client = Client {
        elicitation,
        answers: Arc::new(Mutex::new(answers)),
        asked: Arc::default(),
    };
    let running = client.clone().serve(client_io).await.unwrap();
    (running, client)
}

async fn call(
    client: &RunningService<RoleClient, Client>,
    name: &str,
    args: Value,
) -> CallToolResult {
    let mut p = CallToolRequestParams::new(name.to_owned());
    if let Value::Object(o) = args {
        p = p.with_arguments(o);
    }
    client.call_tool(p).await.unwrap()
}

fn text(result: &CallToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect()
}

fn error_of(result: &CallToolResult) -> Value {
    result.structured_content.as_ref().expect("structured")["error"].clone()
}

#[tokio::test]
async fn the_mcp_clients_user_approves_denies_and_edits_risky_calls_through_elicitation() {
    let (session, client) = connect(
        true,
        vec![
            answer(ElicitationAction::Accept, Some(json!({"approve": true}))),
            answer(
                ElicitationAction::Accept,
                Some(json!({"approve": false, "reason": "keep the logs"})),
            ),
            answer(
                ElicitationAction::Accept,
                Some(json!({"approve": true, "arguments": "{\"path\": \"tmp.txt\"}"})),
            ),
            answer(ElicitationAction::Decline, None),
        ],
    )
    .await;

    let approved = call(&session, "files__delete", json!({"path": "old.txt"})).await;
    assert_eq!(approved.is_error, Some(false), "{approved:?}");
    assert!(text(&approved).contains("deleted old.txt"));

    let denied = call(&session, "files__delete", json!({"path": "app.log"})).await;
    assert_eq!(denied.is_error, Some(true));
    let err = error_of(&denied);
    assert_eq!(err["code"], "E_TOOL_DENIED");
    assert_eq!(err["suggestion"], "keep the logs");

    let edited = call(&session, "files__delete", json!({"path": "/"})).await;
    assert!(text(&edited).contains("deleted tmp.txt"), "{edited:?}");

    let declined = call(&session, "files__delete", json!({"path": "x"})).await;
    assert_eq!(error_of(&declined)["code"], "E_TOOL_DENIED");

    // A read-only call is not asked about.
    let read = call(&session, "files__read", json!({"path": "a"})).await;
    assert!(text(&read).contains("read a"));

    let asked = client.asked.lock().unwrap().clone();
    assert_eq!(asked.len(), 4, "one question per risky call: {asked:?}");
    let (message, schema) = &asked[0];
    assert!(message.contains("files__delete"), "{message}");
    assert!(
        message.contains("old.txt"),
        "the question shows the arguments: {message}"
    );
    assert!(
        message.contains("destructive"),
        "and why it asks: {message}"
    );
    assert_eq!(schema["properties"]["approve"]["type"], "boolean");
    assert_eq!(schema["required"], json!(["approve"]));
    session.cancel().await.unwrap();
}

#[tokio::test]
async fn a_client_without_elicitation_gets_a_denial_that_says_why() {
    let (session, client) = connect(false, Vec::new()).await;
    let denied = call(&session, "files__delete", json!({"path": "a"})).await;
    let err = error_of(&denied);
    assert_eq!(err["code"], "E_TOOL_DENIED");
    assert!(
        err["suggestion"]
            .as_str()
            .is_some_and(|s| s.contains("elicitation")),
        "{err}"
    );
    assert!(client.asked.lock().unwrap().is_empty());
    session.cancel().await.unwrap();
}

/// One 2026-07-28 request to `url`, as a stateless client sends it: the revision in the
/// header and in `_meta`, with the client's capabilities. Answers the JSON-RPC response,
/// whether it came as JSON or as an SSE stream.
async fn stateless(url: &str, id: u64, params: Value, capabilities: Value) -> Value {
    let mut params = params;
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": capabilities,
        "io.modelcontextprotocol/clientInfo": {"name": "raw-client", "version": "1.0"},
    });
    let body = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params});
    goondan_runtime::tls::install_crypto_provider();
    let response = reqwest::Client::new()
        .post(url)
        .header("Accept", "application/json, text/event-stream")
        .header("Content-Type", "application/json")
        .header("MCP-Protocol-Version", "2026-07-28")
        .header("Mcp-Method", "tools/call")
        .header("Mcp-Name", params["name"].as_str().unwrap_or_default())
        .body(body.to_string())
        .send()
        .await
        .unwrap();
    let text = response.text().await.unwrap();
    if let Ok(json) = serde_json::from_str::<Value>(&text) {
        return json;
    }
    text.lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
        .find(|m| m.get("id") == Some(&json!(id)))
        .unwrap_or_else(|| panic!("no response in {text}"))
}

/// On 2026-07-28 the approval is an input-required result, answered by
/// calling again with the answer and the sealed request state; a forged state is refused.
#[tokio::test]
async fn a_2026_07_28_client_approves_and_denies_through_input_required_results() {
    let server = approving_server();
    let http = server
        .serve_http("127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    let url = http.url();
    let caps = json!({"elicitation": {"form": {}}});
    let call = json!({"name": "files__delete", "arguments": {"path": "old.txt"}});

    // Round 1: the question, not the call.
    let first = stateless(&url, 1, call.clone(), caps.clone()).await;
    let result = &first["result"];
    assert_eq!(result["resultType"], "input_required", "{first}");
    let question = &result["inputRequests"]["goondan_approval"];
    assert_eq!(question["method"], "elicitation/create", "{first}");
    assert!(
        question["params"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("files__delete") && m.contains("old.txt")),
        "{question}"
    );
    let state = result["requestState"]
        .as_str()
        .expect("sealed state")
        .to_owned();

    // Round 2, approved: the call runs.
    let mut again = call.clone();
    again["inputResponses"] =
        json!({"goondan_approval": {"action": "accept", "content": {"approve": true}}});
    again["requestState"] = json!(state);
    let approved = stateless(&url, 2, again.clone(), caps.clone()).await;
    assert_eq!(approved["result"]["isError"], false, "{approved}");
    assert!(
        approved["result"]["content"][0]["text"]
            .as_str()
            .is_some_and(|t| t.contains("deleted old.txt"))
    );

    // Round 2, denied: the model gets E_TOOL_DENIED with the reason.
    again["inputResponses"] = json!({"goondan_approval": {"action": "accept",
        "content": {"approve": false, "reason": "keep it"}}});
    let denied = stateless(&url, 3, again.clone(), caps.clone()).await;
    assert_eq!(denied["result"]["isError"], true, "{denied}");
    assert_eq!(
        denied["result"]["structuredContent"]["error"]["code"],
        "E_TOOL_DENIED"
    );
    assert_eq!(
        denied["result"]["structuredContent"]["error"]["suggestion"],
        "keep it"
    );

    // A state that is not ours (or is bound to other arguments) is refused, and nothing runs.
    let mut forged = again.clone();
    forged["requestState"] = json!(format!("{state}x"));
    let refused = stateless(&url, 4, forged, caps.clone()).await;
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    let mut elsewhere = again.clone();
    elsewhere["arguments"] = json!({"path": "/etc/passwd"});
    elsewhere["inputResponses"] =
        json!({"goondan_approval": {"action": "accept", "content": {"approve": true}}});
    let moved = stateless(&url, 5, elsewhere, caps.clone()).await;
    assert_eq!(moved["error"]["code"], -32602, "{moved}");

    // A client without elicitation is denied at once, with why.
    let plain = stateless(&url, 6, call, json!({})).await;
    assert_eq!(
        plain["result"]["structuredContent"]["error"]["code"], "E_TOOL_DENIED",
        "{plain}"
    );
    http.shutdown().await.unwrap();
}
