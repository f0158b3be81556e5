use goondan_runtime::prelude::*;

pub struct Counter {
    count: u64,
}

#[tool(name = "counter")]
impl Counter {
    pub fn get(self) -> u64 {
        self.count
    }
}

fn main() {}
