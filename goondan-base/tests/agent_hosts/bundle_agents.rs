//! The agent-process program of `tests/bundle_agents.rs`: the Orchestrator runs it as every
//! agent; it loads the bundle named by `ENV_BUNDLE` and runs the step loop with the scripted
//! model of its agent. Built only for the tests (`required-features`).

use std::sync::Arc;

use goondan_base::{PACKAGE, resolve_ref};
use goondan_runtime::agents::orchestrator::agent_mode;
use goondan_runtime::agents::swarm::{ModelFactory, StepWorker};
use goondan_runtime::bundle::ToolLibrary;
use goondan_runtime::prelude::*;
use goondan_runtime::step::{Model, ModelResponse, ScriptedModel};
use serde_json::json;

/// The package of the test tools: `ref: {kind: Tool, name: probe, package: "@goondan-test/probe"}`.
const PROBE_PACKAGE: &str = "@goondan-test/probe";

/// Tells what a tool call knows of its Turn and Trace.
#[tool(name = "probe")]
pub mod probe {
    use super::*;

    /// The ids of the call's context: agent, Turn, Trace.
    pub fn ids(ctx: &ToolContext) -> serde_json::Value {
        json!({
            "agent": ctx.agent_name(),
            "turnId": ctx.turn_id(),
            "traceId": ctx.trace_id(),
        })
    }
}

fn library() -> ToolLibrary {
    ToolLibrary::default()
        .package(PACKAGE, |name| resolve_ref(PACKAGE, name))
        .package(PROBE_PACKAGE, |name| {
            (name == "probe").then(|| probe::TOOL.build())
        })
}

/// The script of each agent, by name.
///
/// - `planner` hands the task to `coder` and reports; `coder` runs `bash` and answers.
/// - `caller` probes its own trace, then asks `callee`; `callee` probes its trace (HO-3).
/// - `restarter` asks for its own restart with `self-restart__request`.
fn models() -> ModelFactory {
    Arc::new(|agent: &str| -> Arc<dyn Model> {
        let probe = |id: &str| ToolCall::new(id, "probe__ids", json!({}));
        let script = match agent {
            "planner" => vec![
                ModelResponse::calls([ToolCall::new(
                    "call_plan",
                    "agents__request",
                    json!({"target": "coder", "input": "print your parent's pid", "timeoutMs": 20000}),
                )]),
                ModelResponse::text("coder did it"),
            ],
            "caller" => vec![
                ModelResponse::calls([probe("call_probe")]),
                ModelResponse::calls([ToolCall::new(
                    "call_ask",
                    "agents__request",
                    json!({"target": "callee", "input": "which trace are you in?", "timeoutMs": 20000}),
                )]),
                ModelResponse::text("asked"),
            ],
            // Every process's first Turn asks for its own restart.
            "restarter" => vec![
                ModelResponse::calls([ToolCall::new(
                    "call_restart",
                    "self-restart__request",
                    json!({"reason": "reload the prompt"}),
                )]),
                ModelResponse::text("restarting"),
            ],
            // Two Turns of two Steps each.
            "callee" => [1, 2]
                .into_iter()
                .flat_map(|_| {
                    [
                        ModelResponse::calls([probe("call_probe_1")]),
                        ModelResponse::calls([probe("call_probe_2")]),
                        ModelResponse::text("probed"),
                    ]
                })
                .collect(),
            _ => vec![
                ModelResponse::calls([ToolCall::new(
                    "call_code",
                    "bash__exec",
                    json!({"command": "echo $PPID"}),
                )]),
                ModelResponse::text("printed it"),
            ],
        };
        Arc::new(ScriptedModel::new(script))
    })
}

fn main() {
    // The tests read `$PPID` to see which agent process ran a command, and the sandbox's PID
    // namespace hides the parent by design: these agents run commands unsandboxed (the
    // sandbox has its own tests, tests/it/sandbox.rs).
    let _ = goondan_base::sandbox::set_host_policy(goondan_base::sandbox::SandboxPolicy::off());
    agent_mode::run_if_requested(|me| StepWorker::from_env(me, &library(), &models()));
    eprintln!("goondan-base-bundle-host: run by the Orchestrator of the tests only");
    std::process::exit(2);
}
