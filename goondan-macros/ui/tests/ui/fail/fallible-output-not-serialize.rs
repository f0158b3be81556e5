use goondan_runtime::prelude::*;

pub struct Report {
    pub lines: usize,
}

#[tool(name = "report")]
pub async fn report(text: String) -> Result<Report, ToolError> {
    Ok(Report {
        lines: text.lines().count(),
    })
}

fn main() {}
