//! OpenAI Responses (`POST {base}/responses`).
//!
//! Streamed answers are typed events: `response.output_text.delta` (text),
//! `response.output_item.added` (a `function_call` item at an `output_index`),
//! `response.function_call_arguments.delta` / `.done` (its arguments),
//! `response.output_item.done`, and `response.completed` with the usage;
//! `response.failed` and `error` when the provider fails.

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

use super::conversation::{Turn, arguments_text, turns};
use super::openai;
use super::sse::SseEvent as Event;
use super::{AnswerStream, ProviderAdapter};
use super::{
    Provider, ProviderConfig, announce, answer, append_text, event_json, malformed, reported,
    text_field, usage,
};
use crate::dialect::{Dialect, DialectError, ParseError, ToolDialect, each_tool};
use crate::step::{DeltaSink, ModelError, ModelRequest, ModelResponse, TokenUsage};
use crate::tools::catalog::{ToolCatalog, ToolChoice};
use crate::tools::result::{ToolCall, ToolCallResult};

const P: Provider = Provider::OPENAI_RESPONSES;

const INPUT_TOKENS: &str = "/usage/input_tokens";
const OUTPUT_TOKENS: &str = "/usage/output_tokens";

/// OpenAI Responses: the provider `openai-responses` and its tool dialect.
pub(crate) struct OpenAiResponses;

impl Dialect {
    /// OpenAI Responses, strict function calling (`provider::openai`).
    pub const OPENAI_RESPONSES: Dialect = Dialect::new(&OpenAiResponses);
}

impl ToolDialect for OpenAiResponses {
    fn name(&self) -> &'static str {
        "openai-responses"
    }

    fn family(&self) -> &'static str {
        "openai"
    }

    fn tool(&self, item: &crate::tools::catalog::CatalogItem) -> Result<Value, DialectError> {
        openai::responses_tool(item).map(|tool| tool.to_value())
    }

    fn tools_json(&self, catalog: &ToolCatalog) -> Result<String, DialectError> {
        each_tool(catalog, openai::responses_tool).map(|tools| tools.to_text())
    }

    fn strict_problems(&self, catalog: &ToolCatalog) -> Vec<DialectError> {
        openai::strict_problems(catalog)
    }

    fn parse_calls(
        &self,
        answer: &Value,
        catalog: &ToolCatalog,
    ) -> Result<Vec<ToolCall>, ParseError> {
        openai::parse_responses_calls(answer, catalog)
    }

    fn render_result(&self, result: &ToolCallResult) -> Value {
        openai::responses_result(result)
    }
}

impl ProviderAdapter for OpenAiResponses {
    fn name(&self) -> &'static str {
        "openai-responses"
    }

    fn default_base_url(&self) -> &'static str {
        openai::BASE_URL
    }

    fn default_key_env(&self) -> &'static str {
        openai::KEY_ENV
    }

    fn dialect(&self) -> Dialect {
        Dialect::OPENAI_RESPONSES
    }

    fn headers(&self, key: Option<&str>) -> Vec<(&'static str, String)> {
        openai::headers(key)
    }

    fn url(&self, base: &str, _model: &str, _stream: bool) -> String {
        format!("{base}/responses")
    }

    fn body(
        &self,
        config: &ProviderConfig,
        request: &ModelRequest,
        stream: bool,
    ) -> Result<Value, ModelError> {
        let mut input = Vec::new();
        for turn in turns(&request.messages) {
            match turn {
                Turn::User(text) => {
                    input.push(json!({"type": "message", "role": "user", "content": text}));
                }
                Turn::Assistant { text, calls, .. } => {
                    if let Some(t) = text {
                        input.push(json!({"type": "message", "role": "assistant", "content": t}));
                    }
                    for c in calls {
                        input.push(
                            json!({"type": "function_call", "call_id": c.id, "name": c.name,
                                          "arguments": arguments_text(c)}),
                        );
                    }
                }
                Turn::Result(r) => input.push(openai::responses_result(&r)),
            }
        }
        let mut body = Map::new();
        body.insert("model".into(), Value::from(config.model.as_str()));
        if let Some(system) = &request.system {
            body.insert("instructions".into(), Value::from(system.as_str()));
        }
        body.insert("input".into(), Value::Array(input));
        if let Some(t) = config.temperature {
            body.insert("temperature".into(), json!(t));
        }
        if let Some(n) = config.token_limit(request) {
            body.insert("max_output_tokens".into(), json!(n));
        }
        body.insert("stream".into(), Value::Bool(stream));
        Ok(Value::Object(body))
    }

    /// `tool_choice`: `"auto"`, `"required"`, `"none"` or `{"type": "function", "name"}`.
    fn tool_choice(&self, choice: &ToolChoice) -> (&'static str, Value) {
        let value = match choice.tool() {
            Some(name) => json!({"type": "function", "name": name}),
            None => Value::from(choice.to_string()),
        };
        ("tool_choice", value)
    }

    fn parse(&self, value: &Value, catalog: &ToolCatalog) -> Result<ModelResponse, ModelError> {
        if let Some(e) = value.get("error").filter(|e| !e.is_null()) {
            return Err(reported(P, e.get("message")));
        }
        let items = value
            .get("output")
            .and_then(Value::as_array)
            .ok_or_else(|| malformed(P, "no `output` array in the answer"))?;
        let text: String = items
            .iter()
            .filter(|i| i.get("type").and_then(Value::as_str) == Some("message"))
            .filter_map(|i| i.get("content").and_then(Value::as_array))
            .flatten()
            .filter(|c| c.get("type").and_then(Value::as_str) == Some("output_text"))
            .filter_map(|c| c.get("text").and_then(Value::as_str))
            .collect();
        let calls = openai::parse_responses_calls(value, catalog);
        answer(P, text, calls, usage(value, INPUT_TOKENS, OUTPUT_TOKENS))
    }

    fn stream(&self) -> Box<dyn AnswerStream> {
        Box::new(Stream::default())
    }
}

#[derive(Debug)]
struct PartialCall {
    call_id: String,
    name: String,
    arguments: String,
}

/// A streamed answer being assembled.
#[derive(Debug, Default)]
pub(crate) struct Stream {
    text: String,
    calls: BTreeMap<u64, PartialCall>,
    usage: Option<TokenUsage>,
    complete: bool,
}

impl AnswerStream for Stream {
    /// `true` at `response.completed`.
    fn event(&mut self, e: &Event, sink: Option<&DeltaSink>) -> Result<bool, ModelError> {
        let v = event_json(P, &e.data)?;
        let kind = v
            .get("type")
            .and_then(Value::as_str)
            .or(e.name.as_deref())
            .unwrap_or_default();
        let index = || {
            v.get("output_index")
                .and_then(Value::as_u64)
                .ok_or_else(|| malformed(P, format!("a `{kind}` event has no `output_index`")))
        };
        match kind {
            "response.output_text.delta" => {
                let piece = v.get("delta").and_then(Value::as_str).unwrap_or_default();
                append_text(&mut self.text, piece, sink);
            }
            "response.output_item.added" => {
                let item = v.get("item").cloned().unwrap_or(Value::Null);
                if item.get("type").and_then(Value::as_str) == Some("function_call") {
                    let field = |k| text_field(P, &item, k, "a `function_call` item");
                    let call = PartialCall {
                        call_id: field("call_id")?,
                        name: field("name")?,
                        arguments: item
                            .get("arguments")
                            .and_then(Value::as_str)
                            .unwrap_or_default()
                            .to_owned(),
                    };
                    announce(sink, &call.call_id, &call.name);
                    self.calls.insert(index()?, call);
                }
            }
            "response.function_call_arguments.delta" => {
                let i = index()?;
                let call = self.calls.get_mut(&i).ok_or_else(|| {
                    malformed(
                        P,
                        format!("arguments for output item {i}, which was never added"),
                    )
                })?;
                call.arguments
                    .push_str(v.get("delta").and_then(Value::as_str).unwrap_or_default());
            }
            "response.function_call_arguments.done" => {
                if let (Some(call), Some(args)) = (
                    self.calls.get_mut(&index()?),
                    v.get("arguments").and_then(Value::as_str),
                ) {
                    call.arguments = args.to_owned();
                }
            }
            "response.completed" => {
                self.usage = v
                    .get("response")
                    .and_then(|r| usage(r, INPUT_TOKENS, OUTPUT_TOKENS));
                self.complete = true;
                return Ok(true);
            }
            "response.failed" | "response.incomplete" => {
                return Err(reported(
                    P,
                    v.pointer("/response/error/message")
                        .or(v.pointer("/response/incomplete_details/reason")),
                ));
            }
            "error" => return Err(reported(P, v.get("message"))),
            _ => {}
        }
        Ok(false)
    }

    fn finish(self: Box<Self>, catalog: &ToolCatalog) -> Result<ModelResponse, ModelError> {
        if !self.complete {
            return Err(malformed(P, "the stream ended before `response.completed`"));
        }
        let items: Vec<Value> = self
            .calls
            .into_values()
            .map(|c| {
                json!({"type": "function_call", "call_id": c.call_id, "name": c.name,
                       "arguments": c.arguments})
            })
            .collect();
        let calls = openai::parse_responses_calls(&Value::Array(items), catalog);
        answer(P, self.text, calls, self.usage)
    }
}
