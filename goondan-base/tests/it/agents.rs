//! The `agents` tool (BASE-4, AG-1..5, HO-2, HO-4, HO-5): in-process swarms for the semantics,
//! and one handoff between real agent processes (the `goondan-base-agents-host` program,
//! `agent_hosts/agents.rs`, serving the same scripted agent).

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use goondan_base::{Agents, resolve_ref};
use goondan_runtime::agents::orchestrator::{
    Orchestrator, OrchestratorConfig, ProcessConfig, SwarmSpec, codes,
};
use goondan_runtime::testing::{ResultAssertions, TestKit};
use goondan_runtime::tools::agent::AgentRuntime;
use goondan_runtime::{ToolCall, ToolCallResult, ToolCatalog, ToolContext, ToolExecutor};
use serde_json::{Value, json};

#[path = "../agent_hosts/scripted.rs"]
mod scripted;
use scripted::{executor, scripted};

fn call(name: &str, args: Value) -> Value {
    json!({ "name": name, "args": args })
}

struct Host {
    orch: Orchestrator,
    executor: ToolExecutor,
    catalog: ToolCatalog,
    ctx: ToolContext,
    dir: tempfile::TempDir,
}

impl Host {
    fn in_process(swarm: SwarmSpec) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let config = OrchestratorConfig {
            workdir: dir.path().to_path_buf(),
            ..OrchestratorConfig::default()
        };
        let orch = Orchestrator::in_process(swarm, config, |_id| scripted()).unwrap();
        Self::with(orch, dir)
    }

    fn with(orch: Orchestrator, dir: tempfile::TempDir) -> Self {
        let (executor, catalog) = executor();
        let ctx = ToolContext::builder(dir.path())
            .agent_name("orchestrator")
            .runtime(Arc::new(orch.clone()) as Arc<dyn AgentRuntime>)
            .build();
        Self {
            orch,
            executor,
            catalog,
            ctx,
            dir,
        }
    }

    async fn call(&self, name: &str, args: Value) -> ToolCallResult {
        let call = ToolCall::new("host_call", name, args);
        self.executor.execute(call, &self.ctx, &self.catalog).await
    }
}

fn swarm() -> SwarmSpec {
    SwarmSpec::new("base-swarm", "a").agent("a").agent("b")
}

async fn bounded<F: Future<Output = ()>>(secs: u64, f: F) {
    tokio::time::timeout(Duration::from_secs(secs), f)
        .await
        .expect("the test did not finish in time");
}

#[test]
fn ho_5_base_4_the_package_ships_the_agents_tool() {
    let tool = resolve_ref("@goondan/base", "agents").unwrap().unwrap();
    assert_eq!(tool.name(), Agents::NAME);
    assert_eq!(tool.error_message_limit(), 1500);
    let kit = TestKit::with_tools([tool]).unwrap();
    let mut names: Vec<String> = kit
        .registry()
        .names()
        .iter()
        .map(ToString::to_string)
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            "agents__catalog",
            "agents__list",
            "agents__request",
            "agents__send",
            "agents__spawn"
        ]
    );
    let request = kit.registry().get("agents__request").unwrap();
    let params = request.export().parameters();
    assert_eq!(params["required"], json!(["target", "input"]));
    for key in ["instanceKey", "eventType", "timeoutMs", "async", "metadata"] {
        assert!(params["properties"][key].is_object(), "{key}: {params}");
    }
}

#[tokio::test]
async fn base_4_without_a_runtime_every_export_is_a_structured_error() {
    let kit = TestKit::with_tools([Agents]).unwrap();
    for (name, args) in [
        ("agents__request", json!({"target": "b", "input": "hi"})),
        ("agents__send", json!({"target": "b", "input": "hi"})),
        ("agents__spawn", json!({"target": "b"})),
        ("agents__list", json!({})),
        ("agents__catalog", json!({})),
    ] {
        let r = kit.call(name, args).await;
        let e = r.assert_error(codes::NO_RUNTIME);
        assert!(e.suggestion().is_some(), "{name}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn base_4_ag_1_request_hands_work_to_another_agent() {
    bounded(30, async {
        let host = Host::in_process(swarm());
        let task = json!({"calls": [call("agents__request", json!({
            "target": "b",
            "input": {"calls": [call("bash__exec", json!({"command": "echo from-b"}))]},
        }))]});
        let r = host
            .call("agents__request", json!({"target": "a", "input": task}))
            .await;
        let out = r.assert_ok();
        assert_eq!(out["target"], "a");
        assert!(out["correlationId"].as_str().is_some());
        let inner = &out["response"]["results"][0];
        assert_eq!(inner["status"], "ok", "{inner}");
        assert_eq!(inner["output"]["target"], "b");
        let bash = &inner["output"]["response"]["results"][0];
        assert_eq!(bash["output"]["stdout"], "from-b\n", "{bash}");
        host.orch.shutdown(Duration::from_secs(2)).await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ho_2_async_request_returns_a_pending_handle() {
    bounded(30, async {
        let host = Host::in_process(swarm());
        let input =
            json!({"calls": [call("bash__exec", json!({"command": "sleep 0.2; echo late"}))]});
        let r = host
            .call(
                "agents__request",
                json!({"target": "b", "input": input, "async": true}),
            )
            .await;
        let handle = r.assert_pending().to_owned();
        let done = host.executor.pending().wait(&handle).await.unwrap();
        let out = done.assert_ok();
        assert_eq!(out["response"]["results"][0]["output"]["stdout"], "late\n");
        host.orch.shutdown(Duration::from_secs(2)).await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ag_2_send_through_the_tool_is_accepted_and_runs_later() {
    bounded(30, async {
        let host = Host::in_process(swarm());
        let marker = host.dir.path().join("sent");
        let input = json!({"calls": [call("bash__exec", json!({
            "command": format!("echo done > '{}'", marker.display())
        }))]});
        let r = host
            .call("agents__send", json!({"target": "b", "input": input}))
            .await;
        let out = r.assert_ok();
        assert_eq!(out["accepted"], true);
        assert_eq!(out["target"], "b");
        let deadline = Instant::now() + Duration::from_secs(10);
        while !marker.exists() {
            assert!(Instant::now() < deadline, "the event was never handled");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        host.orch.shutdown(Duration::from_secs(2)).await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ag_3_ag_4_ag_5_spawn_list_catalog_through_the_tool() {
    bounded(30, async {
        let host = Host::in_process(swarm());
        let first = host
            .call("agents__spawn", json!({"target": "b", "instanceKey": "k1", "cwd": "k1"}))
            .await;
        assert_eq!(
            first.assert_ok(),
            &json!({"target": "b", "instanceKey": "k1", "spawned": true, "cwd": "k1"})
        );
        let again = host
            .call("agents__spawn", json!({"target": "b", "instanceKey": "k1"}))
            .await;
        assert_eq!(again.assert_ok()["spawned"], false);
        let ghost = host.call("agents__spawn", json!({"target": "ghost"})).await;
        let e = ghost.assert_error(codes::UNKNOWN_TARGET);
        assert!(e.suggestion().unwrap().contains("a, b"));
        assert_eq!(host.orch.swarm(), &swarm());

        let listed = host.call("agents__list", json!({})).await;
        let agents = listed.assert_ok()["agents"].as_array().unwrap().clone();
        assert_eq!(agents.len(), 1);
        assert_eq!(agents[0]["instanceKey"], "k1");
        assert_eq!(agents[0]["ownerAgent"], "orchestrator");
        // Instances a spawned are not the host's.
        let task = json!({"calls": [call("agents__spawn", json!({"target": "b", "instanceKey": "k2"})),
            call("agents__list", json!({})), call("agents__catalog", json!({}))]});
        let r = host
            .call("agents__request", json!({"target": "a", "input": task}))
            .await;
        let results = r.assert_ok()["response"]["results"].clone();
        assert_eq!(results[1]["output"]["agents"][0]["instanceKey"], "k2");
        assert_eq!(results[1]["output"]["agents"].as_array().unwrap().len(), 1);
        assert_eq!(
            results[2]["output"],
            json!({"swarmName": "base-swarm", "entryAgent": "a", "selfAgent": "a",
                "availableAgents": ["a", "b"], "callableAgents": ["b"]})
        );
        let all = host.call("agents__list", json!({"includeAll": true})).await;
        assert_eq!(all.assert_ok()["agents"].as_array().unwrap().len(), 3);
        host.orch.shutdown(Duration::from_secs(2)).await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ho_4_timeouts_and_cycles_reach_the_model_as_structured_errors() {
    bounded(30, async {
        let host = Host::in_process(swarm());
        let slow = json!({"calls": [call("bash__exec", json!({"command": "sleep 2"}))]});
        let r = host
            .call(
                "agents__request",
                json!({"target": "b", "input": slow, "timeoutMs": 100}),
            )
            .await;
        assert!(r.assert_error(codes::TIMEOUT).suggestion().is_some());
        // a asks b, b asks a: b's call is refused; a sees b's refusal in its results.
        let back = json!({"calls": [call("agents__request", json!({"target": "a", "input": {}}))]});
        let task =
            json!({"calls": [call("agents__request", json!({"target": "b", "input": back}))]});
        let r = host
            .call("agents__request", json!({"target": "a", "input": task}))
            .await;
        let out = r.assert_ok();
        let b_result = &out["response"]["results"][0]["output"]["response"]["results"][0];
        assert_eq!(b_result["status"], "error", "{out}");
        assert_eq!(b_result["error"]["code"], codes::CYCLE);
        assert!(b_result["error"]["suggestion"].as_str().is_some());
        let r = host
            .call("agents__request", json!({"target": "", "input": 1}))
            .await;
        r.assert_error(codes::UNKNOWN_TARGET);
        host.orch.shutdown(Duration::from_secs(2)).await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn base_4_ho_8_handoff_between_real_agent_processes() {
    bounded(60, async {
        let dir = tempfile::tempdir().unwrap();
        // The agents run `agent_hosts/agents.rs`, which serves `scripted()`.
        let process = ProcessConfig::new(env!("CARGO_BIN_EXE_goondan-base-agents-host"));
        let config = OrchestratorConfig {
            workdir: dir.path().to_path_buf(),
            ..OrchestratorConfig::default()
        };
        let orch = Orchestrator::start_with(swarm(), process, config)
            .await
            .unwrap();
        let host = Host::with(orch, dir);
        let task = json!({"calls": [call("agents__request", json!({
            "target": "b",
            "input": {"calls": [call("bash__exec", json!({"command": "echo $PPID"}))]},
        }))]});
        let r = host
            .call("agents__request", json!({"target": "a", "input": task}))
            .await;
        let out = r.assert_ok();
        let via_b = &out["response"]["results"][0]["output"];
        let stdout = via_b["response"]["results"][0]["output"]["stdout"]
            .as_str()
            .unwrap();
        // bash ran as a child of b's process, which is neither this process nor a's.
        let b_pid: u32 = stdout.trim().parse().unwrap();
        assert_eq!(Some(b_pid), host.orch.pid("b", "default"));
        assert_ne!(Some(b_pid), host.orch.pid("a", "default"));
        assert_ne!(b_pid, std::process::id());
        host.orch.shutdown(Duration::from_secs(5)).await;
    })
    .await;
}

/// Every base tool, registered.
fn base_registry() -> Arc<goondan_runtime::ToolRegistry> {
    Arc::new(
        goondan_runtime::ToolRegistry::builder()
            .tools(goondan_base::tools())
            .build()
            .unwrap(),
    )
}

/// One Turn ("hi") of an agent `planner` with the base tools `tools` and the targets extension
/// allowing `coder` and `tester`, answered by `model`.
async fn run_planner(model: Arc<goondan_runtime::step::ScriptedModel>, tools: &[&str]) {
    use goondan_runtime::step::AgentInstance;
    let state = tempfile::tempdir().unwrap();
    let agent = AgentInstance::builder("planner", base_registry(), model)
        .tools(tools.iter().copied())
        .extension(goondan_base::agents::targets(vec![
            "coder".to_owned(),
            "tester".to_owned(),
        ]))
        .state_dir(state.path())
        .build()
        .unwrap();
    agent.run_turn("hi").await.unwrap();
}

#[tokio::test]
async fn the_targets_extension_shows_the_model_only_the_agents_it_may_call() {
    use goondan_runtime::Dialect;
    use goondan_runtime::step::{ModelResponse, ScriptedModel};
    let registry = base_registry();
    let model = Arc::new(ScriptedModel::new([ModelResponse::text("done")]));
    run_planner(model.clone(), &["agents", "file-system"]).await;
    let seen = &model.requests()[0].catalog;
    for name in ["agents__request", "agents__send", "agents__spawn"] {
        let target = &seen.get(name).unwrap().parameters().unwrap()["properties"]["target"];
        assert_eq!(target["enum"], json!(["coder", "tester"]), "{name}");
        assert_eq!(target["type"], "string", "{name}: the rest is kept");
    }
    // Every other export is shown as registered, and the rendering the provider gets says the
    // same as a rendering of the edited item made from scratch.
    let plain = ToolCatalog::build(&registry, ["agents", "file-system"]).unwrap();
    for item in plain.items() {
        if !["agents__request", "agents__send", "agents__spawn"].contains(&item.name().as_str()) {
            assert_eq!(seen.get(item.name().as_str()), Some(item));
        }
    }
    let sent: Value =
        serde_json::from_str(&Dialect::OPENAI_CHAT.tools_json(seen).unwrap()).unwrap();
    assert_eq!(sent, Dialect::OPENAI_CHAT.tools(seen).unwrap());
    let request = sent
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["function"]["name"] == "agents__request")
        .unwrap();
    assert_eq!(
        request["function"]["parameters"]["properties"]["target"]["enum"],
        json!(["coder", "tester"])
    );
}

/// A call is checked against the parameters the model was shown in its Step: with the targets
/// extension, a `target` outside the agents the model may call is refused by validation, before
/// the tool runs, with the shown `enum` in the reason.
#[tokio::test]
async fn the_targets_extension_s_narrowed_schema_is_enforced_on_calls() {
    use goondan_runtime::ToolCall;
    use goondan_runtime::step::{ModelResponse, ScriptedModel};
    let model = Arc::new(ScriptedModel::new([
        ModelResponse::calls([ToolCall::new(
            "c1",
            "agents__request",
            json!({"target": "intruder", "input": "hello"}),
        )]),
        ModelResponse::text("done"),
    ]));
    run_planner(model.clone(), &["agents"]).await;
    let requests = model.requests();
    assert_eq!(requests.len(), 2);
    let answered = serde_json::to_string(&requests[1].messages).unwrap();
    assert!(answered.contains("E_TOOL_INVALID_ARGS"), "{answered}");
    assert!(answered.contains("at `/target`"), "{answered}");
    assert!(
        answered.contains("coder"),
        "the reason names the shown enum: {answered}"
    );
}
