//! The [`Model`] a Step asks for its next move, and [`ScriptedModel`], a list of canned answers
//! for tests and examples.

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::lock;
use crate::tools::catalog::ToolCatalog;
use crate::tools::context::Message;
use crate::tools::result::ToolCall;

/// What a Step sends the model: the system prompt, the conversation so far and the Step's
/// catalog, with a place to stream text to and a token that cancels the request.
#[derive(Debug, Clone)]
pub struct ModelRequest {
    /// The Agent's system prompt, if it has one.
    pub system: Option<String>,
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
    /// Whether the model must, may or must not call a tool in this Step; `None` leaves it to
    /// the model's configuration ([`ToolChoice`](crate::tools::catalog::ToolChoice)).
    pub tool_choice: Option<crate::tools::catalog::ToolChoice>,
    /// At most this many tokens in the answer (a sampling request's `maxTokens`); the lower
    /// of this and the model's configured limit applies. `None`: the configured limit.
    pub max_tokens: Option<u32>,
    /// Receives the answer's pieces while a streaming model produces them.
    pub deltas: Option<DeltaSink>,
    /// Cancelled: the model stops and answers [`ModelError::Cancelled`]. Dropping the
    /// request's future cancels it too.
    pub cancellation: CancellationToken,
}

/// A piece of an answer, as a streaming model produces it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ModelDelta {
    /// More text of the answer.
    Text(String),
    /// The model started a tool call (its arguments are still streaming).
    ToolCall {
        /// The call id.
        id: String,
        /// The tool name.
        name: String,
    },
}

/// Where a streaming model sends [`ModelDelta`]s: a callback, called in order on the task that
/// runs the Step. Keep it quick (push to a channel, print).
///
/// ```
/// use std::sync::{Arc, Mutex};
/// use goondan_runtime::step::{DeltaSink, ModelDelta};
/// let seen = Arc::new(Mutex::new(String::new()));
/// let sink = DeltaSink::new({
///     let seen = Arc::clone(&seen);
///     move |d| if let ModelDelta::Text(t) = d { seen.lock().unwrap().push_str(t) }
/// });
/// sink.send(&ModelDelta::Text("Hel".into()));
/// sink.send(&ModelDelta::Text("lo".into()));
/// assert_eq!(*seen.lock().unwrap(), "Hello");
/// ```
#[derive(Clone)]
pub struct DeltaSink(Arc<dyn Fn(&ModelDelta) + Send + Sync>);

impl DeltaSink {
    /// A sink that calls `f` for every delta.
    pub fn new(f: impl Fn(&ModelDelta) + Send + Sync + 'static) -> Self {
        Self(Arc::new(f))
    }

    /// Sends one delta.
    pub fn send(&self, delta: &ModelDelta) {
        (self.0)(delta);
    }
}

impl std::fmt::Debug for DeltaSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("DeltaSink")
    }
}

/// Tokens a request used, as the provider reported them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TokenUsage {
    /// Tokens read: the prompt, the conversation and the tools.
    pub input_tokens: u64,
    /// Tokens written.
    pub output_tokens: u64,
}

impl TokenUsage {
    /// Input plus output.
    pub fn total(&self) -> u64 {
        self.input_tokens.saturating_add(self.output_tokens)
    }
}

/// The model's answer: text, tool calls, or both. No tool calls ends the Turn.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ModelResponse {
    /// The text.
    pub content: Option<String>,
    /// The calls, in the order the model made them.
    pub tool_calls: Vec<ToolCall>,
    /// The tokens used, when the provider reports them.
    pub usage: Option<TokenUsage>,
    /// What the provider needs to see again with this answer on the next request (Gemini's
    /// thought signatures, say): the step loop keeps it as the assistant message's metadata.
    pub metadata: serde_json::Map<String, serde_json::Value>,
}

impl ModelResponse {
    /// A text answer with no calls: the Turn ends.
    pub fn text(content: impl Into<String>) -> Self {
        Self {
            content: Some(content.into()),
            ..Self::default()
        }
    }

    /// Tool calls.
    pub fn calls(calls: impl IntoIterator<Item = ToolCall>) -> Self {
        Self {
            tool_calls: calls.into_iter().collect(),
            ..Self::default()
        }
    }
}

/// Why the model gave no answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
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
    /// The provider answered with an error status (after the retries, for 429 and 5xx).
    #[error("{provider} answered HTTP {status} after {attempts} attempt(s): {message}")]
    Status {
        /// The provider (`openai`, `anthropic`, ...).
        provider: &'static str,
        /// The HTTP status.
        status: u16,
        /// The provider's error message.
        message: String,
        /// How many requests were sent.
        attempts: u32,
    },
    /// No answer (or no next piece of a streamed answer) within the request timeout.
    #[error("{provider} did not answer within {after:?} ({attempts} attempt(s))")]
    Timeout {
        /// The provider.
        provider: &'static str,
        /// The timeout.
        after: Duration,
        /// How many requests were sent.
        attempts: u32,
    },
    /// The provider could not be reached, or the connection broke.
    #[error("cannot reach {provider} after {attempts} attempt(s): {message}")]
    Transport {
        /// The provider.
        provider: &'static str,
        /// What failed.
        message: String,
        /// How many requests were sent.
        attempts: u32,
    },
    /// The answer does not have the provider's documented shape (a malformed chunk, say), or
    /// the provider reported an error inside a stream.
    #[error("malformed {provider} answer: {message}")]
    Malformed {
        /// The provider.
        provider: &'static str,
        /// What is wrong.
        message: String,
    },
    /// The request was cancelled.
    #[error("the model request was cancelled")]
    Cancelled,
    /// The model is not configured right (an API key variable that is not set, say).
    #[error("the model is not configured: {message}")]
    Config {
        /// What is missing, and how to fix it.
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

/// Gives each agent its model, by agent name; the host supplies it, every agent process (of a
/// swarm) calls it once.
pub type ModelFactory = std::sync::Arc<dyn Fn(&str) -> std::sync::Arc<dyn Model> + Send + Sync>;

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
        lock(&self.script).len()
    }

    /// Every request received, in order.
    pub fn requests(&self) -> Vec<ModelRequest> {
        lock(&self.seen).clone()
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
        lock(&self.seen).push(request.clone());
        let next = lock(&self.script).pop_front();
        let step = request.step;
        Box::pin(async move { next.ok_or(ModelError::ScriptExhausted { step }) })
    }
}
