use goondan_runtime::prelude::*;

#[tool(name = "")]
pub mod text_utils {
    pub fn upper(text: String) -> String {
        text.to_uppercase()
    }
}

fn main() {}
