//! `cargo run --example quickstart`: a Step's Tool Catalog, then a scripted sequence of tool
//! calls (a success, invalid arguments, a tool outside the catalog, a truncated error, a panic,
//! a timeout, a pending result), each result printed as the model receives it.

fn main() -> anyhow::Result<()> {
    // The quickstart's `bash__exec` runs in the sandbox, whose helper is this same program:
    // started as the helper, it does the helper's work and exits here (before any thread).
    goondan_base::sandbox::serve_if_asked();
    // The runtime turns the demo's panic into an `E_TOOL_PANIC` result; keep Rust's default
    // hook from printing a backtrace for it.
    std::panic::set_hook(Box::new(|info| eprintln!("(a tool panicked: {info})")));
    tokio::runtime::Runtime::new()?.block_on(async {
        let stdout = std::io::stdout();
        let mut out = stdout.lock();
        goondan_examples::quickstart::run(&mut out).await
    })
}
