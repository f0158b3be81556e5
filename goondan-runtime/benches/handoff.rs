//! Handoff cost with real agent processes: a warm request round trip (host -> Orchestrator ->
//! agent process -> back) against the floor of a raw pipe echo through `cat` with the same
//! framing, measured in the same run; the same request with the agent as an in-process task
//! (routing without IPC); and a cold spawn (process start, connect, first answer).
//!
//! This binary is also the agent host: the Orchestrator re-executes it in agent mode.
#![allow(
    missing_docs,
    unreachable_pub,
    clippy::unwrap_used,
    clippy::expect_used
)]

use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::Criterion;
use goondan_runtime::agents::orchestrator::ipc::{self, IpcMessage, MessageType};
use goondan_runtime::agents::orchestrator::{
    Orchestrator, OrchestratorConfig, ProcessConfig, SwarmSpec, agent_mode, worker_fn,
};
use goondan_runtime::tools::agent::{AgentEvent, AgentRuntime, RequestOptions};
use serde_json::json;

fn swarm() -> SwarmSpec {
    SwarmSpec::new("bench", "echo").agent("echo")
}

async fn start() -> Orchestrator {
    let config = OrchestratorConfig {
        workdir: std::env::temp_dir(),
        ..OrchestratorConfig::default()
    };
    Orchestrator::start_with(swarm(), ProcessConfig::current_exe().unwrap(), config)
        .await
        .unwrap()
}

fn event() -> AgentEvent {
    AgentEvent::new("agent.request", json!({"text": "hello"}))
}

fn bench_warm(c: &mut Criterion, rt: &tokio::runtime::Runtime) {
    let orch = rt.block_on(async {
        let orch = start().await;
        orch.request("echo", event(), RequestOptions::default())
            .await
            .unwrap();
        orch
    });
    let mut group = c.benchmark_group("handoff");
    group.bench_function("warm_request_round_trip", |b| {
        b.to_async(rt).iter(|| async {
            orch.request("echo", event(), RequestOptions::default())
                .await
                .unwrap()
        });
    });

    // The same routing with the agent as a task of this process: what the IPC hop adds.
    let inproc = rt.block_on(async {
        Orchestrator::in_process(swarm(), OrchestratorConfig::default(), |_id| {
            worker_fn(|event, _ctx| async move { Ok(event.input) })
        })
        .unwrap()
    });
    group.bench_function("in_process_request_round_trip", |b| {
        b.to_async(rt).iter(|| async {
            inproc
                .request("echo", event(), RequestOptions::default())
                .await
                .unwrap()
        });
    });

    // The floor: one frame through a pipe to `cat` and back.
    let (stdin, stdout, _child) = rt.block_on(async {
        let mut child = tokio::process::Command::new("cat")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let stdout = child.stdout.take().unwrap();
        (stdin, stdout, child)
    });
    let pipe = Arc::new(tokio::sync::Mutex::new((
        stdin,
        ipc::frame_reader(stdout, usize::MAX),
    )));
    let msg = IpcMessage::new(
        MessageType::Delegate,
        "orchestrator",
        "echo/default",
        json!({"event": event()}),
        Some("c-1".into()),
    );
    group.bench_function("raw_pipe_echo_floor", |b| {
        b.to_async(rt).iter_custom(|iters| {
            let (pipe, msg) = (Arc::clone(&pipe), msg.clone());
            async move {
                let mut pipe = pipe.lock().await;
                let (stdin, stdout) = &mut *pipe;
                let started = Instant::now();
                for _ in 0..iters {
                    ipc::write_frame(stdin, &msg, usize::MAX).await.unwrap();
                    ipc::read_frame(stdout).await.unwrap();
                }
                started.elapsed()
            }
        });
    });
    group.finish();
    rt.block_on(orch.shutdown(Duration::from_secs(5)));
    rt.block_on(inproc.shutdown(Duration::from_secs(5)));
}

fn bench_cold(c: &mut Criterion, rt: &tokio::runtime::Runtime) {
    let mut group = c.benchmark_group("handoff");
    group.sample_size(10);
    group.warm_up_time(Duration::from_secs(1));
    group.measurement_time(Duration::from_secs(8));
    group.bench_function("cold_spawn_first_answer", |b| {
        b.to_async(rt).iter_custom(|iters| async move {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                let orch = start().await;
                let started = Instant::now();
                orch.request("echo", event(), RequestOptions::default())
                    .await
                    .unwrap();
                total += started.elapsed();
                orch.shutdown(Duration::from_secs(5)).await;
            }
            total
        });
    });
    group.finish();
}

fn main() {
    agent_mode::run_if_requested(|_me| worker_fn(|event, _ctx| async move { Ok(event.input) }));
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let mut c = Criterion::default().configure_from_args();
    bench_warm(&mut c, &rt);
    bench_cold(&mut c, &rt);
    c.final_summary();
}
