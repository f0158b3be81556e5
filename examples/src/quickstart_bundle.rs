//! The quickstart, part 2: `examples/quickstart/goondan.yaml` loaded and matched to the
//! compiled base tools, then one Turn of the `assistant` agent run Step by Step with a scripted
//! model. The `tool-search` extension shows the model only what its search found, and the
//! `logging` extension logs every call through `tracing`.

use std::io::Write;
use std::path::Path;
use std::sync::Arc;

use goondan_base::extensions::{Logging, ToolSearch};
use goondan_runtime::ToolCall;
use goondan_runtime::bundle::Bundle;
use goondan_runtime::step::{AgentInstance, ModelResponse, ScriptedModel};
use serde_json::json;

/// The bundle file, next to the quickstart's `main.rs`.
pub fn bundle_path() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("quickstart/goondan.yaml")
}

/// What the scripted model answers, Step by Step.
fn script() -> Vec<ModelResponse> {
    vec![
        ModelResponse::calls([ToolCall::new(
            "call_1",
            ToolSearch::TOOL,
            json!({"query": "write read file", "limit": 2}),
        )]),
        ModelResponse::calls([ToolCall::new(
            "call_2",
            "file-system__write",
            json!({"path": "notes/todo.txt", "content": "try goondan bundles\n"}),
        )]),
        ModelResponse::calls([
            ToolCall::new(
                "call_3",
                "file-system__read",
                json!({"path": "notes/todo.txt"}),
            ),
            // Narrowed away by tool-search: refused, as any call outside the catalog.
            ToolCall::new("call_4", "bash__exec", json!({"command": "ls"})),
        ]),
        ModelResponse::text("Saved and checked notes/todo.txt."),
    ]
}

/// Loads the bundle and runs one Turn, writing what each Step shows and does to `out`.
pub async fn run(out: &mut impl Write) -> anyhow::Result<()> {
    let bundle = Bundle::load(bundle_path())?;
    writeln!(
        out,
        "== bundle {}: {} resources",
        bundle.file().display(),
        bundle.resources().len()
    )?;
    for r in bundle.resources() {
        writeln!(out, "   {} (line {})", r.identity(), r.line())?;
    }
    let registry = Arc::new(bundle.registry(&goondan_base::library())?);
    let agent_name = bundle
        .entry_agent()
        .ok_or_else(|| anyhow::anyhow!("the bundle has no agent"))?;
    let model = Arc::new(ScriptedModel::new(script()));
    let state = tempfile::tempdir()?;
    let agent = AgentInstance::from_bundle(&bundle, &agent_name, registry, model.clone())?
        .extension(Logging::new())
        .extension(ToolSearch::new().threshold(3))
        .state_dir(state.path())
        .build()?;
    writeln!(
        out,
        "== agent `{agent_name}`, spec.tools {:?}, workdir {{state}}/workspace",
        bundle.agent_tools(&agent_name)?
    )?;
    let turn = agent.run_turn("Keep a todo note for me.").await?;
    for (step, seen) in turn.steps.iter().zip(model.seen_catalogs()) {
        writeln!(
            out,
            "-- step {}: the model sees {} tools",
            step.step,
            seen.len()
        )?;
        writeln!(out, "   {}", seen.join(", "))?;
        for r in &step.results {
            let shown = match &r.error {
                Some(e) => format!("error {}: {}", e.code(), e.message()),
                None => serde_json::to_string(&r.output)?,
            };
            writeln!(out, "   {} -> {shown}", r.tool_name)?;
        }
        if let Some(text) = &step.assistant.content {
            writeln!(out, "   answer: {text}")?;
        }
    }
    writeln!(
        out,
        "== turn ended: {:?} after {} steps; the conversation has {} messages",
        turn.end,
        turn.steps.len(),
        agent.conversation().len()
    )?;
    Ok(())
}
