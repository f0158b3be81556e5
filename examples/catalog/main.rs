//! `cargo run --example catalog -- --format openai|openai-responses|anthropic|gemini|mcp`:
//! the quickstart's Tool Catalog in one provider's tool format, as JSON on stdout (the value of
//! the request's tool field, or MCP's `tools/list` result). Errors go to stderr.

use std::io::Write;
use std::process::ExitCode;

use anyhow::{Context, bail};
use goondan_examples::tools::AGENT_TOOLS;
use goondan_runtime::dialect::Dialect;
use goondan_runtime::{ToolCatalog, ToolRegistry};

const USAGE: &str = "usage: catalog --format openai|openai-responses|anthropic|gemini|mcp";

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(2)
        }
    }
}

fn run() -> anyhow::Result<()> {
    let dialect = parse_args(std::env::args().skip(1))?;
    let registry = ToolRegistry::builder()
        .tools(goondan_examples::quickstart_tools())
        .build()?;
    let catalog = ToolCatalog::build(&registry, AGENT_TOOLS)?;
    let tools = dialect
        .tools(&catalog)
        .with_context(|| format!("the quickstart catalog cannot be sent as `{dialect}`"))?;
    let mut out = std::io::stdout().lock();
    writeln!(out, "{}", serde_json::to_string_pretty(&tools)?)?;
    Ok(())
}

fn parse_args(mut args: impl Iterator<Item = String>) -> anyhow::Result<Dialect> {
    let mut dialect = None;
    while let Some(arg) = args.next() {
        let value = match arg.split_once('=') {
            Some(("--format", v)) => v.to_owned(),
            None if arg == "--format" => args.next().context(USAGE)?,
            _ => bail!("unexpected argument `{arg}`\n{USAGE}"),
        };
        dialect = Some(value.parse::<Dialect>()?);
    }
    dialect.context(USAGE)
}
