use goondan_runtime::prelude::*;

#[tool(name = "math")]
pub mod math {
    pub fn double(value: i64) -> i64 {
        value * 2
    }

    pub async fn triple(value: i64) -> i64 {
        value * 3
    }
}

fn main() {
    assert_eq!(math::double(2), 4);
    assert_eq!(math::TOOL.build().unwrap().exports().len(), 2);
}
