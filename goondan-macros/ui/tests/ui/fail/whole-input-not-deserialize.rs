use goondan_runtime::prelude::*;

#[derive(JsonSchema)]
pub struct CountInput {
    pub text: String,
}

#[tool(name = "count")]
pub fn count(input: CountInput) -> usize {
    input.text.len()
}

fn main() {}
