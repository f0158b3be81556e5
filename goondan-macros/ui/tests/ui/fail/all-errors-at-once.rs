use goondan_runtime::prelude::*;

// Several mistakes: each is reported in the same compile.
#[tool(name = "Text Utils", timeout = 5)]
pub mod text_utils {
    #[export(name = "a__b")]
    pub fn upper(text: &str) -> String {
        text.to_uppercase()
    }
}

fn main() {}
