//! `cargo run --example handoff`: a swarm of two agents, each in its own process.
//!
//! The host starts an Orchestrator and hands a task to the entry agent, `planner`. Its scripted
//! model calls `agents__request` to hand the work to `coder`, which the Orchestrator spawns on
//! first use; `coder`'s scripted model runs `bash__exec` and answers. Every line says which
//! process printed it, and the correlation id is printed on both sides of the handoff.

use std::io::Write;
use std::sync::Arc;
use std::time::Duration;

use goondan_base::{Agents, Bash};
use goondan_runtime::agents::orchestrator::{
    AgentContext, AgentIdentity, AgentWorker, Orchestrator, ProcessConfig, SwarmSpec, agent_mode,
};
use goondan_runtime::tools::agent::{AgentEvent, AgentRuntime, RequestOptions};
use goondan_runtime::{
    IntoTool, ToolCall, ToolCatalog, ToolError, ToolExecutor, ToolRegistry,
    tools::agent::AgentFuture,
};
use serde_json::{Value, json};

fn say(who: &str, line: &str) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "[{who:<8} pid {:>6}] {line}", std::process::id());
    let _ = out.flush();
}

/// A scripted model: what the agent calls, given the event it got.
fn script(agent: &str, input: &Value) -> Vec<ToolCall> {
    match agent {
        "planner" => vec![ToolCall::new(
            "call_plan_1",
            "agents__request",
            json!({
                "target": "coder",
                "input": {
                    "task": input["task"],
                    "command": "echo \"kernel: $(uname -s); files in workdir: $(ls | wc -l)\""
                },
                "timeoutMs": 10000
            }),
        )],
        _ => vec![ToolCall::new(
            "call_code_1",
            "bash__exec",
            json!({ "command": input["command"] }),
        )],
    }
}

/// An agent whose "model" is [`script`]: it runs the scripted calls through the executor, under
/// this agent's catalog, and answers with the last result.
struct ScriptedAgent {
    name: String,
    executor: ToolExecutor,
    catalog: ToolCatalog,
}

impl ScriptedAgent {
    fn new(me: &AgentIdentity) -> anyhow::Result<Self> {
        let registry = Arc::new(
            ToolRegistry::builder()
                .tool(Agents.into_tool())
                .tool(Bash::default().into_tool())
                .build()?,
        );
        let tools = if me.agent == "planner" {
            "agents"
        } else {
            "bash"
        };
        let catalog = ToolCatalog::build(&registry, [tools])?;
        Ok(Self {
            name: me.agent.clone(),
            executor: ToolExecutor::new(registry),
            catalog,
        })
    }

    async fn run(&self, event: AgentEvent, ctx: AgentContext) -> Result<Value, ToolError> {
        say(
            &self.name,
            &format!(
                "got {:?} from {} with correlationId={}",
                event.event_type,
                ctx.from(),
                ctx.correlation_id().unwrap_or("-")
            ),
        );
        let tool_ctx = ctx.tool_context().build();
        let mut last = Value::Null;
        for call in script(&self.name, &event.input) {
            say(
                &self.name,
                &format!("model calls {} {}", call.name, call.args),
            );
            let result = self.executor.execute(call, &tool_ctx, &self.catalog).await;
            let shown = result
                .output
                .as_ref()
                .and_then(|o| o.get("correlationId"))
                .map(|c| format!(" (correlationId={c})"))
                .unwrap_or_default();
            say(
                &self.name,
                &format!("{} -> {:?}{shown}", result.tool_name, result.status),
            );
            if let Some(err) = result.error {
                return Err(err);
            }
            last = result.output.unwrap_or(Value::Null);
        }
        let answer = match self.name.as_str() {
            "coder" => json!({ "report": last["stdout"].as_str().unwrap_or_default().trim() }),
            _ => json!({ "summary": "coder did it", "coder": last["response"] }),
        };
        say(&self.name, &format!("answers {answer}"));
        Ok(answer)
    }
}

impl AgentWorker for ScriptedAgent {
    fn handle(&self, event: AgentEvent, ctx: AgentContext) -> AgentFuture<'_, Value> {
        Box::pin(self.run(event, ctx))
    }
}

fn main() -> anyhow::Result<()> {
    // `coder`'s `bash__exec` runs in the sandbox, whose helper is this same program: started as
    // the helper, it does the helper's work and exits here (before any thread).
    goondan_base::sandbox::serve_if_asked();
    // In an agent process this serves the agent and exits; in the host it returns at once.
    agent_mode::run_if_requested(|me| match ScriptedAgent::new(me) {
        Ok(agent) => agent,
        Err(e) => {
            eprintln!("cannot set up agent {}: {e}", me.agent);
            std::process::exit(2)
        }
    });
    tokio::runtime::Runtime::new()?.block_on(host())
}

async fn host() -> anyhow::Result<()> {
    let workdir = tempfile::tempdir()?;
    let swarm = SwarmSpec::new("handoff-demo", "planner")
        .agent_calling("planner", ["coder"])
        .agent_calling("coder", Vec::<String>::new());
    let config = goondan_runtime::agents::orchestrator::OrchestratorConfig {
        workdir: workdir.path().to_path_buf(),
        ..Default::default()
    };
    let orchestrator =
        Orchestrator::start_with(swarm, ProcessConfig::current_exe()?, config).await?;
    say("host", "orchestrator started; no agent process runs yet");

    let event = AgentEvent::new(
        "user.message",
        json!({ "task": "report the kernel name and what the workdir holds" }),
    );
    let options = RequestOptions {
        timeout_ms: Some(20_000),
        trace_id: Some("trace-handoff-demo".into()),
        ..RequestOptions::default()
    };
    let answer = orchestrator.request("planner", event, options).await?;
    say(
        "host",
        &format!(
            "answer (correlationId={}): {}",
            answer.correlation_id,
            answer.response.unwrap_or_default()
        ),
    );
    for info in orchestrator.list(true).await? {
        let pid = orchestrator
            .pid(&info.target, &info.instance_key)
            .unwrap_or(0);
        say(
            "host",
            &format!(
                "instance {}/{} pid {pid}, spawned by {}",
                info.target, info.instance_key, info.owner_agent
            ),
        );
    }
    orchestrator.shutdown(Duration::from_secs(5)).await;
    say("host", "all agent processes shut down");
    Ok(())
}
