//! Parameter schemas: the neutral JSON Schema of each export, computed once per type, and the
//! validator that explains why arguments do not fit it (SPEC-6).

use std::any::TypeId;
use std::collections::HashMap;
use std::sync::{Arc, OnceLock, RwLock};

use schemars::JsonSchema;
use schemars::generate::SchemaSettings;
use serde_json::{Map, Value};

/// The schema of an export without parameters: `{type: object, properties: {},
/// additionalProperties: false}`.
pub fn empty_object_schema() -> Value {
    let mut obj = Map::new();
    obj.insert("type".into(), Value::from("object"));
    obj.insert("properties".into(), Value::Object(Map::new()));
    obj.insert("additionalProperties".into(), Value::Bool(false));
    Value::Object(obj)
}

/// The neutral schema of `T`: JSON Schema 2020-12, inline (no `$ref` unless `T` is recursive),
/// no `$schema` or `title`, `properties` always present on the top object. Computed once per
/// type and shared.
///
/// ```
/// use goondan_runtime::schema::schema_for;
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
    static CACHE: OnceLock<RwLock<HashMap<TypeId, Arc<Value>>>> = OnceLock::new();
    let cache = CACHE.get_or_init(Default::default);
    let key = TypeId::of::<T>();
    if let Some(hit) = cache.read().ok().and_then(|map| map.get(&key).cloned()) {
        return hit;
    }
    let schema = Arc::new(generate::<T>());
    match cache.write() {
        Ok(mut map) => Arc::clone(map.entry(key).or_insert(schema)),
        Err(_) => schema,
    }
}

fn generate<T: JsonSchema>() -> Value {
    let generator = SchemaSettings::draft2020_12()
        .with(|s| {
            s.inline_subschemas = true;
            s.meta_schema = None;
        })
        .into_generator();
    let mut value = generator.into_root_schema_for::<T>().to_value();
    normalise_root(&mut value);
    value
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

/// Checks that `schema` is an object schema (SPEC-6) the validator can compile.
pub fn check_parameters(schema: &Value) -> Result<(), SchemaError> {
    let ty = schema.get("type");
    if ty.and_then(Value::as_str) != Some("object") {
        return Err(SchemaError::NotAnObject {
            found: ty.map_or_else(|| "no `type`".to_owned(), |t| format!("`type: {t}`")),
        });
    }
    jsonschema::validator_for(schema)
        .map(drop)
        .map_err(|e| SchemaError::Invalid {
            reason: e.to_string(),
        })
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
pub struct ArgValidator {
    inner: Result<jsonschema::Validator, String>,
}

impl ArgValidator {
    /// Compiles `schema`. A schema that does not compile yields a validator that reports it
    /// as the problem.
    pub fn new(schema: &Value) -> Self {
        Self {
            inner: jsonschema::validator_for(schema).map_err(|e| e.to_string()),
        }
    }

    /// Whether `args` fit.
    pub fn is_valid(&self, args: &Value) -> bool {
        match &self.inner {
            Ok(v) => v.is_valid(args),
            Err(_) => false,
        }
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
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default();
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
