//! What a call may ask of whoever called it, and where its log lines go: the [`Caller`].
//!
//! A tool asks through its context ([`ToolContext::elicit`](super::ToolContext::elicit),
//! [`sample`](super::ToolContext::sample), [`roots`](super::ToolContext::roots),
//! [`ask`](super::ToolContext::ask)); the host decides how. Over MCP, a 2025-11-25 session
//! gets a server-initiated request, and a 2026-07-28 request gets an input-required result:
//! the call is stopped, the client answers, and the call runs again from the start with the
//! answers in reach (so code before a question runs once per round; keep it free of side
//! effects, or ask first). With no caller (a Step of an agent, a test) every question is
//! [`AskError::NoCaller`].

use std::future::Future;
use std::pin::Pin;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::tools::error::ToolError;

/// The severity of a log line, as MCP's `notifications/message` has them (syslog's levels).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LogLevel {
    /// Detail for debugging.
    Debug,
    /// Normal operation.
    Info,
    /// Normal but significant.
    Notice,
    /// Something to look at.
    Warning,
    /// Something failed.
    Error,
    /// A critical condition.
    Critical,
    /// Action must be taken at once.
    Alert,
    /// The system is unusable.
    Emergency,
}

/// A question for the caller.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Question {
    /// A form for the user: a message and the JSON Schema of a flat object (MCP elicitation).
    Elicit {
        /// What the user is asked.
        message: String,
        /// The requested schema: `{type: object, properties: {...}, required: [...]}`.
        schema: Value,
    },
    /// A completion from the caller's model: the parameters of MCP's
    /// `sampling/createMessage` (`messages`, `maxTokens`, optionally `systemPrompt`, ...).
    Sample(Value),
    /// The caller's roots (the directories or files it works in).
    Roots,
}

impl Question {
    /// A form for the user.
    pub fn elicit(message: impl Into<String>, schema: Value) -> Self {
        Question::Elicit {
            message: message.into(),
            schema,
        }
    }

    /// A one-message completion request: `prompt` as the user's text, at most `max_tokens`.
    pub fn sample_text(prompt: impl Into<String>, max_tokens: u32) -> Self {
        Question::Sample(serde_json::json!({
            "messages": [{"role": "user", "content": {"type": "text", "text": prompt.into()}}],
            "maxTokens": max_tokens,
        }))
    }

    /// The capability the caller must have declared to answer: `elicitation`, `sampling` or
    /// `roots`.
    pub fn capability(&self) -> &'static str {
        match self {
            Question::Elicit { .. } => "elicitation",
            Question::Sample(_) => "sampling",
            Question::Roots => "roots",
        }
    }
}

/// Why a question got no answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AskError {
    /// The call has no caller that answers questions.
    #[error("nobody can be asked: this call did not come from a client that answers questions")]
    NoCaller,
    /// The caller did not declare the capability the question needs.
    #[error("the caller cannot answer: it did not declare the `{capability}` capability")]
    Unsupported {
        /// `elicitation`, `sampling` or `roots`.
        capability: &'static str,
    },
    /// The caller answered with an error, or an answer of the wrong shape.
    #[error("the caller's answer failed: {reason}")]
    Failed {
        /// What went wrong.
        reason: String,
    },
}

impl From<AskError> for ToolError {
    fn from(err: AskError) -> Self {
        let suggestion = match &err {
            AskError::NoCaller | AskError::Unsupported { .. } => {
                "go on without asking, or tell the user what is needed"
            }
            AskError::Failed { .. } => "ask again, or go on without the answer",
        };
        ToolError::new(err.to_string())
            .with_code(crate::tools::error::codes::ASK_FAILED)
            .with_suggestion(suggestion)
    }
}

/// What a [`Caller`] answers: the JSON result of the MCP request (`ElicitResult`,
/// `CreateMessageResult` or `ListRootsResult`).
pub type AnswerFuture = Pin<Box<dyn Future<Output = Result<Value, AskError>> + Send>>;

/// Whoever called: it answers questions and receives log lines. The host provides it (the
/// MCP server does, per call); a tool reaches it only through its [`ToolContext`](super::ToolContext).
pub trait Caller: Send + Sync + 'static {
    /// Whether the caller can answer `question` (it declared the capability).
    fn can_answer(&self, question: &Question) -> bool;

    /// Asks `question`. `key` names it among the questions of the call (a caller that answers
    /// by re-running the call matches answers to questions by key); `None` lets the caller
    /// number it.
    fn ask(&self, key: Option<&str>, question: Question) -> AnswerFuture;

    /// Receives one log line of the call; the caller drops lines below the level its client
    /// asked for.
    fn log(&self, level: LogLevel, data: Value);
}

/// The user's answer to a form.
#[derive(Debug, Clone, PartialEq)]
pub struct Elicitation {
    /// What the user did.
    pub action: ElicitAction,
    /// The filled form, when accepted.
    pub content: Option<Map<String, Value>>,
}

/// What the user did with a form.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ElicitAction {
    /// Filled it in and sent it.
    Accept,
    /// Said no.
    Decline,
    /// Dismissed it without a choice.
    Cancel,
}

impl Elicitation {
    /// Reads an MCP `ElicitResult` (`{action, content?}`).
    pub fn from_answer(answer: &Value) -> Result<Self, AskError> {
        let action = match answer.get("action").and_then(Value::as_str) {
            Some("accept") => ElicitAction::Accept,
            Some("decline") => ElicitAction::Decline,
            Some("cancel") => ElicitAction::Cancel,
            other => {
                return Err(AskError::Failed {
                    reason: format!("an elicitation answer needs an action, got {other:?}"),
                });
            }
        };
        let content = answer.get("content").and_then(Value::as_object).cloned();
        Ok(Self { action, content })
    }

    /// The accepted form's field `name`.
    pub fn field(&self, name: &str) -> Option<&Value> {
        self.content.as_ref()?.get(name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_elicitation_answer_reads_action_and_content() {
        let a = Elicitation::from_answer(&serde_json::json!({
            "action": "accept", "content": {"name": "Ada"}
        }))
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(a.action, ElicitAction::Accept);
        assert_eq!(a.field("name"), Some(&Value::from("Ada")));
        assert!(Elicitation::from_answer(&serde_json::json!({"content": {}})).is_err());
        let d = Elicitation::from_answer(&serde_json::json!({"action": "decline"}))
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!((d.action, d.content), (ElicitAction::Decline, None));
    }

    #[test]
    fn log_levels_are_ordered_like_syslog() {
        assert!(LogLevel::Debug < LogLevel::Info);
        assert!(LogLevel::Warning < LogLevel::Error);
        assert!(LogLevel::Alert < LogLevel::Emergency);
    }

    #[test]
    fn an_ask_error_is_a_tool_error_with_its_code() {
        let e: ToolError = AskError::Unsupported {
            capability: "sampling",
        }
        .into();
        assert_eq!(e.code(), "E_TOOL_ASK_FAILED");
        assert!(e.message().contains("sampling"));
    }
}
