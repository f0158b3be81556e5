//! Model Context Protocol: `tools/list` entries `{name, title, description, inputSchema,
//! outputSchema, annotations}` out, `tools/call` requests in, `CallToolResult` (`content`,
//! `structuredContent`, `isError`) out. The MCP server lists tools and reads their calls with
//! the same functions (`listed`, `call`), so the dialect and the server agree.
//!
//! `inputSchema` is the neutral schema as it is: JSON Schema 2020-12, the protocol's default
//! dialect. MCP requires `type: "object"` at its root, which every registered tool has.

use std::borrow::Cow;

use arcstr::ArcStr;
use serde_json::{Map, Value, json};

use super::{
    DialectError, Json, Object, ParseError, each_tool, parameters_of, require_object_root,
    str_field,
};
use crate::tools::catalog::{CatalogItem, ToolCatalog};
use crate::tools::content::Content;
use crate::tools::output_schema::OutputSchema;
use crate::tools::result::{ToolCall, ToolCallResult, ToolStatus};

const DIALECT: &str = "mcp";

/// The catalog as a `tools/list` result: `{tools: [{name, title?, description?, inputSchema,
/// outputSchema?, annotations?}]}`.
pub fn tools_list(catalog: &ToolCatalog) -> Result<Value, DialectError> {
    list(catalog).map(|list| list.to_value())
}

/// The `tools/list` result, as [`tools_list`] says.
pub(crate) fn list(catalog: &ToolCatalog) -> Result<Json<'_>, DialectError> {
    let mut list = Object::with_capacity(1);
    list.push("tools", each_tool(catalog, tool)?);
    Ok(list.into())
}

/// One entry of `tools/list`: `{name, title?, description?, inputSchema, outputSchema?,
/// annotations?}`, as [`entry`] makes it.
pub(crate) fn tool(item: &CatalogItem) -> Result<Json<'_>, DialectError> {
    require_object_root(parameters_of(item)).map_err(|e| e.for_tool(item, DIALECT))?;
    Ok(entry(item, item.name().as_str()).into())
}

/// The `tools/list` entry of `item` published as `name`, as a map (see [`entry`]).
#[cfg(feature = "mcp")]
pub(crate) fn listed(item: &CatalogItem, name: &str) -> Map<String, Value> {
    entry(item, name).to_map()
}

/// The `tools/list` entry of `item` published as `name`: the one listing, which the MCP server
/// serves too ([`listed`]). The name as it is (NAME-2), the title, the description, the input
/// schema whole, the output schema when the export publishes one, and the annotations as MCP's
/// hints (`readOnlyHint`, `destructiveHint`, `idempotentHint`, `openWorldHint`) when the export
/// says anything about itself.
fn entry<'a>(item: &'a CatalogItem, name: &'a str) -> Object<'a> {
    let mut tool = Object::with_capacity(7);
    tool.push("name", name);
    let annotations = item.annotations();
    if let Some(title) = annotations.and_then(|a| a.title.as_deref()) {
        tool.push("title", title);
    }
    if let Some(d) = item.description() {
        tool.push("description", d);
    }
    tool.push("inputSchema", parameters_of(item));
    if let Some(schema) = item.output_schema().map(|s| s.schema())
        && schema.is_object()
    {
        tool.push("outputSchema", schema);
    }
    if let Some(a) = annotations.filter(|a| !a.is_empty()) {
        let mut hints = Object::with_capacity(5);
        let mut hint = |key: &'static str, value: Option<bool>| {
            if let Some(value) = value {
                hints.push(key, Json::Bool(value));
            }
        };
        hint("readOnlyHint", a.read_only);
        hint("destructiveHint", a.destructive);
        hint("idempotentHint", a.idempotent);
        hint("openWorldHint", a.open_world);
        if let Some(title) = &a.title {
            hints.push("title", title.as_str());
        }
        tool.push("annotations", hints);
    }
    if let Some(ui) = item.ui() {
        // MCP Apps (SEP-1865): the page and who may call the tool, `visibility` always written.
        let mut meta = Object::with_capacity(2);
        if let Some(uri) = &ui.resource_uri {
            meta.push("resourceUri", uri.as_str());
        }
        meta.push(
            "visibility",
            Json::Array(
                ui.visibility
                    .as_array()
                    .iter()
                    .map(|w| Json::from(*w))
                    .collect(),
            ),
        );
        let mut outer = Object::with_capacity(1);
        outer.push("ui", meta);
        tool.push("_meta", outer);
    }
    tool
}

/// The call of a `tools/call` JSON-RPC request `{jsonrpc, id, method, params: {name,
/// arguments?}}`. The call id is the request id (a number is written in decimal); missing
/// `arguments` means no arguments.
pub fn parse_call(request: &Value) -> Result<ToolCall, ParseError> {
    if request.get("method").and_then(Value::as_str) != Some("tools/call") {
        return Err(ParseError::new(DIALECT, "/method", "expected `tools/call`"));
    }
    let id = match request.get("id") {
        Some(Value::String(s)) => ArcStr::from(s.as_str()),
        Some(Value::Number(n)) => ArcStr::from(n.to_string()),
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
    Ok(call(
        id,
        ArcStr::from(name),
        params.get("arguments").cloned(),
    ))
}

/// The call a `tools/call` makes: the one reading of its parts, which the MCP server uses too
/// (on the request rmcp has read). `id` is the call's id; missing `arguments` means no
/// arguments, and arguments that are not an object are kept as they are, for the executor to
/// refuse.
pub(crate) fn call(id: ArcStr, name: ArcStr, arguments: Option<Value>) -> ToolCall {
    ToolCall::new(
        id,
        name,
        arguments.unwrap_or_else(|| Value::Object(Map::new())),
    )
}

/// How a result reads over MCP: the rule [`call_result`] states, which the MCP server follows
/// too, plus the case of an export that publishes an output schema: `structuredContent` is
/// then the output valid against it (wrapped as `{result}` when the schema says so), the text
/// is that JSON, and an error carries no `structuredContent` (it could never be valid).
pub(crate) struct CallShape<'a> {
    /// The leading text block; `None` when the parts alone are the result. Borrowed when it
    /// is the output string itself.
    pub text: Option<Cow<'a, str>>,
    /// The content parts after the text.
    pub parts: &'a [Content],
    /// `structuredContent`, when there is one.
    pub structured: Option<Value>,
    /// `isError`.
    pub is_error: bool,
}

/// The MCP shape of `result`, for an export publishing `output_schema`.
pub(crate) fn call_shape<'a>(
    result: &'a ToolCallResult,
    output_schema: Option<&OutputSchema>,
) -> CallShape<'a> {
    let output = result.output.as_ref().unwrap_or(&Value::Null);
    let (text, structured) = match (result.status, output_schema, output) {
        (ToolStatus::Error, ..) => {
            let structured = output_schema
                .is_none()
                .then(|| json!({"error": result.error.as_ref().map(super::error_json)}));
            return CallShape {
                text: Some(Cow::Owned(super::result_text(result))),
                parts: &[],
                structured,
                is_error: true,
            };
        }
        (ToolStatus::Pending, ..) => {
            let pending = json!({"status": "pending", "handle": result.handle});
            (Some(Cow::Owned(pending.to_string())), Some(pending))
        }
        (ToolStatus::Ok, None, Value::Null) if !result.content.is_empty() => (None, None),
        (ToolStatus::Ok, Some(schema), _) => {
            let s = schema.structured(output.clone());
            (Some(Cow::Owned(s.to_string())), Some(s))
        }
        (ToolStatus::Ok, None, Value::String(text)) => (Some(Cow::Borrowed(text.as_str())), None),
        (ToolStatus::Ok, None, Value::Object(_)) => {
            (Some(Cow::Owned(output.to_string())), Some(output.clone()))
        }
        (ToolStatus::Ok, None, other) => (
            Some(Cow::Owned(other.to_string())),
            Some(json!({ "result": other })),
        ),
    };
    CallShape {
        text,
        parts: &result.content,
        structured,
        is_error: false,
    }
}

/// A result as a `CallToolResult` (`content`, `structuredContent`, `isError`), for an export
/// without output schema:
///
/// - `ok` with content parts (images, audio, resources, links) and no output: the parts alone.
/// - `ok`: a string output is one text block as it is, with no structured copy; an object is
///   `structuredContent` as it is and anything else `{result: output}`, and the text is the
///   output as JSON. Content parts follow the text.
/// - `pending`: `{status: "pending", handle}` as text and as `structuredContent`.
/// - `error`: `isError: true`, the structured error as text (`error CODE (Name): message`,
///   suggestion, help URL) and as `structuredContent: {error: {code, name, message,
///   suggestion?, helpUrl?}}`.
///
/// The MCP server answers by the same rule.
pub fn call_result(result: &ToolCallResult) -> Value {
    let shape = call_shape(result, None);
    let mut content: Vec<Value> = shape
        .text
        .map(|text| json!({"type": "text", "text": text}))
        .into_iter()
        .collect();
    content.extend(shape.parts.iter().map(Content::to_json));
    let mut out = Map::new();
    out.insert("content".into(), Value::Array(content));
    if let Some(s) = shape.structured {
        out.insert("structuredContent".into(), s);
    }
    out.insert("isError".into(), Value::Bool(shape.is_error));
    Value::Object(out)
}

/// The JSON-RPC response to a `tools/call` request with id `id`.
pub fn response(id: Value, result: &ToolCallResult) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "result": call_result(result)})
}

/// The MCP dialect, as [`Dialect::MCP`](super::Dialect::MCP).
pub(crate) struct Mcp;

impl super::ToolDialect for Mcp {
    fn name(&self) -> &'static str {
        DIALECT
    }

    fn tool(&self, item: &CatalogItem) -> Result<Value, DialectError> {
        tool(item).map(|tool| tool.to_value())
    }

    fn tools(&self, catalog: &ToolCatalog) -> Result<Value, DialectError> {
        list(catalog).map(|list| list.to_value())
    }

    fn tools_json(&self, catalog: &ToolCatalog) -> Result<String, DialectError> {
        list(catalog).map(|list| list.to_text())
    }

    fn parse_calls(&self, answer: &Value, _: &ToolCatalog) -> Result<Vec<ToolCall>, ParseError> {
        parse_call(answer).map(|call| vec![call])
    }

    fn render_result(&self, result: &ToolCallResult) -> Value {
        call_result(result)
    }
}
