//! The yardstick of `scripts/startup`: the smallest rmcp server of one tool on stdio, written
//! the way rmcp's own examples write it (`#[tool_router]`, `#[tool_handler]`, `serve(stdio())`
//! on `#[tokio::main]`). `scripts/startup` times its answers to `initialize` and `tools/list`
//! against `goondan mcp serve` and `examples/mcp`, and reports its size beside theirs.
//!
//! ```text
//! cargo run -q --release -p goondan-examples-mcp --example rmcp_minimal
//! ```

use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::{ServerHandler, ServiceExt, tool, tool_handler, tool_router};

/// The one tool's input.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct EchoInput {
    /// The text to give back.
    text: String,
}

/// A server of one tool, `echo`.
#[derive(Clone)]
struct Minimal {
    tool_router: ToolRouter<Self>,
}

#[tool_router(router = tool_router)]
impl Minimal {
    /// Gives the text back.
    #[tool(description = "Gives the text back.")]
    async fn echo(&self, Parameters(input): Parameters<EchoInput>) -> String {
        input.text
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for Minimal {}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let server = Minimal {
        tool_router: Minimal::tool_router(),
    };
    server
        .serve(rmcp::transport::stdio())
        .await?
        .waiting()
        .await?;
    Ok(())
}
