use goondan_runtime::prelude::*;

#[tool(name = "clock")]
pub fn now() -> u64 {
    42
}

fn main() {
    let tool = now::TOOL.build().unwrap();
    let (_, export) = tool.exports().next().unwrap();
    assert_eq!(
        export.parameters(),
        &serde_json::json!({"type": "object", "properties": {}, "additionalProperties": false})
    );
}
