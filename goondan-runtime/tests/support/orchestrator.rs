//! What the tests of the Orchestrator share, on either transport: the swarm `a`, `b`, `c` of
//! the `goondan-test-agent-host` program (`agent_hosts/orchestrator.rs`), a local Orchestrator
//! running it, request options and a bound on every test.
//!
//! Include it with `#[path = "support/orchestrator.rs"] mod orchestration;`.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::future::Future;
use std::time::Duration;

use goondan_runtime::agents::orchestrator::{
    Orchestrator, OrchestratorConfig, ProcessConfig, SwarmSpec,
};
use goondan_runtime::tools::agent::{AgentEvent, RequestOptions};
use serde_json::Value;

/// The program of the agent processes (and of the NATS hosts).
pub(crate) const HOST_BIN: &str = env!("CARGO_BIN_EXE_goondan-test-agent-host");

/// Request options with a timeout.
pub(crate) fn opts(timeout_ms: Option<u64>) -> RequestOptions {
    RequestOptions {
        timeout_ms,
        ..RequestOptions::default()
    }
}

/// An `agent.request` event whose input tells the test agent what to do.
pub(crate) fn ev(input: Value) -> AgentEvent {
    AgentEvent::new("agent.request", input)
}

/// Swarm `name`: agents `a` (the entry), `b`, `c`, all callable.
pub(crate) fn swarm_named(name: &str) -> SwarmSpec {
    SwarmSpec::new(name, "a").agent("a").agent("b").agent("c")
}

/// Every test is bounded: a hang fails the test instead of blocking CI.
pub(crate) async fn bounded<F: Future<Output = ()>>(secs: u64, f: F) {
    tokio::time::timeout(Duration::from_secs(secs), f)
        .await
        .expect("the test did not finish in time");
}

/// A local Orchestrator of `swarm`, its agents processes of [`HOST_BIN`] in a fresh working
/// directory, with an IPC frame limit when given.
pub(crate) async fn start_local(
    swarm: SwarmSpec,
    frame_limit: Option<usize>,
) -> (Orchestrator, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let mut process = ProcessConfig::new(HOST_BIN);
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
