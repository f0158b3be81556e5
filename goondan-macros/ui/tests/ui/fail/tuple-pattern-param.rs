use goondan_runtime::prelude::*;

#[tool(name = "geometry")]
pub mod geometry {
    pub fn add((a, b): (i64, i64)) -> i64 {
        a + b
    }
}

fn main() {}
