use goondan_runtime::prelude::*;

/// Not a tool: `#[export]` here does nothing and says so.
#[export(name = "run")]
pub fn run() -> u32 {
    1
}

fn main() {
    let _ = run();
}
