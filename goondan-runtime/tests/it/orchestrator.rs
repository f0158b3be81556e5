//! The local Orchestrator with real agent processes: what only the local transport has (HO-7's
//! Unix-socket frames, spawning and listing from an agent process on one machine, the
//! Orchestrator's own shutdown, a program that cannot start).
//!
//! The tests that hold on both transports (handoff, trace, errors, cycles, `agents__send`,
//! `kill -9`, requested restarts, 100 concurrent requests) are written once in
//! `orchestrator_nats.rs` and run there against this Orchestrator and against a swarm on NATS.
//! Agent processes run the `goondan-test-agent-host` program (`agent_hosts/orchestrator.rs`),
//! whose worker answers by `input.op`: `echo`, `sleep`, `linger`, `ask`, `send`, `touch`, `manage`,
//! `big`.

use crate::orchestration;

use std::time::{Duration, Instant};

use goondan_runtime::agents::orchestrator::{
    Orchestrator, OrchestratorConfig, ProcessConfig, SwarmSpec, codes,
};
use goondan_runtime::tools::agent::AgentRuntime;
use serde_json::json;

use self::orchestration::{bounded, ev, opts, start_local as start, swarm_named};

fn swarm3() -> SwarmSpec {
    swarm_named("test-swarm")
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

/// Whether process `pid` is still there, a zombie not yet reaped included.
fn present(pid: u64) -> bool {
    if cfg!(target_os = "linux") {
        std::path::Path::new(&format!("/proc/{pid}")).exists()
    } else {
        std::process::Command::new("kill")
            .args(["-0", &pid.to_string()])
            .stderr(std::process::Stdio::null())
            .status()
            .unwrap()
            .success()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ho_8_shutdown_returns_once_an_agent_process_has_exited() {
    bounded(60, async {
        let (orch, dir) = start(swarm3(), None).await;
        let done = dir.path().join("linger-done");
        // The process answers at once, then works on for 500 ms after its link closes.
        let answer = orch
            .request(
                "b",
                ev(json!({"op": "linger", "ms": 500, "done": done})),
                opts(None),
            )
            .await
            .unwrap();
        let pid = answer.response.unwrap()["pid"].as_u64().unwrap();
        orch.shutdown(Duration::from_secs(10)).await;
        assert!(
            done.exists(),
            "the agent process was not let finish its work within the grace"
        );
        assert!(
            !present(pid),
            "agent process {pid} still there when shutdown returned"
        );
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ho_8_shutdown_returns_once_a_killed_agent_process_has_exited() {
    bounded(60, async {
        let (orch, dir) = start(swarm3(), None).await;
        orch.request("b", ev(json!({"op": "echo"})), opts(None))
            .await
            .unwrap();
        let pid = orch.pid("b", "default").unwrap();
        let started = dir.path().join("sleep-started");
        let caller = orch.clone();
        let busy = tokio::spawn(async move {
            caller
                .request(
                    "b",
                    ev(json!({"op": "sleep", "ms": 30_000, "started": started})),
                    opts(None),
                )
                .await
        });
        while !dir.path().join("sleep-started").exists() {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        // The grace runs out while the process is busy: it is killed.
        let begun = Instant::now();
        orch.shutdown(Duration::from_millis(300)).await;
        assert!(
            !present(u64::from(pid)),
            "agent process {pid} still there when shutdown returned"
        );
        assert!(
            begun.elapsed() < Duration::from_secs(5),
            "{:?}",
            begun.elapsed()
        );
        let e = busy.await.unwrap().unwrap_err();
        assert_eq!(e.code(), codes::SHUTTING_DOWN, "{e:?}");
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
