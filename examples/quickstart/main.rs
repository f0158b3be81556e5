//! `cargo run --example quickstart`: a Step's Tool Catalog, then a scripted sequence of tool
//! calls (a success, invalid arguments, a tool outside the catalog, a truncated error, a panic,
//! a timeout, a pending result), each result printed as the model receives it.

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    // The runtime turns the demo's panic into an `E_TOOL_PANIC` result; keep Rust's default
    // hook from printing a backtrace for it.
    std::panic::set_hook(Box::new(|info| eprintln!("(a tool panicked: {info})")));
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    goondan_examples::quickstart::run(&mut out).await
}
