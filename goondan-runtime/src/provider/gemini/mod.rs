//! Google Gemini (`POST {base}/models/{model}:generateContent`, streamed with
//! `:streamGenerateContent?alt=sse`).
//!
//! A streamed answer is a series of `data:` events, each a whole `GenerateContentResponse`
//! holding the next parts of `candidates[0].content`: text parts to append, and
//! `functionCall` parts, each complete. `usageMetadata` carries the token counts; the stream
//! ends when the connection does.
//!
//! # Tools
//!
//! Google Gemini function calling: `tools: [{functionDeclarations: [{name, description,
//! parameters}]}]`, `functionCall` parts in, `functionResponse` parts out.
//!
//! `parameters` is Gemini's `Schema`, a subset of OpenAPI 3.0:
//! - every node has a `type` (`STRING`, `NUMBER`, `INTEGER`, `BOOLEAN`, `ARRAY`, `OBJECT`),
//!   except an `anyOf` whose branches differ in type; no type arrays: `null` becomes
//!   `nullable: true`;
//! - no `$ref`/`$defs`, no `additionalProperties`, no `const`/`oneOf` (`oneOf` becomes `anyOf`,
//!   a union of string constants one `enum` with `format: "enum"`, `const` a one-value `enum`);
//! - kept: `description`, `properties`, `required`, `items`, `enum`, `minItems`, `maxItems`,
//!   `minLength`, `maxLength`, `pattern`, `minimum`, `maximum`, and the formats `int32`,
//!   `int64`, `float`, `double`, `date-time`; other keywords are dropped (the executor still
//!   checks the neutral schema);
//! - a tool without parameters has no `parameters`.
//!
//! Not expressible in `parameters`: recursive types (`$ref`), maps with free keys, values of any
//! type (`serde_json::Value`), objects without properties below the top, unions of several
//! types in one `type`, tuples, and top-level parameter names outside `[A-Za-z_][A-Za-z0-9_]*`
//! (at most 64). Such a tool is sent with its neutral JSON Schema in `parametersJsonSchema`
//! instead (Gemini takes either field), and
//! [`Dialect::strict_problems`](crate::dialect::Dialect::strict_problems) says why.
//!
//! The dialect is `Dialect::GEMINI`; the functions below are its parts.

mod dialect;

use serde_json::{Map, Value, json};

use super::conversation::{Turn, arguments_object, push, turns};
use super::sse::SseEvent as Event;
use super::{AnswerStream, ProviderAdapter};
use super::{
    Provider, ProviderConfig, announce, answer, append_text, event_json, malformed, reported, usage,
};
use crate::dialect::{Dialect, DialectError, ParseError, ToolDialect};
use crate::step::{DeltaSink, ModelError, ModelRequest, ModelResponse, TokenUsage};
use crate::tools::catalog::{CatalogItem, ToolCatalog, ToolChoice};
use crate::tools::result::{ToolCall, ToolCallResult};

pub use self::dialect::{GENERATED_ID_PREFIX, function_response, parse_calls, tools, user_content};

const P: Provider = Provider::GEMINI;

/// The assistant message's metadata key holding the answer's parts as Gemini sent them, so
/// the next request carries them back unchanged (function calls with their
/// `thoughtSignature`, which Gemini requires with thinking models).
pub(crate) const PARTS: &str = "geminiParts";

const PROMPT_TOKENS: &str = "/usageMetadata/promptTokenCount";
const CANDIDATES_TOKENS: &str = "/usageMetadata/candidatesTokenCount";

/// Google Gemini: the provider `gemini` (also `google`) and its tool dialect.
pub(crate) struct Gemini;

impl Dialect {
    /// Google Gemini function declarations (`provider::gemini`).
    pub const GEMINI: Dialect = Dialect::new(&Gemini);
}

impl ToolDialect for Gemini {
    fn name(&self) -> &'static str {
        "gemini"
    }

    fn tool(&self, item: &CatalogItem) -> Result<Value, DialectError> {
        dialect::declaration(item).map(|tool| tool.to_value())
    }

    fn tools(&self, catalog: &ToolCatalog) -> Result<Value, DialectError> {
        dialect::tools(catalog)
    }

    fn tools_json(&self, catalog: &ToolCatalog) -> Result<String, DialectError> {
        dialect::tools_form(catalog).map(|tools| tools.to_text())
    }

    fn strict_problems(&self, catalog: &ToolCatalog) -> Vec<DialectError> {
        dialect::strict_problems(catalog)
    }

    fn parse_calls(&self, answer: &Value, _: &ToolCatalog) -> Result<Vec<ToolCall>, ParseError> {
        dialect::parse_calls(answer)
    }

    fn render_result(&self, result: &ToolCallResult) -> Value {
        dialect::function_response(result)
    }
}

impl ProviderAdapter for Gemini {
    fn name(&self) -> &'static str {
        "gemini"
    }

    fn aliases(&self) -> &'static [&'static str] {
        &["google"]
    }

    fn default_base_url(&self) -> &'static str {
        "https://generativelanguage.googleapis.com/v1beta"
    }

    fn default_key_env(&self) -> &'static str {
        "GEMINI_API_KEY"
    }

    fn dialect(&self) -> Dialect {
        Dialect::GEMINI
    }

    fn headers(&self, key: Option<&str>) -> Vec<(&'static str, String)> {
        key.map(|k| ("x-goog-api-key", k.to_owned()))
            .into_iter()
            .collect()
    }

    fn url(&self, base: &str, model: &str, stream: bool) -> String {
        let model = model.strip_prefix("models/").unwrap_or(model);
        if stream {
            format!("{base}/models/{model}:streamGenerateContent?alt=sse")
        } else {
            format!("{base}/models/{model}:generateContent")
        }
    }

    fn body(
        &self,
        config: &ProviderConfig,
        request: &ModelRequest,
        _stream: bool,
    ) -> Result<Value, ModelError> {
        let mut contents = Vec::new();
        let mut add = |role: &str, parts| push(&mut contents, role, "parts", parts);
        for turn in turns(&request.messages) {
            match turn {
                Turn::User(text) => add("user", vec![json!({"text": text})]),
                Turn::Assistant { metadata: m, .. }
                    if m.get(PARTS).is_some_and(Value::is_array) =>
                {
                    // The answer's own parts, thought signatures included, as Gemini asks.
                    let parts = m
                        .get(PARTS)
                        .and_then(Value::as_array)
                        .cloned()
                        .unwrap_or_default();
                    add("model", parts);
                }
                Turn::Assistant { text, calls, .. } => {
                    let mut parts = Vec::new();
                    if let Some(t) = text {
                        parts.push(json!({"text": t}));
                    }
                    for c in calls {
                        let mut call = json!({"name": c.name, "args": arguments_object(c)});
                        if !c.id.starts_with(GENERATED_ID_PREFIX) {
                            call["id"] = Value::from(c.id.as_str());
                        }
                        parts.push(json!({ "functionCall": call }));
                    }
                    if !parts.is_empty() {
                        add("model", parts);
                    }
                }
                Turn::Result(r) => add("user", vec![dialect::function_response(&r)]),
            }
        }
        let mut body = Map::new();
        body.insert("contents".into(), Value::Array(contents));
        if let Some(system) = &request.system {
            body.insert(
                "systemInstruction".into(),
                json!({"parts": [{"text": system}]}),
            );
        }
        let mut generation = Map::new();
        if let Some(t) = config.temperature {
            generation.insert("temperature".into(), json!(t));
        }
        if let Some(n) = config.token_limit(request) {
            generation.insert("maxOutputTokens".into(), json!(n));
        }
        if !generation.is_empty() {
            body.insert("generationConfig".into(), Value::Object(generation));
        }
        Ok(Value::Object(body))
    }

    /// `toolConfig.functionCallingConfig`: mode `AUTO`, `ANY` or `NONE`; one named tool is `ANY`
    /// with `allowedFunctionNames`.
    fn tool_choice(&self, choice: &ToolChoice) -> (&'static str, Value) {
        let config = match choice {
            ToolChoice::Auto => json!({"mode": "AUTO"}),
            ToolChoice::Required => json!({"mode": "ANY"}),
            ToolChoice::None => json!({"mode": "NONE"}),
            ToolChoice::Tool(name) => {
                json!({"mode": "ANY", "allowedFunctionNames": [name.as_str()]})
            }
        };
        ("toolConfig", json!({ "functionCallingConfig": config }))
    }

    fn parse(&self, value: &Value, catalog: &ToolCatalog) -> Result<ModelResponse, ModelError> {
        if value.pointer("/candidates/0").is_none() && value.get("error").is_none() {
            let reason = value
                .pointer("/promptFeedback/blockReason")
                .and_then(Value::as_str)
                .unwrap_or("no candidates");
            return Err(malformed(
                P,
                format!("the answer has no candidate: {reason}"),
            ));
        }
        let mut s = Box::new(Stream::default());
        s.chunk(value, None)?;
        s.complete = true;
        s.finish(catalog)
    }

    fn stream(&self) -> Box<dyn AnswerStream> {
        Box::new(Stream::default())
    }
}

/// A streamed or unstreamed answer being assembled: text and call parts, in order.
#[derive(Debug, Default)]
pub(crate) struct Stream {
    text: String,
    calls: Vec<Value>,
    /// Every part, adjacent text parts merged.
    parts: Vec<Value>,
    usage: Option<TokenUsage>,
    /// A `finishReason` arrived: the answer is whole.
    complete: bool,
}

impl Stream {
    /// Takes one response chunk.
    fn chunk(&mut self, v: &Value, sink: Option<&DeltaSink>) -> Result<(), ModelError> {
        if let Some(err) = v.get("error") {
            return Err(reported(P, err.get("message")));
        }
        if let Some(u) = usage(v, PROMPT_TOKENS, CANDIDATES_TOKENS) {
            self.usage = Some(u);
        }
        if v.pointer("/candidates/0/finishReason")
            .is_some_and(Value::is_string)
        {
            self.complete = true;
        }
        let parts = match v.pointer("/candidates/0/content/parts") {
            None => return Ok(()),
            Some(Value::Array(p)) => p,
            Some(_) => {
                return Err(malformed(
                    P,
                    "`candidates[0].content.parts` is not an array",
                ));
            }
        };
        for part in parts {
            self.keep(part);
            if let Some(call) = part.get("functionCall") {
                let name = call.get("name").and_then(Value::as_str).unwrap_or_default();
                let id = call.get("id").and_then(Value::as_str).map_or_else(
                    || format!("{GENERATED_ID_PREFIX}{}", self.calls.len()),
                    str::to_owned,
                );
                announce(sink, &id, name);
                self.calls.push(part.clone());
            } else if let Some(text) = part.get("text").and_then(Value::as_str)
                && part.get("thought").and_then(Value::as_bool) != Some(true)
            {
                append_text(&mut self.text, text, sink);
            }
        }
        Ok(())
    }

    /// Keeps a part for the next request; a plain text part is joined to a plain text part
    /// before it.
    fn keep(&mut self, part: &Value) {
        let plain = |p: &Value| {
            p.as_object()
                .is_some_and(|o| o.len() == 1 && o.contains_key("text"))
        };
        if plain(part)
            && let Some(last) = self.parts.last_mut()
            && plain(last)
        {
            let joined = format!(
                "{}{}",
                last["text"].as_str().unwrap_or_default(),
                part["text"].as_str().unwrap_or_default()
            );
            last["text"] = Value::String(joined);
            return;
        }
        self.parts.push(part.clone());
    }
}

impl AnswerStream for Stream {
    /// Gemini has no closing event: the answer is whole when the stream ends.
    fn event(&mut self, event: &Event, sink: Option<&DeltaSink>) -> Result<bool, ModelError> {
        let v = event_json(P, &event.data)?;
        self.chunk(&v, sink).map(|()| false)
    }

    fn finish(self: Box<Self>, _: &ToolCatalog) -> Result<ModelResponse, ModelError> {
        if !self.complete {
            return Err(malformed(P, "the stream ended before a `finishReason`"));
        }
        let calls = dialect::parse_calls(&Value::Array(self.calls));
        let mut response = answer(P, self.text, calls, self.usage)?;
        if !self.parts.is_empty() {
            response
                .metadata
                .insert(PARTS.into(), Value::Array(self.parts));
        }
        Ok(response)
    }
}
