//! OpenAI function calling, strict mode: Chat Completions
//! (`tools: [{type: "function", function: {name, description, parameters, strict: true}}]`) and
//! the Responses API (`tools: [{type: "function", name, description, parameters, strict: true}]`).
//!
//! The strict schema follows OpenAI's published "supported schemas" rules for Structured
//! Outputs:
//! - the root is an object, not `anyOf`; every object has `additionalProperties: false` and lists
//!   every property in `required`; a property that is optional in Rust is made nullable
//!   (`type: [T, "null"]`, `null` added to an `enum`, or `anyOf: [T, {type: "null"}]`), and a
//!   `null` the model sends for it is dropped again when the call is parsed
//!   ([`drop_optional_nulls`]), so serde sees the parameter as absent;
//! - kept keywords: `type`, `description`, `properties`, `required`, `additionalProperties`,
//!   `items`, `enum`, `anyOf`, `$ref`, `$defs`; for strings `pattern` and `format` (`date-time`,
//!   `time`, `date`, `duration`, `email`, `hostname`, `ipv4`, `ipv6`, `uuid`); for numbers
//!   `minimum`, `maximum`, `exclusiveMinimum`, `exclusiveMaximum`, `multipleOf`; for arrays
//!   `minItems`, `maxItems`. Everything else (`default`, `title`, `minLength`, Rust integer
//!   formats such as `uint64`, ...) is dropped: the executor still checks the neutral schema.
//! - `oneOf` becomes `anyOf` (serde's enum branches never overlap); a union of string constants
//!   becomes one `enum`, each value's doc appended to the description; `const` becomes a
//!   one-value `enum`.
//! - recursion stays as `$ref` (OpenAI supports `#` and `#/$defs/...`).
//!
//! Not expressible in strict mode: a map with free keys (`HashMap`), a value of any type
//! (`serde_json::Value`), `allOf`/`not`/tuples, and nesting deeper than [`MAX_DEPTH`]. Such a
//! tool is sent alone with `strict: false` and its neutral schema (the rest of the catalog stays
//! strict), and [`Dialect::strict_problems`](crate::dialect::Dialect::strict_problems) says why. An
//! enum as the whole input (not an object) is a [`DialectError`].

use serde_json::{Map, Value, json};

use crate::dialect::{
    DialectError, Json, Object, ParseError, Pointer, Unsupported, arguments_from_str, distribute,
    each_tool, field, first_union, has_field, loose_parameters, parameters_of, require_object_root,
    split_null, str_field, string_enum, undistributable,
};
use crate::tools::catalog::{CatalogItem, ToolCatalog};
use crate::tools::result::{ToolCall, ToolCallResult};

const DIALECT: &str = "openai";

/// How deep objects may nest in a strict schema (OpenAI documents 10 levels).
pub const MAX_DEPTH: usize = 10;

/// String formats strict mode accepts.
const FORMATS: &[&str] = &[
    "date-time",
    "time",
    "date",
    "duration",
    "email",
    "hostname",
    "ipv4",
    "ipv6",
    "uuid",
];

/// Numeric keywords strict mode accepts.
const NUMBER_KEYWORDS: &[&str] = &[
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
];

/// The base URL of OpenAI's API, for both of its formats.
pub(crate) const BASE_URL: &str = "https://api.openai.com/v1";

/// The key's usual variable.
pub(crate) const KEY_ENV: &str = "OPENAI_API_KEY";

/// `authorization: Bearer {key}`, when there is a key.
pub(crate) fn headers(key: Option<&str>) -> Vec<(&'static str, String)> {
    key.map(|k| ("authorization", format!("Bearer {k}")))
        .into_iter()
        .collect()
}

/// The tools strict mode cannot express, sent with `strict: false` (see the module docs).
pub(crate) fn strict_problems(catalog: &ToolCatalog) -> Vec<DialectError> {
    crate::dialect::strict_problems_by(catalog, DIALECT, |p| strict_schema(p).map(drop))
}

/// The catalog as Chat Completions `tools`.
pub fn chat_tools(catalog: &ToolCatalog) -> Result<Value, DialectError> {
    each_tool(catalog, chat_tool).map(|tools| tools.to_value())
}

/// One item of Chat Completions `tools`: `{type: "function", function: {...}}`.
pub(crate) fn chat_tool(item: &CatalogItem) -> Result<Json<'_>, DialectError> {
    let mut function = Object::with_capacity(4);
    function_fields(item, &mut function)?;
    let mut tool = Object::with_capacity(2);
    tool.push("type", "function");
    tool.push("function", function);
    Ok(tool.into())
}

/// The catalog as Responses API `tools` (the flat form).
pub fn responses_tools(catalog: &ToolCatalog) -> Result<Value, DialectError> {
    each_tool(catalog, responses_tool).map(|tools| tools.to_value())
}

/// One item of Responses API `tools`: `{type: "function", name, ...}`.
pub(crate) fn responses_tool(item: &CatalogItem) -> Result<Json<'_>, DialectError> {
    let mut tool = Object::with_capacity(5);
    tool.push("type", "function");
    function_fields(item, &mut tool)?;
    Ok(tool.into())
}

/// `name`, `description`, `parameters` and `strict`, added to `f`.
fn function_fields<'a>(item: &'a CatalogItem, f: &mut Object<'a>) -> Result<(), DialectError> {
    f.push("name", item.name().as_str());
    if let Some(d) = item.description() {
        f.push("description", d);
    }
    let neutral = parameters_of(item);
    match strict_schema(neutral) {
        Ok(parameters) => {
            f.push("parameters", parameters);
            f.push("strict", Json::Bool(true));
        }
        Err(why) => {
            let parameters = loose_parameters(DIALECT, item, neutral, &why)?;
            f.push("parameters", parameters);
            f.push("strict", Json::Bool(false));
        }
    }
    Ok(())
}

/// The strict-mode form of a neutral parameter schema.
pub(crate) fn strict_schema(neutral: &Value) -> Result<Json<'_>, Unsupported> {
    require_object_root(neutral)?;
    if let Some(k) = ["anyOf", "oneOf", "allOf"]
        .into_iter()
        .find(|k| neutral.get(*k).is_some())
    {
        return Err(Unsupported::at(
            format!("/{k}"),
            "the top level is a union (an enum input, or a struct with a flattened enum); \
             strict mode needs an object with properties at the top (make the enum a field)",
        ));
    }
    let mut root = convert(neutral, &Pointer::Root, 0)?;
    if let (Some(defs), Json::Object(out)) = (neutral.get("$defs"), &mut root) {
        let at_defs = Pointer::Key(&Pointer::Root, "$defs");
        let defs = defs.as_object();
        let mut converted = Object::with_capacity(defs.map_or(0, Map::len));
        for (name, def) in defs.into_iter().flatten() {
            converted.push(name, convert(def, &at_defs.key(name), 1)?);
        }
        out.insert("$defs", converted);
    }
    Ok(root)
}

fn convert<'a>(node: &'a Value, path: &Pointer<'_>, depth: usize) -> Result<Json<'a>, Unsupported> {
    if depth > MAX_DEPTH {
        return Err(Unsupported::at(
            path,
            format!("objects nest deeper than {MAX_DEPTH} levels, the strict-mode limit"),
        ));
    }
    let Some(obj) = node.as_object() else {
        return Err(any_value(path));
    };
    if crate::tools::schema::is_object_with_union(obj) {
        let union = distribute(obj).ok_or_else(|| undistributable(path))?;
        return convert(&union, path, depth).map(Json::into_owned);
    }
    let mut out = Object::with_capacity(8);
    if let Some(d) = field(obj, "description") {
        out.push("description", d);
    }
    if let Some(r) = field(obj, "$ref") {
        out.insert("$ref", r);
        return Ok(out.into());
    }
    for k in ["allOf", "not", "prefixItems", "if"] {
        if has_field(obj, k) {
            return Err(Unsupported::at(
                path.key(k),
                format!("`{k}` is not supported in strict mode"),
            ));
        }
    }
    if let Some((key, branches)) = first_union(obj, path)? {
        if string_enum(&mut out, obj, branches, &[("type", "string")]) {
            return Ok(out.into());
        }
        let at_union = path.key(key);
        let converted = branches
            .iter()
            .enumerate()
            .map(|(i, b)| convert(b, &at_union.index(i), depth))
            .collect::<Result<Vec<_>, _>>()?;
        out.insert("anyOf", Json::Array(converted));
        return Ok(out.into());
    }
    let Some(ty) = field(obj, "type") else {
        if let Some(c) = field(obj, "const") {
            out.insert("enum", Json::Array(vec![Json::from(c)]));
            return Ok(out.into());
        }
        if let Some(e) = field(obj, "enum") {
            out.insert("enum", e);
            return Ok(out.into());
        }
        return Err(any_value(path));
    };
    out.insert("type", ty);
    if let Some(c) = field(obj, "const") {
        out.insert("enum", Json::Array(vec![Json::from(c)]));
    }
    if let Some(e) = field(obj, "enum") {
        out.insert("enum", e);
    }
    let has = |t: &str| crate::tools::schema::has_type(obj, t);
    if has("object") {
        convert_object(obj, path, depth, &mut out)?;
    }
    if has("array") {
        let items = obj
            .get("items")
            .ok_or_else(|| Unsupported::at(path, "an array needs `items` in strict mode"))?;
        out.insert("items", convert(items, &path.key("items"), depth + 1)?);
        for k in ["minItems", "maxItems"] {
            copy(obj, &mut out, k);
        }
    }
    if has("string") {
        copy(obj, &mut out, "pattern");
        if let Some(f) = field(obj, "format").and_then(Value::as_str)
            && FORMATS.contains(&f)
        {
            out.insert("format", f);
        }
    }
    if has("integer") || has("number") {
        for k in NUMBER_KEYWORDS {
            copy(obj, &mut out, k);
        }
    }
    Ok(out.into())
}

fn convert_object<'a>(
    obj: &'a Map<String, Value>,
    path: &Pointer<'_>,
    depth: usize,
    out: &mut Object<'a>,
) -> Result<(), Unsupported> {
    if let Some(extra) = field(obj, "additionalProperties")
        && extra != &Value::Bool(false)
    {
        return Err(Unsupported::at(
            path.key("additionalProperties"),
            "a map with free keys (`HashMap`, `BTreeMap`) cannot be expressed in strict mode; \
             use a list of key/value structs",
        ));
    }
    let required = required_of(obj);
    let props = field(obj, "properties").and_then(Value::as_object);
    let mut properties = Object::with_capacity(props.map_or(0, Map::len));
    let at_properties = path.key("properties");
    for (name, prop) in props.into_iter().flatten() {
        let mut converted = convert(prop, &at_properties.key(name), depth + 1)?;
        if !required.contains(&name.as_str()) {
            converted = nullable(converted);
        }
        properties.push(name, converted);
    }
    let all = properties.keys().cloned().map(Json::Str).collect();
    out.insert("properties", properties);
    out.insert("required", Json::Array(all));
    out.insert("additionalProperties", Json::Bool(false));
    Ok(())
}

/// `{type: "null"}`.
fn null_schema<'a>() -> Json<'a> {
    let mut null = Object::with_capacity(1);
    null.push("type", "null");
    null.into()
}

/// Makes a strict schema also accept `null`.
fn nullable(schema: Json<'_>) -> Json<'_> {
    let Json::Object(mut obj) = schema else {
        return schema;
    };
    let accepts_null = |obj: &Object<'_>| {
        obj.get("type").is_some_and(|t| t.names_type("null"))
            || match obj.get("anyOf") {
                Some(Json::Array(b)) => b
                    .iter()
                    .any(|b| b.get("type").is_some_and(|t| t.as_str() == Some("null"))),
                Some(Json::Value(b)) => b
                    .as_array()
                    .is_some_and(|b| b.iter().any(|b| b.get("type").is_some_and(|t| t == "null"))),
                _ => false,
            }
    };
    if accepts_null(&obj) {
        return obj.into();
    }
    if let Some(branches) = obj.get_mut("anyOf")
        && branches.push_item(null_schema())
    {
        return obj.into();
    }
    let typed = match obj.get_mut("type") {
        Some(ty) if ty.as_str().is_some() => {
            let t = std::mem::replace(ty, Json::Null);
            *ty = Json::Array(vec![t, Json::from("null")]);
            true
        }
        Some(ty) => ty.push_item(Json::from("null")),
        None => false,
    };
    if !typed {
        let description = obj.remove("description");
        let mut wrapped = Object::with_capacity(2);
        if let Some(d) = description {
            wrapped.push("description", d);
        }
        wrapped.push("anyOf", Json::Array(vec![obj.into(), null_schema()]));
        return wrapped.into();
    }
    if let Some(values) = obj.get_mut("enum") {
        values.push_item(Json::Null);
    }
    obj.into()
}

fn copy<'a>(from: &'a Map<String, Value>, to: &mut Object<'a>, key: &'static str) {
    if let Some(v) = field(from, key) {
        to.insert(key, v);
    }
}

fn any_value(path: &Pointer<'_>) -> Unsupported {
    Unsupported::at(
        path,
        "a value of any type (`serde_json::Value`) cannot be expressed in strict mode; \
         give it a concrete type",
    )
}

/// Removes the `null`s a strict-mode model sends for parameters that are optional in the
/// neutral schema, at every object level the schema describes, so serde sees them as absent
/// (and `#[serde(default)]` applies).
///
/// ```
/// use serde_json::json;
/// let schema = json!({"type": "object", "properties": {"a": {"type": "string"},
///                     "b": {"type": "integer"}}, "required": ["a"]});
/// let mut args = json!({"a": "x", "b": null});
/// goondan_runtime::provider::openai::drop_optional_nulls(&mut args, &schema);
/// assert_eq!(args, json!({"a": "x"}));
/// ```
pub fn drop_optional_nulls(args: &mut Value, schema: &Value) {
    drop_nulls(args, schema, schema, 0);
}

/// How deep [`drop_optional_nulls`] follows `$ref`s and unions before it stops.
const MAX_NULL_DEPTH: usize = 64;

fn drop_nulls(args: &mut Value, node: &Value, root: &Value, depth: usize) {
    if depth > MAX_NULL_DEPTH {
        return;
    }
    let Some(obj) = node.as_object() else {
        return;
    };
    let (obj, _) = split_null(obj);
    if let Some(r) = obj.get("$ref").and_then(Value::as_str) {
        let target = match r.strip_prefix('#') {
            Some("") => Some(root),
            Some(pointer) => root.pointer(pointer),
            None => None,
        };
        if let Some(target) = target {
            drop_nulls(args, target, root, depth + 1);
        }
        return;
    }
    if crate::tools::schema::is_object_with_union(&obj) {
        if let Some(union) = distribute(&obj) {
            drop_nulls(args, &union, root, depth + 1);
        }
        return;
    }
    for key in ["oneOf", "anyOf"] {
        if let Some(branches) = obj.get(key).and_then(Value::as_array) {
            if let Some(branch) = branches.iter().find(|b| branch_matches(b, args)) {
                drop_nulls(args, branch, root, depth + 1);
            }
            return;
        }
    }
    match args {
        Value::Array(items) => {
            if let Some(item_schema) = obj.get("items") {
                for item in items {
                    drop_nulls(item, item_schema, root, depth + 1);
                }
            }
        }
        Value::Object(map) => {
            let Some(props) = obj.get("properties").and_then(Value::as_object) else {
                return;
            };
            let required = required_of(&obj);
            map.retain(|k, v| {
                !(v.is_null() && props.contains_key(k) && !required.contains(&k.as_str()))
            });
            for (k, v) in map.iter_mut() {
                if let Some(prop) = props.get(k) {
                    drop_nulls(v, prop, root, depth + 1);
                }
            }
        }
        _ => {}
    }
}

/// Whether `args` is meant for a union branch: an object whose required keys are all there and
/// whose constant properties (serde's enum tags) have their value.
fn branch_matches(branch: &Value, args: &Value) -> bool {
    let (Some(b), Some(a)) = (branch.as_object(), args.as_object()) else {
        return false;
    };
    let Some(props) = b.get("properties").and_then(Value::as_object) else {
        return false;
    };
    required_of(b).iter().all(|k| a.contains_key(*k))
        && props
            .iter()
            .all(|(k, p)| p.get("const").is_none_or(|c| a.get(k) == Some(c)))
}

fn required_of(obj: &Map<String, Value>) -> Vec<&str> {
    field(obj, "required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

/// The tool calls of a Chat Completions answer: a whole response (`choices[0].message`), an
/// assistant message, or its `tool_calls` array. `function.arguments` is a JSON string; text
/// that is not JSON is kept as a string (the executor refuses it with `E_TOOL_INVALID_ARGS`).
/// Optional parameters sent as `null` are dropped ([`drop_optional_nulls`]) for tools in
/// `catalog`.
pub fn parse_chat_calls(
    response: &Value,
    catalog: &ToolCatalog,
) -> Result<Vec<ToolCall>, ParseError> {
    let (calls, base) = if let Some(message) = response.pointer("/choices/0/message") {
        (message.get("tool_calls"), "/choices/0/message/tool_calls")
    } else if response.is_array() {
        (Some(response), "")
    } else {
        (response.get("tool_calls"), "/tool_calls")
    };
    let Some(calls) = calls else {
        return Ok(Vec::new());
    };
    let calls = calls
        .as_array()
        .ok_or_else(|| ParseError::new(DIALECT, base, "expected an array of tool calls"))?;
    calls
        .iter()
        .enumerate()
        .map(|(i, call)| {
            let path = format!("{base}/{i}");
            // Some servers leave the id out (or send it empty): the call gets `call_{i}`, as a
            // streamed call without one does.
            let id = match call.get("id") {
                None | Some(Value::Null) => format!("call_{i}"),
                Some(Value::String(s)) if s.is_empty() => format!("call_{i}"),
                Some(_) => str_field(call, "id", DIALECT, &path)?.to_owned(),
            };
            let function = call.get("function").ok_or_else(|| {
                ParseError::new(DIALECT, format!("{path}/function"), "expected an object")
            })?;
            let fpath = format!("{path}/function");
            let name = str_field(function, "name", DIALECT, &fpath)?;
            let args = raw_arguments(function.get("arguments"));
            Ok(normalised(ToolCall::new(id, name, args), catalog))
        })
        .collect()
}

/// The tool calls of a Responses API answer: a whole response (its `output` items) or the
/// items array; `function_call` items become calls (id = `call_id`), other items are skipped.
pub fn parse_responses_calls(
    response: &Value,
    catalog: &ToolCatalog,
) -> Result<Vec<ToolCall>, ParseError> {
    let (items, base) = match response.get("output") {
        Some(items) => (items, "/output"),
        None => (response, ""),
    };
    let items = items
        .as_array()
        .ok_or_else(|| ParseError::new(DIALECT, base, "expected an array of output items"))?;
    let mut calls = Vec::new();
    for (i, item) in items.iter().enumerate() {
        if item.get("type").and_then(Value::as_str) != Some("function_call") {
            continue;
        }
        let path = format!("{base}/{i}");
        let id = str_field(item, "call_id", DIALECT, &path)?;
        let name = str_field(item, "name", DIALECT, &path)?;
        let args = raw_arguments(item.get("arguments"));
        calls.push(normalised(ToolCall::new(id, name, args), catalog));
    }
    Ok(calls)
}

fn raw_arguments(raw: Option<&Value>) -> Value {
    match raw {
        Some(Value::String(s)) => arguments_from_str(s),
        Some(other) => other.clone(),
        None => Value::Object(Map::new()),
    }
}

fn normalised(mut call: ToolCall, catalog: &ToolCatalog) -> ToolCall {
    if let Some(schema) = catalog
        .get(&call.name)
        .and_then(|i| i.parameters().map(|p| &**p))
    {
        drop_optional_nulls(&mut call.args, schema);
    }
    call
}

/// A result as a Chat Completions tool message: `{role: "tool", tool_call_id, content}`.
/// A tool message takes only text: text parts join the text, images are announced there and
/// sent in the user message [`chat_images`] makes, and other parts become notes.
pub fn chat_result(result: &ToolCallResult) -> Value {
    let mut text = crate::dialect::result_text(result);
    if !result.content.is_empty() && result.output.as_ref().is_none_or(Value::is_null) {
        text.clear();
    }
    for part in &result.content {
        let line = match part {
            crate::tools::content::Content::Image(b) => {
                format!("[image {} follows in the next user message]", b.mime_type)
            }
            other => crate::dialect::part_text(other).unwrap_or_else(|| {
                other.note("Chat Completions takes no such part in a tool result")
            }),
        };
        if !text.is_empty() {
            text.push('\n');
        }
        text.push_str(&line);
    }
    json!({
        "role": "tool",
        "tool_call_id": result.tool_call_id,
        "content": text,
    })
}

/// The user message that carries the images of `results` (Chat Completions takes images only
/// in user messages), sent after the tool messages; `None` when they have none.
pub fn chat_images<'a>(results: impl IntoIterator<Item = &'a ToolCallResult>) -> Option<Value> {
    let mut parts = Vec::new();
    for result in results {
        for part in &result.content {
            if let Some(url) = crate::dialect::image_data_url(part) {
                parts.push(json!({"type": "text", "text": format!(
                    "The image returned by the tool call `{}` ({}):",
                    result.tool_call_id, result.tool_name)}));
                parts.push(json!({"type": "image_url", "image_url": {"url": url}}));
            }
        }
    }
    (!parts.is_empty()).then(|| json!({"role": "user", "content": parts}))
}

/// A result as a Responses API input item: `{type: "function_call_output", call_id, output}`.
/// With content parts, `output` is a list: `input_text` for the result's text and text
/// parts, `input_image` for images, and a note for what the Responses API takes none of.
pub fn responses_result(result: &ToolCallResult) -> Value {
    let text = |text: String| json!({"type": "input_text", "text": text});
    let output = crate::dialect::text_and_parts(result, text, |part| {
        match crate::dialect::image_data_url(part) {
            Some(url) => json!({"type": "input_image", "image_url": url}),
            None => text(
                crate::dialect::part_text(part)
                    .unwrap_or_else(|| part.note("the Responses API takes no such part here")),
            ),
        }
    });
    json!({
        "type": "function_call_output",
        "call_id": result.tool_call_id,
        "output": output,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn optional_enum_gets_null_in_its_values() {
        let schema = json!({"type": "object", "properties": {
            "c": {"type": "string", "enum": ["a", "b"]}}});
        let strict = strict_schema(&schema)
            .map(|s| s.to_value())
            .unwrap_or_default();
        assert_eq!(strict["properties"]["c"]["type"], json!(["string", "null"]));
        assert_eq!(strict["properties"]["c"]["enum"], json!(["a", "b", null]));
        assert_eq!(strict["required"], json!(["c"]));
    }

    #[test]
    fn optional_reference_is_wrapped_in_any_of_with_null() {
        let schema = json!({"type": "object", "properties": {"next": {"$ref": "#"}}});
        let strict = strict_schema(&schema)
            .map(|s| s.to_value())
            .unwrap_or_default();
        assert_eq!(
            strict["properties"]["next"],
            json!({"anyOf": [{"$ref": "#"}, {"type": "null"}]})
        );
    }
}
