use goondan_runtime::prelude::*;

#[tool(name = "text-utils", name = "text")]
pub mod text_utils {
    pub fn upper(text: String) -> String {
        text.to_uppercase()
    }
}

fn main() {}
