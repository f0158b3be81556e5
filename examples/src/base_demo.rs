//! The base tools on a temporary workdir: write, read, list and `bash__exec`, through a plain
//! registry and executor (no test kit), each result printed as JSON.

use std::sync::Arc;

use goondan_runtime::{ToolCall, ToolCatalog, ToolContext, ToolExecutor, ToolRegistry};
use serde_json::json;

/// Runs the demo, writing each [`goondan_runtime::ToolCallResult`] to `out` as pretty JSON.
pub async fn run(out: &mut impl std::io::Write) -> anyhow::Result<()> {
    let workdir = tempfile::Builder::new()
        .prefix("goondan-base-demo-")
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
        .agent_name("demo")
        .build();

    let calls = [
        (
            "file-system__write",
            json!({"path": "notes/hello.txt", "content": "hello from goondan\n"}),
        ),
        ("file-system__read", json!({"path": "notes/hello.txt"})),
        ("file-system__list", json!({"path": ".", "recursive": true})),
        ("bash__exec", json!({"command": "echo hi"})),
    ];
    for (n, (name, args)) in calls.into_iter().enumerate() {
        let call = ToolCall::new(format!("call_{n}"), name, args);
        let result = executor.execute(call, &ctx, &catalog).await;
        writeln!(out, "{}", serde_json::to_string_pretty(&result)?)?;
    }
    Ok(())
}
