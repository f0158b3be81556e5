//! Code mode against the classic loop, measured side by side (issue 52).
//!
//! - With `GOONDAN_CODE_MODE_TASKS=<file>`: every BFCL multi-turn base task whose every turn
//!   has a ground-truth call (`tests/support/bfcl_tasks.rs`), run both ways against BFCL's own
//!   API classes (`common/code_mode_measure.rs` says what is counted and how). For each turn
//!   of each way: its calls, model round trips, tokens sent and received, and wall time; and
//!   per task whether all four runs left the same calls, results and state. Written to the
//!   file as JSON, which `scripts/code-mode-table` reads.
//! - Criterion, group `code_mode_call`: one call of a trivial tool made directly through the
//!   executor; Turns whose one model response makes 1 or 11 such calls directly; Turns whose
//!   one program makes 1 or 11 such calls. The difference between 11 and 1, over 10, is the
//!   cost of one more call, each way.
#![allow(
    missing_docs,
    unreachable_pub,
    clippy::unwrap_used,
    clippy::expect_used
)]

#[path = "../tests/support/bfcl_tasks.rs"]
mod bfcl;

use std::future::Future;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::{Arc, OnceLock};

use criterion::{BatchSize, Criterion};
use goondan_runtime::code::{CodeMode, TOOL_NAME};
use goondan_runtime::prelude::*;
use goondan_runtime::step::{AgentInstance, Model, ModelResponse, ScriptedModel};
use goondan_runtime::{ToolCatalog, ToolContext, ToolExecutor};
use serde_json::json;

/// Adds two numbers: the trivial tool of the per-call measurements.
#[tool(name = "calc")]
pub fn add(a: i64, b: i64) -> i64 {
    a + b
}

#[path = "common/code_mode_measure.rs"]
mod measure;

/// BFCL's multi-turn base tasks, from `scripts/bfcl-data`.
struct Bfcl;

fn data() -> &'static Path {
    static DATA: OnceLock<PathBuf> = OnceLock::new();
    DATA.get_or_init(bfcl::data_dir)
}

impl measure::TaskSet for Bfcl {
    type Task = bfcl::Task;
    type Way = bfcl::Way;
    const WAYS: [bfcl::Way; 2] = [bfcl::Way::Classic, bfcl::Way::Code];

    fn id(task: &bfcl::Task) -> String {
        task.id.clone()
    }

    fn calls(task: &bfcl::Task) -> Vec<usize> {
        task.turns.iter().map(|t| t.calls.len()).collect()
    }

    fn script(task: &bfcl::Task, way: bfcl::Way) -> Vec<ModelResponse> {
        bfcl::script(task, way)
    }

    fn run<'a>(
        task: &'a bfcl::Task,
        way: bfcl::Way,
        model: Arc<dyn Model>,
    ) -> Pin<Box<dyn Future<Output = measure::Ran> + 'a>> {
        Box::pin(async move {
            let outcome = bfcl::run(data(), task, way, model).await;
            measure::Ran {
                record: outcome.record,
                turns: outcome.turns,
                failures: outcome.failures.len(),
            }
        })
    }
}

/// A Turn whose first response is `response`, then an answer, on an agent with code mode.
fn turn_setup(response: ModelResponse) -> (AgentInstance, tempfile::TempDir) {
    let model = Arc::new(ScriptedModel::new([response, ModelResponse::text("done")]));
    let registry = Arc::new(ToolRegistry::builder().tool(add::TOOL).build().unwrap());
    let state = tempfile::tempdir().unwrap();
    let agent = AgentInstance::builder("bench", registry, model)
        .tools(["calc"])
        .code_mode(CodeMode::new())
        .state_dir(state.path())
        .build()
        .unwrap();
    (agent, state)
}

fn direct(n: usize) -> ModelResponse {
    ModelResponse::calls(
        (0..n).map(|i| ToolCall::new(format!("c{i}"), "calc__add", json!({"a": i, "b": 1}))),
    )
}

fn program(n: usize) -> ModelResponse {
    let code = (0..n)
        .map(|i| format!("calc.add(a={i}, b=1)"))
        .collect::<Vec<_>>()
        .join("\n");
    ModelResponse::calls([ToolCall::new("c0", TOOL_NAME, json!({ "code": code }))])
}

fn bench_calls(c: &mut Criterion, rt: &tokio::runtime::Runtime) {
    let mut group = c.benchmark_group("code_mode_call");
    let registry = Arc::new(ToolRegistry::builder().tool(add::TOOL).build().unwrap());
    let executor = ToolExecutor::new(Arc::clone(&registry));
    let catalog = ToolCatalog::build(&registry, ["calc"]).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let ctx = ToolContext::builder(dir.path()).build();
    group.bench_function("executor", |b| {
        b.to_async(rt).iter(|| async {
            let call = ToolCall::new("c0", "calc__add", json!({"a": 1, "b": 1}));
            executor.execute(call, &ctx, &catalog).await
        })
    });
    for n in [1, 11] {
        for (name, response) in [
            ("direct", direct as fn(usize) -> ModelResponse),
            ("program", program),
        ] {
            group.bench_function(format!("{name}/{n}"), |b| {
                b.to_async(rt).iter_batched(
                    || {
                        // Building an agent may start tasks: inside the runtime.
                        let _runtime = rt.enter();
                        turn_setup(response(n))
                    },
                    // The agent and its folder are dropped after the timing.
                    |(agent, state)| async move {
                        let turn = agent.run_turn("go").await.unwrap();
                        assert!(turn.steps[0].results.iter().all(|r| r.error.is_none()));
                        (agent, state)
                    },
                    BatchSize::SmallInput,
                )
            });
        }
    }
    group.finish();
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    if let Some(path) = std::env::var_os("GOONDAN_CODE_MODE_TASKS") {
        let rows = measure::measure::<Bfcl>(&rt, &bfcl::tasks(data()));
        std::fs::write(&path, serde_json::to_string_pretty(&rows).unwrap()).unwrap();
    }
    let mut c = Criterion::default().configure_from_args();
    bench_calls(&mut c, &rt);
    c.final_summary();
}
