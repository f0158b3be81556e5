use goondan_runtime::prelude::*;

#[tool(name = "files")]
pub mod files {
    #[export(title = "  ")]
    pub fn list(dir: String) -> Vec<String> {
        vec![dir]
    }
}

fn main() {}
