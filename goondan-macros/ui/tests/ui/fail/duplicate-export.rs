use goondan_runtime::prelude::*;

#[tool(name = "text-utils")]
pub mod text_utils {
    pub fn upper(text: String) -> String {
        text.to_uppercase()
    }

    #[export(name = "upper")]
    pub fn upper_ascii(text: String) -> String {
        text.to_ascii_uppercase()
    }
}

fn main() {}
