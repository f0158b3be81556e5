use goondan_runtime::prelude::*;

#[tool(description = "Text utilities")]
pub mod text_utils {
    pub fn upper(text: String) -> String {
        text.to_uppercase()
    }
}

fn main() {}
