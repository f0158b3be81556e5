//! `cargo run --example mcp`: the quickstart's tools served over MCP on stdio, for Claude
//! Desktop, Claude Code or any MCP client:
//!
//! ```text
//! claude mcp add goondan-quickstart -- cargo run -q --example mcp
//! ```

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    goondan_examples::mcp::server()?.serve_stdio().await?;
    Ok(())
}
