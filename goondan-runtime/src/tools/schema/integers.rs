//! Integral floats where the schema says `integer`: JSON Schema counts `2.0` as an integer, serde
//! does not read it into an `i64`. Before arguments are validated and deserialised, every
//! `2.0` the schema types as an integer becomes `2`. `2.5` and `"2"` are left as they are (and
//! refused).

use serde_json::{Map, Number, Value};

use super::harden::has_type;

/// How many schema steps may follow each other without descending into the value (`$ref`,
/// `anyOf`, ...): a guard against schemas that refer to themselves in place.
const MAX_HOPS: usize = 16;

/// Whether `value` holds a float with no fractional part anywhere: only then is there anything
/// to normalise.
pub(crate) fn has_integral_float(value: &Value) -> bool {
    match value {
        Value::Number(n) => {
            !n.is_i64() && !n.is_u64() && n.as_f64().is_some_and(|f| f.fract() == 0.0)
        }
        Value::Array(items) => items.iter().any(has_integral_float),
        Value::Object(map) => map.values().any(has_integral_float),
        _ => false,
    }
}

/// The exact integer a JSON number holds: an integer, or a float with no fractional part
/// (JSON Schema counts `2.0` as an integer).
pub(crate) fn exact_integer(n: &Number) -> Option<i128> {
    if let Some(v) = n.as_i64() {
        return Some(i128::from(v));
    }
    if let Some(v) = n.as_u64() {
        return Some(i128::from(v));
    }
    let f = n.as_f64()?;
    // 2^127: every integral float below it converts exactly.
    let limit = 1.7014118346046923e38_f64;
    #[allow(clippy::cast_possible_truncation)]
    (f.fract() == 0.0 && f.abs() < limit).then_some(f as i128)
}

/// Whether `schema` types anything as an integer.
pub(crate) fn mentions_integer(schema: &Value) -> bool {
    match schema {
        Value::Object(obj) => has_type(obj, "integer") || obj.values().any(mentions_integer),
        Value::Array(items) => items.iter().any(mentions_integer),
        _ => false,
    }
}

/// Turns the integral floats of `value` that `schema` types as integers into integers.
pub(crate) fn normalise(schema: &Value, value: &mut Value) {
    walk(schema, schema, value, 0);
}

fn walk(root: &Value, node: &Value, value: &mut Value, hops: usize) {
    let Some(obj) = node.as_object() else {
        return;
    };
    if hops > MAX_HOPS {
        return;
    }
    if let Value::Number(n) = value
        && has_type(obj, "integer")
        && let Some(exact) = as_integer(n)
    {
        *value = Value::Number(exact);
        return;
    }
    for key in ["anyOf", "oneOf", "allOf"] {
        for branch in obj.get(key).and_then(Value::as_array).into_iter().flatten() {
            walk(root, branch, value, hops + 1);
        }
    }
    if let Some(target) = obj
        .get("$ref")
        .and_then(Value::as_str)
        .and_then(|r| r.strip_prefix('#'))
        .and_then(|pointer| root.pointer(pointer))
    {
        walk(root, target, value, hops + 1);
    }
    match value {
        Value::Object(map) => walk_object(root, obj, map),
        Value::Array(items) => {
            let prefix = obj.get("prefixItems").and_then(Value::as_array);
            for (i, item) in items.iter_mut().enumerate() {
                let sub = prefix.and_then(|p| p.get(i)).or_else(|| obj.get("items"));
                if let Some(sub) = sub {
                    walk(root, sub, item, 0);
                }
            }
        }
        _ => {}
    }
}

fn walk_object(root: &Value, obj: &Map<String, Value>, map: &mut Map<String, Value>) {
    let properties = obj.get("properties").and_then(Value::as_object);
    let extra = obj.get("additionalProperties");
    for (key, item) in map.iter_mut() {
        let sub = properties.and_then(|p| p.get(key)).or(extra);
        if let Some(sub) = sub {
            walk(root, sub, item, 0);
        }
    }
}

/// `2.0` as the integer `2`, when it fits an `i64` or `u64`.
fn as_integer(n: &Number) -> Option<Number> {
    if n.is_i64() || n.is_u64() {
        return None;
    }
    let exact = exact_integer(n)?;
    i64::try_from(exact)
        .map(Number::from)
        .ok()
        .or_else(|| u64::try_from(exact).ok().map(Number::from))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn integral_floats_are_exact_integers() {
        let n = json!(2.0);
        assert_eq!(n.as_number().and_then(exact_integer), Some(2));
        let n = json!(2.5);
        assert_eq!(n.as_number().and_then(exact_integer), None);
    }

    #[test]
    fn integral_floats_become_integers_only_where_the_schema_says_integer() {
        let schema = json!({"type": "object", "properties": {
            "n": {"type": "integer"},
            "x": {"type": "number"},
            "list": {"type": "array", "items": {"type": ["integer", "null"]}},
            "opt": {"anyOf": [{"$ref": "#/$defs/n"}, {"type": "null"}]}
        }, "$defs": {"n": {"type": "integer"}}});
        let mut args = json!({"n": 2.0, "x": 2.0, "list": [1.0, 2.5, null], "opt": 3.0});
        assert!(has_integral_float(&args));
        normalise(&schema, &mut args);
        assert_eq!(
            args,
            json!({"n": 2, "x": 2.0, "list": [1, 2.5, null], "opt": 3})
        );
        assert!(args["n"].is_i64());
        assert!(mentions_integer(&schema));
    }
}
