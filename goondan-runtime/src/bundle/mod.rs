//! Bundles: `goondan.yaml` files declaring Tool, Agent, Swarm and other resources.
//!
//! - [`Bundle::read`] parses a file (every YAML document is a resource) and checks it; the
//!   problems found are [`Bundle::diagnostics`], each with its file, line and resource.
//! - [`Bundle::registry`] matches the bundle's Tool resources to compiled tools by name (SPEC-5),
//!   lets the YAML's `errorMessageLimit` and descriptions override the compiled ones, resolves
//!   the Agents' package references (`@goondan/base`) through a [`ToolLibrary`], and reports every
//!   problem of the bundle at once.
//! - [`export`] writes compiled tools as Tool resources (SPEC-7).
//!
//! ```
//! use goondan_runtime::bundle::{Bundle, ToolLibrary};
//! use goondan_runtime::prelude::*;
//!
//! /// Echoes.
//! #[tool(name = "echo")]
//! pub fn say(text: String) -> String { text }
//!
//! let yaml = r#"
//! apiVersion: goondan.ai/v1
//! kind: Tool
//! metadata: {name: echo}
//! spec:
//!   errorMessageLimit: 200
//!   exports:
//!     - name: say
//!       parameters: {type: object, properties: {text: {type: string}}, required: [text]}
//! ---
//! apiVersion: goondan.ai/v1
//! kind: Agent
//! metadata: {name: helper}
//! spec:
//!   tools: ["Tool/echo"]
//! "#;
//! let bundle = Bundle::from_yaml(yaml, "goondan.yaml");
//! let registry = bundle.registry(&ToolLibrary::new([say::TOOL]))?;
//! assert_eq!(registry.resource("echo").map(|r| r.error_message_limit()), Some(200));
//! assert_eq!(bundle.agent_tools("helper")?, vec!["echo".to_owned()]);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod diagnostic;
pub mod export;
mod journal;
mod library;
mod load;
mod model;
mod parameters;
mod resource;
mod toolsets;
mod validate;
pub(crate) mod yaml;

use std::path::{Path, PathBuf};

pub use self::diagnostic::{BundleError, Diagnostic, Severity};
pub use self::export::{export_tool, export_tools};
pub use self::journal::JournalSetting;
pub use self::library::ToolLibrary;
pub(crate) use self::model::accept_provider;
pub use self::model::{ModelSpec, PROVIDERS};
pub use self::resource::{Kind, ObjectRef, Resource};
pub use self::validate::SpecCheck;
pub use self::yaml::{MAX_ALIAS_EXPANSION, MAX_FILE_BYTES};

use crate::tools::registry::ToolRegistry;

/// The `apiVersion` of every resource.
pub const API_VERSION: &str = "goondan.ai/v1";

/// The file a bundle directory is read from.
pub const BUNDLE_FILE: &str = "goondan.yaml";

/// The resources of one `goondan.yaml`, with every problem found in them.
#[derive(Debug, Clone)]
pub struct Bundle {
    file: PathBuf,
    resources: Vec<Resource>,
    diagnostics: Vec<Diagnostic>,
}

impl Bundle {
    /// Reads `path` (a file, or a directory holding `goondan.yaml`). Only an unreadable file,
    /// or one over [`MAX_FILE_BYTES`], is an `Err`; problems in the file are
    /// [`diagnostics`](Self::diagnostics).
    pub fn read(path: impl AsRef<Path>) -> Result<Self, BundleError> {
        let mut path = path.as_ref().to_path_buf();
        if path.is_dir() {
            path.push(BUNDLE_FILE);
        }
        let text = read_capped(&path)?;
        Ok(Self::from_yaml(&text, path))
    }

    /// Reads `path` and fails unless it has no errors (warnings are kept).
    pub fn load(path: impl AsRef<Path>) -> Result<Self, BundleError> {
        Self::read(path)?.checked()
    }

    /// Parses and checks the YAML `text` of the file `file`. Never panics.
    pub fn from_yaml(text: &str, file: impl Into<PathBuf>) -> Self {
        let file = file.into();
        let (resources, mut diagnostics) = load::resources(text, &file);
        diagnostics.extend(validate::check(&resources, &file));
        diagnostics.sort_by_key(|d| d.line);
        Self {
            file,
            resources,
            diagnostics,
        }
    }

    /// This bundle, or every error and warning when it has an error.
    pub fn checked(self) -> Result<Self, BundleError> {
        if self.has_errors() {
            return Err(BundleError::Invalid {
                diagnostics: self.diagnostics,
            });
        }
        Ok(self)
    }

    /// The file it was read from.
    pub fn file(&self) -> &Path {
        &self.file
    }

    /// Every resource, in file order.
    pub fn resources(&self) -> &[Resource] {
        &self.resources
    }

    /// The resource of `kind` named `name`.
    pub fn get(&self, kind: &Kind, name: &str) -> Option<&Resource> {
        self.resources
            .iter()
            .find(|r| &r.kind == kind && r.name == name)
    }

    /// The resources of one kind.
    pub fn of_kind<'a>(&'a self, kind: &'a Kind) -> impl Iterator<Item = &'a Resource> + 'a {
        self.resources.iter().filter(move |r| &r.kind == kind)
    }

    /// Every problem found, errors and warnings, by line.
    pub fn diagnostics(&self) -> &[Diagnostic] {
        &self.diagnostics
    }

    /// Whether a problem is an error.
    pub fn has_errors(&self) -> bool {
        self.diagnostics
            .iter()
            .any(|d| d.severity == Severity::Error)
    }

    /// The resource names an Agent's `spec.tools` declares, in order (CAT-2): what
    /// [`ToolCatalog::build`](crate::ToolCatalog::build) takes.
    pub fn agent_tools(&self, agent: &str) -> Result<Vec<String>, BundleError> {
        let res = self.agent(agent)?;
        Ok(res.tool_refs().into_iter().map(|(r, _)| r.name).collect())
    }

    /// The toolsets of an Agent's `spec.tools` entries, in order: each entry's resource, shaped
    /// by its `prefix`, `include`, `exclude`, `annotations` and `rename`
    /// ([`Toolset`](crate::tools::toolset::Toolset)). Entries whose shaping is wrong are left
    /// out (loading the bundle reports them, with their lines).
    pub fn agent_toolsets(
        &self,
        agent: &str,
    ) -> Result<Vec<crate::tools::toolset::Toolset>, BundleError> {
        let res = self.agent(agent)?;
        Ok(toolsets::of_agent(res)
            .into_iter()
            .map(|(set, _)| set)
            .collect())
    }

    /// `policy.maxStepsPerTurn` of the Agent, else of a Swarm that lists it, else of the first
    /// Swarm.
    pub fn max_steps_per_turn(&self, agent: &str) -> Option<usize> {
        self.policy(agent, "maxStepsPerTurn")
            .and_then(serde_json::Value::as_u64)
            .and_then(|n| usize::try_from(n).ok())
    }

    /// `policy.journal` of the Agent, else of a Swarm that lists it, else of the first Swarm:
    /// where the Agent keeps its run journal. `None` when none says, or when the setting is
    /// wrong (loading the bundle reports that, with its line).
    pub fn journal(&self, agent: &str) -> Option<JournalSetting> {
        self.policy(agent, "journal")
            .and_then(|v| JournalSetting::parse(v).ok())
    }

    /// `policy.toolRetries` of the Agent, else of a Swarm that lists it, else of the first
    /// Swarm: how many failures of one tool its model may see in a Turn
    /// ([`RetryBudget`](crate::calls::retry::RetryBudget)). `None` when none says, or when the
    /// setting is wrong (loading the bundle reports that, with its line).
    pub fn retry_budget(&self, agent: &str) -> Option<crate::calls::retry::RetryBudget> {
        self.policy(agent, "toolRetries")
            .and_then(|v| crate::calls::retry::RetryBudget::from_policy(v).ok())
    }

    /// `policy.guardrails` of the Agent, else of a Swarm that lists it, else of the first
    /// Swarm: the runtime's [guardrails](crate::calls::guardrail) around each of its calls.
    /// `None` when none says, or when the setting is wrong (loading the bundle reports that,
    /// with its line).
    pub fn guardrails(&self, agent: &str) -> Option<crate::calls::guardrail::Guardrails> {
        self.policy(agent, "guardrails")
            .and_then(|v| crate::calls::guardrail::Guardrails::from_policy(v).ok())
    }

    /// The Agent's `spec.codeMode` ([`CodeMode::from_spec`](crate::code::CodeMode::from_spec)):
    /// `None` when it says nothing or `false`, or when the setting is wrong (loading the bundle
    /// reports that, with its line).
    #[cfg(feature = "code-mode")]
    pub fn code_mode(&self, agent: &str) -> Option<crate::code::CodeMode> {
        let spec = self.get(&Kind::Agent, agent)?.spec()?.get("codeMode")?;
        crate::code::CodeMode::from_spec(spec).ok().flatten()
    }

    /// The Agent's `spec.skills`: the folder of skills its MCP server serves
    /// (`McpServerBuilder::skills`), relative to
    /// the bundle's folder. `None` when it says nothing, or when it is not a string (loading the
    /// bundle reports that, with its line).
    pub fn skills(&self, agent: &str) -> Option<PathBuf> {
        let folder = self
            .get(&Kind::Agent, agent)?
            .spec()?
            .get("skills")?
            .as_str()?;
        let dir = self.file.parent().unwrap_or_else(|| Path::new("."));
        Some(dir.join(folder))
    }

    /// `policy.{key}` of the Agent, else of a Swarm that lists it, else of the first Swarm
    /// (for settings the runtime does not read itself, such as the base tools' `sandbox`).
    pub fn policy(&self, agent: &str, key: &str) -> Option<&serde_json::Value> {
        fn of<'r>(r: &'r Resource, key: &str) -> Option<&'r serde_json::Value> {
            r.spec()?.get("policy")?.get(key)
        }
        if let Some(v) = self.get(&Kind::Agent, agent).and_then(|r| of(r, key)) {
            return Some(v);
        }
        let swarms: Vec<_> = self.of_kind(&Kind::Swarm).collect();
        swarms
            .iter()
            .find(|s| s.agent_refs().iter().any(|(r, _)| r.name == agent))
            .or(swarms.first())
            .and_then(|s| of(s, key))
    }

    /// The entry agent of the first Swarm, else the first Agent.
    pub fn entry_agent(&self) -> Option<String> {
        self.of_kind(&Kind::Swarm)
            .find_map(|s| s.entry_agent().map(|(r, _)| r.name))
            .or_else(|| self.of_kind(&Kind::Agent).next().map(|a| a.name.clone()))
    }

    /// The registry of this bundle: its Tool resources matched to `library`'s compiled tools
    /// (SPEC-5; YAML `errorMessageLimit` and descriptions win), plus the package tools its
    /// Agents reference (BASE-5). Fails with every problem of the bundle, its own included.
    pub fn registry(&self, library: &ToolLibrary) -> Result<ToolRegistry, BundleError> {
        let (tools, mut diagnostics) = library::match_tools(self, library);
        diagnostics.extend(self.diagnostics.iter().cloned());
        let registry = ToolRegistry::new();
        for (tool, at) in tools {
            if let Err(e) = registry.register(tool) {
                diagnostics.push(at.error(e.to_string()));
            }
        }
        for agent in self.of_kind(&Kind::Agent) {
            let sets = toolsets::of_agent(agent);
            if sets.iter().all(|(set, _)| set.is_plain()) {
                continue;
            }
            // Set by set, so that the error is on the line of the entry that causes it.
            let mut so_far = Vec::with_capacity(sets.len());
            for (set, pointer) in sets {
                so_far.push(set);
                match crate::tools::toolset::catalog(&registry, &so_far) {
                    Ok(_) => {}
                    // Not compiled here (bridged at run time, say): checked when it is there.
                    Err(crate::tools::toolset::ToolsetError::UnknownResource { .. }) => {
                        so_far.pop();
                    }
                    Err(e) => {
                        diagnostics.push(agent.locus_of(&pointer).error(e.to_string()));
                        break;
                    }
                }
            }
        }
        if diagnostics.iter().any(|d| d.severity == Severity::Error) {
            diagnostics.sort_by_key(|d| d.line);
            return Err(BundleError::Invalid { diagnostics });
        }
        Ok(registry)
    }
}

/// The text of `path`, refused unread when it is over [`MAX_FILE_BYTES`]; the buffer is
/// reserved fallibly, so a large file is an error rather than an abort.
fn read_capped(path: &Path) -> Result<String, BundleError> {
    use std::io::Read;
    let io = |source| BundleError::Io {
        path: path.to_path_buf(),
        source,
    };
    let file = std::fs::File::open(path).map_err(io)?;
    let size = file.metadata().map_err(io)?.len();
    let too_large = |size: u64| BundleError::TooLarge {
        path: path.to_path_buf(),
        message: yaml::too_large(size),
    };
    let cap = u64::try_from(MAX_FILE_BYTES).unwrap_or(u64::MAX);
    if size > cap {
        return Err(too_large(size));
    }
    let mut bytes = Vec::new();
    bytes
        .try_reserve(usize::try_from(size).unwrap_or(MAX_FILE_BYTES))
        .map_err(|e| io(std::io::Error::new(std::io::ErrorKind::OutOfMemory, e)))?;
    // The file may grow while it is read: never read past the cap.
    file.take(cap.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(io)?;
    if bytes.len() > MAX_FILE_BYTES {
        return Err(too_large(bytes.len() as u64));
    }
    String::from_utf8(bytes)
        .map_err(|e| io(std::io::Error::new(std::io::ErrorKind::InvalidData, e)))
}
