use goondan_runtime::prelude::*;

#[tool(name = "search")]
pub fn search(
    /// What to look for.
    query: String,
    /// At most this many results.
    limit: Option<u32>,
) -> Vec<String> {
    vec![query; limit.unwrap_or(1) as usize]
}

fn main() {
    let tool = search::TOOL.build().unwrap();
    let (_, export) = tool.exports().next().unwrap();
    assert_eq!(
        export.parameters()["required"],
        serde_json::json!(["query"])
    );
}
