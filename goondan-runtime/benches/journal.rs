//! The run journal's cost per tool call (issue 25, item 6): one Turn of ten calls of a trivial
//! tool (one Step of calls, then the answer), run without a journal and with each backend, in
//! the same run. Criterion reports the time per call (`Throughput::Elements(10)`); the
//! journal's cost per call is the difference to `plain` (admission, start and result of each
//! call, plus its share of the Turn's input, the two model answers and the Turn's end).
//!
//! - `plain`: no journal, the floor.
//! - `memory`: [`MemoryJournal`], the step loop's own share (records built, cloned, replayable).
//! - `sqlite_normal`: [`SqliteJournal`] with `synchronous = NORMAL` (survives a killed
//!   process; the default).
//! - `sqlite_full`: `synchronous = FULL` (survives a power loss: a disk flush per write).
#![allow(
    missing_docs,
    unreachable_pub,
    clippy::unwrap_used,
    clippy::expect_used
)]

use std::sync::Arc;

use criterion::{BatchSize, Criterion, Throughput};
use goondan_runtime::prelude::*;
use goondan_runtime::step::journal::{Durability, Journal, MemoryJournal, SqliteJournal};
use goondan_runtime::step::{AgentInstance, Model, ModelFuture, ModelRequest, ModelResponse};
use serde_json::json;

const CALLS: usize = 10;

/// Adds.
#[tool(name = "calc")]
pub fn add(a: i64, b: i64) -> i64 {
    a + b
}

/// Step 0: ten calls; then the answer.
struct TenCalls;

impl Model for TenCalls {
    fn respond<'a>(&'a self, request: &'a ModelRequest) -> ModelFuture<'a> {
        let response = if request.step == 0 {
            ModelResponse::calls(
                (0..CALLS)
                    .map(|i| ToolCall::new(format!("c{i}"), "calc__add", json!({"a": i, "b": 1}))),
            )
        } else {
            ModelResponse::text("done")
        };
        Box::pin(async move { Ok(response) })
    }
}

#[derive(Clone, Copy)]
enum Backend {
    Plain,
    Memory,
    Sqlite(Durability),
}

/// A fresh instance (and journal) per Turn, so every Turn starts from the same state.
struct Setup {
    agent: AgentInstance,
    _dir: tempfile::TempDir,
}

fn setup(registry: &Arc<ToolRegistry>, backend: Backend) -> Setup {
    let dir = tempfile::tempdir().unwrap();
    let mut builder = AgentInstance::builder("bench", Arc::clone(registry), Arc::new(TenCalls))
        .tools(["calc"])
        .state_dir(dir.path());
    let journal: Option<Arc<dyn Journal>> = match backend {
        Backend::Plain => None,
        Backend::Memory => Some(Arc::new(MemoryJournal::new())),
        Backend::Sqlite(durability) => {
            let file = SqliteJournal::file_in(dir.path(), "bench", "default");
            Some(Arc::new(SqliteJournal::open(file, durability).unwrap()))
        }
    };
    if let Some(journal) = journal {
        builder = builder.journal(journal);
    }
    Setup {
        agent: builder.build().unwrap(),
        _dir: dir,
    }
}

fn main() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let registry = Arc::new(ToolRegistry::builder().tool(add::TOOL).build().unwrap());
    let mut c = Criterion::default().configure_from_args();
    let mut group = c.benchmark_group("journal");
    group.throughput(Throughput::Elements(CALLS as u64));
    for (name, backend) in [
        ("plain", Backend::Plain),
        ("memory", Backend::Memory),
        ("sqlite_normal", Backend::Sqlite(Durability::Normal)),
        ("sqlite_full", Backend::Sqlite(Durability::Full)),
    ] {
        group.bench_function(name, |b| {
            b.to_async(&rt).iter_batched(
                || setup(&registry, backend),
                |s| async move {
                    let turn = s.agent.run_turn("add them").await.unwrap();
                    assert_eq!(turn.steps[0].results.len(), CALLS);
                    s
                },
                BatchSize::PerIteration,
            );
        });
    }
    group.finish();
    c.final_summary();
}
