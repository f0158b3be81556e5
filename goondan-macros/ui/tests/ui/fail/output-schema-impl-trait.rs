use goondan_runtime::prelude::*;

#[tool(name = "files")]
pub mod files {
    use super::*;

    #[export(output_schema)]
    pub fn list(dir: String) -> impl Serialize {
        vec![dir]
    }
}

fn main() {}
