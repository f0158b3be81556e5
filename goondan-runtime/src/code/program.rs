//! One program's run: Monty, advanced by the host, which it speaks with in messages.
//!
//! [`start`] compiles a [`Program`]; [`Running::next`] runs it until its next [`Message`]:
//! each [`Message::Call`] is a call of a catalog item that the host answers with a [`Reply`]
//! (the program stays paused until its next `next`), [`Message::Print`] is what it printed
//! since its last message, and [`Message::End`] ends the run. Nothing else crosses: the
//! program has no file system, network or environment (an `open()` or an `os` call raises
//! `PermissionError`), and every limit ends it with a [`Failure`]. The program and the
//! messages are plain data (serde), so that the same run serves the agent's process and the
//! worker process (the `worker` module), which carries them as JSON lines.
//!
//! The program runs on the thread that calls `next`, which has a stack of its own
//! ([`STACK_BYTES`]): what the interpreter does with the native stack is bounded by its own
//! limits (nesting of the source, recursion), not by the stack of whatever thread the host
//! runs its tasks on. A host that stops asking ends the program (it is dropped where it
//! paused), and a program that never calls ends at its time limit.

use std::borrow::Cow;
use std::collections::{HashMap, HashSet, VecDeque};
use std::time::Duration;

use monty::{MontyRun, RunProgress};
use monty_types::{
    CompileOptions, DictPairs, ExcType, MontyClassInstance, MontyClassType, MontyException,
    MontyObject, MontyUuid, NameLookupResult, PrintWriter, PrintWriterCallback, ResourceLimits,
    ResourceTracker, StackFrame,
};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::names::Functions;
use super::values::{from_json, to_json};

/// The native stack of the interpreter's thread.
pub(crate) const STACK_BYTES: usize = 16 * 1024 * 1024;

/// The function that ends a program with the Turn's answer, when the program may give one.
pub(crate) const ANSWER_FUNCTION: &str = "final_answer";

/// The file name tracebacks show.
pub(crate) const SCRIPT_NAME: &str = "program.py";

/// The line before every program: `ToolError` names the exception a failed call raises (an
/// input cannot be an exception class the program catches). Tracebacks are renumbered so
/// that the program's own lines keep their numbers.
const PRELUDE: &str = "ToolError = RuntimeError\n";

/// What one program may use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Limits {
    /// Time spent running the program's own code (not waiting for its calls).
    pub(crate) time: Duration,
    /// Bytes one allocation of the program may ask for.
    pub(crate) memory: usize,
    /// How deep its functions may recurse.
    pub(crate) recursion: usize,
    /// Bytes it may print, and bytes of its final value as JSON.
    pub(crate) output: usize,
    /// How many tool calls it may make.
    pub(crate) calls: usize,
    /// Bytes of one call's result, as JSON, that the program may take in (the host holds
    /// results to it).
    pub(crate) result: usize,
}

/// A limit a program reached.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) enum Limit {
    /// [`Limits::time`].
    Time,
    /// [`Limits::memory`].
    Memory,
    /// [`Limits::recursion`].
    Recursion,
    /// [`Limits::output`].
    Output,
    /// [`Limits::calls`].
    Calls,
}

impl Limit {
    /// The limit's name, as errors show it.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Limit::Time => "time",
            Limit::Memory => "memory",
            Limit::Recursion => "recursion depth",
            Limit::Output => "output",
            Limit::Calls => "tool calls",
        }
    }
}

/// Why a program did not finish with a value.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) enum FailureKind {
    /// It does not parse (or uses syntax Monty does not have).
    Syntax,
    /// An exception nobody caught.
    Uncaught,
    /// A limit.
    Limit(Limit),
    /// Its worker process broke off, or said what does not read.
    Worker,
}

/// A program that failed: why, and the traceback (or what stands for it).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Failure {
    pub(crate) kind: FailureKind,
    /// The traceback and the exception, as Python prints them.
    pub(crate) report: String,
    /// The line the failure points at, when it points at one.
    pub(crate) line: Option<u32>,
}

impl Failure {
    /// A failure that points at no line.
    pub(crate) fn of(kind: FailureKind, report: impl Into<String>) -> Self {
        let report = report.into();
        Self {
            kind,
            report,
            line: None,
        }
    }
}

/// How a run ended, as the host hands it on.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Outcome {
    /// The program's final value (of its last expression; `None` is null), or why there is none.
    pub(crate) result: Result<Value, Failure>,
    /// What it printed, at most [`Limits::output`] bytes.
    pub(crate) printed: String,
    /// The answer it gave with `final_answer(text)`, which ended it (the result is then
    /// null).
    pub(crate) answer: Option<String>,
}

/// What the program tells the host.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "camelCase")]
pub(crate) enum Message {
    /// Call the catalog item `tool` with `args`, and send the [`Reply`].
    Call {
        /// The catalog name (`resource__export`).
        tool: String,
        /// The keyword arguments.
        args: Map<String, Value>,
    },
    /// The program printed `text` (within its output limit).
    Print {
        /// What it printed.
        text: String,
    },
    /// The program called `final_answer(text)`: `text` is the Turn's answer. Its end
    /// follows.
    Answer {
        /// The answer.
        text: String,
    },
    /// The run ended: the program's final value, or why there is none.
    End {
        /// The value or the failure.
        result: Result<Value, Failure>,
    },
}

/// The host's answer to a [`Message::Call`].
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) enum Reply {
    /// The call's result.
    Value(Value),
    /// The call failed: the program gets a `ToolError` with this text.
    Error(String),
}

/// One function of a resource object, as it crosses to the interpreter.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Callable {
    /// The attribute of the resource object.
    attribute: String,
    /// The catalog name it calls.
    tool: String,
    /// Its docstring.
    doc: Option<String>,
}

/// One resource object of a program.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Object {
    /// Its Python name.
    name: String,
    /// The resource's name in the catalog.
    resource: String,
    functions: Vec<Callable>,
}

/// A program to run: its code, its limits, and the functions it may call.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Program {
    pub(crate) code: String,
    pub(crate) limits: Limits,
    objects: Vec<Object>,
    /// Whether it has [`ANSWER_FUNCTION`].
    #[serde(default)]
    answers: bool,
}

impl Program {
    /// `code` under `limits`, calling `functions`.
    pub(crate) fn new(code: String, functions: &Functions, limits: Limits) -> Self {
        let objects = functions
            .iter()
            .filter_map(|(object, list)| {
                let first = list.first()?;
                Some(Object {
                    name: object.to_owned(),
                    resource: first.item.name().resource().to_owned(),
                    functions: list
                        .iter()
                        .map(|f| Callable {
                            attribute: f.attribute.clone(),
                            tool: f.item.name().as_str().to_owned(),
                            doc: f.item.description().map(str::to_owned),
                        })
                        .collect(),
                })
            })
            .collect();
        Self {
            code,
            limits,
            objects,
            answers: false,
        }
    }

    /// The program may end with `final_answer(text)`, which gives the Turn's answer.
    pub(crate) fn answering(mut self, answers: bool) -> Self {
        self.answers = answers;
        self
    }
}

/// A running program, advanced by the host: [`next`](Running::next) runs it on the calling
/// thread until it prints, calls a function or ends, and [`reply`](Running::reply) answers
/// the call it paused at. The thread needs [`STACK_BYTES`] of stack.
pub(crate) struct Running {
    run: Run,
    state: State,
    inputs: Inputs,
    /// The call or the end that follows the prints still queued.
    after: Option<Message>,
}

/// Where a run stands between two [`Running::next`]s.
enum State {
    /// Compiled, not started: the runner and its inputs' values.
    Ready(Box<MontyRun>, Vec<MontyObject>),
    /// Paused at a call of the host, answered by the reply (none: the host never answered).
    Paused(Box<monty::FunctionCall>, Option<Reply>),
    /// Its answer was given; its end comes next.
    Answering(Box<Message>),
    /// Ended (its end was given).
    Ended,
}

impl Running {
    /// The program's next message; asked again after its end, a failure that says so.
    pub(crate) fn next(&mut self) -> Message {
        loop {
            if let Some(text) = self.run.printed.queue.pop_front() {
                return Message::Print { text };
            }
            if let Some(message) = self.after.take() {
                return message;
            }
            let progress = match std::mem::replace(&mut self.state, State::Ended) {
                State::Ready(runner, values) => {
                    let tracker = self.run.tracker();
                    runner.start(
                        values,
                        tracker,
                        PrintWriter::Callback(&mut self.run.printed),
                    )
                }
                State::Paused(call, reply) => {
                    let print = PrintWriter::Callback(&mut self.run.printed);
                    match Run::answer(reply) {
                        Answer::Return(value) => call.resume(value, print),
                        Answer::Raise(exception) => call.resume(exception, print),
                        Answer::End(exception) => call.abort(exception, print),
                    }
                }
                State::Answering(end) => return *end,
                State::Ended => {
                    let ended = Failure::of(FailureKind::Uncaught, "the program has ended");
                    return Message::End { result: Err(ended) };
                }
            };
            let (state, message) = self.run.advance(progress, &self.inputs);
            self.state = state;
            self.after = Some(message);
        }
    }

    /// Answers the call the program paused at; a program that is not paused has nothing to
    /// answer.
    pub(crate) fn reply(&mut self, reply: Reply) {
        if let State::Paused(_, answer) = &mut self.state {
            *answer = Some(reply);
        }
    }
}

/// Compiles `program`: the run, ready for its first [`Running::next`]. A program that does
/// not compile ends at once, with its syntax error.
pub(crate) fn start(program: Program) -> Running {
    let mut inputs = Inputs::of(&program.objects, program.answers);
    let run = Run {
        printed: Printed::new(program.limits.output),
        limits: program.limits,
        calls: 0,
        reached: None,
        answer: None,
    };
    let source = format!("{PRELUDE}{}", program.code);
    let names = std::mem::take(&mut inputs.names);
    let (state, after) = match MontyRun::new(source, SCRIPT_NAME, names, CompileOptions::default())
    {
        Ok(runner) => (
            State::Ready(Box::new(runner), std::mem::take(&mut inputs.values)),
            None,
        ),
        Err(e) => (
            State::Ended,
            Some(Message::End {
                result: Err(run.failure(&e)),
            }),
        ),
    };
    Running {
        run,
        state,
        inputs,
        after,
    }
}

/// The program's inputs: one object per resource.
struct Inputs {
    names: Vec<String>,
    values: Vec<MontyObject>,
    /// The functions' names (their catalog names), for the calls the program makes.
    tools: HashSet<String>,
    /// Resource object id to the resource's name (in the catalog), for a call of a function
    /// the object does not have.
    objects: HashMap<MontyUuid, String>,
    /// Whether [`ANSWER_FUNCTION`] is one of them.
    answers: bool,
}

impl Inputs {
    fn of(objects: &[Object], answers: bool) -> Self {
        let mut inputs = Self {
            names: Vec::new(),
            values: Vec::new(),
            tools: HashSet::new(),
            objects: HashMap::new(),
            answers: false,
        };
        for (n, object) in (1u128..).zip(objects) {
            let attrs: DictPairs = object
                .functions
                .iter()
                .map(|f| {
                    inputs.tools.insert(f.tool.clone());
                    (
                        MontyObject::String(f.attribute.clone()),
                        MontyObject::Function {
                            name: f.tool.clone(),
                            docstring: f.doc.clone(),
                        },
                    )
                })
                .collect();
            let instance_id = MontyUuid::from_u128(u128::MAX - n);
            inputs.objects.insert(instance_id, object.resource.clone());
            inputs.names.push(object.name.clone());
            inputs
                .values
                .push(MontyObject::ClassInstance(Box::new(MontyClassInstance {
                    class_type: MontyClassType {
                        name: object.name.clone(),
                        id: MontyUuid::from_u128(n),
                        host_defined: true,
                        is_dataclass: false,
                        attrs: DictPairs::default(),
                    },
                    instance_id,
                    attrs,
                })));
        }
        if answers {
            inputs.names.push(ANSWER_FUNCTION.to_owned());
            inputs.values.push(MontyObject::Function {
                name: ANSWER_FUNCTION.to_owned(),
                docstring: Some("Ends the program: `text` is the answer to the user.".to_owned()),
            });
            inputs.answers = true;
        }
        inputs
    }
}

/// The interpreter's side of a run.
struct Run {
    printed: Printed,
    limits: Limits,
    calls: usize,
    /// The limit the host enforced (calls), if it did.
    reached: Option<Limit>,
    /// The answer `final_answer` gave, which ended the program.
    answer: Option<String>,
}

impl Run {
    /// The resource limits of a run.
    fn tracker(&self) -> ResourceTracker {
        ResourceTracker::new(ResourceLimits {
            max_duration: Some(self.limits.time),
            max_memory: Some(self.limits.memory),
            gc_interval: None,
            max_recursion_depth: self.limits.recursion,
            // One more than the calls: the host ends the program at the first call too many.
            max_suspensions: self.limits.calls.saturating_add(1),
        })
    }

    /// Runs the program on from `progress` until it calls the host or ends: where it then
    /// stands, and the message that says so. Whatever it may not do (files, the network,
    /// awaiting, a call it cannot make) is answered here without the host.
    fn advance(
        &mut self,
        mut progress: Result<RunProgress, MontyException>,
        inputs: &Inputs,
    ) -> (State, Message) {
        loop {
            let next = match progress {
                Err(e) => {
                    if let Some(text) = self.answer.take() {
                        let end = Message::End {
                            result: Ok(Value::Null),
                        };
                        return (State::Answering(Box::new(end)), Message::Answer { text });
                    }
                    let result = Err(self.failure(&e));
                    return (State::Ended, Message::End { result });
                }
                Ok(RunProgress::Complete(value)) => {
                    let result = self.value(&value);
                    return (State::Ended, Message::End { result });
                }
                Ok(RunProgress::FunctionCall(call)) => match self.request(inputs, &call) {
                    Ok((tool, args)) => {
                        return (
                            State::Paused(Box::new(call), None),
                            Message::Call { tool, args },
                        );
                    }
                    Err(answer) => {
                        let print = PrintWriter::Callback(&mut self.printed);
                        match answer {
                            Answer::Return(value) => call.resume(value, print),
                            Answer::Raise(exception) => call.resume(exception, print),
                            Answer::End(exception) => call.abort(exception, print),
                        }
                    }
                },
                Ok(RunProgress::OsCall(call)) => {
                    let refused = MontyException::new(
                        ExcType::PermissionError,
                        Some(format!(
                            "`{}` is not available: a program reaches files, the network and the environment only through the tools",
                            call.function_call.name()
                        )),
                    );
                    call.resume(refused, PrintWriter::Callback(&mut self.printed))
                }
                Ok(RunProgress::NameLookup(lookup)) => lookup.resume(
                    NameLookupResult::Undefined,
                    PrintWriter::Callback(&mut self.printed),
                ),
                Ok(RunProgress::ResolveFutures(waiting)) => {
                    let refused = MontyException::new(
                        ExcType::NotImplementedError,
                        Some("a program cannot await: call the tools directly".into()),
                    );
                    waiting.abort(refused, PrintWriter::Callback(&mut self.printed))
                }
            };
            progress = next;
        }
    }

    /// A call of the program as the host's call: the catalog name and the keyword arguments;
    /// or what the program gets without the host (an exception, or the end).
    fn request(
        &mut self,
        inputs: &Inputs,
        call: &monty::FunctionCall,
    ) -> Result<(String, Map<String, Value>), Answer> {
        let raise = |kind, message: String| Answer::Raise(MontyException::new(kind, Some(message)));
        // A function its resource object does not have is still a call of the Step: the
        // catalog decides (`E_TOOL_NOT_IN_CATALOG` for a tool the Step does not offer).
        let tool = match call.object_id {
            Some(id) => match inputs.objects.get(&id) {
                Some(resource) => format!("{resource}__{}", call.function_name),
                None => {
                    return Err(raise(
                        ExcType::AttributeError,
                        format!("no function `{}`", call.function_name),
                    ));
                }
            },
            None if inputs.tools.contains(&call.function_name) => call.function_name.clone(),
            None if inputs.answers && call.function_name == ANSWER_FUNCTION => {
                return Err(self.final_answer(call));
            }
            None => {
                return Err(raise(
                    ExcType::NameError,
                    format!("name '{}' is not defined", call.function_name),
                ));
            }
        };
        if !call.args.is_empty() {
            return Err(raise(
                ExcType::TypeError,
                format!("`{tool}` takes keyword arguments only, as its stub shows (name=value)"),
            ));
        }
        let mut args = Map::new();
        for (key, value) in &call.kwargs {
            let MontyObject::String(key) = key else {
                return Err(raise(
                    ExcType::TypeError,
                    "keyword argument names must be strings".into(),
                ));
            };
            match to_json(value) {
                Ok(value) => args.insert(key.clone(), value),
                Err(e) => {
                    return Err(raise(ExcType::ValueError, format!("argument `{key}`: {e}")));
                }
            };
        }
        if self.calls >= self.limits.calls {
            self.reached = Some(Limit::Calls);
            return Err(Answer::End(MontyException::new(
                ExcType::RuntimeError,
                Some(format!(
                    "too many tool calls: a program may make {}",
                    self.limits.calls
                )),
            )));
        }
        self.calls += 1;
        Ok((tool, args))
    }

    /// `final_answer(text)`: the answer is kept and the program ends where it stands (it
    /// cannot catch that). A text that is not a string is given as its JSON.
    fn final_answer(&mut self, call: &monty::FunctionCall) -> Answer {
        let given = match (call.args.as_slice(), call.kwargs.as_slice()) {
            ([text], []) => text,
            ([], [(MontyObject::String(key), text)]) if key == "text" => text,
            _ => {
                return Answer::Raise(MontyException::new(
                    ExcType::TypeError,
                    Some(format!(
                        "`{ANSWER_FUNCTION}` takes one argument, the answer's text"
                    )),
                ));
            }
        };
        let text = match given {
            MontyObject::String(text) => text.clone(),
            other => match to_json(other) {
                Ok(value) => value.to_string(),
                Err(e) => {
                    return Answer::Raise(MontyException::new(
                        ExcType::ValueError,
                        Some(format!("the answer cannot be read: {e}")),
                    ));
                }
            },
        };
        if text.len() > self.limits.output {
            self.reached = Some(Limit::Output);
            return Answer::End(MontyException::new(
                ExcType::MemoryError,
                Some(format!(
                    "the answer is {} bytes, more than the {} a program may give",
                    text.len(),
                    self.limits.output
                )),
            ));
        }
        self.answer = Some(text);
        Answer::End(MontyException::new(
            ExcType::SystemExit,
            Some("the program gave its answer".into()),
        ))
    }

    /// What the program gets for the host's reply to its call.
    fn answer(reply: Option<Reply>) -> Answer {
        match reply {
            // The host held the result to `Limits::result` before it replied.
            Some(Reply::Value(value)) => match from_json(&value) {
                Ok(value) => Answer::Return(value),
                Err(e) => Answer::Raise(MontyException::new(
                    ExcType::ValueError,
                    Some(format!("the result cannot be read: {e}")),
                )),
            },
            Some(Reply::Error(text)) => {
                Answer::Raise(MontyException::new(ExcType::RuntimeError, Some(text)))
            }
            None => Answer::End(MontyException::new(
                ExcType::RuntimeError,
                Some("the call running the program was stopped".into()),
            )),
        }
    }

    /// The program's final value, as JSON within the output limit.
    fn value(&self, value: &MontyObject) -> Result<Value, Failure> {
        let output = FailureKind::Limit(Limit::Output);
        if self.printed.overflowed {
            return Err(Failure::of(output, "the program printed more than it may"));
        }
        let value = to_json(value).map_err(|e| {
            let report = format!("the program's value cannot be read: {e}");
            Failure::of(FailureKind::Uncaught, report)
        })?;
        let size = serde_json::to_string(&value).map_or(usize::MAX, |s| s.len());
        if size > self.limits.output {
            let report = format!(
                "the program's value is {size} bytes as JSON, more than {}",
                self.limits.output
            );
            return Err(Failure::of(output, report));
        }
        Ok(value)
    }

    /// The failure an exception that ended the program stands for, with the program's own
    /// line numbers.
    fn failure(&self, e: &MontyException) -> Failure {
        let frames: Vec<StackFrame> = e
            .traceback()
            .iter()
            .map(|frame| {
                let mut frame = frame.clone();
                if frame.filename == SCRIPT_NAME {
                    frame.start.line = frame.start.line.saturating_sub(1).max(1);
                    frame.end.line = frame.end.line.saturating_sub(1).max(1);
                }
                frame
            })
            .collect();
        let line = frames.last().map(|f| f.start.line);
        let report =
            MontyException::with_traceback(e.exc_type(), e.message().map(str::to_owned), frames)
                .to_string();
        let message = e.message().unwrap_or_default();
        let kind = if let Some(limit) = self.reached {
            FailureKind::Limit(limit)
        } else if self.printed.overflowed {
            FailureKind::Limit(Limit::Output)
        } else {
            match e.exc_type() {
                ExcType::SyntaxError => FailureKind::Syntax,
                ExcType::TimeoutError if message.starts_with("time limit exceeded") => {
                    FailureKind::Limit(Limit::Time)
                }
                ExcType::MemoryError if message.starts_with("memory limit exceeded") => {
                    FailureKind::Limit(Limit::Memory)
                }
                ExcType::RecursionError => FailureKind::Limit(Limit::Recursion),
                _ => FailureKind::Uncaught,
            }
        };
        Failure { kind, report, line }
    }
}

/// What the interpreter does with a call of the program.
enum Answer {
    /// Returns this value.
    Return(MontyObject),
    /// Raises this exception, which the program may catch.
    Raise(MontyException),
    /// Ends the program with this exception, which it cannot catch.
    End(MontyException),
}

/// What the program printed, queued for the host up to the output limit: the host takes it
/// before the call or the end that follows. Past the limit, `print` raises, and the run fails
/// with the output limit even if the program catches that.
struct Printed {
    len: usize,
    max: usize,
    overflowed: bool,
    queue: VecDeque<String>,
}

impl Printed {
    fn new(max: usize) -> Self {
        Self {
            len: 0,
            max,
            overflowed: false,
            queue: VecDeque::new(),
        }
    }

    fn push(&mut self, text: &str) -> Result<(), MontyException> {
        let mut cut = text.len();
        if self.len.saturating_add(text.len()) > self.max {
            self.overflowed = true;
            cut = self.max.saturating_sub(self.len).min(text.len());
            while !text.is_char_boundary(cut) {
                cut -= 1;
            }
        }
        if cut > 0 {
            self.len += cut;
            self.queue.push_back(text[..cut].to_owned());
        }
        if self.overflowed {
            return Err(MontyException::new(
                ExcType::MemoryError,
                Some(format!(
                    "output limit exceeded: a program may print {} bytes",
                    self.max
                )),
            ));
        }
        Ok(())
    }
}

impl PrintWriterCallback for Printed {
    fn stdout_write(&mut self, output: Cow<'_, str>) -> Result<(), MontyException> {
        self.push(&output)
    }

    fn stdout_push(&mut self, end: char) -> Result<(), MontyException> {
        self.push(end.encode_utf8(&mut [0; 4]))
    }
}

#[cfg(test)]
pub(super) mod tests_support {
    use super::*;
    use crate::tools::catalog::{CatalogItem, ToolCatalog};
    use crate::tools::name::ToolName;

    pub(crate) fn functions() -> Functions {
        let mut catalog = ToolCatalog::new();
        for name in ["notes__list", "notes__add", "file-system__read"] {
            catalog.push(CatalogItem::new(ToolName::parse(name).unwrap()));
        }
        Functions::of(&catalog, "code__run")
    }

    pub(crate) fn limits() -> Limits {
        Limits {
            time: Duration::from_secs(5),
            memory: 1 << 20,
            recursion: 50,
            output: 1000,
            calls: 5,
            result: 1000,
        }
    }

    /// Runs `code` on a thread with the interpreter's stack, answering each call with
    /// `answer(tool, args)`; the calls and the outcome.
    pub(super) async fn run(
        code: &str,
        answer: impl Fn(&str, &Map<String, Value>) -> Reply + Send + 'static,
    ) -> (Vec<(String, Value)>, Outcome) {
        run_program(Program::new(code.into(), &functions(), limits()), answer).await
    }

    /// [`run`] for a program made by the test.
    pub(super) async fn run_program(
        program: Program,
        answer: impl Fn(&str, &Map<String, Value>) -> Reply + Send + 'static,
    ) -> (Vec<(String, Value)>, Outcome) {
        let thread = std::thread::Builder::new().stack_size(STACK_BYTES);
        let run = move || {
            let mut running = start(program);
            let mut calls = Vec::new();
            let mut printed = String::new();
            let mut given = None;
            loop {
                match running.next() {
                    Message::Call { tool, args } => {
                        running.reply(answer(&tool, &args));
                        calls.push((tool, Value::Object(args)));
                    }
                    Message::Print { text } => printed.push_str(&text),
                    Message::Answer { text } => given = Some(text),
                    Message::End { result } => {
                        let outcome = Outcome {
                            result,
                            printed,
                            answer: given,
                        };
                        return (calls, outcome);
                    }
                }
            }
        };
        thread.spawn(run).unwrap().join().unwrap()
    }
}

#[cfg(test)]
mod tests {
    use super::tests_support::*;
    use super::*;
    use serde_json::json;

    #[tokio::test]
    async fn a_function_call_is_a_request_with_the_catalog_name_and_the_keyword_arguments() {
        let (calls, outcome) = run(
            "n = notes.list(tag='a')['n']\nfile_system.read(path='x')\nprint('n is', n)\nn + 1",
            |tool, _| match tool {
                "notes__list" => Reply::Value(json!({"n": 41})),
                _ => Reply::Value(json!("text")),
            },
        )
        .await;
        assert_eq!(
            calls,
            [
                ("notes__list".to_owned(), json!({"tag": "a"})),
                ("file-system__read".to_owned(), json!({"path": "x"})),
            ]
        );
        assert_eq!(outcome.result, Ok(json!(42)));
        assert_eq!(outcome.printed, "n is 41\n");
    }

    #[tokio::test]
    async fn final_answer_ends_the_program_with_its_text_and_takes_one_argument() {
        let answering =
            |code: &str| Program::new(code.into(), &functions(), limits()).answering(true);
        let (calls, outcome) = run_program(
            answering(
                "n = notes.list()['n']\nfinal_answer('there are ' + str(n))\nnotes.add(text='x')",
            ),
            |_, _| Reply::Value(json!({"n": 3})),
        )
        .await;
        assert_eq!(calls.len(), 1, "the program ended at its answer: {calls:?}");
        assert_eq!(outcome.result, Ok(Value::Null));
        assert_eq!(outcome.answer.as_deref(), Some("there are 3"));
        // Not a string: its JSON. Two arguments: a TypeError the program may catch.
        let (_, outcome) = run_program(answering("final_answer({'n': 1})"), |_, _| {
            Reply::Value(Value::Null)
        })
        .await;
        assert_eq!(outcome.answer.as_deref(), Some("{\"n\":1}"));
        let (_, outcome) = run_program(
            answering("out = 'x'\ntry:\n    final_answer('a', 'b')\nexcept TypeError:\n    out = 'caught'\nout"),
            |_, _| Reply::Value(Value::Null),
        )
        .await;
        assert_eq!(
            (outcome.result, outcome.answer),
            (Ok(json!("caught")), None)
        );
        // Larger than the output limit: the output limit.
        let (_, outcome) = run_program(answering("final_answer('x' * 5000)"), |_, _| {
            Reply::Value(Value::Null)
        })
        .await;
        assert_eq!(
            outcome.result.unwrap_err().kind,
            FailureKind::Limit(Limit::Output)
        );
        // Without it, the name is not defined.
        let (_, outcome) = run("final_answer('hi')", |_, _| Reply::Value(Value::Null)).await;
        let failure = outcome.result.unwrap_err();
        assert!(failure.report.contains("NameError"), "{}", failure.report);
        assert_eq!(outcome.answer, None);
    }

    #[tokio::test]
    async fn a_method_the_object_lacks_is_still_a_call_for_the_catalog_to_decide() {
        let (calls, _) = run("notes.remove(id=1)", |_, _| Reply::Value(Value::Null)).await;
        assert_eq!(calls, [("notes__remove".to_owned(), json!({"id": 1}))]);
    }

    #[tokio::test]
    async fn positional_arguments_and_failed_calls_raise_exceptions_the_program_catches() {
        let (calls, outcome) = run(
            "out = []\ntry:\n    notes.add('x')\nexcept TypeError as e:\n    out.append('type')\ntry:\n    notes.add(text='x')\nexcept ToolError as e:\n    out.append(str(e))\nout",
            |_, _| Reply::Error("E_NOTES_FULL: no room".into()),
        )
        .await;
        assert_eq!(calls.len(), 1, "the positional call never reached the host");
        assert_eq!(outcome.result, Ok(json!(["type", "E_NOTES_FULL: no room"])));
    }

    #[tokio::test]
    async fn a_syntax_error_fails_with_its_line_and_an_uncaught_exception_with_its_traceback() {
        let (_, outcome) = run("x = (1,\ny = 2", |_, _| Reply::Value(Value::Null)).await;
        let failure = outcome.result.unwrap_err();
        assert_eq!(failure.kind, FailureKind::Syntax);
        assert!(failure.report.contains("SyntaxError"), "{}", failure.report);
        let (_, outcome) = run("print('a')\n1 / 0", |_, _| Reply::Value(Value::Null)).await;
        let failure = outcome.result.unwrap_err();
        assert_eq!(
            (failure.kind, failure.line),
            (FailureKind::Uncaught, Some(2))
        );
        assert!(
            failure.report.contains("ZeroDivisionError"),
            "{}",
            failure.report
        );
        assert_eq!(outcome.printed, "a\n");
    }

    #[tokio::test]
    async fn a_value_nested_a_hundred_thousand_deep_fails_without_harming_the_host() {
        let (calls, outcome) = run(
            "a = []\nfor i in range(100000):\n    a = [a]\nnotes.list(x=a)\na",
            |_, _| Reply::Value(Value::Null),
        )
        .await;
        assert!(calls.is_empty(), "the argument could not cross: {calls:?}");
        let failure = outcome.result.unwrap_err();
        assert!(
            failure.report.contains("ValueError: argument `x`"),
            "{}",
            failure.report
        );
    }

    #[tokio::test]
    async fn a_list_that_holds_itself_is_not_a_value_the_program_can_return() {
        let (_, outcome) = run("a = [1]\na.append(a)\na", |_, _| Reply::Value(Value::Null)).await;
        let failure = outcome.result.unwrap_err();
        assert_eq!(failure.kind, FailureKind::Uncaught);
        assert!(
            failure.report.contains("cannot leave the program"),
            "{}",
            failure.report
        );
    }

    #[tokio::test]
    async fn the_modules_the_description_names_can_be_imported() {
        let (_, outcome) = run(
            "import json, re, math, datetime, collections, itertools, functools\njson.dumps(notes.list())",
            |_, _| Reply::Value(json!({"n": 1})),
        )
        .await;
        assert_eq!(outcome.result, Ok(json!("{\"n\": 1}")));
    }
}
