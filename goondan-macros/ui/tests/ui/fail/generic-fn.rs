use goondan_runtime::prelude::*;

#[tool(name = "text-utils")]
pub mod text_utils {
    pub fn show<T: ToString>(value: T) -> String {
        value.to_string()
    }
}

fn main() {}
