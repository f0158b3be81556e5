//! How a scripted model answers a turn of known calls, each of two ways: the classic loop
//! (one call a response, then the answer) and code mode (one program that makes the calls in
//! order and gives the answer with `final_answer`). Shared by the task sets that measure code
//! mode: BFCL's (`bfcl_tasks.rs`) and goondan-base's tasks over the base tools
//! (`goondan-base/tests/support/code_mode_tasks.rs`).
#![allow(dead_code)]

use std::time::{Duration, Instant};

use goondan_runtime::ToolCall;
use goondan_runtime::code::TOOL_NAME;
use goondan_runtime::step::{AgentInstance, ModelResponse};
use serde_json::{Value, json};

/// How the model answers a turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Way {
    /// Each call in a response of its own (a call may need the one before), then the answer.
    Classic,
    /// One `code__run` whose program makes the calls in order and ends with the answer
    /// (`final_answer`).
    Code,
}

/// The answer that ends every turn, either way.
pub(crate) const ANSWER: &str = "Done.";

/// One known call: the catalog name the model calls, the function a program calls, and the
/// keyword arguments.
pub(crate) struct Known<'a> {
    pub(crate) name: String,
    pub(crate) function: String,
    pub(crate) arguments: &'a Value,
}

/// A value as a Python literal (JSON's strings are Python's, with the same escapes).
pub(crate) fn literal(value: &Value) -> String {
    match value {
        Value::Null => "None".to_owned(),
        Value::Bool(true) => "True".to_owned(),
        Value::Bool(false) => "False".to_owned(),
        Value::Number(_) | Value::String(_) => value.to_string(),
        Value::Array(items) => {
            let items: Vec<String> = items.iter().map(literal).collect();
            format!("[{}]", items.join(", "))
        }
        Value::Object(map) => {
            let pairs: Vec<String> = map
                .iter()
                .map(|(k, v)| format!("{}: {}", Value::from(k.as_str()), literal(v)))
                .collect();
            format!("{{{}}}", pairs.join(", "))
        }
    }
}

/// The calls as one program, one a line, in order: `bfcl.cd(folder='document')`.
pub(crate) fn program(calls: &[Known<'_>]) -> String {
    calls
        .iter()
        .map(|call| {
            let args: Vec<String> = call
                .arguments
                .as_object()
                .into_iter()
                .flatten()
                .map(|(k, v)| format!("{k}={}", literal(v)))
                .collect();
            format!("{}({})", call.function, args.join(", "))
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// What the model answers to every request of a task whose turns make `turns`' calls, in
/// order.
pub(crate) fn script<'a>(
    turns: impl IntoIterator<Item = Vec<Known<'a>>>,
    way: Way,
) -> Vec<ModelResponse> {
    turns
        .into_iter()
        .enumerate()
        .flat_map(|(i, calls)| responses(&calls, way, i))
        .collect()
}

/// What the model answers to a turn's requests, in order: the classic loop's calls one a
/// response, then its answer; or one program that makes the calls and gives the answer.
fn responses(calls: &[Known<'_>], way: Way, turn_index: usize) -> Vec<ModelResponse> {
    match way {
        Way::Classic => {
            let mut out: Vec<ModelResponse> = calls
                .iter()
                .enumerate()
                .map(|(i, call)| {
                    ModelResponse::calls([ToolCall::new(
                        format!("t{turn_index}c{i}"),
                        call.name.as_str(),
                        call.arguments.clone(),
                    )])
                })
                .collect();
            out.push(ModelResponse::text(ANSWER));
            out
        }
        // The answer comes even when a call fails: the classic loop's model answers after a
        // failed call as after any other.
        Way::Code => {
            let answer = literal(&Value::from(ANSWER));
            let body = program(calls).replace('\n', "\n    ");
            let code = format!("try:\n    {body}\nfinally:\n    final_answer({answer})");
            vec![ModelResponse::calls([ToolCall::new(
                format!("t{turn_index}code"),
                TOOL_NAME,
                json!({ "code": code }),
            )])]
        }
    }
}

/// One run of a task.
#[derive(Debug)]
pub(crate) struct Outcome {
    /// What the task set records of the run, which the two ways must share.
    pub(crate) record: Value,
    /// Model round trips, over all turns.
    pub(crate) round_trips: usize,
    /// Model round trips and wall time of each turn.
    pub(crate) turns: Vec<(usize, Duration)>,
    /// The failed tool results the model was given (a program's error included).
    pub(crate) failures: Vec<String>,
}

/// What a task's turns did, before the task set adds its record.
pub(crate) struct Played {
    /// Model round trips and wall time of each turn.
    pub(crate) turns: Vec<(usize, Duration)>,
    /// Each turn's answer.
    pub(crate) answers: Vec<Option<String>>,
    /// The failed tool results the model was given.
    pub(crate) failures: Vec<String>,
}

impl Played {
    /// The run's outcome, with `record`.
    pub(crate) fn outcome(self, record: Value) -> Outcome {
        Outcome {
            record,
            round_trips: self.turns.iter().map(|t| t.0).sum(),
            turns: self.turns,
            failures: self.failures,
        }
    }
}

/// Runs each of `users` as a Turn of `agent`, in order; a Turn that fails panics naming
/// `label`.
pub(crate) async fn play<'a>(
    agent: &AgentInstance,
    users: impl IntoIterator<Item = &'a str>,
    label: &str,
) -> Played {
    let mut played = Played {
        turns: Vec::new(),
        answers: Vec::new(),
        failures: Vec::new(),
    };
    for user in users {
        let start = Instant::now();
        let outcome = agent
            .run_turn(user)
            .await
            .unwrap_or_else(|e| panic!("a turn of {label}: {e}"));
        played
            .turns
            .push((outcome.model_requests(), start.elapsed()));
        played.answers.push(outcome.answer().map(str::to_owned));
        for step in &outcome.steps {
            for result in &step.results {
                if let Some(error) = &result.error {
                    played
                        .failures
                        .push(format!("{}: {}", result.tool_name, error.message()));
                }
            }
        }
    }
    played
}
