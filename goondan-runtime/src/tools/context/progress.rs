//! Progress reports of a call, and the sink they go to.

/// One progress report of a call: `done` out of `total` (when known), with a message.
#[derive(Debug, Clone, PartialEq)]
pub struct Progress {
    /// How much is done; increases from report to report.
    pub done: f64,
    /// How much there is in all, when known.
    pub total: Option<f64>,
    /// What the tool is doing.
    pub message: Option<String>,
}

/// Where a call's progress reports go. An MCP server forwards them as
/// `notifications/progress` when the client asked for them; without a sink they are dropped.
pub trait ProgressSink: Send + Sync + 'static {
    /// Receives one report of the call `tool_call_id`.
    fn report(&self, tool_call_id: &str, progress: Progress);
}
