use goondan_runtime::prelude::*;

pub struct Report {
    pub lines: usize,
}

#[tool(name = "report")]
pub fn report(text: String) -> Report {
    Report {
        lines: text.lines().count(),
    }
}

fn main() {}
