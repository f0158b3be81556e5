use goondan_runtime::prelude::*;

#[tool(name = "text-utils")]
pub mod text_utils {
    pub fn upper(text: impl Into<String>) -> String {
        text.into().to_uppercase()
    }
}

fn main() {}
