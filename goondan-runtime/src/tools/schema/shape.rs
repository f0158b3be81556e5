//! The fast path of argument validation: a schema made only of keywords whose meaning is simple
//! (types, properties, required keys, closed objects, maps, lists, integer widths, string
//! enums, optional values) is compiled once into a [`Shape`] that checks arguments in one walk,
//! without the general validator.
//!
//! The classification is conservative: any other keyword (a range or length the author wrote, a
//! pattern, a format other than a number width, `oneOf`, `$ref`, ...) means "no shape", and the
//! caller uses the full JSON Schema validator. Where a shape exists it accepts exactly what the
//! full validator accepts (the differential tests check this).

use serde_json::{Map, Value};

use super::harden::integer_range;

/// Keywords that only describe: they never make a value invalid.
const ANNOTATIONS: &[&str] = &[
    "description",
    "title",
    "default",
    "examples",
    "deprecated",
    "readOnly",
    "writeOnly",
    "$comment",
];

/// How deep a schema may nest before the full validator is preferred (recursion guard).
const MAX_DEPTH: usize = 32;

/// A compiled schema node of the fast path.
#[derive(Debug)]
pub(crate) enum Shape {
    /// `true` or `{}`: anything fits.
    Any,
    /// A node with checks.
    Node(Box<Node>),
}

/// The JSON types a node allows, as bits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Types(u8);

impl Types {
    const NULL: u8 = 1;
    const BOOLEAN: u8 = 2;
    const INTEGER: u8 = 4;
    const NUMBER: u8 = 8;
    const STRING: u8 = 16;
    const ARRAY: u8 = 32;
    const OBJECT: u8 = 64;

    fn bit(name: &str) -> Option<u8> {
        Some(match name {
            "null" => Self::NULL,
            "boolean" => Self::BOOLEAN,
            "integer" => Self::INTEGER,
            "number" => Self::NUMBER,
            "string" => Self::STRING,
            "array" => Self::ARRAY,
            "object" => Self::OBJECT,
            _ => return None,
        })
    }

    fn admits(self, value: &Value) -> bool {
        let bits = self.0;
        match value {
            Value::Null => bits & Self::NULL != 0,
            Value::Bool(_) => bits & Self::BOOLEAN != 0,
            Value::Number(n) => {
                bits & Self::NUMBER != 0 || (bits & Self::INTEGER != 0 && is_integer(n))
            }
            Value::String(_) => bits & Self::STRING != 0,
            Value::Array(_) => bits & Self::ARRAY != 0,
            Value::Object(_) => bits & Self::OBJECT != 0,
        }
    }
}

/// What keys an object may hold besides its declared properties.
#[derive(Debug)]
enum Extra {
    /// Any (no `additionalProperties`, or `true`).
    Allowed,
    /// None (`additionalProperties: false`).
    Refused,
    /// Each extra value fits this shape (a map).
    Each(Shape),
}

/// A schema node the fast path can check.
#[derive(Debug)]
pub(crate) struct Node {
    types: Option<Types>,
    /// `enum`/`const` made of strings only.
    strings: Option<Vec<String>>,
    /// An integer width: the value, when a number, is an integer in this range.
    width: Option<(i128, i128)>,
    /// `format: float`: a number, when within the range of `f32`.
    single: bool,
    /// Each declared property: its name, its shape, and whether it is required.
    properties: Vec<(String, Shape, bool)>,
    /// How many distinct properties are required.
    required_declared: usize,
    /// Required keys that are not declared properties (checked by lookup).
    required_other: Vec<String>,
    extra: Extra,
    items: Option<Shape>,
    /// `anyOf: [X, {type: null}]`: the value is null or fits X.
    or_null: Option<Shape>,
}

impl Shape {
    /// The shape of `schema`, or `None` when only the full validator can judge it.
    pub(crate) fn compile(schema: &Value) -> Option<Shape> {
        compile(schema, 0)
    }

    /// Whether `value` fits.
    pub(crate) fn admits(&self, value: &Value) -> bool {
        match self {
            Shape::Any => true,
            Shape::Node(node) => node.admits(value),
        }
    }
}

fn compile(schema: &Value, depth: usize) -> Option<Shape> {
    if depth > MAX_DEPTH {
        return None;
    }
    let obj = match schema {
        Value::Bool(true) => return Some(Shape::Any),
        Value::Object(obj) => obj,
        _ => return None,
    };
    let mut node = Node {
        types: None,
        strings: None,
        width: None,
        single: false,
        properties: Vec::new(),
        required_declared: 0,
        required_other: Vec::new(),
        extra: Extra::Allowed,
        items: None,
        or_null: None,
    };
    let mut checks = false;
    let mut required = Vec::new();
    for (key, value) in obj {
        match key.as_str() {
            k if ANNOTATIONS.contains(&k) => continue,
            "type" => node.types = Some(types(value)?),
            "enum" => node.strings = Some(strings(value.as_array()?)?),
            "const" => node.strings = Some(vec![value.as_str()?.to_owned()]),
            "format" => numeric_format(obj, value.as_str()?, &mut node)?,
            // Accepted only as the bounds of a number width, checked with `format`.
            "minimum" | "maximum" => {
                obj.get("format")?;
            }
            "properties" => {
                for (name, sub) in value.as_object()? {
                    node.properties
                        .push((name.clone(), compile(sub, depth + 1)?, false));
                }
            }
            "required" => required = strings(value.as_array()?)?,
            "additionalProperties" => {
                node.extra = match value {
                    Value::Bool(true) => Extra::Allowed,
                    Value::Bool(false) => Extra::Refused,
                    other => Extra::Each(compile(other, depth + 1)?),
                }
            }
            "items" => node.items = Some(compile(value, depth + 1)?),
            "anyOf" => node.or_null = Some(or_null(value.as_array()?, depth)?),
            _ => return None,
        }
        checks = true;
    }
    if !checks {
        return Some(Shape::Any);
    }
    // Required keys are counted while the object's entries are walked (each entry is matched
    // to its property anyway), so a call's keys are not hashed again to find them.
    for key in required {
        match node.properties.iter_mut().find(|(name, ..)| *name == key) {
            Some((.., flag)) if !*flag => {
                *flag = true;
                node.required_declared += 1;
            }
            Some(_) => {}
            None if !node.required_other.contains(&key) => node.required_other.push(key),
            None => {}
        }
    }
    Some(Shape::Node(Box::new(node)))
}

fn types(value: &Value) -> Option<Types> {
    match value {
        Value::String(name) => Types::bit(name).map(Types),
        Value::Array(names) => names
            .iter()
            .try_fold(0, |bits, name| Some(bits | Types::bit(name.as_str()?)?))
            .map(Types),
        _ => None,
    }
}

fn strings(values: &[Value]) -> Option<Vec<String>> {
    values
        .iter()
        .map(|v| v.as_str().map(str::to_owned))
        .collect()
}

/// `format` on a number: an integer width or `float` whose bounds, if stated, are exactly the
/// width's (as [`harden`](super::harden) writes them); `double` is an annotation. Anything else
/// goes to the full validator.
fn numeric_format(obj: &Map<String, Value>, format: &str, node: &mut Node) -> Option<()> {
    let bound = |key: &str| obj.get(key);
    if ["exclusiveMinimum", "exclusiveMaximum"]
        .iter()
        .any(|k| obj.contains_key(*k))
    {
        return None;
    }
    if format == "double" {
        return (bound("minimum").is_none() && bound("maximum").is_none()).then_some(());
    }
    if format == "float" {
        let max = f64::from(f32::MAX);
        let fits =
            |key: &str, expected: f64| bound(key).is_none_or(|b| b.as_f64() == Some(expected));
        node.single = true;
        return (fits("minimum", -max) && fits("maximum", max)).then_some(());
    }
    let (min, max) = integer_range(format)?;
    let (min, max) = (exact_value(&min)?, exact_value(&max)?);
    let fits =
        |key: &str, expected: i128| bound(key).is_none_or(|b| exact_value(b) == Some(expected));
    if !(fits("minimum", min) && fits("maximum", max)) {
        return None;
    }
    node.width = Some((min, max));
    Some(())
}

/// `anyOf` of exactly one schema and `{type: null}` (what schemars writes for an `Option`).
fn or_null(branches: &[Value], depth: usize) -> Option<Shape> {
    let is_null = |b: &Value| {
        b.as_object().is_some_and(|o| {
            o.get("type").and_then(Value::as_str) == Some("null")
                && o.keys()
                    .all(|k| k == "type" || ANNOTATIONS.contains(&k.as_str()))
        })
    };
    match branches {
        [a, b] if is_null(b) => compile(a, depth + 1),
        [a, b] if is_null(a) => compile(b, depth + 1),
        _ => None,
    }
}

impl Node {
    fn admits(&self, value: &Value) -> bool {
        if let Some(types) = self.types
            && !types.admits(value)
        {
            return false;
        }
        if let Some(strings) = &self.strings
            && !value
                .as_str()
                .is_some_and(|s| strings.iter().any(|e| e == s))
        {
            return false;
        }
        if let Some(shape) = &self.or_null
            && !value.is_null()
            && !shape.admits(value)
        {
            return false;
        }
        match value {
            Value::Number(n) => self.admits_number(n),
            Value::Object(map) => self.admits_object(map),
            Value::Array(items) => self
                .items
                .as_ref()
                .is_none_or(|shape| items.iter().all(|item| shape.admits(item))),
            _ => true,
        }
    }

    fn admits_number(&self, n: &serde_json::Number) -> bool {
        if let Some((min, max)) = self.width
            && !exact_integer(n).is_some_and(|v| (min..=max).contains(&v))
        {
            return false;
        }
        !self.single || n.as_f64().is_some_and(|f| f.abs() <= f64::from(f32::MAX))
    }

    fn admits_object(&self, map: &Map<String, Value>) -> bool {
        if !self.required_other.iter().all(|k| map.contains_key(k)) {
            return false;
        }
        // A map's keys are distinct: every required property is present exactly when as many
        // entries match a required property as there are required properties.
        let mut required_seen = 0;
        let fits = map.iter().all(|(key, value)| {
            match self.properties.iter().find(|(name, ..)| name == key) {
                Some((_, shape, required)) => {
                    required_seen += usize::from(*required);
                    shape.admits(value)
                }
                None => match &self.extra {
                    Extra::Allowed => true,
                    Extra::Refused => false,
                    Extra::Each(shape) => shape.admits(value),
                },
            }
        });
        fits && required_seen == self.required_declared
    }
}

/// Whether JSON Schema counts `n` as an integer: no fractional part, however large (as the
/// full validator decides it).
fn is_integer(n: &serde_json::Number) -> bool {
    n.is_i64() || n.is_u64() || n.as_f64().is_some_and(|f| f.fract() == 0.0)
}

/// The exact integer a JSON number holds: an integer, or a float with no fractional part
/// (JSON Schema counts `2.0` as an integer).
pub(crate) fn exact_integer(n: &serde_json::Number) -> Option<i128> {
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

fn exact_value(value: &Value) -> Option<i128> {
    match value {
        Value::Number(n) => exact_integer(n),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn simple_schemas_have_a_shape_and_constraints_do_not() {
        let closed = json!({"type": "object", "properties": {"a": {"type": "string"}},
                            "required": ["a"], "additionalProperties": false});
        let shape = Shape::compile(&closed).expect("a shape");
        assert!(shape.admits(&json!({"a": "x"})));
        assert!(!shape.admits(&json!({"a": "x", "b": 1})));
        assert!(!shape.admits(&json!({})));
        assert!(!shape.admits(&json!({"a": 1})));
        let ranged = json!({"type": "object", "properties": {
            "n": {"type": "integer", "format": "uint8", "minimum": 1, "maximum": 10}}});
        assert!(Shape::compile(&ranged).is_none());
        let pattern = json!({"type": "object", "properties": {
            "s": {"type": "string", "pattern": "^a"}}});
        assert!(Shape::compile(&pattern).is_none());
    }

    #[test]
    fn integral_floats_are_integers() {
        let n = json!(2.0);
        assert_eq!(n.as_number().and_then(exact_integer), Some(2));
        let n = json!(2.5);
        assert_eq!(n.as_number().and_then(exact_integer), None);
        let shape = Shape::compile(&json!({"type": "integer"})).expect("a shape");
        assert!(shape.admits(&json!(1e300)) && !shape.admits(&json!(0.5)));
    }
}
