use goondan_runtime::prelude::*;

#[derive(Deserialize)]
pub struct Point {
    pub x: i32,
}

#[tool(name = "geometry")]
pub mod geometry {
    use super::*;

    pub fn shift(
        /// How far to move.
        by: i32,
        /// The point to move.
        point: Point,
    ) -> i32 {
        point.x + by
    }
}

fn main() {}
