//! The [`Model`] a Step asks for its next move, and [`ScriptedModel`], a list of canned answers
//! for tests and examples.

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::sync::Mutex;

use crate::catalog::ToolCatalog;
use crate::context::Message;
use crate::result::ToolCall;

/// What a Step sends the model: the conversation so far and the Step's catalog.
#[derive(Debug, Clone)]
pub struct ModelRequest {
    /// The agent asking.
    pub agent_name: String,
    /// The Turn.
    pub turn_id: String,
    /// The Step's index in the Turn, from 0.
    pub step: usize,
    /// The conversation, oldest first.
    pub messages: Vec<Message>,
    /// The tools the model may call in this Step (convert it with [`crate::Dialect`]).
    pub catalog: ToolCatalog,
}

/// The model's answer: text, tool calls, or both. No tool calls ends the Turn.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ModelResponse {
    /// The text.
    pub content: Option<String>,
    /// The calls, in the order the model made them.
    pub tool_calls: Vec<ToolCall>,
}

impl ModelResponse {
    /// A text answer with no calls: the Turn ends.
    pub fn text(content: impl Into<String>) -> Self {
        Self {
            content: Some(content.into()),
            tool_calls: Vec::new(),
        }
    }

    /// Tool calls.
    pub fn calls(calls: impl IntoIterator<Item = ToolCall>) -> Self {
        Self {
            content: None,
            tool_calls: calls.into_iter().collect(),
        }
    }
}

/// Why the model gave no answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ModelError {
    /// A [`ScriptedModel`] ran out of answers.
    #[error("the scripted model has no answer left for step {step}")]
    ScriptExhausted {
        /// The Step that asked.
        step: usize,
    },
    /// The provider failed.
    #[error("the model failed: {message}")]
    Failed {
        /// What happened.
        message: String,
    },
}

/// The future a [`Model`] returns.
pub type ModelFuture<'a> =
    Pin<Box<dyn Future<Output = Result<ModelResponse, ModelError>> + Send + 'a>>;

/// A language model, as the step loop sees it: a request in, a response out. Provider clients
/// implement it with [`crate::Dialect`] for the tool formats.
pub trait Model: Send + Sync + 'static {
    /// Answers one Step.
    fn respond<'a>(&'a self, request: &'a ModelRequest) -> ModelFuture<'a>;
}

/// A model that answers from a script, in order, and records what it was shown.
///
/// ```
/// use goondan_runtime::step::{ModelResponse, ScriptedModel};
/// use goondan_runtime::ToolCall;
/// let model = ScriptedModel::new([
///     ModelResponse::calls([ToolCall::new("c1", "calc__add", serde_json::json!({"a": 1, "b": 2}))]),
///     ModelResponse::text("3"),
/// ]);
/// assert_eq!(model.remaining(), 2);
/// ```
#[derive(Debug, Default)]
pub struct ScriptedModel {
    script: Mutex<VecDeque<ModelResponse>>,
    seen: Mutex<Vec<ModelRequest>>,
}

impl ScriptedModel {
    /// A model that gives `responses`, one per Step.
    pub fn new(responses: impl IntoIterator<Item = ModelResponse>) -> Self {
        Self {
            script: Mutex::new(responses.into_iter().collect()),
            seen: Mutex::new(Vec::new()),
        }
    }

    /// How many answers are left.
    pub fn remaining(&self) -> usize {
        self.script.lock().unwrap_or_else(|e| e.into_inner()).len()
    }

    /// Every request received, in order.
    pub fn requests(&self) -> Vec<ModelRequest> {
        self.seen.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// The catalog names of every request, in order: what the model was shown, Step by Step.
    pub fn seen_catalogs(&self) -> Vec<Vec<String>> {
        self.requests()
            .iter()
            .map(|r| r.catalog.names().map(str::to_owned).collect())
            .collect()
    }
}

impl Model for ScriptedModel {
    fn respond<'a>(&'a self, request: &'a ModelRequest) -> ModelFuture<'a> {
        self.seen
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(request.clone());
        let next = self
            .script
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .pop_front();
        let step = request.step;
        Box::pin(async move { next.ok_or(ModelError::ScriptExhausted { step }) })
    }
}
