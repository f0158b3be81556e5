//! The quickstart's tools as an MCP server: the Agent's catalog (`text-utils`, `notes`; not
//! `admin`), every call through the executor.

use std::sync::Arc;

use goondan_runtime::ToolRegistry;
use goondan_runtime::mcp::server::McpServer;

use crate::tools::{AGENT_TOOLS, quickstart_tools};

/// The server `cargo run --example mcp` serves on stdio.
pub fn server() -> anyhow::Result<McpServer> {
    let registry = Arc::new(ToolRegistry::builder().tools(quickstart_tools()).build()?);
    Ok(McpServer::builder(registry)
        .tools(AGENT_TOOLS)
        .server_name("goondan-quickstart")
        .build()?)
}
