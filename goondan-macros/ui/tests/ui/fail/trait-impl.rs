use goondan_runtime::prelude::*;

pub struct Greeter;

#[tool(name = "greeter")]
impl Default for Greeter {
    fn default() -> Self {
        Greeter
    }
}

fn main() {}
