use goondan_runtime::prelude::*;

#[derive(Debug)]
pub struct ParseFailure;

#[tool(name = "parse")]
pub fn parse(text: String) -> Result<i64, ParseFailure> {
    text.trim().parse().map_err(|_| ParseFailure)
}

fn main() {}
