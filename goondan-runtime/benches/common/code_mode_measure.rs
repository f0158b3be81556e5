//! Code mode against the classic loop, measured per turn: what `benches/code_mode.rs` of
//! goondan-runtime (BFCL's tasks) and of goondan-base (tasks over the base tools) share. Each
//! task runs both ways twice: once with the model an OpenAI chat server on 127.0.0.1 that
//! answers from the script (the provider client renders and sends every request for real),
//! for the tokens sent (each request body) and received (each answer's message), counted by
//! the local model peer's tokenizer (`scripts/llm-peer`, SmolLM2's); and once with the script
//! as an in-process model, for the wall time without the loopback HTTP. The rows, as JSON,
//! are what `scripts/code-mode-table` reads.
#![allow(dead_code)]

use std::fmt::Debug;
use std::future::Future;
use std::io::{BufRead, BufReader, Write};
use std::pin::Pin;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use goondan_runtime::provider::{ApiKey, Provider, ProviderConfig, ProviderModel};
use goondan_runtime::step::{Model, ModelResponse, ScriptedModel};
use goondan_test_peers::replay::{ReplayServer, Reply};
use serde_json::{Value, json};

/// The local model peer's tokenizer, one process for every count.
pub struct Tokenizer {
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
    pub fn start() -> Self {
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

    pub fn count(&mut self, text: &str) -> u64 {
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

/// One run of a task: what it left (compared between runs), and each turn's model round
/// trips and wall time.
pub struct Ran {
    pub record: Value,
    pub turns: Vec<(usize, Duration)>,
    pub failures: usize,
}

/// A task set: its tasks, how each is scripted and run each way.
pub trait TaskSet {
    type Task;
    type Way: Copy + Debug;
    /// The classic loop, then code mode.
    const WAYS: [Self::Way; 2];
    fn id(task: &Self::Task) -> String;
    /// The number of ground-truth calls of each turn.
    fn calls(task: &Self::Task) -> Vec<usize>;
    fn script(task: &Self::Task, way: Self::Way) -> Vec<ModelResponse>;
    fn run<'a>(
        task: &'a Self::Task,
        way: Self::Way,
        model: Arc<dyn Model>,
    ) -> Pin<Box<dyn Future<Output = Ran> + 'a>>;
}

/// Every task both ways, per turn, as JSON rows; and one row per task saying whether all four
/// runs left the same record.
pub fn measure<S: TaskSet>(rt: &tokio::runtime::Runtime, tasks: &[S::Task]) -> Value {
    let mut tokenizer = Tokenizer::start();
    let mut rows = Vec::new();
    for task in tasks {
        let id = S::id(task);
        let calls = S::calls(task);
        let mut records = Vec::new();
        for way in S::WAYS {
            let script = S::script(task, way);
            let (messages, replies): (Vec<Value>, Vec<Reply>) =
                script.iter().map(completion).unzip();
            let (served, sent) = rt.block_on(async {
                let server = ReplayServer::start(replies).await;
                let config = ProviderConfig::new(Provider::OPENAI_CHAT, "gpt-bench")
                    .base_url(server.url("/v1"))
                    .api_key(ApiKey::new("sk-bench"))
                    .stream(false);
                let model = Arc::new(ProviderModel::new(config).unwrap());
                let served = S::run(task, way, model).await;
                let sent: Vec<String> = server
                    .requests()
                    .iter()
                    .map(|r| r.body.to_string())
                    .collect();
                (served, sent)
            });
            assert_eq!(sent.len(), script.len(), "{id} ({way:?})");
            let timed = rt.block_on(S::run(task, way, Arc::new(ScriptedModel::new(script))));
            let mut at = 0;
            for (i, (n, ((round_trips, _), (_, wall)))) in calls
                .iter()
                .zip(served.turns.iter().zip(&timed.turns))
                .enumerate()
            {
                let range = at..at + round_trips;
                at += round_trips;
                let sent: u64 = sent[range.clone()].iter().map(|b| tokenizer.count(b)).sum();
                let received: u64 = messages[range]
                    .iter()
                    .map(|m| tokenizer.count(&m.to_string()))
                    .sum();
                rows.push(json!({"task": id, "turn": i, "calls": n,
                    "way": format!("{way:?}").to_lowercase(), "round_trips": round_trips,
                    "sent": sent, "received": received, "wall_us": wall.as_micros() as u64,
                    "failures": served.failures}));
            }
            records.push(served.record);
            records.push(timed.record);
        }
        let equal = records.iter().all(|r| *r == records[0]);
        rows.push(json!({"task": id, "equal": equal}));
    }
    Value::Array(rows)
}
