//! Anthropic Messages (`POST {base}/messages`, `anthropic-version: 2023-06-01`).
//!
//! Streamed answers are named events: `message_start` (input tokens), `content_block_start`
//! (a `text` or `tool_use` block at an `index`), `content_block_delta` (`text_delta`, or
//! `input_json_delta` with a piece of the call's input as `partial_json`),
//! `content_block_stop`, `message_delta` (output tokens), `message_stop`; `ping`s between, and
//! `error` when the provider fails mid-stream.
//!
//! # Tools
//!
//! Anthropic Messages tool use: `tools: [{name, description, input_schema}]`, `tool_use` content
//! blocks in, `tool_result` blocks (with `is_error`) out.
//!
//! `input_schema` is the neutral schema as it is (JSON Schema, `$defs`/`$ref` included). The one
//! rule Anthropic adds is that the top level is an object without `oneOf`/`anyOf`/`allOf`: an
//! enum as the whole input is a [`DialectError`] (wrap it in a struct field).
//!
//! The dialect is `Dialect::ANTHROPIC`; the functions below are its parts.

mod dialect;

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

use super::conversation::{Turn, arguments_object, push, turns};
use super::sse::SseEvent as Event;
use super::{AnswerStream, ProviderAdapter};
use super::{
    DEFAULT_ANTHROPIC_MAX_TOKENS, Provider, ProviderConfig, announce, answer, append_text, count,
    event_json, malformed, reported, text_field, usage,
};
use crate::dialect::arguments_from_str;
use crate::dialect::{Dialect, DialectError, ParseError, ToolDialect, each_tool};
use crate::step::{DeltaSink, ModelError, ModelRequest, ModelResponse, TokenUsage};
use crate::tools::catalog::{CatalogItem, ToolCatalog, ToolChoice};
use crate::tools::result::{ToolCall, ToolCallResult};

pub use self::dialect::{parse_calls, tool_result, tools, user_message};

const P: Provider = Provider::ANTHROPIC;

/// Anthropic Messages: the provider `anthropic` and its tool dialect.
pub(crate) struct Anthropic;

impl Dialect {
    /// Anthropic Messages tool use (`provider::anthropic`).
    pub const ANTHROPIC: Dialect = Dialect::new(&Anthropic);
}

impl ToolDialect for Anthropic {
    fn name(&self) -> &'static str {
        "anthropic"
    }

    fn tool(&self, item: &CatalogItem) -> Result<Value, DialectError> {
        dialect::tool(item).map(|tool| tool.to_value())
    }

    fn tools_json(&self, catalog: &ToolCatalog) -> Result<String, DialectError> {
        each_tool(catalog, dialect::tool).map(|tools| tools.to_text())
    }

    fn parse_calls(&self, answer: &Value, _: &ToolCatalog) -> Result<Vec<ToolCall>, ParseError> {
        dialect::parse_calls(answer)
    }

    fn render_result(&self, result: &ToolCallResult) -> Value {
        dialect::tool_result(result)
    }
}

impl ProviderAdapter for Anthropic {
    fn name(&self) -> &'static str {
        "anthropic"
    }

    fn default_base_url(&self) -> &'static str {
        "https://api.anthropic.com/v1"
    }

    fn default_key_env(&self) -> &'static str {
        "ANTHROPIC_API_KEY"
    }

    fn dialect(&self) -> Dialect {
        Dialect::ANTHROPIC
    }

    fn headers(&self, key: Option<&str>) -> Vec<(&'static str, String)> {
        let mut headers = vec![("anthropic-version", "2023-06-01".to_owned())];
        if let Some(k) = key {
            headers.push(("x-api-key", k.to_owned()));
        }
        headers
    }

    fn url(&self, base: &str, _model: &str, _stream: bool) -> String {
        format!("{base}/messages")
    }

    fn body(
        &self,
        config: &ProviderConfig,
        request: &ModelRequest,
        stream: bool,
    ) -> Result<Value, ModelError> {
        let mut messages = Vec::new();
        let mut add = |role: &str, blocks| push(&mut messages, role, "content", blocks);
        for turn in turns(&request.messages) {
            match turn {
                Turn::User(text) => add("user", vec![json!({"type": "text", "text": text})]),
                Turn::Assistant { text, calls, .. } => {
                    let mut blocks = Vec::new();
                    if let Some(t) = text {
                        blocks.push(json!({"type": "text", "text": t}));
                    }
                    for c in calls {
                        let input = arguments_object(c);
                        blocks.push(
                            json!({"type": "tool_use", "id": c.id, "name": c.name, "input": input}),
                        );
                    }
                    if !blocks.is_empty() {
                        add("assistant", blocks);
                    }
                }
                Turn::Result(r) => add("user", vec![dialect::tool_result(&r)]),
            }
        }
        let max_tokens = config
            .token_limit(request)
            .unwrap_or(DEFAULT_ANTHROPIC_MAX_TOKENS);
        let mut body = Map::new();
        body.insert("model".into(), Value::from(config.model.as_str()));
        body.insert("max_tokens".into(), json!(max_tokens));
        if let Some(system) = &request.system {
            body.insert("system".into(), Value::from(system.as_str()));
        }
        body.insert("messages".into(), Value::Array(messages));
        if let Some(t) = config.temperature {
            body.insert("temperature".into(), json!(t));
        }
        body.insert("stream".into(), Value::Bool(stream));
        Ok(Value::Object(body))
    }

    /// `tool_choice`: `{"type": "auto" | "any" | "none"}` or `{"type": "tool", "name"}`.
    fn tool_choice(&self, choice: &ToolChoice) -> (&'static str, Value) {
        let value = match choice {
            ToolChoice::Auto => json!({"type": "auto"}),
            ToolChoice::Required => json!({"type": "any"}),
            ToolChoice::None => json!({"type": "none"}),
            ToolChoice::Tool(name) => json!({"type": "tool", "name": name.as_str()}),
        };
        ("tool_choice", value)
    }

    fn parse(&self, value: &Value, _: &ToolCatalog) -> Result<ModelResponse, ModelError> {
        if let Some(e) = reported_error(value) {
            return Err(e);
        }
        let blocks = value
            .get("content")
            .and_then(Value::as_array)
            .ok_or_else(|| malformed(P, "no `content` array in the answer"))?;
        let text: String = blocks
            .iter()
            .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
            .filter_map(|b| b.get("text").and_then(Value::as_str))
            .collect();
        let usage = usage(value, "/usage/input_tokens", "/usage/output_tokens");
        answer(P, text, dialect::parse_calls(value), usage)
    }

    fn stream(&self) -> Box<dyn AnswerStream> {
        Box::new(Stream::default())
    }
}

fn reported_error(value: &Value) -> Option<ModelError> {
    (value.get("type").and_then(Value::as_str) == Some("error"))
        .then(|| reported(P, value.pointer("/error/message")))
}

#[derive(Debug)]
enum Block {
    Text(String),
    ToolUse {
        id: String,
        name: String,
        json: String,
    },
}

/// A streamed answer being assembled.
#[derive(Debug, Default)]
pub(crate) struct Stream {
    blocks: BTreeMap<u64, Block>,
    usage: Option<TokenUsage>,
    complete: bool,
}

impl AnswerStream for Stream {
    /// `true` at `message_stop`.
    fn event(&mut self, e: &Event, sink: Option<&DeltaSink>) -> Result<bool, ModelError> {
        let v = event_json(P, &e.data)?;
        if let Some(err) = reported_error(&v) {
            return Err(err);
        }
        let kind = v
            .get("type")
            .and_then(Value::as_str)
            .or(e.name.as_deref())
            .unwrap_or_default();
        let index = || {
            v.get("index")
                .and_then(Value::as_u64)
                .ok_or_else(|| malformed(P, format!("a `{kind}` event has no `index`")))
        };
        match kind {
            "message_start" => {
                let input = count(&v, "/message/usage/input_tokens").unwrap_or(0);
                let output = count(&v, "/message/usage/output_tokens").unwrap_or(0);
                self.usage = Some(TokenUsage {
                    input_tokens: input,
                    output_tokens: output,
                });
            }
            "content_block_start" => {
                let i = index()?;
                let block = v
                    .get("content_block")
                    .ok_or_else(|| malformed(P, "`content_block_start` has no `content_block`"))?;
                match block.get("type").and_then(Value::as_str) {
                    Some("text") => {
                        let text = block
                            .get("text")
                            .and_then(Value::as_str)
                            .unwrap_or_default();
                        self.blocks.insert(i, Block::Text(text.to_owned()));
                    }
                    Some("tool_use") => {
                        let field = |k| text_field(P, block, k, "a `tool_use` block");
                        let (id, name) = (field("id")?, field("name")?);
                        announce(sink, &id, &name);
                        self.blocks.insert(
                            i,
                            Block::ToolUse {
                                id,
                                name,
                                json: String::new(),
                            },
                        );
                    }
                    _ => {}
                }
            }
            "content_block_delta" => {
                let i = index()?;
                let delta = v.get("delta").cloned().unwrap_or(Value::Null);
                match (
                    self.blocks.get_mut(&i),
                    delta.get("type").and_then(Value::as_str),
                ) {
                    (Some(Block::Text(text)), Some("text_delta")) => {
                        let piece = delta
                            .get("text")
                            .and_then(Value::as_str)
                            .unwrap_or_default();
                        append_text(text, piece, sink);
                    }
                    (Some(Block::ToolUse { json, .. }), Some("input_json_delta")) => {
                        let piece = delta
                            .get("partial_json")
                            .and_then(Value::as_str)
                            .unwrap_or_default();
                        json.push_str(piece);
                    }
                    (None, _) => {
                        return Err(malformed(
                            P,
                            format!("a delta for block {i}, which was never started"),
                        ));
                    }
                    _ => {}
                }
            }
            "message_delta" => {
                if let Some(out) = count(&v, "/usage/output_tokens") {
                    let usage = self.usage.get_or_insert_default();
                    usage.output_tokens = out;
                    if let Some(input) = count(&v, "/usage/input_tokens") {
                        usage.input_tokens = input;
                    }
                }
            }
            "message_stop" => {
                self.complete = true;
                return Ok(true);
            }
            _ => {}
        }
        Ok(false)
    }

    fn finish(self: Box<Self>, _: &ToolCatalog) -> Result<ModelResponse, ModelError> {
        if !self.complete {
            return Err(malformed(P, "the stream ended before `message_stop`"));
        }
        let mut text = String::new();
        let mut content = Vec::new();
        for block in self.blocks.into_values() {
            match block {
                Block::Text(t) => text.push_str(&t),
                Block::ToolUse { id, name, json } => {
                    let input = arguments_from_str(&json);
                    content
                        .push(json!({"type": "tool_use", "id": id, "name": name, "input": input}));
                }
            }
        }
        let calls = dialect::parse_calls(&json!({ "content": content }));
        answer(P, text, calls, self.usage)
    }
}
