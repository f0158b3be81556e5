//! Runs `execute` (or, with `floor`, the same serde work and function) N times, for
//! instruction counts: `valgrind --tool=callgrind target/release/examples/profile_dispatch 20000`.
//! With `mw [K]`, `execute` through K (default 3) pass-through `toolCall` middlewares; with
//! `async`, the same function written `async fn` (no synchronous fast path).
#![allow(
    missing_docs,
    unreachable_pub,
    clippy::unwrap_used,
    clippy::print_stdout
)]
use goondan_runtime::prelude::*;
use goondan_runtime::{ToolCatalog, ToolExecutor};
use std::sync::Arc;
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UpperIn {
    text: String,
}
#[derive(Serialize)]
pub struct UpperOut {
    result: String,
}
#[tool(name = "text-utils")]
mod text_utils {
    use super::*;
    /// Up.
    pub fn uppercase(input: UpperIn) -> UpperOut {
        UpperOut {
            result: input.text.to_uppercase(),
        }
    }
    /// Up, asynchronously.
    pub async fn uppercase_async(input: UpperIn) -> UpperOut {
        UpperOut {
            result: input.text.to_uppercase(),
        }
    }
}
fn main() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let registry = Arc::new(
        ToolRegistry::builder()
            .tool(text_utils::TOOL)
            .build()
            .unwrap(),
    );
    let catalog = ToolCatalog::build(&registry, ["text-utils"]).unwrap();
    let ctx = ToolContext::builder(std::env::temp_dir()).build();
    let mut ex = ToolExecutor::builder(Arc::clone(&registry));
    if std::env::args().nth(2).as_deref() == Some("mw") {
        let k: usize = std::env::args()
            .nth(3)
            .map(|s| s.parse().unwrap())
            .unwrap_or(3);
        for _ in 0..k {
            ex = ex.middleware(goondan_runtime::from_fn(|call, next| next.run(call)));
        }
    }
    let ex = ex.build();
    let export = if std::env::args().nth(2).as_deref() == Some("async") {
        "text-utils__uppercase_async"
    } else {
        "text-utils__uppercase"
    };
    let call = ToolCall::new(
        "call_1",
        export,
        serde_json::json!({"text": "hello, goondan"}),
    );
    let n: usize = std::env::args()
        .nth(1)
        .map(|s| s.parse().unwrap())
        .unwrap_or(100_000);
    let mut ok = 0;
    if std::env::args().nth(2).as_deref() == Some("size") {
        let f = ex.execute(call.clone(), &ctx, &catalog);
        println!("execute future: {} bytes", std::mem::size_of_val(&f));
        return;
    }
    if std::env::args().nth(2).as_deref() == Some("floor") {
        let args = serde_json::json!({"text": "hello, goondan"});
        rt.block_on(async {
            for _ in 0..n {
                let a = args.clone();
                let v = async move {
                    let i: UpperIn = serde_json::from_value(a).unwrap();
                    serde_json::to_value(UpperOut {
                        result: i.text.to_uppercase(),
                    })
                    .unwrap()
                }
                .await;
                ok += usize::from(v.is_object());
            }
        });
        println!("{ok}");
        return;
    }
    rt.block_on(async {
        for _ in 0..n {
            let r = ex.execute(call.clone(), &ctx, &catalog).await;
            ok += usize::from(r.is_ok());
        }
    });
    println!("{ok}");
}
