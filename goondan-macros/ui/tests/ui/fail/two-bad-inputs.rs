use goondan_runtime::prelude::*;

pub struct Point {
    pub x: i32,
}

pub struct Size {
    pub w: i32,
}

// Each input type that cannot be deserialised is reported once, on its own type.
#[tool(name = "geometry")]
pub fn grow(point: Point, size: Size) -> i32 {
    point.x + size.w
}

fn main() {}
