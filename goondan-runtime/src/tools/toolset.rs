//! [`Toolset`]: the tools of one or more resources, shaped for an Agent: filtered (by name, by
//! effect hint such as read-only), prefixed, renamed, and combined with other sets into one
//! [`ToolCatalog`] ([`catalog`]).
//!
//! The shaped names are the names: the model, the executor, approvals and the MCP server see
//! them, and a call to one runs the export it was made from. Each item keeps its source
//! (config, MCP, extension). Every final name is a valid `{resource}__{export}`, and two sets
//! that give the same name are an error ([`ToolsetError`]), as is a set that selects nothing.
//!
//! ```
//! use goondan_runtime::prelude::*;
//! use goondan_runtime::tools::toolset::{self, Hint, Toolset};
//!
//! /// Issues.
//! #[tool(name = "github")]
//! pub mod github {
//!     use super::*;
//!     /// List issues.
//!     #[export(read_only)]
//!     pub fn list_issues(repo: String) -> String { format!("issues of {repo}") }
//!     /// Close an issue.
//!     #[export(destructive)]
//!     pub fn close_issue(number: u32) -> String { format!("closed #{number}") }
//! }
//!
//! let registry = ToolRegistry::builder().tool(github::TOOL).build()?;
//! let sets = [Toolset::of("github").when(Hint::ReadOnly, true).prefix("gh").rename("list_issues", "issues")];
//! let catalog = toolset::catalog(&registry, &sets)?;
//! assert_eq!(catalog.names().collect::<Vec<_>>(), ["gh__issues"]);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use crate::tools::annotations::ExportAnnotations;
use crate::tools::catalog::{CatalogItem, ToolCatalog};
use crate::tools::name::{self, NameError, ToolName};
use crate::tools::registry::{RegisteredExport, ToolRegistry};

/// An effect hint a set can filter on. Unset hints read as MCP reads them: not read-only,
/// destructive, not idempotent, open-world.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hint {
    /// `readOnly`.
    ReadOnly,
    /// `destructive`.
    Destructive,
    /// `idempotent`.
    Idempotent,
    /// `openWorld`.
    OpenWorld,
}

impl Hint {
    /// The hint's key in a bundle (`readOnly`, ...).
    pub fn key(self) -> &'static str {
        match self {
            Hint::ReadOnly => "readOnly",
            Hint::Destructive => "destructive",
            Hint::Idempotent => "idempotent",
            Hint::OpenWorld => "openWorld",
        }
    }

    /// The hint of a bundle key.
    pub fn from_key(key: &str) -> Option<Hint> {
        [
            Hint::ReadOnly,
            Hint::Destructive,
            Hint::Idempotent,
            Hint::OpenWorld,
        ]
        .into_iter()
        .find(|h| h.key() == key)
    }

    fn of(self, a: &ExportAnnotations) -> bool {
        match self {
            Hint::ReadOnly => a.read_only.unwrap_or(false),
            Hint::Destructive => a.destructive.unwrap_or(true),
            Hint::Idempotent => a.idempotent.unwrap_or(false),
            Hint::OpenWorld => a.open_world.unwrap_or(true),
        }
    }
}

/// Why a set of toolsets cannot make a catalog.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ToolsetError {
    /// A set names a resource the registry does not have.
    #[error("the toolset `{set}` names `{resource}`, which is not registered")]
    UnknownResource {
        /// The set.
        set: String,
        /// The missing resource.
        resource: String,
    },
    /// A set selects no tool.
    #[error("the toolset `{set}` selects no tool: check its include, exclude and hints")]
    Empty {
        /// The set.
        set: String,
    },
    /// A shaped name is not a valid tool name.
    #[error("the toolset `{set}` makes `{name}`, which is not a valid tool name: {source}")]
    InvalidName {
        /// The set.
        set: String,
        /// The name it made.
        name: String,
        /// What is wrong with it.
        source: NameError,
    },
    /// Two tools get the same name.
    #[error("`{name}` is given to both `{first}` and `{second}`: rename one")]
    Clash {
        /// The name.
        name: String,
        /// The tool that had it first.
        first: String,
        /// The tool that would have it too.
        second: String,
    },
    /// A rename names no tool of its set.
    #[error("the toolset `{set}` renames `{from}`, which is not one of its tools")]
    RenameUnknown {
        /// The set.
        set: String,
        /// The name renamed.
        from: String,
    },
    /// A rename's target is renamed too (a chain or a cycle of renames).
    #[error(
        "the toolset `{set}` renames `{from}` to `{to}`, which is renamed too: rename each tool once, from its own name"
    )]
    RenameChain {
        /// The set.
        set: String,
        /// The name renamed.
        from: String,
        /// Its target.
        to: String,
    },
}

/// The tools of one or more resources, shaped (see the [module](self)).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Toolset {
    resources: Vec<String>,
    include: Vec<String>,
    exclude: Vec<String>,
    hints: Vec<(Hint, bool)>,
    prefix: Option<String>,
    renames: Vec<(String, String)>,
}

impl Toolset {
    /// Every export of `resource`.
    pub fn of(resource: impl Into<String>) -> Self {
        Self {
            resources: vec![resource.into()],
            include: Vec::new(),
            exclude: Vec::new(),
            hints: Vec::new(),
            prefix: None,
            renames: Vec::new(),
        }
    }

    /// Adds the exports of `resource` to the set (combined, shaped alike).
    #[must_use]
    pub fn and(mut self, resource: impl Into<String>) -> Self {
        self.resources.push(resource.into());
        self
    }

    /// Keeps only the tools one of `patterns` matches: an export name or a full name, `*`
    /// standing for any run of characters (`list_*`, `github__get_*`).
    #[must_use]
    pub fn include<S: Into<String>>(mut self, patterns: impl IntoIterator<Item = S>) -> Self {
        self.include.extend(patterns.into_iter().map(Into::into));
        self
    }

    /// Leaves out the tools one of `patterns` matches (as [`include`](Self::include)).
    #[must_use]
    pub fn exclude<S: Into<String>>(mut self, patterns: impl IntoIterator<Item = S>) -> Self {
        self.exclude.extend(patterns.into_iter().map(Into::into));
        self
    }

    /// Keeps only the tools whose `hint` is `value` (`when(Hint::ReadOnly, true)`).
    #[must_use]
    pub fn when(mut self, hint: Hint, value: bool) -> Self {
        self.hints.push((hint, value));
        self
    }

    /// Names every tool `{prefix}__{export}`: the prefix takes the resource's place.
    #[must_use]
    pub fn prefix(mut self, prefix: impl Into<String>) -> Self {
        self.prefix = Some(prefix.into());
        self
    }

    /// Names the tool `from` (an export name or a full name) `to`: an export name (under the
    /// set's prefix or the tool's resource) or a full name.
    #[must_use]
    pub fn rename(mut self, from: impl Into<String>, to: impl Into<String>) -> Self {
        self.renames.push((from.into(), to.into()));
        self
    }

    /// The set's name in errors: its resources joined with `+`.
    pub fn label(&self) -> String {
        self.resources.join("+")
    }

    /// Whether the set shapes anything (a plain set is its resources as they are).
    pub fn is_plain(&self) -> bool {
        self.include.is_empty()
            && self.exclude.is_empty()
            && self.hints.is_empty()
            && self.prefix.is_none()
            && self.renames.is_empty()
    }

    fn selects(&self, entry: &RegisteredExport) -> bool {
        let full = entry.name().as_str();
        let export = entry.name().export();
        let matches = |p: &String| name::glob_matches(p, export) || name::glob_matches(p, full);
        (self.include.is_empty() || self.include.iter().any(matches))
            && !self.exclude.iter().any(matches)
            && self
                .hints
                .iter()
                .all(|(hint, value)| hint.of(entry.export().annotations()) == *value)
    }

    /// The set's items, named.
    fn items(&self, registry: &ToolRegistry) -> Result<Vec<CatalogItem>, ToolsetError> {
        let set = self.label();
        let mut chosen: Vec<Arc<RegisteredExport>> = Vec::new();
        for resource in &self.resources {
            let exports =
                registry
                    .exports_of(resource)
                    .ok_or_else(|| ToolsetError::UnknownResource {
                        set: set.clone(),
                        resource: resource.clone(),
                    })?;
            chosen.extend(exports.into_iter().filter(|e| self.selects(e)));
        }
        if chosen.is_empty() {
            return Err(ToolsetError::Empty { set });
        }
        let is_of = |from: &str, e: &RegisteredExport| {
            from == e.name().as_str() || from == e.name().export()
        };
        for (from, to) in &self.renames {
            if !chosen.iter().any(|e| is_of(from, e)) {
                return Err(ToolsetError::RenameUnknown {
                    set,
                    from: from.clone(),
                });
            }
            if self
                .renames
                .iter()
                .any(|(other, _)| other == to && other != from)
            {
                return Err(ToolsetError::RenameChain {
                    set,
                    from: from.clone(),
                    to: to.clone(),
                });
            }
        }
        chosen
            .iter()
            .map(|entry| {
                let item = CatalogItem::from_entry(entry);
                let resource = self
                    .prefix
                    .as_deref()
                    .unwrap_or_else(|| entry.name().resource());
                let export = self
                    .renames
                    .iter()
                    .find(|(from, _)| is_of(from, entry))
                    .map_or(entry.name().export(), |(_, to)| to.as_str());
                let full = if export.contains(name::SEPARATOR) {
                    export.to_owned()
                } else {
                    format!("{resource}{}{export}", name::SEPARATOR)
                };
                if full == entry.name().as_str() {
                    return Ok(item);
                }
                let name = ToolName::parse(&full).map_err(|source| ToolsetError::InvalidName {
                    set: set.clone(),
                    name: full.clone(),
                    source,
                })?;
                Ok(item.renamed(name))
            })
            .collect()
    }
}

impl fmt::Display for Toolset {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.label())
    }
}

/// The catalog of `sets`, in order, followed by every tool registered at run time (as
/// [`ToolCatalog::build`]); an error when two tools get one name or a set is wrong.
pub fn catalog(registry: &ToolRegistry, sets: &[Toolset]) -> Result<ToolCatalog, ToolsetError> {
    let mut catalog = ToolCatalog::new();
    let mut given: HashMap<String, String> = HashMap::new();
    let dynamic = registry
        .dynamic()
        .iter()
        .map(CatalogItem::from_entry)
        .collect::<Vec<_>>();
    for item in sets
        .iter()
        .map(|s| s.items(registry))
        .collect::<Result<Vec<_>, _>>()?
        .into_iter()
        .flatten()
        .chain(dynamic)
    {
        let name = item.name().as_str().to_owned();
        let origin = item
            .entry()
            .map_or_else(|| name.clone(), |e| e.name().as_str().to_owned());
        if let Some(first) = given.get(&name) {
            if *first == origin {
                continue; // the same tool twice (two sets over one resource): shown once
            }
            return Err(ToolsetError::Clash {
                name,
                first: first.clone(),
                second: origin,
            });
        }
        given.insert(name, origin);
        catalog.push(item);
    }
    Ok(catalog)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hints_read_unset_as_mcp_does() {
        let none = ExportAnnotations::default();
        assert!(!Hint::ReadOnly.of(&none));
        assert!(Hint::Destructive.of(&none));
        assert!(!Hint::Idempotent.of(&none));
        assert!(Hint::OpenWorld.of(&none));
        assert_eq!(Hint::from_key("readOnly"), Some(Hint::ReadOnly));
        assert_eq!(Hint::from_key("read_only"), None);
    }
}
