//! [`ProviderModel`]: a [`Model`] that asks a provider over HTTP, the same way for every
//! provider, through its [`ProviderAdapter`].

use serde_json::Value;

use super::{ApiKey, ProviderAdapter, ProviderConfig, http, sse};
use crate::step::{Model, ModelError, ModelFuture, ModelRequest, ModelResponse};

/// A [`Model`] answered by a provider over HTTP (see the module docs).
#[derive(Clone)]
pub struct ProviderModel {
    config: ProviderConfig,
    adapter: &'static dyn ProviderAdapter,
    key: Option<ApiKey>,
    client: reqwest::Client,
}

impl ProviderModel {
    /// A model for `config`; reads the API key now. Fails when the named key variable is not
    /// set or the HTTP client cannot be built.
    pub fn new(config: ProviderConfig) -> Result<Self, ModelError> {
        let key = config.resolve_key()?;
        crate::tls::install_crypto_provider();
        let client = reqwest::Client::builder()
            .connect_timeout(config.timeout)
            .build()
            .map_err(|e| ModelError::Config {
                message: format!("cannot build the HTTP client: {e}"),
            })?;
        Ok(Self {
            adapter: config.provider.adapter(),
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
        let adapter = self.adapter;
        let stream = self.config.stream;
        let mut body = adapter.body(&self.config, request, stream)?;
        if let (Some(choice), Value::Object(fields)) = (self.config.choice_for(request)?, &mut body)
        {
            let (field, value) = adapter.tool_choice(&choice);
            fields.insert(field.into(), value);
        }
        let call = http::Call {
            client: &self.client,
            provider: adapter.name(),
            url: adapter.url(self.config.base(), &self.config.model, stream),
            headers: adapter.headers(self.key.as_ref().map(ApiKey::expose)),
            body,
            tools: catalog_tools(adapter.dialect(), &request.catalog)?,
            timeout: self.config.timeout,
            retry: &self.config.retry,
            cancel: &request.cancellation,
        };
        let (response, attempts) = call.send().await?;
        if !stream {
            let value = call.read_json(response, attempts).await?;
            return adapter.parse(&value, &request.catalog);
        }
        let mut events = sse::Events::new(response, &call, attempts);
        let sink = request.deltas.as_ref();
        let mut answer = adapter.stream();
        while let Some(e) = events.next().await? {
            if answer.event(&e, sink)? {
                break;
            }
        }
        answer.finish(&request.catalog)
    }
}

impl std::fmt::Debug for ProviderModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProviderModel")
            .field("config", &self.config)
            .field("key", &self.key)
            .finish_non_exhaustive()
    }
}

impl Model for ProviderModel {
    fn respond<'a>(&'a self, request: &'a ModelRequest) -> ModelFuture<'a> {
        // The GenAI conventions' `chat` span (`crate::telemetry`): the request's model and
        // provider, then the tokens used or the error.
        let model = &self.config.model;
        let span = tracing::info_span!(
            "chat",
            otel.name = %format_args!("chat {model}"),
            otel.kind = "client",
            gen_ai.operation.name = "chat",
            gen_ai.provider.name = provider_name(self.config.provider.as_str()),
            gen_ai.request.model = %model,
            gen_ai.agent.name = %request.agent_name,
            gen_ai.usage.input_tokens = tracing::field::Empty,
            gen_ai.usage.output_tokens = tracing::field::Empty,
            "error.type" = tracing::field::Empty,
            otel.status_code = tracing::field::Empty,
        );
        let chat = span.clone();
        let answer = async move {
            let cancel = request.cancellation.clone();
            let answer = tokio::select! {
                biased;
                () = cancel.cancelled() => Err(ModelError::Cancelled),
                answer = self.answer(request) => answer,
            };
            match &answer {
                Ok(r) => {
                    if let Some(usage) = r.usage {
                        // As integers: OpenTelemetry's attributes have no unsigned kind.
                        let count = |n: u64| i64::try_from(n).unwrap_or(i64::MAX);
                        chat.record("gen_ai.usage.input_tokens", count(usage.input_tokens));
                        chat.record("gen_ai.usage.output_tokens", count(usage.output_tokens));
                    }
                    tracing::debug!(
                        target: "goondan::provider",
                        provider = self.config.provider.as_str(),
                        model = %self.config.model,
                        agent = %request.agent_name,
                        step = request.step,
                        calls = r.tool_calls.len(),
                        input_tokens = r.usage.map(|u| u.input_tokens),
                        output_tokens = r.usage.map(|u| u.output_tokens),
                        "provider.answer"
                    );
                }
                Err(e) => {
                    chat.record("error.type", error_type(e).as_str());
                    chat.record("otel.status_code", "ERROR");
                    tracing::warn!(
                        target: "goondan::provider",
                        provider = self.config.provider.as_str(),
                        model = %self.config.model,
                        agent = %request.agent_name,
                        step = request.step,
                        error = %e,
                        "provider.failed"
                    );
                }
            }
            answer
        };
        Box::pin(tracing::Instrument::instrument(answer, span))
    }
}

/// The `gen_ai.provider.name` of a provider of the table: the conventions' well-known value for
/// ours (both OpenAI protocols are `openai`, Gemini's API is `gcp.gemini`), the adapter's own
/// name for any other.
fn provider_name(provider: &'static str) -> &'static str {
    match provider {
        "openai" | "openai-responses" => "openai",
        "gemini" => "gcp.gemini",
        other => other,
    }
}

/// The `error.type` of a failed model request: the HTTP status the provider answered with, or
/// the kind of failure.
fn error_type(e: &ModelError) -> String {
    let kind = match e {
        ModelError::Status { status, .. } => return status.to_string(),
        ModelError::Timeout { .. } => "timeout",
        ModelError::Transport { .. } => "transport",
        ModelError::Malformed { .. } => "malformed",
        ModelError::Cancelled => "cancelled",
        ModelError::Config { .. } => "config",
        ModelError::ScriptExhausted { .. } | ModelError::Failed { .. } => "failed",
    };
    kind.to_owned()
}

/// The catalog in the provider's tool format, as JSON text for the request's `tools` field
/// (`Dialect::tools_json`); none for an empty catalog.
fn catalog_tools(
    dialect: crate::dialect::Dialect,
    catalog: &crate::tools::catalog::ToolCatalog,
) -> Result<Option<String>, ModelError> {
    if catalog.is_empty() {
        return Ok(None);
    }
    dialect
        .tools_json(catalog)
        .map(Some)
        .map_err(|e| ModelError::Config {
            message: e.to_string(),
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::Provider;

    #[test]
    fn an_empty_catalog_sends_no_tools_field_and_a_full_one_the_dialect_text() {
        let empty = crate::tools::catalog::ToolCatalog::new();
        let mut catalog = crate::tools::catalog::ToolCatalog::new();
        catalog.push(crate::tools::catalog::CatalogItem::new(
            crate::tools::name::ToolName::new("calc", "add").unwrap_or_else(|e| panic!("{e}")),
        ));
        for provider in Provider::all() {
            let dialect = provider.dialect();
            assert_eq!(catalog_tools(dialect, &empty).ok(), Some(None));
            let text = catalog_tools(dialect, &catalog).ok().flatten();
            let value = provider.dialect().tools(&catalog).ok();
            assert_eq!(
                text.map(|t| serde_json::from_str::<Value>(&t).ok()),
                Some(value)
            );
        }
    }
}
