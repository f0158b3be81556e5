//! Parameter schemas: the neutral JSON Schema of each export, computed once per type, and the
//! validator that explains why arguments do not fit it (SPEC-6).
//!
//! The neutral schema is what schemars derives from the input type (serde attributes honoured,
//! doc comments as descriptions), then [hardened](harden) so that the validator and serde agree:
//!
//! - every object node without `allOf`/`anyOf`/`oneOf`/`$ref` gets `additionalProperties: false`
//!   unless it already says what extra keys may hold (a map). Serde silently drops unknown keys
//!   of a struct without `deny_unknown_fields`; the runtime refuses them instead, so a model that
//!   misspells a parameter is told, not ignored. "Serde accepts" in this crate's tests therefore
//!   means "serde accepts and drops nothing".
//! - integer nodes get the `minimum`/`maximum` of their Rust width, and the [`ArgValidator`]
//!   reads `format: int32`, `uint64`, ... as "an integer in that range", so `2.5` or `2^64`
//!   is refused before serde would refuse it. `2.0` is an integer (JSON Schema says so):
//!   [`ArgValidator::check`] turns it into `2` before serde reads it.
//!
//! The executor runs [`ArgValidator::check`] on every call, typed handler or not, so a call's
//! arguments are checked against exactly the schema the model is shown.
//! - the root of an enum input (all branches objects) is typed `object`.

use std::any::TypeId;
use std::collections::HashMap;
use std::sync::{Arc, OnceLock, RwLock};

use schemars::JsonSchema;
use schemars::generate::{SchemaGenerator, SchemaSettings};
use serde_json::{Map, Value};

mod harden;
mod integers;

pub use harden::harden;
pub(crate) use harden::integer_range;
#[cfg(feature = "host")]
pub(crate) use harden::{escape_pointer, field, has_type, is_object_with_union};

/// The schema of an export without parameters: `{type: object, properties: {},
/// additionalProperties: false}`.
pub fn empty_object_schema() -> Value {
    serde_json::json!({"type": "object", "properties": {}, "additionalProperties": false})
}

/// The neutral schema of `T`: JSON Schema 2020-12, inline (no `$ref` unless `T` is recursive),
/// no `$schema` or `title`, `properties` always present on the top object. Computed once per
/// type and shared.
///
/// ```
/// use goondan_runtime::tools::schema::schema_for;
/// #[derive(serde::Deserialize, schemars::JsonSchema)]
/// struct Input {
///     /// The text.
///     text: String,
///     limit: Option<u32>,
/// }
/// let schema = schema_for::<Input>();
/// assert_eq!(schema["type"], "object");
/// assert_eq!(schema["required"], serde_json::json!(["text"]));
/// assert_eq!(schema["properties"]["text"]["description"], "The text.");
/// ```
pub fn schema_for<T: JsonSchema + 'static>() -> Arc<Value> {
    // Only the type's id and its schemars entry point are generic: the cache, the settings and
    // the hardening are compiled once here, not once per input type in every tool crate.
    cached_schema(TypeId::of::<T>(), |generator| {
        generator.into_root_schema_for::<T>().to_value()
    })
}

/// The cached neutral schema of the type `key`, made by `root` on a miss (under the settings
/// of [`schema_for`], hardened as it is).
pub(crate) fn cached_schema(key: TypeId, root: fn(SchemaGenerator) -> Value) -> Arc<Value> {
    static CACHE: OnceLock<RwLock<HashMap<TypeId, Arc<Value>>>> = OnceLock::new();
    let cache = CACHE.get_or_init(Default::default);
    if let Some(hit) = cache.read().ok().and_then(|map| map.get(&key).cloned()) {
        return hit;
    }
    let schema = Arc::new(generate(root));
    match cache.write() {
        Ok(mut map) => Arc::clone(map.entry(key).or_insert(schema)),
        Err(_) => schema,
    }
}

fn generate(root: fn(SchemaGenerator) -> Value) -> Value {
    let generator = SchemaSettings::draft2020_12()
        .with(|s| {
            s.inline_subschemas = true;
            s.meta_schema = None;
        })
        .into_generator();
    let mut value = root(generator);
    normalise_root(&mut value);
    harden(&mut value);
    value
}

/// Checks a schema against the JSON Schema 2020-12 metaschema.
///
/// ```
/// use goondan_runtime::tools::schema::{check_metaschema, schema_for};
/// #[derive(serde::Deserialize, schemars::JsonSchema)]
/// struct Input { text: String }
/// assert!(check_metaschema(&schema_for::<Input>()).is_ok());
/// assert!(check_metaschema(&serde_json::json!({"type": 5})).is_err());
/// ```
pub fn check_metaschema(schema: &Value) -> Result<(), SchemaError> {
    jsonschema::draft202012::meta::validate(schema).map_err(|e| SchemaError::Invalid {
        reason: e.to_string(),
    })
}

/// Removes what the model does not need (`$schema`, `title`) and makes sure an object schema
/// has `properties`.
pub fn normalise_root(schema: &mut Value) {
    if let Some(obj) = schema.as_object_mut() {
        obj.remove("$schema");
        obj.remove("title");
        if obj.get("type").and_then(Value::as_str) == Some("object")
            && !obj.contains_key("properties")
        {
            obj.insert("properties".into(), Value::Object(Map::new()));
        }
    }
}

/// Why a schema cannot serve as an export's `parameters` (SPEC-6).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SchemaError {
    /// The schema is not an object schema.
    #[error("parameters must be a JSON Schema with `type: \"object\"`, found {found}")]
    NotAnObject {
        /// What was found instead.
        found: String,
    },
    /// The schema is not valid JSON Schema.
    #[error("parameters are not a valid JSON Schema: {reason}")]
    Invalid {
        /// The validator's reason.
        reason: String,
    },
}

/// Checks that `schema` has the shape of an export's parameters (SPEC-6): `type: "object"`,
/// `properties` an object of schemas, `required` an array of strings. This is structural and
/// cheap; the full schema is compiled once, on the first call that needs it, and a schema that
/// does not compile then answers every call with a clear `E_TOOL_INVALID_ARGS` problem.
pub fn check_parameters(schema: &Value) -> Result<(), SchemaError> {
    let ty = schema.get("type");
    if ty.and_then(Value::as_str) != Some("object") {
        return Err(SchemaError::NotAnObject {
            found: ty.map_or_else(|| "no `type`".to_owned(), |t| format!("`type: {t}`")),
        });
    }
    if let Some(props) = schema.get("properties") {
        let Some(props) = props.as_object() else {
            return Err(SchemaError::Invalid {
                reason: "`properties` must be an object".to_owned(),
            });
        };
        if let Some((key, _)) = props
            .iter()
            .find(|(_, v)| !(v.is_object() || v.is_boolean()))
        {
            return Err(SchemaError::Invalid {
                reason: format!("`properties.{key}` must be a schema (an object or a boolean)"),
            });
        }
    }
    if let Some(required) = schema.get("required") {
        let all_strings = required
            .as_array()
            .is_some_and(|a| a.iter().all(Value::is_string));
        if !all_strings {
            return Err(SchemaError::Invalid {
                reason: "`required` must be an array of property names".to_owned(),
            });
        }
    }
    Ok(())
}

/// One reason why arguments do not fit a schema.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArgProblem {
    /// A JSON pointer into the arguments (`""` is the whole object, `/items/0` the first item).
    pub path: String,
    /// What is wrong there.
    pub message: String,
}

/// A compiled schema, ready to validate arguments.
///
/// [`check`](Self::check) is what the executor runs on every call: integral floats the schema
/// types as integers become integers, then the JSON Schema validator checks the arguments
/// against the whole schema.
///
/// ```
/// use goondan_runtime::tools::schema::ArgValidator;
/// use serde_json::json;
/// let v = ArgValidator::new(&json!({
///     "type": "object",
///     "properties": {"n": {"type": "integer", "maximum": 10}},
///     "additionalProperties": false
/// }));
/// let mut args = json!({"n": 2.0});
/// assert!(v.check(&mut args).is_ok());
/// assert_eq!(args, json!({"n": 2}));
/// assert!(v.check(&mut json!({"n": 11})).is_err());
/// assert!(v.check(&mut json!({"n": 1, "m": 1})).is_err());
/// ```
pub struct ArgValidator {
    inner: Result<jsonschema::Validator, String>,
    /// The schema, kept when it types something as an integer (for [`integers::normalise`]).
    integers: Option<Value>,
}

impl ArgValidator {
    /// Compiles `schema`. A schema that does not compile yields a validator that reports it
    /// as the problem.
    ///
    /// `format` is read as the Rust integer width schemars wrote (`int8` ... `uint64`, `int`,
    /// `uint`): the value must be an integer (`2` or `2.0`, not `2.5`) within that width. Other formats are annotations, as JSON Schema 2020-12 has them by default.
    pub fn new(schema: &Value) -> Self {
        let inner = jsonschema::options()
            .with_keyword("format", |parent, value, _location| {
                Ok(format_keyword(parent, value))
            })
            .build(schema)
            .map_err(|e| e.to_string());
        let integers = integers::mentions_integer(schema).then(|| schema.clone());
        Self { inner, integers }
    }

    /// Normalises `args` (integral floats where the schema says `integer` become integers)
    /// and checks them against the whole schema. On failure, every problem, in document order.
    pub fn check(&self, args: &mut Value) -> Result<(), Vec<ArgProblem>> {
        self.normalise(args);
        if self.is_valid(args) {
            return Ok(());
        }
        let mut problems = self.problems(args);
        if problems.is_empty() {
            problems.push(ArgProblem {
                path: String::new(),
                message: "the arguments do not fit the parameter schema".to_owned(),
            });
        }
        Err(problems)
    }

    /// Turns the integral floats (`2.0`) of `args` that the schema types as integers into
    /// integers (`2`), as JSON Schema counts them. Part of [`check`](Self::check).
    pub fn normalise(&self, args: &mut Value) {
        if let Some(schema) = &self.integers
            && integers::has_integral_float(args)
        {
            integers::normalise(schema, args);
        }
    }

    /// Whether `args` fit.
    pub fn is_valid(&self, args: &Value) -> bool {
        self.inner.as_ref().is_ok_and(|v| v.is_valid(args))
    }

    /// Every problem of `args`, in document order.
    pub fn problems(&self, args: &Value) -> Vec<ArgProblem> {
        match &self.inner {
            Ok(v) => v
                .iter_errors(args)
                .map(|e| ArgProblem {
                    path: e.instance_path().as_str().to_owned(),
                    message: e.to_string(),
                })
                .collect(),
            Err(reason) => vec![ArgProblem {
                path: String::new(),
                message: format!("the tool's parameter schema is invalid: {reason}"),
            }],
        }
    }
}

/// The `format` keyword as the validator reads it. A bound the schema states itself
/// (`minimum`, `maximum`, as [`harden`] writes them) is left to that keyword, so a value out of
/// range is reported once.
fn format_keyword(
    parent: &Map<String, Value>,
    value: &Value,
) -> Box<dyn for<'i> jsonschema::Keyword<'i>> {
    let states = |keys: [&str; 2]| keys.iter().any(|k| parent.contains_key(*k));
    let has_min = states(["minimum", "exclusiveMinimum"]);
    let has_max = states(["maximum", "exclusiveMaximum"]);
    if value.as_str() == Some("float") {
        return Box::new(SingleFloat {
            check: !(has_min && has_max),
        });
    }
    let bound = |v: &Value| v.as_number().and_then(integers::exact_integer).unwrap_or(0);
    let width = value.as_str().and_then(|f| {
        let (min, max) = integer_range(f)?;
        Some(IntegerWidth {
            format: f.to_owned(),
            min: (!has_min).then(|| bound(&min)),
            max: (!has_max).then(|| bound(&max)),
        })
    });
    match width {
        Some(width) => Box::new(width),
        None => Box::new(Annotation),
    }
}

/// `format` as an annotation: nothing to check.
struct Annotation;

impl<'i> jsonschema::Keyword<'i> for Annotation {
    fn validate(&self, _instance: &'i Value) -> Result<(), jsonschema::ValidationError<'i>> {
        Ok(())
    }

    fn is_valid(&self, _instance: &'i Value) -> bool {
        true
    }
}

/// `format: float`: a number an `f32` holds without becoming infinite.
struct SingleFloat {
    /// False when the schema states both bounds itself.
    check: bool,
}

impl<'i> jsonschema::Keyword<'i> for SingleFloat {
    fn validate(&self, instance: &'i Value) -> Result<(), jsonschema::ValidationError<'i>> {
        if self.is_valid(instance) {
            return Ok(());
        }
        Err(jsonschema::ValidationError::custom(format!(
            "{instance} is too large for a 32-bit float (`float`)"
        )))
    }

    fn is_valid(&self, instance: &'i Value) -> bool {
        match instance {
            Value::Number(n) => {
                !self.check || n.as_f64().is_some_and(|f| f.abs() <= f64::from(f32::MAX))
            }
            _ => true,
        }
    }
}

/// `format: uint8` and the like: an integer (`2` or `2.0`, not `2.5`), within the width unless
/// the schema states that bound itself (`None`).
struct IntegerWidth {
    format: String,
    min: Option<i128>,
    max: Option<i128>,
}

impl IntegerWidth {
    fn fits(&self, instance: &Value) -> Result<(), &'static str> {
        let Value::Number(n) = instance else {
            return Ok(());
        };
        let Some(v) = integers::exact_integer(n) else {
            let integral = n.as_f64().is_some_and(|f| f.fract() == 0.0);
            return Err(if integral {
                "is out of range"
            } else {
                "is not an integer"
            });
        };
        if self.min.is_some_and(|min| v < min) || self.max.is_some_and(|max| v > max) {
            return Err("is out of range");
        }
        Ok(())
    }
}

impl<'i> jsonschema::Keyword<'i> for IntegerWidth {
    fn validate(&self, instance: &'i Value) -> Result<(), jsonschema::ValidationError<'i>> {
        self.fits(instance).map_err(|what| {
            jsonschema::ValidationError::custom(format!("{instance} {what} for `{}`", self.format))
        })
    }

    fn is_valid(&self, instance: &'i Value) -> bool {
        self.fits(instance).is_ok()
    }
}

impl std::fmt::Debug for ArgValidator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ArgValidator")
            .field("compiled", &self.inner.is_ok())
            .finish()
    }
}

/// The `required` and `properties` keys of an object schema, for suggestions.
pub(crate) fn keys_of(schema: &Value) -> (Vec<String>, Vec<String>) {
    let required = schema
        .get("required")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(str::to_owned)
        .collect();
    let allowed = schema
        .get("properties")
        .and_then(Value::as_object)
        .map(|o| o.keys().cloned().collect())
        .unwrap_or_default();
    (required, allowed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[derive(serde::Deserialize, schemars::JsonSchema)]
    #[allow(dead_code)]
    struct Sample {
        /// A name.
        name: String,
        count: Option<u32>,
        tags: Vec<String>,
    }

    #[test]
    fn spec_6_parameters_are_an_object_schema() {
        let s = schema_for::<Sample>();
        assert_eq!(s["type"], "object");
        assert!(s["properties"].is_object());
        assert_eq!(s["required"], json!(["name", "tags"]));
        assert!(s.get("$schema").is_none() && s.get("title").is_none());
        assert!(check_parameters(&s).is_ok());
        assert!(check_parameters(&json!({"type": "string"})).is_err());
        assert!(check_parameters(&json!({})).is_err());
        assert!(check_parameters(&empty_object_schema()).is_ok());
    }

    #[test]
    fn hardened_objects_refuse_unknown_keys_but_maps_keep_their_values() {
        #[derive(serde::Deserialize, schemars::JsonSchema)]
        #[allow(dead_code)]
        struct WithMap {
            env: HashMap<String, String>,
        }
        let s = schema_for::<WithMap>();
        assert_eq!(s["additionalProperties"], false);
        assert_eq!(
            s["properties"]["env"]["additionalProperties"]["type"],
            "string"
        );
        assert!(s["properties"]["env"]["properties"].is_object());
        assert!(check_metaschema(&s).is_ok());
    }

    #[test]
    fn integer_formats_refuse_floats_and_out_of_range_values() {
        let v = ArgValidator::new(&json!({"type": "integer", "format": "uint8"}));
        assert!(v.is_valid(&json!(255)));
        assert!(!v.is_valid(&json!(256)));
        assert!(v.is_valid(&json!(1.0)));
        assert!(!v.is_valid(&json!(1.5)));
        assert!(!v.is_valid(&json!(-1)));
        let v = ArgValidator::new(&json!({"type": "string", "format": "date-time"}));
        assert!(v.is_valid(&json!("not a date: formats are annotations")));
        let problems =
            ArgValidator::new(&json!({"type": "integer", "format": "int8"})).problems(&json!(1000));
        assert!(
            problems.iter().any(|p| p.message.contains("int8")),
            "{problems:?}"
        );
    }

    #[test]
    fn schemas_are_computed_once_per_type() {
        let a = schema_for::<Sample>();
        let b = schema_for::<Sample>();
        assert!(Arc::ptr_eq(&a, &b));
    }

    #[test]
    fn validator_reports_each_problem_with_its_path() {
        let v = ArgValidator::new(&schema_for::<Sample>());
        assert!(v.is_valid(&json!({"name": "a", "tags": []})));
        let problems = v.problems(&json!({"name": 5, "count": "5", "tags": [1]}));
        let paths: Vec<_> = problems.iter().map(|p| p.path.as_str()).collect();
        assert!(paths.contains(&"/name"), "{problems:?}");
        assert!(paths.contains(&"/count"), "{problems:?}");
        assert!(paths.contains(&"/tags/0"), "{problems:?}");
    }
}
