//! The base tools on a temporary workdir: write, read, list and `bash__exec`, through a plain
//! registry and executor, each result printed as the model receives it.

use std::io::Write;
use std::sync::Arc;

use goondan_runtime::{ToolCall, ToolCatalog, ToolContext, ToolExecutor, ToolRegistry};
use serde_json::Value;

/// The base-tool calls of the quickstart: what each shows, the tool, the arguments.
pub const SCRIPT: &[(&str, &str, &str)] = &[
    (
        "write a file (parents created, written atomically)",
        "file-system__write",
        r#"{"path": "notes/hello.txt", "content": "hello from goondan\n"}"#,
    ),
    (
        "read it back",
        "file-system__read",
        r#"{"path": "notes/hello.txt"}"#,
    ),
    (
        "list the workdir",
        "file-system__list",
        r#"{"path": ".", "recursive": true}"#,
    ),
    (
        "run a command in the workdir",
        "bash__exec",
        r#"{"command": "cat notes/hello.txt | wc -w"}"#,
    ),
    (
        "a path outside the workdir is refused",
        "file-system__read",
        r#"{"path": "../../etc/passwd"}"#,
    ),
];

/// Runs the base-tool calls, numbering them from `first`, writing to `out`.
pub async fn run(out: &mut impl Write, first: usize) -> anyhow::Result<()> {
    let workdir = tempfile::Builder::new()
        .prefix("goondan-quickstart-")
        .tempdir()?;
    // `goondan_base::tools()` also links the crate, so its tools cannot vanish at link time.
    let registry = Arc::new(
        ToolRegistry::builder()
            .tools(goondan_base::tools())
            .build()?,
    );
    let catalog = ToolCatalog::build(&registry, ["bash", "file-system"])?;
    let executor = ToolExecutor::new(Arc::clone(&registry));
    let ctx = ToolContext::builder(workdir.path())
        .agent_name("assistant")
        .build();

    writeln!(
        out,
        "\n# The base tools (goondan-base) on a temporary workdir: {} tools",
        catalog.len()
    )?;
    for (i, (what, name, args)) in SCRIPT.iter().enumerate() {
        let n = first + i;
        let args: Value = serde_json::from_str(args)?;
        writeln!(out, "\n## {n}. {what}")?;
        writeln!(out, "call {name} {args}")?;
        let call = ToolCall::new(format!("call_{n}"), *name, args);
        let result = executor.execute(call, &ctx, &catalog).await;
        writeln!(out, "{}", serde_json::to_string_pretty(&result)?)?;
    }
    Ok(())
}
