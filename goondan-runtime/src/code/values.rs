//! Values across the boundary: a tool's JSON result becomes a plain Python value (objects as
//! dicts, arrays as lists, text as str), and what a program passes or returns becomes JSON.
//!
//! Both ways are bounded in depth: a program can build a list nested a million deep without
//! recursing, and the conversion must not overflow the stack on it.

use monty_types::MontyObject;
use serde_json::{Map, Number, Value};

/// How deep a value may nest, both ways.
pub(crate) const MAX_DEPTH: usize = 64;

/// Why a value cannot cross.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum ValueError {
    /// Nested deeper than [`MAX_DEPTH`].
    #[error("the value nests deeper than {MAX_DEPTH} levels")]
    TooDeep,
    /// The interpreter could only describe the value (nested too deep for it, say).
    #[error("the value cannot leave the program: {repr}")]
    Opaque {
        /// What the interpreter said of it.
        repr: String,
    },
}

/// The JSON of a Python value: `None` is null, numbers stay numbers (an int beyond 64 bits, a
/// NaN or an infinity becomes its text), tuples and sets become arrays, a dict becomes an object
/// whose keys are the text of the dict's keys, a named tuple an object of its fields; anything
/// else (a date, a function, a class) is its text.
pub(crate) fn to_json(value: &MontyObject) -> Result<Value, ValueError> {
    to_json_at(value, 0)
}

fn to_json_at(value: &MontyObject, depth: usize) -> Result<Value, ValueError> {
    if depth > MAX_DEPTH {
        return Err(ValueError::TooDeep);
    }
    let list = |items: &[MontyObject]| -> Result<Value, ValueError> {
        items
            .iter()
            .map(|v| to_json_at(v, depth + 1))
            .collect::<Result<Vec<_>, _>>()
            .map(Value::Array)
    };
    Ok(match value {
        MontyObject::None => Value::Null,
        MontyObject::Bool(b) => Value::Bool(*b),
        MontyObject::Int(i) => Value::from(*i),
        MontyObject::Float(f) => {
            Number::from_f64(*f).map_or_else(|| Value::String(f.to_string()), Value::Number)
        }
        MontyObject::String(s) => Value::String(s.clone()),
        MontyObject::List(items)
        | MontyObject::Tuple(items)
        | MontyObject::Set(items)
        | MontyObject::FrozenSet(items) => list(items)?,
        MontyObject::NamedTuple {
            field_names,
            values,
            ..
        } => {
            let mut object = Map::new();
            for (name, v) in field_names.iter().zip(values) {
                object.insert(name.clone(), to_json_at(v, depth + 1)?);
            }
            Value::Object(object)
        }
        MontyObject::Dict(pairs) => {
            let mut object = Map::new();
            for (k, v) in pairs {
                let key = match k {
                    MontyObject::String(s) => s.clone(),
                    other => other.to_string(),
                };
                object.insert(key, to_json_at(v, depth + 1)?);
            }
            Value::Object(object)
        }
        MontyObject::Repr(repr) | MontyObject::Cycle(_, repr) => {
            return Err(ValueError::Opaque { repr: repr.clone() });
        }
        other => Value::String(other.to_string()),
    })
}

/// The Python value of a JSON value: null is `None`, an object a dict, an array a list.
pub(crate) fn from_json(value: &Value) -> Result<MontyObject, ValueError> {
    from_json_at(value, 0)
}

fn from_json_at(value: &Value, depth: usize) -> Result<MontyObject, ValueError> {
    if depth > MAX_DEPTH {
        return Err(ValueError::TooDeep);
    }
    Ok(match value {
        Value::Null => MontyObject::None,
        Value::Bool(b) => MontyObject::Bool(*b),
        Value::Number(n) => match n.as_i64() {
            Some(i) => MontyObject::Int(i),
            None => MontyObject::Float(n.as_f64().unwrap_or(f64::NAN)),
        },
        Value::String(s) => MontyObject::String(s.clone()),
        Value::Array(items) => MontyObject::List(
            items
                .iter()
                .map(|v| from_json_at(v, depth + 1))
                .collect::<Result<_, _>>()?,
        ),
        Value::Object(object) => MontyObject::dict(
            object
                .iter()
                .map(|(k, v)| Ok((MontyObject::String(k.clone()), from_json_at(v, depth + 1)?)))
                .collect::<Result<Vec<_>, ValueError>>()?,
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn json_round_trips_through_python_values() {
        let value = json!({"name": "a", "n": 3, "x": 1.5, "ok": true, "none": null, "items": [1, [2, "b"]]});
        let python = from_json(&value).unwrap();
        assert_eq!(to_json(&python).unwrap(), value);
    }

    #[test]
    fn tuples_sets_and_non_string_keys_become_json() {
        let value = MontyObject::dict(vec![
            (
                MontyObject::Int(1),
                MontyObject::Tuple(vec![MontyObject::Int(2)]),
            ),
            (
                MontyObject::String("f".into()),
                MontyObject::Float(f64::INFINITY),
            ),
        ]);
        assert_eq!(to_json(&value).unwrap(), json!({"1": [2], "f": "inf"}));
    }

    #[test]
    fn a_value_nested_too_deep_is_refused_both_ways() {
        let mut deep = MontyObject::None;
        for _ in 0..=MAX_DEPTH + 1 {
            deep = MontyObject::List(vec![deep]);
        }
        assert_eq!(to_json(&deep), Err(ValueError::TooDeep));
        let mut deep = Value::Null;
        for _ in 0..=MAX_DEPTH + 1 {
            deep = Value::Array(vec![deep]);
        }
        assert_eq!(from_json(&deep), Err(ValueError::TooDeep));
    }
}
