//! The quickstart: a Step's catalog, then a scripted sequence of tool calls, each result printed
//! as the model would receive it.

use std::io::Write;
use std::sync::Arc;

use goondan_runtime::calls::pending::PendingResults;
use goondan_runtime::{ToolCall, ToolCatalog, ToolContext, ToolExecutor, ToolRegistry};
use serde_json::Value;

use crate::tools::{AGENT_TOOLS, quickstart_tools};

/// One scripted call: what it shows, the tool name, the arguments.
pub const SCRIPT: &[(&str, &str, &str)] = &[
    (
        "a success",
        "text-utils__uppercase",
        r#"{"text": "hello, goondan"}"#,
    ),
    (
        "a struct input",
        "text-utils__count-words",
        r#"{"text": "one two three four"}"#,
    ),
    (
        "state kept by an impl-block tool",
        "notes__save",
        r#"{"title": "groceries", "body": "milk, eggs"}"#,
    ),
    (
        "another note",
        "notes__save",
        r#"{"title": "meeting notes for the quarterly planning review", "body": "ship the Rust runtime first, then the base tools"}"#,
    ),
    (
        "invalid arguments: a number for a string, and a key the tool does not take",
        "text-utils__uppercase",
        r#"{"text": 42, "lang": "en"}"#,
    ),
    (
        "a tool outside the catalog (registered, but not in the agent's spec.tools)",
        "admin__reset",
        "{}",
    ),
    (
        "a name that is not `{resource}__{export}`",
        "uppercase",
        r#"{"text": "hi"}"#,
    ),
    (
        "a handler error, cut to the resource's errorMessageLimit (80)",
        "notes__find",
        r#"{"title": "holiday plans"}"#,
    ),
    (
        "a panic in the handler",
        "notes__preview",
        r#"{"title": "groceries"}"#,
    ),
    (
        "a timeout (the export allows 300 ms; the remote takes 2 s)",
        "notes__backup",
        r#"{"latency_ms": 2000}"#,
    ),
    (
        "a pending result that completes later",
        "notes__summarise",
        "{}",
    ),
];

/// Runs the quickstart, writing to `out`.
pub async fn run(out: &mut impl Write) -> anyhow::Result<()> {
    let registry = Arc::new(ToolRegistry::builder().tools(quickstart_tools()).build()?);
    let executor = ToolExecutor::new(Arc::clone(&registry));
    let catalog = ToolCatalog::build(&registry, AGENT_TOOLS)?;
    let workdir = tempfile::tempdir()?;
    let ctx = ToolContext::builder(workdir.path())
        .agent_name("assistant")
        .build();

    writeln!(
        out,
        "# The Tool Catalog of this Step: {} tools from spec.tools {AGENT_TOOLS:?}",
        catalog.len()
    )?;
    writeln!(out, "{}", serde_json::to_string_pretty(&catalog.to_json())?)?;

    for (i, (what, name, args)) in SCRIPT.iter().enumerate() {
        let args: Value = serde_json::from_str(args)?;
        writeln!(out, "\n## {}. {what}", i + 1)?;
        writeln!(out, "call {name} {args}")?;
        let call = ToolCall::new(format!("call_{}", i + 1), *name, args);
        let result = executor.execute(call, &ctx, &catalog).await;
        writeln!(out, "{}", serde_json::to_string_pretty(&result)?)?;
        if let Some(handle) = result.handle.as_deref() {
            wait_for(executor.pending(), handle, out).await?;
        }
    }
    crate::base_demo::run(out, SCRIPT.len() + 1).await?;
    writeln!(
        out,
        "\n# A bundle and the step loop: goondan.yaml, one Turn of Steps, tool-search keeping the catalog small"
    )?;
    crate::quickstart_bundle::run(out).await
}

async fn wait_for(
    pending: &PendingResults,
    handle: &str,
    out: &mut impl Write,
) -> anyhow::Result<()> {
    writeln!(out, "... waiting for {handle}")?;
    let done = pending
        .wait(handle)
        .await
        .ok_or_else(|| anyhow::anyhow!("the runtime lost {handle}"))?;
    writeln!(out, "completion of {handle}:")?;
    writeln!(out, "{}", serde_json::to_string_pretty(&done)?)?;
    Ok(())
}
