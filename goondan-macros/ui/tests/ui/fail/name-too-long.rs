use goondan_runtime::prelude::*;

#[tool(name = "a-very-long-resource-name-for-text-utilities")]
pub mod text_utils {
    #[export(name = "convert-to-uppercase-letters")]
    pub fn upper(text: String) -> String {
        text.to_uppercase()
    }
}

fn main() {}
