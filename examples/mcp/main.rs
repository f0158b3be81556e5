//! `cargo run -p goondan-examples-mcp --example mcp`: the quickstart's tools served over MCP on stdio, for Claude
//! Desktop, Claude Code or any MCP client:
//!
//! ```text
//! claude mcp add goondan-quickstart -- cargo run -q -p goondan-examples-mcp --example mcp
//! ```

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    goondan_examples_mcp::server()?.serve_stdio().await?;
    Ok(())
}
