use goondan_runtime::prelude::*;

#[tool(name = "files")]
pub mod files {
    #[export(read_only = "yes")]
    pub fn list(dir: String) -> Vec<String> {
        vec![dir]
    }
}

fn main() {}
