//! Approvals with the base tools: their exports say which are destructive or open-world, and
//! `goondan mcp serve --approve` asks the MCP client's user before such calls, as a real
//! process driven by rmcp's client.

use std::process::Command;
use std::sync::{Arc, Mutex};

use rmcp::model::{
    CallToolRequestParams, CallToolResult, ClientCapabilities, ClientConfig, ElicitRequestParams,
    ElicitResult, ElicitationAction, ElicitationCapability, Implementation, ProtocolVersion,
};
use rmcp::service::RequestContext;
use rmcp::transport::TokioChildProcess;
use rmcp::{ClientHandler, ErrorData, RoleClient, ServiceExt};
use serde_json::{Value, json};

#[test]
fn base_exports_mark_what_approvals_ask_about() {
    let mut hints = std::collections::HashMap::new();
    for tool in goondan_base::tools() {
        let tool = tool.unwrap();
        for (name, export) in tool.exports() {
            hints.insert(name.to_string(), export.annotations().clone());
        }
    }
    let hint = |name: &str| hints.get(name).cloned().expect(name);
    for destructive in [
        "bash__exec",
        "bash__script",
        "file-system__write",
        "slack__delete",
        "telegram__delete",
    ] {
        assert_eq!(hint(destructive).destructive, Some(true), "{destructive}");
    }
    for open in [
        "bash__exec",
        "http-fetch__get",
        "http-fetch__post",
        "slack__send",
        "telegram__send",
    ] {
        assert_eq!(hint(open).open_world, Some(true), "{open}");
    }
    for read_only in [
        "file-system__read",
        "file-system__list",
        "json-query__query",
        "text-transform__trim",
        "http-fetch__get",
    ] {
        assert_eq!(hint(read_only).read_only, Some(true), "{read_only}");
        assert_ne!(hint(read_only).destructive, Some(true), "{read_only}");
    }
}

/// A client whose user answers from a script.
#[derive(Clone)]
struct Client {
    answers: Arc<Mutex<Vec<ElicitResult>>>,
    asked: Arc<Mutex<Vec<String>>>,
}

impl ClientHandler for Client {
    fn get_info(&self) -> ClientConfig {
        let mut caps = ClientCapabilities::default();
        caps.elicitation = Some(ElicitationCapability::default());
        ClientConfig::new(caps, Implementation::new("approving-client", "1.0"))
            .with_protocol_version(ProtocolVersion::V_2025_11_25)
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        if let ElicitRequestParams::FormElicitationParams { message, .. } = request {
            self.asked.lock().unwrap().push(message);
        }
        Ok(self.answers.lock().unwrap().remove(0))
    }
}

fn accept(content: Value) -> ElicitResult {
    let mut r = ElicitResult::new(ElicitationAction::Accept);
    r.content = Some(content);
    r
}

fn params(name: &str, args: Value) -> CallToolRequestParams {
    let mut p = CallToolRequestParams::new(name.to_owned());
    if let Value::Object(o) = args {
        p = p.with_arguments(o);
    }
    p
}

fn code(result: &CallToolResult) -> Option<String> {
    let structured = result.structured_content.as_ref()?;
    structured["error"]["code"].as_str().map(str::to_owned)
}

#[tokio::test]
async fn goondan_mcp_serve_approve_asks_the_client_before_destructive_calls() {
    let workdir = tempfile::tempdir().unwrap();
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_goondan"));
    cmd.args([
        "mcp",
        "serve",
        "--tools",
        "file-system",
        "--approve",
        "destructive",
        "--workdir",
    ])
    .arg(workdir.path());
    let transport = TokioChildProcess::new(cmd).unwrap();
    let client = Client {
        answers: Arc::new(Mutex::new(vec![
            accept(json!({"approve": false, "reason": "not that file"})),
            accept(json!({"approve": true})),
        ])),
        asked: Arc::default(),
    };
    let session = client.clone().serve(transport).await.unwrap();

    let args = json!({"path": "notes.txt", "content": "hello"});
    let denied = session
        .call_tool(params("file-system__write", args.clone()))
        .await
        .unwrap();
    assert_eq!(
        code(&denied).as_deref(),
        Some("E_TOOL_DENIED"),
        "{denied:?}"
    );
    assert!(
        !workdir.path().join("notes.txt").exists(),
        "a denied call does not run"
    );

    let approved = session
        .call_tool(params("file-system__write", args))
        .await
        .unwrap();
    assert_eq!(approved.is_error, Some(false), "{approved:?}");
    let written = std::fs::read_to_string(workdir.path().join("notes.txt")).unwrap();
    assert_eq!(written, "hello");

    // Reading is not destructive: not asked.
    let read = session
        .call_tool(params("file-system__read", json!({"path": "notes.txt"})))
        .await
        .unwrap();
    assert_eq!(read.is_error, Some(false), "{read:?}");
    let asked = client.asked.lock().unwrap().clone();
    assert_eq!(asked.len(), 2, "{asked:?}");
    assert!(asked[0].contains("file-system__write") && asked[0].contains("notes.txt"));
    session.cancel().await.unwrap();
}

#[test]
fn an_unknown_approval_policy_is_a_usage_error() {
    let out = Command::new(env!("CARGO_BIN_EXE_goondan"))
        .args(["mcp", "serve", "--approve", "sometimes"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("always, never, risky"), "{err}");
}
