//! Approvals under `McpServer`: the person behind the MCP client approves or denies a risky
//! call through MCP elicitation (issue 12, item 5), seen by rmcp's own client.
#![allow(clippy::unwrap_used, clippy::expect_used)]
#![cfg(feature = "mcp")]

use std::sync::{Arc, Mutex};

use goondan_runtime::ToolExecutor;
use goondan_runtime::approval::Approvals;
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

async fn connect(
    elicitation: bool,
    answers: Vec<ElicitResult>,
) -> (RunningService<RoleClient, Client>, Client) {
    let registry = Arc::new(ToolRegistry::builder().tool(files::TOOL).build().unwrap());
    let executor = ToolExecutor::builder(Arc::clone(&registry))
        .middleware(Approvals::new(ElicitationApprover::new()))
        .build();
    let server = McpServer::builder(registry)
        .executor(executor)
        .build()
        .unwrap();
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
