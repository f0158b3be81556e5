//! The rules of each kind: the seeds' validation checklist (§13) for Tool resources, and every
//! reference between resources (an Agent's tools, model, extensions and system prompt file, a
//! Swarm's agents, a Connection's swarm), each miss an `E_CONFIG_REF_NOT_FOUND` with its line.
//! Every problem is collected; nothing stops at the first.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::path::Path;

use serde_json::Value;

use super::diagnostic::{Diagnostic, name_list};
use super::journal::JournalSetting;
use super::resource::{Kind, ObjectRef, Resource};
use crate::tools::annotations::ExportAnnotations;
use crate::tools::name::{validate_export_name, validate_resource_name};
use crate::tools::schema::{check_metaschema, check_parameters};

const TOOL_SPEC: &[&str] = &["entry", "errorMessageLimit", "exports"];
const EXPORT: &[&str] = &[
    "name",
    "description",
    "parameters",
    "annotations",
    "outputSchema",
    "ui",
];
/// The keys of an export's `ui` (MCP Apps): the tool's own (`resourceUri`, `visibility`) and
/// its page's (`page`, the HTML file; the page's `_meta.ui`).
const EXPORT_UI: &[&str] = &[
    "resourceUri",
    "visibility",
    "page",
    "csp",
    "permissions",
    "domain",
    "prefersBorder",
];

/// The code of a reference to a resource the bundle does not have, as the TypeScript runtime
/// raises it.
pub(crate) const E_REF_NOT_FOUND: &str = "E_CONFIG_REF_NOT_FOUND";

/// The code of a document whose `kind` is none the runtime knows.
pub(crate) const E_UNKNOWN_KIND: &str = "E_CONFIG_UNKNOWN_KIND";

/// A check of one kind's `spec` that lives with the code reading it (an Extension's `spec.mcp`
/// is read by the MCP client, an Agent's `policy.sandbox` by goondan-base's sandbox):
/// submitted with `inventory::submit!`, run for every resource of its kind, so the bundle
/// reports its problems on their lines without depending on that code.
///
/// ```
/// use goondan_runtime::bundle::{Diagnostic, Resource, SpecCheck};
///
/// fn no_shouting(r: &Resource, out: &mut Vec<Diagnostic>) {
///     if r.name.chars().any(|c| c.is_ascii_uppercase()) {
///         out.push(r.error_at("/metadata/name", "write the name in lower case"));
///     }
/// }
///
/// inventory::submit! {
///     SpecCheck { kind: "Agent", check: no_shouting }
/// }
/// ```
pub struct SpecCheck {
    /// The kind it checks (`Agent`, `Extension`, ...).
    pub kind: &'static str,
    /// Pushes the problems of one resource.
    pub check: fn(&Resource, &mut Vec<Diagnostic>),
}

inventory::collect!(SpecCheck);

/// The names of the resources of each kind.
struct Names<'a>(HashMap<&'a Kind, BTreeSet<&'a str>>);

impl Names<'_> {
    fn has(&self, kind: &Kind, name: &str) -> bool {
        self.0.get(kind).is_some_and(|n| n.contains(name))
    }

    fn list(&self, kind: &Kind) -> String {
        name_list(self.0.get(kind).into_iter().flatten())
    }
}

/// Every kind-specific problem of `resources`, read from `file` (`prompts.systemRef` files
/// are found next to it).
pub(crate) fn check(resources: &[Resource], file: &Path) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    let mut names = Names(HashMap::new());
    for r in resources {
        names.0.entry(&r.kind).or_default().insert(r.name.as_str());
    }
    let dir = file.parent().unwrap_or(Path::new(""));
    for r in resources {
        match r.kind {
            Kind::Tool => check_tool(r, &mut out),
            Kind::Model => super::model::check(r, &mut out),
            Kind::Agent => check_agent(r, &names, dir, &mut out),
            Kind::Swarm => check_swarm(r, &names, &mut out),
            Kind::Connection => {
                if let Some(v) = r.spec().and_then(|s| s.get("swarmRef")) {
                    check_ref(r, v, "/spec/swarmRef", &Kind::Swarm, &names, &mut out);
                }
            }
            _ => {}
        }
        for c in inventory::iter::<SpecCheck> {
            if c.kind == r.kind.as_str() {
                (c.check)(r, &mut out);
            }
        }
    }
    out
}

/// The reference at `pointer` names a resource of `kind` in this bundle (or of a package).
fn check_ref(
    r: &Resource,
    value: &Value,
    pointer: &str,
    kind: &Kind,
    names: &Names<'_>,
    out: &mut Vec<Diagnostic>,
) {
    let at = r.locus_of(pointer);
    let reference = ObjectRef::parse(value).or_else(|| {
        value
            .as_str()
            .filter(|s| !s.is_empty() && !s.contains('/'))
            .map(|name| ObjectRef {
                kind: kind.to_string(),
                name: name.to_owned(),
                package: None,
            })
    });
    let field = pointer.trim_start_matches("/spec/").replace('/', ".");
    let Some(reference) = reference else {
        out.push(at.error(format!(
            "{value} is not a reference: write `{kind}/name` in `spec.{field}`"
        )));
        return;
    };
    if reference.kind != kind.as_str() {
        out.push(at.error(format!(
            "`spec.{field}` references `{reference}`; expected kind `{kind}`"
        )));
    } else if reference.package.is_none() && !names.has(kind, &reference.name) {
        out.push(at.error(format!(
            "{E_REF_NOT_FOUND}: `{reference}` is not a {kind} of this bundle; its {kind} resources are: {}",
            names.list(kind)
        )));
    }
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
        if let Some(a) = map.get("annotations")
            && let Err(e) = serde_json::from_value::<ExportAnnotations>(a.clone())
        {
            out.push(r.locus_of(&format!("{at}/annotations")).error(format!(
                "`annotations` must be a mapping of `title` (a string) and `readOnly`, \
                 `destructive`, `idempotent`, `openWorld` (booleans): {e}"
            )));
        }
        if let Some(ui) = map.get("ui") {
            check_ui(r, &format!("{at}/ui"), ui, out);
        }
        if let Some(o) = map.get("outputSchema")
            && !o.is_object()
        {
            out.push(
                r.locus_of(&format!("{at}/outputSchema"))
                    .error("`outputSchema` must be a JSON Schema mapping"),
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

/// `spec.tools` (CAT-2, BASE-5), `spec.modelConfig.modelRef`, `spec.extensions` and
/// `spec.prompts.systemRef`.
fn check_agent(r: &Resource, names: &Names<'_>, dir: &Path, out: &mut Vec<Diagnostic>) {
    let spec = r.spec();
    check_policy(r, out);
    #[cfg(feature = "code-mode")]
    if let Some(Err(why)) = spec
        .and_then(|s| s.get("codeMode"))
        .map(crate::code::CodeMode::from_spec)
    {
        out.push(r.locus_of("/spec/codeMode").error(why));
    }
    if let Some(v) = spec.and_then(|s| s.get("skills")) {
        match v.as_str() {
            Some(folder) if !dir.join(folder).is_dir() => {
                out.push(r.locus_of("/spec/skills").error(format!(
                    "`spec.skills` names `{folder}`, which is not a folder"
                )))
            }
            Some(_) => {}
            None => out.push(
                r.locus_of("/spec/skills")
                    .error("`spec.skills` must be a folder of skills, relative to the bundle"),
            ),
        }
    }
    if let Some(v) = spec.and_then(|s| s.get("tools"))
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
                let entry = r
                    .spec()
                    .and_then(|s| s.get("tools"))
                    .and_then(|t| t.pointer(pointer.trim_start_matches("/spec/tools")));
                if let Some(Err((under, why))) =
                    entry.map(|e| super::toolsets::shape(&reference.name, e))
                {
                    out.push(r.locus_of(&format!("{pointer}{under}")).error(why));
                }
                if reference.package.is_none() && !names.has(&Kind::Tool, &reference.name) {
                    out.push(at.error(format!(
                        "{E_REF_NOT_FOUND}: `{reference}` is not a Tool of this bundle: declare it, or add `package:` to reference a linked package; its Tool resources are: {}",
                        names.list(&Kind::Tool)
                    )));
                }
            }
        }
    }
    // The Model's options an Agent may set.
    super::model::check_options(r, "/spec/modelConfig/params", out);
    if let Some(v) = spec
        .and_then(|s| s.get("modelConfig"))
        .and_then(|m| m.get("modelRef"))
    {
        check_ref(r, v, "/spec/modelConfig/modelRef", &Kind::Model, names, out);
    } else if let Some(v) = spec.and_then(|s| s.get("modelRef")) {
        check_ref(r, v, "/spec/modelRef", &Kind::Model, names, out);
    }
    check_refs(r, "extensions", &Kind::Extension, names, out);
    for field in ["prompts", "prompt"] {
        let Some(v) = spec
            .and_then(|s| s.get(field))
            .and_then(|p| p.get("systemRef"))
        else {
            continue;
        };
        let pointer = format!("/spec/{field}/systemRef");
        let at = r.locus_of(&pointer);
        match v.as_str() {
            Some(rel) if !rel.is_empty() => {
                let path = dir.join(rel);
                if !path.is_file() {
                    out.push(at.error(format!(
                        "{E_REF_NOT_FOUND}: `spec.{field}.systemRef` names `{rel}`, but `{}` is not a file (paths are relative to the bundle file)",
                        path.display()
                    )));
                }
            }
            _ => out.push(at.error(format!(
                "`spec.{field}.systemRef` must be the path of a file, relative to the bundle file"
            ))),
        }
    }
}

/// The settings of `spec.policy` that are read into a value when the bundle is used: each is
/// checked here, with the line of what is wrong.
fn check_policy(r: &Resource, out: &mut Vec<Diagnostic>) {
    type Check = fn(&Value) -> Result<(), (String, String)>;
    let checks: [(&str, Check); 3] = [
        // `RetryBudget`
        ("toolRetries", |v| {
            crate::calls::retry::RetryBudget::from_policy(v).map(drop)
        }),
        // `Guardrails`
        ("guardrails", |v| {
            crate::calls::guardrail::Guardrails::from_policy(v).map(drop)
        }),
        // `JournalSetting`
        ("journal", |v| {
            JournalSetting::parse(v)
                .map(drop)
                .map_err(|(under, why)| (under.to_owned(), why))
        }),
    ];
    let Some(policy) = r.spec().and_then(|s| s.get("policy")) else {
        return;
    };
    for (key, check) in checks {
        if let Some(Err((under, why))) = policy.get(key).map(check) {
            out.push(r.locus_of(&format!("/spec/policy/{key}{under}")).error(why));
        }
    }
}

/// `spec.entryAgent` and `spec.agents` name Agents of the bundle.
fn check_swarm(r: &Resource, names: &Names<'_>, out: &mut Vec<Diagnostic>) {
    let spec = r.spec();
    check_policy(r, out);
    if let Some(v) = spec.and_then(|s| s.get("entryAgent")) {
        check_ref(r, v, "/spec/entryAgent", &Kind::Agent, names, out);
    }
    check_refs(r, "agents", &Kind::Agent, names, out);
}

/// `spec.{key}`, when there, is a list of references to resources of `kind`.
fn check_refs(r: &Resource, key: &str, kind: &Kind, names: &Names<'_>, out: &mut Vec<Diagnostic>) {
    match r.spec().and_then(|s| s.get(key)) {
        None | Some(Value::Null) => {}
        Some(Value::Array(items)) => {
            for (i, v) in items.iter().enumerate() {
                check_ref(r, v, &format!("/spec/{key}/{i}"), kind, names, out);
            }
        }
        Some(_) => out.push(r.locus_of(&format!("/spec/{key}")).error(format!(
            "`spec.{key}` must be a list of {} references",
            kind.as_str().to_lowercase()
        ))),
    }
}

/// The form of an export's `ui` (MCP Apps): `resourceUri` a `ui://` URI, `visibility` a list of
/// `model` and `app`, `page` a file, `csp` and `permissions` mappings, `domain` a string,
/// `prefersBorder` a boolean. The page's own checks (its file, its size) are the MCP server's.
fn check_ui(r: &Resource, at: &str, ui: &Value, out: &mut Vec<Diagnostic>) {
    let Some(map) = ui.as_object() else {
        out.push(r.locus_of(at).error(
            "`ui` must be a mapping: `{resourceUri: ui://..., visibility: [model, app], page: view.html}`",
        ));
        return;
    };
    for key in map.keys().filter(|k| !EXPORT_UI.contains(&k.as_str())) {
        out.push(r.locus_of(&format!("{at}/{key}")).error(format!(
            "unknown key `{key}` in `ui`; expected one of {}",
            EXPORT_UI.join(", ")
        )));
    }
    match crate::tools::ui::ExportUi::from_mapping(map) {
        Err(e) => out.push(r.locus_of(at).error(format!("`ui`: {e}"))),
        Ok(ui) => {
            if let Some(uri) = &ui.resource_uri
                && !uri.starts_with(crate::tools::ui::UI_SCHEME)
            {
                out.push(r.locus_of(&format!("{at}/resourceUri")).error(format!(
                    "`resourceUri` must be a `ui://` URI, like `ui://counter/view.html`; found `{uri}`"
                )));
            }
        }
    }
    let wrong = |key: &str, ok: fn(&Value) -> bool, what: &str, out: &mut Vec<Diagnostic>| {
        if let Some(v) = map.get(key)
            && !ok(v)
        {
            out.push(
                r.locus_of(&format!("{at}/{key}"))
                    .error(format!("`{key}` must be {what}")),
            );
        }
    };
    wrong(
        "page",
        Value::is_string,
        "a file, relative to the bundle's folder",
        out,
    );
    wrong(
        "csp",
        Value::is_object,
        "a mapping of `connectDomains`, `resourceDomains`, `frameDomains` and `baseUriDomains`",
        out,
    );
    wrong(
        "permissions",
        Value::is_object,
        "a mapping of `camera`, `microphone`, `geolocation` and `clipboardWrite`, each `{}`",
        out,
    );
    wrong("domain", Value::is_string, "a string", out);
    wrong("prefersBorder", Value::is_boolean, "a boolean", out);
}
