//! [`Message`]: a conversation message. The context holds the assistant message that contains
//! the call (CTX-5).

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::id::now_ms;
use crate::tools::result::ToolCall;

/// A conversation message. The context holds the assistant message that contains the call
/// (CTX-5).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Message {
    /// The message id.
    pub id: String,
    /// `assistant`, `user`, `system` or `tool`.
    pub role: String,
    /// The text content, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
    /// The tool calls an assistant message makes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    /// Free-form metadata.
    #[serde(default, skip_serializing_if = "serde_json::Map::is_empty")]
    pub metadata: serde_json::Map<String, Value>,
    /// Milliseconds since the Unix epoch.
    pub created_at: u64,
}

impl Message {
    /// An assistant message holding `tool_calls`.
    pub fn assistant(
        id: impl Into<String>,
        content: Option<String>,
        tool_calls: Vec<ToolCall>,
    ) -> Self {
        Self {
            id: id.into(),
            role: "assistant".to_owned(),
            content,
            tool_calls,
            metadata: serde_json::Map::new(),
            created_at: now_ms(),
        }
    }
}
