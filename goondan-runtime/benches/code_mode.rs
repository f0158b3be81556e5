//! Code mode against the classic loop, measured side by side (issue 52).
//!
//! - With `GOONDAN_CODE_MODE_TASKS=<file>`: every BFCL multi-turn base task whose every turn
//!   has a ground-truth call (`tests/support/bfcl_tasks.rs`), run both ways against BFCL's own
//!   API classes, with the model an OpenAI chat server on 127.0.0.1 that answers from the
//!   script (the provider client renders and sends every request for real). For each turn of
//!   each way: its calls, model round trips, tokens sent (each request body) and received
//!   (each answer's message), counted by the local model peer's tokenizer (`scripts/llm-peer`,
//!   SmolLM2's), and wall time (of a second run with the script as an in-process model, so
//!   the loopback HTTP is left out); and per task whether all four runs left the same calls,
//!   results and state. Written to the file as JSON, which `scripts/code-mode-table` reads.
//! - Criterion, group `code_mode_call`: one call of a trivial tool made directly through the
//!   executor; Turns whose one model response makes 1 or 11 such calls directly; Turns whose
//!   one program makes 1 or 11 such calls. The difference between 11 and 1, over 10, is the
//!   cost of one more call, each way.
#![allow(
    missing_docs,
    unreachable_pub,
    clippy::unwrap_used,
    clippy::expect_used
)]

#[path = "../tests/support/bfcl_tasks.rs"]
mod bfcl;

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::Arc;

use criterion::{BatchSize, Criterion};
use goondan_runtime::code::{CodeMode, TOOL_NAME};
use goondan_runtime::prelude::*;
use goondan_runtime::provider::{ApiKey, Provider, ProviderConfig, ProviderModel};
use goondan_runtime::step::{AgentInstance, ModelResponse, ScriptedModel};
use goondan_runtime::{ToolCatalog, ToolContext, ToolExecutor};
use goondan_test_peers::replay::{ReplayServer, Reply};
use serde_json::{Value, json};

/// Adds two numbers: the trivial tool of the per-call measurements.
#[tool(name = "calc")]
pub fn add(a: i64, b: i64) -> i64 {
    a + b
}

/// The local model peer's tokenizer, one process for every count.
struct Tokenizer {
    child: Child,
    input: ChildStdin,
    output: BufReader<ChildStdout>,
}

const TOKENIZE: &str = r#"
import json, sys, llama_cpp
m = llama_cpp.Llama(model_path=sys.argv[1], vocab_only=True, verbose=False)
for line in sys.stdin:
    print(len(m.tokenize(json.loads(line).encode(), add_bos=False)), flush=True)
"#;

impl Tokenizer {
    fn start() -> Self {
        let peer = goondan_test_peers::llm::peer();
        let mut child = Command::new(&peer.python)
            .args(["-c", TOKENIZE])
            .arg(&peer.model)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let input = child.stdin.take().unwrap();
        let output = BufReader::new(child.stdout.take().unwrap());
        Self {
            child,
            input,
            output,
        }
    }

    fn count(&mut self, text: &str) -> u64 {
        writeln!(self.input, "{}", Value::from(text)).unwrap();
        let mut line = String::new();
        self.output.read_line(&mut line).unwrap();
        line.trim().parse().unwrap()
    }
}

impl Drop for Tokenizer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A scripted response as an OpenAI chat completion: its `message` and the reply.
fn completion(response: &ModelResponse) -> (Value, Reply) {
    let message = if response.tool_calls.is_empty() {
        json!({"role": "assistant", "content": response.content})
    } else {
        let calls: Vec<Value> = response
            .tool_calls
            .iter()
            .map(|c| {
                json!({"id": c.id.as_str(), "type": "function", "function": {
                    "name": c.name.as_str(), "arguments": c.args.to_string()}})
            })
            .collect();
        json!({"role": "assistant", "content": null, "tool_calls": calls})
    };
    let finish = if response.tool_calls.is_empty() {
        "stop"
    } else {
        "tool_calls"
    };
    let body = json!({"id": "chatcmpl-1", "object": "chat.completion", "created": 1,
        "model": "gpt-bench", "choices": [{"index": 0, "finish_reason": finish, "message": message}]});
    (message, Reply::json(200, &body))
}

/// Every task both ways, per turn, as JSON.
fn measure_tasks(rt: &tokio::runtime::Runtime) -> Value {
    let data = bfcl::data_dir();
    let mut tokenizer = Tokenizer::start();
    let mut rows = Vec::new();
    for task in bfcl::tasks(&data) {
        let mut records = Vec::new();
        for way in [bfcl::Way::Classic, bfcl::Way::Code] {
            let script = bfcl::script(&task, way);
            let (messages, replies): (Vec<Value>, Vec<Reply>) =
                script.iter().map(completion).unzip();
            let (outcome, sent) = rt.block_on(async {
                let server = ReplayServer::start(replies).await;
                let config = ProviderConfig::new(Provider::OPENAI_CHAT, "gpt-bench")
                    .base_url(server.url("/v1"))
                    .api_key(ApiKey::new("sk-bench"))
                    .stream(false);
                let model = Arc::new(ProviderModel::new(config).unwrap());
                let outcome = bfcl::run(&data, &task, way, model).await;
                let sent: Vec<String> = server
                    .requests()
                    .iter()
                    .map(|r| r.body.to_string())
                    .collect();
                (outcome, sent)
            });
            assert_eq!(sent.len(), script.len(), "{} ({way:?})", task.id);
            // The wall time with the model in process: the loop's and the tools' time alone.
            let timed = rt.block_on(bfcl::run(
                &data,
                &task,
                way,
                Arc::new(ScriptedModel::new(script)),
            ));
            let mut at = 0;
            for (i, (turn, ((round_trips, _), (_, wall)))) in task
                .turns
                .iter()
                .zip(outcome.turns.iter().zip(&timed.turns))
                .enumerate()
            {
                let range = at..at + round_trips;
                at += round_trips;
                let sent: u64 = sent[range.clone()].iter().map(|b| tokenizer.count(b)).sum();
                let received: u64 = messages[range]
                    .iter()
                    .map(|m| tokenizer.count(&m.to_string()))
                    .sum();
                rows.push(
                    json!({"task": task.id, "turn": i, "calls": turn.calls.len(),
                    "way": format!("{way:?}").to_lowercase(), "round_trips": round_trips,
                    "sent": sent, "received": received, "wall_us": wall.as_micros() as u64,
                    "failures": outcome.failures.len()}),
                );
            }
            records.push(outcome.record);
            records.push(timed.record);
        }
        let equal = records.iter().all(|r| *r == records[0]);
        rows.push(json!({"task": task.id, "equal": equal}));
    }
    Value::Array(rows)
}

/// A Turn whose first response is `response`, then an answer, on an agent with code mode.
fn turn_setup(response: ModelResponse) -> (AgentInstance, tempfile::TempDir) {
    let model = Arc::new(ScriptedModel::new([response, ModelResponse::text("done")]));
    let registry = Arc::new(ToolRegistry::builder().tool(add::TOOL).build().unwrap());
    let state = tempfile::tempdir().unwrap();
    let agent = AgentInstance::builder("bench", registry, model)
        .tools(["calc"])
        .code_mode(CodeMode::new())
        .state_dir(state.path())
        .build()
        .unwrap();
    (agent, state)
}

fn direct(n: usize) -> ModelResponse {
    ModelResponse::calls(
        (0..n).map(|i| ToolCall::new(format!("c{i}"), "calc__add", json!({"a": i, "b": 1}))),
    )
}

fn program(n: usize) -> ModelResponse {
    let code = (0..n)
        .map(|i| format!("calc.add(a={i}, b=1)"))
        .collect::<Vec<_>>()
        .join("\n");
    ModelResponse::calls([ToolCall::new("c0", TOOL_NAME, json!({ "code": code }))])
}

fn bench_calls(c: &mut Criterion, rt: &tokio::runtime::Runtime) {
    let mut group = c.benchmark_group("code_mode_call");
    let registry = Arc::new(ToolRegistry::builder().tool(add::TOOL).build().unwrap());
    let executor = ToolExecutor::new(Arc::clone(&registry));
    let catalog = ToolCatalog::build(&registry, ["calc"]).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let ctx = ToolContext::builder(dir.path()).build();
    group.bench_function("executor", |b| {
        b.to_async(rt).iter(|| async {
            let call = ToolCall::new("c0", "calc__add", json!({"a": 1, "b": 1}));
            executor.execute(call, &ctx, &catalog).await
        })
    });
    for n in [1, 11] {
        for (name, response) in [
            ("direct", direct as fn(usize) -> ModelResponse),
            ("program", program),
        ] {
            group.bench_function(format!("{name}/{n}"), |b| {
                b.to_async(rt).iter_batched(
                    || {
                        // Building an agent may start tasks: inside the runtime.
                        let _runtime = rt.enter();
                        turn_setup(response(n))
                    },
                    // The agent and its folder are dropped after the timing.
                    |(agent, state)| async move {
                        let turn = agent.run_turn("go").await.unwrap();
                        assert!(turn.steps[0].results.iter().all(|r| r.error.is_none()));
                        (agent, state)
                    },
                    BatchSize::SmallInput,
                )
            });
        }
    }
    group.finish();
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    if let Some(path) = std::env::var_os("GOONDAN_CODE_MODE_TASKS") {
        let rows = measure_tasks(&rt);
        std::fs::write(&path, serde_json::to_string_pretty(&rows).unwrap()).unwrap();
    }
    let mut c = Criterion::default().configure_from_args();
    bench_calls(&mut c, &rt);
    c.final_summary();
}
