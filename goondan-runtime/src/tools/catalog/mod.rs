//! [`ToolCatalog`]: the tools one Step shows the model, and the allow-list of its calls
//! (CAT-1..6, PERM-1).

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::Value;

mod item;
mod tool_choice;

pub use self::item::CatalogItem;
pub(crate) use self::item::ShownParameters;
pub use self::tool_choice::{ToolChoice, ToolChoiceError};

use crate::tools::name::ToolName;
use crate::tools::registry::{RegisteredExport, ToolRegistry};

/// The catalog's index: FxHash (rustc's, from `rustc-hash`), several times cheaper than SipHash
/// on short names. Hash flooding does not apply: the index's keys are the catalog's own names,
/// fixed when the catalog is built; a model's input only probes it.
type NameIndex = HashMap<ToolName, usize, rustc_hash::FxBuildHasher>;

/// What the catalog says about a name, for the executor.
pub(crate) enum Lookup<'a> {
    /// Listed, with the registry entry it was built from, and the parameter schema the Step
    /// shows in place of the entry's, if it does.
    Resolved(&'a Arc<RegisteredExport>, Option<&'a ShownParameters>),
    /// Listed by hand (by a step middleware, say): the registry must be asked. With the
    /// parameter schema it shows, if any.
    Listed(Option<&'a ShownParameters>),
    /// Not listed.
    Absent,
}

/// Why a catalog could not be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CatalogError {
    /// The Agent declares tools the registry does not have.
    #[error("the agent declares tools that are not registered: {}", names.join(", "))]
    UnknownTools {
        /// The resource names that are missing.
        names: Vec<String>,
    },
}

/// The tools of one Step (CAT-1). Built from the Agent's `spec.tools` plus every tool
/// registered at run time (CAT-2, CAT-5); step middleware may add, remove and reorder items
/// (CAT-3). The executor refuses calls to anything not in it (PERM-1).
///
/// Building costs what is selected, not the registry's size: schemas are shared, not copied.
///
/// ```
/// use goondan_runtime::prelude::*;
/// use goondan_runtime::ToolCatalog;
///
/// /// Echoes.
/// #[tool(name = "echo")]
/// pub fn echo(text: String) -> String { text }
///
/// let registry = ToolRegistry::builder().tool(echo::TOOL).build()?;
/// let mut catalog = ToolCatalog::build(&registry, ["echo"])?;
/// assert!(catalog.contains("echo__echo"));
/// catalog.retain(|item| item.name().export() != "echo");
/// assert!(catalog.is_empty());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Default)]
pub struct ToolCatalog {
    items: Vec<CatalogItem>,
    index: NameIndex,
}

impl ToolCatalog {
    /// An empty catalog: every call is refused.
    pub fn new() -> Self {
        Self::default()
    }

    /// The catalog of a Step whose Agent declares the resources `declared` (`spec.tools`),
    /// in that order, followed by every tool registered at run time.
    pub fn build<'a>(
        registry: &ToolRegistry,
        declared: impl IntoIterator<Item = &'a str>,
    ) -> Result<Self, CatalogError> {
        let (entries, unknown) = registry.select(declared);
        if !unknown.is_empty() {
            return Err(CatalogError::UnknownTools { names: unknown });
        }
        Ok(Self::from_entries(&entries))
    }

    /// Every tool of the registry.
    pub fn all(registry: &ToolRegistry) -> Self {
        Self::from_entries(&registry.all())
    }

    fn from_entries(entries: &[Arc<RegisteredExport>]) -> Self {
        let mut catalog = Self {
            items: Vec::with_capacity(entries.len()),
            index: NameIndex::with_capacity_and_hasher(entries.len(), Default::default()),
        };
        for e in entries {
            catalog.push(CatalogItem::from_entry(e));
        }
        catalog
    }

    /// Adds an item at the end; an item with the same name is replaced in place.
    pub fn push(&mut self, item: CatalogItem) {
        match self.index.get(item.name()) {
            Some(&i) => self.items[i] = item,
            None => {
                self.index.insert(item.name().clone(), self.items.len());
                self.items.push(item);
            }
        }
    }

    /// Removes the item named `name`.
    pub fn remove(&mut self, name: &str) -> Option<CatalogItem> {
        let i = self.index.remove(name)?;
        let item = self.items.remove(i);
        self.reindex();
        Some(item)
    }

    /// Keeps the items for which `keep` is true.
    pub fn retain(&mut self, keep: impl FnMut(&CatalogItem) -> bool) {
        self.items.retain(keep);
        self.reindex();
    }

    /// Reorders the items.
    pub fn sort_by(
        &mut self,
        compare: impl FnMut(&CatalogItem, &CatalogItem) -> std::cmp::Ordering,
    ) {
        self.items.sort_by(compare);
        self.reindex();
    }

    fn reindex(&mut self) {
        self.index.clear();
        for (i, item) in self.items.iter().enumerate() {
            self.index.insert(item.name().clone(), i);
        }
    }

    /// The item named `name` and the registry entry behind it, if it was built from one.
    pub(crate) fn lookup(&self, name: &str) -> Lookup<'_> {
        let Some(item) = self.get(name) else {
            return Lookup::Absent;
        };
        let shown = item.shown_parameters();
        match item.entry() {
            Some(entry) => Lookup::Resolved(entry, shown),
            None => Lookup::Listed(shown),
        }
    }

    /// Whether a call to `name` is allowed.
    pub fn contains(&self, name: &str) -> bool {
        self.index.contains_key(name)
    }

    /// The item named `name`.
    pub fn get(&self, name: &str) -> Option<&CatalogItem> {
        self.index.get(name).map(|&i| &self.items[i])
    }

    /// Where the item named `name` is in [`items`](Self::items).
    #[cfg_attr(not(feature = "mcp"), allow(dead_code))] // used by the MCP server
    pub(crate) fn position(&self, name: &str) -> Option<usize> {
        self.index.get(name).copied()
    }

    /// The items, in order.
    pub fn items(&self) -> &[CatalogItem] {
        &self.items
    }

    /// The names, in order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.items.iter().map(|i| i.name().as_str())
    }

    /// How many items.
    pub fn len(&self) -> usize {
        self.items.len()
    }

    /// Whether the catalog is empty.
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// The catalog as the seeds' `ToolCatalogItem[]` JSON.
    pub fn to_json(&self) -> Value {
        Value::Array(
            self.items
                .iter()
                .map(|i| serde_json::to_value(i).unwrap_or(Value::Null))
                .collect(),
        )
    }
}

impl<'a> IntoIterator for &'a ToolCatalog {
    type Item = &'a CatalogItem;
    type IntoIter = std::slice::Iter<'a, CatalogItem>;

    fn into_iter(self) -> Self::IntoIter {
        self.items.iter()
    }
}
