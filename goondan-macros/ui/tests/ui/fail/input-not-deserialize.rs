use goondan_runtime::prelude::*;

pub struct Point {
    pub x: i32,
}

#[tool(name = "geometry")]
pub mod geometry {
    use super::*;

    /// Move a point.
    pub fn shift(
        /// The point to move.
        point: Point,
    ) -> i32 {
        point.x + 1
    }
}

fn main() {}
