use goondan_runtime::prelude::*;

/// What to count.
#[derive(Deserialize, JsonSchema)]
pub struct CountInput {
    /// The text.
    pub text: String,
}

#[tool(name = "count")]
pub fn count(input: CountInput) -> usize {
    input.text.split_whitespace().count()
}

fn main() {
    let tool = count::TOOL.build().unwrap();
    let (_, export) = tool.exports().next().unwrap();
    assert_eq!(export.parameters()["required"], serde_json::json!(["text"]));
}
