use goondan_runtime::prelude::*;

// One mistake, one error: no "file not found" and no "cannot find `TOOL`" after it.
#[tool(name = "text-utils")]
mod text_utils;

fn main() {
    let _ = text_utils::TOOL;
}
