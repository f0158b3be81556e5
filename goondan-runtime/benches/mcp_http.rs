//! MCP over Streamable HTTP on 127.0.0.1, under load, side by side with rmcp's own server
//! (rmcp's macros are a dev-dependency only), each serving the same 50 tools: 50 concurrent
//! clients call one trivial tool (`{text}` in, the text out) for a fixed time; requests per
//! second and p50/p99 latency for each server, in two modes:
//!
//! - `stateless`: 2026-07-28 requests, each standing alone (no session);
//! - `sessions`: 2025-11-25 clients, each with its own session, initialised once.
//!
//! Both servers run on the same hyper accept loop shape, in this process, one after the other,
//! so they share the machine the same way: each is warmed up for a second, then measured in eight
//! rounds of two slices in the order ours, rmcp, rmcp, ours, so neither gains from its place in
//! the run and a change in the machine's speed falls on both alike. Besides the figures of all
//! rounds together, each round's ratios are taken, and their median and range printed: the
//! median is not moved by one slice the machine slowed.
//! Goal: at least rmcp's throughput and no worse p99.
//!
//! `cargo bench -p goondan-runtime --bench mcp_http [-- SECONDS]` prints a table and writes
//! `target/mcp-http-load.json` for `scripts/perf-table`.
#![allow(
    missing_docs,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout
)]

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use goondan_runtime::mcp::server::McpServer;
use goondan_runtime::{Export, Tool, ToolError, ToolRegistry};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use serde_json::{Value, json};

const CLIENTS: usize = 50;

#[path = "common/rmcp_fifty.rs"]
mod rmcp_fifty;

use rmcp_fifty::{EchoInput, RmcpServer};

/// rmcp's own server on `127.0.0.1:0`, served by a hyper loop like ours.
async fn serve_rmcp() -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    // One router, built once and cloned for each session (and, stateless, each request), as
    // ours shares its registry: building 50 routes per request would cost rmcp 1.4M
    // instructions a request.
    let router = RmcpServer::router();
    let service = StreamableHttpService::new(
        move || {
            Ok(RmcpServer {
                tool_router: router.clone(),
            })
        },
        Arc::new(LocalSessionManager::default()),
        StreamableHttpServerConfig::default(),
    );
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                continue;
            };
            // As ours does: no Nagle delay on small answers.
            let _ = stream.set_nodelay(true);
            let service = service.clone();
            tokio::spawn(async move {
                let svc = service_fn(move |req| {
                    let service = service.clone();
                    async move { Ok::<_, Infallible>(service.handle(req).await) }
                });
                let _ = http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), svc)
                    .await;
            });
        }
    });
    addr
}

fn echo_export() -> Export {
    Export::typed("echo", |_ctx, input: EchoInput| async move {
        Ok::<_, ToolError>(input.text)
    })
    .with_description("Gives the text back.")
}

/// Ours: the same 50 tools through registry, catalog and executor (`text__echo`, published as
/// `echo`, is the one called).
async fn serve_goondan() -> SocketAddr {
    let mut builder =
        ToolRegistry::builder().tool(Tool::builder("text").export(echo_export()).build().unwrap());
    for i in 1..50 {
        builder = builder.tool(
            Tool::builder(format!("t{i}"))
                .export(echo_export())
                .build()
                .unwrap(),
        );
    }
    let registry = builder.build().unwrap();
    let server = McpServer::builder(Arc::new(registry))
        .publish_as("text__echo", "echo")
        .build()
        .unwrap();
    let http = server
        .serve_http("127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    let addr = http.local_addr();
    std::mem::forget(http);
    addr
}

#[derive(Clone, Copy, PartialEq)]
enum Mode {
    Stateless,
    Sessions,
}

fn headers(
    request: reqwest::RequestBuilder,
    mode: Mode,
    session: Option<&str>,
    method: &str,
) -> reqwest::RequestBuilder {
    let request = request
        .header("Accept", "application/json, text/event-stream")
        .header("Content-Type", "application/json");
    match (mode, session) {
        (Mode::Stateless, _) if method == "tools/call" => request
            .header("MCP-Protocol-Version", "2026-07-28")
            .header("Mcp-Method", method)
            .header("Mcp-Name", "echo"),
        (Mode::Stateless, _) => request
            .header("MCP-Protocol-Version", "2026-07-28")
            .header("Mcp-Method", method),
        (Mode::Sessions, Some(id)) => request
            .header("MCP-Protocol-Version", "2025-11-25")
            .header("Mcp-Session-Id", id),
        (Mode::Sessions, None) => request,
    }
}

/// A request's body: `tools/call` of the trivial tool or `tools/list`, with the request
/// metadata a 2026-07-28 request carries.
fn body(id: u64, mode: Mode, method: &str) -> String {
    let mut params = match method {
        "tools/call" => json!({"name": "echo", "arguments": {"text": "hello"}}),
        _ => json!({}),
    };
    if mode == Mode::Stateless {
        params["_meta"] = json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/clientInfo": {"name": "load", "version": "1"},
        });
    }
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string()
}

/// Sends one request and returns the answer's text. A failed request panics: the load must
/// be all successes to count.
async fn request(
    http: &reqwest::Client,
    url: &str,
    mode: Mode,
    session: Option<&str>,
    method: &str,
    id: u64,
) -> String {
    headers(http.post(url), mode, session, method)
        .body(body(id, mode, method))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap()
}

/// Opens a 2025-11-25 session; its id.
async fn open(client: &reqwest::Client, url: &str) -> String {
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "load", "version": "1"}}});
    let response = headers(client.post(url), Mode::Sessions, None, "initialize")
        .body(init.to_string())
        .send()
        .await
        .unwrap();
    let id = response.headers()["mcp-session-id"]
        .to_str()
        .unwrap()
        .to_owned();
    let _ = response.bytes().await;
    let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let _ = headers(
        client.post(url),
        Mode::Sessions,
        Some(&id),
        "notifications/initialized",
    )
    .body(note.to_string())
    .send()
    .await
    .unwrap()
    .bytes()
    .await;
    id
}

/// One client: calls for `time`, returns each call's latency. A failed call panics: the load
/// must be all successes to count.
async fn client(url: String, mode: Mode, time: Duration) -> Vec<Duration> {
    goondan_runtime::tls::install_crypto_provider();
    let http = reqwest::Client::new();
    let session = match mode {
        Mode::Sessions => Some(open(&http, &url).await),
        Mode::Stateless => None,
    };
    let mut latencies = Vec::new();
    let end = Instant::now() + time;
    let mut id = 1;
    while Instant::now() < end {
        let start = Instant::now();
        let text = request(&http, &url, mode, session.as_deref(), "tools/call", id).await;
        latencies.push(start.elapsed());
        assert!(text.contains("hello"), "{text}");
        id += 1;
    }
    latencies
}

/// How long each server is loaded, unmeasured, before it is measured.
const WARM_UP: Duration = Duration::from_secs(1);

/// In how many rounds each server's measured time is split (see `main`).
const ROUNDS: u32 = 8;

/// One load's latencies, sorted, and how long it ran.
struct Run {
    latencies: Vec<Duration>,
    elapsed: f64,
}

impl Run {
    /// Several runs of one server as one.
    fn merge(runs: &[Run]) -> Figures {
        let elapsed: f64 = runs.iter().map(|r| r.elapsed).sum();
        let mut all: Vec<Duration> = runs
            .iter()
            .flat_map(|r| r.latencies.iter().copied())
            .collect();
        all.sort();
        let at = |q: f64| all[((all.len() as f64 * q) as usize).min(all.len() - 1)];
        Figures {
            rps: all.len() as f64 / elapsed,
            p50: at(0.50),
            p99: at(0.99),
        }
    }
}

struct Figures {
    rps: f64,
    p50: Duration,
    p99: Duration,
}

/// The median of `values` and their range.
fn spread(values: &[f64]) -> (f64, f64, f64) {
    let mut values = values.to_vec();
    values.sort_by(f64::total_cmp);
    let n = values.len();
    let median = if n % 2 == 1 {
        values[n / 2]
    } else {
        (values[n / 2 - 1] + values[n / 2]) / 2.0
    };
    (median, values[0], values[n - 1])
}

async fn load(addr: SocketAddr, mode: Mode, time: Duration) -> Run {
    let url = format!("http://{addr}/mcp");
    let started = Instant::now();
    let tasks: Vec<_> = (0..CLIENTS)
        .map(|_| tokio::spawn(client(url.clone(), mode, time)))
        .collect();
    let mut latencies = Vec::new();
    for t in tasks {
        latencies.extend(t.await.unwrap());
    }
    Run {
        latencies,
        elapsed: started.elapsed().as_secs_f64(),
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// `mcp_http calls ours|rmcp stateless|sessions N [call|list]`: one client makes N requests
/// in a row on a single-threaded runtime (`tools/call` of the trivial tool, or `tools/list` of
/// 50 tools), for instruction counts under callgrind (`scripts/callgrind mcp`): the client's
/// share is the same for both servers, so the difference is the servers'.
fn calls(args: &[String]) {
    let server = args.first().map(String::as_str);
    let mode = match args.get(1).map(String::as_str) {
        Some("sessions") => Mode::Sessions,
        _ => Mode::Stateless,
    };
    let n: u64 = args.get(2).and_then(|n| n.parse().ok()).unwrap_or(1);
    let list = args.get(3).map(String::as_str) == Some("list");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let addr = match server {
            Some("rmcp") => serve_rmcp().await,
            _ => serve_goondan().await,
        };
        let url = format!("http://{addr}/mcp");
        goondan_runtime::tls::install_crypto_provider();
        let http = reqwest::Client::new();
        let session = match mode {
            Mode::Sessions => Some(open(&http, &url).await),
            Mode::Stateless => None,
        };
        let method = if list { "tools/list" } else { "tools/call" };
        for id in 1..=n {
            let text = request(&http, &url, mode, session.as_deref(), method, id).await;
            if list {
                assert_eq!(text.matches("\"inputSchema\"").count(), 50, "{text}");
            } else {
                assert!(text.contains("hello"), "{text}");
            }
        }
    });
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("calls") {
        return calls(&args[1..]);
    }
    let seconds: u64 = args.iter().find_map(|a| a.parse().ok()).unwrap_or(5);
    let time = Duration::from_secs(seconds);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let mut rows = Vec::new();
    let mut json_rows = Vec::new();
    runtime.block_on(async {
        let ours = serve_goondan().await;
        let theirs = serve_rmcp().await;
        for (mode, label) in [(Mode::Stateless, "stateless"), (Mode::Sessions, "sessions")] {
            // Each server is warmed up first (connections, allocator), then measured in
            // ROUNDS rounds of two slices, in the order ours, theirs, theirs, ours: neither
            // gains from going first, and a change in the machine's speed during the run
            // (another process, the CPU's clock) falls on both alike.
            load(ours, mode, WARM_UP).await;
            load(theirs, mode, WARM_UP).await;
            let slice = time / (2 * ROUNDS);
            let (mut g, mut r) = (Vec::new(), Vec::new());
            // Each round's own ratios too: the pooled p99 of a run follows its slowest slice,
            // which the machine can slow for either server; a round's two servers share
            // the machine's moment, and the median of the rounds is not moved by one.
            let (mut throughput, mut p99) = (Vec::new(), Vec::new());
            for _ in 0..ROUNDS {
                let a = load(ours, mode, slice).await;
                let b = load(theirs, mode, slice).await;
                let c = load(theirs, mode, slice).await;
                let d = load(ours, mode, slice).await;
                g.extend([a, d]);
                r.extend([b, c]);
                // This round's two slices of each.
                let (ro, rt) = (Run::merge(&g[g.len() - 2..]), Run::merge(&r[r.len() - 2..]));
                throughput.push(ro.rps / rt.rps);
                p99.push(ms(ro.p99) / ms(rt.p99));
            }
            let (g, r) = (Run::merge(&g), Run::merge(&r));
            let (tm, tlo, thi) = spread(&throughput);
            let (pm, plo, phi) = spread(&p99);
            rows.push(format!(
                "| {label} | {:.0} | {:.2} ms | {:.2} ms | {:.0} | {:.2} ms | {:.2} ms | {:.2}x | {:.2}x | {tm:.2}x ({tlo:.2}-{thi:.2}) | {pm:.2}x ({plo:.2}-{phi:.2}) |",
                g.rps,
                ms(g.p50),
                ms(g.p99),
                r.rps,
                ms(r.p50),
                ms(r.p99),
                g.rps / r.rps,
                ms(g.p99) / ms(r.p99),
            ));
            json_rows.push(json!({
                "mode": label,
                "goondan": {"rps": g.rps, "p50_ms": ms(g.p50), "p99_ms": ms(g.p99)},
                "rmcp": {"rps": r.rps, "p50_ms": ms(r.p50), "p99_ms": ms(r.p99)},
                "rounds": {"throughput": throughput, "p99": p99},
            }));
        }
    });
    println!(
        "{CLIENTS} clients, {seconds} s each, one trivial tool over Streamable HTTP on 127.0.0.1"
    );
    println!(
        "| mode | goondan req/s | goondan p50 | goondan p99 | rmcp req/s | rmcp p50 | rmcp p99 | throughput goondan/rmcp | p99 goondan/rmcp | per round: throughput, median (range) | per round: p99 |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|");
    for row in rows {
        println!("{row}");
    }
    let target = std::env::var("CARGO_TARGET_DIR")
        .unwrap_or_else(|_| concat!(env!("CARGO_MANIFEST_DIR"), "/../target").to_owned());
    let _ = std::fs::write(
        format!("{target}/mcp-http-load.json"),
        Value::Array(json_rows).to_string(),
    );
}
