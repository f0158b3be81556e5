//! What the MCP client tests share: the test server, an agent bridging one extension, waits.
#![allow(dead_code)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use goondan_runtime::mcp::client::{McpExtension, McpServerConfig, ServerStatus};
use goondan_runtime::step::{AgentInstance, ScriptedModel};
use goondan_runtime::{
    ToolCall, ToolCallResult, ToolCatalog, ToolContext, ToolExecutor, ToolRegistry,
};
use serde_json::Value;

pub(crate) fn test_server(name: &str) -> McpServerConfig {
    McpServerConfig::stdio(name, env!("CARGO_BIN_EXE_goondan-test-mcp-server"))
}

/// An executor, a context and the catalog of a registry holding only `mcp`'s tools.
pub(crate) struct Bridged {
    pub(crate) agent: AgentInstance,
    pub(crate) executor: ToolExecutor,
    _state: tempfile::TempDir,
}

impl Bridged {
    pub(crate) fn new(mcp: &McpExtension) -> Self {
        Self::of(&[mcp])
    }

    /// An agent with the extensions `all`, added in that order.
    pub(crate) fn of(all: &[&McpExtension]) -> Self {
        let state = tempfile::tempdir().unwrap();
        let registry = Arc::new(ToolRegistry::new());
        let mut builder = AgentInstance::builder(
            "helper",
            Arc::clone(&registry),
            Arc::new(ScriptedModel::new([])),
        )
        .state_dir(state.path());
        for mcp in all {
            builder = builder.extension((*mcp).clone());
        }
        let agent = builder.build().unwrap();
        Self {
            agent,
            executor: ToolExecutor::new(registry),
            _state: state,
        }
    }

    pub(crate) async fn call(&self, name: &str, args: Value) -> ToolCallResult {
        let catalog = self.agent.base_catalog().unwrap();
        self.call_in(
            &catalog,
            name,
            args,
            &ToolContext::builder(self.agent.workdir()).build(),
        )
        .await
    }

    pub(crate) async fn call_in(
        &self,
        catalog: &ToolCatalog,
        name: &str,
        args: Value,
        ctx: &ToolContext,
    ) -> ToolCallResult {
        self.executor
            .execute(ToolCall::new("c1", name, args), ctx, catalog)
            .await
    }
}

pub(crate) fn pid(mcp: &McpExtension, server: &str) -> u32 {
    match mcp.status(server) {
        Some(ServerStatus::Up { pid: Some(pid) }) => pid,
        other => panic!("`{server}` is not up: {other:?}"),
    }
}

pub(crate) async fn eventually(what: &str, mut check: impl FnMut() -> bool) {
    let start = Instant::now();
    while !check() {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "timed out waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

/// What a `tracing` `fmt` subscriber writes, kept for a test to read (`with_writer`).
#[derive(Clone, Default)]
pub(crate) struct Captured(Arc<std::sync::Mutex<Vec<u8>>>);

impl Captured {
    /// A `fmt` subscriber writing here, without colours.
    pub(crate) fn subscriber(&self) -> impl tracing::Subscriber + Send + Sync + 'static {
        let writer = self.clone();
        tracing_subscriber::fmt()
            .with_writer(move || writer.clone())
            .with_ansi(false)
            .finish()
    }

    /// Everything written so far.
    pub(crate) fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap()).into_owned()
    }
}

impl std::io::Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}
