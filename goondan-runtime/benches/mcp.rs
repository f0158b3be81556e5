//! MCP over an in-process duplex, measured in one run against rmcp's own server (a stored
//! `ToolRouter` built with rmcp's macros, which are a dev-dependency only):
//!
//! - `tools/call` of one trivial tool (`{text}` in, the text out);
//! - `tools/list` of 50 tools.
//!
//! Both servers are driven by the same rmcp client with raw `ClientRequest`s, so the client's
//! `tools/list` cache never answers in the server's place. The goal (issue "MCP both ways"):
//! goondan at most 0.5x rmcp's time for both.
//!
//! `ping` on each server is the floor both share: rmcp's service loop and JSON-RPC framing over
//! the same duplex, with no handler work at all. Whatever a handler does, a request costs at
//! least that.
//!
//! `cargo bench -p goondan-runtime --bench mcp`
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use criterion::{Criterion, criterion_group, criterion_main};
use goondan_runtime::mcp::server::McpServer;
use goondan_runtime::{Export, Tool, ToolError, ToolRegistry};
use rmcp::ServiceExt;
use rmcp::model::{
    CallToolRequestParams, ClientRequest, ListToolsRequest, PaginatedRequestParams, Request,
    ServerResult,
};
use rmcp::service::{RoleClient, RunningService};
use serde_json::{Map, Value, json};

#[path = "common/rmcp_fifty.rs"]
mod rmcp_fifty;

use rmcp_fifty::{EchoInput, RmcpServer};

// ---- goondan: the same 50 tools through registry, catalog and executor -----------------------

fn echo_export(name: &str) -> Export {
    Export::typed(name, |_ctx, input: EchoInput| async move {
        Ok::<_, ToolError>(input.text)
    })
    .with_description("Gives the text back.")
}

fn goondan_server() -> McpServer {
    let mut builder = ToolRegistry::builder().tool(
        Tool::builder("text")
            .export(echo_export("echo"))
            .build()
            .unwrap(),
    );
    for i in 1..50 {
        builder = builder.tool(
            Tool::builder(format!("r{i}"))
                .export(echo_export("echo"))
                .build()
                .unwrap(),
        );
    }
    McpServer::builder(Arc::new(builder.build().unwrap()))
        .build()
        .unwrap()
}

// ---- the client and the measured requests ----------------------------------------------------

type Client = RunningService<RoleClient, ()>;

async fn connect_goondan() -> Client {
    let (client_io, server_io) = tokio::io::duplex(64 * 1024);
    tokio::spawn(async move {
        if let Ok(running) = goondan_server().serve(server_io).await {
            let _ = running.waiting().await;
        }
    });
    ().serve(client_io).await.unwrap()
}

async fn connect_rmcp() -> Client {
    let (client_io, server_io) = tokio::io::duplex(64 * 1024);
    tokio::spawn(async move {
        if let Ok(running) = RmcpServer::new().serve(server_io).await {
            let _ = running.waiting().await;
        }
    });
    ().serve(client_io).await.unwrap()
}

async fn call(client: &Client, name: &'static str) -> Value {
    let mut args = Map::new();
    args.insert("text".into(), json!("hello"));
    let params = CallToolRequestParams::new(name).with_arguments(args);
    let answer = client
        .peer()
        .send_request(ClientRequest::CallToolRequest(Request::new(params)))
        .await
        .unwrap();
    let ServerResult::CallToolResult(result) = answer else {
        panic!("not a tools/call result: {answer:?}");
    };
    assert_ne!(result.is_error, Some(true), "{result:?}");
    serde_json::to_value(&result.content).unwrap()
}

async fn ping(client: &Client) {
    let request = ClientRequest::PingRequest(rmcp::model::PingRequest {
        method: Default::default(),
        extensions: Default::default(),
    });
    let answer = client.peer().send_request(request).await.unwrap();
    assert!(matches!(answer, ServerResult::EmptyResult(_)), "{answer:?}");
}

async fn list(client: &Client) -> usize {
    let request = ClientRequest::ListToolsRequest(ListToolsRequest {
        method: Default::default(),
        params: Some(PaginatedRequestParams::default()),
        extensions: Default::default(),
    });
    let answer = client.peer().send_request(request).await.unwrap();
    let ServerResult::ListToolsResult(result) = answer else {
        panic!("not a tools/list result: {answer:?}");
    };
    result.tools.len()
}

fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let goondan = rt.block_on(connect_goondan());
    let rmcp = rt.block_on(connect_rmcp());
    // Both answer the same thing before anything is timed.
    rt.block_on(async {
        assert_eq!(
            call(&goondan, "text__echo").await,
            call(&rmcp, "echo").await
        );
        assert_eq!(list(&goondan).await, 50);
        assert_eq!(list(&rmcp).await, 50);
    });

    let mut group = c.benchmark_group("mcp ping (the shared floor)");
    group.bench_function("goondan", |b| b.to_async(&rt).iter(|| ping(&goondan)));
    group.bench_function("rmcp router", |b| b.to_async(&rt).iter(|| ping(&rmcp)));
    group.finish();

    let mut group = c.benchmark_group("mcp tools/call, one trivial tool");
    group.bench_function("goondan", |b| {
        b.to_async(&rt).iter(|| call(&goondan, "text__echo"));
    });
    group.bench_function("rmcp router", |b| {
        b.to_async(&rt).iter(|| call(&rmcp, "echo"));
    });
    group.finish();

    let mut group = c.benchmark_group("mcp tools/list, 50 tools");
    group.bench_function("goondan", |b| b.to_async(&rt).iter(|| list(&goondan)));
    group.bench_function("rmcp router", |b| b.to_async(&rt).iter(|| list(&rmcp)));
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
