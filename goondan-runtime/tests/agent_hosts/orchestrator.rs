//! The agent-process program of `tests/it/orchestrator.rs`: the Orchestrator of those tests runs
//! it as every agent. Built only for the tests (`required-features`).

use std::time::Duration;

use goondan_runtime::ToolError;
use goondan_runtime::agents::orchestrator::nats::{AgentHost, NatsAuth, NatsOptions};
use goondan_runtime::agents::orchestrator::{
    AgentWorker, OrchestratorConfig, ProcessConfig, SwarmSpec, agent_mode, worker_fn,
};
use goondan_runtime::tools::agent::{AgentEvent, RequestOptions, SpawnOptions};
use serde_json::{Value, json};

fn opts(timeout_ms: Option<u64>) -> RequestOptions {
    RequestOptions {
        timeout_ms,
        ..RequestOptions::default()
    }
}

fn err_json(e: &ToolError) -> Value {
    serde_json::to_value(e).unwrap_or_default()
}

/// What every agent of these tests does, by `input.op`.
fn worker() -> impl AgentWorker {
    worker_fn(|event, ctx| async move {
        let input = event.input;
        let me = ctx.identity().agent.clone();
        let pid = std::process::id();
        let str_of = |k: &str| input[k].as_str().unwrap_or_default().to_owned();
        match input["op"].as_str().unwrap_or("echo") {
            "echo" => Ok(json!({
                "agent": me,
                "instance": ctx.identity().instance_key,
                "pid": pid,
                "value": input["value"],
                "correlationId": ctx.correlation_id(),
                "traceId": ctx.caller_trace_id(),
                "from": ctx.from(),
                "workdir": ctx.identity().workdir,
            })),
            "sleep" => {
                let ms = input["ms"].as_u64().unwrap_or(0);
                // `started`: a file written when the sleep starts, for tests to wait on.
                if let Some(path) = input["started"].as_str() {
                    std::fs::write(path, pid.to_string())
                        .map_err(|e| ToolError::new(e.to_string()))?;
                }
                tokio::time::sleep(Duration::from_millis(ms)).await;
                Ok(json!({ "slept": ms, "pid": pid }))
            }
            "ask" => {
                let target = str_of("target");
                let inner = AgentEvent::new("agent.request", input["input"].clone());
                let r = ctx
                    .runtime()
                    .request(&target, inner, opts(input["timeoutMs"].as_u64()))
                    .await?;
                Ok(
                    json!({ "via": me, "pid": pid, "answer": r.response, "correlationId": r.correlation_id }),
                )
            }
            "send" => {
                let target = str_of("target");
                let inner = AgentEvent::new("agent.event", input["input"].clone());
                let r = ctx.runtime().send(&target, inner).await?;
                Ok(serde_json::to_value(r).unwrap_or_default())
            }
            "linger" => {
                // Work that outlives the answer and the link: the process exits only once it
                // is done (its runtime waits for blocking tasks), as an agent closing its
                // journal does. `done`: a file written when it finishes.
                let ms = input["ms"].as_u64().unwrap_or(0);
                let done = str_of("done");
                tokio::task::spawn_blocking(move || {
                    std::thread::sleep(Duration::from_millis(ms));
                    let _ = std::fs::write(done, pid.to_string());
                });
                Ok(json!({ "pid": pid }))
            }
            "restart" => {
                ctx.request_restart(str_of("reason"));
                Ok(json!({ "pid": pid, "restarting": true }))
            }
            "touch" => {
                std::fs::write(str_of("path"), &me)?;
                Ok(json!(true))
            }
            "manage" => {
                let rt = ctx.runtime();
                let key = SpawnOptions {
                    instance_key: Some("w1".into()),
                    cwd: Some("w1-dir".into()),
                };
                let first = rt.spawn("b", key.clone()).await?;
                let again = rt.spawn("b", key).await?;
                let ghost = rt.spawn("ghost", SpawnOptions::default()).await.err();
                let mine = rt.list(false).await?;
                let all = rt.list(true).await?;
                let catalog = rt.catalog().await?;
                Ok(json!({
                    "first": first, "again": again, "ghost": ghost.map(|e| err_json(&e)),
                    "mine": mine, "all": all, "catalog": catalog,
                }))
            }
            "big" => Ok(json!(
                "x".repeat(input["bytes"].as_u64().unwrap_or(0) as usize)
            )),
            other => Err(ToolError::new(format!("unknown op {other}"))),
        }
    })
}

/// `nats-host URL SWARM a,b [USER PASS]`: an [`AgentHost`] of swarm SWARM (agents a, b, c, all
/// callable) serving the listed agents, as processes of this program. Prints `ready HOST_ID`,
/// then serves until its standard input closes.
fn nats_host(args: &[String]) -> Result<(), Box<dyn std::error::Error>> {
    let [url, swarm, placed, rest @ ..] = args else {
        return Err("usage: nats-host URL SWARM a,b [USER PASS]".into());
    };
    let mut options = NatsOptions::new(url.clone());
    if let [user, password] = rest {
        options = options.auth(NatsAuth::UserPassword {
            user: user.clone(),
            password: password.clone(),
        });
    }
    let spec = SwarmSpec::new(swarm.clone(), "a")
        .agent("a")
        .agent("b")
        .agent("c");
    let placed: Vec<String> = placed.split(',').map(str::to_owned).collect();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    runtime.block_on(async move {
        let config = OrchestratorConfig {
            workdir: std::env::current_dir()?,
            ..OrchestratorConfig::default()
        };
        let host = AgentHost::start(
            &options,
            spec,
            &placed,
            ProcessConfig::current_exe()?,
            config,
        )
        .await?;
        // The test reads this line to learn the host is serving.
        {
            use std::io::Write;
            let mut out = std::io::stdout().lock();
            writeln!(out, "ready {}", host.host_id())?;
            out.flush()?;
        }
        let _ = tokio::task::spawn_blocking(|| {
            std::io::Read::read_to_end(&mut std::io::stdin(), &mut Vec::new())
        })
        .await;
        host.shutdown(Duration::from_secs(2)).await;
        Ok(())
    })
}

fn main() {
    agent_mode::run_if_requested(|_me| worker());
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("nats-host") {
        match nats_host(&args[1..]) {
            Ok(()) => std::process::exit(0),
            Err(e) => {
                eprintln!("goondan-test-agent-host nats-host: {e}");
                std::process::exit(1);
            }
        }
    }
    eprintln!("goondan-test-agent-host: run by the Orchestrator of the tests only");
    std::process::exit(2);
}
