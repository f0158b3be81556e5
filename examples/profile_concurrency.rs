//! Peak memory of 10,000 concurrent calls of a tool that awaits 10 ms, each in its own task:
//! `profile_concurrency goondan [ROUNDS]` runs them through `execute`, `profile_concurrency
//! tokio [ROUNDS]` runs 10,000 bare tokio tasks sleeping 10 ms (the runtime's own floor). Prints
//! the process's peak resident memory before and after (VmHWM, Linux), and the wall time of
//! the last round. `scripts/perf-table` puts the figures in docs/benchmarks.md.
#![allow(
    missing_docs,
    unreachable_pub,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout
)]
use std::sync::Arc;
use std::time::{Duration, Instant};

use goondan_runtime::prelude::*;
use goondan_runtime::{ToolCatalog, ToolExecutor};

const CALLS: usize = 10_000;

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WaitIn {
    /// How long to wait, in milliseconds.
    ms: u64,
}

#[tool(name = "clock")]
mod clock {
    use super::*;
    /// Waits.
    pub async fn wait(input: WaitIn) -> u64 {
        tokio::time::sleep(Duration::from_millis(input.ms)).await;
        input.ms
    }
}

/// The process's peak resident set, in KiB.
fn peak_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse().ok())
        })
        .unwrap_or(0)
}

fn main() {
    let mode = std::env::args().nth(1).unwrap_or_else(|| "goondan".into());
    let rounds: usize = std::env::args()
        .nth(2)
        .map(|s| s.parse().unwrap())
        .unwrap_or(3);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let registry = Arc::new(ToolRegistry::builder().tool(clock::TOOL).build().unwrap());
    let catalog = Arc::new(ToolCatalog::build(&registry, ["clock"]).unwrap());
    let executor = ToolExecutor::new(Arc::clone(&registry));
    let ctx = ToolContext::builder(std::env::temp_dir()).build();
    let before = peak_kib();
    let mut wall = Duration::ZERO;
    for _ in 0..rounds {
        let started = Instant::now();
        rt.block_on(async {
            let mut tasks = tokio::task::JoinSet::new();
            for i in 0..CALLS {
                if mode == "tokio" {
                    tasks.spawn(async {
                        tokio::time::sleep(Duration::from_millis(10)).await;
                        true
                    });
                } else {
                    let (executor, catalog, ctx) =
                        (executor.clone(), Arc::clone(&catalog), ctx.clone());
                    let call = ToolCall::new(
                        format!("c{i}"),
                        "clock__wait",
                        serde_json::json!({"ms": 10}),
                    );
                    tasks
                        .spawn(async move { executor.execute(call, &ctx, &catalog).await.is_ok() });
                }
            }
            let mut ok = 0;
            while let Some(done) = tasks.join_next().await {
                ok += usize::from(done.unwrap());
            }
            assert_eq!(ok, CALLS);
        });
        wall = started.elapsed();
    }
    let after = peak_kib();
    println!(
        "{mode}: peak RSS {:.1} MiB (before the calls {:.1} MiB), last round {:.1} ms",
        after as f64 / 1024.0,
        before as f64 / 1024.0,
        wall.as_secs_f64() * 1000.0
    );
}
