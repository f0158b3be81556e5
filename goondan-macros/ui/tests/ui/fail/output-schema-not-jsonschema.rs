use goondan_runtime::prelude::*;

#[derive(Serialize)]
pub struct Listing {
    names: Vec<String>,
}

#[tool(name = "files")]
pub mod files {
    use super::*;

    #[export(output_schema)]
    pub fn list(dir: String) -> Listing {
        Listing { names: vec![dir] }
    }
}

fn main() {}
