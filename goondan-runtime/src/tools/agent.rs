//! The agent-to-agent API a tool reaches through [`ToolContext::runtime`](crate::ToolContext::runtime)
//! (AG-1..5). This module fixes the shapes both sides agree on and depends on no implementation;
//! the `orchestrator` module, built on top of it, implements it: the `Orchestrator` for the host,
//! and an IPC client in every agent process.

use std::future::Future;
use std::pin::Pin;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::tools::error::ToolError;

/// A boxed future returned by [`AgentRuntime`] methods.
pub type AgentFuture<'a, T> = Pin<Box<dyn Future<Output = Result<T, ToolError>> + Send + 'a>>;

/// What one agent hands to another: an event type and an input payload (HO-1).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentEvent {
    /// The event type, e.g. `agent.request`.
    #[serde(rename = "type")]
    pub event_type: String,
    /// The input payload.
    pub input: Value,
    /// The target instance; the default instance when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instance_key: Option<String>,
    /// Free-form metadata carried with the event.
    #[serde(default, skip_serializing_if = "serde_json::Map::is_empty")]
    pub metadata: serde_json::Map<String, Value>,
}

impl AgentEvent {
    /// An event of `event_type` carrying `input`, for the target's default instance.
    pub fn new(event_type: impl Into<String>, input: Value) -> Self {
        Self {
            event_type: event_type.into(),
            input,
            instance_key: None,
            metadata: serde_json::Map::new(),
        }
    }
}

/// Options of [`AgentRuntime::request`].
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RequestOptions {
    /// How long to wait for the answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
    /// Submit and return a pending handle instead of waiting (HO-2).
    #[serde(default)]
    pub r#async: bool,
    /// The caller's trace, continued by the target (HO-3).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace_id: Option<String>,
    /// The caller's Turn, recorded by the target (HO-3).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn_id: Option<String>,
}

/// The answer to [`AgentRuntime::request`] (AG-1).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RequestResult {
    /// The id of the event that was delivered.
    pub event_id: String,
    /// The agent that answered.
    pub target: String,
    /// The target's answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response: Option<Value>,
    /// Links the answer to the caller's Turn and Trace (HO-3).
    pub correlation_id: String,
}

/// The answer to [`AgentRuntime::send`] (AG-2).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SendResult {
    /// The id of the event that was sent.
    pub event_id: String,
    /// The agent it was sent to.
    pub target: String,
    /// Whether the Orchestrator accepted it.
    pub accepted: bool,
}

/// Options of [`AgentRuntime::spawn`].
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SpawnOptions {
    /// The instance to prepare; reused when it exists.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instance_key: Option<String>,
    /// The working directory of the instance.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
}

/// The answer to [`AgentRuntime::spawn`] (AG-3).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SpawnResult {
    /// The agent.
    pub target: String,
    /// The instance.
    pub instance_key: String,
    /// `true` when a new instance was created, `false` when an existing one was reused.
    pub spawned: bool,
    /// The instance's working directory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
}

/// One entry of [`AgentRuntime::list`] (AG-4).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentInstanceInfo {
    /// The agent.
    pub target: String,
    /// The instance.
    pub instance_key: String,
    /// The agent that spawned it.
    pub owner_agent: String,
    /// The instance that spawned it.
    pub owner_instance_key: String,
    /// When it was created, as an RFC 3339 timestamp.
    pub created_at: String,
    /// Its working directory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
}

/// The answer to [`AgentRuntime::catalog`] (AG-5).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentCatalog {
    /// The swarm.
    pub swarm_name: String,
    /// The swarm's entry agent.
    pub entry_agent: String,
    /// The calling agent.
    pub self_agent: String,
    /// Every agent defined in the swarm.
    pub available_agents: Vec<String>,
    /// The agents the caller may call.
    pub callable_agents: Vec<String>,
}

/// The reason of a restart asked for without one (upstream's `self-restart` default).
pub const DEFAULT_RESTART_REASON: &str = "tool:self-restart";

/// A restart of its own agent process asked for by a tool (the base package's
/// `self-restart__request`), read back from the tool's output: `restartRequested: true` and a
/// `restartReason`.
///
/// Whoever runs the Turn honours it once the Turn is over; a bundle's agents do it through
/// their `AgentContext`, and the Orchestrator restarts the process after it finishes its
/// in-flight work, at once and without counting it as a crash.
///
/// ```
/// use goondan_runtime::tools::agent::RestartSignal;
/// let output = serde_json::json!({"ok": true, "restartRequested": true, "restartReason": "config changed"});
/// assert_eq!(RestartSignal::from_output(&output).map(|s| s.reason), Some("config changed".to_owned()));
/// assert!(RestartSignal::from_output(&serde_json::json!({"restartRequested": "yes"})).is_none());
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RestartSignal {
    /// Why the restart was asked for.
    pub reason: String,
}

impl RestartSignal {
    /// The signal carried by a tool `output`, if it carries one: `restartRequested: true` and a
    /// string `restartReason` ([`DEFAULT_RESTART_REASON`] when it is missing).
    pub fn from_output(output: &serde_json::Value) -> Option<Self> {
        if output.get("restartRequested")? != &serde_json::Value::Bool(true) {
            return None;
        }
        let reason = output
            .get("restartReason")
            .and_then(serde_json::Value::as_str)
            .unwrap_or(DEFAULT_RESTART_REASON);
        Some(Self {
            reason: reason.to_owned(),
        })
    }
}

/// The agent-to-agent API on [`ToolContext`](crate::ToolContext) (AG-1..5). Every failure is a
/// [`ToolError`], so the `agents` tool can return it to the model as it is.
pub trait AgentRuntime: Send + Sync + 'static {
    /// Delivers `event` to `target` and waits for its answer (AG-1).
    fn request<'a>(
        &'a self,
        target: &'a str,
        event: AgentEvent,
        options: RequestOptions,
    ) -> AgentFuture<'a, RequestResult>;

    /// Delivers `event` to `target` without waiting (AG-2).
    fn send<'a>(&'a self, target: &'a str, event: AgentEvent) -> AgentFuture<'a, SendResult>;

    /// Prepares an instance of an agent defined in the current swarm (AG-3).
    fn spawn<'a>(&'a self, target: &'a str, options: SpawnOptions) -> AgentFuture<'a, SpawnResult>;

    /// Lists instances; only the caller's own spawns unless `include_all` (AG-4).
    fn list(&self, include_all: bool) -> AgentFuture<'_, Vec<AgentInstanceInfo>>;

    /// Describes the swarm from the caller's point of view (AG-5).
    fn catalog(&self) -> AgentFuture<'_, AgentCatalog>;
}
