use goondan_runtime::prelude::*;

#[tool(name = "text-utils")]
pub mod text_utils {
    pub fn upper(text: &str) -> String {
        text.to_uppercase()
    }
}

fn main() {}
