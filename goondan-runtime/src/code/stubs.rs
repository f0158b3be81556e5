//! The functions as the model reads them: one Python stub per catalog item, rendered from its
//! JSON Schema and description, inside the code tool's description.
//!
//! Parameters are keyword-only (`*, path: str, limit: int | None = None`): a required property
//! has no default, an optional one defaults to `None`. Types follow the schema (`string` is
//! `str`, `integer` `int`, `number` `float`, `boolean` `bool`, `array` `list[...]`, `object`
//! `dict`, an `enum` or `const` a `Literal[...]`, a list of types or `anyOf` a union); anything
//! the stub cannot say is `Any`. The output schema, where there is one, is the return type.

use std::fmt::Write;

use serde_json::Value;

use super::names::{Function, Functions, identifier};

/// How deep a type is spelled out before it is `Any`.
const MAX_TYPE_DEPTH: usize = 4;

/// The Python type of a JSON Schema.
pub(crate) fn python_type(schema: &Value) -> String {
    type_at(schema, 0)
}

fn type_at(schema: &Value, depth: usize) -> String {
    if depth > MAX_TYPE_DEPTH {
        return "Any".into();
    }
    let Some(object) = schema.as_object() else {
        return "Any".into();
    };
    if let Some(values) = object.get("enum").and_then(Value::as_array) {
        return literal(values);
    }
    if let Some(value) = object.get("const") {
        return literal(std::slice::from_ref(value));
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(options) = object.get(key).and_then(Value::as_array) {
            return union(options.iter().map(|o| type_at(o, depth + 1)));
        }
    }
    match object.get("type") {
        Some(Value::String(t)) => simple(t, object, depth),
        Some(Value::Array(types)) => union(
            types
                .iter()
                .filter_map(Value::as_str)
                .map(|t| simple(t, object, depth)),
        ),
        _ => "Any".into(),
    }
}

fn simple(kind: &str, object: &serde_json::Map<String, Value>, depth: usize) -> String {
    match kind {
        "string" => "str".into(),
        "integer" => "int".into(),
        "number" => "float".into(),
        "boolean" => "bool".into(),
        "null" => "None".into(),
        "array" => match object.get("items") {
            Some(items) => format!("list[{}]", type_at(items, depth + 1)),
            None => "list".into(),
        },
        "object" => match object.get("additionalProperties") {
            Some(values @ Value::Object(_)) if object.get("properties").is_none() => {
                format!("dict[str, {}]", type_at(values, depth + 1))
            }
            _ => "dict".into(),
        },
        _ => "Any".into(),
    }
}

fn literal(values: &[Value]) -> String {
    let shown: Vec<String> = values
        .iter()
        .map(|v| match v {
            Value::String(s) => python_str(s),
            Value::Null => "None".into(),
            Value::Bool(true) => "True".into(),
            Value::Bool(false) => "False".into(),
            other => other.to_string(),
        })
        .collect();
    format!("Literal[{}]", shown.join(", "))
}

fn union(types: impl Iterator<Item = String>) -> String {
    let mut seen: Vec<String> = Vec::new();
    for t in types {
        if !seen.contains(&t) {
            seen.push(t);
        }
    }
    if seen.iter().any(|t| t == "Any") || seen.is_empty() {
        return "Any".into();
    }
    seen.join(" | ")
}

/// A Python string literal of `s`.
fn python_str(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| "''".into())
}

/// Text safe inside a `"""` docstring.
fn doc_text(text: &str) -> String {
    text.replace('\\', "\\\\").replace("\"\"\"", "\\\"\\\"\\\"")
}

/// The stub of one function, indented under its resource's `class`.
fn stub(out: &mut String, function: &Function) {
    let item = &function.item;
    let schema = item
        .parameters()
        .map(|p| p.as_ref().clone())
        .unwrap_or(Value::Null);
    let properties = schema.get("properties").and_then(Value::as_object);
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let mut params = Vec::new();
    let mut unnamed = Vec::new();
    let mut docs = Vec::new();
    // Required first: Python wants them before those with a default.
    let mut entries: Vec<(&String, &Value)> =
        properties.map(|p| p.iter().collect()).unwrap_or_default();
    entries.sort_by_key(|(name, _)| !required.contains(&name.as_str()));
    for (name, property) in entries {
        let kind = python_type(property);
        let is_required = required.contains(&name.as_str());
        if identifier(name, false) != *name {
            unnamed.push(name.as_str());
        } else if is_required {
            params.push(format!("{name}: {kind}"));
        } else if kind.ends_with("| None") || kind == "Any" {
            params.push(format!("{name}: {kind} = None"));
        } else {
            params.push(format!("{name}: {kind} | None = None"));
        }
        if let Some(d) = property.get("description").and_then(Value::as_str) {
            docs.push(format!("{name}: {}", d.trim()));
        }
    }
    let signature = if params.is_empty() {
        String::new()
    } else {
        format!("*, {}", params.join(", "))
    };
    let returns = match item.output_schema() {
        Some(output) if output.wraps_result() => {
            python_type(&output.schema()["properties"]["result"])
        }
        Some(_) => "dict".into(),
        None => "Any".into(),
    };
    let _ = writeln!(out, "    @staticmethod");
    let _ = writeln!(
        out,
        "    def {}({signature}) -> {returns}:",
        function.attribute
    );
    let mut doc = item
        .description()
        .map(str::trim)
        .unwrap_or_default()
        .to_owned();
    if !unnamed.is_empty() {
        let keys: Vec<String> = unnamed.iter().map(|n| python_str(n)).collect();
        let _ = write!(
            doc,
            "\nKeys that are not Python names go in `**{{...}}`: {}.",
            keys.join(", ")
        );
    }
    if let Some(output) = item.output_schema().filter(|o| !o.wraps_result())
        && let Some(fields) = output.schema().get("properties").and_then(Value::as_object)
    {
        let fields: Vec<String> = fields
            .iter()
            .map(|(k, v)| format!("{k}: {}", python_type(v)))
            .collect();
        let _ = write!(doc, "\nReturns a dict: {{{}}}.", fields.join(", "));
    }
    if !docs.is_empty() {
        let _ = write!(doc, "\n\n{}", docs.join("\n"));
    }
    let doc = doc_text(doc.trim());
    let indented = doc.replace('\n', "\n        ");
    let _ = writeln!(out, "        \"\"\"{indented}\"\"\"");
}

/// How many functions the code tool's description lists when the Step also offers
/// `code__search`: a catalog of more has the model search for the ones it needs.
pub(crate) const LISTED_WITH_SEARCH: usize = 30;

/// The code tool's description: how to write the program, then the stubs of `functions`, or,
/// when `search` is offered and there are more than [`LISTED_WITH_SEARCH`] of them, where to
/// find them.
pub(crate) fn describe(
    functions: &Functions,
    max_calls: usize,
    search: Option<&str>,
    answers: bool,
) -> String {
    let mut out = String::from(
        "Runs a short Python program (a subset of Python 3; the modules are `json`, `re`, `math`, \
         `datetime`, `collections`, `itertools` and `functools`; no files, no network). The functions below are the tools: call them with \
         keyword arguments, loop and filter in code, and end with an expression (its value is the \
         result) or print what matters. A tool's result is a plain value (dict, list, str); a \
         failed call raises `ToolError` (str(e) starts with the error code) which the program \
         can catch.",
    );
    let _ = write!(out, " At most {max_calls} tool calls per program.");
    if answers {
        out.push_str(
            " When the program has what the user asked for, end it with \
             `final_answer(text)`: `text` is then your answer to the user, and the turn ends \
             without another request to you (do so only when the text needs nothing more from \
             you than the program computes).",
        );
    }
    match search {
        Some(search) if functions.len() > LISTED_WITH_SEARCH => {
            let objects: Vec<&str> = functions.iter().map(|(object, _)| object).collect();
            let _ = write!(
                out,
                "\n\nThere are {} functions, on the objects {}. Call `{search}` first: it \
                 answers the stubs of the functions that match what you need.",
                functions.len(),
                objects.join(", ")
            );
        }
        _ => {
            out.push_str("\n\n");
            classes(
                &mut out,
                functions.iter().map(|(o, list)| (o, list.iter().collect())),
            );
        }
    }
    if !functions.left_out.is_empty() {
        let _ = write!(
            out,
            "\nNot callable from code (their Python names clash): {}.",
            functions.left_out.join(", ")
        );
    }
    out
}

/// The stubs of `found` (functions of `functions`, in the order given), each under its
/// object's `class`, objects in the order they first appear.
pub(crate) fn stubs_of(found: &[&Function], functions: &Functions) -> String {
    let mut objects: Vec<(&str, Vec<&Function>)> = Vec::new();
    for function in found {
        let Some(object) = functions.object_of(function) else {
            continue;
        };
        match objects.iter_mut().find(|(o, _)| *o == object) {
            Some((_, list)) => list.push(function),
            None => objects.push((object, vec![function])),
        }
    }
    let mut out = String::new();
    classes(&mut out, objects.into_iter());
    out
}

/// A fenced Python block of `class object:` with the stubs of its functions, per object.
fn classes<'a>(out: &mut String, objects: impl Iterator<Item = (&'a str, Vec<&'a Function>)>) {
    out.push_str("```python\n");
    for (object, list) in objects {
        let _ = writeln!(out, "class {object}:");
        for function in list {
            stub(out, function);
        }
        out.push('\n');
    }
    out.push_str("```");
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::catalog::{CatalogItem, ToolCatalog};
    use crate::tools::name::ToolName;
    use serde_json::json;

    #[test]
    fn schema_types_become_python_types() {
        assert_eq!(python_type(&json!({"type": "string"})), "str");
        assert_eq!(
            python_type(&json!({"type": ["integer", "null"]})),
            "int | None"
        );
        // An optional property that may be null already says `None` once.
        let item = CatalogItem::new(ToolName::parse("fs__read").unwrap()).with_parameters(
            json!({"type": "object", "properties": {"max": {"type": ["integer", "null"]}}}),
        );
        let mut catalog = ToolCatalog::new();
        catalog.push(item);
        let described = describe(&Functions::of(&catalog, "code__run"), 50, None, false);
        assert!(described.contains("max: int | None = None)"), "{described}");
        assert_eq!(
            python_type(&json!({"enum": ["a", "b"]})),
            "Literal[\"a\", \"b\"]"
        );
        assert_eq!(
            python_type(&json!({"type": "array", "items": {"type": "number"}})),
            "list[float]"
        );
        assert_eq!(
            python_type(&json!({"type": "object", "additionalProperties": {"type": "boolean"}})),
            "dict[str, bool]"
        );
        assert_eq!(
            python_type(&json!({"anyOf": [{"type": "string"}, {}]})),
            "Any"
        );
        assert_eq!(python_type(&json!(true)), "Any");
    }

    #[test]
    fn a_stub_has_keyword_arguments_required_first_a_docstring_and_a_return_type() {
        let item = CatalogItem::new(ToolName::parse("file-system__read").unwrap())
            .with_description("Reads a \"\"\"file\"\"\".")
            .with_parameters(json!({
                "type": "object",
                "properties": {
                    "max_bytes": {"type": "integer", "description": "At most this many."},
                    "path": {"type": "string", "description": "The path."},
                    "mode": {"enum": ["text", "base64"]},
                    "odd-key": {"type": "string"}
                },
                "required": ["path"]
            }))
            .with_output_schema(crate::tools::output_schema::OutputSchema::from_schema(
                json!({"type": "string"}),
            ));
        let mut catalog = ToolCatalog::new();
        catalog.push(item);
        let text = describe(&Functions::of(&catalog, "code__run"), 50, None, false);
        assert!(text.contains("class file_system:"), "{text}");
        assert!(
            text.contains(
                "def read(*, path: str, max_bytes: int | None = None, mode: Literal[\"text\", \"base64\"] | None = None) -> str:"
            ),
            "{text}"
        );
        assert!(
            text.contains("Reads a \\\"\\\"\\\"file\\\"\\\"\\\"."),
            "{text}"
        );
        assert!(text.contains("path: The path."), "{text}");
        assert!(text.contains("\"odd-key\""), "{text}");
        assert!(text.contains("At most 50 tool calls"), "{text}");
    }
}
