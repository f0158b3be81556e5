//! A bridged stdio MCP server's start: `goondan mcp serve --tools text-transform` spawned,
//! `initialize` answered and its tools listed (`McpExtension::connect`), in the sandbox a
//! bridged server gets by default (`ServerSandbox`) and as the host runs it, in one run.
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use criterion::{Criterion, criterion_group, criterion_main};
use goondan_base::sandbox::ServerSandbox;
use goondan_runtime::mcp::client::{McpExtension, McpExtensionConfig, McpServerConfig};

fn server(sandbox: Option<&ServerSandbox>) -> McpExtensionConfig {
    let mut server = McpServerConfig::stdio("texts", env!("CARGO_BIN_EXE_goondan")).args([
        "mcp",
        "serve",
        "--tools",
        "text-transform",
    ]);
    if let Some(sandbox) = sandbox {
        server = server.launcher(sandbox.clone());
    }
    McpExtensionConfig::new("mcp").server(server)
}

fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let workdir = tempfile::tempdir().unwrap();
    let sandbox = ServerSandbox::new(ServerSandbox::default_policy(), workdir.path());
    let mut group = c.benchmark_group("bridged stdio server start");
    group.sample_size(20);
    for (label, sandbox) in [
        ("goondan mcp serve, sandboxed", Some(&sandbox)),
        ("goondan mcp serve", None),
    ] {
        group.bench_function(label, |b| {
            b.to_async(&rt).iter(|| async {
                let mcp = McpExtension::connect(server(sandbox)).await.unwrap();
                drop(mcp);
            })
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
