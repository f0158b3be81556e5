use goondan_runtime::prelude::*;

#[tool(name = "text-utils", error_message_limit = 0)]
pub mod text_utils {
    pub fn upper(text: String) -> String {
        text.to_uppercase()
    }
}

fn main() {}
