//! A finished [`ToolCallResult`] as MCP sees it: a `CallToolResult`, or the protocol's
//! unknown-tool error for a name outside the catalog.
//!
//! The shape of a result (text, content parts, `structuredContent`, `isError`) is
//! [`call_shape`]'s, the rule the JSON dialect follows too. A name the catalog refuses
//! (`E_TOOL_NOT_IN_CATALOG`, `E_TOOL_NOT_FOUND`, `E_TOOL_INVALID_NAME`) is the spec's
//! unknown-tool error: JSON-RPC `-32602` with `Unknown tool: NAME` and the structured error as
//! `data`.

use std::borrow::Cow;

use rmcp::ErrorData;
use rmcp::model::{CallToolResult, ContentBlock};
use serde_json::{Value, json};

use crate::dialect::error_json;
use crate::dialect::mcp::call_shape;
use crate::tools::error::{ToolError, codes};
use crate::tools::output_schema::OutputSchema;
use crate::tools::result::ToolCallResult;

/// Whether the executor refused the call for its name: the protocol's unknown-tool case.
pub(super) fn is_unknown_tool(result: &ToolCallResult) -> bool {
    matches!(
        result.error_code(),
        Some(codes::NOT_IN_CATALOG | codes::NOT_FOUND | codes::INVALID_NAME)
    )
}

/// The unknown-tool protocol error for `name`, carrying the structured error.
pub(super) fn unknown_tool(name: &str, error: Option<&ToolError>) -> ErrorData {
    ErrorData::invalid_params(
        format!("Unknown tool: {name}"),
        error.map(|e| json!({"error": error_json(e)})),
    )
}

/// A result as a `CallToolResult`, shaped as [`call_shape`] says. A result given by value
/// gives its output string to the text block rather than a copy of it.
pub(super) fn call_tool_result(
    result: Cow<'_, ToolCallResult>,
    output_schema: Option<&OutputSchema>,
) -> CallToolResult {
    let shape = call_shape(&result, output_schema);
    let (is_error, structured) = (shape.is_error, shape.structured);
    let parts: Vec<ContentBlock> = shape.parts.iter().filter_map(content_block).collect();
    // `call_shape` borrows only the output string; it is taken once the shape is done.
    let text = match shape.text {
        Some(Cow::Owned(text)) => Some(text),
        Some(Cow::Borrowed(_)) => output_string(result),
        None => None,
    };
    let mut blocks: Vec<ContentBlock> = Vec::with_capacity(parts.len() + 1);
    blocks.extend(text.map(ContentBlock::text));
    blocks.extend(parts);
    let mut r = if is_error {
        CallToolResult::error(blocks)
    } else {
        CallToolResult::success(blocks)
    };
    r.structured_content = structured;
    r
}

/// The output string of `result`: moved out of a result given, copied from one lent.
fn output_string(result: Cow<'_, ToolCallResult>) -> Option<String> {
    match result {
        Cow::Owned(r) => match r.output {
            Some(Value::String(text)) => Some(text),
            _ => None,
        },
        Cow::Borrowed(r) => r.output.as_ref().and_then(Value::as_str).map(str::to_owned),
    }
}

/// A content part as an MCP content block.
fn content_block(part: &crate::tools::content::Content) -> Option<ContentBlock> {
    serde_json::from_value(part.to_json()).ok()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::tools::content::Content;

    /// A result given by value (its output string moved into the text block) answers exactly
    /// as the same result lent (the string copied), for every shape of result.
    #[test]
    fn a_result_given_by_value_answers_as_the_same_result_lent() {
        let results = [
            ToolCallResult::ok("c1", "t__a", json!("a string output")),
            ToolCallResult::ok("c2", "t__a", json!("")),
            ToolCallResult::ok("c3", "t__a", json!({"n": 1, "s": "x"})),
            ToolCallResult::ok("c4", "t__a", json!([1, 2])),
            ToolCallResult::ok("c5", "t__a", json!(3.5)),
            ToolCallResult::ok("c6", "t__a", Value::Null).with_content(vec![
                Content::text("part"),
                Content::image_png(vec![1, 2, 3]),
            ]),
            ToolCallResult::ok("c7", "t__a", json!("text before parts"))
                .with_content(vec![Content::image_png(vec![4])]),
            ToolCallResult::error("c8", "t__a", ToolError::new("it failed").with_code("E_X")),
            ToolCallResult::pending("c9", "t__a", "h-1"),
        ];
        let schemas = [
            None,
            Some(OutputSchema::from_schema(json!({"type": "string"}))),
            Some(OutputSchema::from_schema(
                json!({"type": "object", "properties": {"n": {"type": "integer"}}}),
            )),
        ];
        for result in &results {
            for schema in &schemas {
                let lent = call_tool_result(Cow::Borrowed(result), schema.as_ref());
                let given = call_tool_result(Cow::Owned(result.clone()), schema.as_ref());
                assert_eq!(
                    serde_json::to_value(&given).ok(),
                    serde_json::to_value(&lent).ok(),
                    "{result:?} with {schema:?}"
                );
                assert!(serde_json::to_value(&lent).is_ok_and(|v| v["content"].is_array()));
            }
        }
    }
}
