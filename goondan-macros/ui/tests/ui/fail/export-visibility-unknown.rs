use goondan_runtime::prelude::*;

#[tool(name = "counter")]
pub mod counter {
    #[export(ui = "ui://counter/view.html", visibility = "user")]
    pub fn increment() -> u64 {
        1
    }
}

fn main() {}
