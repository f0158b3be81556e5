use goondan_runtime::prelude::*;

#[tool(name = "text-utils")]
pub mod text_utils {
    pub fn upper(text: String) -> String {
        shout(text)
    }

    #[export(name = "shout")]
    fn shout(text: String) -> String {
        text.to_uppercase() + "!"
    }
}

fn main() {}
