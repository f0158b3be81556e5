//! [`OutputSchema`]: the JSON Schema of an export's output, published as MCP `outputSchema`.
//!
//! Opt-in (`#[export(output_schema)]`, [`Export::with_output_schema`](crate::Export::with_output_schema)):
//! publishing a schema is a promise that every result carries `structuredContent` valid
//! against it, which clients check strictly; and deriving it for every export would require
//! `JsonSchema` of every output type, which many (`String`, `serde_json::Value`, foreign
//! types) either lack or describe too loosely to be useful.
//!
//! MCP requires an output schema whose root is `type: "object"`. An output type whose schema
//! is not one (a string, a number, an array, an `Option`, an enum) is published wrapped as
//! `{result: <schema>}`, and its values travel as `{"result": value}`: the same wrapping the
//! `mcp` dialect uses for outputs that are not objects.

use std::sync::Arc;

use schemars::JsonSchema;
use schemars::generate::SchemaSettings;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value, json};

/// The property that holds an output whose schema is not an object.
pub const RESULT_PROPERTY: &str = "result";

/// The output schema of an export, always an object schema.
///
/// ```
/// use goondan_runtime::tools::output_schema::OutputSchema;
/// #[derive(serde::Serialize, schemars::JsonSchema)]
/// struct Weather { celsius: f64 }
/// let object = OutputSchema::of::<Weather>();
/// assert!(!object.wraps_result());
/// assert_eq!(object.structured(serde_json::json!({"celsius": 21.0})),
///            serde_json::json!({"celsius": 21.0}));
///
/// let text = OutputSchema::of::<String>();
/// assert!(text.wraps_result());
/// assert_eq!(text.schema()["properties"]["result"]["type"], "string");
/// assert_eq!(text.structured(serde_json::json!("hi")), serde_json::json!({"result": "hi"}));
/// ```
#[derive(Debug, Clone, PartialEq, Serialize)]
// Serialised as the published schema.
#[serde(transparent)]
pub struct OutputSchema {
    schema: Arc<Value>,
    #[serde(skip)]
    wraps_result: bool,
}

impl OutputSchema {
    /// The output schema of `T`, wrapped when `T`'s schema is not an object.
    pub fn of<T: JsonSchema>() -> Self {
        let generator = SchemaSettings::draft2020_12()
            .with(|s| s.meta_schema = None)
            .into_generator();
        Self::from_schema(generator.into_root_schema_for::<T>().to_value())
    }

    /// An output schema from a JSON Schema, wrapped when its root is not `type: "object"`.
    pub fn from_schema(schema: Value) -> Self {
        let wraps_result = !is_object_schema(&schema);
        let schema = if wraps_result { wrap(schema) } else { schema };
        Self {
            schema: Arc::new(schema),
            wraps_result,
        }
    }

    /// The published schema (an object schema).
    pub fn schema(&self) -> &Value {
        &self.schema
    }

    /// The published schema, shared.
    pub fn schema_arc(&self) -> &Arc<Value> {
        &self.schema
    }

    /// Whether outputs travel as `{"result": value}`.
    pub fn wraps_result(&self) -> bool {
        self.wraps_result
    }

    /// The structured content of an output: the output itself, or `{"result": output}`.
    pub fn structured(&self, output: Value) -> Value {
        if self.wraps_result {
            json!({ RESULT_PROPERTY: output })
        } else {
            output
        }
    }
}

/// Whether the root says `type: "object"` (and nothing else).
fn is_object_schema(schema: &Value) -> bool {
    schema.get("type").and_then(Value::as_str) == Some("object")
}

/// `{type: object, properties: {result: schema}, required: [result]}`, with the inner
/// schema's `$defs` and `$schema` moved to the root so that `$ref`s still resolve.
fn wrap(mut inner: Value) -> Value {
    let mut root = Map::new();
    if let Some(obj) = inner.as_object_mut() {
        if let Some(s) = obj.remove("$schema") {
            root.insert("$schema".into(), s);
        }
        if let Some(defs) = obj.remove("$defs") {
            root.insert("$defs".into(), defs);
        }
        obj.remove("title");
    }
    root.insert("type".into(), json!("object"));
    root.insert("properties".into(), json!({ RESULT_PROPERTY: inner }));
    root.insert("required".into(), json!([RESULT_PROPERTY]));
    root.insert("additionalProperties".into(), json!(false));
    Value::Object(root)
}

/// The shape [`wrap`] produces, recognised when a schema is read back from JSON.
fn is_wrapper(schema: &Value) -> bool {
    let Some(obj) = schema.as_object() else {
        return false;
    };
    let only_result = obj
        .get("properties")
        .and_then(Value::as_object)
        .is_some_and(|p| p.len() == 1 && p.contains_key(RESULT_PROPERTY));
    only_result
        && obj.get("required") == Some(&json!([RESULT_PROPERTY]))
        && obj.get("additionalProperties") == Some(&Value::Bool(false))
        && obj.keys().all(|k| {
            matches!(
                k.as_str(),
                "$schema" | "$defs" | "type" | "properties" | "required" | "additionalProperties"
            )
        })
}

/// Read back from the published schema: an object schema as it is; the exact shape of a
/// wrapper is read as one.
impl<'de> Deserialize<'de> for OutputSchema {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let schema = Value::deserialize(deserializer)?;
        let wraps_result = is_wrapper(&schema);
        Ok(if wraps_result || is_object_schema(&schema) {
            Self {
                schema: Arc::new(schema),
                wraps_result,
            }
        } else {
            Self::from_schema(schema)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(JsonSchema)]
    #[allow(dead_code)]
    enum Colour {
        Red,
        Green,
    }

    #[derive(JsonSchema)]
    #[allow(dead_code)]
    struct Palette {
        colours: Vec<Colour>,
    }

    #[test]
    fn a_wrapped_schema_keeps_its_definitions_at_the_root() {
        let s = OutputSchema::of::<Vec<Palette>>();
        assert!(s.wraps_result());
        assert_eq!(s.schema()["type"], "object");
        assert!(s.schema()["properties"]["result"]["items"]["$ref"].is_string());
        assert!(s.schema()["$defs"]["Palette"].is_object());
    }

    #[test]
    fn a_wrapper_reads_back_as_one() {
        let s = OutputSchema::of::<Option<String>>();
        let back: OutputSchema =
            serde_json::from_value(serde_json::to_value(&s).unwrap_or(Value::Null))
                .unwrap_or_else(|_| OutputSchema::from_schema(Value::Null));
        assert_eq!(back, s);
    }
}
