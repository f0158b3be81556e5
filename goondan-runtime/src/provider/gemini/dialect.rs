//! The tool dialect of Google Gemini (see the module above for its rules).

use std::borrow::Cow;

use serde_json::{Map, Value, json};

use crate::dialect::{
    DialectError, Json, Object, ParseError, Pointer, Unsupported, distribute, each_tool, field,
    first_union, has_field, loose_parameters, parameters_of, require_object_root, split_null,
    str_field, string_enum, undistributable,
};
use crate::tools::catalog::{CatalogItem, ToolCatalog};
use crate::tools::result::{ToolCall, ToolCallResult, ToolStatus};

const DIALECT: &str = "gemini";

/// The prefix of call ids made up for `functionCall` parts that carry no `id`; a
/// `functionResponse` for such a call carries no `id` either.
pub const GENERATED_ID_PREFIX: &str = "gemini-call-";

/// Formats Gemini understands.
const FORMATS: &[&str] = &["int32", "int64", "float", "double", "date-time"];

/// Keywords copied as they are.
const KEPT: &[&str] = &[
    "minItems",
    "maxItems",
    "minLength",
    "maxLength",
    "pattern",
    "minimum",
    "maximum",
];

/// The tools Gemini's `Schema` cannot express, sent with `parametersJsonSchema` (see the
/// module docs).
pub(crate) fn strict_problems(catalog: &ToolCatalog) -> Vec<DialectError> {
    crate::dialect::strict_problems_by(catalog, DIALECT, |p| gemini_parameters(p).map(drop))
}

/// The catalog as the request's `tools`: `[{functionDeclarations: [...]}]`.
pub fn tools(catalog: &ToolCatalog) -> Result<Value, DialectError> {
    tools_form(catalog).map(|tools| tools.to_value())
}

/// The catalog as the request's `tools`, to write.
pub(crate) fn tools_form(catalog: &ToolCatalog) -> Result<Json<'_>, DialectError> {
    let mut tool = Object::with_capacity(1);
    tool.push("functionDeclarations", each_tool(catalog, declaration)?);
    Ok(Json::Array(vec![tool.into()]))
}

/// One function declaration: `{name, description?, parameters? | parametersJsonSchema}`.
pub(crate) fn declaration(item: &CatalogItem) -> Result<Json<'_>, DialectError> {
    let mut decl = Object::with_capacity(3);
    decl.push("name", item.name().as_str());
    if let Some(d) = item.description() {
        decl.push("description", d);
    }
    let neutral = parameters_of(item);
    match gemini_parameters(neutral) {
        Ok(Some(p)) => {
            decl.push("parameters", p);
        }
        Ok(None) => {}
        Err(why) => {
            let parameters = loose_parameters(DIALECT, item, neutral, &why)?;
            decl.push("parametersJsonSchema", parameters);
        }
    }
    Ok(decl.into())
}

/// The Gemini form of a neutral parameter schema; `None` for a tool without parameters.
pub(crate) fn gemini_parameters(neutral: &Value) -> Result<Option<Json<'_>>, Unsupported> {
    require_object_root(neutral)?;
    let empty = neutral
        .get("properties")
        .and_then(Value::as_object)
        .is_none_or(Map::is_empty);
    let composed = ["oneOf", "anyOf", "allOf"]
        .iter()
        .any(|k| neutral.get(*k).is_some());
    if empty && !composed {
        return Ok(None);
    }
    for name in neutral
        .get("properties")
        .and_then(Value::as_object)
        .into_iter()
        .flat_map(Map::keys)
    {
        if !is_parameter_name(name) {
            return Err(Unsupported::at(
                Pointer::Root.key("properties").key(name),
                format!(
                    "Gemini parameter names match `[A-Za-z_][A-Za-z0-9_]*` (at most 64); \
                     rename `{name}` (`#[serde(rename = \"...\")]`)"
                ),
            ));
        }
    }
    convert(neutral, &Pointer::Root, true).map(Some)
}

fn is_parameter_name(name: &str) -> bool {
    let mut chars = name.chars();
    name.len() <= 64
        && chars
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

fn convert<'a>(node: &'a Value, path: &Pointer<'_>, root: bool) -> Result<Json<'a>, Unsupported> {
    let Some(obj) = node.as_object() else {
        return Err(any_value(path));
    };
    if crate::tools::schema::is_object_with_union(obj) {
        let union = distribute(obj).ok_or_else(|| undistributable(path))?;
        return convert(&union, path, root).map(Json::into_owned);
    }
    if has_field(obj, "$ref") {
        return Err(Unsupported::at(
            path.key("$ref"),
            "a recursive type cannot be expressed: Gemini has no `$ref`/`$defs`",
        ));
    }
    for k in ["allOf", "not", "prefixItems", "if"] {
        if has_field(obj, k) {
            return Err(Unsupported::at(path.key(k), format!("Gemini has no `{k}`")));
        }
    }
    match split_null(obj) {
        (Cow::Borrowed(obj), nullable) => convert_node(obj, nullable, path, root),
        (Cow::Owned(obj), nullable) => {
            convert_node(&obj, nullable, path, root).map(Json::into_owned)
        }
    }
}

/// A node without `null` in its type, said `nullable` when it allowed null.
fn convert_node<'a>(
    obj: &'a Map<String, Value>,
    nullable: bool,
    path: &Pointer<'_>,
    root: bool,
) -> Result<Json<'a>, Unsupported> {
    let mut out = Object::with_capacity(8);
    if let Some(d) = field(obj, "description") {
        out.push("description", d);
    }
    if nullable {
        out.insert("nullable", Json::Bool(true));
    }
    if let Some((key, branches)) = first_union(obj, path)? {
        let fields = [("type", "STRING"), ("format", "enum")];
        if string_enum(&mut out, obj, branches, &fields) {
            return Ok(out.into());
        }
        let at_union = path.key(key);
        let converted = branches
            .iter()
            .enumerate()
            .map(|(i, b)| convert(b, &at_union.index(i), false))
            .collect::<Result<Vec<_>, _>>()?;
        let first = converted.first().and_then(|b| b.get("type")).cloned();
        if let Some(t) = first
            && converted
                .iter()
                .all(|b| b.get("type").and_then(Json::as_str) == t.as_str())
        {
            out.insert("type", t);
        }
        out.insert("anyOf", Json::Array(converted));
        return Ok(out.into());
    }
    let ty = match field(obj, "type") {
        Some(Value::String(t)) => t.as_str(),
        Some(Value::Array(_)) => {
            return Err(Unsupported::at(
                path.key("type"),
                "a value of several types cannot be expressed: Gemini takes one `type` per node",
            ));
        }
        _ => match (field(obj, "const"), field(obj, "enum")) {
            (Some(Value::String(_)), _) => "string",
            (None, Some(Value::Array(e))) if e.iter().all(Value::is_string) => "string",
            _ => return Err(any_value(path)),
        },
    };
    let gemini_type = match ty {
        "string" => "STRING",
        "number" => "NUMBER",
        "integer" => "INTEGER",
        "boolean" => "BOOLEAN",
        "array" => "ARRAY",
        "object" => "OBJECT",
        _ => {
            return Err(Unsupported::at(
                path.key("type"),
                format!("Gemini has no type `{ty}`"),
            ));
        }
    };
    out.insert("type", gemini_type);
    match (field(obj, "const"), field(obj, "enum")) {
        (Some(c), _) => {
            out.insert("enum", Json::Array(vec![Json::from(c)]));
        }
        (None, Some(e)) => {
            out.insert("enum", e);
        }
        _ => {}
    }
    if out.contains_key("enum") {
        if gemini_type != "STRING" {
            return Err(Unsupported::at(
                path.key("enum"),
                "Gemini enums hold strings only",
            ));
        }
        out.insert("format", "enum");
    } else if let Some(f) = field(obj, "format").and_then(Value::as_str)
        && FORMATS.contains(&f)
    {
        out.insert("format", f);
    }
    for &k in KEPT {
        if let Some(v) = field(obj, k) {
            out.insert(k, v);
        }
    }
    match gemini_type {
        "OBJECT" => convert_object(obj, path, root, &mut out)?,
        "ARRAY" => {
            let items = field(obj, "items").ok_or_else(|| {
                Unsupported::at(path, "an array needs `items`: Gemini types every node")
            })?;
            out.insert("items", convert(items, &path.key("items"), false)?);
        }
        _ => {}
    }
    Ok(out.into())
}

fn convert_object<'a>(
    obj: &'a Map<String, Value>,
    path: &Pointer<'_>,
    root: bool,
    out: &mut Object<'a>,
) -> Result<(), Unsupported> {
    if let Some(extra) = field(obj, "additionalProperties")
        && extra != &Value::Bool(false)
    {
        return Err(Unsupported::at(
            path.key("additionalProperties"),
            "a map with free keys (`HashMap`, `BTreeMap`) cannot be expressed: Gemini has no \
             `additionalProperties`; use a list of key/value structs",
        ));
    }
    let props = field(obj, "properties").and_then(Value::as_object);
    if props.is_none_or(Map::is_empty) && !root {
        return Err(Unsupported::at(
            path,
            "an object without properties cannot be expressed: Gemini needs at least one",
        ));
    }
    let mut properties = Object::with_capacity(props.map_or(0, Map::len));
    let at_properties = path.key("properties");
    for (name, prop) in props.into_iter().flatten() {
        properties.push(name, convert(prop, &at_properties.key(name), false)?);
    }
    out.insert("properties", properties);
    if let Some(r) = field(obj, "required")
        && r.as_array().is_some_and(|r| !r.is_empty())
    {
        out.insert("required", r);
    }
    Ok(())
}

fn any_value(path: &Pointer<'_>) -> Unsupported {
    Unsupported::at(
        path,
        "a value of any type (`serde_json::Value`) cannot be expressed: Gemini types every node",
    )
}

/// The calls of a `generateContent` answer: a response (`candidates[0].content.parts`), a
/// content (`parts`) or the parts array. Each `functionCall` part becomes a call; one without
/// an `id` gets `gemini-call-{n}` (see [`GENERATED_ID_PREFIX`]).
pub fn parse_calls(response: &Value) -> Result<Vec<ToolCall>, ParseError> {
    let (parts, base) = if let Some(p) = response.pointer("/candidates/0/content/parts") {
        (p, "/candidates/0/content/parts")
    } else if let Some(p) = response.get("parts") {
        (p, "/parts")
    } else {
        (response, "")
    };
    let parts = parts
        .as_array()
        .ok_or_else(|| ParseError::new(DIALECT, base, "expected an array of parts"))?;
    let mut calls = Vec::new();
    for (i, part) in parts.iter().enumerate() {
        let Some(call) = part.get("functionCall") else {
            continue;
        };
        let path = format!("{base}/{i}/functionCall");
        let name = str_field(call, "name", DIALECT, &path)?;
        let id = match call.get("id").and_then(Value::as_str) {
            Some(id) => id.to_owned(),
            None => format!("{GENERATED_ID_PREFIX}{i}"),
        };
        let args = call
            .get("args")
            .cloned()
            .unwrap_or_else(|| Value::Object(Map::new()));
        calls.push(ToolCall::new(id, name, args));
    }
    Ok(calls)
}

/// A result as a `functionResponse` part: `{functionResponse: {name, id?, response}}`, where
/// `response` is `{output}`, `{error: {code, name, message, suggestion?, helpUrl?}}` or
/// `{pending: {handle}}`.
pub fn function_response(result: &ToolCallResult) -> Value {
    let mut response = match result.status {
        ToolStatus::Ok => json!({"output": result.output}),
        ToolStatus::Pending => json!({"pending": {"handle": result.handle}}),
        ToolStatus::Error => json!({
            "error": result.error.as_ref().map(crate::dialect::error_json),
        }),
    };
    let mut parts = Vec::new();
    let mut notes = Vec::new();
    for part in &result.content {
        match part {
            crate::tools::content::Content::Image(b) | crate::tools::content::Content::Audio(b) => {
                parts.push(json!({"inlineData": {
                    "mimeType": b.mime_type,
                    "data": b.base64(),
                }}));
            }
            other => {
                notes.push(crate::dialect::part_text(other).unwrap_or_else(|| {
                    other.note("Gemini takes no such part in a function response")
                }))
            }
        }
    }
    if !notes.is_empty()
        && let Some(o) = response.as_object_mut()
    {
        o.insert("content".into(), Value::from(notes.join("\n")));
    }
    let mut inner = Map::new();
    inner.insert("name".into(), Value::from(result.tool_name.as_str()));
    if !result.tool_call_id.starts_with(GENERATED_ID_PREFIX) {
        inner.insert("id".into(), Value::from(result.tool_call_id.as_str()));
    }
    inner.insert("response".into(), response);
    if !parts.is_empty() {
        // Gemini's multimodal function responses: the media as inline data parts.
        inner.insert("parts".into(), Value::Array(parts));
    }
    json!({"functionResponse": inner})
}

/// The content that answers a model's function calls: `{role: "user", parts: [...]}`.
pub fn user_content<'a>(results: impl IntoIterator<Item = &'a ToolCallResult>) -> Value {
    let parts: Vec<Value> = results.into_iter().map(function_response).collect();
    json!({"role": "user", "parts": parts})
}
