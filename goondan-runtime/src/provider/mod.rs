//! Model providers: [`ProviderModel`], a [`Model`](crate::step::Model) that talks to a real language model over
//! HTTP, in the wire format of its [`Provider`]. Four are built in:
//!
//! | provider | API | default base URL |
//! |---|---|---|
//! | `openai` | Chat Completions (also vLLM, llama.cpp's server, Ollama, LM Studio) | `https://api.openai.com/v1` |
//! | `openai-responses` | Responses | `https://api.openai.com/v1` |
//! | `anthropic` | Messages | `https://api.anthropic.com/v1` |
//! | `gemini` | `generateContent` | `https://generativelanguage.googleapis.com/v1beta` |
//!
//! A provider is a [`ProviderAdapter`]: its request body, URL, headers, answer parsing, stream
//! events and tool dialect, in one module each (`openai_chat`, `openai_responses`,
//! [`anthropic`], [`gemini`]; the two OpenAI formats share [`openai`]). [`Provider`] is the
//! table from names to adapters: [`Provider::register`] adds a provider of your own, which
//! then works from a bundle's Model resource too.
//!
//! Each request carries the system prompt, the conversation (tool results rendered by the
//! provider's [`Dialect`](crate::dialect::Dialect)) and the Step's catalog in that dialect. Answers are
//! streamed by default (server-sent events, parsed by the `sse-stream` crate): text goes to
//! the request's [`DeltaSink`] as it comes, tool-call arguments are
//! assembled from their pieces, and the calls are read by the dialect. Token usage is reported
//! in [`ModelResponse::usage`].
//!
//! A request is retried ([`RetryPolicy`]) on 408, 409, 429, 5xx, timeouts and connection
//! failures, waiting what the provider's `retry-after` says, or an exponential backoff;
//! nothing is retried once a streamed answer has begun. A stream that ends before the
//! provider's closing event is a [`ModelError::Malformed`], never a silently cut answer. Every wait for the provider (the answer's head,
//! each next piece of a stream, a whole unstreamed body) is bounded by the timeout. A request
//! stops at once when its [`ModelRequest::cancellation`](crate::step::ModelRequest::cancellation) is cancelled or its future dropped.
//!
//! API keys are read from the environment variable the configuration names and are never
//! logged: [`ApiKey`]'s `Debug` prints `***`.
//!
//! ```no_run
//! use goondan_runtime::provider::{Provider, ProviderConfig, ProviderModel};
//! let config = ProviderConfig::new(Provider::OPENAI_CHAT, "qwen3:8b")
//!     .base_url("http://127.0.0.1:11434/v1")
//!     .temperature(0.2);
//! let model = ProviderModel::new(config)?;
//! # Ok::<(), goondan_runtime::step::ModelError>(())
//! ```

mod adapter;
pub mod anthropic;
#[cfg(feature = "providers")]
mod bundle;
mod conversation;
pub mod gemini;
#[cfg(feature = "providers")]
mod http;
#[cfg(feature = "providers")]
mod model;
pub mod openai;
mod openai_chat;
mod openai_responses;
mod retry;
mod sse;
mod table;

use std::time::Duration;

use serde_json::Value;

pub use self::adapter::{AnswerStream, ProviderAdapter};
#[cfg(feature = "providers")]
pub use self::bundle::{ModelSetupError, for_agent, from_spec, model_factory};
pub use self::conversation::{Turn, turns};
#[cfg(feature = "providers")]
pub use self::model::ProviderModel;
pub use self::retry::RetryPolicy;
pub use self::sse::SseEvent;
pub use self::table::{Provider, ProviderNameTaken, UnknownProvider};

use crate::dialect::ParseError;
#[cfg(feature = "providers")]
use crate::step::ModelRequest;
use crate::step::{DeltaSink, ModelDelta, ModelError, ModelResponse, TokenUsage};
use crate::tools::catalog::ToolChoice;
use crate::tools::result::ToolCall;

/// The default request timeout.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(120);

/// The `max_tokens` sent to Anthropic, which requires one, when none is configured.
pub const DEFAULT_ANTHROPIC_MAX_TOKENS: u32 = 4096;

/// An API key. Its `Debug` never shows it.
#[derive(Clone, PartialEq, Eq)]
pub struct ApiKey(String);

impl ApiKey {
    /// A key.
    pub fn new(key: impl Into<String>) -> Self {
        Self(key.into())
    }

    #[cfg(feature = "providers")]
    pub(crate) fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ApiKey(***)")
    }
}

/// How to reach a model. Build it with [`ProviderConfig::new`] and the setters.
#[derive(Debug, Clone)]
pub struct ProviderConfig {
    /// The wire format.
    pub provider: Provider,
    /// The provider's model name.
    pub model: String,
    /// The base URL (default [`Provider::default_base_url`]).
    pub base_url: Option<String>,
    /// The environment variable holding the key (default [`Provider::default_key_env`], which
    /// may be unset: local servers need no key).
    pub api_key_env: Option<String>,
    /// A key given directly (tests, programs with their own secret store).
    pub api_key: Option<ApiKey>,
    /// Sampling temperature.
    pub temperature: Option<f64>,
    /// The answer's token limit.
    pub max_tokens: Option<u32>,
    /// The bound on each wait for the provider (default [`DEFAULT_TIMEOUT`]).
    pub timeout: Duration,
    /// Retries on 429, 5xx, timeouts and connection failures.
    pub retry: RetryPolicy,
    /// Whether answers are streamed (default `true`).
    pub stream: bool,
    /// Whether the model must, may or must not call a tool in every Step (see [`ToolChoice`]);
    /// `None` sends nothing, which every provider reads as `auto`.
    pub tool_choice: Option<ToolChoice>,
    /// The same for the first Step of each Turn, instead of [`ProviderConfig::tool_choice`]:
    /// `required` there and `auto` after is the usual way to make a small model use a tool.
    pub first_step_tool_choice: Option<ToolChoice>,
}

impl ProviderConfig {
    /// `model` at `provider`, with the defaults.
    pub fn new(provider: Provider, model: impl Into<String>) -> Self {
        Self {
            provider,
            model: model.into(),
            base_url: None,
            api_key_env: None,
            api_key: None,
            temperature: None,
            max_tokens: None,
            timeout: DEFAULT_TIMEOUT,
            retry: RetryPolicy::default(),
            stream: true,
            tool_choice: None,
            first_step_tool_choice: None,
        }
    }

    /// The base URL (`http://127.0.0.1:11434/v1` for Ollama, say).
    pub fn base_url(mut self, url: impl Into<String>) -> Self {
        self.base_url = Some(url.into());
        self
    }

    /// The environment variable holding the API key.
    pub fn api_key_env(mut self, name: impl Into<String>) -> Self {
        self.api_key_env = Some(name.into());
        self
    }

    /// The API key itself.
    pub fn api_key(mut self, key: ApiKey) -> Self {
        self.api_key = Some(key);
        self
    }

    /// Sampling temperature.
    pub fn temperature(mut self, t: f64) -> Self {
        self.temperature = Some(t);
        self
    }

    /// The answer's token limit for `request`: the lower of the request's (a sampling
    /// request's `maxTokens`) and this configuration's.
    ///
    /// ```
    /// use goondan_runtime::provider::{Provider, ProviderConfig};
    /// let config = ProviderConfig::new(Provider::OPENAI_CHAT, "m").max_tokens(500);
    /// # let mut request = goondan_runtime::step::ModelRequest {
    /// #     system: None, agent_name: "a".into(), turn_id: "t".into(), step: 0,
    /// #     messages: vec![], catalog: goondan_runtime::ToolCatalog::default(),
    /// #     tool_choice: None, max_tokens: None, deltas: None,
    /// #     cancellation: Default::default(),
    /// # };
    /// assert_eq!(config.token_limit(&request), Some(500));
    /// request.max_tokens = Some(64);
    /// assert_eq!(config.token_limit(&request), Some(64));
    /// request.max_tokens = Some(4000);
    /// assert_eq!(config.token_limit(&request), Some(500));
    /// ```
    pub fn token_limit(&self, request: &crate::step::ModelRequest) -> Option<u32> {
        match (request.max_tokens, self.max_tokens) {
            (Some(asked), Some(configured)) => Some(asked.min(configured)),
            (asked, configured) => asked.or(configured),
        }
    }

    /// The answer's token limit.
    pub fn max_tokens(mut self, n: u32) -> Self {
        self.max_tokens = Some(n);
        self
    }

    /// The bound on each wait for the provider.
    pub fn timeout(mut self, t: Duration) -> Self {
        self.timeout = t;
        self
    }

    /// The retry policy.
    pub fn retry(mut self, policy: RetryPolicy) -> Self {
        self.retry = policy;
        self
    }

    /// Whether answers are streamed.
    pub fn stream(mut self, on: bool) -> Self {
        self.stream = on;
        self
    }

    /// Whether the model must, may or must not call a tool in every Step, or which one. A
    /// step middleware's [`StepContext::tool_choice`](crate::step::StepContext::tool_choice)
    /// wins for its Step.
    ///
    /// ```
    /// use goondan_runtime::provider::{Provider, ProviderConfig};
    /// use goondan_runtime::tools::catalog::ToolChoice;
    /// // The first Step must write the file; the model decides after.
    /// let config = ProviderConfig::new(Provider::OPENAI_CHAT, "smollm2")
    ///     .first_step_tool_choice("file-system__write".parse()?)
    ///     .tool_choice(ToolChoice::Auto);
    /// # Ok::<(), goondan_runtime::tools::catalog::ToolChoiceError>(())
    /// ```
    pub fn tool_choice(mut self, choice: ToolChoice) -> Self {
        self.tool_choice = Some(choice);
        self
    }

    /// The tool choice of each Turn's first Step (see [`ProviderConfig::tool_choice`]).
    pub fn first_step_tool_choice(mut self, choice: ToolChoice) -> Self {
        self.first_step_tool_choice = Some(choice);
        self
    }

    #[cfg(feature = "providers")]
    /// The tool choice to send for `request`: the Step's own, else the first Step's, else the
    /// Model's; nothing for a Step without tools unless a call is demanded, which is an error,
    /// as is a named tool the Step's catalog does not have.
    pub(crate) fn choice_for(
        &self,
        request: &ModelRequest,
    ) -> Result<Option<ToolChoice>, ModelError> {
        let first = (request.step == 0)
            .then_some(self.first_step_tool_choice.as_ref())
            .flatten();
        let Some(choice) = request
            .tool_choice
            .as_ref()
            .or(first)
            .or(self.tool_choice.as_ref())
        else {
            return Ok(None);
        };
        if let Some(name) = choice.tool()
            && !request.catalog.contains(name)
        {
            let shown: Vec<&str> = request.catalog.names().take(20).collect();
            return Err(ModelError::Config {
                message: format!(
                    "the tool choice names `{name}`, which Step {} of agent `{}` does not offer (its tools: {})",
                    request.step,
                    request.agent_name,
                    if shown.is_empty() {
                        "none".to_owned()
                    } else {
                        shown.join(", ")
                    }
                ),
            });
        }
        if request.catalog.is_empty() {
            if choice.demands_a_call() {
                return Err(ModelError::Config {
                    message: format!(
                        "the tool choice `{choice}` demands a tool call, but Step {} of agent `{}` offers no tools",
                        request.step, request.agent_name
                    ),
                });
            }
            return Ok(None);
        }
        Ok(Some(choice.clone()))
    }

    pub(crate) fn base(&self) -> &str {
        self.base_url
            .as_deref()
            .unwrap_or(self.provider.default_base_url())
            .trim_end_matches('/')
    }

    #[cfg(feature = "providers")]
    /// The key: the one given, else the named variable (which must be set), else the
    /// provider's usual variable if it is set.
    fn resolve_key(&self) -> Result<Option<ApiKey>, ModelError> {
        if let Some(k) = &self.api_key {
            return Ok(Some(k.clone()));
        }
        if let Some(name) = &self.api_key_env {
            return match std::env::var(name) {
                Ok(v) if !v.is_empty() => Ok(Some(ApiKey(v))),
                _ => Err(ModelError::Config {
                    message: format!(
                        "the API key variable `{name}` is not set: export it, or remove `apiKey` for a server that needs no key"
                    ),
                }),
            };
        }
        Ok(std::env::var(self.provider.default_key_env())
            .ok()
            .filter(|v| !v.is_empty())
            .map(ApiKey))
    }
}

/// A provider's answer that is not in the documented shape.
fn malformed(provider: Provider, message: impl Into<String>) -> ModelError {
    ModelError::Malformed {
        provider: provider.as_str(),
        message: message.into(),
    }
}

/// A JSON payload of a stream event, or a structured error naming the provider.
fn event_json(provider: Provider, data: &str) -> Result<Value, ModelError> {
    serde_json::from_str(data).map_err(|e| {
        let shown: String = data.chars().take(120).collect();
        malformed(
            provider,
            format!("a stream event is not JSON ({e}): `{shown}`"),
        )
    })
}

/// A token count at `pointer`, as `u64`.
fn count(value: &Value, pointer: &str) -> Option<u64> {
    value.pointer(pointer).and_then(Value::as_u64)
}

/// The token usage at the pointers `input` and `output`, when the input count is there.
fn usage(value: &Value, input: &str, output: &str) -> Option<TokenUsage> {
    Some(TokenUsage {
        input_tokens: count(value, input)?,
        output_tokens: count(value, output).unwrap_or(0),
    })
}

/// The text field `key` of `obj`, a part of the answer that an error calls `what`.
fn text_field(
    provider: Provider,
    obj: &Value,
    key: &str,
    what: &str,
) -> Result<String, ModelError> {
    obj.get(key)
        .and_then(Value::as_str)
        .map(str::to_owned)
        .ok_or_else(|| malformed(provider, format!("{what} has no `{key}`")))
}

/// Appends a piece of the answer's text, and sends it to `sink` as it comes.
fn append_text(text: &mut String, piece: &str, sink: Option<&DeltaSink>) {
    text.push_str(piece);
    if let Some(s) = sink
        && !piece.is_empty()
    {
        s.send(&ModelDelta::Text(piece.to_owned()));
    }
}

/// Tells `sink` that the model calls `name` (its arguments may still be coming).
fn announce(sink: Option<&DeltaSink>, id: &str, name: &str) {
    if let Some(s) = sink {
        s.send(&ModelDelta::ToolCall {
            id: id.to_owned(),
            name: name.to_owned(),
        });
    }
}

/// An error the provider reported in its answer, with its message when it has one.
fn reported(provider: Provider, message: Option<&Value>) -> ModelError {
    let text = message.and_then(Value::as_str).unwrap_or("no message");
    malformed(provider, format!("the provider reported an error: {text}"))
}

/// The answer: its text (`None` when empty), the calls its dialect read, and its usage.
fn answer(
    provider: Provider,
    text: String,
    calls: Result<Vec<ToolCall>, ParseError>,
    usage: Option<TokenUsage>,
) -> Result<ModelResponse, ModelError> {
    Ok(ModelResponse {
        content: (!text.is_empty()).then_some(text),
        tool_calls: calls.map_err(|e| malformed(provider, e.to_string()))?,
        usage,
        metadata: serde_json::Map::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_provider_a_bundle_may_name_has_a_wire_format() {
        for name in crate::bundle::PROVIDERS {
            assert!(Provider::parse(name).is_some(), "{name}");
        }
        assert_eq!(Provider::parse("gemini"), Provider::parse("google"));
        assert_eq!(Provider::parse("openia"), None);
        for provider in Provider::all() {
            assert_eq!(Provider::parse(provider.as_str()), Some(provider));
            assert_eq!(provider.adapter().name(), provider.as_str());
        }
    }
}
