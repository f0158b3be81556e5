//! The fixture server of `tests/mcp_conformance.rs`: our Streamable HTTP server with the tools
//! the MCP conformance suite's server scenarios call, written with `#[tool]`. The suite expects
//! fixed names (`test_simple_text`) that are not Goondan names, so they are published under
//! those names with `publish_as`; every call still runs through the executor. Prints its URL
//! on the first line of stdout, then serves until stdin closes. Built only for the tests.

use std::sync::Arc;
use std::time::Duration;

use goondan_runtime::mcp::server::McpServer;
use goondan_runtime::prelude::*;
use goondan_runtime::{Export, Tool, handler_fn};
use serde_json::json;
use tokio::io::AsyncReadExt;

/// The tools of the conformance suite's tool scenarios.
#[tool(name = "conformance")]
pub mod conformance {
    use super::*;

    /// Returns a simple text.
    pub fn simple_text() -> String {
        "This is a simple text response for testing.".to_owned()
    }

    /// Always fails, with a structured error.
    pub fn error_handling() -> Result<String, ToolError> {
        Err(
            ToolError::new("This tool intentionally returns an error for testing")
                .with_code("E_CONFORMANCE_FIXTURE")
                .with_suggestion("nothing to fix: the failure is the test"),
        )
    }

    /// Reports progress 0, 50 and 100 out of 100.
    pub async fn tool_with_progress(ctx: &ToolContext) -> String {
        for done in [0.0, 50.0, 100.0] {
            ctx.progress(done, Some(100.0), None);
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        "Progress completed".to_owned()
    }
}

/// A tool whose input schema uses JSON Schema 2020-12 keywords, served as it is.
fn json_schema_tool() -> Result<Tool, goondan_runtime::tool::ToolDefinitionError> {
    let schema = json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "$defs": {
            "address": {
                "type": "object",
                "properties": {"street": {"type": "string"}, "city": {"type": "string"}}
            }
        },
        "properties": {
            "name": {"type": "string"},
            "address": {"$ref": "#/$defs/address"}
        },
        "additionalProperties": false
    });
    Tool::builder("json-schema")
        .export(
            Export::new(
                "tool_2020_12",
                schema,
                handler_fn(|_ctx, args| async move { Ok::<_, ToolError>(args) }),
            )
            .with_description("Tool with JSON Schema 2020-12 features"),
        )
        .build()
}

// The URL on stdout is this program's whole interface to the test.
#[allow(clippy::print_stdout)]
#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let registry = Arc::new(
        ToolRegistry::builder()
            .tool(conformance::TOOL)
            .tool(json_schema_tool())
            .build()?,
    );
    let server = McpServer::builder(registry)
        .publish_as("conformance__simple_text", "test_simple_text")
        .publish_as("conformance__error_handling", "test_error_handling")
        .publish_as("conformance__tool_with_progress", "test_tool_with_progress")
        .publish_as("json-schema__tool_2020_12", "json_schema_2020_12_tool")
        .build()?;
    let http = server.serve_http("127.0.0.1:0".parse()?).await?;
    println!("{}", http.url());
    let mut sink = Vec::new();
    tokio::io::stdin().read_to_end(&mut sink).await?;
    http.shutdown().await?;
    Ok(())
}
