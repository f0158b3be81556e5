use goondan_runtime::prelude::*;

// A syntax error in a body: rustc reports it once, and `text_utils::TOOL` still resolves.
#[tool(name = "text-utils")]
pub mod text_utils {
    pub fn upper(text: String) -> String {
        let shout = ;
        text.to_uppercase()
    }
}

fn main() {
    let _ = text_utils::TOOL;
}
