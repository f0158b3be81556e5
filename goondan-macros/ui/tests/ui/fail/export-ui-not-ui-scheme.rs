use goondan_runtime::prelude::*;

#[tool(name = "counter")]
pub mod counter {
    #[export(ui = "https://example.com/view.html")]
    pub fn show() -> u64 {
        0
    }
}

fn main() {}
