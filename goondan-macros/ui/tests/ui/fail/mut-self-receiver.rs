use goondan_runtime::prelude::*;

pub struct Counter {
    count: u64,
}

#[tool(name = "counter")]
impl Counter {
    pub fn increment(&mut self) -> u64 {
        self.count += 1;
        self.count
    }
}

fn main() {
    // `IntoTool` is still implemented next to the error, so this line adds no second error.
    let _ = Counter { count: 0 }.into_tool();
}
