//! The scripted agent of `tests/agents.rs`: the tests run it in process, and the
//! `goondan-base-agents-host` program (`agents.rs` beside this file) serves it in real agent
//! processes.

use std::sync::Arc;

use goondan_base::{Agents, Bash};
use goondan_runtime::agents::orchestrator::{AgentWorker, worker_fn};
use goondan_runtime::{IntoTool, ToolCall, ToolCatalog, ToolExecutor, ToolRegistry};
use serde_json::json;

/// The executor of the scripted agent: the `agents` and `bash` tools.
pub(crate) fn executor() -> (ToolExecutor, ToolCatalog) {
    let registry = Arc::new(
        ToolRegistry::builder()
            .tool(Agents.into_tool())
            .tool(Bash::default().into_tool())
            .build()
            .unwrap(),
    );
    let catalog = ToolCatalog::all(&registry);
    (ToolExecutor::new(registry), catalog)
}

/// A scripted agent: runs `input.calls` (`[{name, args}]`) through the executor, in order, and
/// answers with their results.
pub(crate) fn scripted() -> impl AgentWorker {
    let (executor, catalog) = executor();
    worker_fn(move |event, ctx| {
        let (executor, catalog) = (executor.clone(), catalog.clone());
        async move {
            let tool_ctx = ctx.tool_context().build();
            let mut results = Vec::new();
            let calls = event.input["calls"].as_array().cloned().unwrap_or_default();
            for (i, call) in calls.into_iter().enumerate() {
                let name = call["name"].as_str().unwrap_or_default().to_owned();
                let call = ToolCall::new(format!("call_{i}"), name, call["args"].clone());
                results.push(executor.execute(call, &tool_ctx, &catalog).await);
            }
            Ok(json!({ "agent": ctx.identity().agent, "results": results }))
        }
    })
}
