use goondan_runtime::prelude::*;

#[tool(name = "text.utils")]
pub mod text_utils {
    pub fn upper(text: String) -> String {
        text.to_uppercase()
    }
}

fn main() {
    // `TOOL` still exists next to the error, so this line adds no second error.
    let _ = text_utils::TOOL;
}
