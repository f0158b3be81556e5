//! Hardening: the pass that makes a schemars schema as strict as serde (see the [parent
//! module](super) for what it changes and why), and the walker over subschemas it and the
//! dialects use.

use serde_json::{Map, Value};

/// Makes a schema strict where serde is strict, everywhere in it (see the module docs): objects
/// get `properties` and `additionalProperties: false`, integers the bounds of their width, and
/// a root made only of object branches gets `type: "object"`.
///
/// ```
/// let mut schema = serde_json::json!({
///     "type": "object",
///     "properties": {"n": {"type": "integer", "format": "uint32"}}
/// });
/// goondan_runtime::tools::schema::harden(&mut schema);
/// assert_eq!(schema["additionalProperties"], false);
/// assert_eq!(schema["properties"]["n"]["maximum"], u32::MAX);
/// ```
pub fn harden(schema: &mut Value) {
    type_enum_root(schema);
    harden_tree(schema, false);
}

/// Hardens `node` and everything below it. `open` is true for a branch of an object that has
/// its own properties (a struct with a flattened enum): the branch must accept the parent's
/// keys, so the parent closes the object with `unevaluatedProperties: false` instead.
fn harden_tree(node: &mut Value, open: bool) {
    let Some(obj) = node.as_object_mut() else {
        return;
    };
    let opens_branches = is_object_with_union(obj);
    if opens_branches {
        obj.entry("unevaluatedProperties")
            .or_insert(Value::Bool(false));
    }
    if !open {
        harden_node(obj);
    } else if has_type(obj, "object") {
        obj.entry("properties")
            .or_insert_with(|| Value::Object(Map::new()));
    }
    for (keyword, child) in subschemas_mut(obj) {
        let is_branch = ["oneOf", "anyOf", "allOf"].contains(&keyword);
        harden_tree(
            child,
            (opens_branches && is_branch) || applies_in_place(keyword),
        );
    }
}

/// Whether a subschema under `keyword` is a condition or a negation on its parent's own
/// instance: `if`, `then`, `else`, `not`, `dependentSchemas/*`. Closing one
/// (`additionalProperties: false`) would refuse the parent's keys, or, under `not`, turn the
/// condition around; such a subschema is kept as the author wrote it.
fn applies_in_place(keyword: &str) -> bool {
    ["if", "then", "else", "not", "dependentSchemas"].contains(&keyword)
}

/// Whether a node is an object with properties of its own next to `oneOf`/`anyOf`/`allOf`
/// (what schemars writes for a struct with a flattened enum).
pub(crate) fn is_object_with_union(obj: &Map<String, Value>) -> bool {
    let own = field(obj, "properties")
        .and_then(Value::as_object)
        .is_some_and(|p| !p.is_empty());
    own && obj
        .keys()
        .any(|k| matches!(k.as_str(), "oneOf" | "anyOf" | "allOf"))
}

/// The value of `key` in a schema node. A node has a handful of keys and the dialects ask each
/// node for many: scanning them costs less than hashing every name asked for.
pub(crate) fn field<'a>(node: &'a Map<String, Value>, key: &str) -> Option<&'a Value> {
    node.iter().find(|(k, _)| *k == key).map(|(_, v)| v)
}

fn type_enum_root(schema: &mut Value) {
    let Some(obj) = schema.as_object_mut() else {
        return;
    };
    if obj.contains_key("type") {
        return;
    }
    let all_objects = ["oneOf", "anyOf"].iter().any(|k| {
        obj.get(*k)
            .and_then(Value::as_array)
            .is_some_and(|branches| {
                !branches.is_empty()
                    && branches
                        .iter()
                        .all(|b| b.get("type").and_then(Value::as_str) == Some("object"))
            })
    });
    if all_objects {
        obj.insert("type".into(), Value::from("object"));
        obj.entry("properties")
            .or_insert_with(|| Value::Object(Map::new()));
    }
}

fn harden_node(obj: &mut Map<String, Value>) {
    if has_type(obj, "object") {
        obj.entry("properties")
            .or_insert_with(|| Value::Object(Map::new()));
        let composed = ["allOf", "anyOf", "oneOf", "$ref"]
            .iter()
            .any(|k| obj.contains_key(*k));
        if !composed
            && !obj.contains_key("additionalProperties")
            && !obj.contains_key("unevaluatedProperties")
        {
            obj.insert("additionalProperties".into(), Value::Bool(false));
        }
    }
    if has_type(obj, "integer") {
        let range = obj
            .get("format")
            .and_then(Value::as_str)
            .and_then(integer_range);
        if let Some((min, max)) = range {
            obj.entry("minimum").or_insert(min);
            obj.entry("maximum").or_insert(max);
        }
    }
    if has_type(obj, "number") && obj.get("format").and_then(Value::as_str) == Some("float") {
        obj.entry("minimum")
            .or_insert(Value::from(-f64::from(f32::MAX)));
        obj.entry("maximum")
            .or_insert(Value::from(f64::from(f32::MAX)));
    }
}

/// Whether a schema node's `type` is or includes `ty`.
pub(crate) fn has_type(obj: &Map<String, Value>, ty: &str) -> bool {
    match field(obj, "type") {
        Some(Value::String(t)) => t == ty,
        Some(Value::Array(ts)) => ts.iter().any(|t| t.as_str() == Some(ty)),
        _ => false,
    }
}

/// The range of the Rust integer type schemars names by `format`.
pub(crate) fn integer_range(format: &str) -> Option<(Value, Value)> {
    Some(match format {
        "int8" => (i8::MIN.into(), i8::MAX.into()),
        "int16" => (i16::MIN.into(), i16::MAX.into()),
        "int32" => (i32::MIN.into(), i32::MAX.into()),
        "int64" | "int" => (i64::MIN.into(), i64::MAX.into()),
        "uint8" => (0.into(), u8::MAX.into()),
        "uint16" => (0.into(), u16::MAX.into()),
        "uint32" => (0.into(), u32::MAX.into()),
        "uint64" | "uint" => (0.into(), u64::MAX.into()),
        _ => return None,
    })
}

/// Keywords whose value is one subschema.
const ONE_SUBSCHEMA: &[&str] = &[
    "additionalProperties",
    "items",
    "not",
    "if",
    "then",
    "else",
    "contains",
    "propertyNames",
    "unevaluatedItems",
    "unevaluatedProperties",
];
/// Keywords whose value is an array of subschemas.
const SUBSCHEMA_LIST: &[&str] = &["allOf", "anyOf", "oneOf", "prefixItems"];
/// Keywords whose value maps names to subschemas.
const SUBSCHEMA_MAP: &[&str] = &[
    "properties",
    "patternProperties",
    "$defs",
    "definitions",
    "dependentSchemas",
];

/// The direct subschemas of a schema node, each with the keyword it sits under (`properties`,
/// `anyOf`, `items`). No pointer is made for them: the walk runs over every schema when the
/// tools are built, at each start of a program, and needs only the keyword.
pub(crate) fn subschemas_mut(obj: &mut Map<String, Value>) -> Vec<(&str, &mut Value)> {
    let mut out = Vec::new();
    for (key, value) in obj.iter_mut() {
        let k = key.as_str();
        if ONE_SUBSCHEMA.contains(&k) {
            out.push((k, value));
        } else if SUBSCHEMA_LIST.contains(&k) {
            if let Value::Array(items) = value {
                out.extend(items.iter_mut().map(|item| (k, item)));
            }
        } else if SUBSCHEMA_MAP.contains(&k)
            && let Value::Object(map) = value
        {
            out.extend(map.values_mut().map(|item| (k, item)));
        }
    }
    out
}

/// Escapes a JSON pointer segment (`~` and `/`).
#[cfg_attr(not(feature = "host"), allow(dead_code))] // used by the provider dialects
pub(crate) fn escape_pointer(segment: &str) -> String {
    segment.replace('~', "~0").replace('/', "~1")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn conditionals_and_negations_are_kept_as_written_so_they_still_mean_the_same() {
        let conditional = json!({
            "$anchor": "root",
            "type": "object",
            "properties": {"kind": {"type": "string"}, "email": {"type": "string", "format": "email"}},
            "if": {"type": "object", "properties": {"kind": {"const": "a"}}},
            "then": {"type": "object", "required": ["email"]},
            "else": {"type": "object", "required": ["kind"]},
            "not": {"type": "object", "properties": {"kind": {"const": "z"}}, "required": ["kind"]},
            "dependentSchemas": {"email": {"type": "object", "required": ["kind"]}},
        });
        let mut schema = conditional.clone();
        harden(&mut schema);
        for key in ["if", "then", "else", "not"] {
            assert!(
                schema[key].get("additionalProperties").is_none(),
                "{key}: {schema}"
            );
        }
        assert!(
            schema["dependentSchemas"]["email"]
                .get("additionalProperties")
                .is_none()
        );
        assert_eq!(schema["$anchor"], "root");
        assert_eq!(schema["properties"]["email"]["format"], "email");
        let validator = jsonschema::validator_for(&schema).unwrap();
        assert!(validator.is_valid(&json!({"kind": "a", "email": "a@b.c"})));
        assert!(!validator.is_valid(&json!({"kind": "a"})));
        assert!(!validator.is_valid(&json!({"kind": "z"})));
        assert!(!validator.is_valid(&json!({"kind": "a", "email": "a@b.c", "other": 1})));
    }
}
