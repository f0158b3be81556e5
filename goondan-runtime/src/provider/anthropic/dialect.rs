//! The tool dialect of Anthropic Messages (see the module above for its rules).

use serde_json::{Map, Value, json};

use crate::dialect::{
    DialectError, Json, Object, ParseError, Unsupported, each_tool, has_field, parameters_of,
    require_object_root, str_field,
};
use crate::tools::catalog::{CatalogItem, ToolCatalog};
use crate::tools::result::{ToolCall, ToolCallResult, ToolStatus};

const DIALECT: &str = "anthropic";

/// The catalog as the Messages API `tools`.
pub fn tools(catalog: &ToolCatalog) -> Result<Value, DialectError> {
    each_tool(catalog, tool).map(|tools| tools.to_value())
}

/// One item of the Messages API `tools`: `{name, description?, input_schema}`.
pub(crate) fn tool(item: &CatalogItem) -> Result<Json<'_>, DialectError> {
    let schema = parameters_of(item);
    check_input_schema(schema).map_err(|e| e.for_tool(item, DIALECT))?;
    let mut tool = Object::with_capacity(3);
    tool.push("name", item.name().as_str());
    if let Some(d) = item.description() {
        tool.push("description", d);
    }
    tool.push("input_schema", schema);
    Ok(tool.into())
}

fn check_input_schema(schema: &Value) -> Result<(), Unsupported> {
    require_object_root(schema)?;
    let node = schema.as_object();
    if let Some(k) = ["oneOf", "anyOf", "allOf"]
        .into_iter()
        .find(|k| node.is_some_and(|node| has_field(node, k)))
    {
        return Err(Unsupported::at(
            format!("/{k}"),
            format!(
                "Anthropic refuses `{k}` at the top of `input_schema` (an enum input, or a \
                 struct with a flattened enum); make the enum a field"
            ),
        ));
    }
    Ok(())
}

/// The tool calls of a Messages API answer: the response (a message), or its `content` array.
/// Every `tool_use` block becomes a call; its `input` is taken as it is (the executor refuses
/// one that is not an object).
pub fn parse_calls(response: &Value) -> Result<Vec<ToolCall>, ParseError> {
    let (blocks, base) = match response.get("content") {
        Some(c) => (c, "/content"),
        None => (response, ""),
    };
    let blocks = blocks
        .as_array()
        .ok_or_else(|| ParseError::new(DIALECT, base, "expected an array of content blocks"))?;
    let mut calls = Vec::new();
    for (i, block) in blocks.iter().enumerate() {
        if block.get("type").and_then(Value::as_str) != Some("tool_use") {
            continue;
        }
        let path = format!("{base}/{i}");
        let id = str_field(block, "id", DIALECT, &path)?;
        let name = str_field(block, "name", DIALECT, &path)?;
        let input = block
            .get("input")
            .cloned()
            .unwrap_or_else(|| Value::Object(Map::new()));
        calls.push(ToolCall::new(id, name, input));
    }
    Ok(calls)
}

/// A result as a `tool_result` content block: `{type, tool_use_id, content, is_error}`.
/// With content parts, `content` is a list of blocks: the result's text, then each part
/// (an image as an `image` block, text as `text`, what Anthropic takes none of as a note).
pub fn tool_result(result: &ToolCallResult) -> Value {
    let text = |text: String| json!({"type": "text", "text": text});
    let content = crate::dialect::text_and_parts(result, text, |part| match part {
        crate::tools::content::Content::Image(b) => json!({
            "type": "image",
            "source": {
                "type": "base64",
                "media_type": b.mime_type,
                "data": b.base64(),
            }
        }),
        other => text(
            crate::dialect::part_text(other)
                .unwrap_or_else(|| other.note("Anthropic takes no such part in a tool result")),
        ),
    });
    json!({
        "type": "tool_result",
        "tool_use_id": result.tool_call_id,
        "content": content,
        "is_error": result.status == ToolStatus::Error,
    })
}

/// The user message that answers an assistant's tool calls: `{role: "user", content: [...]}`.
pub fn user_message<'a>(results: impl IntoIterator<Item = &'a ToolCallResult>) -> Value {
    let content: Vec<Value> = results.into_iter().map(tool_result).collect();
    json!({"role": "user", "content": content})
}
