//! [`ExportAnnotations`]: what an export says about itself besides its schema: a human title
//! and hints about its effects (read-only, destructive, idempotent, open-world). MCP publishes
//! them as a tool's `title` and `annotations`; middleware (approvals) reads them from
//! [`CallContext::annotations`](crate::CallContext::annotations).
//!
//! They are hints: nothing enforces them, and a client must not trust them from a server it
//! does not trust. An unset hint means "not said", which MCP reads with its own defaults
//! (not read-only, destructive, not idempotent, open-world).

use serde::{Deserialize, Serialize};

/// The title and effect hints of an export.
///
/// In `#[tool]`: `#[export(title = "Run a command", destructive, open_world)]`; in a bundle's
/// Tool resource: `annotations: {title: Run a command, destructive: true, openWorld: true}`
/// on the export; by hand: [`Export::with_annotations`](crate::Export::with_annotations).
///
/// ```
/// use goondan_runtime::tools::annotations::ExportAnnotations;
/// let a = ExportAnnotations::new().title("List files").read_only(true);
/// assert_eq!(
///     serde_json::to_value(&a)?,
///     serde_json::json!({"title": "List files", "readOnly": true})
/// );
/// assert!(!a.is_empty());
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ExportAnnotations {
    /// A human-readable name for the export (MCP `title`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// The export does not change its environment (MCP `readOnlyHint`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_only: Option<bool>,
    /// The export may destroy or overwrite data (MCP `destructiveHint`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub destructive: Option<bool>,
    /// Calling it twice with the same arguments has no further effect (MCP `idempotentHint`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotent: Option<bool>,
    /// The export reaches beyond a closed world: the web, other systems (MCP `openWorldHint`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub open_world: Option<bool>,
    /// Whether its calls run as tasks: its handler answers with a pending result (RES-2),
    /// which an MCP client with the tasks extension sees as a task.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_support: Option<TaskSupport>,
}

/// How an export's calls relate to tasks (MCP's `taskSupport`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TaskSupport {
    /// It may answer with a pending result; a client without tasks waits for it.
    Optional,
    /// It only makes sense as a task: an MCP client that cannot take tasks is refused
    /// (`MissingRequiredClientCapability`, `-32021`) instead of waiting.
    Required,
}

impl ExportAnnotations {
    /// No title and no hints.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets the title.
    #[must_use]
    pub fn title(mut self, title: impl Into<String>) -> Self {
        self.title = Some(title.into());
        self
    }

    /// Sets the read-only hint.
    #[must_use]
    pub fn read_only(mut self, value: bool) -> Self {
        self.read_only = Some(value);
        self
    }

    /// Sets the destructive hint.
    #[must_use]
    pub fn destructive(mut self, value: bool) -> Self {
        self.destructive = Some(value);
        self
    }

    /// Sets the idempotent hint.
    #[must_use]
    pub fn idempotent(mut self, value: bool) -> Self {
        self.idempotent = Some(value);
        self
    }

    /// Sets the open-world hint.
    #[must_use]
    pub fn open_world(mut self, value: bool) -> Self {
        self.open_world = Some(value);
        self
    }

    /// Sets how its calls relate to tasks.
    #[must_use]
    pub fn task_support(mut self, value: TaskSupport) -> Self {
        self.task_support = Some(value);
        self
    }

    /// Whether a call of the export may run again after a crash stopped it midway: marked
    /// idempotent, or read-only.
    pub fn rerunnable(&self) -> bool {
        self.idempotent == Some(true) || self.read_only == Some(true)
    }

    /// Whether nothing is said: no title and no hint.
    pub fn is_empty(&self) -> bool {
        self == &Self::default()
    }

    /// Whether any effect hint is set (the title aside).
    pub fn has_hints(&self) -> bool {
        self.read_only.is_some()
            || self.destructive.is_some()
            || self.idempotent.is_some()
            || self.open_world.is_some()
    }
}
