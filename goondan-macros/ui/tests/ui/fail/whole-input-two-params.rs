use goondan_runtime::prelude::*;

#[tool(name = "pages")]
pub mod pages {
    #[export(input = "whole")]
    pub fn get(id: String, version: u32) -> String {
        format!("{id}@{version}")
    }
}

fn main() {}
