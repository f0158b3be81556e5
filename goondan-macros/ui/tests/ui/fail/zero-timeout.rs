use goondan_runtime::prelude::*;

#[tool(name = "text-utils")]
pub mod text_utils {
    #[export(timeout_ms = 0)]
    pub fn upper(text: String) -> String {
        text.to_uppercase()
    }
}

fn main() {}
