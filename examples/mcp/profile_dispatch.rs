//! Runs one kind of dispatch N times, for instruction counts:
//! `valgrind --tool=callgrind target/release/examples/profile_dispatch 20000 [MODE]`.
//! `scripts/callgrind` runs every mode twice (N calls and 1) and prints the cost per call.
//!
//! Modes, each on the same `{text}` input (`text-utils__uppercase` and `shout`, both `async fn`):
//! - none: `execute` on a tool returning a struct (structured output);
//! - `text`: `execute` on a tool returning a `String` (a plain value);
//! - `floor` / `floor-text`: the same serde work and function, without any dispatch;
//! - `rmcp` / `rmcp-text`: rmcp's `ToolRouter::call` on the same two tools written with rmcp's
//!   macros (`Json<T>` and `String`: the same return shapes);
//! - `rmcp-checked` / `rmcp-text-checked`: the same, each call's arguments first checked against
//!   the tool's input schema by the validator `execute` uses (`ArgValidator::check`): the work
//!   the Goondan contract asks of every call and rmcp leaves to its users;
//! - `mw [K]`: `execute` through K (default 3) pass-through `toolCall` middlewares;
//! - `sync`: the struct tool written as a plain `fn`, which runs on the blocking pool;
//! - `size`: prints the size of `execute`'s future.
#![allow(
    missing_docs,
    unreachable_pub,
    clippy::unwrap_used,
    clippy::print_stdout
)]
use goondan_runtime::prelude::*;
use goondan_runtime::tools::schema::ArgValidator;
use goondan_runtime::{ToolCatalog, ToolExecutor};
use rmcp::handler::server::tool::ToolCallContext as RmcpCall;
use rmcp::model::{CallToolRequestParams, CallToolResponse, NumberOrString};
use rmcp::service::RequestContext;
use std::sync::Arc;

#[path = "../../goondan-runtime/benches/common/rmcp_tools.rs"]
mod rmcp_tools;
use rmcp_tools::{RmcpTools, UpperIn, UpperOut};

#[tool(name = "text-utils")]
mod text_utils {
    use super::*;
    /// Up. `async`: it runs in place, as rmcp runs its tools.
    pub async fn uppercase(input: UpperIn) -> UpperOut {
        super::rmcp_tools::uppercase(input)
    }
    /// Up, as plain text.
    pub async fn shout(input: UpperIn) -> String {
        input.text.to_uppercase()
    }
    /// Up, as a plain `fn`: declared blocking, so it runs on the blocking pool.
    pub fn uppercase_sync(input: UpperIn) -> UpperOut {
        super::rmcp_tools::uppercase(input)
    }
}

#[path = "../../goondan-runtime/benches/common/rmcp_peer.rs"]
mod rmcp_peer;
use rmcp_peer::rmcp_peer;

fn main() {
    let arg = |i: usize| std::env::args().nth(i);
    let n: usize = arg(1).map(|s| s.parse().unwrap()).unwrap_or(100_000);
    let mode = arg(2).unwrap_or_default();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let input = serde_json::json!({"text": "hello, goondan"});
    let mut ok = 0;
    match mode.as_str() {
        "floor" | "floor-text" => {
            let text = mode == "floor-text";
            rt.block_on(async {
                for _ in 0..n {
                    let a = input.clone();
                    let v = async move {
                        let i: UpperIn = serde_json::from_value(a).unwrap();
                        let up = i.text.to_uppercase();
                        if text {
                            serde_json::to_value(up).unwrap()
                        } else {
                            serde_json::to_value(UpperOut { result: up }).unwrap()
                        }
                    }
                    .await;
                    ok += usize::from(!v.is_null());
                }
            });
        }
        "rmcp" | "rmcp-text" | "rmcp-checked" | "rmcp-text-checked" => {
            let name = if mode.starts_with("rmcp-text") {
                "shout"
            } else {
                "uppercase"
            };
            let router = RmcpTools::tool_router();
            let checked = mode.ends_with("-checked").then(|| {
                let tool = router.get(name).unwrap();
                ArgValidator::new(&serde_json::Value::Object((*tool.input_schema).clone()))
            });
            let service = RmcpTools {
                tool_router: RmcpTools::tool_router(),
            };
            let serde_json::Value::Object(map) = input else {
                unreachable!()
            };
            let params = CallToolRequestParams::new(name).with_arguments(map);
            rt.block_on(async {
                let (peer, _keep) = rmcp_peer(RmcpTools {
                    tool_router: RmcpTools::tool_router(),
                })
                .await;
                for _ in 0..n {
                    let context = RequestContext::new(NumberOrString::Number(1), peer.clone());
                    let mut params = params.clone();
                    if let Some(validator) = &checked {
                        let mut args = serde_json::Value::Object(params.arguments.take().unwrap());
                        if validator.check(&mut args).is_err() {
                            continue;
                        }
                        let serde_json::Value::Object(args) = args else {
                            unreachable!()
                        };
                        params.arguments = Some(args);
                    }
                    let r = router.call(RmcpCall::new(&service, params, context)).await;
                    ok += usize::from(matches!(r, Ok(CallToolResponse::Complete(_))));
                }
            });
        }
        _ => {
            let registry = Arc::new(
                ToolRegistry::builder()
                    .tool(text_utils::TOOL)
                    .build()
                    .unwrap(),
            );
            let catalog = ToolCatalog::build(&registry, ["text-utils"]).unwrap();
            let ctx = ToolContext::builder(std::env::temp_dir()).build();
            let mut ex = ToolExecutor::builder(Arc::clone(&registry));
            if mode == "mw" {
                let k: usize = arg(3).map(|s| s.parse().unwrap()).unwrap_or(3);
                for _ in 0..k {
                    ex = ex.middleware(goondan_runtime::from_fn(|call, next| next.run(call)));
                }
            }
            let ex = ex.build();
            let export = match mode.as_str() {
                "sync" => "text-utils__uppercase_sync",
                "text" => "text-utils__shout",
                _ => "text-utils__uppercase",
            };
            let call = ToolCall::new("call_1", export, input);
            if mode == "size" {
                let f = ex.execute(call.clone(), &ctx, &catalog);
                println!("execute future: {} bytes", std::mem::size_of_val(&f));
                return;
            }
            rt.block_on(async {
                for _ in 0..n {
                    let r = ex.execute(call.clone(), &ctx, &catalog).await;
                    ok += usize::from(r.is_ok());
                }
            });
        }
    }
    println!("{ok}");
}
