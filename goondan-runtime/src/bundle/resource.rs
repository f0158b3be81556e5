//! One resource of a bundle ([`Resource`]), its [`Kind`], and references between resources
//! ([`ObjectRef`]).

use std::fmt;
use std::sync::Arc;

use serde_json::Value;

use super::diagnostic::{Diagnostic, Locus};
use super::yaml::Document;

/// The kind of a resource. Unknown kinds are kept, and reported as errors
/// (`E_CONFIG_UNKNOWN_KIND`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Kind {
    /// `Package`.
    Package,
    /// `Model`.
    Model,
    /// `Tool` (SPEC-7).
    Tool,
    /// `Agent`.
    Agent,
    /// `Swarm`.
    Swarm,
    /// `Extension`.
    Extension,
    /// `Connection`.
    Connection,
    /// `Connector`.
    Connector,
    /// Any other kind.
    Other(String),
}

impl Kind {
    /// Every kind the runtime knows.
    pub(crate) const KNOWN: [Kind; 8] = [
        Kind::Package,
        Kind::Model,
        Kind::Tool,
        Kind::Agent,
        Kind::Swarm,
        Kind::Extension,
        Kind::Connection,
        Kind::Connector,
    ];

    /// The kind as YAML writes it.
    pub fn as_str(&self) -> &str {
        match self {
            Kind::Package => "Package",
            Kind::Model => "Model",
            Kind::Tool => "Tool",
            Kind::Agent => "Agent",
            Kind::Swarm => "Swarm",
            Kind::Extension => "Extension",
            Kind::Connection => "Connection",
            Kind::Connector => "Connector",
            Kind::Other(s) => s,
        }
    }

    /// The kind named `s`.
    pub fn parse(s: &str) -> Kind {
        Kind::KNOWN
            .into_iter()
            .find(|k| k.as_str() == s)
            .unwrap_or_else(|| Kind::Other(s.to_owned()))
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A reference to a resource: `"Tool/bash"`, `{ref: "Tool/bash"}`,
/// `{ref: {kind: Tool, name: bash, package: "@goondan/base"}}` or `{kind: Tool, name: bash}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObjectRef {
    /// The kind named.
    pub kind: String,
    /// The resource name.
    pub name: String,
    /// The package that provides it, when not this bundle.
    pub package: Option<String>,
}

impl ObjectRef {
    /// Reads a reference; `None` when `value` has none of the accepted shapes.
    pub fn parse(value: &Value) -> Option<ObjectRef> {
        match value {
            Value::String(s) => {
                let (kind, name) = s.split_once('/')?;
                (!kind.is_empty() && !name.is_empty()).then(|| ObjectRef {
                    kind: kind.to_owned(),
                    name: name.to_owned(),
                    package: None,
                })
            }
            Value::Object(map) => {
                if let Some(inner) = map.get("ref") {
                    return Self::parse(inner);
                }
                let kind = map.get("kind")?.as_str()?;
                let name = map.get("name")?.as_str()?;
                let package = match map.get("package") {
                    None | Some(Value::Null) => None,
                    Some(p) => Some(p.as_str()?.to_owned()),
                };
                Some(ObjectRef {
                    kind: kind.to_owned(),
                    name: name.to_owned(),
                    package,
                })
            }
            _ => None,
        }
    }
}

impl fmt::Display for ObjectRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.kind, self.name)?;
        if let Some(p) = &self.package {
            write!(f, " (package `{p}`)")?;
        }
        Ok(())
    }
}

/// One resource: `apiVersion`, `kind`, `metadata.name`, and the whole document as JSON (unknown
/// fields included).
#[derive(Debug, Clone)]
pub struct Resource {
    /// The kind.
    pub kind: Kind,
    /// `metadata.name`.
    pub name: String,
    /// The document, as written.
    pub value: Value,
    pub(crate) doc: Arc<Document>,
    pub(crate) locus: Locus,
}

impl Resource {
    /// `Kind/name`.
    pub fn identity(&self) -> String {
        format!("{}/{}", self.kind, self.name)
    }

    /// The line of the resource's first line.
    pub fn line(&self) -> usize {
        self.locus.line
    }

    /// The line of the field at `pointer` (a JSON pointer such as `/spec/exports/0/name`), or
    /// of its nearest ancestor that exists.
    pub fn line_of(&self, pointer: &str) -> usize {
        self.doc.line_of(pointer)
    }

    pub(crate) fn locus_of(&self, pointer: &str) -> Locus {
        self.locus.at(self.line_of(pointer))
    }

    /// An error about the field at `pointer` (a JSON pointer), on its line.
    pub fn error_at(&self, pointer: &str, message: impl Into<String>) -> Diagnostic {
        self.locus_of(pointer).error(message)
    }

    /// `spec`, when it is a mapping.
    pub fn spec(&self) -> Option<&serde_json::Map<String, Value>> {
        self.value.get("spec").and_then(Value::as_object)
    }

    /// Every item of the list `spec.{field}`: its reference (or the item as text, when it is
    /// none) and its JSON pointer.
    pub(crate) fn raw_refs(&self, field: &str) -> Vec<(Result<ObjectRef, String>, String)> {
        let Some(items) = self
            .spec()
            .and_then(|s| s.get(field))
            .and_then(Value::as_array)
        else {
            return Vec::new();
        };
        items
            .iter()
            .enumerate()
            .map(|(i, v)| {
                let pointer = format!("/spec/{field}/{i}");
                let parsed = ObjectRef::parse(v).ok_or_else(|| v.to_string());
                (parsed, pointer)
            })
            .collect()
    }

    /// The well-formed references of an Agent's `spec.tools`, with their lines.
    pub fn tool_refs(&self) -> Vec<(ObjectRef, usize)> {
        self.refs_with_lines("tools")
    }

    /// The well-formed references of a Swarm's `spec.agents`, with their lines.
    pub fn agent_refs(&self) -> Vec<(ObjectRef, usize)> {
        self.refs_with_lines("agents")
    }

    fn refs_with_lines(&self, field: &str) -> Vec<(ObjectRef, usize)> {
        self.raw_refs(field)
            .into_iter()
            .filter_map(|(r, p)| r.ok().map(|r| (r, self.line_of(&p))))
            .collect()
    }

    /// A Swarm's `spec.entryAgent`, with its line.
    pub fn entry_agent(&self) -> Option<(ObjectRef, usize)> {
        let v = self.spec()?.get("entryAgent")?;
        let r = ObjectRef::parse(v).or_else(|| {
            v.as_str().map(|name| ObjectRef {
                kind: "Agent".to_owned(),
                name: name.to_owned(),
                package: None,
            })
        })?;
        Some((r, self.line_of("/spec/entryAgent")))
    }
}
