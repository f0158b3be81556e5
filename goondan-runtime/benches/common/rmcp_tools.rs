//! The tools the dispatch measurements call, and the same tools written with rmcp's macros
//! (rmcp's macros are a dev-dependency only): `uppercase` (`{text}` in, a struct out),
//! `shout` (`{text}` in, a `String` out) and `fields` (three fields in, a struct out). Included
//! with `#[path]` by `dispatch.rs` and by `examples/mcp/profile_dispatch.rs`, so both compare with
//! the same rmcp tools.

use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::{Json, Parameters};
use rmcp::{tool, tool_handler, tool_router};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The one-string input.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UpperIn {
    /// The text to convert.
    pub text: String,
}

/// The one-string tool's structured output.
#[derive(Serialize, JsonSchema)]
pub struct UpperOut {
    pub result: String,
}

/// The one-string tool's work.
pub fn uppercase(input: UpperIn) -> UpperOut {
    UpperOut {
        result: input.text.to_uppercase(),
    }
}

/// The benchmark tool.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FieldsIn {
    /// The text.
    pub text: String,
    /// How many times.
    pub n: Option<u32>,
    /// Labels.
    pub tags: Vec<String>,
}

/// The three-field tool's output.
#[derive(Serialize, JsonSchema)]
pub struct FieldsOut {
    pub text: String,
    pub n: u32,
    pub tags: usize,
}

/// The three-field tool's work.
#[allow(dead_code)] // examples/mcp/profile_dispatch measures the one-string tools only
pub fn fields(input: FieldsIn) -> FieldsOut {
    FieldsOut {
        text: input.text.to_uppercase(),
        n: input.n.unwrap_or(1),
        tags: input.tags.len(),
    }
}

/// The same tools with rmcp's macros (only ever a measurement's peer).
#[derive(Clone)]
pub struct RmcpTools {
    pub tool_router: ToolRouter<Self>,
}

#[tool_router(router = tool_router, vis = "pub(crate)")]
impl RmcpTools {
    /// Convert text to uppercase.
    #[tool(description = "Convert text to uppercase.")]
    async fn uppercase(&self, Parameters(input): Parameters<UpperIn>) -> Json<UpperOut> {
        Json(uppercase(input))
    }

    /// The three-field tool.
    #[tool(description = "The three-field tool.")]
    async fn fields(&self, Parameters(input): Parameters<FieldsIn>) -> Json<FieldsOut> {
        Json(fields(input))
    }

    /// Convert text to uppercase, as plain text.
    #[tool(description = "Convert text to uppercase, as plain text.")]
    async fn shout(&self, Parameters(input): Parameters<UpperIn>) -> String {
        input.text.to_uppercase()
    }
}

#[tool_handler(router = self.tool_router)]
impl rmcp::ServerHandler for RmcpTools {}
