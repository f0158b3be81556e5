#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Agents from a bundle (HO-6, HO-8): every agent process is this test binary re-executed,
//! loads the bundle named by `ENV_BUNDLE` and runs the step loop with the scripted model the
//! host's factory gives it.

use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use goondan_base::{PACKAGE, resolve_ref};
use goondan_runtime::ToolCall;
use goondan_runtime::agent::{AgentEvent, AgentRuntime, RequestOptions};
use goondan_runtime::bundle::{Bundle, ToolLibrary};
use goondan_runtime::orchestrator::bundle_worker::LOAD_FAILED;
use goondan_runtime::orchestrator::{
    ENV_BUNDLE, ModelFactory, Orchestrator, OrchestratorConfig, ProcessConfig, StepWorker,
    SwarmSpec, agent_mode,
};
use goondan_runtime::step::{Model, ModelResponse, ScriptedModel};
use serde_json::json;

#[test]
fn agent_host() {
    agent_mode::run_if_requested(|me| StepWorker::from_env(me, &library(), &models()));
}

fn library() -> ToolLibrary {
    ToolLibrary::default().package(PACKAGE, |name| resolve_ref(PACKAGE, name))
}

/// `planner` hands the task to `coder` and reports; `coder` runs `bash` and answers.
fn models() -> ModelFactory {
    Arc::new(|agent: &str| -> Arc<dyn Model> {
        let script = match agent {
            "planner" => vec![
                ModelResponse::calls([ToolCall::new(
                    "call_plan",
                    "agents__request",
                    json!({"target": "coder", "input": "print your parent's pid", "timeoutMs": 20000}),
                )]),
                ModelResponse::text("coder did it"),
            ],
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

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../goondan-runtime/tests/fixtures/bundles/handoff.yaml")
}

async fn start(bundle_path: &Path) -> (Orchestrator, tempfile::TempDir) {
    let bundle = Bundle::load(fixture()).unwrap();
    let swarm = SwarmSpec::from_bundle(&bundle, None).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let process = ProcessConfig::current_exe()
        .unwrap()
        .arg("agent_host")
        .arg("--exact")
        .arg("--nocapture")
        .arg("-q")
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
