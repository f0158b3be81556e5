//! The parts of a provider: [`ProviderAdapter`], and [`AnswerStream`] for its streamed answers.

use serde_json::Value;

use super::ProviderConfig;
use super::sse::SseEvent;
use crate::dialect::Dialect;
use crate::step::{DeltaSink, ModelError, ModelRequest, ModelResponse};
use crate::tools::catalog::{ToolCatalog, ToolChoice};

/// One model provider's wire format: everything [`ProviderModel`](super::ProviderModel) needs
/// to ask it for an answer and read that answer.
///
/// [`ProviderModel`](super::ProviderModel) does the rest, the same for every provider: the
/// API key, the HTTP call with its timeouts, retries and cancellation, the server-sent events
/// of a streamed answer, and the catalog, which it writes into the body's `tools` field as the
/// adapter's [`dialect`](Self::dialect) renders it ([`Dialect::tools_json`]).
///
/// Each built-in provider is one module that implements this trait and owns its tool dialect;
/// [`Provider`](super::Provider) is the table from names to adapters. A provider of your own
/// is an implementation and a [`Provider::register`](super::Provider::register):
///
/// ```
/// use goondan_runtime::tools::catalog::{ToolCatalog, ToolChoice};
/// use goondan_runtime::dialect::{Dialect, DialectError, ParseError, ToolDialect};
/// use goondan_runtime::provider::{AnswerStream, Provider, ProviderAdapter, ProviderConfig, SseEvent};
/// use goondan_runtime::step::{DeltaSink, ModelError, ModelRequest, ModelResponse};
/// use goondan_runtime::{CatalogItem, ToolCall, ToolCallResult};
/// use serde_json::{Value, json};
///
/// /// A server that takes `{"model", "prompt", "tools"}` and answers `{"say": text}`.
/// struct Parrot;
///
/// impl ToolDialect for Parrot {
///     fn name(&self) -> &'static str { "parrot" }
///     fn tool(&self, item: &CatalogItem) -> Result<Value, DialectError> {
///         Ok(json!(item.name().as_str()))
///     }
///     fn parse_calls(&self, _: &Value, _: &ToolCatalog) -> Result<Vec<ToolCall>, ParseError> {
///         Ok(Vec::new())
///     }
///     fn render_result(&self, result: &ToolCallResult) -> Value {
///         json!(goondan_runtime::dialect::result_text(result))
///     }
/// }
///
/// impl ProviderAdapter for Parrot {
///     fn name(&self) -> &'static str { "parrot" }
///     fn default_base_url(&self) -> &'static str { "http://127.0.0.1:9999" }
///     fn default_key_env(&self) -> &'static str { "PARROT_KEY" }
///     fn dialect(&self) -> Dialect { Dialect::new(&PARROT) }
///     fn headers(&self, key: Option<&str>) -> Vec<(&'static str, String)> {
///         key.map(|k| ("authorization", format!("Bearer {k}"))).into_iter().collect()
///     }
///     fn url(&self, base: &str, _model: &str, _stream: bool) -> String { format!("{base}/say") }
///     fn body(&self, config: &ProviderConfig, request: &ModelRequest, _stream: bool)
///         -> Result<Value, ModelError> {
///         Ok(json!({"model": config.model, "prompt": request.system}))
///     }
///     fn tool_choice(&self, choice: &ToolChoice) -> (&'static str, Value) {
///         ("choice", json!(choice.to_string()))
///     }
///     fn parse(&self, answer: &Value, _: &ToolCatalog) -> Result<ModelResponse, ModelError> {
///         let mut response = ModelResponse::default();
///         response.content = answer["say"].as_str().map(str::to_owned);
///         Ok(response)
///     }
///     fn stream(&self) -> Box<dyn AnswerStream> {
///         Box::new(Whole(String::new()))
///     }
/// }
///
/// /// A streamed answer: one event, the whole text.
/// struct Whole(String);
///
/// impl AnswerStream for Whole {
///     fn event(&mut self, event: &SseEvent, _: Option<&DeltaSink>) -> Result<bool, ModelError> {
///         self.0.push_str(&event.data);
///         Ok(true)
///     }
///     fn finish(self: Box<Self>, _: &ToolCatalog) -> Result<ModelResponse, ModelError> {
///         let mut response = ModelResponse::default();
///         response.content = Some(self.0);
///         Ok(response)
///     }
/// }
///
/// static PARROT: Parrot = Parrot;
/// let parrot = Provider::register(&PARROT)?;
/// assert_eq!(Provider::parse("parrot"), Some(parrot));
/// assert_eq!(parrot.default_base_url(), "http://127.0.0.1:9999");
/// let config = ProviderConfig::new(parrot, "polly");
/// # drop(config);
/// # Ok::<(), goondan_runtime::provider::ProviderNameTaken>(())
/// ```
pub trait ProviderAdapter: Send + Sync + 'static {
    /// The name a Model resource's `spec.provider` uses (`openai`, `anthropic`, ...).
    fn name(&self) -> &'static str;

    /// Other names it answers to (`google` for `gemini`); none by default.
    fn aliases(&self) -> &'static [&'static str] {
        &[]
    }

    /// The base URL used when none is configured.
    fn default_base_url(&self) -> &'static str;

    /// The environment variable read for the key when the configuration names none.
    fn default_key_env(&self) -> &'static str;

    /// The tool format it speaks.
    fn dialect(&self) -> Dialect;

    /// The headers of every request: the key (`None` when there is none: local servers need
    /// none) and whatever else the provider asks for (a version, say). Never log them.
    fn headers(&self, key: Option<&str>) -> Vec<(&'static str, String)>;

    /// The URL to post to, from the base URL (without a trailing `/`), the model name, and
    /// whether the answer is streamed.
    fn url(&self, base: &str, model: &str, stream: bool) -> String;

    /// The request body for `request`: an object, to which the catalog is added as `tools`
    /// (when the Step has tools) and the tool choice as [`tool_choice`](Self::tool_choice)
    /// says.
    fn body(
        &self,
        config: &ProviderConfig,
        request: &ModelRequest,
        stream: bool,
    ) -> Result<Value, ModelError>;

    /// The body field and value that ask for `choice`.
    fn tool_choice(&self, choice: &ToolChoice) -> (&'static str, Value);

    /// An answer that was not streamed (its tool calls read with the
    /// [`dialect`](Self::dialect), normally).
    fn parse(&self, answer: &Value, catalog: &ToolCatalog) -> Result<ModelResponse, ModelError>;

    /// A new, empty streamed answer, fed each event as it comes.
    fn stream(&self) -> Box<dyn AnswerStream>;
}

/// A streamed answer being assembled from its server-sent events (see
/// [`ProviderAdapter::stream`]).
pub trait AnswerStream: Send {
    /// Takes one event, sending text and announced calls to `sink` as they come; `true` when
    /// the answer is whole (a closing event), `false` to read on. The stream's end is the end
    /// of the answer too.
    fn event(&mut self, event: &SseEvent, sink: Option<&DeltaSink>) -> Result<bool, ModelError>;

    /// The answer, or [`ModelError::Malformed`] when the stream stopped before it was whole.
    fn finish(self: Box<Self>, catalog: &ToolCatalog) -> Result<ModelResponse, ModelError>;
}
