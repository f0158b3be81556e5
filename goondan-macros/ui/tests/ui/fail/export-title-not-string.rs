use goondan_runtime::prelude::*;

#[tool(name = "files")]
pub mod files {
    #[export(title = 5)]
    pub fn list(dir: String) -> Vec<String> {
        vec![dir]
    }
}

fn main() {}
