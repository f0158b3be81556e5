#![allow(clippy::unwrap_used, clippy::expect_used)]
//! The Orchestrator with real agent processes (HO-1..8, AG-1..5).
//!
//! Agent processes run the `goondan-test-agent-host` program (`agent_hosts/orchestrator.rs`),
//! whose worker answers by `input.op`: `echo`, `sleep`, `ask`, `send`, `touch`, `manage`, `big`.

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use goondan_runtime::agent::{AgentEvent, AgentRuntime, RequestOptions};
use goondan_runtime::orchestrator::{
    Orchestrator, OrchestratorConfig, ProcessConfig, SwarmSpec, codes,
};
use serde_json::{Value, json};

fn opts(timeout_ms: Option<u64>) -> RequestOptions {
    RequestOptions {
        timeout_ms,
        ..RequestOptions::default()
    }
}

async fn start(swarm: SwarmSpec, frame_limit: Option<usize>) -> (Orchestrator, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let mut process = ProcessConfig::new(env!("CARGO_BIN_EXE_goondan-test-agent-host"));
    if let Some(limit) = frame_limit {
        process = process.max_frame_bytes(limit);
    }
    let config = OrchestratorConfig {
        workdir: dir.path().to_path_buf(),
        ..OrchestratorConfig::default()
    };
    let orchestrator = Orchestrator::start_with(swarm, process, config)
        .await
        .unwrap();
    (orchestrator, dir)
}

fn swarm3() -> SwarmSpec {
    SwarmSpec::new("test-swarm", "a")
        .agent("a")
        .agent("b")
        .agent("c")
}

/// Every test is bounded: a hang fails the test instead of blocking CI.
async fn bounded<F: Future<Output = ()>>(secs: u64, f: F) {
    tokio::time::timeout(Duration::from_secs(secs), f)
        .await
        .expect("the test did not finish in time");
}

fn ev(input: Value) -> AgentEvent {
    AgentEvent::new("agent.request", input)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ho_1_ho_6_ho_8_handoff_between_two_agent_processes_spawns_the_target() {
    bounded(60, async {
        let (orch, _dir) = start(swarm3(), None).await;
        assert!(orch.list(true).await.unwrap().is_empty());
        let task = json!({"op": "ask", "target": "b", "input": {"op": "echo", "value": 42}});
        let r = orch.request("a", ev(task), opts(None)).await.unwrap();
        let out = r.response.unwrap();
        assert_eq!(r.target, "a");
        assert_eq!(out["via"], "a");
        assert_eq!(out["answer"]["agent"], "b");
        assert_eq!(out["answer"]["value"], 42);
        assert_eq!(out["answer"]["from"], "a/default");
        // Three processes: this one, a, b.
        let (pa, pb) = (
            out["pid"].as_u64().unwrap(),
            out["answer"]["pid"].as_u64().unwrap(),
        );
        assert_ne!(pa, pb);
        assert_ne!(pa, u64::from(std::process::id()));
        assert_eq!(orch.pid("a", "default"), Some(pa as u32));
        assert_eq!(orch.pid("b", "default"), Some(pb as u32));
        // Both were spawned on first use (HO-6), b by a.
        let all = orch.list(true).await.unwrap();
        let owners: Vec<_> = all
            .iter()
            .map(|i| (i.target.as_str(), i.owner_agent.as_str()))
            .collect();
        assert!(owners.contains(&("a", "orchestrator")), "{owners:?}");
        assert!(owners.contains(&("b", "a")), "{owners:?}");
        orch.shutdown(Duration::from_secs(5)).await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ho_3_correlation_id_and_trace_reach_the_target() {
    bounded(60, async {
        let (orch, _dir) = start(swarm3(), None).await;
        let options = RequestOptions {
            trace_id: Some("trace-abc".into()),
            turn_id: Some("turn-1".into()),
            ..RequestOptions::default()
        };
        let r = orch
            .request("b", ev(json!({"op": "echo"})), options)
            .await
            .unwrap();
        let out = r.response.unwrap();
        assert_eq!(out["correlationId"], r.correlation_id.as_str());
        assert_eq!(out["traceId"], "trace-abc");
        // Nested: the id a got back is the one b saw.
        let task = json!({"op": "ask", "target": "b", "input": {"op": "echo"}});
        let out = orch
            .request("a", ev(task), opts(None))
            .await
            .unwrap()
            .response
            .unwrap();
        assert_eq!(out["correlationId"], out["answer"]["correlationId"]);
        orch.shutdown(Duration::from_secs(5)).await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ag_1_ho_4_unknown_target_and_timeout_are_structured_errors() {
    bounded(60, async {
        let (orch, _dir) = start(swarm3(), None).await;
        let e = orch
            .request("ghost", ev(json!({})), opts(None))
            .await
            .unwrap_err();
        assert_eq!(e.code(), codes::UNKNOWN_TARGET);
        assert!(e.suggestion().unwrap().contains("a, b, c"), "{e:?}");
        let started = Instant::now();
        let e = orch
            .request("b", ev(json!({"op": "sleep", "ms": 5000})), opts(Some(300)))
            .await
            .unwrap_err();
        assert_eq!(e.code(), codes::TIMEOUT);
        assert!(e.suggestion().is_some());
        assert!(started.elapsed() < Duration::from_secs(4));
        orch.shutdown(Duration::from_millis(200)).await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ag_2_send_is_fire_and_forget_and_spawns_the_target() {
    bounded(60, async {
        let (orch, dir) = start(swarm3(), None).await;
        let marker = dir.path().join("touched");
        let task = json!({"op": "send", "target": "c",
            "input": {"op": "touch", "path": marker}});
        let out = orch
            .request("a", ev(task), opts(None))
            .await
            .unwrap()
            .response
            .unwrap();
        assert_eq!(out["accepted"], true);
        assert_eq!(out["target"], "c");
        assert!(out["eventId"].as_str().is_some());
        let deadline = Instant::now() + Duration::from_secs(20);
        while !marker.exists() {
            assert!(Instant::now() < deadline, "c never handled the event");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert_eq!(std::fs::read_to_string(&marker).unwrap(), "c");
        orch.shutdown(Duration::from_secs(5)).await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ag_3_ag_4_ag_5_spawn_list_and_catalog_from_an_agent_process() {
    bounded(60, async {
        let swarm = SwarmSpec::new("test-swarm", "a")
            .agent_calling("a", ["b"])
            .agent("b")
            .agent("c");
        let before = swarm.clone();
        let (orch, dir) = start(swarm, None).await;
        let out = orch
            .request("a", ev(json!({"op": "manage"})), opts(None))
            .await
            .unwrap()
            .response
            .unwrap();
        // AG-3: defined agents only; the same key reuses; the definition is untouched.
        assert_eq!(
            out["first"],
            json!({"target": "b", "instanceKey": "w1", "spawned": true, "cwd": "w1-dir"})
        );
        assert_eq!(out["again"]["spawned"], false);
        assert_eq!(out["ghost"]["code"], codes::UNKNOWN_TARGET);
        assert_eq!(orch.swarm(), &before);
        assert!(dir.path().join("w1-dir").is_dir());
        // AG-4: by default only the caller's spawns.
        let mine = out["mine"].as_array().unwrap();
        assert_eq!(mine.len(), 1, "{mine:?}");
        assert_eq!(mine[0]["target"], "b");
        assert_eq!(mine[0]["ownerAgent"], "a");
        assert_eq!(mine[0]["ownerInstanceKey"], "default");
        assert!(mine[0]["createdAt"].as_str().unwrap().ends_with('Z'));
        assert_eq!(out["all"].as_array().unwrap().len(), 2); // a (the host's) and b/w1
        // AG-5.
        assert_eq!(
            out["catalog"],
            json!({"swarmName": "test-swarm", "entryAgent": "a", "selfAgent": "a",
                "availableAgents": ["a", "b", "c"], "callableAgents": ["b"]})
        );
        let e = orch
            .request(
                "a",
                ev(json!({"op": "ask", "target": "c", "input": {}})),
                opts(None),
            )
            .await
            .unwrap_err();
        assert_eq!(e.code(), codes::NOT_CALLABLE);
        orch.shutdown(Duration::from_secs(5)).await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ho_4_ho_8_kill_9_mid_request_fails_at_once_then_respawns() {
    bounded(60, async {
        let (orch, _dir) = start(swarm3(), None).await;
        // Warm b up so its pid is known.
        orch.request("b", ev(json!({"op": "echo"})), opts(None))
            .await
            .unwrap();
        let old = orch.pid("b", "default").unwrap();
        let caller = orch.clone();
        let task = json!({"op": "ask", "target": "b", "timeoutMs": 30000,
            "input": {"op": "sleep", "ms": 30000}});
        let pending = tokio::spawn(async move {
            let started = Instant::now();
            let r = caller.request("a", ev(task), opts(Some(40000))).await;
            (r, started.elapsed())
        });
        while orch.in_flight() < 2 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
        let status = std::process::Command::new("kill")
            .args(["-9", &old.to_string()])
            .status()
            .unwrap();
        assert!(status.success());
        let (r, took) = pending.await.unwrap();
        let e = r.unwrap_err();
        assert_eq!(e.code(), codes::CRASHED, "{e:?}");
        assert!(e.suggestion().is_some());
        assert!(took < Duration::from_secs(10), "{took:?}");
        // Respawned with a new pid; the next request succeeds.
        let deadline = Instant::now() + Duration::from_secs(20);
        while orch.pid("b", "default").is_none_or(|p| p == old) {
            assert!(Instant::now() < deadline, "b was not respawned");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert_eq!(orch.restarts("b", "default"), Some(1));
        let again = orch
            .request("b", ev(json!({"op": "echo", "value": 1})), opts(None))
            .await
            .unwrap();
        assert_eq!(again.response.unwrap()["value"], 1);
        assert_eq!(orch.in_flight(), 0);
        orch.shutdown(Duration::from_secs(5)).await;
    })
    .await;
}

/// An agent that asks for its own restart (the base package's `self-restart`) answers first,
/// finishes the work it has, and is started again at once as a new process; work sent to it
/// meanwhile waits for the new process instead of failing, and nothing counts as a crash.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ho_8_a_requested_restart_finishes_in_flight_work_and_holds_new_work_for_the_next_process()
{
    bounded(60, async {
        let (orch, _dir) = start(swarm3(), None).await;
        orch.request("b", ev(json!({"op": "echo"})), opts(None))
            .await
            .unwrap();
        let old = orch.pid("b", "default").unwrap();
        // Work in flight when the restart is asked for.
        let slow = {
            let orch = orch.clone();
            tokio::spawn(async move {
                orch.request("b", ev(json!({"op": "sleep", "ms": 800})), opts(None))
                    .await
            })
        };
        while orch.in_flight() < 1 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        let asked = orch
            .request(
                "b",
                ev(json!({"op": "restart", "reason": "config changed"})),
                opts(None),
            )
            .await
            .unwrap();
        assert_eq!(asked.response.unwrap()["pid"], old);
        // New work while the old process drains: held for the next one.
        tokio::time::sleep(Duration::from_millis(100)).await;
        let during = orch
            .request(
                "b",
                ev(json!({"op": "echo", "value": 2})),
                opts(Some(20_000)),
            )
            .await
            .unwrap();
        let during = during.response.unwrap();
        assert_ne!(during["pid"], old, "new work went to the draining process");
        assert_eq!(during["value"], 2);
        // The slow request was finished by the old process, not failed as a crash.
        let slow = slow.await.unwrap().unwrap();
        assert_eq!(slow.response.unwrap()["pid"], old);
        assert_eq!(orch.restarts("b", "default"), Some(1));
        assert_ne!(orch.pid("b", "default"), Some(old));
        assert_eq!(orch.in_flight(), 0);
        orch.shutdown(Duration::from_secs(5)).await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ho_7_hundred_concurrent_requests_across_three_agents_keep_correlation() {
    bounded(90, async {
        let (orch, _dir) = start(swarm3(), None).await;
        let orch = Arc::new(orch);
        let calls = (0..100).map(|i| {
            let orch = Arc::clone(&orch);
            async move {
                let target = ["a", "b", "c"][i % 3];
                let r = orch
                    .request(target, ev(json!({"op": "echo", "value": i})), opts(None))
                    .await
                    .unwrap();
                (i, target, r)
            }
        });
        let results = futures_util::future::join_all(calls).await;
        let mut ids = std::collections::HashSet::new();
        for (i, target, r) in results {
            let out = r.response.unwrap();
            assert_eq!(out["agent"], target);
            assert_eq!(out["value"], i);
            assert_eq!(out["correlationId"], r.correlation_id.as_str());
            assert!(ids.insert(r.correlation_id));
        }
        assert_eq!(orch.in_flight(), 0);
        orch.shutdown(Duration::from_secs(5)).await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ho_4_a_cycle_is_refused_not_deadlocked() {
    bounded(60, async {
        let (orch, _dir) = start(swarm3(), None).await;
        // a waits on b, which asks a back.
        let task = json!({"op": "ask", "target": "b",
            "input": {"op": "ask", "target": "a", "input": {"op": "echo"}}});
        let e = orch
            .request("a", ev(task), opts(Some(20000)))
            .await
            .unwrap_err();
        assert_eq!(e.code(), codes::CYCLE, "{e:?}");
        assert!(
            e.message().contains("a/default -> b/default -> a/default"),
            "{e:?}"
        );
        assert!(e.suggestion().unwrap().contains("agents__send"));
        // A longer loop: a -> b -> c -> a.
        let task = json!({"op": "ask", "target": "b", "input": {"op": "ask", "target": "c",
            "input": {"op": "ask", "target": "a", "input": {"op": "echo"}}}});
        let e = orch
            .request("a", ev(task), opts(Some(20000)))
            .await
            .unwrap_err();
        assert_eq!(e.code(), codes::CYCLE, "{e:?}");
        assert!(
            e.message().contains("b/default -> c/default -> a/default"),
            "{e:?}"
        );
        // Asking itself is a cycle too.
        let e = orch
            .request(
                "a",
                ev(json!({"op": "ask", "target": "a", "input": {}})),
                opts(None),
            )
            .await
            .unwrap_err();
        assert_eq!(e.code(), codes::CYCLE);
        orch.shutdown(Duration::from_secs(5)).await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ho_7_oversized_or_malformed_frames_do_not_stop_the_orchestrator() {
    use tokio::io::AsyncWriteExt;
    bounded(60, async {
        let (orch, _dir) = start(swarm3(), Some(64 * 1024)).await;
        let socket = orch.socket_path().unwrap().to_path_buf();
        // A stray client: garbage, then a frame claiming 100 MB. The Orchestrator may hang up
        // on it as soon as it reads the length, so its writes may fail: that is fine.
        let mut s = tokio::net::UnixStream::connect(&socket).await.unwrap();
        let _ = s.write_all(&5u32.to_be_bytes()).await;
        let _ = s.write_all(b"nope!").await;
        drop(s);
        let mut s = tokio::net::UnixStream::connect(&socket).await.unwrap();
        let _ = s.write_all(&(100u32 << 20).to_be_bytes()).await;
        let _ = s.write_all(&[0u8; 1024]).await;
        drop(s);
        // A hello with a token nobody issued.
        let mut s = tokio::net::UnixStream::connect(&socket).await.unwrap();
        let hello = br#"{"v":1,"type":"event","from":"x/y","to":"orchestrator","payload":{"op":"hello","token":"forged","pid":1}}"#;
        s.write_all(&(hello.len() as u32).to_be_bytes()).await.unwrap();
        s.write_all(hello).await.unwrap();
        drop(s);
        // An agent whose answer is over the limit: the caller gets a structured error at once.
        let started = Instant::now();
        let e = orch
            .request("b", ev(json!({"op": "big", "bytes": 200_000})), opts(Some(20_000)))
            .await
            .unwrap_err();
        assert_eq!(e.code(), codes::PROTOCOL, "{e:?}");
        assert!(e.message().contains("exceeds the IPC frame limit of 65536"), "{e:?}");
        assert!(started.elapsed() < Duration::from_secs(10));
        // A request over the limit is refused the same way, before it reaches the agent.
        let huge = json!({"op": "echo", "value": "y".repeat(100_000)});
        let e = orch
            .request("b", ev(huge), opts(Some(20_000)))
            .await
            .unwrap_err();
        assert_eq!(e.code(), codes::PROTOCOL, "{e:?}");
        assert!(e.message().contains("request of"), "{e:?}");
        assert!(started.elapsed() < Duration::from_secs(10));
        // Everything still works, and b was not restarted.
        let r = orch
            .request("b", ev(json!({"op": "echo", "value": "ok"})), opts(None))
            .await
            .unwrap();
        assert_eq!(r.response.unwrap()["value"], "ok");
        assert_eq!(orch.restarts("b", "default"), Some(0));
        orch.shutdown(Duration::from_secs(5)).await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ho_8_graceful_shutdown_drains_in_flight_work() {
    bounded(60, async {
        let (orch, _dir) = start(swarm3(), None).await;
        orch.request("b", ev(json!({"op": "echo"})), opts(None))
            .await
            .unwrap();
        let pid = orch.pid("b", "default").unwrap();
        let caller = orch.clone();
        let slow = tokio::spawn(async move {
            caller
                .request("b", ev(json!({"op": "sleep", "ms": 400})), opts(None))
                .await
        });
        while orch.in_flight() == 0 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        orch.shutdown(Duration::from_secs(10)).await;
        assert_eq!(slow.await.unwrap().unwrap().response.unwrap()["slept"], 400);
        let e = orch
            .request("b", ev(json!({})), opts(None))
            .await
            .unwrap_err();
        assert_eq!(e.code(), codes::SHUTTING_DOWN);
        // The process is gone (kill -0 fails).
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let alive = std::process::Command::new("kill")
                .args(["-0", &pid.to_string()])
                .stderr(std::process::Stdio::null())
                .status()
                .unwrap()
                .success();
            if !alive {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "agent process {pid} survived shutdown"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ho_4_a_target_that_cannot_start_fails_with_a_structured_error() {
    bounded(30, async {
        let config = OrchestratorConfig {
            backoff_initial: Duration::from_millis(10),
            max_spawn_failures: 3,
            ..OrchestratorConfig::default()
        };
        let process = ProcessConfig::new("/nonexistent/goondan-host");
        let orch = Orchestrator::start_with(swarm3(), process, config)
            .await
            .unwrap();
        let started = Instant::now();
        let e = orch
            .request("b", ev(json!({})), opts(None))
            .await
            .unwrap_err();
        assert_eq!(e.code(), codes::SPAWN, "{e:?}");
        assert!(e.message().contains("/nonexistent/goondan-host"), "{e:?}");
        assert!(e.suggestion().is_some());
        assert!(started.elapsed() < Duration::from_secs(5));
        // The instance was given up; nothing is left waiting.
        assert_eq!(orch.in_flight(), 0);
        assert!(orch.list(true).await.unwrap().is_empty());
        orch.shutdown(Duration::from_millis(100)).await;
    })
    .await;
}
