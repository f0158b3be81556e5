use goondan_runtime::prelude::*;

#[tool(name = "text-utils")]
mod text_utils;

fn main() {}
