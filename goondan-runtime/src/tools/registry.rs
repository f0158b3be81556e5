//! [`ToolRegistry`]: every tool an agent can execute (REG-1), immutable once added (REG-3),
//! growing at run time through extensions (CAT-4).

use std::collections::HashMap;
use std::sync::{Arc, RwLock, RwLockReadGuard, RwLockWriteGuard};

use serde_json::Value;

use crate::tools::handler::Handler;
use crate::tools::name::{NameError, ToolName};
pub use crate::tools::tool::resource::ResourceInfo;
use crate::tools::tool::{
    Export, IntoTool, SourceKind, Tool, ToolDefinitionError, ToolSource, linked_tools,
};

/// One executable endpoint: a full name, its resource and its export.
#[derive(Debug)]
pub struct RegisteredExport {
    name: ToolName,
    resource: Arc<ResourceInfo>,
    export: Export,
}

impl RegisteredExport {
    /// The full `{resource}__{export}` name.
    pub fn name(&self) -> &ToolName {
        &self.name
    }

    /// The resource.
    pub fn resource(&self) -> &ResourceInfo {
        &self.resource
    }

    /// The export, with its schema and handler.
    pub fn export(&self) -> &Export {
        &self.export
    }
}

/// Why a tool cannot be registered.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RegistryError {
    /// A resource with this name is already registered (REG-3: never "last wins").
    #[error("tool `Tool/{name}` is defined twice: by {first} and by {second}")]
    DuplicateTool {
        /// The resource name.
        name: String,
        /// Where the registered one comes from.
        first: String,
        /// Where the refused one comes from.
        second: String,
    },
    /// A full tool name is already registered.
    #[error("tool `{name}` is already registered by {first}; {second} cannot replace it")]
    DuplicateExport {
        /// The full name.
        name: String,
        /// Where the registered one comes from.
        first: String,
        /// Where the refused one comes from.
        second: String,
    },
    /// The tool's definition breaks a resource rule.
    #[error(transparent)]
    Definition(#[from] ToolDefinitionError),
    /// A dynamically registered item's name is not `{resource}__{export}`.
    #[error("cannot register `{name}`: {source}")]
    InvalidName {
        /// The name given.
        name: String,
        /// What is wrong with it.
        #[source]
        source: NameError,
    },
}

#[derive(Default)]
struct Inner {
    entries: HashMap<ToolName, Arc<RegisteredExport>>,
    resources: HashMap<String, ResourceSlot>,
    dynamic: Vec<Arc<RegisteredExport>>,
}

struct ResourceSlot {
    info: Arc<ResourceInfo>,
    exports: Vec<Arc<RegisteredExport>>,
}

/// Every tool the agent can execute (REG-1): compiled `#[tool]` resources, tools added
/// explicitly, and tools registered at run time (CAT-4). Entries are never replaced or
/// edited (REG-3); a second tool with a taken name is an error that names both sources.
///
/// ```
/// use goondan_runtime::prelude::*;
///
/// /// Says hello.
/// #[tool(name = "greet")]
/// pub fn hello(name: String) -> String { format!("hello, {name}") }
///
/// let registry = ToolRegistry::builder().tool(hello::TOOL).build()?;
/// assert!(registry.get("greet__hello").is_some());
/// // The same name twice is an error naming both definitions, never "last wins".
/// assert!(ToolRegistry::builder().tool(hello::TOOL).tool(hello::TOOL).build().is_err());
/// # Ok::<(), goondan_runtime::tools::registry::RegistryError>(())
/// ```
pub struct ToolRegistry {
    inner: RwLock<Inner>,
    /// How many times the registry has grown; read by servers that serve a catalog of it and
    /// watched by those that announce `list_changed` (an MCP server).
    changes: tokio::sync::watch::Sender<u64>,
}

impl Default for ToolRegistry {
    fn default() -> Self {
        Self::from_inner(Inner::default())
    }
}

impl std::fmt::Debug for ToolRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let inner = self.read();
        let mut names: Vec<_> = inner.entries.keys().map(ToolName::as_str).collect();
        names.sort_unstable();
        f.debug_struct("ToolRegistry")
            .field("tools", &names)
            .finish()
    }
}

impl ToolRegistry {
    /// An empty registry.
    pub fn new() -> Self {
        Self::default()
    }

    /// Starts a registry.
    pub fn builder() -> RegistryBuilder {
        RegistryBuilder {
            tools: Vec::new(),
            linked: false,
        }
    }

    fn from_inner(inner: Inner) -> Self {
        Self {
            inner: RwLock::new(inner),
            changes: tokio::sync::watch::Sender::new(0),
        }
    }

    /// A receiver that sees a new value each time a tool is added after the registry was
    /// built (CAT-4): how a long-lived catalog (an MCP server's) learns it may have changed.
    ///
    /// ```
    /// use goondan_runtime::{ToolError, ToolRegistry, ToolSource, handler_fn};
    /// let registry = ToolRegistry::new();
    /// let changes = registry.subscribe_changes();
    /// registry.register_item("late__tool", None, serde_json::json!({"type": "object"}),
    ///     handler_fn(|_ctx, _args| async { Ok::<_, ToolError>(1) }), ToolSource::extension("x"))?;
    /// assert!(changes.has_changed().unwrap_or(false));
    /// # Ok::<(), goondan_runtime::tools::registry::RegistryError>(())
    /// ```
    pub fn subscribe_changes(&self) -> tokio::sync::watch::Receiver<u64> {
        self.changes.subscribe()
    }

    /// How many times a tool has been added since the registry was built: a catalog built
    /// at one generation is current while the generation is the same.
    pub fn generation(&self) -> u64 {
        *self.changes.borrow()
    }

    fn changed(&self) {
        self.changes.send_modify(|n| *n = n.wrapping_add(1));
    }

    fn read(&self) -> RwLockReadGuard<'_, Inner> {
        // A poisoned lock can only come from a panic inside this module; the data is still
        // consistent because every write inserts fully built entries.
        self.inner.read().unwrap_or_else(|e| e.into_inner())
    }

    fn write(&self) -> RwLockWriteGuard<'_, Inner> {
        self.inner.write().unwrap_or_else(|e| e.into_inner())
    }

    /// Adds a whole resource (CAT-4 for resources). Fails, changing nothing, if the resource
    /// or any of its full names is taken (REG-3).
    pub fn register(&self, tool: impl IntoTool) -> Result<(), RegistryError> {
        self.add(tool.into_tool()?, false)
    }

    /// Adds a tool at run time, the seeds' `api.tools.register(item, handler)` (CAT-4). The
    /// tool shows up in every catalog built afterwards (CAT-5). An extension may register
    /// several exports of one resource; the resource then belongs to it.
    pub fn register_item(
        &self,
        name: &str,
        description: Option<String>,
        parameters: Value,
        handler: impl Handler,
        source: ToolSource,
    ) -> Result<(), RegistryError> {
        let full = ToolName::parse(name).map_err(|source| RegistryError::InvalidName {
            name: name.to_owned(),
            source,
        })?;
        let mut export = Export::new(full.export(), parameters, handler);
        if let Some(d) = description {
            export = export.with_description(d);
        }
        self.register_export(full.resource(), export, source)
    }

    /// Adds one export at run time, like [`register_item`](Self::register_item), with
    /// everything an [`Export`] carries: title and effect hints, output schema, timeout.
    ///
    /// ```
    /// use goondan_runtime::{Export, ToolError, ToolRegistry, ToolSource, handler_fn};
    /// use goondan_runtime::tools::annotations::ExportAnnotations;
    /// let registry = ToolRegistry::new();
    /// let export = Export::new("drop", serde_json::json!({"type": "object"}),
    ///         handler_fn(|_ctx, _args| async { Ok::<_, ToolError>(()) }))
    ///     .with_annotations(ExportAnnotations::new().destructive(true));
    /// registry.register_export("table", export, ToolSource::extension("db"))?;
    /// let entry = registry.get("table__drop").ok_or("missing")?;
    /// assert_eq!(entry.export().annotations().destructive, Some(true));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn register_export(
        &self,
        resource: &str,
        export: Export,
        source: ToolSource,
    ) -> Result<(), RegistryError> {
        let origin = match source.kind {
            SourceKind::Config => format!("tool `{}`", source.name),
            SourceKind::Extension => format!("extension `{}`", source.name),
            SourceKind::Mcp => format!("MCP bridge `{}`", source.name),
        };
        let tool = Tool::builder(resource)
            .export(export)
            .source(source)
            .origin(origin)
            .build()?;
        self.add(tool, true)
    }

    /// Inserts under the write lock, then tells the subscribers once the lock is released.
    fn add(&self, tool: Tool, dynamic: bool) -> Result<(), RegistryError> {
        insert(&mut self.write(), tool, dynamic)?;
        self.changed();
        Ok(())
    }

    /// The endpoint behind a full name.
    pub fn get(&self, name: &str) -> Option<Arc<RegisteredExport>> {
        self.read().entries.get(name).cloned()
    }

    /// Whether a full name is registered.
    pub fn contains(&self, name: &str) -> bool {
        self.read().entries.contains_key(name)
    }

    /// How many endpoints are registered.
    pub fn len(&self) -> usize {
        self.read().entries.len()
    }

    /// Whether nothing is registered.
    pub fn is_empty(&self) -> bool {
        self.read().entries.is_empty()
    }

    /// Every full name, sorted.
    pub fn names(&self) -> Vec<ToolName> {
        let mut names: Vec<_> = self.read().entries.keys().cloned().collect();
        names.sort();
        names
    }

    /// A resource's information.
    pub fn resource(&self, name: &str) -> Option<Arc<ResourceInfo>> {
        self.read().resources.get(name).map(|s| Arc::clone(&s.info))
    }

    /// Every resource's name, sorted.
    pub fn resource_names(&self) -> Vec<String> {
        let mut names: Vec<_> = self.read().resources.keys().cloned().collect();
        names.sort();
        names
    }

    /// The endpoints of the named resources in declaration order, then every tool
    /// registered at run time (CAT-2, CAT-5). Unknown resources are returned separately.
    pub(crate) fn select<'a>(
        &self,
        resources: impl IntoIterator<Item = &'a str>,
    ) -> (Vec<Arc<RegisteredExport>>, Vec<String>) {
        let inner = self.read();
        let mut out = Vec::new();
        let mut unknown = Vec::new();
        for r in resources {
            match inner.resources.get(r) {
                Some(slot) => out.extend(slot.exports.iter().cloned()),
                None => unknown.push(r.to_owned()),
            }
        }
        out.extend(inner.dynamic.iter().cloned());
        (out, unknown)
    }

    /// The exports of `resource`, in declaration order; `None` when it is not registered.
    pub(crate) fn exports_of(&self, resource: &str) -> Option<Vec<Arc<RegisteredExport>>> {
        self.read()
            .resources
            .get(resource)
            .map(|slot| slot.exports.clone())
    }

    /// The tools registered at run time, in order (CAT-4): in every catalog.
    pub(crate) fn dynamic(&self) -> Vec<Arc<RegisteredExport>> {
        self.read().dynamic.clone()
    }

    /// Every endpoint, resources sorted by name, exports in declaration order.
    pub(crate) fn all(&self) -> Vec<Arc<RegisteredExport>> {
        let inner = self.read();
        let mut slots: Vec<_> = inner.resources.values().collect();
        slots.sort_by(|a, b| a.info.name.cmp(&b.info.name));
        slots
            .into_iter()
            .flat_map(|s| s.exports.iter().cloned())
            .collect()
    }
}

fn insert(inner: &mut Inner, tool: Tool, dynamic: bool) -> Result<(), RegistryError> {
    let Tool { info, exports } = tool;
    // Check everything before changing anything.
    if let Some(slot) = inner.resources.get(&info.name) {
        let same_owner = dynamic
            && slot.info.source.kind != SourceKind::Config
            && slot.info.source == info.source;
        if !same_owner {
            return Err(RegistryError::DuplicateTool {
                name: info.name,
                first: slot.info.origin.clone(),
                second: info.origin,
            });
        }
    }
    for (full, _) in &exports {
        if let Some(taken) = inner.entries.get(full) {
            return Err(RegistryError::DuplicateExport {
                name: full.to_string(),
                first: taken.resource.origin.clone(),
                second: info.origin,
            });
        }
    }
    // A resource already here (a dynamic one growing) keeps its first information.
    let slot = inner
        .resources
        .entry(info.name.clone())
        .or_insert_with(|| ResourceSlot {
            info: Arc::new(info),
            exports: Vec::new(),
        });
    let info = Arc::clone(&slot.info);
    for (full, export) in exports {
        let entry = Arc::new(RegisteredExport {
            name: full.clone(),
            resource: Arc::clone(&info),
            export,
        });
        slot.exports.push(Arc::clone(&entry));
        if dynamic {
            inner.dynamic.push(Arc::clone(&entry));
        }
        inner.entries.insert(full, entry);
    }
    Ok(())
}

/// Builds a [`ToolRegistry`] from linked and explicit tools.
#[must_use]
pub struct RegistryBuilder {
    /// Each tool as built; a failed build is reported by [`build`](RegistryBuilder::build).
    tools: Vec<Result<Tool, ToolDefinitionError>>,
    linked: bool,
}

impl RegistryBuilder {
    /// Adds every `#[tool]` module and function linked into this program (through
    /// `inventory`). A crate that is never referenced is not linked, so its tools are not
    /// here: reference it (e.g. `goondan_base::tools()`) or add its tools explicitly.
    pub fn linked(mut self) -> Self {
        self.linked = true;
        self
    }

    /// Adds one tool.
    pub fn tool(mut self, tool: impl IntoTool) -> Self {
        self.tools.push(tool.into_tool());
        self
    }

    /// Adds several tools.
    pub fn tools<T: IntoTool>(mut self, tools: impl IntoIterator<Item = T>) -> Self {
        self.tools
            .extend(tools.into_iter().map(IntoTool::into_tool));
        self
    }

    /// Builds the registry. A tool whose definition is refused is an error naming that tool;
    /// a name defined twice is an error naming both definitions.
    pub fn build(self) -> Result<ToolRegistry, RegistryError> {
        let mut inner = Inner::default();
        if self.linked {
            for s in linked_tools() {
                insert(&mut inner, s.build()?, false)?;
            }
        }
        for tool in self.tools {
            insert(&mut inner, tool?, false)?;
        }
        Ok(ToolRegistry::from_inner(inner))
    }
}
