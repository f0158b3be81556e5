use goondan_runtime::prelude::*;

#[tool(name = "9lives")]
pub mod cat {
    pub fn meow() -> String {
        "meow".to_owned()
    }
}

fn main() {}
