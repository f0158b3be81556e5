//! `self-restart`: the model asks for its agent process to be restarted, as upstream's base
//! package does.
//!
//! - `self-restart__request {reason?}` -> `{ok: true, restartRequested: true, restartReason}`
//!
//! The tool restarts nothing itself: its output is a structured signal. Whoever runs the turn
//! reads it back with [`RestartSignal::from_output`] and honours it after the turn: a bundle's
//! agent (`goondan_runtime::agents::swarm::StepWorker`) asks the Orchestrator, which lets the process
//! finish its in-flight work, holds new work for the next process, and starts it at once
//! without counting a crash. The reason defaults to [`DEFAULT_REASON`].
//!
//! ```
//! use goondan_base::self_restart::RestartSignal;
//! let output = serde_json::json!({"ok": true, "restartRequested": true, "restartReason": "config changed"});
//! let signal = RestartSignal::from_output(&output);
//! assert_eq!(signal.map(|s| s.reason), Some("config changed".to_owned()));
//! ```

use goondan_runtime::{ToolContext, ToolError, tool};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The reason given when the call gives none (upstream's value).
pub const DEFAULT_REASON: &str = goondan_runtime::tools::agent::DEFAULT_RESTART_REASON;

/// Input of `self-restart__request`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RequestInput {
    /// Optional restart reason for logs/observability. Defaults to "tool:self-restart".
    #[serde(default)]
    pub reason: Option<String>,
}

/// Output of `self-restart__request`: the restart signal.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RequestOutput {
    /// Always `true`.
    pub ok: bool,
    /// Always `true`: a restart was asked for.
    pub restart_requested: bool,
    /// Why, trimmed; [`DEFAULT_REASON`] when none was given.
    pub restart_reason: String,
}

/// A restart asked for by `self-restart__request`, read back from a tool output (the runtime's
/// type: a bundle's agents honour it through the Orchestrator).
pub use goondan_runtime::tools::agent::RestartSignal;

/// The `self-restart` tool.
#[derive(Debug, Clone, Copy, Default)]
pub struct SelfRestart;

impl SelfRestart {
    /// The resource name.
    pub const NAME: &'static str = "self-restart";
}

/// Ask for this agent's process to be restarted.
#[tool(name = "self-restart", error_message_limit = 1000)]
impl SelfRestart {
    /// Request orchestrator self restart via runtime restart signal. Returns `{ok,
    /// restartRequested, restartReason}`; the restart happens after the turn.
    pub async fn request(
        &self,
        ctx: &ToolContext,
        input: RequestInput,
    ) -> Result<RequestOutput, ToolError> {
        let reason = input
            .reason
            .as_deref()
            .map(str::trim)
            .filter(|r| !r.is_empty())
            .unwrap_or(DEFAULT_REASON)
            .to_owned();
        tracing::info!(
            target: "goondan::self_restart",
            parent: ctx.logger(),
            agent = ctx.agent_name(),
            instance = ctx.instance_key(),
            reason = %reason,
            "restart requested"
        );
        Ok(RequestOutput {
            ok: true,
            restart_requested: true,
            restart_reason: reason,
        })
    }
}
