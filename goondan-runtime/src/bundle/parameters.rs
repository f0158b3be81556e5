//! A Tool resource's YAML `parameters` against the compiled export's schema: the same property
//! names, the same `type` for each, the same `required` set. Compared structurally, so that a
//! bundle cannot describe a tool other than the one that runs.

use std::collections::BTreeSet;

use serde_json::{Map, Value};

use super::diagnostic::name_list;
use crate::tools::schema::escape_pointer;

/// Every disagreement between the YAML schema `declared` and the compiled schema `compiled`,
/// each once, as (JSON pointer inside `parameters`, message).
pub(crate) fn compare(declared: &Value, compiled: &Value) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let empty = Map::new();
    let ours = properties(declared).unwrap_or(&empty);
    let theirs = properties(compiled).unwrap_or(&empty);
    for (name, schema) in ours {
        let pointer = format!("/properties/{}", escape_pointer(name));
        let Some(actual) = theirs.get(name) else {
            out.push((
                pointer,
                format!(
                    "property `{name}` is declared, but the compiled tool has no such parameter; its parameters are: {}",
                    name_list(theirs.keys())
                ),
            ));
            continue;
        };
        let (want, have) = (types(schema), types(actual));
        if let (Some(want), Some(have)) = (want, have)
            && as_json_kinds(&want) != as_json_kinds(&have)
        {
            out.push((
                format!("{pointer}/type"),
                format!(
                    "property `{name}` has type {}, but the compiled tool takes {}",
                    show(&want),
                    show(&have)
                ),
            ));
        }
    }
    for name in theirs.keys().filter(|n| !ours.contains_key(*n)) {
        out.push((
            "/properties".to_owned(),
            format!(
                "the compiled tool takes property `{name}`, which the YAML `parameters` does not declare"
            ),
        ));
    }
    let (want, have) = (required(declared), required(compiled));
    if want != have {
        out.push((
            "/required".to_owned(),
            format!(
                "`required` is [{}], but the compiled tool requires [{}]",
                name_list(&want),
                name_list(&have)
            ),
        ));
    }
    out
}

fn properties(schema: &Value) -> Option<&Map<String, Value>> {
    schema.get("properties")?.as_object()
}

/// The `type` of a property schema as a set (`null` left out: an optional parameter is the
/// same parameter), or `None` when it names none, or names every JSON type (any value, as a
/// schema without `type`).
fn types(schema: &Value) -> Option<BTreeSet<&str>> {
    let mut set: BTreeSet<&str> = match schema.get("type")? {
        Value::String(t) => [t.as_str()].into(),
        Value::Array(a) => a.iter().filter_map(Value::as_str).collect(),
        _ => return None,
    };
    set.remove("null");
    let any = ["string", "number", "boolean", "object", "array"]
        .iter()
        .all(|k| as_json_kinds(&set).contains(k));
    (!set.is_empty() && !any).then_some(set)
}

/// The types with `integer` read as `number`: JSON has one number type, the TypeScript
/// runtime's manifests say `number` for every count, and whether a fraction is allowed is a
/// constraint the compiled schema enforces on every call.
fn as_json_kinds<'a>(types: &BTreeSet<&'a str>) -> BTreeSet<&'a str> {
    types
        .iter()
        .map(|t| if *t == "integer" { "number" } else { t })
        .collect()
}

fn required(schema: &Value) -> BTreeSet<&str> {
    let names = schema.get("required").and_then(Value::as_array);
    names
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect()
}

fn show(types: &BTreeSet<&str>) -> String {
    types
        .iter()
        .map(|t| format!("`{t}`"))
        .collect::<Vec<_>>()
        .join(" or ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn same_schemas_agree_and_each_difference_is_reported_once() {
        let compiled = json!({"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": ["integer", "null"]}}, "required": ["a"]});
        let same = json!({"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "integer"}}, "required": ["a"]});
        assert!(compare(&same, &compiled).is_empty());
        let other = json!({"type": "object", "properties": {"a": {"type": "number"}, "c": {}}, "required": []});
        let found = compare(&other, &compiled);
        let pointers: Vec<_> = found.iter().map(|(p, _)| p.as_str()).collect();
        assert_eq!(
            pointers,
            vec![
                "/properties/a/type",
                "/properties/c",
                "/properties",
                "/required"
            ],
            "{found:?}"
        );
    }

    #[test]
    fn number_in_yaml_agrees_with_a_compiled_integer() {
        let compiled =
            json!({"type": "object", "properties": {"n": {"type": ["integer", "null"]}}});
        let declared = json!({"type": "object", "properties": {"n": {"type": "number"}}});
        assert!(compare(&declared, &compiled).is_empty());
        let text = json!({"type": "object", "properties": {"n": {"type": "string"}}});
        assert_eq!(compare(&text, &compiled).len(), 1);
    }

    #[test]
    fn a_type_list_of_every_json_type_is_any_value_like_no_type() {
        let any = json!({"type": ["string", "object", "array", "number", "boolean", "null"]});
        let compiled = json!({"type": "object", "properties": {"input": any}});
        for declared in [
            json!({"type": "string"}),
            json!({}),
            json!({"type": "object"}),
        ] {
            let yaml = json!({"type": "object", "properties": {"input": declared}});
            assert!(compare(&yaml, &compiled).is_empty(), "{yaml}");
        }
        // Every type but one still has to match.
        let most = json!({"type": ["string", "object", "array", "number"]});
        let compiled = json!({"type": "object", "properties": {"input": most}});
        let yaml = json!({"type": "object", "properties": {"input": {"type": "string"}}});
        assert_eq!(compare(&yaml, &compiled).len(), 1);
    }
}
