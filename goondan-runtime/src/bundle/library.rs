//! [`ToolLibrary`]: the compiled tools and linked packages a bundle's resources are matched
//! against (SPEC-5, BASE-5).

use std::collections::{BTreeMap, HashSet};
use std::fmt;
use std::sync::Arc;

use serde_json::Value;

use super::Bundle;
use super::diagnostic::{Diagnostic, Locus, name_list};
use super::parameters;
use super::resource::Kind;
use super::validate::E_REF_NOT_FOUND;
use crate::tools::annotations::ExportAnnotations;
use crate::tools::tool::{IntoTool, Tool, ToolDefinitionError, linked_tools};
use crate::tools::ui::ExportUi;

type Resolver = Arc<dyn Fn(&str) -> Option<Result<Tool, ToolDefinitionError>> + Send + Sync>;

/// Compiled tools by name, and packages (such as `@goondan/base`) that answer
/// `ref: {kind: Tool, name, package}`.
///
/// ```
/// use goondan_runtime::bundle::ToolLibrary;
/// let library = ToolLibrary::linked().package("@acme/tools", |_name| None);
/// assert!(library.resolve("@acme/tools", "anything").is_none());
/// ```
#[derive(Clone, Default)]
pub struct ToolLibrary {
    tools: Vec<Tool>,
    /// Compiled tools whose definition is refused, reported when a bundle names them.
    refused: Vec<ToolDefinitionError>,
    packages: BTreeMap<String, Resolver>,
    listings: BTreeMap<String, Vec<String>>,
}

impl fmt::Debug for ToolLibrary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolLibrary")
            .field("tools", &self.names())
            .field("packages", &self.packages.keys().collect::<Vec<_>>())
            .finish()
    }
}

impl ToolLibrary {
    /// A library of `tools`.
    pub fn new<T: IntoTool>(tools: impl IntoIterator<Item = T>) -> Self {
        Self::default().tools(tools)
    }

    /// Every `#[tool]` module and function linked into this program.
    pub fn linked() -> Self {
        Self::new(linked_tools())
    }

    /// Adds tools.
    #[must_use]
    pub fn tools<T: IntoTool>(mut self, tools: impl IntoIterator<Item = T>) -> Self {
        for tool in tools {
            match tool.into_tool() {
                Ok(tool) => self.tools.push(tool),
                Err(err) => self.refused.push(err),
            }
        }
        self
    }

    /// Adds a package: `resolve(name)` builds the package's tool named `name`.
    #[must_use]
    pub fn package(
        mut self,
        package: impl Into<String>,
        resolve: impl Fn(&str) -> Option<Result<Tool, ToolDefinitionError>> + Send + Sync + 'static,
    ) -> Self {
        let package = package.into();
        self.listings.remove(&package);
        self.packages.insert(package, Arc::new(resolve));
        self
    }

    /// Adds a package that provides exactly `tools`: unlike [`package`](Self::package), a
    /// reference to a tool it lacks is answered with the list of the tools it has.
    ///
    /// ```
    /// use goondan_runtime::bundle::ToolLibrary;
    /// use goondan_runtime::prelude::*;
    ///
    /// /// Echoes.
    /// #[tool(name = "echo")]
    /// pub fn say(text: String) -> String { text }
    ///
    /// let library = ToolLibrary::default().package_tools("@acme/tools", [say::TOOL]);
    /// assert!(library.resolve("@acme/tools", "echo").is_some());
    /// assert_eq!(library.package_names("@acme/tools"), Some(vec!["echo".to_owned()]));
    /// ```
    #[must_use]
    pub fn package_tools<T: IntoTool>(
        mut self,
        package: impl Into<String>,
        tools: impl IntoIterator<Item = T>,
    ) -> Self {
        let package = package.into();
        let tools: Vec<Result<Tool, ToolDefinitionError>> =
            tools.into_iter().map(IntoTool::into_tool).collect();
        let name_of = |t: &Result<Tool, ToolDefinitionError>| match t {
            Ok(tool) => tool.name().to_owned(),
            Err(err) => err.resource().to_owned(),
        };
        let mut names: Vec<String> = tools.iter().map(name_of).collect();
        names.sort_unstable();
        self.listings.insert(package.clone(), names);
        self.packages.insert(
            package,
            Arc::new(move |name| tools.iter().find(|t| name_of(t) == name).cloned()),
        );
        self
    }

    /// The names of the tools of `package`, when it was added with
    /// [`package_tools`](Self::package_tools).
    pub fn package_names(&self, package: &str) -> Option<Vec<String>> {
        self.listings.get(package).cloned()
    }

    /// The compiled tool named `name`.
    pub fn get(&self, name: &str) -> Option<&Tool> {
        self.tools.iter().find(|t| t.name() == name)
    }

    /// The names of the compiled tools, sorted.
    pub fn names(&self) -> Vec<&str> {
        let mut names: Vec<_> = self.tools.iter().map(Tool::name).collect();
        names.sort_unstable();
        names
    }

    /// The compiled tools.
    pub fn iter(&self) -> impl Iterator<Item = &Tool> {
        self.tools.iter()
    }

    /// The compiled tools whose definition is refused (SPEC-6, say), with the reason.
    pub fn refused(&self) -> &[ToolDefinitionError] {
        &self.refused
    }

    /// The tool `name` of `package`, built.
    pub fn resolve(&self, package: &str, name: &str) -> Option<Result<Tool, ToolDefinitionError>> {
        self.packages.get(package).and_then(|r| r(name))
    }

    /// Whether `package` is known.
    pub fn has_package(&self, package: &str) -> bool {
        self.packages.contains_key(package)
    }
}

/// The tools of `bundle`'s registry, each with the place it comes from, and the problems of
/// matching: a declared export without a compiled handler or the reverse (SPEC-5), a Tool
/// resource with no compiled tool, an unknown package or package tool.
pub(crate) fn match_tools(
    bundle: &Bundle,
    library: &ToolLibrary,
) -> (Vec<(Tool, Locus)>, Vec<Diagnostic>) {
    let mut tools = Vec::new();
    let mut diags = Vec::new();
    for r in bundle.of_kind(&Kind::Tool) {
        let at = r.locus_of("/metadata/name");
        if let Some(err) = library.refused().iter().find(|e| e.resource() == r.name) {
            diags.push(at.error(err.to_string()));
            continue;
        }
        let same: Vec<_> = library.iter().filter(|t| t.name() == r.name).collect();
        if same.len() > 1 {
            let origins: Vec<_> = same.iter().map(|t| t.origin()).collect();
            diags.push(at.error(format!(
                "two compiled tools are named `{}`: {}",
                r.name,
                origins.join(" and ")
            )));
            continue;
        }
        let Some(compiled) = same.first() else {
            diags.push(at.error(format!(
                "no compiled tool is named `{}`: write it with `#[tool(name = \"{}\")]` and link it (SPEC-5); compiled tools: {}",
                r.name,
                r.name,
                name_list(library.names())
            )));
            continue;
        };
        let Some(spec) = r.spec() else { continue };
        // Each named export of the YAML: its index, name and mapping.
        let declared: Vec<(usize, &str, &Value)> = spec
            .get("exports")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .enumerate()
                    .filter_map(|(i, e)| Some((i, e.get("name")?.as_str()?, e)))
                    .collect()
            })
            .unwrap_or_default();
        let compiled_names: Vec<&str> = compiled.exports().map(|(_, e)| e.name()).collect();
        let mut ok = true;
        for (i, name, _) in &declared {
            if !compiled_names.contains(name) {
                ok = false;
                diags.push(r.locus_of(&format!("/spec/exports/{i}/name")).error(format!(
                    "export `{name}` has no handler in the compiled tool `{}` (SPEC-5); its exports are: {}",
                    r.name,
                    name_list(&compiled_names)
                )));
            }
        }
        for (i, name, declared) in &declared {
            let (Some(yaml), Some((_, export))) = (
                declared.get("parameters"),
                compiled.exports().find(|(_, e)| e.name() == *name),
            ) else {
                continue;
            };
            for (pointer, message) in parameters::compare(yaml, export.parameters()) {
                ok = false;
                let at = r.locus_of(&format!("/spec/exports/{i}/parameters{pointer}"));
                diags.push(at.error(format!(
                    "export `{name}`: {message} (the YAML `parameters` must match the compiled tool `{}`, SPEC-5)",
                    r.name
                )));
            }
        }
        let declared_names: HashSet<&str> = declared.iter().map(|(_, n, _)| *n).collect();
        for name in compiled_names
            .iter()
            .filter(|n| !declared_names.contains(*n))
        {
            ok = false;
            diags.push(r.locus_of("/spec/exports").error(format!(
                "the compiled tool has a handler for `{}__{name}` that the bundle does not declare (SPEC-5): add `- name: {name}` to `spec.exports`",
                r.name
            )));
        }
        if !ok {
            continue;
        }
        let limit = spec
            .get("errorMessageLimit")
            .and_then(Value::as_u64)
            .and_then(|n| usize::try_from(n).ok())
            .filter(|n| *n > 0)
            .unwrap_or(compiled.error_message_limit());
        let mut builder = Tool::builder(&r.name)
            .error_message_limit(limit)
            .source(compiled.source().clone())
            .origin(format!(
                "`{}` at {}:{}",
                r.identity(),
                r.locus.file.display(),
                r.line()
            ));
        if let Some(d) = compiled.description() {
            builder = builder.description(d);
        }
        for (_, name, declared) in &declared {
            if let Some((_, export)) = compiled.exports().find(|(_, e)| e.name() == *name) {
                let mut export = export.clone();
                if let Some(d) = declared.get("description").and_then(Value::as_str) {
                    export = export.with_description(d);
                }
                // The YAML's title and hints win over the compiled ones, key by key.
                let yaml = declared
                    .get("annotations")
                    .and_then(|a| serde_json::from_value::<ExportAnnotations>(a.clone()).ok());
                if let Some(yaml) = yaml {
                    let base = export.annotations().clone();
                    export = export.with_annotations(ExportAnnotations {
                        title: yaml.title.or(base.title),
                        read_only: yaml.read_only.or(base.read_only),
                        destructive: yaml.destructive.or(base.destructive),
                        idempotent: yaml.idempotent.or(base.idempotent),
                        open_world: yaml.open_world.or(base.open_world),
                        // How calls relate to tasks is the compiled handler's, not the YAML's.
                        task_support: base.task_support,
                    });
                }
                // The YAML's page and visibility win over the compiled ones, key by key.
                // A `ui` that is not well formed is validation's to report.
                let yaml = declared.get("ui").and_then(Value::as_object);
                if let Some((map, ui)) =
                    yaml.and_then(|map| Some((map, ExportUi::from_mapping(map).ok()?)))
                {
                    let base = export.ui().cloned().unwrap_or_default();
                    export = export.with_ui(ExportUi {
                        resource_uri: ui.resource_uri.or(base.resource_uri),
                        visibility: if map.contains_key("visibility") {
                            ui.visibility
                        } else {
                            base.visibility
                        },
                    });
                }
                builder = builder.export(export);
            }
        }
        match builder.build() {
            Ok(tool) => tools.push((tool, at)),
            Err(e) => diags.push(at.error(e.to_string())),
        }
    }
    let mut seen = HashSet::new();
    for agent in bundle.of_kind(&Kind::Agent) {
        for (reference, line) in agent.tool_refs() {
            let Some(package) = reference.package.as_deref() else {
                continue;
            };
            if reference.kind != "Tool"
                || !seen.insert((package.to_owned(), reference.name.clone()))
            {
                continue;
            }
            let at = agent.locus.at(line);
            if !library.has_package(package) {
                let linked = name_list(library.packages.keys());
                diags.push(at.error(format!(
                    "{E_REF_NOT_FOUND}: package `{package}` is not linked into this program: add it with `ToolLibrary::package`; linked packages: {}",
                    linked
                )));
                continue;
            }
            match library.resolve(package, &reference.name) {
                Some(Ok(tool)) => tools.push((tool, at)),
                Some(Err(err)) => diags.push(at.error(err.to_string())),
                None => {
                    let has = match library.package_names(package) {
                        Some(names) => format!("its tools are: {}", name_list(names)),
                        None => "its tools are not listed (add it with `ToolLibrary::package_tools` to list them)".to_owned(),
                    };
                    diags.push(at.error(format!(
                        "{E_REF_NOT_FOUND}: package `{package}` has no tool named `{}`; {has}",
                        reference.name
                    )));
                }
            }
        }
    }
    (tools, diags)
}
