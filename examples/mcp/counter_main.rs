//! `cargo run -p goondan-examples-mcp --example counter`: the counter and its page
//! ([`goondan_examples_mcp::counter`]) served over Streamable HTTP on 127.0.0.1, for a host
//! that renders MCP Apps (`--stdio` serves it on stdio instead).

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let server = goondan_examples_mcp::counter::server()?;
    if std::env::args().any(|a| a == "--stdio") {
        server.serve_stdio().await?;
        return Ok(());
    }
    let http = server.serve_http("127.0.0.1:8765".parse()?).await?;
    eprintln!("serving the counter at {}", http.url());
    http.run_until(async {
        let _ = tokio::signal::ctrl_c().await;
    })
    .await?;
    Ok(())
}
