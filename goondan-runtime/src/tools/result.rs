//! What goes in and out of a tool call: [`ToolCall`] and [`ToolCallResult`] (RES-1, RES-2, RES-9).

pub use arcstr::ArcStr;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::tools::error::ToolError;

/// A JSON object, as tool arguments are.
pub type JsonObject = serde_json::Map<String, serde_json::Value>;

/// One tool call as the model made it. Nothing in it is trusted: the name may not exist, the
/// arguments may not be an object.
///
/// ```
/// use goondan_runtime::ToolCall;
/// let call = ToolCall::new("call_1", "bash__exec", serde_json::json!({"command": "ls"}));
/// assert_eq!(call.name, "bash__exec");
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    /// The id the model gave the call. Shared, not copied, by the call's context and result.
    pub id: ArcStr,
    /// The tool name, as the model wrote it.
    pub name: ArcStr,
    /// The arguments; a JSON object when the model behaves.
    pub args: Value,
}

impl ToolCall {
    /// A call with the given id, name and arguments.
    pub fn new(id: impl Into<ArcStr>, name: impl Into<ArcStr>, args: Value) -> Self {
        Self {
            id: id.into(),
            name: name.into(),
            args,
        }
    }
}

/// How a call ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ToolStatus {
    /// Completed, with `output` (RES-1).
    Ok,
    /// Failed, with `error` (RES-3).
    Error,
    /// Submitted, with `handle`; the completion arrives later (RES-2).
    Pending,
}

/// The result of one call, as the seeds serialise it:
/// `{toolCallId, toolName, status, output?, handle?, error?}`.
///
/// ```
/// use goondan_runtime::{ToolCallResult, ToolStatus};
/// let r = ToolCallResult::ok("c1", "text-utils__uppercase", serde_json::json!({"result": "HI"}));
/// assert_eq!(r.status, ToolStatus::Ok);
/// assert_eq!(
///     serde_json::to_value(&r)?,
///     serde_json::json!({"toolCallId": "c1", "toolName": "text-utils__uppercase",
///                        "status": "ok", "output": {"result": "HI"}})
/// );
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolCallResult {
    /// The id of the call this answers.
    pub tool_call_id: ArcStr,
    /// The tool name as the model wrote it.
    pub tool_name: ArcStr,
    /// `ok`, `error` or `pending`.
    pub status: ToolStatus,
    /// The output of a completed call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<Value>,
    /// The handle of a submitted call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub handle: Option<String>,
    /// The error of a failed call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ToolError>,
    /// Content parts of a completed call beside its output: images, audio, resources
    /// ([`crate::tools::content`]); absent when there are none.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        with = "crate::tools::content::parts"
    )]
    pub content: Vec<crate::tools::content::Content>,
}

impl ToolCallResult {
    /// A completed call.
    pub fn ok(
        tool_call_id: impl Into<ArcStr>,
        tool_name: impl Into<ArcStr>,
        output: Value,
    ) -> Self {
        Self {
            tool_call_id: tool_call_id.into(),
            tool_name: tool_name.into(),
            status: ToolStatus::Ok,
            output: Some(output),
            handle: None,
            error: None,
            content: Vec::new(),
        }
    }

    /// A failed call. The error is stored as given: the executor cuts it to the resource's limit.
    pub fn error(
        tool_call_id: impl Into<ArcStr>,
        tool_name: impl Into<ArcStr>,
        error: ToolError,
    ) -> Self {
        Self {
            tool_call_id: tool_call_id.into(),
            tool_name: tool_name.into(),
            status: ToolStatus::Error,
            output: None,
            handle: None,
            error: Some(error),
            content: Vec::new(),
        }
    }

    /// A submitted call whose completion arrives later.
    pub fn pending(
        tool_call_id: impl Into<ArcStr>,
        tool_name: impl Into<ArcStr>,
        handle: impl Into<String>,
    ) -> Self {
        Self {
            tool_call_id: tool_call_id.into(),
            tool_name: tool_name.into(),
            status: ToolStatus::Pending,
            output: None,
            handle: Some(handle.into()),
            error: None,
            content: Vec::new(),
        }
    }

    /// The same result with content parts.
    #[must_use]
    pub fn with_content(mut self, content: Vec<crate::tools::content::Content>) -> Self {
        self.content = content;
        self
    }

    /// Whether the call completed.
    pub fn is_ok(&self) -> bool {
        self.status == ToolStatus::Ok
    }

    /// Whether the call failed.
    pub fn is_error(&self) -> bool {
        self.status == ToolStatus::Error
    }

    /// Whether the call was submitted and is still running.
    pub fn is_pending(&self) -> bool {
        self.status == ToolStatus::Pending
    }

    /// The error code of a failed call.
    pub fn error_code(&self) -> Option<&str> {
        self.error.as_ref().map(ToolError::code)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn res_9_result_carries_call_id_and_tool_name() {
        let err = ToolError::new("nope")
            .with_code("E_X")
            .with_name("XError")
            .with_suggestion("try again")
            .with_help_url("https://h/E_X");
        let r = ToolCallResult::error("call_7", "a__b", err);
        assert_eq!(
            serde_json::to_value(&r).unwrap(),
            json!({"toolCallId": "call_7", "toolName": "a__b", "status": "error",
                   "error": {"code": "E_X", "name": "XError", "message": "nope",
                             "suggestion": "try again", "helpUrl": "https://h/E_X"}})
        );
        let back: ToolCallResult =
            serde_json::from_value(serde_json::to_value(&r).unwrap()).unwrap();
        assert_eq!(back, r);
    }

    #[test]
    fn res_1_completion_carries_output_only() {
        let r = ToolCallResult::ok("c", "a__b", json!(3));
        let v = serde_json::to_value(&r).unwrap();
        assert_eq!(v["output"], json!(3));
        assert!(v.get("handle").is_none() && v.get("error").is_none());
    }

    #[test]
    fn res_2_submission_carries_handle_and_pending_status() {
        let r = ToolCallResult::pending("c", "a__b", "h-1");
        assert_eq!(
            serde_json::to_value(&r).unwrap(),
            json!({"toolCallId": "c", "toolName": "a__b", "status": "pending", "handle": "h-1"})
        );
    }
}
