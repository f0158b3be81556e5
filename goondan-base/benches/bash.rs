//! `bash__exec` of `true` through the whole `execute` path (catalog gate, validation, the
//! tool, its process containment) against a raw `tokio::process::Command` running `sh -c true`
//! with its output collected, in one run on one runtime: in the sandbox (the default), without
//! it, and without it nor the per-call cgroup (`BashPolicy::use_cgroup = false`), to show what
//! each costs.
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use criterion::{Criterion, criterion_group, criterion_main};
use goondan_base::sandbox::SandboxPolicy;
use goondan_base::{Bash, BashPolicy};
use goondan_runtime::{IntoTool, ToolCall, ToolCatalog, ToolContext, ToolExecutor, ToolRegistry};
use serde_json::json;

fn executor(policy: BashPolicy) -> (ToolExecutor, ToolCatalog) {
    let registry = Arc::new(
        ToolRegistry::builder()
            .tool(Bash::new(policy).into_tool())
            .build()
            .unwrap(),
    );
    let catalog = ToolCatalog::build(&registry, ["bash"]).unwrap();
    (ToolExecutor::new(registry), catalog)
}

fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let workdir = tempfile::tempdir().unwrap();
    let ctx = ToolContext::builder(workdir.path()).build();
    let call = ToolCall::new("c1", "bash__exec", json!({"command": "true"}));
    let sandboxed = executor(BashPolicy::default());
    let with_cgroup = executor(BashPolicy {
        sandbox: SandboxPolicy::off(),
        ..BashPolicy::default()
    });
    let without_cgroup = executor(BashPolicy {
        use_cgroup: false,
        sandbox: SandboxPolicy::off(),
        ..BashPolicy::default()
    });
    for (executor, catalog) in [&sandboxed, &with_cgroup, &without_cgroup] {
        let result = rt.block_on(executor.execute(call.clone(), &ctx, catalog));
        assert_eq!(result.output.as_ref().unwrap()["exitCode"], 0, "{result:?}");
    }

    let mut group = c.benchmark_group("bash__exec true");
    group.sample_size(40);
    group.bench_function("raw sh -c true", |b| {
        b.to_async(&rt).iter(|| async {
            let out = tokio::process::Command::new("sh")
                .arg("-c")
                .arg("true")
                .current_dir(workdir.path())
                .output()
                .await
                .unwrap();
            assert!(out.status.success());
        })
    });
    for (label, (executor, catalog)) in [
        ("goondan bash__exec, sandboxed", &sandboxed),
        ("goondan bash__exec", &with_cgroup),
        ("goondan bash__exec, no cgroup", &without_cgroup),
    ] {
        group.bench_function(label, |b| {
            b.to_async(&rt).iter(|| async {
                let r = executor.execute(call.clone(), &ctx, catalog).await;
                assert!(r.is_ok());
            })
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
