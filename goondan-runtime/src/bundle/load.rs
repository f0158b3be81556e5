//! YAML documents to [`Resource`]s: the envelope every resource shares (`apiVersion`, `kind`,
//! `metadata.name`), checked before any kind-specific rule.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use serde_json::Value;

use super::API_VERSION;
use super::diagnostic::{Diagnostic, Locus, name_list};
use super::resource::{Kind, Resource};
use super::validate::E_UNKNOWN_KIND;
use super::yaml;
use crate::tools::schema::escape_pointer;

const TOP_LEVEL: &[&str] = &["apiVersion", "kind", "metadata", "spec"];
const METADATA: &[&str] = &["name", "labels", "annotations", "namespace"];

/// The resources of `text` and the problems of their envelopes.
pub(crate) fn resources(text: &str, file: &Path) -> (Vec<Resource>, Vec<Diagnostic>) {
    let mut out = Vec::new();
    let mut diags = Vec::new();
    // The file's own place at `line` (the first line, for a line of 0), not yet a resource's.
    let in_file = |line: usize| Locus {
        file: file.to_path_buf(),
        line: line.max(1),
        resource: None,
    };
    let docs = match yaml::parse(text) {
        Ok(docs) => docs,
        Err(e) => {
            diags.push(in_file(e.line).error(format!("not valid YAML: {}", e.message)));
            return (out, diags);
        }
    };
    let mut seen: HashMap<(Kind, String), usize> = HashMap::new();
    for doc in docs {
        let doc = Arc::new(doc);
        let at = in_file(doc.line_of(""));
        let Some(map) = doc.value.as_object() else {
            if !doc.value.is_null() {
                diags.push(at.error(
                    "a document must be a mapping with `apiVersion`, `kind`, `metadata` and `spec`",
                ));
            }
            continue;
        };
        let kind = match map.get("kind") {
            Some(Value::String(k)) => Kind::parse(k),
            Some(_) => {
                diags.push(at.at(doc.line_of("/kind")).error("`kind` must be a string"));
                continue;
            }
            None => {
                diags.push(at.error(format!(
                    "missing `kind`: expected one of {}",
                    name_list(Kind::KNOWN)
                )));
                continue;
            }
        };
        let name = match map.get("metadata").and_then(|m| m.get("name")) {
            Some(Value::String(n)) if !n.is_empty() => n.clone(),
            _ => {
                let line = doc.line_of("/metadata/name");
                diags.push(at.at(line).error(format!(
                    "a `{kind}` needs `metadata.name`, a non-empty string"
                )));
                continue;
            }
        };
        let at = Locus {
            resource: Some(format!("{kind}/{name}")),
            ..at
        };
        match map.get("apiVersion") {
            Some(Value::String(v)) if v == API_VERSION => {}
            Some(v) => diags.push(
                at.at(doc.line_of("/apiVersion"))
                    .error(format!("`apiVersion` is {v}; expected `{API_VERSION}`")),
            ),
            None => diags.push(at.error(format!("missing `apiVersion: {API_VERSION}`"))),
        }
        if let Kind::Other(k) = &kind {
            diags.push(at.at(doc.line_of("/kind")).error(format!(
                "{E_UNKNOWN_KIND}: unknown kind `{k}`: expected one of {}",
                name_list(Kind::KNOWN)
            )));
        }
        for key in map.keys().filter(|k| !TOP_LEVEL.contains(&k.as_str())) {
            let line = doc.line_of(&format!("/{}", escape_pointer(key)));
            diags.push(
                at.at(line)
                    .warning(format!("unknown field `{key}`: kept, not used")),
            );
        }
        if let Some(meta) = map.get("metadata").and_then(Value::as_object) {
            for key in meta.keys().filter(|k| !METADATA.contains(&k.as_str())) {
                let line = doc.line_of(&format!("/metadata/{}", escape_pointer(key)));
                diags.push(
                    at.at(line)
                        .warning(format!("unknown field `metadata.{key}`: kept, not used")),
                );
            }
        }
        if let Some(first) = seen.insert((kind.clone(), name.clone()), at.line) {
            diags.push(at.error(format!(
                "`{kind}/{name}` is defined twice (first at line {first}); names are unique per kind"
            )));
            continue;
        }
        out.push(Resource {
            kind,
            name,
            value: doc.value.clone(),
            doc: Arc::clone(&doc),
            locus: at,
        });
    }
    (out, diags)
}
