//! The tool dialect of Google Gemini (see the module above for its rules).

use serde_json::{Map, Value, json};

use crate::dialect::{
    DialectError, ParseError, Unsupported, distribute, each_tool, first_union, loose_parameters,
    parameters_of, require_object_root, split_null, str_field, string_enum, undistributable,
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
    let declarations = each_tool(catalog, declaration)?;
    Ok(json!([{"functionDeclarations": declarations}]))
}

/// One function declaration: `{name, description?, parameters? | parametersJsonSchema}`.
pub(crate) fn declaration(item: &CatalogItem) -> Result<Value, DialectError> {
    let mut decl = Map::new();
    decl.insert("name".into(), Value::from(item.name().as_str()));
    if let Some(d) = item.description() {
        decl.insert("description".into(), Value::from(d));
    }
    let neutral = parameters_of(item);
    match gemini_parameters(&neutral) {
        Ok(Some(p)) => {
            decl.insert("parameters".into(), p);
        }
        Ok(None) => {}
        Err(why) => {
            let parameters = loose_parameters(DIALECT, item, &neutral, &why)?;
            decl.insert("parametersJsonSchema".into(), parameters);
        }
    }
    Ok(Value::Object(decl))
}

/// The Gemini form of a neutral parameter schema; `None` for a tool without parameters.
pub(crate) fn gemini_parameters(neutral: &Value) -> Result<Option<Value>, Unsupported> {
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
                &format!("/properties/{}", crate::tools::schema::escape_pointer(name)),
                format!(
                    "Gemini parameter names match `[A-Za-z_][A-Za-z0-9_]*` (at most 64); \
                     rename `{name}` (`#[serde(rename = \"...\")]`)"
                ),
            ));
        }
    }
    convert(neutral, "", true).map(Some)
}

fn is_parameter_name(name: &str) -> bool {
    let mut chars = name.chars();
    name.len() <= 64
        && chars
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

fn convert(node: &Value, path: &str, root: bool) -> Result<Value, Unsupported> {
    let Some(obj) = node.as_object() else {
        return Err(any_value(path));
    };
    if crate::tools::schema::is_object_with_union(obj) {
        let union = distribute(obj).ok_or_else(|| undistributable(path))?;
        return convert(&union, path, root);
    }
    if obj.contains_key("$ref") {
        return Err(Unsupported::at(
            &format!("{path}/$ref"),
            "a recursive type cannot be expressed: Gemini has no `$ref`/`$defs`",
        ));
    }
    for k in ["allOf", "not", "prefixItems", "if"] {
        if obj.contains_key(k) {
            return Err(Unsupported::at(
                &format!("{path}/{k}"),
                format!("Gemini has no `{k}`"),
            ));
        }
    }
    let (obj, nullable) = split_null(obj);
    let mut out = Map::new();
    if let Some(d) = obj.get("description") {
        out.insert("description".into(), d.clone());
    }
    if nullable {
        out.insert("nullable".into(), Value::Bool(true));
    }
    if let Some((key, branches)) = first_union(&obj, path)? {
        let fields = [("type", "STRING"), ("format", "enum")];
        if string_enum(&mut out, &obj, branches, &fields) {
            return Ok(Value::Object(out));
        }
        let converted = branches
            .iter()
            .enumerate()
            .map(|(i, b)| convert(b, &format!("{path}/{key}/{i}"), false))
            .collect::<Result<Vec<_>, _>>()?;
        let first = converted.first().and_then(|b| b.get("type")).cloned();
        if let Some(t) = first
            && converted.iter().all(|b| b.get("type") == Some(&t))
        {
            out.insert("type".into(), t);
        }
        out.insert("anyOf".into(), Value::Array(converted));
        return Ok(Value::Object(out));
    }
    let ty = match obj.get("type") {
        Some(Value::String(t)) => t.as_str(),
        Some(Value::Array(_)) => {
            return Err(Unsupported::at(
                &format!("{path}/type"),
                "a value of several types cannot be expressed: Gemini takes one `type` per node",
            ));
        }
        _ => match (obj.get("const"), obj.get("enum")) {
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
                &format!("{path}/type"),
                format!("Gemini has no type `{ty}`"),
            ));
        }
    };
    out.insert("type".into(), Value::from(gemini_type));
    match (obj.get("const"), obj.get("enum")) {
        (Some(c), _) => {
            out.insert("enum".into(), json!([c]));
        }
        (None, Some(e)) => {
            out.insert("enum".into(), e.clone());
        }
        _ => {}
    }
    if out.contains_key("enum") {
        if gemini_type != "STRING" {
            return Err(Unsupported::at(
                &format!("{path}/enum"),
                "Gemini enums hold strings only",
            ));
        }
        out.insert("format".into(), Value::from("enum"));
    } else if let Some(f) = obj.get("format").and_then(Value::as_str)
        && FORMATS.contains(&f)
    {
        out.insert("format".into(), Value::from(f));
    }
    for k in KEPT {
        if let Some(v) = obj.get(*k) {
            out.insert((*k).to_owned(), v.clone());
        }
    }
    match gemini_type {
        "OBJECT" => convert_object(&obj, path, root, &mut out)?,
        "ARRAY" => {
            let items = obj.get("items").ok_or_else(|| {
                Unsupported::at(path, "an array needs `items`: Gemini types every node")
            })?;
            out.insert(
                "items".into(),
                convert(items, &format!("{path}/items"), false)?,
            );
        }
        _ => {}
    }
    Ok(Value::Object(out))
}

fn convert_object(
    obj: &Map<String, Value>,
    path: &str,
    root: bool,
    out: &mut Map<String, Value>,
) -> Result<(), Unsupported> {
    if let Some(extra) = obj.get("additionalProperties")
        && extra != &Value::Bool(false)
    {
        return Err(Unsupported::at(
            &format!("{path}/additionalProperties"),
            "a map with free keys (`HashMap`, `BTreeMap`) cannot be expressed: Gemini has no \
             `additionalProperties`; use a list of key/value structs",
        ));
    }
    let props = obj.get("properties").and_then(Value::as_object);
    if props.is_none_or(Map::is_empty) && !root {
        return Err(Unsupported::at(
            path,
            "an object without properties cannot be expressed: Gemini needs at least one",
        ));
    }
    let mut properties = Map::new();
    for (name, prop) in props.into_iter().flatten() {
        let p = format!(
            "{path}/properties/{}",
            crate::tools::schema::escape_pointer(name)
        );
        properties.insert(name.clone(), convert(prop, &p, false)?);
    }
    out.insert("properties".into(), Value::Object(properties));
    if let Some(r) = obj.get("required").and_then(Value::as_array)
        && !r.is_empty()
    {
        out.insert("required".into(), Value::Array(r.clone()));
    }
    Ok(())
}

fn any_value(path: &str) -> Unsupported {
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
