//! 10,000 concurrent calls of a tool that awaits 10 ms, each in its own task, through
//! `execute`: wall time against the ideal (10 ms plus the sequential floor, the same 10,000
//! calls of a tool that does not sleep, one after another), and against 10,000 bare tokio
//! tasks sleeping 10 ms, in one run. Peak memory is measured by
//! `examples/profile_concurrency.rs` (`scripts/perf-table` runs both).
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use goondan_runtime::{
    Export, Tool, ToolCall, ToolCatalog, ToolContext, ToolError, ToolExecutor, ToolRegistry,
};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

const CALLS: usize = 10_000;

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct WaitIn {
    /// How long to wait, in milliseconds.
    ms: u64,
}

fn setup() -> (ToolExecutor, ToolCatalog) {
    let tool = Tool::builder("clock")
        .export(Export::typed("wait", |_ctx, input: WaitIn| async move {
            if input.ms > 0 {
                tokio::time::sleep(Duration::from_millis(input.ms)).await;
            }
            Ok::<_, ToolError>(input.ms)
        }))
        .build()
        .unwrap();
    let registry = Arc::new(ToolRegistry::builder().tool(tool).build().unwrap());
    let catalog = ToolCatalog::build(&registry, ["clock"]).unwrap();
    (ToolExecutor::new(registry), catalog)
}

fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let (executor, catalog) = setup();
    let catalog = Arc::new(catalog);
    let ctx = ToolContext::builder(std::env::temp_dir()).build();
    let call = |ms: u64| ToolCall::new("c", "clock__wait", json!({ "ms": ms }));
    assert_eq!(
        rt.block_on(executor.execute(call(1), &ctx, &catalog))
            .output,
        Some(json!(1))
    );

    let mut group = c.benchmark_group("concurrency: 10,000 calls of a 10 ms tool");
    group.sample_size(10);
    group.bench_function("goondan execute, 10,000 tasks at once", |b| {
        b.to_async(&rt).iter(|| async {
            let mut tasks = tokio::task::JoinSet::new();
            for _ in 0..CALLS {
                let (executor, catalog, ctx) =
                    (executor.clone(), Arc::clone(&catalog), ctx.clone());
                tasks.spawn(async move { executor.execute(call(10), &ctx, &catalog).await });
            }
            let mut ok = 0;
            while let Some(result) = tasks.join_next().await {
                ok += usize::from(result.unwrap().is_ok());
            }
            assert_eq!(ok, CALLS);
        })
    });
    group.bench_function("tokio, 10,000 tasks sleeping 10 ms", |b| {
        b.to_async(&rt).iter(|| async {
            let mut tasks = tokio::task::JoinSet::new();
            for _ in 0..CALLS {
                tasks.spawn(tokio::time::sleep(Duration::from_millis(10)));
            }
            while tasks.join_next().await.is_some() {}
        })
    });
    group.bench_function("sequential floor, 10,000 calls that do not sleep", |b| {
        b.to_async(&rt).iter(|| async {
            for _ in 0..CALLS {
                assert!(executor.execute(call(0), &ctx, &catalog).await.is_ok());
            }
        })
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
