use goondan_runtime::prelude::*;

const NAME: &str = "text-utils";

#[tool(name = NAME)]
pub mod text_utils {
    pub fn upper(text: String) -> String {
        text.to_uppercase()
    }
}

fn main() {}
