use goondan_runtime::prelude::*;

#[derive(Deserialize, JsonSchema)]
pub struct Query {
    pub text: String,
}

#[tool(name = "search")]
#[export(input = "whole")]
pub fn search(
    /// What to look for.
    query: Query,
) -> String {
    query.text
}

fn main() {}
