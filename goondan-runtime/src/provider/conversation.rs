//! The conversation as a provider reads it: [`Turn`]s of user text, assistant text and calls,
//! and tool results, taken from the step loop's [`Message`]s.

use serde_json::Value;

use crate::tools::context::Message;
use crate::tools::result::{ToolCall, ToolCallResult};

/// One message of the conversation, by what it holds: what a [`ProviderAdapter`](super::ProviderAdapter)
/// writes into its request body ([`turns`]).
#[derive(Debug)]
pub enum Turn<'a> {
    /// A user message (or any other role with text, such as an injected `system` note).
    User(&'a str),
    /// The model's earlier answer.
    Assistant {
        /// Its text, if it had any.
        text: Option<&'a str>,
        /// The calls it made.
        calls: &'a [ToolCall],
        /// What the provider asked to see again ([`ModelResponse::metadata`](crate::step::ModelResponse::metadata)).
        metadata: &'a serde_json::Map<String, Value>,
    },
    /// The result of a call.
    Result(ToolCallResult),
}

/// The conversation, oldest first. A tool message's text is the [`ToolCallResult`] the step
/// loop stored ([`crate::step::tool_message`]); text that is not one becomes an `ok` result
/// with that text, under the call id and name in its metadata.
pub fn turns(messages: &[Message]) -> Vec<Turn<'_>> {
    messages
        .iter()
        .filter_map(|m| match m.role.as_str() {
            "assistant" => Some(Turn::Assistant {
                text: m.content.as_deref().filter(|t| !t.is_empty()),
                calls: &m.tool_calls,
                metadata: &m.metadata,
            }),
            "tool" => Some(Turn::Result(tool_result(m))),
            _ => m.content.as_deref().map(Turn::User),
        })
        .collect()
}

fn tool_result(m: &Message) -> ToolCallResult {
    let text = m.content.as_deref().unwrap_or_default();
    if let Ok(result) = serde_json::from_str::<ToolCallResult>(text) {
        return result;
    }
    let meta = |k: &str| {
        m.metadata
            .get(k)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    ToolCallResult::ok(
        meta("toolCallId"),
        meta("toolName"),
        Value::String(text.to_owned()),
    )
}

/// Appends `items` to the conversation under `key` (`content`, `parts`), merged into the last
/// message when it has the same role (tool results and the next user text travel together).
pub(crate) fn push(messages: &mut Vec<Value>, role: &str, key: &str, items: Vec<Value>) {
    if let Some(last) = messages.last_mut()
        && last.get("role").and_then(Value::as_str) == Some(role)
        && let Some(Value::Array(existing)) = last.get_mut(key)
    {
        existing.extend(items);
        return;
    }
    messages.push(serde_json::json!({"role": role, key: items}));
}

/// Call arguments as the object Anthropic and Gemini carry (`{}` for arguments that are not one).
pub(crate) fn arguments_object(call: &ToolCall) -> Value {
    Value::Object(call.args.as_object().cloned().unwrap_or_default())
}

/// Call arguments as the JSON text OpenAI's APIs carry.
pub(crate) fn arguments_text(call: &ToolCall) -> String {
    match &call.args {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}
