//! Model providers: [`ProviderModel`], a [`Model`] that talks to a real language model over
//! HTTP, in one of four wire formats ([`Provider`]):
//!
//! | provider | API | default base URL |
//! |---|---|---|
//! | `openai` | Chat Completions (also vLLM, llama.cpp's server, Ollama, LM Studio) | `https://api.openai.com/v1` |
//! | `openai-responses` | Responses | `https://api.openai.com/v1` |
//! | `anthropic` | Messages | `https://api.anthropic.com/v1` |
//! | `gemini` | `generateContent` | `https://generativelanguage.googleapis.com/v1beta` |
//!
//! Each request carries the system prompt, the conversation (tool results rendered by
//! [`crate::dialect`]) and the Step's catalog through the provider's [`Dialect`]. Answers are
//! streamed by default (server-sent events, parsed by the `sse-stream` crate): text goes to
//! the request's [`DeltaSink`](crate::step::DeltaSink) as it comes, tool-call arguments are
//! assembled from their pieces, and the calls are read by the dialect. Token usage is reported
//! in [`ModelResponse::usage`].
//!
//! A request is retried ([`RetryPolicy`]) on 408, 409, 429, 5xx, timeouts and connection
//! failures, waiting what the provider's `retry-after` says, or an exponential backoff;
//! nothing is retried once a streamed answer has begun. A stream that ends before the
//! provider's closing event is a [`ModelError::Malformed`], never a silently cut answer. Every wait for the provider (the answer's head,
//! each next piece of a stream, a whole unstreamed body) is bounded by the timeout. A request
//! stops at once when its [`ModelRequest::cancellation`] is cancelled or its future dropped.
//!
//! API keys are read from the environment variable the configuration names and are never
//! logged: [`ApiKey`]'s `Debug` prints `***`.
//!
//! ```no_run
//! use goondan_runtime::provider::{Provider, ProviderConfig, ProviderModel};
//! let config = ProviderConfig::new(Provider::OpenAiChat, "qwen3:8b")
//!     .base_url("http://127.0.0.1:11434/v1")
//!     .temperature(0.2);
//! let model = ProviderModel::new(config)?;
//! # Ok::<(), goondan_runtime::step::ModelError>(())
//! ```

mod anthropic;
mod bundle;
mod conversation;
mod gemini;
mod http;
mod openai_chat;
mod openai_responses;
mod retry;
mod sse;

use std::time::Duration;

use serde_json::Value;

pub use self::bundle::{ModelSetupError, for_agent, from_spec, model_factory};
pub use self::retry::RetryPolicy;

use crate::catalog::ToolChoice;
use crate::dialect::Dialect;
use crate::step::{Model, ModelError, ModelFuture, ModelRequest, ModelResponse};

/// The default request timeout.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(120);

/// The `max_tokens` sent to Anthropic, which requires one, when none is configured.
pub const DEFAULT_ANTHROPIC_MAX_TOKENS: u32 = 4096;

/// A provider's wire format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Provider {
    /// OpenAI Chat Completions, and every server that speaks it.
    OpenAiChat,
    /// OpenAI Responses.
    OpenAiResponses,
    /// Anthropic Messages.
    Anthropic,
    /// Google Gemini `generateContent`.
    Gemini,
}

impl Provider {
    /// The name a Model resource's `spec.provider` uses.
    pub fn as_str(self) -> &'static str {
        match self {
            Provider::OpenAiChat => "openai",
            Provider::OpenAiResponses => "openai-responses",
            Provider::Anthropic => "anthropic",
            Provider::Gemini => "gemini",
        }
    }

    /// The provider named `name` (`google` is Gemini); `None` for others.
    pub fn parse(name: &str) -> Option<Provider> {
        match name {
            "openai" => Some(Provider::OpenAiChat),
            "openai-responses" => Some(Provider::OpenAiResponses),
            "anthropic" => Some(Provider::Anthropic),
            "gemini" | "google" => Some(Provider::Gemini),
            _ => None,
        }
    }

    /// The tool format it speaks.
    pub fn dialect(self) -> Dialect {
        match self {
            Provider::OpenAiChat => Dialect::OpenAiChat,
            Provider::OpenAiResponses => Dialect::OpenAiResponses,
            Provider::Anthropic => Dialect::Anthropic,
            Provider::Gemini => Dialect::Gemini,
        }
    }

    /// The base URL used when none is configured.
    pub fn default_base_url(self) -> &'static str {
        match self {
            Provider::OpenAiChat | Provider::OpenAiResponses => "https://api.openai.com/v1",
            Provider::Anthropic => "https://api.anthropic.com/v1",
            Provider::Gemini => "https://generativelanguage.googleapis.com/v1beta",
        }
    }

    /// The environment variable read for the key when the configuration names none.
    pub fn default_key_env(self) -> &'static str {
        match self {
            Provider::OpenAiChat | Provider::OpenAiResponses => "OPENAI_API_KEY",
            Provider::Anthropic => "ANTHROPIC_API_KEY",
            Provider::Gemini => "GEMINI_API_KEY",
        }
    }
}

impl std::fmt::Display for Provider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An API key. Its `Debug` never shows it.
#[derive(Clone, PartialEq, Eq)]
pub struct ApiKey(String);

impl ApiKey {
    /// A key.
    pub fn new(key: impl Into<String>) -> Self {
        Self(key.into())
    }

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
    /// use goondan_runtime::catalog::ToolChoice;
    /// // The first Step must write the file; the model decides after.
    /// let config = ProviderConfig::new(Provider::OpenAiChat, "smollm2")
    ///     .first_step_tool_choice("file-system__write".parse()?)
    ///     .tool_choice(ToolChoice::Auto);
    /// # Ok::<(), goondan_runtime::catalog::ToolChoiceError>(())
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

/// A [`Model`] answered by a provider over HTTP (see the module docs).
#[derive(Debug, Clone)]
pub struct ProviderModel {
    config: ProviderConfig,
    key: Option<ApiKey>,
    client: reqwest::Client,
}

impl ProviderModel {
    /// A model for `config`; reads the API key now. Fails when the named key variable is not
    /// set or the HTTP client cannot be built.
    pub fn new(config: ProviderConfig) -> Result<Self, ModelError> {
        let key = config.resolve_key()?;
        let client = reqwest::Client::builder()
            .connect_timeout(config.timeout)
            .build()
            .map_err(|e| ModelError::Config {
                message: format!("cannot build the HTTP client: {e}"),
            })?;
        Ok(Self {
            config,
            key,
            client,
        })
    }

    /// The configuration.
    pub fn config(&self) -> &ProviderConfig {
        &self.config
    }

    async fn answer(&self, request: &ModelRequest) -> Result<ModelResponse, ModelError> {
        let provider = self.config.provider;
        let stream = self.config.stream;
        let body = match provider {
            Provider::OpenAiChat => openai_chat::body(&self.config, request, stream)?,
            Provider::OpenAiResponses => openai_responses::body(&self.config, request, stream)?,
            Provider::Anthropic => anthropic::body(&self.config, request, stream)?,
            Provider::Gemini => gemini::body(&self.config, request)?,
        };
        let mut body = body;
        if let (Some(choice), Value::Object(fields)) = (self.config.choice_for(request)?, &mut body)
        {
            let (field, value) = match provider {
                Provider::OpenAiChat => ("tool_choice", openai_chat::tool_choice(&choice)),
                Provider::OpenAiResponses => {
                    ("tool_choice", openai_responses::tool_choice(&choice))
                }
                Provider::Anthropic => ("tool_choice", anthropic::tool_choice(&choice)),
                Provider::Gemini => ("toolConfig", gemini::tool_config(&choice)),
            };
            fields.insert(field.into(), value);
        }
        let base = self.config.base();
        let url = match provider {
            Provider::OpenAiChat => format!("{base}/chat/completions"),
            Provider::OpenAiResponses => format!("{base}/responses"),
            Provider::Anthropic => format!("{base}/messages"),
            Provider::Gemini => gemini::url(base, &self.config.model, stream),
        };
        let call = http::Call {
            client: &self.client,
            provider: provider.as_str(),
            url,
            headers: self.headers(),
            body,
            tools: catalog_tools(provider, &request.catalog)?,
            timeout: self.config.timeout,
            retry: &self.config.retry,
            cancel: &request.cancellation,
        };
        let (response, attempts) = call.send().await?;
        if !stream {
            let value = call.read_json(response, attempts).await?;
            return match provider {
                Provider::OpenAiChat => openai_chat::parse(&value, &request.catalog),
                Provider::OpenAiResponses => openai_responses::parse(&value, &request.catalog),
                Provider::Anthropic => anthropic::parse(&value),
                Provider::Gemini => gemini::parse(&value),
            };
        }
        let mut events = sse::Events::new(response, &call, attempts);
        let sink = request.deltas.as_ref();
        match provider {
            Provider::OpenAiChat => {
                let mut s = openai_chat::Stream::default();
                while let Some(e) = events.next().await? {
                    if s.event(&e, sink)? {
                        break;
                    }
                }
                s.finish(&request.catalog)
            }
            Provider::OpenAiResponses => {
                let mut s = openai_responses::Stream::default();
                while let Some(e) = events.next().await? {
                    if s.event(&e, sink)? {
                        break;
                    }
                }
                s.finish(&request.catalog)
            }
            Provider::Anthropic => {
                let mut s = anthropic::Stream::default();
                while let Some(e) = events.next().await? {
                    if s.event(&e, sink)? {
                        break;
                    }
                }
                s.finish()
            }
            Provider::Gemini => {
                let mut s = gemini::Stream::default();
                while let Some(e) = events.next().await? {
                    s.event(&e, sink)?;
                }
                s.finish()
            }
        }
    }

    fn headers(&self) -> Vec<(&'static str, String)> {
        let mut h = Vec::new();
        let key = self.key.as_ref().map(ApiKey::expose);
        match self.config.provider {
            Provider::OpenAiChat | Provider::OpenAiResponses => {
                if let Some(k) = key {
                    h.push(("authorization", format!("Bearer {k}")));
                }
            }
            Provider::Anthropic => {
                h.push(("anthropic-version", "2023-06-01".to_owned()));
                if let Some(k) = key {
                    h.push(("x-api-key", k.to_owned()));
                }
            }
            Provider::Gemini => {
                if let Some(k) = key {
                    h.push(("x-goog-api-key", k.to_owned()));
                }
            }
        }
        h
    }
}

impl Model for ProviderModel {
    fn respond<'a>(&'a self, request: &'a ModelRequest) -> ModelFuture<'a> {
        Box::pin(async move {
            let cancel = request.cancellation.clone();
            let answer = tokio::select! {
                biased;
                () = cancel.cancelled() => Err(ModelError::Cancelled),
                answer = self.answer(request) => answer,
            };
            match &answer {
                Ok(r) => tracing::debug!(
                    target: "goondan::provider",
                    provider = self.config.provider.as_str(),
                    model = %self.config.model,
                    agent = %request.agent_name,
                    step = request.step,
                    calls = r.tool_calls.len(),
                    input_tokens = r.usage.map(|u| u.input_tokens),
                    output_tokens = r.usage.map(|u| u.output_tokens),
                    "provider.answer"
                ),
                Err(e) => tracing::warn!(
                    target: "goondan::provider",
                    provider = self.config.provider.as_str(),
                    model = %self.config.model,
                    agent = %request.agent_name,
                    step = request.step,
                    error = %e,
                    "provider.failed"
                ),
            }
            answer
        })
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

/// Text content, `None` when empty.
fn non_empty(text: String) -> Option<String> {
    (!text.is_empty()).then_some(text)
}

/// The catalog in the provider's tool format, as JSON text for the request's `tools` field
/// (each export rendered once per process: `Dialect::tools_json`); none for an empty catalog.
fn catalog_tools(
    provider: Provider,
    catalog: &crate::catalog::ToolCatalog,
) -> Result<Option<String>, ModelError> {
    if catalog.is_empty() {
        return Ok(None);
    }
    provider
        .dialect()
        .tools_json(catalog)
        .map(Some)
        .map_err(|e| ModelError::Config {
            message: e.to_string(),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_empty_catalog_sends_no_tools_field_and_a_full_one_the_dialect_text() {
        let empty = crate::catalog::ToolCatalog::new();
        let mut catalog = crate::catalog::ToolCatalog::new();
        catalog.push(crate::catalog::CatalogItem::new(
            crate::name::ToolName::new("calc", "add").unwrap_or_else(|e| panic!("{e}")),
        ));
        for provider in [
            Provider::OpenAiChat,
            Provider::OpenAiResponses,
            Provider::Anthropic,
            Provider::Gemini,
        ] {
            assert_eq!(catalog_tools(provider, &empty).ok(), Some(None));
            let text = catalog_tools(provider, &catalog).ok().flatten();
            let plain = provider.dialect().tools(&catalog).ok();
            assert_eq!(
                text.map(|t| serde_json::from_str::<Value>(&t).ok()),
                Some(plain)
            );
        }
    }

    #[test]
    fn every_provider_a_bundle_may_name_has_a_wire_format() {
        for name in crate::bundle::PROVIDERS {
            assert!(Provider::parse(name).is_some(), "{name}");
        }
        assert_eq!(Provider::parse("gemini"), Provider::parse("google"));
        assert_eq!(Provider::parse("openia"), None);
    }
}
