//! [`Logging`]: a `toolCall` middleware that logs the start, end, duration and outcome of every
//! call through `tracing` (target `goondan::tool_call`), and the arguments only when asked.

use std::time::Instant;

use goondan_runtime::extension::{Extension, ExtensionApi, ExtensionError, PipelineMiddleware};
use goondan_runtime::from_fn;

/// Logs every tool call. Arguments are not logged unless [`with_args`](Self::with_args) is set:
/// they may hold secrets.
///
/// ```
/// let logging = goondan_base::extensions::Logging::new().with_args(true);
/// # drop(logging);
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct Logging {
    args: bool,
}

impl Logging {
    /// The extension's name.
    pub const NAME: &'static str = "logging";

    /// Its middleware's priority: outermost, so the duration covers every other middleware.
    pub const PRIORITY: i32 = -1000;

    /// Logs calls without their arguments.
    pub fn new() -> Self {
        Self::default()
    }

    /// Also logs each call's arguments (as JSON) when it starts.
    #[must_use]
    pub fn with_args(mut self, args: bool) -> Self {
        self.args = args;
        self
    }
}

impl Extension for Logging {
    fn name(&self) -> &str {
        Self::NAME
    }

    fn register(&self, api: &mut ExtensionApi) -> Result<(), ExtensionError> {
        let with_args = self.args;
        let mw = from_fn(move |call, next| async move {
            let tool = call.tool_name().to_owned();
            let id = call.tool_call_id().to_owned();
            if with_args {
                let args = serde_json::Value::Object(call.args.clone()).to_string();
                tracing::info!(target: "goondan::tool_call", tool = %tool, tool_call_id = %id, args = %args, "tool call started");
            } else {
                tracing::info!(target: "goondan::tool_call", tool = %tool, tool_call_id = %id, "tool call started");
            }
            let started = Instant::now();
            let result = next.run(call).await;
            let duration_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
            let status = match result.status {
                goondan_runtime::ToolStatus::Ok => "ok",
                goondan_runtime::ToolStatus::Error => "error",
                goondan_runtime::ToolStatus::Pending => "pending",
            };
            let code = result.error_code().unwrap_or("");
            tracing::info!(target: "goondan::tool_call", tool = %tool, tool_call_id = %id, duration_ms, status, error_code = code, "tool call finished");
            result
        });
        api.pipeline
            .register(PipelineMiddleware::tool_call(mw), Self::PRIORITY);
        Ok(())
    }
}
