//! Agents from a bundle (HO-3, HO-6, HO-8): every agent process is the
//! `goondan-base-bundle-host` program (`agent_hosts/bundle_agents.rs`): it loads the bundle
//! named by `ENV_BUNDLE` and runs the step loop with the scripted model of its agent.

use std::future::Future;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use goondan_runtime::agents::orchestrator::{
    Orchestrator, OrchestratorConfig, ProcessConfig, SwarmSpec,
};
use goondan_runtime::agents::swarm::{ENV_BUNDLE, LOAD_FAILED};
use goondan_runtime::bundle::Bundle;
use goondan_runtime::tools::agent::{AgentEvent, AgentRuntime, RequestOptions};
use serde_json::{Value, json};

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../goondan-runtime/tests/fixtures/bundles/handoff.yaml")
}

async fn start(bundle_path: &Path) -> (Orchestrator, tempfile::TempDir) {
    start_swarm(&fixture(), bundle_path).await
}

/// The swarm of the bundle at `swarm_from`, its agents loading the bundle at `bundle_path`.
async fn start_swarm(swarm_from: &Path, bundle_path: &Path) -> (Orchestrator, tempfile::TempDir) {
    let bundle = Bundle::load(swarm_from).unwrap();
    let swarm = SwarmSpec::from_bundle(&bundle, None).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let process = ProcessConfig::new(env!("CARGO_BIN_EXE_goondan-base-bundle-host"))
        .env(ENV_BUNDLE, bundle_path);
    let config = OrchestratorConfig {
        workdir: dir.path().to_path_buf(),
        ..OrchestratorConfig::default()
    };
    let orch = Orchestrator::start_with(swarm, process, config)
        .await
        .unwrap();
    (orch, dir)
}

async fn bounded<F: Future<Output = ()>>(secs: u64, f: F) {
    tokio::time::timeout(Duration::from_secs(secs), f)
        .await
        .expect("the test did not finish in time");
}

fn task() -> AgentEvent {
    AgentEvent::new("user.message", json!("have coder print its parent's pid"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ho_6_agent_processes_load_the_bundle_and_run_the_step_loop() {
    bounded(60, async {
        let (orch, _dir) = start(&fixture()).await;
        assert_eq!(orch.swarm().entry_agent, "planner");
        let r = orch
            .request("planner", task(), RequestOptions::default())
            .await
            .unwrap();
        let out = r.response.unwrap();
        assert_eq!(out["answer"], "coder did it", "{out}");
        assert_eq!(out["end"], "answered");
        // planner's step loop called `agents__request`; coder's answered with its own Turn.
        let handoff = &out["toolResults"][0];
        assert_eq!(handoff["toolName"], "agents__request");
        assert_eq!(handoff["status"], "ok", "{handoff}");
        let coder = &handoff["output"]["response"];
        assert_eq!(coder["answer"], "printed it", "{coder}");
        let bash = &coder["toolResults"][0];
        assert_eq!(bash["toolName"], "bash__exec");
        // bash ran as a child of coder's own process, which is neither this one nor planner's.
        let pid: u32 = bash["output"]["stdout"]
            .as_str()
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        assert_eq!(Some(pid), orch.pid("coder", "default"));
        assert_ne!(Some(pid), orch.pid("planner", "default"));
        assert_ne!(pid, std::process::id());
        orch.shutdown(Duration::from_secs(5)).await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ho_4_an_agent_that_cannot_load_the_bundle_answers_with_a_structured_error() {
    bounded(60, async {
        let dir = tempfile::tempdir().unwrap();
        let (orch, _work) = start(&dir.path().join("missing.yaml")).await;
        let e = orch
            .request("planner", task(), RequestOptions::default())
            .await
            .unwrap_err();
        assert_eq!(e.code(), LOAD_FAILED, "{e:?}");
        assert!(e.to_string().contains("missing.yaml"), "{e}");
        assert!(e.suggestion().is_some());
        orch.shutdown(Duration::from_secs(5)).await;
    })
    .await;
}

/// `caller` probes its trace, then asks `callee` with `agents__request`; `callee` probes its
/// trace in two Steps. The probe is a tool of the agent-process program that answers with its
/// call's `ctx.trace_id()`.
const TRACED: &str = r#"
apiVersion: goondan.ai/v1
kind: Agent
metadata: {name: caller}
spec:
  tools:
    - ref: {kind: Tool, name: agents, package: "@goondan/base"}
    - ref: {kind: Tool, name: probe, package: "@goondan-test/probe"}
---
apiVersion: goondan.ai/v1
kind: Agent
metadata: {name: callee}
spec:
  tools:
    - ref: {kind: Tool, name: probe, package: "@goondan-test/probe"}
---
apiVersion: goondan.ai/v1
kind: Swarm
metadata: {name: traced}
spec:
  entryAgent: "Agent/caller"
  agents: ["Agent/caller", "Agent/callee"]
"#;

/// The outputs of the `probe__ids` calls of a Turn's answer.
fn probes(turn: &Value) -> Vec<&Value> {
    turn["toolResults"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["toolName"] == "probe__ids")
        .map(|r| {
            assert_eq!(r["status"], "ok", "{r}");
            &r["output"]
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ho_3_the_caller_s_trace_reaches_the_turn_steps_and_tool_calls_of_a_bundle_agent() {
    bounded(60, async {
        let dir = tempfile::tempdir().unwrap();
        let bundle = dir.path().join("goondan.yaml");
        std::fs::write(&bundle, TRACED).unwrap();
        let (orch, _work) = start_swarm(&bundle, &bundle).await;

        // The host asks `caller` within its trace.
        let options = RequestOptions {
            trace_id: Some("trace-from-the-host".into()),
            turn_id: Some("turn-of-the-host".into()),
            ..RequestOptions::default()
        };
        let ask = AgentEvent::new("user.message", json!("ask callee which trace it is in"));
        let r = orch.request("caller", ask, options).await.unwrap();
        let caller = r.response.unwrap();
        assert_eq!(caller["answer"], "asked", "{caller}");
        assert_eq!(caller["traceId"], "trace-from-the-host", "{caller}");
        let caller_probe = probes(&caller);
        assert_eq!(caller_probe.len(), 1, "{caller}");
        assert_eq!(caller_probe[0]["agent"], "caller");
        assert_eq!(caller_probe[0]["traceId"], "trace-from-the-host");
        assert_eq!(caller_probe[0]["turnId"], caller["turnId"]);

        // `caller`'s `agents__request` carried the trace to `callee`, another process: its
        // Turn and the calls of both its Steps run in it.
        let handoff = caller["toolResults"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["toolName"] == "agents__request")
            .unwrap();
        assert_eq!(handoff["status"], "ok", "{handoff}");
        let callee = &handoff["output"]["response"];
        assert_eq!(callee["answer"], "probed", "{callee}");
        assert_eq!(callee["traceId"], "trace-from-the-host", "{callee}");
        let callee_probes = probes(callee);
        assert_eq!(callee_probes.len(), 2, "{callee}");
        for probe in callee_probes {
            assert_eq!(probe["agent"], "callee");
            assert_eq!(probe["traceId"], "trace-from-the-host", "{callee}");
            assert_eq!(probe["turnId"], callee["turnId"]);
        }
        // A Turn of its own, in the caller's trace.
        assert_ne!(callee["turnId"], caller["turnId"]);
        assert_ne!(orch.pid("callee", "default"), orch.pid("caller", "default"));

        // Without a trace from the host, the Turn starts one and its calls share it.
        let again = AgentEvent::new("user.message", json!("once more"));
        let callee = orch
            .request("callee", again, RequestOptions::default())
            .await
            .unwrap()
            .response
            .unwrap();
        let trace = callee["traceId"].as_str().unwrap();
        assert_ne!(trace, "trace-from-the-host");
        let probes = probes(&callee);
        assert!(!probes.is_empty(), "{callee}");
        assert!(probes.iter().all(|p| p["traceId"] == trace), "{callee}");
        orch.shutdown(Duration::from_secs(5)).await;
    })
    .await;
}

const RESTARTER: &str = r#"
apiVersion: goondan.ai/v1
kind: Agent
metadata: {name: restarter}
spec:
  tools:
    - ref: {kind: Tool, name: self-restart, package: "@goondan/base"}
---
apiVersion: goondan.ai/v1
kind: Swarm
metadata: {name: restarting}
spec:
  entryAgent: "Agent/restarter"
  agents: ["Agent/restarter"]
"#;

/// `self-restart__request` is honoured: the Turn's answer goes out, then the Orchestrator starts
/// the agent again as a new process, at once and without counting a crash, and the new process
/// serves the next request.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ho_8_self_restart_request_restarts_the_agent_process_after_its_answer() {
    bounded(60, async {
        let dir = tempfile::tempdir().unwrap();
        let bundle = dir.path().join("goondan.yaml");
        std::fs::write(&bundle, RESTARTER).unwrap();
        let (orch, _work) = start_swarm(&bundle, &bundle).await;
        let ask = || AgentEvent::new("user.message", json!("reload yourself"));
        let first = orch
            .request("restarter", ask(), RequestOptions::default())
            .await
            .unwrap();
        let first = first.response.unwrap();
        assert_eq!(first["answer"], "restarting", "{first}");
        let signal = &first["toolResults"][0]["output"];
        assert_eq!(signal["restartRequested"], true, "{first}");
        assert_eq!(signal["restartReason"], "reload the prompt", "{first}");
        // The old process, unless its restart has already begun (then there is none for a
        // moment): the restart follows the answer at once.
        let old = orch.pid("restarter", "default");
        // Started again as a new process, well before any crash backoff would allow.
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let pid = orch.pid("restarter", "default");
            let restarted = orch.restarts("restarter", "default") == Some(1);
            if restarted && pid.is_some() && pid != old {
                break;
            }
            assert!(Instant::now() < deadline, "the agent was not restarted");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let second = orch
            .request("restarter", ask(), RequestOptions::default())
            .await
            .unwrap();
        assert_eq!(second.response.unwrap()["answer"], "restarting");
        orch.shutdown(Duration::from_secs(5)).await;
    })
    .await;
}
