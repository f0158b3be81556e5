//! Model Context Protocol: `tools/list` entries `{name, description, inputSchema}` out,
//! `tools/call` requests in, `CallToolResult` (`content`, `structuredContent`, `isError`) out.
//!
//! `inputSchema` is the neutral schema as it is: JSON Schema 2020-12, the protocol's default
//! dialect. MCP requires `type: "object"` at its root, which every registered tool has.

use serde_json::{Map, Value, json};

use super::{DialectError, ParseError, parameters_of, require_object_root, str_field};
use crate::catalog::{CatalogItem, ToolCatalog};
use crate::result::{ToolCall, ToolCallResult, ToolStatus};

const DIALECT: &str = "mcp";

/// The catalog as a `tools/list` result: `{tools: [{name, description?, inputSchema}]}`.
pub fn tools_list(catalog: &ToolCatalog) -> Result<Value, DialectError> {
    let tools = catalog
        .items()
        .iter()
        .map(tool)
        .collect::<Result<Vec<_>, DialectError>>()?;
    Ok(json!({"tools": tools}))
}

/// One entry of `tools/list`: `{name, description?, inputSchema}`.
pub(crate) fn tool(item: &CatalogItem) -> Result<Value, DialectError> {
    let schema = parameters_of(item);
    require_object_root(&schema).map_err(|e| e.for_tool(item, DIALECT))?;
    let mut tool = Map::new();
    tool.insert("name".into(), Value::from(item.name.as_str()));
    if let Some(d) = &item.description {
        tool.insert("description".into(), Value::from(d.as_ref()));
    }
    tool.insert("inputSchema".into(), schema);
    Ok(Value::Object(tool))
}

/// The call of a `tools/call` JSON-RPC request `{jsonrpc, id, method, params: {name,
/// arguments?}}`. The call id is the request id (a number is written in decimal); missing
/// `arguments` means no arguments.
pub fn parse_call(request: &Value) -> Result<ToolCall, ParseError> {
    if request.get("method").and_then(Value::as_str) != Some("tools/call") {
        return Err(ParseError::new(DIALECT, "/method", "expected `tools/call`"));
    }
    let id = match request.get("id") {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Number(n)) => n.to_string(),
        _ => {
            return Err(ParseError::new(
                DIALECT,
                "/id",
                "expected a string or a number",
            ));
        }
    };
    let params = request
        .get("params")
        .ok_or_else(|| ParseError::new(DIALECT, "/params", "expected an object"))?;
    let name = str_field(params, "name", DIALECT, "/params")?;
    let args = params
        .get("arguments")
        .cloned()
        .unwrap_or_else(|| Value::Object(Map::new()));
    Ok(ToolCall::new(id, name, args))
}

/// A result as a `CallToolResult`: the text in `content`, the output (an object as it is,
/// anything else as `{result}`) or the error as `structuredContent`, and `isError`.
pub fn call_result(result: &ToolCallResult) -> Value {
    let structured = match result.status {
        ToolStatus::Ok => match &result.output {
            Some(Value::Object(o)) => Value::Object(o.clone()),
            other => json!({"result": other}),
        },
        ToolStatus::Pending => json!({"status": "pending", "handle": result.handle}),
        ToolStatus::Error => json!({
            "error": result.error.as_ref().map(super::error_json),
        }),
    };
    json!({
        "content": [{"type": "text", "text": super::result_text(result)}],
        "structuredContent": structured,
        "isError": result.status == ToolStatus::Error,
    })
}

/// The JSON-RPC response to a `tools/call` request with id `id`.
pub fn response(id: Value, result: &ToolCallResult) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "result": call_result(result)})
}
