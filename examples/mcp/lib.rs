//! The examples of goondan-rs that speak MCP or measure against rmcp, a package apart from
//! `goondan-examples` so that the quickstart does not build MCP:
//!
//! - `cargo run -p goondan-examples-mcp --example mcp`: [`server`] on stdio;
//! - `rmcp_minimal`: rmcp's own server of one tool (the yardstick of `scripts/startup`);
//! - `profile_dispatch`: `execute` beside rmcp's `ToolRouter::call` (`scripts/callgrind`);
//! - `counter`: [`counter`], a tool with a page (MCP Apps), over Streamable HTTP.
//!
//! [`server`] serves the quickstart's tools over MCP: the Agent's catalog (`text-utils`,
//! `notes`; not `admin`), every call through the executor. Beside the tools, the server offers one
//! resource, a short guide, from an rmcp handler of the example's own: a program that needs
//! resources, prompts or completion composes its handler with `McpServerBuilder::others`.

pub mod counter;

use std::sync::Arc;

use goondan_runtime::ToolRegistry;
use goondan_runtime::mcp::server::McpServer;
use rmcp::model::{
    ListResourcesResult, PaginatedRequestParams, ReadResourceRequestParams, ReadResourceResponse,
    ReadResourceResult, Resource, ResourceContents, ServerCapabilities, ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler};

use goondan_examples::tools::{AGENT_TOOLS, quickstart_tools};

/// The server `cargo run -p goondan-examples-mcp --example mcp` serves on stdio.
pub fn server() -> anyhow::Result<McpServer> {
    let registry = Arc::new(ToolRegistry::builder().tools(quickstart_tools()).build()?);
    Ok(McpServer::builder(registry)
        .tools(AGENT_TOOLS)
        .server_name("goondan-quickstart")
        .others(Guide)
        .build()?)
}

/// The URI of the guide resource.
pub const GUIDE_URI: &str = "goondan://quickstart/guide";

/// What the guide says.
pub const GUIDE: &str = "Call text-utils__uppercase with {text} to shout; \
                         notes__add and notes__list keep notes for the session.";

/// The example's own resources: the guide.
struct Guide;

impl ServerHandler for Guide {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_resources().build())
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        let guide = Resource::new(GUIDE_URI, "guide");
        Ok(ListResourcesResult::with_all_items(vec![guide]))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        if request.uri != GUIDE_URI {
            return Err(ErrorData::resource_not_found(
                format!("no resource `{}`", request.uri),
                None,
            ));
        }
        let text = ResourceContents::text(GUIDE, GUIDE_URI);
        Ok(ReadResourceResponse::Complete(ReadResourceResult::new(
            vec![text],
        )))
    }
}
