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

fn main() {}
