use goondan_runtime::prelude::*;

#[tool(name = "pages")]
pub mod pages {
    #[export(input = "object")]
    pub fn get(id: String) -> String {
        id
    }
}

fn main() {}
