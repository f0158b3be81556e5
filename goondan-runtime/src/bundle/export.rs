//! Compiled tools written out as Tool resources (SPEC-7), so a bundle can be generated from
//! code: `export`, then [`Bundle::from_yaml`](super::Bundle::from_yaml), gives the same specs.
//!
//! ```
//! use goondan_runtime::bundle::{Bundle, export_tools};
//! use goondan_runtime::prelude::*;
//!
//! /// Echoes.
//! #[tool(name = "echo")]
//! pub fn say(text: String) -> String { text }
//!
//! let yaml = export_tools([say::TOOL.build()?].iter());
//! assert!(yaml.contains("kind: Tool"));
//! let bundle = Bundle::from_yaml(&yaml, "exported.yaml");
//! assert!(!bundle.has_errors());
//! # Ok::<(), goondan_runtime::tools::tool::ToolDefinitionError>(())
//! ```

use serde_json::{Map, Value, json};
use yaml_rust2::yaml::Hash;
use yaml_rust2::{Yaml, YamlEmitter};

use super::API_VERSION;
use crate::tools::tool::{ExportSpec, Tool};

/// The Tool resource of `tool` as JSON: `{apiVersion, kind: Tool, metadata: {name, labels},
/// spec: {entry, errorMessageLimit, exports}}`. In Rust the compiled handlers play the part of
/// `entry` (SPEC-1); it is written as `rust:{name}` so that other readers find one.
pub fn export_tool(tool: &Tool) -> Value {
    let exports: Vec<Value> = tool
        .exports()
        .map(|(_, e)| serde_json::to_value(ExportSpec::from(e)).unwrap_or(Value::Null))
        .collect();
    let mut metadata = Map::new();
    metadata.insert("name".into(), tool.name().into());
    metadata.insert(
        "labels".into(),
        json!({"goondan.ai/source": serde_json::to_value(tool.source().kind).unwrap_or(Value::Null)}),
    );
    json!({
        "apiVersion": API_VERSION,
        "kind": "Tool",
        "metadata": metadata,
        "spec": {
            "entry": format!("rust:{}", tool.name()),
            "errorMessageLimit": tool.error_message_limit(),
            "exports": exports,
        },
    })
}

/// Every tool as a YAML document of one multi-document file.
pub fn export_tools<'a>(tools: impl IntoIterator<Item = &'a Tool>) -> String {
    let mut out = String::new();
    for tool in tools {
        let mut doc = String::new();
        let yaml = to_yaml(&export_tool(tool));
        // Writing into a String cannot fail but for a formatter error, which String never gives.
        if YamlEmitter::new(&mut doc).dump(&yaml).is_ok() {
            out.push_str(&doc);
            out.push('\n');
        }
    }
    out
}

fn to_yaml(value: &Value) -> Yaml {
    match value {
        Value::Null => Yaml::Null,
        Value::Bool(b) => Yaml::Boolean(*b),
        Value::Number(n) => match n.as_i64() {
            Some(i) => Yaml::Integer(i),
            None => Yaml::Real(n.to_string()),
        },
        Value::String(s) => Yaml::String(s.clone()),
        Value::Array(a) => Yaml::Array(a.iter().map(to_yaml).collect()),
        Value::Object(o) => {
            let mut h = Hash::new();
            for (k, v) in o {
                h.insert(Yaml::String(k.clone()), to_yaml(v));
            }
            Yaml::Hash(h)
        }
    }
}
