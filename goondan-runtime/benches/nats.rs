//! A warm request round trip over NATS against the local Unix-socket transport, in the same
//! run: the entry side (a `NatsSwarm`) -> nats-server (loopback) -> the `AgentHost` serving the
//! agent -> its local Orchestrator -> the agent process, and back; against the host's
//! Orchestrator -> agent process and back. What `agents__request` waits for on each transport.
//!
//! This binary is also the agent host: the Orchestrators re-execute it in agent mode. It
//! starts its own `nats-server` (`scripts/nats-server` installs it when missing).
#![allow(
    missing_docs,
    unreachable_pub,
    clippy::unwrap_used,
    clippy::expect_used
)]

use goondan_test_peers::nats;

use std::time::Duration;

use criterion::Criterion;
use goondan_runtime::agents::orchestrator::nats::{AgentHost, NatsOptions, NatsSwarm};
use goondan_runtime::agents::orchestrator::{
    Orchestrator, OrchestratorConfig, ProcessConfig, SwarmSpec, agent_mode, worker_fn,
};
use goondan_runtime::tools::agent::{AgentEvent, AgentRuntime, RequestOptions};
use serde_json::json;

fn swarm() -> SwarmSpec {
    SwarmSpec::new("bench", "echo").agent("echo")
}

fn config() -> OrchestratorConfig {
    OrchestratorConfig {
        workdir: std::env::temp_dir(),
        ..OrchestratorConfig::default()
    }
}

fn event() -> AgentEvent {
    AgentEvent::new("agent.request", json!({"text": "hello"}))
}

fn main() {
    agent_mode::run_if_requested(|_me| worker_fn(|event, _ctx| async move { Ok(event.input) }));
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let server = nats::NatsServer::start();
    let (local, host, entry) = rt.block_on(async {
        let local =
            Orchestrator::start_with(swarm(), ProcessConfig::current_exe().unwrap(), config())
                .await
                .unwrap();
        let options = NatsOptions::new(&server.url);
        let host = AgentHost::start(
            &options,
            swarm(),
            &["echo".to_owned()],
            ProcessConfig::current_exe().unwrap(),
            config(),
        )
        .await
        .unwrap();
        let entry = NatsSwarm::connect(&options, swarm()).await.unwrap();
        // Warm: both agent processes started.
        local
            .request("echo", event(), RequestOptions::default())
            .await
            .unwrap();
        entry
            .request("echo", event(), RequestOptions::default())
            .await
            .unwrap();
        (local, host, entry)
    });
    let mut c = Criterion::default().configure_from_args();
    let mut group = c.benchmark_group("nats");
    group.bench_function("warm_request_local_socket", |b| {
        b.to_async(&rt).iter(|| async {
            local
                .request("echo", event(), RequestOptions::default())
                .await
                .unwrap()
        });
    });
    group.bench_function("warm_request_over_nats", |b| {
        b.to_async(&rt).iter(|| async {
            entry
                .request("echo", event(), RequestOptions::default())
                .await
                .unwrap()
        });
    });
    group.finish();
    rt.block_on(async {
        local.shutdown(Duration::from_secs(5)).await;
        host.shutdown(Duration::from_secs(5)).await;
    });
    drop(server);
    c.final_summary();
}
