//! OpenAI Chat Completions (`POST {base}/chat/completions`), the format vLLM, llama.cpp's
//! server, Ollama and LM Studio speak too.
//!
//! Streamed answers are `data:` chunks whose `choices[0].delta` holds text (`content`) and
//! pieces of tool calls (`tool_calls[{index, id?, function: {name?, arguments}}]`, the
//! arguments split anywhere), then a chunk with `usage` (asked for with
//! `stream_options.include_usage`) and `data: [DONE]`.

use serde_json::{Map, Value, json};

use super::conversation::{Turn, arguments_text, turns};
use super::openai;
use super::sse::SseEvent as Event;
use super::{AnswerStream, ProviderAdapter};
use super::{
    Provider, ProviderConfig, announce, answer, append_text, event_json, malformed, reported, usage,
};
use crate::dialect::{Dialect, DialectError, ParseError, ToolDialect, each_tool};
use crate::step::{DeltaSink, ModelError, ModelRequest, ModelResponse, TokenUsage};
use crate::tools::catalog::{ToolCatalog, ToolChoice};
use crate::tools::result::{ToolCall, ToolCallResult};

const P: Provider = Provider::OPENAI_CHAT;

const PROMPT_TOKENS: &str = "/usage/prompt_tokens";
const COMPLETION_TOKENS: &str = "/usage/completion_tokens";

/// OpenAI Chat Completions: the provider `openai` and its tool dialect.
pub(crate) struct OpenAiChat;

impl Dialect {
    /// OpenAI Chat Completions, strict function calling (`provider::openai`).
    pub const OPENAI_CHAT: Dialect = Dialect::new(&OpenAiChat);
}

impl ToolDialect for OpenAiChat {
    fn name(&self) -> &'static str {
        "openai"
    }

    fn tool(&self, item: &crate::tools::catalog::CatalogItem) -> Result<Value, DialectError> {
        openai::chat_tool(item).map(|tool| tool.to_value())
    }

    fn tools_json(&self, catalog: &ToolCatalog) -> Result<String, DialectError> {
        each_tool(catalog, openai::chat_tool).map(|tools| tools.to_text())
    }

    fn strict_problems(&self, catalog: &ToolCatalog) -> Vec<DialectError> {
        openai::strict_problems(catalog)
    }

    fn parse_calls(
        &self,
        answer: &Value,
        catalog: &ToolCatalog,
    ) -> Result<Vec<ToolCall>, ParseError> {
        openai::parse_chat_calls(answer, catalog)
    }

    fn render_result(&self, result: &ToolCallResult) -> Value {
        openai::chat_result(result)
    }
}

impl ProviderAdapter for OpenAiChat {
    fn name(&self) -> &'static str {
        "openai"
    }

    fn default_base_url(&self) -> &'static str {
        openai::BASE_URL
    }

    fn default_key_env(&self) -> &'static str {
        openai::KEY_ENV
    }

    fn dialect(&self) -> Dialect {
        Dialect::OPENAI_CHAT
    }

    fn headers(&self, key: Option<&str>) -> Vec<(&'static str, String)> {
        openai::headers(key)
    }

    fn url(&self, base: &str, _model: &str, _stream: bool) -> String {
        format!("{base}/chat/completions")
    }

    fn body(
        &self,
        config: &ProviderConfig,
        request: &ModelRequest,
        stream: bool,
    ) -> Result<Value, ModelError> {
        let mut messages = Vec::new();
        if let Some(system) = &request.system {
            messages.push(json!({"role": "system", "content": system}));
        }
        // Images of tool results go in a user message after the run of tool messages (a tool
        // message takes only text, and nothing may come between an assistant's calls and their
        // tool messages).
        let mut with_images: Vec<crate::tools::result::ToolCallResult> = Vec::new();
        for turn in turns(&request.messages) {
            if !matches!(turn, Turn::Result(_))
                && let Some(images) = openai::chat_images(&with_images)
            {
                messages.push(images);
                with_images.clear();
            }
            messages.push(match turn {
                Turn::User(text) => json!({"role": "user", "content": text}),
                Turn::Assistant { text, calls, .. } => {
                    // An assistant message with calls and no text says `""`: OpenAI takes it,
                    // and llama-cpp-python's server refuses `null` and a missing `content`.
                    let content = match text {
                        Some(t) => Value::from(t),
                        None if !calls.is_empty() => Value::from(""),
                        None => Value::Null,
                    };
                    let mut m = json!({"role": "assistant", "content": content});
                    if !calls.is_empty() {
                        m["tool_calls"] = calls
                            .iter()
                            .map(|c| {
                                json!({"id": c.id, "type": "function",
                                       "function": {"name": c.name, "arguments": arguments_text(c)}})
                            })
                            .collect();
                    }
                    m
                }
                Turn::Result(r) => {
                    let message = openai::chat_result(&r);
                    if r.content
                        .iter()
                        .any(|p| matches!(p, crate::tools::content::Content::Image(_)))
                    {
                        with_images.push(r);
                    }
                    message
                }
            });
        }
        if let Some(images) = openai::chat_images(&with_images) {
            messages.push(images);
        }
        let mut body = Map::new();
        body.insert("model".into(), Value::from(config.model.as_str()));
        body.insert("messages".into(), Value::Array(messages));
        if let Some(t) = config.temperature {
            body.insert("temperature".into(), json!(t));
        }
        if let Some(n) = config.token_limit(request) {
            // OpenAI's own API wants `max_completion_tokens` (its reasoning models refuse
            // `max_tokens`); the servers that speak its format at other addresses read `max_tokens`.
            let field = if config.base().starts_with("https://api.openai.com") {
                "max_completion_tokens"
            } else {
                "max_tokens"
            };
            body.insert(field.into(), json!(n));
        }
        body.insert("stream".into(), Value::Bool(stream));
        if stream {
            body.insert("stream_options".into(), json!({"include_usage": true}));
        }
        Ok(Value::Object(body))
    }

    /// `tool_choice`: `"auto"`, `"required"`, `"none"` or `{"type": "function", "function": {"name"}}`.
    fn tool_choice(&self, choice: &ToolChoice) -> (&'static str, Value) {
        let value = match choice.tool() {
            Some(name) => json!({"type": "function", "function": {"name": name}}),
            None => Value::from(choice.to_string()),
        };
        ("tool_choice", value)
    }

    fn parse(&self, value: &Value, catalog: &ToolCatalog) -> Result<ModelResponse, ModelError> {
        if let Some(e) = value.get("error") {
            return Err(reported(P, e.get("message")));
        }
        let message = value
            .pointer("/choices/0/message")
            .ok_or_else(|| malformed(P, "no `choices[0].message` in the answer"))?;
        let text = message.get("content").and_then(Value::as_str);
        answer(
            P,
            text.unwrap_or_default().to_owned(),
            openai::parse_chat_calls(value, catalog),
            usage(value, PROMPT_TOKENS, COMPLETION_TOKENS),
        )
    }

    fn stream(&self) -> Box<dyn AnswerStream> {
        Box::new(Stream::default())
    }
}

#[derive(Debug, Default)]
struct PartialCall {
    id: String,
    name: String,
    arguments: String,
    announced: bool,
}

/// A streamed answer being assembled.
#[derive(Debug, Default)]
pub(crate) struct Stream {
    text: String,
    calls: Vec<PartialCall>,
    usage: Option<TokenUsage>,
    /// `[DONE]` or a `finish_reason` arrived: the answer is whole.
    complete: bool,
    /// Events read.
    events: usize,
}

impl AnswerStream for Stream {
    /// `true` at `[DONE]`.
    fn event(&mut self, e: &Event, sink: Option<&DeltaSink>) -> Result<bool, ModelError> {
        self.events += 1;
        if e.data.trim() == "[DONE]" {
            self.complete = true;
            return Ok(true);
        }
        let chunk = event_json(P, &e.data)?;
        if let Some(err) = chunk.get("error") {
            return Err(reported(P, err.get("message")));
        }
        if let Some(u) = usage(&chunk, PROMPT_TOKENS, COMPLETION_TOKENS) {
            self.usage = Some(u);
        }
        if chunk
            .pointer("/choices/0/finish_reason")
            .is_some_and(Value::is_string)
        {
            self.complete = true;
        }
        let Some(delta) = chunk.pointer("/choices/0/delta") else {
            return Ok(false);
        };
        if let Some(text) = delta.get("content").and_then(Value::as_str) {
            append_text(&mut self.text, text, sink);
        }
        let pieces = match delta.get("tool_calls") {
            None | Some(Value::Null) => return Ok(false),
            Some(Value::Array(a)) => a,
            Some(_) => return Err(malformed(P, "`delta.tool_calls` is not an array")),
        };
        for piece in pieces {
            let index = match piece.get("index") {
                Some(i) => i
                    .as_u64()
                    .and_then(|i| usize::try_from(i).ok())
                    .filter(|i| *i < 1024)
                    .ok_or_else(|| {
                        malformed(P, format!("a tool-call delta has the bad `index` {i}"))
                    })?,
                // Some servers leave `index` out: a new id starts a new call, anything else
                // continues the last one.
                None => {
                    let id = piece.get("id").and_then(Value::as_str);
                    match self.calls.last() {
                        Some(last) if id.is_none_or(|id| id == last.id) => self.calls.len() - 1,
                        _ => self.calls.len(),
                    }
                }
            };
            if self.calls.len() <= index {
                self.calls.resize_with(index + 1, PartialCall::default);
            }
            let call = &mut self.calls[index];
            if let Some(id) = piece.get("id").and_then(Value::as_str) {
                call.id = id.to_owned();
            }
            if let Some(name) = piece.pointer("/function/name").and_then(Value::as_str) {
                // OpenAI sends the name once (or in pieces); some servers (llama-cpp-python)
                // repeat the whole name in every chunk. A name that starts with what we have
                // is the whole name again, not a piece to append.
                if name.starts_with(call.name.as_str()) {
                    call.name.clear();
                }
                call.name.push_str(name);
            }
            match piece.pointer("/function/arguments") {
                Some(Value::String(args)) => call.arguments.push_str(args),
                // Some servers send the arguments as an object, whole, in one chunk.
                Some(args @ Value::Object(_)) => call.arguments = args.to_string(),
                _ => {}
            }
            if !call.announced && !call.name.is_empty() {
                call.announced = true;
                announce(sink, &call.id, &call.name);
            }
        }
        Ok(false)
    }

    fn finish(self: Box<Self>, catalog: &ToolCatalog) -> Result<ModelResponse, ModelError> {
        if self.events == 0 {
            // llama-cpp-python answers so when asked to stream with `tool_choice: auto`.
            return Err(malformed(
                P,
                "the stream ended before `[DONE]` or a `finish_reason`: it was empty (some servers cannot stream an automatic tool choice: set the Model's `stream: false`, or a `toolChoice` naming a tool)",
            ));
        }
        if !self.complete {
            return Err(malformed(
                P,
                "the stream ended before `[DONE]` or a `finish_reason`",
            ));
        }
        let calls: Vec<Value> = self
            .calls
            .into_iter()
            .enumerate()
            .filter(|(_, c)| !c.name.is_empty())
            .map(|(i, c)| {
                let id = if c.id.is_empty() {
                    format!("call_{i}")
                } else {
                    c.id
                };
                json!({"id": id, "type": "function",
                       "function": {"name": c.name, "arguments": c.arguments}})
            })
            .collect();
        let calls = openai::parse_chat_calls(&json!({"tool_calls": calls}), catalog);
        answer(P, self.text, calls, self.usage)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request() -> ModelRequest {
        ModelRequest {
            system: None,
            agent_name: "a".into(),
            turn_id: "t".into(),
            step: 0,
            messages: Vec::new(),
            catalog: ToolCatalog::new(),
            tool_choice: None,
            max_tokens: None,
            deltas: None,
            cancellation: tokio_util::sync::CancellationToken::new(),
        }
    }

    #[test]
    fn the_token_limit_is_max_completion_tokens_for_openai_and_max_tokens_elsewhere() {
        let openai = ProviderConfig::new(P, "gpt").max_tokens(100);
        let sent = OpenAiChat
            .body(&openai, &request(), true)
            .unwrap_or_default();
        assert_eq!(sent["max_completion_tokens"], 100);
        assert!(sent.get("max_tokens").is_none());
        let local = openai.base_url("http://127.0.0.1:11434/v1");
        let sent = OpenAiChat
            .body(&local, &request(), false)
            .unwrap_or_default();
        assert_eq!(sent["max_tokens"], 100);
        assert!(sent.get("stream_options").is_none());
    }

    #[test]
    fn images_of_tool_results_follow_the_tool_messages_in_a_user_message() {
        use crate::tools::content::Content;
        use crate::tools::context::Message;
        use crate::tools::result::{ToolCall, ToolCallResult};
        let calls = vec![
            ToolCall::new("c1", "paint__pixel", serde_json::json!({})),
            ToolCall::new("c2", "text__echo", serde_json::json!({})),
        ];
        let pixel = ToolCallResult::ok("c1", "paint__pixel", Value::Null)
            .with_content(vec![Content::image_png(vec![1, 2, 3])]);
        let echo = ToolCallResult::ok("c2", "text__echo", Value::from("hi"));
        let mut req = request();
        req.messages = vec![
            Message::assistant("m1", None, calls),
            crate::step::tool_message(&pixel),
            crate::step::tool_message(&echo),
        ];
        let sent = OpenAiChat
            .body(&ProviderConfig::new(P, "gpt"), &req, false)
            .unwrap_or_default();
        let roles: Vec<&str> = sent["messages"]
            .as_array()
            .map(|m| m.iter().filter_map(|m| m["role"].as_str()).collect())
            .unwrap_or_default();
        assert_eq!(roles, ["assistant", "tool", "tool", "user"]);
        assert_eq!(
            sent["messages"][3]["content"][1]["image_url"]["url"],
            "data:image/png;base64,AQID"
        );
    }

    /// Feeds `stream` one chunk, which it must take.
    fn feed(stream: &mut Stream, data: serde_json::Value) {
        let chunk = Event {
            name: None,
            data: data.to_string(),
        };
        stream.event(&chunk, None).unwrap_or_else(|e| panic!("{e}"));
    }

    #[test]
    fn a_name_repeated_in_every_chunk_is_not_appended_and_pieces_still_join() {
        let mut catalog = ToolCatalog::new();
        catalog.push(crate::tools::catalog::CatalogItem::new(
            crate::tools::name::ToolName::parse("file-system__write")
                .unwrap_or_else(|e| panic!("{e}")),
        ));
        // llama-cpp-python: id and whole name in every chunk, arguments in pieces.
        let mut stream = Box::new(Stream::default());
        for args in [r#"{"path": "a.txt","#, r#" "content": "hi"}"#] {
            let piece = serde_json::json!({"choices": [{"delta": {"tool_calls": [{"index": 0,
                "id": "call_1", "type": "function",
                "function": {"name": "file-system__write", "arguments": args}}]}}]});
            feed(&mut stream, piece);
        }
        let done = serde_json::json!({"choices": [{"delta": {}, "finish_reason": "tool_calls"}]});
        feed(&mut stream, done);
        let answer = stream.finish(&catalog).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(answer.tool_calls[0].name, "file-system__write");
        assert_eq!(answer.tool_calls[0].id, "call_1");
        assert_eq!(
            answer.tool_calls[0].args,
            serde_json::json!({"path": "a.txt", "content": "hi"})
        );
        // A name sent in pieces still joins.
        let mut stream = Box::new(Stream::default());
        for name in ["file-system__", "write"] {
            let piece = serde_json::json!({"choices": [{"delta": {"tool_calls": [{"index": 0,
                "function": {"name": name, "arguments": ""}}]}}]});
            feed(&mut stream, piece);
        }
        let done = serde_json::json!({"choices": [{"delta": {}, "finish_reason": "stop"}]});
        feed(&mut stream, done);
        let answer = stream.finish(&catalog).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(answer.tool_calls[0].name, "file-system__write");
    }

    #[test]
    fn an_assistant_message_with_calls_and_no_text_has_empty_content_not_null() {
        use crate::tools::context::Message;
        use crate::tools::result::ToolCall;
        let mut req = request();
        req.messages = vec![
            Message::assistant(
                "m1",
                None,
                vec![ToolCall::new("c1", "a__b", serde_json::json!({}))],
            ),
            Message::assistant("m2", None, Vec::new()),
        ];
        let sent = OpenAiChat
            .body(&ProviderConfig::new(P, "gpt"), &req, false)
            .unwrap_or_default();
        assert_eq!(sent["messages"][0]["content"], "");
        assert_eq!(sent["messages"][1]["content"], Value::Null);
    }
}
