//! A finished [`ToolCallResult`] as MCP sees it: a `CallToolResult`, or the protocol's
//! unknown-tool error for a name outside the catalog.
//!
//! - `ok` with content parts (images, audio, resources, links) only: the parts are the
//!   content blocks; with JSON output too, they follow its text.
//! - `ok`: `structuredContent` is the output (valid against the export's output schema, when
//!   it publishes one; else an object as it is and anything else as `{result}`), and the text
//!   is the same JSON (a string output without output schema is its text as it is).
//! - `error`: `isError: true`, the structured error as text (`error CODE (Name): message`,
//!   suggestion, help URL) and, unless an output schema is declared (an error could never be
//!   valid against it), as `structuredContent: {error: {code, message, suggestion, helpUrl}}`.
//! - A name the catalog refuses (`E_TOOL_NOT_IN_CATALOG`, `E_TOOL_NOT_FOUND`,
//!   `E_TOOL_INVALID_NAME`) is the spec's unknown-tool error: JSON-RPC `-32602` with
//!   `Unknown tool: NAME` and the structured error as `data`.

use rmcp::ErrorData;
use rmcp::model::{CallToolResult, ContentBlock};
use serde_json::{Value, json};

use crate::dialect::{error_text, result_text};
use crate::error::{ToolError, codes};
use crate::output_schema::OutputSchema;
use crate::result::{ToolCallResult, ToolStatus};

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

/// A finished (not pending) result as a `CallToolResult`.
pub(super) fn call_tool_result(
    result: &ToolCallResult,
    output_schema: Option<&OutputSchema>,
) -> CallToolResult {
    match (&result.status, &result.error) {
        (ToolStatus::Error, error) => {
            let text = match error {
                Some(e) => error_text(e),
                None => "error: the tool failed without details".to_owned(),
            };
            let mut r = CallToolResult::error(vec![ContentBlock::text(text)]);
            if output_schema.is_none() {
                r.structured_content = Some(json!({
                    "error": error.as_ref().map(error_json),
                }));
            }
            r
        }
        _ => {
            let output = result.output.clone().unwrap_or(Value::Null);
            let parts = result.content.iter().filter_map(content_block);
            if !result.content.is_empty() && output.is_null() && output_schema.is_none() {
                // Parts alone: they are the result.
                return CallToolResult::success(parts.collect());
            }
            let (structured, text) = match output_schema {
                Some(schema) => {
                    let s = schema.structured(output);
                    let text = s.to_string();
                    (s, text)
                }
                None => {
                    let text = result_text(result);
                    let s = match output {
                        Value::Object(o) => Value::Object(o),
                        other => json!({ "result": other }),
                    };
                    (s, text)
                }
            };
            let mut blocks = vec![ContentBlock::text(text)];
            blocks.extend(parts);
            let mut r = CallToolResult::success(blocks);
            r.structured_content = Some(structured);
            r
        }
    }
}

/// A content part as an MCP content block.
fn content_block(part: &crate::content::Content) -> Option<ContentBlock> {
    serde_json::from_value(part.to_json()).ok()
}

fn error_json(error: &ToolError) -> Value {
    serde_json::to_value(error).unwrap_or_else(|_| json!({"message": error.message()}))
}
