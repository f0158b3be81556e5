//! `wait`: pause for a number of seconds, as upstream's base package does.
//!
//! - `wait__seconds {seconds}` -> `{waitedSeconds, waitedMs}`
//!
//! `seconds` is between 0 and [`WaitPolicy::max_seconds`] (300 by default, as upstream). The
//! pause ends early, with an `E_WAIT_CANCELLED` error, when the call is cancelled through the
//! [`ToolContext`]'s cancellation token.

use std::time::Duration;

use goondan_runtime::{ToolContext, ToolError, tool};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Error codes of `wait`.
pub mod codes {
    /// `seconds` is negative, not finite or above the cap.
    pub const OUT_OF_RANGE: &str = "E_WAIT_OUT_OF_RANGE";
    /// The call was cancelled during the pause.
    pub const CANCELLED: &str = "E_WAIT_CANCELLED";
}

/// The longest pause upstream allows, in seconds.
pub const MAX_WAIT_SECONDS: f64 = 300.0;

/// How long `wait` may pause.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct WaitPolicy {
    /// The largest `seconds` accepted (default [`MAX_WAIT_SECONDS`]).
    pub max_seconds: f64,
}

impl Default for WaitPolicy {
    fn default() -> Self {
        Self {
            max_seconds: MAX_WAIT_SECONDS,
        }
    }
}

/// Input of `wait__seconds`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SecondsInput {
    /// Seconds to wait (range: 0 to 300).
    pub seconds: f64,
}

/// Output of `wait__seconds`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SecondsOutput {
    /// The seconds asked for.
    pub waited_seconds: f64,
    /// The same, in whole milliseconds.
    pub waited_ms: u64,
}

/// The `wait` tool.
#[derive(Debug, Clone, Copy, Default)]
pub struct Wait {
    policy: WaitPolicy,
}

impl Wait {
    /// The resource name.
    pub const NAME: &'static str = "wait";
}

/// Pause for a while.
#[tool(name = "wait", error_message_limit = 600)]
impl Wait {
    /// A `wait` with `policy`.
    pub fn new(policy: WaitPolicy) -> Self {
        Self { policy }
    }

    /// Pause execution for the specified number of seconds (0 to 300). Returns
    /// `{waitedSeconds, waitedMs}`.
    #[export(read_only)]
    pub async fn seconds(
        &self,
        ctx: &ToolContext,
        input: SecondsInput,
    ) -> Result<SecondsOutput, ToolError> {
        let max = self.policy.max_seconds;
        let seconds = input.seconds;
        if !seconds.is_finite() || seconds < 0.0 || seconds > max {
            return Err(ToolError::new(format!(
                "'seconds' must be a finite number between 0 and {max}, got {seconds}"
            ))
            .with_code(codes::OUT_OF_RANGE)
            .with_name("WaitRangeError")
            .with_suggestion(format!(
                "wait at most {max} seconds per call; call `wait__seconds` again to wait longer"
            )));
        }
        // In range by the check above, so the saturating cast loses nothing.
        let waited_ms = (seconds * 1000.0).round() as u64;
        tokio::select! {
            () = tokio::time::sleep(Duration::from_millis(waited_ms)) => Ok(SecondsOutput {
                waited_seconds: seconds,
                waited_ms,
            }),
            () = ctx.cancellation().cancelled() => Err(ToolError::new(
                "the wait was cancelled before it ended",
            )
            .with_code(codes::CANCELLED)
            .with_name("CancelledError")
            .with_suggestion("the turn was cancelled; wait again only if it is still needed")),
        }
    }
}
