//! The rules of each kind: the seeds' validation checklist (§13) for Tool resources, and the
//! references of Agents and Swarms. Every problem is collected; nothing stops at the first.

use std::collections::HashSet;

use serde_json::Value;

use super::diagnostic::Diagnostic;
use super::resource::{Kind, Resource};
use crate::name::{validate_export_name, validate_resource_name};
use crate::schema::{check_metaschema, check_parameters};

const TOOL_SPEC: &[&str] = &["entry", "errorMessageLimit", "exports"];
const EXPORT: &[&str] = &["name", "description", "parameters"];

/// Every kind-specific problem of `resources`.
pub(crate) fn check(resources: &[Resource]) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    let names = |kind: Kind| -> HashSet<&str> {
        resources
            .iter()
            .filter(|r| r.kind == kind)
            .map(|r| r.name.as_str())
            .collect()
    };
    let tools = names(Kind::Tool);
    let agents = names(Kind::Agent);
    for r in resources {
        match r.kind {
            Kind::Tool => check_tool(r, &mut out),
            Kind::Agent => check_agent(r, &tools, &mut out),
            Kind::Swarm => check_swarm(r, &agents, &mut out),
            _ => {}
        }
    }
    out
}

/// SPEC-1..7, NAME-3, NAME-5.
fn check_tool(r: &Resource, out: &mut Vec<Diagnostic>) {
    if let Err(e) = validate_resource_name(&r.name) {
        out.push(r.locus_of("/metadata/name").error(e.to_string()));
    }
    let Some(spec) = r.spec() else {
        out.push(
            r.locus_of("/spec")
                .error("a Tool needs `spec` with `exports` (SPEC-7)"),
        );
        return;
    };
    for key in spec.keys().filter(|k| !TOOL_SPEC.contains(&k.as_str())) {
        out.push(
            r.locus_of(&format!("/spec/{key}"))
                .warning(format!("unknown field `spec.{key}`: kept, not used")),
        );
    }
    if let Some(entry) = spec.get("entry")
        && !entry.is_string()
    {
        out.push(
            r.locus_of("/spec/entry")
                .error("`spec.entry` must be a string"),
        );
    }
    if let Some(limit) = spec.get("errorMessageLimit")
        && limit.as_u64().is_none_or(|n| n == 0)
    {
        out.push(r.locus_of("/spec/errorMessageLimit").error(format!(
            "`spec.errorMessageLimit` must be a positive integer, found {limit}"
        )));
    }
    let exports = match spec.get("exports") {
        Some(Value::Array(a)) if !a.is_empty() => a,
        _ => {
            out.push(
                r.locus_of("/spec/exports")
                    .error("a Tool needs at least one export in `spec.exports` (SPEC-2)"),
            );
            return;
        }
    };
    let mut seen = HashSet::new();
    for (i, export) in exports.iter().enumerate() {
        let at = format!("/spec/exports/{i}");
        let Some(map) = export.as_object() else {
            out.push(
                r.locus_of(&at)
                    .error("an export must be a mapping with `name`, `description`, `parameters`"),
            );
            continue;
        };
        for key in map.keys().filter(|k| !EXPORT.contains(&k.as_str())) {
            out.push(r.locus_of(&format!("{at}/{key}")).warning(format!(
                "unknown field `{key}` in an export: kept, not used"
            )));
        }
        match map.get("name").and_then(Value::as_str) {
            None => out.push(r.locus_of(&at).error("an export needs a `name` string")),
            Some(name) => {
                if let Err(e) = validate_export_name(name) {
                    out.push(r.locus_of(&format!("{at}/name")).error(e.to_string()));
                }
                if !seen.insert(name) {
                    out.push(r.locus_of(&format!("{at}/name")).error(format!(
                        "two exports are named `{name}`; export names are unique in a Tool (SPEC-3)"
                    )));
                }
            }
        }
        if let Some(d) = map.get("description")
            && !d.is_string()
        {
            out.push(
                r.locus_of(&format!("{at}/description"))
                    .error("`description` must be a string"),
            );
        }
        if let Some(params) = map.get("parameters") {
            let problem = check_parameters(params)
                .err()
                .or_else(|| check_metaschema(params).err());
            if let Some(e) = problem {
                out.push(r.locus_of(&format!("{at}/parameters")).error(format!(
                    "`parameters` is not a valid object schema (SPEC-6): {e}"
                )));
            }
        }
    }
}

/// `spec.tools` references (CAT-2, BASE-5).
fn check_agent(r: &Resource, tools: &HashSet<&str>, out: &mut Vec<Diagnostic>) {
    if let Some(v) = r.spec().and_then(|s| s.get("tools"))
        && !v.is_array()
    {
        out.push(
            r.locus_of("/spec/tools")
                .error("`spec.tools` must be a list of tool references"),
        );
    }
    for (parsed, pointer) in r.raw_refs("tools") {
        let at = r.locus_of(&pointer);
        match parsed {
            Err(found) => out.push(at.error(format!(
                "{found} is not a tool reference: write `Tool/name` or `ref: {{kind: Tool, name, package}}`"
            ))),
            Ok(reference) if reference.kind != "Tool" => out.push(at.error(format!(
                "`spec.tools` references `{reference}`; expected kind `Tool`"
            ))),
            Ok(reference) => {
                if reference.package.is_none() && !tools.contains(reference.name.as_str()) {
                    out.push(at.error(format!(
                        "`{reference}` is not a Tool of this bundle: declare it, or add `package:` to reference a linked package"
                    )));
                }
            }
        }
    }
}

/// `spec.entryAgent` and `spec.agents` name Agents of the bundle.
fn check_swarm(r: &Resource, agents: &HashSet<&str>, out: &mut Vec<Diagnostic>) {
    let check = |name: &str, line: usize| {
        (!agents.contains(name)).then(|| {
            r.locus
                .at(line)
                .error(format!("`Agent/{name}` is not an Agent of this bundle"))
        })
    };
    if let Some((reference, line)) = r.entry_agent() {
        out.extend(check(&reference.name, line));
    }
    for (parsed, pointer) in r.raw_refs("agents") {
        let line = r.line_of(&pointer);
        match parsed {
            Ok(reference) if reference.package.is_none() => {
                out.extend(check(&reference.name, line));
            }
            Ok(_) => {}
            Err(found) => out.push(r.locus.at(line).error(format!(
                "{found} is not an agent reference: write `Agent/name`"
            ))),
        }
    }
}
