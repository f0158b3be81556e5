use goondan_runtime::prelude::*;

#[tool(name = "math")]
pub mod math {
    pub const fn double(value: i64) -> i64 {
        value * 2
    }
}

fn main() {}
