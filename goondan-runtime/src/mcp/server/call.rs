//! A finished [`ToolCallResult`] as MCP sees it: a `CallToolResult`, or the protocol's
//! unknown-tool error for a name outside the catalog.
//!
//! The shape of a result (text, content parts, `structuredContent`, `isError`) is
//! [`call_shape`]'s, the rule the JSON dialect follows too. A name the catalog refuses
//! (`E_TOOL_NOT_IN_CATALOG`, `E_TOOL_NOT_FOUND`, `E_TOOL_INVALID_NAME`) is the spec's
//! unknown-tool error: JSON-RPC `-32602` with `Unknown tool: NAME` and the structured error as
//! `data`.

use rmcp::ErrorData;
use rmcp::model::{CallToolResult, ContentBlock};
use serde_json::json;

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

/// A result as a `CallToolResult`, shaped as [`call_shape`] says.
pub(super) fn call_tool_result(
    result: &ToolCallResult,
    output_schema: Option<&OutputSchema>,
) -> CallToolResult {
    let shape = call_shape(result, output_schema);
    let mut blocks: Vec<ContentBlock> = shape.text.map(ContentBlock::text).into_iter().collect();
    blocks.extend(shape.parts.iter().filter_map(content_block));
    let mut r = if shape.is_error {
        CallToolResult::error(blocks)
    } else {
        CallToolResult::success(blocks)
    };
    r.structured_content = shape.structured;
    r
}

/// A content part as an MCP content block.
fn content_block(part: &crate::tools::content::Content) -> Option<ContentBlock> {
    serde_json::from_value(part.to_json()).ok()
}
