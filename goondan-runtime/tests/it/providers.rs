//! Model providers against a replay server on 127.0.0.1: each provider's recorded answers
//! (written from its API reference), streamed and not, parallel tool calls, a malformed chunk,
//! retries on 429 and 5xx, the timeout, cancellation, and a whole Turn of the step loop; and
//! a provider of the test's own, registered from outside the crate.
#![cfg(feature = "providers")]

use goondan_test_peers::replay;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use goondan_runtime::bundle::Bundle;
use goondan_runtime::dialect::{Dialect, DialectError, ParseError, ToolDialect, result_text};
use goondan_runtime::prelude::*;
use goondan_runtime::provider::{
    AnswerStream, ApiKey, Provider, ProviderAdapter, ProviderConfig, ProviderModel, RetryPolicy,
    SseEvent, Turn, for_agent, turns,
};
use goondan_runtime::step::{
    AgentInstance, DeltaSink, ModelDelta, ModelError, ModelRequest, ModelResponse, StepError,
    TokenUsage, TurnEnd,
};
use goondan_runtime::tools::catalog::ToolChoice;
use goondan_runtime::{CatalogItem, Message, Model, ToolCatalog};
use replay::{ReplayServer, Reply, data, named};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

const ALL: [Provider; 4] = [
    Provider::OPENAI_CHAT,
    Provider::OPENAI_RESPONSES,
    Provider::ANTHROPIC,
    Provider::GEMINI,
];

/// Adds.
#[tool(name = "calc")]
pub fn add(a: i64, b: i64) -> i64 {
    a + b
}

fn registry() -> Arc<ToolRegistry> {
    Arc::new(ToolRegistry::builder().tool(add::TOOL).build().unwrap())
}

fn catalog() -> ToolCatalog {
    ToolCatalog::build(&registry(), ["calc"]).unwrap()
}

fn user(text: &str) -> Message {
    Message {
        id: "m1".into(),
        role: "user".into(),
        content: Some(text.into()),
        tool_calls: Vec::new(),
        metadata: serde_json::Map::new(),
        created_at: 0,
    }
}

fn request(deltas: Option<DeltaSink>) -> ModelRequest {
    ModelRequest {
        system: Some("You add numbers.".into()),
        agent_name: "adder".into(),
        turn_id: "t1".into(),
        step: 0,
        messages: vec![user("what is 2 + 3 and 10 + 20?")],
        catalog: catalog(),
        tool_choice: None,
        max_tokens: None,
        deltas,
        cancellation: CancellationToken::new(),
    }
}

fn base(p: Provider, server: &ReplayServer) -> String {
    match p {
        Provider::GEMINI => server.url("/v1beta"),
        _ => server.url("/v1"),
    }
}

fn config(p: Provider, server: &ReplayServer) -> ProviderConfig {
    ProviderConfig::new(p, model_name(p))
        .base_url(base(p, server))
        .api_key(ApiKey::new("sk-test-secret"))
        .retry(RetryPolicy {
            max_retries: 2,
            initial_backoff: Duration::from_millis(10),
            ..RetryPolicy::default()
        })
        .timeout(Duration::from_secs(5))
}

fn model_name(p: Provider) -> &'static str {
    match p {
        Provider::OPENAI_CHAT | Provider::OPENAI_RESPONSES => "gpt-test",
        Provider::ANTHROPIC => "claude-test",
        Provider::GEMINI => "gemini-test",
        other => unreachable!("not a built-in provider: {other}"),
    }
}

fn expected_path(p: Provider, stream: bool) -> &'static str {
    match (p, stream) {
        (Provider::OPENAI_CHAT, _) => "/v1/chat/completions",
        (Provider::OPENAI_RESPONSES, _) => "/v1/responses",
        (Provider::ANTHROPIC, _) => "/v1/messages",
        (Provider::GEMINI, true) => "/v1beta/models/gemini-test:streamGenerateContent?alt=sse",
        (Provider::GEMINI, false) => "/v1beta/models/gemini-test:generateContent",
        (other, _) => unreachable!("not a built-in provider: {other}"),
    }
}

// ---- recorded answers, from each provider's API reference ----

fn chat_chunk(delta: &Value, finish: Option<&str>) -> String {
    data(
        &json!({"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1,
        "model": "gpt-test", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}),
    )
}

fn chat_usage(input: u64, output: u64) -> String {
    data(
        &json!({"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1,
        "model": "gpt-test", "choices": [],
        "usage": {"prompt_tokens": input, "completion_tokens": output, "total_tokens": input + output}}),
    )
}

fn resp_event(v: Value) -> String {
    let name = v["type"].as_str().unwrap().to_owned();
    named(&name, &v)
}

fn resp_completed(input: u64, output: u64) -> String {
    resp_event(
        json!({"type": "response.completed", "sequence_number": 99, "response": {
        "id": "resp_1", "object": "response", "status": "completed", "output": [],
        "usage": {"input_tokens": input, "output_tokens": output, "total_tokens": input + output}}}),
    )
}

fn anthropic_event(v: Value) -> String {
    let name = v["type"].as_str().unwrap().to_owned();
    named(&name, &v)
}

fn anthropic_start(input: u64) -> String {
    anthropic_event(
        json!({"type": "message_start", "message": {"id": "msg_1", "type": "message",
        "role": "assistant", "content": [], "model": "claude-test", "stop_reason": null,
        "stop_sequence": null, "usage": {"input_tokens": input, "output_tokens": 1}}}),
    )
}

fn anthropic_end(reason: &str, output: u64) -> Vec<String> {
    vec![
        anthropic_event(json!({"type": "message_delta",
            "delta": {"stop_reason": reason, "stop_sequence": null}, "usage": {"output_tokens": output}})),
        anthropic_event(json!({"type": "message_stop"})),
    ]
}

fn gemini_chunk(parts: Value, finish: Option<&str>, usage: Option<(u64, u64)>) -> String {
    let mut v = json!({"candidates": [{"content": {"parts": parts, "role": "model"}, "index": 0}],
        "modelVersion": "gemini-test"});
    if let Some(f) = finish {
        v["candidates"][0]["finishReason"] = json!(f);
    }
    if let Some((i, o)) = usage {
        v["usageMetadata"] =
            json!({"promptTokenCount": i, "candidatesTokenCount": o, "totalTokenCount": i + o});
    }
    data(&v)
}

/// A streamed text answer, "Hello!", in pieces; usage 12 in, 3 out.
fn text_stream(p: Provider, text: &[&str]) -> Reply {
    let events: Vec<String> = match p {
        Provider::OPENAI_CHAT => {
            let mut e = vec![chat_chunk(
                &json!({"role": "assistant", "content": ""}),
                None,
            )];
            e.extend(
                text.iter()
                    .map(|t| chat_chunk(&json!({"content": t}), None)),
            );
            e.push(chat_chunk(&json!({}), Some("stop")));
            e.push(chat_usage(12, 3));
            e.push("data: [DONE]".into());
            e
        }
        Provider::OPENAI_RESPONSES => {
            let mut e = vec![
                resp_event(
                    json!({"type": "response.created", "sequence_number": 0, "response": {
                    "id": "resp_1", "object": "response", "status": "in_progress", "output": []}}),
                ),
                resp_event(
                    json!({"type": "response.output_item.added", "sequence_number": 1,
                    "output_index": 0, "item": {"id": "msg_1", "type": "message",
                    "status": "in_progress", "role": "assistant", "content": []}}),
                ),
                resp_event(
                    json!({"type": "response.content_part.added", "sequence_number": 2,
                    "item_id": "msg_1", "output_index": 0, "content_index": 0,
                    "part": {"type": "output_text", "text": "", "annotations": []}}),
                ),
            ];
            e.extend(text.iter().map(|t| {
                resp_event(
                    json!({"type": "response.output_text.delta", "sequence_number": 3,
                    "item_id": "msg_1", "output_index": 0, "content_index": 0, "delta": t}),
                )
            }));
            e.push(resp_event(
                json!({"type": "response.output_text.done", "sequence_number": 9,
                "item_id": "msg_1", "output_index": 0, "content_index": 0, "text": text.concat()}),
            ));
            e.push(resp_completed(12, 3));
            e
        }
        Provider::ANTHROPIC => {
            let mut e = vec![
                anthropic_start(12),
                anthropic_event(json!({"type": "content_block_start", "index": 0,
                    "content_block": {"type": "text", "text": ""}})),
                anthropic_event(json!({"type": "ping"})),
            ];
            e.extend(text.iter().map(|t| {
                anthropic_event(json!({"type": "content_block_delta", "index": 0,
                    "delta": {"type": "text_delta", "text": t}}))
            }));
            e.push(anthropic_event(
                json!({"type": "content_block_stop", "index": 0}),
            ));
            e.extend(anthropic_end("end_turn", 3));
            e
        }
        Provider::GEMINI => {
            let n = text.len();
            text.iter()
                .enumerate()
                .map(|(i, t)| {
                    let last = i + 1 == n;
                    gemini_chunk(
                        json!([{"text": t}]),
                        last.then_some("STOP"),
                        Some((12, if last { 3 } else { 1 })),
                    )
                })
                .collect()
        }
        other => unreachable!("not a built-in provider: {other}"),
    };
    Reply::sse(&events)
}

/// Two calls of `calc__add` in one answer, their arguments streamed in pieces: (2, 3) and
/// (10, 20); usage 20 in, 9 out.
fn calls_stream(p: Provider) -> Reply {
    let events: Vec<String> = match p {
        Provider::OPENAI_CHAT => vec![
            chat_chunk(
                &json!({"role": "assistant", "content": null, "tool_calls": [{"index": 0,
                "id": "call_a", "type": "function", "function": {"name": "calc__add", "arguments": ""}}]}),
                None,
            ),
            chat_chunk(
                &json!({"tool_calls": [{"index": 0, "function": {"arguments": "{\"a\":"}}]}),
                None,
            ),
            chat_chunk(
                &json!({"tool_calls": [{"index": 0, "function": {"arguments": " 2, \"b\": 3}"}}]}),
                None,
            ),
            chat_chunk(
                &json!({"tool_calls": [{"index": 1, "id": "call_b", "type": "function",
                "function": {"name": "calc__add", "arguments": ""}}]}),
                None,
            ),
            chat_chunk(
                &json!({"tool_calls": [{"index": 1, "function": {"arguments": "{\"a\": 10, "}}]}),
                None,
            ),
            chat_chunk(
                &json!({"tool_calls": [{"index": 1, "function": {"arguments": "\"b\": 20}"}}]}),
                None,
            ),
            chat_chunk(&json!({}), Some("tool_calls")),
            chat_usage(20, 9),
            "data: [DONE]".into(),
        ],
        Provider::OPENAI_RESPONSES => {
            let mut e = Vec::new();
            for (i, (id, args)) in [
                ("call_a", ["{\"a\":", " 2, \"b\": 3}"]),
                ("call_b", ["{\"a\": 10, ", "\"b\": 20}"]),
            ]
            .into_iter()
            .enumerate()
            {
                let item = format!("fc_{i}");
                e.push(resp_event(
                    json!({"type": "response.output_item.added", "sequence_number": 1,
                    "output_index": i, "item": {"id": item, "type": "function_call",
                    "status": "in_progress", "arguments": "", "call_id": id, "name": "calc__add"}}),
                ));
                for piece in args {
                    e.push(resp_event(
                        json!({"type": "response.function_call_arguments.delta",
                        "sequence_number": 2, "item_id": item, "output_index": i, "delta": piece}),
                    ));
                }
                e.push(resp_event(json!({"type": "response.function_call_arguments.done",
                    "sequence_number": 3, "item_id": item, "output_index": i, "arguments": args.concat()})));
                e.push(resp_event(json!({"type": "response.output_item.done", "sequence_number": 4,
                    "output_index": i, "item": {"id": item, "type": "function_call", "status": "completed",
                    "arguments": args.concat(), "call_id": id, "name": "calc__add"}})));
            }
            e.push(resp_completed(20, 9));
            e
        }
        Provider::ANTHROPIC => {
            let mut e = vec![anthropic_start(20)];
            for (i, (id, args)) in [
                ("toolu_a", ["{\"a\":", " 2, \"b\": 3}"]),
                ("toolu_b", ["{\"a\": 10, ", "\"b\": 20}"]),
            ]
            .into_iter()
            .enumerate()
            {
                e.push(anthropic_event(json!({"type": "content_block_start", "index": i,
                    "content_block": {"type": "tool_use", "id": id, "name": "calc__add", "input": {}}})));
                for piece in args {
                    e.push(anthropic_event(
                        json!({"type": "content_block_delta", "index": i,
                        "delta": {"type": "input_json_delta", "partial_json": piece}}),
                    ));
                }
                e.push(anthropic_event(
                    json!({"type": "content_block_stop", "index": i}),
                ));
            }
            e.extend(anthropic_end("tool_use", 9));
            e
        }
        Provider::GEMINI => vec![gemini_chunk(
            json!([{"functionCall": {"name": "calc__add", "args": {"a": 2, "b": 3}}},
                   {"functionCall": {"name": "calc__add", "args": {"a": 10, "b": 20}}}]),
            Some("STOP"),
            Some((20, 9)),
        )],
        other => unreachable!("not a built-in provider: {other}"),
    };
    Reply::sse(&events)
}

/// The same two calls, unstreamed.
fn calls_json(p: Provider) -> Reply {
    let body = match p {
        Provider::OPENAI_CHAT => {
            json!({"id": "chatcmpl-1", "object": "chat.completion", "created": 1,
            "model": "gpt-test", "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
                "role": "assistant", "content": null, "tool_calls": [
                {"id": "call_a", "type": "function", "function": {"name": "calc__add", "arguments": "{\"a\": 2, \"b\": 3}"}},
                {"id": "call_b", "type": "function", "function": {"name": "calc__add", "arguments": "{\"a\": 10, \"b\": 20}"}}]}}],
            "usage": {"prompt_tokens": 20, "completion_tokens": 9, "total_tokens": 29}})
        }
        Provider::OPENAI_RESPONSES => {
            json!({"id": "resp_1", "object": "response", "status": "completed",
            "error": null, "output": [
            {"type": "function_call", "id": "fc_0", "call_id": "call_a", "name": "calc__add",
             "arguments": "{\"a\": 2, \"b\": 3}", "status": "completed"},
            {"type": "function_call", "id": "fc_1", "call_id": "call_b", "name": "calc__add",
             "arguments": "{\"a\": 10, \"b\": 20}", "status": "completed"}],
            "usage": {"input_tokens": 20, "output_tokens": 9, "total_tokens": 29}})
        }
        Provider::ANTHROPIC => json!({"id": "msg_1", "type": "message", "role": "assistant",
            "model": "claude-test", "stop_reason": "tool_use", "stop_sequence": null, "content": [
            {"type": "tool_use", "id": "toolu_a", "name": "calc__add", "input": {"a": 2, "b": 3}},
            {"type": "tool_use", "id": "toolu_b", "name": "calc__add", "input": {"a": 10, "b": 20}}],
            "usage": {"input_tokens": 20, "output_tokens": 9}}),
        Provider::GEMINI => json!({"candidates": [{"content": {"role": "model", "parts": [
            {"functionCall": {"name": "calc__add", "args": {"a": 2, "b": 3}}},
            {"functionCall": {"name": "calc__add", "args": {"a": 10, "b": 20}}}]},
            "finishReason": "STOP", "index": 0}],
            "usageMetadata": {"promptTokenCount": 20, "candidatesTokenCount": 9, "totalTokenCount": 29}}),
        other => unreachable!("not a built-in provider: {other}"),
    };
    Reply::json(200, &body)
}

fn call_ids(p: Provider) -> [&'static str; 2] {
    match p {
        Provider::OPENAI_CHAT | Provider::OPENAI_RESPONSES => ["call_a", "call_b"],
        Provider::ANTHROPIC => ["toolu_a", "toolu_b"],
        Provider::GEMINI => ["gemini-call-0", "gemini-call-1"],
        other => unreachable!("not a built-in provider: {other}"),
    }
}

/// A stream whose second event is cut off mid-JSON.
fn malformed_stream(p: Provider) -> Reply {
    let first = match p {
        Provider::OPENAI_CHAT => chat_chunk(&json!({"role": "assistant", "content": "Hel"}), None),
        Provider::OPENAI_RESPONSES => resp_event(json!({"type": "response.output_text.delta",
            "sequence_number": 1, "item_id": "msg_1", "output_index": 0, "content_index": 0, "delta": "Hel"})),
        Provider::ANTHROPIC => anthropic_start(3),
        Provider::GEMINI => gemini_chunk(json!([{"text": "Hel"}]), None, None),
        other => unreachable!("not a built-in provider: {other}"),
    };
    Reply::sse(&[
        first,
        "data: {\"choices\": [{\"index\": 0, \"delta\": {\"content\": \"lo".into(),
    ])
}

fn assert_two_calls(p: Provider, response: &ModelResponse) {
    let ids = call_ids(p);
    assert_eq!(response.tool_calls.len(), 2, "{p}: {response:?}");
    assert_eq!(response.tool_calls[0].id, ids[0], "{p}");
    assert_eq!(response.tool_calls[1].id, ids[1], "{p}");
    assert!(
        response.tool_calls.iter().all(|c| c.name == "calc__add"),
        "{p}"
    );
    assert_eq!(response.tool_calls[0].args, json!({"a": 2, "b": 3}), "{p}");
    assert_eq!(
        response.tool_calls[1].args,
        json!({"a": 10, "b": 20}),
        "{p}"
    );
    assert_eq!(
        response.usage,
        Some(TokenUsage {
            input_tokens: 20,
            output_tokens: 9
        }),
        "{p}"
    );
}

/// The system prompt, the user text and the tool catalog, where each provider takes them.
fn assert_request_shape(p: Provider, body: &Value) {
    match p {
        Provider::OPENAI_CHAT => {
            assert_eq!(body["model"], "gpt-test");
            assert_eq!(
                body["messages"][0],
                json!({"role": "system", "content": "You add numbers."})
            );
            assert_eq!(body["messages"][1]["role"], "user");
            assert_eq!(body["tools"][0]["function"]["name"], "calc__add");
            assert_eq!(body["tools"][0]["function"]["strict"], true);
        }
        Provider::OPENAI_RESPONSES => {
            assert_eq!(body["instructions"], "You add numbers.");
            assert_eq!(body["input"][0]["role"], "user");
            assert_eq!(body["tools"][0]["name"], "calc__add");
        }
        Provider::ANTHROPIC => {
            assert_eq!(body["system"], "You add numbers.");
            assert_eq!(body["max_tokens"], 4096);
            assert_eq!(
                body["messages"][0]["content"][0]["text"],
                "what is 2 + 3 and 10 + 20?"
            );
            assert_eq!(body["tools"][0]["name"], "calc__add");
            assert!(body["tools"][0]["input_schema"].is_object());
        }
        Provider::GEMINI => {
            assert_eq!(
                body["systemInstruction"]["parts"][0]["text"],
                "You add numbers."
            );
            assert_eq!(body["contents"][0]["role"], "user");
            assert_eq!(
                body["tools"][0]["functionDeclarations"][0]["name"],
                "calc__add"
            );
        }
        other => unreachable!("not a built-in provider: {other}"),
    }
}

fn assert_key_sent(p: Provider, seen: &replay::Recorded) {
    let (name, value) = match p {
        Provider::OPENAI_CHAT | Provider::OPENAI_RESPONSES => {
            ("authorization", "Bearer sk-test-secret")
        }
        Provider::ANTHROPIC => ("x-api-key", "sk-test-secret"),
        Provider::GEMINI => ("x-goog-api-key", "sk-test-secret"),
        other => unreachable!("not a built-in provider: {other}"),
    };
    assert_eq!(seen.header(name), Some(value), "{p}");
    if p == Provider::ANTHROPIC {
        assert_eq!(seen.header("anthropic-version"), Some("2023-06-01"));
    }
}

// ---- tests ----

#[tokio::test]
async fn every_provider_streams_text_deltas_to_the_sink_and_reports_usage() {
    for p in ALL {
        let server = ReplayServer::start([text_stream(p, &["Hel", "lo", "!"])]).await;
        let model = ProviderModel::new(config(p, &server)).unwrap();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let sink = DeltaSink::new({
            let seen = Arc::clone(&seen);
            move |d: &ModelDelta| seen.lock().unwrap().push(d.clone())
        });
        let response = model.respond(&request(Some(sink))).await.unwrap();
        assert_eq!(response.content.as_deref(), Some("Hello!"), "{p}");
        assert!(response.tool_calls.is_empty(), "{p}");
        assert_eq!(
            response.usage,
            Some(TokenUsage {
                input_tokens: 12,
                output_tokens: 3
            }),
            "{p}"
        );
        let texts: Vec<ModelDelta> = ["Hel", "lo", "!"]
            .iter()
            .map(|t| ModelDelta::Text((*t).into()))
            .collect();
        assert_eq!(*seen.lock().unwrap(), texts, "{p}");
        let requests = server.requests();
        assert_eq!(requests.len(), 1, "{p}");
        assert_eq!(requests[0].path, expected_path(p, true), "{p}");
        assert_request_shape(p, &requests[0].body);
        assert_key_sent(p, &requests[0]);
        if p != Provider::GEMINI {
            assert_eq!(requests[0].body["stream"], true, "{p}");
        }
    }
}

#[tokio::test]
async fn every_provider_assembles_parallel_tool_calls_from_streamed_argument_pieces() {
    for p in ALL {
        // Cut the stream every 7 bytes: events and JSON split across network reads.
        let server = ReplayServer::start([calls_stream(p).split_every(7)]).await;
        let model = ProviderModel::new(config(p, &server)).unwrap();
        let announced = Arc::new(Mutex::new(Vec::new()));
        let sink = DeltaSink::new({
            let announced = Arc::clone(&announced);
            move |d: &ModelDelta| {
                if let ModelDelta::ToolCall { id, .. } = d {
                    announced.lock().unwrap().push(id.clone());
                }
            }
        });
        let response = model.respond(&request(Some(sink))).await.unwrap();
        assert_two_calls(p, &response);
        assert_eq!(*announced.lock().unwrap(), call_ids(p), "{p}");
    }
}

#[tokio::test]
async fn chat_tool_call_deltas_without_an_index_are_assembled_by_their_ids() {
    // Some servers that speak Chat Completions send each call whole, without `index`.
    let reply = Reply::sse(&[
        chat_chunk(
            &json!({"role": "assistant", "tool_calls": [{"id": "call_a", "type": "function",
            "function": {"name": "calc__add", "arguments": "{\"a\": 2, \"b\": 3}"}}]}),
            None,
        ),
        chat_chunk(
            &json!({"tool_calls": [{"id": "call_b", "type": "function",
            "function": {"name": "calc__add", "arguments": "{\"a\": 10, "}}]}),
            None,
        ),
        chat_chunk(
            &json!({"tool_calls": [{"function": {"arguments": "\"b\": 20}"}}]}),
            None,
        ),
        chat_chunk(&json!({}), Some("tool_calls")),
        chat_usage(20, 9),
        "data: [DONE]".into(),
    ]);
    let server = ReplayServer::start([reply]).await;
    let model = ProviderModel::new(config(Provider::OPENAI_CHAT, &server)).unwrap();
    let response = model.respond(&request(None)).await.unwrap();
    assert_two_calls(Provider::OPENAI_CHAT, &response);
}

/// llama-cpp-python's server (0.3.36) repeats the call's `id` and `name` in every chunk.
#[tokio::test]
async fn chat_tool_call_deltas_repeating_their_id_and_name_are_not_appended() {
    let piece = |index: u64, id: &str, args: &str| {
        chat_chunk(
            &json!({"tool_calls": [{"index": index, "id": id, "type": "function",
            "function": {"name": "calc__add", "arguments": args}}]}),
            None,
        )
    };
    let reply = Reply::sse(&[
        piece(0, "call_a", "{\"a\":"),
        piece(0, "call_a", " 2, \"b\": 3}"),
        piece(1, "call_b", "{\"a\": 10, "),
        piece(1, "call_b", "\"b\": 20}"),
        chat_chunk(&json!({}), Some("tool_calls")),
        chat_usage(20, 9),
        "data: [DONE]".into(),
    ]);
    let server = ReplayServer::start([reply]).await;
    let model = ProviderModel::new(config(Provider::OPENAI_CHAT, &server)).unwrap();
    let response = model.respond(&request(None)).await.unwrap();
    assert_two_calls(Provider::OPENAI_CHAT, &response);
}

#[tokio::test]
async fn every_provider_reads_parallel_tool_calls_from_an_unstreamed_answer() {
    for p in ALL {
        let server = ReplayServer::start([calls_json(p)]).await;
        let model = ProviderModel::new(config(p, &server).stream(false)).unwrap();
        let response = model.respond(&request(None)).await.unwrap();
        assert_two_calls(p, &response);
        let requests = server.requests();
        assert_eq!(requests[0].path, expected_path(p, false), "{p}");
        assert_request_shape(p, &requests[0].body);
        if p != Provider::GEMINI {
            assert_eq!(requests[0].body["stream"], false, "{p}");
        }
    }
}

#[tokio::test]
async fn a_malformed_chunk_is_a_structured_error_for_every_provider() {
    for p in ALL {
        let server = ReplayServer::start([malformed_stream(p)]).await;
        let model = ProviderModel::new(config(p, &server)).unwrap();
        let err = model.respond(&request(None)).await.unwrap_err();
        match &err {
            ModelError::Malformed { provider, message } => {
                assert_eq!(*provider, p.as_str(), "{p}");
                assert!(message.contains("not JSON"), "{p}: {message}");
            }
            other => panic!("{p}: expected Malformed, got {other:?}"),
        }
        // Never retried: a stream that began is not sent again.
        assert_eq!(server.requests().len(), 1, "{p}");
    }
}

#[tokio::test]
async fn a_stream_cut_before_its_closing_event_is_an_error_for_every_provider() {
    for p in ALL {
        // The first two events of three-piece answers: no closing event.
        let mut reply = text_stream(p, &["Hel", "lo", "!"]);
        reply.pieces.truncate(2);
        let server = ReplayServer::start([reply]).await;
        let model = ProviderModel::new(config(p, &server)).unwrap();
        let err = model.respond(&request(None)).await.unwrap_err();
        assert!(
            matches!(&err, ModelError::Malformed { message, .. } if message.contains("the stream ended before")),
            "{p}: {err:?}"
        );
    }
}

#[tokio::test]
async fn a_429_with_retry_after_is_waited_for_then_the_answer_comes() {
    let errors = [
        (
            Provider::OPENAI_CHAT,
            json!({"error": {"message": "Rate limit reached for requests",
            "type": "requests", "param": null, "code": "rate_limit_exceeded"}}),
        ),
        (
            Provider::ANTHROPIC,
            json!({"type": "error", "error": {"type": "rate_limit_error",
            "message": "Number of request tokens has exceeded your per-minute rate limit"}}),
        ),
        (
            Provider::GEMINI,
            json!({"error": {"code": 429, "message": "Resource has been exhausted",
            "status": "RESOURCE_EXHAUSTED"}}),
        ),
    ];
    for (p, body) in errors {
        let server = ReplayServer::start([
            Reply::json(429, &body).header("retry-after", "1"),
            text_stream(p, &["ok"]),
        ])
        .await;
        let model = ProviderModel::new(config(p, &server)).unwrap();
        let started = Instant::now();
        let response = model.respond(&request(None)).await.unwrap();
        assert_eq!(response.content.as_deref(), Some("ok"), "{p}");
        assert!(
            started.elapsed() >= Duration::from_millis(950),
            "{p}: retry-after 1 s was not honoured ({:?})",
            started.elapsed()
        );
        assert_eq!(server.requests().len(), 2, "{p}");
    }
}

#[tokio::test]
async fn a_500_is_retried_until_the_policy_gives_up() {
    let body = json!({"error": {"message": "The server had an error while processing your request.",
        "type": "server_error"}});
    let server = ReplayServer::start(vec![Reply::json(500, &body); 5]).await;
    let model = ProviderModel::new(config(Provider::OPENAI_RESPONSES, &server)).unwrap();
    let err = model.respond(&request(None)).await.unwrap_err();
    assert_eq!(
        err,
        ModelError::Status {
            provider: "openai-responses",
            status: 500,
            message: "The server had an error while processing your request.".into(),
            attempts: 3,
        }
    );
    assert_eq!(server.requests().len(), 3, "max_retries 2: three attempts");
}

#[tokio::test]
async fn a_400_is_not_retried() {
    let body = json!({"type": "error", "error": {"type": "invalid_request_error",
        "message": "max_tokens: field required"}});
    let server = ReplayServer::start([
        Reply::json(400, &body),
        text_stream(Provider::ANTHROPIC, &["x"]),
    ])
    .await;
    let model = ProviderModel::new(config(Provider::ANTHROPIC, &server)).unwrap();
    let err = model.respond(&request(None)).await.unwrap_err();
    assert!(
        matches!(&err, ModelError::Status { status: 400, attempts: 1, message, .. } if message == "max_tokens: field required"),
        "{err:?}"
    );
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn a_slow_answer_hits_the_timeout() {
    let server = ReplayServer::start([
        text_stream(Provider::OPENAI_CHAT, &["late"]).delay(Duration::from_secs(3)),
        text_stream(Provider::OPENAI_CHAT, &["late"]).delay(Duration::from_secs(3)),
    ])
    .await;
    let config = config(Provider::OPENAI_CHAT, &server)
        .timeout(Duration::from_millis(200))
        .retry(RetryPolicy {
            max_retries: 1,
            initial_backoff: Duration::from_millis(10),
            ..RetryPolicy::default()
        });
    let model = ProviderModel::new(config).unwrap();
    let started = Instant::now();
    let err = model.respond(&request(None)).await.unwrap_err();
    assert_eq!(
        err,
        ModelError::Timeout {
            provider: "openai",
            after: Duration::from_millis(200),
            attempts: 2,
        }
    );
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn a_stream_that_stalls_mid_answer_hits_the_timeout() {
    let mut reply = text_stream(Provider::ANTHROPIC, &["Hel", "lo"]);
    reply.pieces[4].0 = Duration::from_secs(3);
    let server = ReplayServer::start([reply]).await;
    let model = ProviderModel::new(
        config(Provider::ANTHROPIC, &server).timeout(Duration::from_millis(300)),
    )
    .unwrap();
    let err = model.respond(&request(None)).await.unwrap_err();
    assert!(
        matches!(
            err,
            ModelError::Timeout {
                provider: "anthropic",
                ..
            }
        ),
        "{err:?}"
    );
}

#[tokio::test]
async fn a_cancelled_request_stops_at_once() {
    let server = ReplayServer::start([
        text_stream(Provider::GEMINI, &["late"]).delay(Duration::from_secs(5))
    ])
    .await;
    let model = ProviderModel::new(config(Provider::GEMINI, &server)).unwrap();
    let req = request(None);
    let token = req.cancellation.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(100)).await;
        token.cancel();
    });
    let started = Instant::now();
    let err = model.respond(&req).await.unwrap_err();
    assert_eq!(err, ModelError::Cancelled);
    assert!(started.elapsed() < Duration::from_secs(2));
}

#[tokio::test]
async fn a_cancelled_turn_stops_its_model_request_and_the_next_turn_runs() {
    let server = ReplayServer::start([
        text_stream(Provider::OPENAI_CHAT, &["too late"]).delay(Duration::from_secs(5)),
        text_stream(Provider::OPENAI_CHAT, &["second"]),
    ])
    .await;
    let model = Arc::new(ProviderModel::new(config(Provider::OPENAI_CHAT, &server)).unwrap());
    let state = tempfile::tempdir().unwrap();
    let agent = AgentInstance::builder("adder", registry(), model)
        .tools(["calc"])
        .state_dir(state.path())
        .build()
        .unwrap();
    let token = CancellationToken::new();
    tokio::spawn({
        let token = token.clone();
        async move {
            tokio::time::sleep(Duration::from_millis(100)).await;
            token.cancel();
        }
    });
    let started = Instant::now();
    let err = agent
        .run_turn_cancellable("first", token)
        .await
        .unwrap_err();
    assert!(
        matches!(err, StepError::Model(ModelError::Cancelled)),
        "{err:?}"
    );
    assert!(started.elapsed() < Duration::from_secs(2));
    let turn = agent
        .run_turn_cancellable("second", CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(turn.answer(), Some("second"));
}

#[tokio::test]
async fn the_api_key_is_never_in_debug_output() {
    let config = ProviderConfig::new(Provider::OPENAI_CHAT, "gpt-test")
        .api_key(ApiKey::new("sk-live-very-secret"));
    let model = ProviderModel::new(config).unwrap();
    let shown = format!("{model:?}");
    assert!(!shown.contains("sk-live-very-secret"), "{shown}");
    assert!(shown.contains("ApiKey(***)"), "{shown}");
}

#[tokio::test]
async fn an_unset_key_variable_is_a_config_error_naming_the_variable() {
    let config = ProviderConfig::new(Provider::ANTHROPIC, "claude-test")
        .api_key_env("GOONDAN_TEST_KEY_THAT_IS_NOT_SET");
    let err = ProviderModel::new(config).unwrap_err();
    assert!(
        matches!(&err, ModelError::Config { message } if message.contains("GOONDAN_TEST_KEY_THAT_IS_NOT_SET")),
        "{err:?}"
    );
}

/// Step 1 asks for `calc__add(2, 3)`, step 2 answers with text, for one provider.
fn turn_replies(p: Provider) -> [Reply; 2] {
    let call: Vec<String> = match p {
        Provider::OPENAI_CHAT => vec![
            chat_chunk(
                &json!({"role": "assistant", "content": null, "tool_calls": [{"index": 0,
                "id": "call_a", "type": "function", "function": {"name": "calc__add", "arguments": "{\"a\": 2, "}}]}),
                None,
            ),
            chat_chunk(
                &json!({"tool_calls": [{"index": 0, "function": {"arguments": "\"b\": 3}"}}]}),
                None,
            ),
            chat_chunk(&json!({}), Some("tool_calls")),
            "data: [DONE]".into(),
        ],
        Provider::OPENAI_RESPONSES => vec![
            resp_event(
                json!({"type": "response.output_item.added", "sequence_number": 1, "output_index": 0,
                "item": {"id": "fc_0", "type": "function_call", "status": "in_progress", "arguments": "",
                "call_id": "call_a", "name": "calc__add"}}),
            ),
            resp_event(
                json!({"type": "response.function_call_arguments.delta", "sequence_number": 2,
                "item_id": "fc_0", "output_index": 0, "delta": "{\"a\": 2, \"b\": 3}"}),
            ),
            resp_completed(10, 5),
        ],
        Provider::ANTHROPIC => {
            let mut e = vec![
                anthropic_start(10),
                anthropic_event(json!({"type": "content_block_start", "index": 0,
                    "content_block": {"type": "text", "text": ""}})),
                anthropic_event(json!({"type": "content_block_delta", "index": 0,
                    "delta": {"type": "text_delta", "text": "Let me add."}})),
                anthropic_event(json!({"type": "content_block_stop", "index": 0})),
                anthropic_event(json!({"type": "content_block_start", "index": 1,
                    "content_block": {"type": "tool_use", "id": "toolu_a", "name": "calc__add", "input": {}}})),
                anthropic_event(json!({"type": "content_block_delta", "index": 1,
                    "delta": {"type": "input_json_delta", "partial_json": "{\"a\": 2, \"b\": 3}"}})),
                anthropic_event(json!({"type": "content_block_stop", "index": 1})),
            ];
            e.extend(anthropic_end("tool_use", 5));
            e
        }
        Provider::GEMINI => vec![
            gemini_chunk(json!([{"text": "Adding", "thought": true}]), None, None),
            gemini_chunk(
                json!([{"functionCall": {"name": "calc__add", "args": {"a": 2, "b": 3}},
                        "thoughtSignature": "c2lnbmF0dXJlLTE="}]),
                Some("STOP"),
                Some((10, 5)),
            ),
        ],
        other => unreachable!("not a built-in provider: {other}"),
    };
    [Reply::sse(&call), text_stream(p, &["2 + 3 = ", "5"])]
}

/// The tool result as the provider reads it, in the second request.
fn assert_result_sent(p: Provider, body: &Value) {
    match p {
        Provider::OPENAI_CHAT => {
            let m = body["messages"].as_array().unwrap();
            assert_eq!(m[2]["role"], "assistant");
            // `""`, never `null`: llama.cpp's server refuses a `null` or missing `content`.
            assert_eq!(m[2]["content"], "");
            assert_eq!(
                m[2]["tool_calls"][0]["function"]["arguments"],
                "{\"a\":2,\"b\":3}"
            );
            assert_eq!(
                m[3],
                json!({"role": "tool", "tool_call_id": "call_a", "content": "5"})
            );
        }
        Provider::OPENAI_RESPONSES => {
            let input = body["input"].as_array().unwrap();
            assert_eq!(input[1]["type"], "function_call");
            assert_eq!(input[1]["call_id"], "call_a");
            assert_eq!(
                input[2],
                json!({"type": "function_call_output", "call_id": "call_a", "output": "5"})
            );
        }
        Provider::ANTHROPIC => {
            let m = body["messages"].as_array().unwrap();
            assert_eq!(m[1]["role"], "assistant");
            assert_eq!(
                m[1]["content"][0],
                json!({"type": "text", "text": "Let me add."})
            );
            assert_eq!(m[1]["content"][1]["type"], "tool_use");
            assert_eq!(
                m[2]["content"][0],
                json!({"type": "tool_result", "tool_use_id": "toolu_a",
                "content": "5", "is_error": false})
            );
        }
        Provider::GEMINI => {
            let c = body["contents"].as_array().unwrap();
            assert_eq!(c[1]["role"], "model");
            // The answer's parts go back as they came: the thought, and the call with its
            // thought signature.
            assert_eq!(c[1]["parts"][0], json!({"text": "Adding", "thought": true}));
            assert_eq!(
                c[1]["parts"][1]["functionCall"],
                json!({"name": "calc__add", "args": {"a": 2, "b": 3}})
            );
            assert_eq!(c[1]["parts"][1]["thoughtSignature"], "c2lnbmF0dXJlLTE=");
            assert_eq!(
                c[2]["parts"][0],
                json!({"functionResponse": {"name": "calc__add", "response": {"output": 5}}})
            );
        }
        other => unreachable!("not a built-in provider: {other}"),
    }
}

#[tokio::test]
async fn the_step_loop_runs_a_whole_turn_through_every_provider() {
    for p in ALL {
        let server = ReplayServer::start(turn_replies(p)).await;
        let model = Arc::new(ProviderModel::new(config(p, &server)).unwrap());
        let state = tempfile::tempdir().unwrap();
        let streamed = Arc::new(Mutex::new(String::new()));
        let agent = AgentInstance::builder("adder", registry(), model)
            .tools(["calc"])
            .system_prompt("You add numbers.")
            .deltas(DeltaSink::new({
                let streamed = Arc::clone(&streamed);
                move |d: &ModelDelta| {
                    if let ModelDelta::Text(t) = d {
                        streamed.lock().unwrap().push_str(t);
                    }
                }
            }))
            .state_dir(state.path())
            .build()
            .unwrap();
        let turn = agent.run_turn("what is 2 + 3?").await.unwrap();
        assert_eq!(turn.end, TurnEnd::Answered, "{p}");
        assert_eq!(turn.steps.len(), 2, "{p}");
        assert_eq!(turn.steps[0].results[0].output, Some(json!(5)), "{p}");
        assert_eq!(turn.answer(), Some("2 + 3 = 5"), "{p}");
        assert!(streamed.lock().unwrap().ends_with("2 + 3 = 5"), "{p}");
        assert_eq!(turn.steps[1].usage.map(|u| u.total()), Some(15), "{p}");
        let step_one = turn.steps[0].usage.map(|u| u.total()).unwrap_or(0);
        assert_eq!(turn.usage().map(|u| u.total()), Some(step_one + 15), "{p}");
        let requests = server.requests();
        assert_eq!(requests.len(), 2, "{p}");
        assert_result_sent(p, &requests[1].body);
    }
}

#[tokio::test]
async fn a_bundle_model_resource_drives_an_agent_turn_with_its_key_from_the_named_variable() {
    let server = ReplayServer::start(turn_replies(Provider::ANTHROPIC)).await;
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("system.md"), "Answer briefly.").unwrap();
    // The workspace forbids `unsafe`, so the test cannot set a variable (`set_var` is unsafe
    // in edition 2024): it names one every process has, and checks its value is what is sent.
    let var = "PATH";
    let key = std::env::var(var).unwrap();
    let yaml = format!(
        r#"apiVersion: goondan.ai/v1
kind: Model
metadata: {{name: claude}}
spec:
  provider: anthropic
  model: claude-test
  endpoint: "{}"
  apiKey: {{valueFrom: {{env: {var}}}}}
  options: {{temperature: 0.3, maxTokens: 512, maxRetries: 0}}
---
apiVersion: goondan.ai/v1
kind: Agent
metadata: {{name: adder}}
spec:
  modelConfig:
    modelRef: "Model/claude"
    params: {{maxTokens: 256}}
  prompts:
    systemPrompt: "You add numbers."
    systemRef: "./system.md"
  tools: ["Tool/calc"]
---
apiVersion: goondan.ai/v1
kind: Tool
metadata: {{name: calc}}
spec:
  exports:
    - name: add
      parameters: {{type: object, properties: {{a: {{type: integer}}, b: {{type: integer}}}}, required: [a, b]}}
"#,
        server.url("/v1")
    );
    let path = dir.path().join("goondan.yaml");
    std::fs::write(&path, yaml).unwrap();
    let bundle = Bundle::load(&path).unwrap();
    let model = for_agent(&bundle, "adder").unwrap();
    let agent = AgentInstance::from_bundle(&bundle, "adder", registry(), model)
        .unwrap()
        .state_dir(dir.path().join("state"))
        .build()
        .unwrap();
    let turn = agent.run_turn("what is 2 + 3?").await.unwrap();
    assert_eq!(turn.answer(), Some("2 + 3 = 5"));
    let requests = server.requests();
    assert_eq!(requests[0].header("x-api-key"), Some(key.as_str()));
    assert_eq!(
        requests[0].body["system"],
        "You add numbers.\n\nAnswer briefly."
    );
    assert_eq!(
        requests[0].body["max_tokens"], 256,
        "the Agent's params win"
    );
    assert_eq!(requests[0].body["temperature"], 0.3);
}

/// The tool choice as each provider reads it: (one named tool, `none`).
fn choice_shapes(p: Provider) -> (&'static str, Value, Value) {
    match p {
        Provider::OPENAI_CHAT => (
            "tool_choice",
            json!({"type": "function", "function": {"name": "calc__add"}}),
            json!("none"),
        ),
        Provider::OPENAI_RESPONSES => (
            "tool_choice",
            json!({"type": "function", "name": "calc__add"}),
            json!("none"),
        ),
        Provider::ANTHROPIC => (
            "tool_choice",
            json!({"type": "tool", "name": "calc__add"}),
            json!({"type": "none"}),
        ),
        Provider::GEMINI => (
            "toolConfig",
            json!({"functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": ["calc__add"]}}),
            json!({"functionCallingConfig": {"mode": "NONE"}}),
        ),
        other => unreachable!("not a built-in provider: {other}"),
    }
}

#[tokio::test]
async fn every_provider_sends_the_first_steps_tool_choice_then_the_models_own() {
    for p in ALL {
        let server = ReplayServer::start(turn_replies(p)).await;
        let config = config(p, &server)
            .first_step_tool_choice("calc__add".parse().unwrap())
            .tool_choice(ToolChoice::None);
        let model = Arc::new(ProviderModel::new(config).unwrap());
        let state = tempfile::tempdir().unwrap();
        let agent = AgentInstance::builder("adder", registry(), model)
            .tools(["calc"])
            .state_dir(state.path())
            .build()
            .unwrap();
        let turn = agent.run_turn("what is 2 + 3?").await.unwrap();
        assert_eq!(turn.answer(), Some("2 + 3 = 5"), "{p}");
        let requests = server.requests();
        let (field, named, none) = choice_shapes(p);
        assert_eq!(requests[0].body[field], named, "{p}");
        assert_eq!(requests[1].body[field], none, "{p}");
    }
}

#[tokio::test]
async fn a_step_middleware_sets_the_tool_choice_of_its_step_over_the_models() {
    use goondan_runtime::extension::{Extension, ExtensionApi, ExtensionError, PipelineMiddleware};
    use goondan_runtime::step::step_fn;
    struct FirstRequired;
    impl Extension for FirstRequired {
        fn name(&self) -> &str {
            "first-required"
        }
        fn register(&self, api: &mut ExtensionApi) -> Result<(), ExtensionError> {
            api.pipeline.register(
                PipelineMiddleware::step(step_fn(|mut step, next| async move {
                    if step.step() == 0 {
                        step.tool_choice = Some(ToolChoice::Required);
                    }
                    next.run(step).await
                })),
                0,
            );
            Ok(())
        }
    }
    let required = |p: Provider| match p {
        Provider::OPENAI_CHAT | Provider::OPENAI_RESPONSES => json!("required"),
        Provider::ANTHROPIC => json!({"type": "any"}),
        Provider::GEMINI => json!({"functionCallingConfig": {"mode": "ANY"}}),
        other => unreachable!("not a built-in provider: {other}"),
    };
    for p in ALL {
        let server = ReplayServer::start(turn_replies(p)).await;
        let config = config(p, &server).tool_choice(ToolChoice::Auto);
        let model = Arc::new(ProviderModel::new(config).unwrap());
        let state = tempfile::tempdir().unwrap();
        let agent = AgentInstance::builder("adder", registry(), model)
            .tools(["calc"])
            .extension(FirstRequired)
            .state_dir(state.path())
            .build()
            .unwrap();
        agent.run_turn("what is 2 + 3?").await.unwrap();
        let requests = server.requests();
        let (field, _, _) = choice_shapes(p);
        assert_eq!(requests[0].body[field], required(p), "{p}");
        let auto = match p {
            Provider::ANTHROPIC => json!({"type": "auto"}),
            Provider::GEMINI => json!({"functionCallingConfig": {"mode": "AUTO"}}),
            _ => json!("auto"),
        };
        assert_eq!(requests[1].body[field], auto, "{p}");
    }
}

#[tokio::test]
async fn a_tool_choice_the_step_cannot_honour_is_a_config_error_before_any_request() {
    for p in ALL {
        let server = ReplayServer::start([]).await;
        // A tool the catalog does not have.
        let config = config(p, &server).tool_choice("calc__sub".parse().unwrap());
        let model = ProviderModel::new(config).unwrap();
        let e = model.respond(&request(None)).await.unwrap_err();
        let message = e.to_string();
        assert!(matches!(e, ModelError::Config { .. }), "{p}: {e:?}");
        assert!(
            message.contains("`calc__sub`") && message.contains("calc__add"),
            "{message}"
        );
        // A call demanded of a Step without tools.
        let config = self::config(p, &server).tool_choice(ToolChoice::Required);
        let model = ProviderModel::new(config).unwrap();
        let mut bare = request(None);
        bare.catalog = ToolCatalog::new();
        let e = model.respond(&bare).await.unwrap_err();
        assert!(e.to_string().contains("offers no tools"), "{p}: {e}");
        assert_eq!(server.requests().len(), 0, "{p}");
        // `none` for a Step without tools sends no tool choice at all.
        let server = ReplayServer::start([text_stream(p, &["hi"])]).await;
        let config = self::config(p, &server).tool_choice(ToolChoice::None);
        let model = ProviderModel::new(config).unwrap();
        model.respond(&bare).await.unwrap();
        let (field, _, _) = choice_shapes(p);
        assert_eq!(server.requests()[0].body.get(field), None, "{p}");
    }
}

// ---- answers recorded from a real server (scripts/llm-record; see the fixtures' README) ----

/// A recorded answer of llama-cpp-python's server, replayed whole, cut into 97-byte pieces.
fn recorded(name: &str) -> Reply {
    let dir =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/llama-cpp-python");
    let body = std::fs::read(dir.join(name)).unwrap();
    let status: u16 = std::fs::read_to_string(dir.join(format!("{name}.status")))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let kind = if name.ends_with(".sse") {
        "text/event-stream"
    } else {
        "application/json"
    };
    let reply = Reply {
        status,
        headers: vec![("content-type".into(), kind.into())],
        delay: Duration::ZERO,
        pieces: vec![(Duration::ZERO, body)],
    };
    reply.split_every(97)
}

fn real_server_model(server: &ReplayServer, stream: bool) -> ProviderModel {
    let config = config(Provider::OPENAI_CHAT, server)
        .stream(stream)
        .tool_choice("calc__add".parse().unwrap())
        .retry(RetryPolicy {
            max_retries: 0,
            ..RetryPolicy::default()
        });
    ProviderModel::new(config).unwrap()
}

#[tokio::test]
async fn real_server_a_forced_call_streamed_with_its_id_and_name_in_every_chunk_is_one_call() {
    let server = ReplayServer::start([recorded("forced-stream.sse")]).await;
    let calls = Arc::new(Mutex::new(Vec::new()));
    let sink = DeltaSink::new({
        let calls = Arc::clone(&calls);
        move |d: &ModelDelta| {
            if let ModelDelta::ToolCall { name, .. } = d {
                calls.lock().unwrap().push(name.clone());
            }
        }
    });
    let response = real_server_model(&server, true)
        .respond(&request(Some(sink)))
        .await
        .unwrap();
    assert_eq!(response.tool_calls.len(), 1, "{response:?}");
    let call = &response.tool_calls[0];
    assert_eq!(call.name, "calc__add");
    assert!(call.id.starts_with("call__0_calc__add_"), "{}", call.id);
    assert_eq!(call.args, json!({"a": 2, "b": 3}));
    assert_eq!(response.content, None, "`content: null` in every chunk");
    assert_eq!(response.usage, None, "this server sends no usage chunk");
    assert_eq!(*calls.lock().unwrap(), ["calc__add"], "announced once");
}

#[tokio::test]
async fn real_server_a_forced_call_unstreamed_reads_tool_calls_and_not_function_call() {
    for name in ["forced.json", "auto.json"] {
        let server = ReplayServer::start([recorded(name)]).await;
        let response = real_server_model(&server, false)
            .respond(&request(None))
            .await
            .unwrap();
        // `auto.json`'s legacy `function_call` names `calc__add:`; `tool_calls` is read.
        assert_eq!(response.tool_calls.len(), 1, "{name}");
        assert_eq!(response.tool_calls[0].name, "calc__add", "{name}");
        assert_eq!(
            response.tool_calls[0].args,
            json!({"a": 2, "b": 3}),
            "{name}"
        );
        assert_eq!(response.usage.map(|u| u.total()), Some(236), "{name}");
    }
}

#[tokio::test]
async fn real_server_text_streamed_under_tool_choice_none_is_assembled_whole() {
    let server = ReplayServer::start([recorded("none-stream.sse")]).await;
    let streamed = Arc::new(Mutex::new(String::new()));
    let sink = DeltaSink::new({
        let streamed = Arc::clone(&streamed);
        move |d: &ModelDelta| {
            if let ModelDelta::Text(t) = d {
                streamed.lock().unwrap().push_str(t);
            }
        }
    });
    let config = config(Provider::OPENAI_CHAT, &server).tool_choice(ToolChoice::None);
    let response = ProviderModel::new(config)
        .unwrap()
        .respond(&request(Some(sink)))
        .await
        .unwrap();
    let text = response.content.unwrap();
    assert!(!text.is_empty());
    assert_eq!(*streamed.lock().unwrap(), text);
    assert!(response.tool_calls.is_empty());
}

#[tokio::test]
async fn real_server_an_empty_stream_and_a_500_are_structured_errors_not_hangs() {
    // `auto` streamed: the server closes at once with nothing.
    let server = ReplayServer::start([recorded("auto-stream.sse")]).await;
    let e = real_server_model(&server, true)
        .respond(&request(None))
        .await
        .unwrap_err();
    assert!(matches!(e, ModelError::Malformed { .. }), "{e:?}");
    assert!(e.to_string().contains("ended before"), "{e}");
    assert!(e.to_string().contains("`stream: false`"), "{e}");
    // `required`: HTTP 500 with an empty message.
    let server = ReplayServer::start([recorded("required.json")]).await;
    let e = real_server_model(&server, false)
        .respond(&request(None))
        .await
        .unwrap_err();
    assert!(e.to_string().contains("500"), "{e}");
}

#[tokio::test]
async fn chat_answers_without_call_ids_or_with_arguments_as_objects_are_read() {
    // Unstreamed: no `id`, arguments as an object (not text).
    let whole = Reply::json(
        200,
        &json!({"choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
        "role": "assistant", "content": "",
        "tool_calls": [
            {"type": "function", "function": {"name": "calc__add", "arguments": {"a": 2, "b": 3}}},
            {"id": "", "type": "function", "function": {"name": "calc__add", "arguments": "{\"a\": 10, \"b\": 20}"}}
        ]}}]}),
    );
    // Streamed: no `id`, arguments as an object in one chunk.
    let streamed = Reply::sse(&[
        chat_chunk(
            &json!({"tool_calls": [{"index": 0, "type": "function",
            "function": {"name": "calc__add", "arguments": {"a": 2, "b": 3}}}]}),
            None,
        ),
        chat_chunk(
            &json!({"tool_calls": [{"index": 1, "type": "function",
            "function": {"name": "calc__add", "arguments": "{\"a\": 10, \"b\": 20}"}}]}),
            None,
        ),
        chat_chunk(&json!({}), Some("tool_calls")),
        "data: [DONE]".into(),
    ]);
    for (reply, stream) in [(whole, false), (streamed, true)] {
        let server = ReplayServer::start([reply]).await;
        let model =
            ProviderModel::new(config(Provider::OPENAI_CHAT, &server).stream(stream)).unwrap();
        let response = model.respond(&request(None)).await.unwrap();
        let calls: Vec<(&str, &Value)> = response
            .tool_calls
            .iter()
            .map(|c| (c.id.as_str(), &c.args))
            .collect();
        assert_eq!(
            calls,
            [
                ("call_0", &json!({"a": 2, "b": 3})),
                ("call_1", &json!({"a": 10, "b": 20}))
            ],
            "stream: {stream}"
        );
        assert_eq!(response.content, None, "stream: {stream}");
    }
}

/// A provider of the test's own making, registered from outside the crate: `plainwire` (alias
/// `plain`). `POST {base}/ask/{model}` (`?stream=1` when streamed), the key in `x-plain-key`,
/// the conversation as `lines` of `{who, said}`, tools as `{fn, doc, takes}`, the tool choice
/// as `pick`; an unstreamed answer is `{reply?, invoke: [{ref, fn, with}]}`, a streamed one
/// events `{piece}` and `{invoke}` closed by an `end` event.
struct PlainWire {
    name: &'static str,
}

static PLAINWIRE: PlainWire = PlainWire { name: "plainwire" };

fn plainwire_error(message: impl Into<String>) -> ModelError {
    ModelError::Malformed {
        provider: "plainwire",
        message: message.into(),
    }
}

impl ToolDialect for PlainWire {
    fn name(&self) -> &'static str {
        self.name
    }

    fn tool(&self, item: &CatalogItem) -> Result<Value, DialectError> {
        Ok(
            json!({"fn": item.name().as_str(), "doc": item.description(),
                  "takes": item.parameters()}),
        )
    }

    fn parse_calls(&self, answer: &Value, _: &ToolCatalog) -> Result<Vec<ToolCall>, ParseError> {
        let bad = |path: String, reason: &str| ParseError {
            provider: "plainwire",
            path,
            reason: reason.to_owned(),
        };
        let Some(invoke) = answer.get("invoke") else {
            return Ok(Vec::new());
        };
        let list = invoke
            .as_array()
            .ok_or_else(|| bad("/invoke".into(), "expected an array"))?;
        list.iter()
            .enumerate()
            .map(|(i, call)| {
                let text = |key: &str| {
                    call.get(key)
                        .and_then(Value::as_str)
                        .map(str::to_owned)
                        .ok_or_else(|| bad(format!("/invoke/{i}/{key}"), "expected a string"))
                };
                let with = call.get("with").cloned().unwrap_or_else(|| json!({}));
                Ok(ToolCall::new(text("ref")?, text("fn")?, with))
            })
            .collect()
    }

    fn render_result(&self, result: &ToolCallResult) -> Value {
        json!({"who": "tool", "ref": result.tool_call_id, "said": result_text(result)})
    }
}

impl ProviderAdapter for PlainWire {
    fn name(&self) -> &'static str {
        self.name
    }

    fn aliases(&self) -> &'static [&'static str] {
        &["plain"]
    }

    fn default_base_url(&self) -> &'static str {
        "http://127.0.0.1:9"
    }

    fn default_key_env(&self) -> &'static str {
        "PLAINWIRE_KEY"
    }

    fn dialect(&self) -> Dialect {
        Dialect::new(&PLAINWIRE)
    }

    fn headers(&self, key: Option<&str>) -> Vec<(&'static str, String)> {
        key.map(|k| ("x-plain-key", k.to_owned()))
            .into_iter()
            .collect()
    }

    fn url(&self, base: &str, model: &str, stream: bool) -> String {
        let query = if stream { "?stream=1" } else { "" };
        format!("{base}/ask/{model}{query}")
    }

    fn body(
        &self,
        config: &ProviderConfig,
        request: &ModelRequest,
        stream: bool,
    ) -> Result<Value, ModelError> {
        let dialect = ProviderAdapter::dialect(self);
        let lines: Vec<Value> = turns(&request.messages)
            .into_iter()
            .map(|turn| match turn {
                Turn::User(text) => json!({"who": "user", "said": text}),
                Turn::Assistant { text, calls, .. } => json!({"who": "model", "said": text,
                    "invoke": calls.iter()
                        .map(|c| json!({"ref": c.id, "fn": c.name, "with": c.args}))
                        .collect::<Vec<_>>()}),
                Turn::Result(result) => dialect.render_result(&result),
            })
            .collect();
        Ok(
            json!({"model": config.model, "brief": request.system, "lines": lines,
                  "stream": stream}),
        )
    }

    fn tool_choice(&self, choice: &ToolChoice) -> (&'static str, Value) {
        ("pick", json!(choice.to_string()))
    }

    fn parse(&self, answer: &Value, catalog: &ToolCatalog) -> Result<ModelResponse, ModelError> {
        let tool_calls = ProviderAdapter::dialect(self)
            .parse_calls(answer, catalog)
            .map_err(|e| plainwire_error(e.to_string()))?;
        Ok(ModelResponse {
            content: answer
                .get("reply")
                .and_then(Value::as_str)
                .map(str::to_owned),
            tool_calls,
            usage: None,
            metadata: serde_json::Map::new(),
        })
    }

    fn stream(&self) -> Box<dyn AnswerStream> {
        Box::new(PlainWirePieces::default())
    }
}

/// A streamed `plainwire` answer being assembled.
#[derive(Default)]
struct PlainWirePieces {
    text: String,
    calls: Vec<Value>,
    ended: bool,
}

impl AnswerStream for PlainWirePieces {
    fn event(&mut self, event: &SseEvent, sink: Option<&DeltaSink>) -> Result<bool, ModelError> {
        if event.name.as_deref() == Some("end") {
            self.ended = true;
            return Ok(true);
        }
        let value: Value = serde_json::from_str(&event.data)
            .map_err(|e| plainwire_error(format!("an event is not JSON: {e}")))?;
        if let Some(piece) = value.get("piece").and_then(Value::as_str) {
            self.text.push_str(piece);
            if let Some(sink) = sink {
                sink.send(&ModelDelta::Text(piece.to_owned()));
            }
        }
        if let Some(call) = value.get("invoke") {
            self.calls.push(call.clone());
        }
        Ok(false)
    }

    fn finish(self: Box<Self>, catalog: &ToolCatalog) -> Result<ModelResponse, ModelError> {
        if !self.ended {
            return Err(plainwire_error("the stream ended before `end`"));
        }
        let answer = json!({"reply": self.text, "invoke": self.calls});
        let mut response = PLAINWIRE.parse(&answer, catalog)?;
        response.content = response.content.filter(|t| !t.is_empty());
        Ok(response)
    }
}

fn plainwire() -> Provider {
    Provider::register(&PLAINWIRE).unwrap()
}

#[tokio::test]
async fn a_provider_registered_from_outside_the_crate_runs_a_bundle_agent_turn_with_a_tool_call() {
    let provider = plainwire();
    assert_eq!(Provider::parse("plain"), Some(provider));
    assert_eq!(provider.dialect().as_str(), "plainwire");
    let step_one = Reply::sse(&[
        data(&json!({"piece": "Adding."})),
        data(&json!({"invoke": {"ref": "r1", "fn": "calc__add", "with": {"a": 2, "b": 3}}})),
        named("end", &json!({})),
    ]);
    let step_two = Reply::sse(&[
        data(&json!({"piece": "2 + 3 "})),
        data(&json!({"piece": "= 5"})),
        named("end", &json!({})),
    ]);
    let server = ReplayServer::start([step_one, step_two]).await;
    let dir = tempfile::tempdir().unwrap();
    let var = "PATH";
    let key = std::env::var(var).unwrap();
    // The bundle names the provider by its alias: the bundle resolves it through the table.
    let yaml = format!(
        r#"apiVersion: goondan.ai/v1
kind: Model
metadata: {{name: tiny}}
spec:
  provider: plain
  model: tiny-1
  endpoint: "{}"
  apiKey: {{valueFrom: {{env: {var}}}}}
  options: {{maxRetries: 0}}
---
apiVersion: goondan.ai/v1
kind: Agent
metadata: {{name: adder}}
spec:
  modelConfig:
    modelRef: "Model/tiny"
  prompts:
    systemPrompt: "You add numbers."
  tools: ["Tool/calc"]
---
apiVersion: goondan.ai/v1
kind: Tool
metadata: {{name: calc}}
spec:
  exports:
    - name: add
      parameters: {{type: object, properties: {{a: {{type: integer}}, b: {{type: integer}}}}, required: [a, b]}}
"#,
        server.url("/v9")
    );
    let path = dir.path().join("goondan.yaml");
    std::fs::write(&path, yaml).unwrap();
    let bundle = Bundle::load(&path).unwrap();
    let model = for_agent(&bundle, "adder").unwrap();
    let agent = AgentInstance::from_bundle(&bundle, "adder", registry(), model)
        .unwrap()
        .state_dir(dir.path().join("state"))
        .build()
        .unwrap();
    let turn = agent.run_turn("what is 2 + 3?").await.unwrap();

    assert_eq!(turn.end, TurnEnd::Answered);
    assert_eq!(turn.steps.len(), 2);
    assert_eq!(turn.steps[0].results[0].output, Some(json!(5)));
    assert_eq!(turn.answer(), Some("2 + 3 = 5"));
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    let first = &requests[0];
    assert_eq!(first.path, "/v9/ask/tiny-1?stream=1");
    assert_eq!(first.header("x-plain-key"), Some(key.as_str()));
    assert_eq!(first.body["model"], "tiny-1");
    assert_eq!(first.body["stream"], true);
    assert_eq!(
        first.body["lines"],
        json!([{"who": "user", "said": "what is 2 + 3?"}])
    );
    assert_eq!(first.body["tools"][0]["fn"], "calc__add");
    assert_eq!(
        first.body["tools"][0]["takes"]["required"],
        json!(["a", "b"])
    );
    // The second request carries the call and its result in the provider's own shape.
    let lines = &requests[1].body["lines"];
    assert_eq!(
        lines[1],
        json!({"who": "model", "said": "Adding.",
               "invoke": [{"ref": "r1", "fn": "calc__add", "with": {"a": 2, "b": 3}}]})
    );
    assert_eq!(lines[2], json!({"who": "tool", "ref": "r1", "said": "5"}));
}

#[tokio::test]
async fn a_registered_provider_reads_unstreamed_tool_calls_and_keeps_its_names_to_itself() {
    let provider = plainwire();
    // Registering the same adapter again is the same provider; another adapter may not take
    // a name the table already has.
    assert_eq!(Provider::register(&PLAINWIRE).unwrap(), provider);
    static IMPOSTOR: PlainWire = PlainWire { name: "gemini" };
    let taken = Provider::register(&IMPOSTOR).unwrap_err();
    assert_eq!(taken.holder, "gemini");
    assert_eq!(Provider::parse("gemini"), Some(Provider::GEMINI));

    let answer = json!({"invoke": [
        {"ref": "r1", "fn": "calc__add", "with": {"a": 2, "b": 3}},
        {"ref": "r2", "fn": "calc__add", "with": {"a": 10, "b": 20}},
    ]});
    let server = ReplayServer::start([Reply::json(200, &answer)]).await;
    let config = ProviderConfig::new(provider, "tiny-1")
        .base_url(server.url("/v9/"))
        .api_key(ApiKey::new("sk-plain"))
        .tool_choice(ToolChoice::Required)
        .stream(false);
    let model = ProviderModel::new(config).unwrap();
    let response = model.respond(&request(None)).await.unwrap();

    assert_eq!(response.content, None);
    let calls: Vec<(&str, &Value)> = response
        .tool_calls
        .iter()
        .map(|c| (c.id.as_str(), &c.args))
        .collect();
    assert_eq!(
        calls,
        [
            ("r1", &json!({"a": 2, "b": 3})),
            ("r2", &json!({"a": 10, "b": 20}))
        ]
    );
    let sent = &server.requests()[0];
    assert_eq!(sent.path, "/v9/ask/tiny-1");
    assert_eq!(sent.header("x-plain-key"), Some("sk-plain"));
    assert_eq!(sent.body["pick"], "required");
    assert_eq!(sent.body["brief"], "You add numbers.");
    assert_eq!(sent.body["stream"], false);
}
