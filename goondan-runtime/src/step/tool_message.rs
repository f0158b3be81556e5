//! A tool result as a conversation message.

use serde_json::Value;

use crate::tools::context::{Message, fresh_id, now_ms};
use crate::tools::result::ToolCallResult;

/// A tool result as a conversation message: `role: tool`, the result as JSON text, and the
/// call's id and name in metadata.
pub fn tool_message(result: &ToolCallResult) -> Message {
    tool_message_at(result, fresh_id("msg"), now_ms())
}

/// [`tool_message`] with the message's id and time given (read back from a journal).
pub(crate) fn tool_message_at(result: &ToolCallResult, id: String, created_at: u64) -> Message {
    let mut metadata = serde_json::Map::new();
    metadata.insert("toolCallId".into(), result.tool_call_id.as_str().into());
    metadata.insert("toolName".into(), result.tool_name.as_str().into());
    metadata.insert(
        "status".into(),
        serde_json::to_value(result.status).unwrap_or(Value::Null),
    );
    Message {
        id,
        role: "tool".to_owned(),
        content: Some(serde_json::to_string(result).unwrap_or_default()),
        tool_calls: Vec::new(),
        metadata,
        created_at,
    }
}

/// The message that brings the completion of a submitted call (RES-2) into the conversation
/// between two Steps: a `user` message (providers take a tool result only right after the
/// assistant message that made the call), whose text names the call and holds the result as
/// JSON, with the call's id, name and status in metadata.
pub(crate) fn completion_message(result: &ToolCallResult) -> Message {
    let mut message = tool_message(result);
    message.role = "user".to_owned();
    message
        .metadata
        .insert("completion".into(), Value::Bool(true));
    message.content = Some(format!(
        "The call `{}` to `{}` that was submitted (status `pending`) has finished. Its result:\n{}",
        result.tool_call_id,
        result.tool_name,
        message.content.as_deref().unwrap_or_default()
    ));
    message
}
