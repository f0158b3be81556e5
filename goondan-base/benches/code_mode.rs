//! Code mode against the classic loop on tasks over the base tools (issue 52), measured side
//! by side: `GOONDAN_CODE_MODE_TASKS=<file> cargo bench -p goondan-base --bench code_mode`
//! runs every task of `tests/support/code_mode_tasks.rs` both ways (the measuring is
//! goondan-runtime's `benches/common/code_mode_measure.rs`, as for BFCL's tasks) and writes
//! its rows to the file, which `scripts/code-mode-table` reads.
#![allow(
    missing_docs,
    unreachable_pub,
    clippy::unwrap_used,
    clippy::expect_used
)]

#[path = "../tests/support/code_mode_tasks.rs"]
mod tasks;

#[path = "../../goondan-runtime/benches/common/code_mode_measure.rs"]
mod measure;

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use goondan_runtime::step::{Model, ModelResponse};

struct Base;

impl measure::TaskSet for Base {
    type Task = tasks::Task;
    type Way = tasks::Way;
    const WAYS: [tasks::Way; 2] = [tasks::Way::Classic, tasks::Way::Code];

    fn id(task: &tasks::Task) -> String {
        task.id.to_owned()
    }

    fn calls(task: &tasks::Task) -> Vec<usize> {
        task.turns.iter().map(|t| t.calls.len()).collect()
    }

    fn script(task: &tasks::Task, way: tasks::Way) -> Vec<ModelResponse> {
        tasks::script(task, way)
    }

    fn run<'a>(
        task: &'a tasks::Task,
        way: tasks::Way,
        model: Arc<dyn Model>,
    ) -> Pin<Box<dyn Future<Output = measure::Ran> + 'a>> {
        Box::pin(async move {
            let outcome = tasks::run(task, way, model).await;
            measure::Ran {
                record: outcome.record,
                turns: outcome.turns,
                failures: outcome.failures.len(),
            }
        })
    }
}

fn main() {
    let Some(path) = std::env::var_os("GOONDAN_CODE_MODE_TASKS") else {
        eprintln!("GOONDAN_CODE_MODE_TASKS=<file>: where the rows go (scripts/code-mode-table)");
        return;
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let rows = measure::measure::<Base>(&rt, &tasks::tasks());
    std::fs::write(&path, serde_json::to_string_pretty(&rows).unwrap()).unwrap();
}
