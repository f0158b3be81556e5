//! The code tool: its registry entry, the catalogs of a Step that offers it, and its handler,
//! which runs the program and makes each of its calls through the Step's route
//! ([`StepCalls`]).

use std::fmt::Write;
use std::sync::Arc;

use serde_json::{Value, json};

use super::interpreter::{Interpreter, Request};
use super::names::Functions;
use super::program::{Failure, FailureKind, Limits, Outcome, Program, Reply, STACK_BYTES};
use super::search::{SEARCH_NAME, parameters as search_parameters, search};
use super::stubs::describe;
use super::worker::WorkerLauncher;
use super::{CodeMode, TOOL_NAME, codes};
use crate::tools::annotations::ExportAnnotations;
use crate::tools::catalog::{CatalogItem, ToolCatalog};
use crate::tools::content::{Content, ResourceBody};
use crate::tools::context::{Message, StepCalls, ToolContext};
use crate::tools::error::ToolError;
use crate::tools::handler::handler_fn;
use crate::tools::registry::{RegisteredExport, ToolRegistry};
use crate::tools::result::{JsonObject, ToolCall, ToolCallResult};
use crate::tools::tool::{Export, Tool, ToolSource};

/// Where a code call's output holds the answer its program gave (`final_answer`).
const ANSWER_KEY: &str = "answer";

/// The answer that ends a Turn whose last Step's calls were all code calls and one of whose
/// programs gave one (the last of them), from `messages`, the conversation so far: the
/// assistant message with the calls, then their tool messages and nothing else (a user's
/// message or a completion after them is for the model to answer).
pub(crate) fn given_answer(messages: &[Message]) -> Option<String> {
    let at = messages.iter().rposition(|m| m.role == "assistant")?;
    let assistant = &messages[at];
    if assistant.tool_calls.is_empty()
        || assistant.tool_calls.iter().any(|c| c.name != TOOL_NAME)
        || messages[at + 1..].iter().any(|m| m.role != "tool")
    {
        return None;
    }
    messages[at + 1..]
        .iter()
        .rev()
        .filter(|m| m.role == "tool")
        .filter_map(|m| serde_json::from_str::<ToolCallResult>(m.content.as_deref()?).ok())
        .find_map(|r| r.output?.get(ANSWER_KEY)?.as_str().map(str::to_owned))
}

/// The longest program, in characters.
const MAX_CODE_CHARS: u64 = 64 * 1024;
/// The error message limit of the code tool: room for a traceback, what was printed, and the
/// calls made.
const ERROR_MESSAGE_LIMIT: usize = 8000;
/// How much of a failed program's report and prints its error keeps.
const KEPT_REPORT_CHARS: usize = 3000;
const KEPT_PRINTED_CHARS: usize = 2000;
/// How many of a failed program's calls its error lists.
const LISTED_CALLS: usize = 40;

/// Why the code tool could not be built.
#[derive(Debug, thiserror::Error)]
#[error("the code tool cannot be built: {reason}")]
pub(crate) struct CodeModeError {
    reason: String,
}

/// Code mode, ready for an agent instance or a server: the code tool's registry entry (its
/// handler holds the limits), the search tool's if it is offered, and whether the tools stay
/// callable directly.
pub(crate) struct CodeOffer {
    entry: Arc<RegisteredExport>,
    search: Option<Arc<RegisteredExport>>,
    direct: bool,
    max_calls: usize,
    /// Whether a program may end the Turn with its answer.
    answers: bool,
}

/// What one Step shows and allows.
pub(crate) struct Offered {
    /// What the model is shown, and what its own calls are checked against.
    pub(crate) shown: ToolCatalog,
    /// What the program's calls are checked against: the Step's catalog without the code
    /// mode's own tools and without the tools only an MCP Apps page may call.
    pub(crate) inner: Arc<ToolCatalog>,
}

impl CodeOffer {
    /// Builds the code tool for `mode`, and its search when `mode` has one. With `turns` (an
    /// agent's Steps, not a server's calls), a program may end the Turn with its answer when
    /// `mode` lets it ([`CodeMode::final_answer`]).
    pub(crate) fn new(mode: &CodeMode, turns: bool) -> Result<Self, CodeModeError> {
        let failed = |reason: String| CodeModeError { reason };
        let limits = mode.limits;
        let answers = turns && mode.answers;
        let parameters = json!({
            "type": "object",
            "properties": {
                "code": {
                    "type": "string",
                    "description": "The Python program. Its last expression is its result.",
                    "maxLength": MAX_CODE_CHARS,
                }
            },
            "required": ["code"],
            "additionalProperties": false,
        });
        let worker = mode.worker.clone();
        let handler = handler_fn(move |ctx, args| run(ctx, args, limits, answers, worker.clone()));
        let (resource, export) = TOOL_NAME.split_once("__").unwrap_or(("code", "run"));
        let mut tool = Tool::builder(resource)
            .description("Code mode: one program calls the Step's tools")
            .error_message_limit(ERROR_MESSAGE_LIMIT)
            .source(ToolSource::extension("code-mode"))
            .export(Export::new(export, parameters, handler));
        if let Some(ranker) = &mode.search {
            let ranker = Arc::clone(ranker);
            let handler = handler_fn(move |ctx, args| search(ctx, args, Arc::clone(&ranker)));
            let export = SEARCH_NAME.split_once("__").map_or("search", |(_, e)| e);
            tool = tool.export(
                Export::new(export, search_parameters(), handler)
                    .with_description(
                        "Finds the code tool's functions for what you need: answers the Python \
                         stubs of the best matches, best first.",
                    )
                    .with_annotations(ExportAnnotations::default().read_only(true)),
            );
        }
        let tool = tool.build().map_err(|e| failed(e.to_string()))?;
        let registry = ToolRegistry::builder()
            .tool(tool)
            .build()
            .map_err(|e| failed(e.to_string()))?;
        let entry = |name: &str| {
            registry
                .get(name)
                .ok_or_else(|| failed(format!("`{name}` is not in its own registry")))
        };
        Ok(Self {
            entry: entry(TOOL_NAME)?,
            search: mode
                .search
                .as_ref()
                .map(|_| entry(SEARCH_NAME))
                .transpose()?,
            direct: mode.direct,
            max_calls: limits.calls,
            answers,
        })
    }

    /// The catalogs of a Step whose catalog (after step middleware) is `catalog`: the code
    /// tool, described with the stubs of the Step's tools (or, with a search and a big
    /// catalog, pointing to it), and the search, beside the tools or alone.
    pub(crate) fn offer(&self, catalog: ToolCatalog) -> Offered {
        let mut tools = catalog;
        tools.remove(TOOL_NAME);
        tools.remove(SEARCH_NAME);
        // A program is the model's: a tool only an MCP Apps page may call is none of its
        // functions, though the tools shown beside the code tool keep it for the page.
        let mut inner = tools.clone();
        inner.retain(|item| {
            item.ui()
                .is_none_or(crate::tools::ui::ExportUi::visible_to_model)
        });
        let search = self.search.as_ref().map(|_| SEARCH_NAME);
        let description = describe(
            &Functions::of(&inner, TOOL_NAME),
            self.max_calls,
            search,
            self.answers,
        );
        let item = CatalogItem::from_entry(&self.entry).with_description(description);
        let mut shown = if self.direct {
            tools
        } else {
            ToolCatalog::new()
        };
        shown.push(item);
        if let Some(entry) = &self.search {
            shown.push(CatalogItem::from_entry(entry));
        }
        Offered {
            shown,
            inner: Arc::new(inner),
        }
    }
}

/// One call the program made, for the error of a program that failed.
struct Made {
    tool: String,
    code: Option<String>,
}

/// The handler of the code tool. The program and its calls run on a thread of their own,
/// with the interpreter's stack: each call the program makes is made from there, with nothing
/// to hand over between the program and the executor. Dropping the handler (the code call
/// was cancelled or timed out) drops the call in flight and ends the program where it stands.
async fn run(
    ctx: ToolContext,
    args: JsonObject,
    limits: Limits,
    answers: bool,
    worker: Option<Arc<dyn WorkerLauncher>>,
) -> Result<Value, ToolError> {
    let Some(code) = args.get("code").and_then(Value::as_str) else {
        return Err(ToolError::new("`code` must be a string")
            .with_code(crate::tools::error::codes::INVALID_ARGS));
    };
    let Some(calls) = ctx.step_calls().cloned() else {
        return Err(ToolError::new(format!(
            "`{TOOL_NAME}` runs only in a Step that offers code mode"
        ))
        .with_code(codes::ERROR)
        .with_suggestion("call the tools directly"));
    };
    let functions = Functions::of(calls.catalog(), TOOL_NAME);
    let program = Program::new(code.to_owned(), &functions, limits).answering(answers);
    let handle = tokio::runtime::Handle::try_current().map_err(cannot_start)?;
    let span = tracing::Span::current();
    let (done, answer) = tokio::sync::oneshot::channel();
    let thread = move || {
        let mut done = done;
        let ran = handle.block_on(async {
            tokio::select! {
                biased;
                () = done.closed() => None,
                result = tracing::Instrument::instrument(
                    drive(ctx, calls, program, worker), span) => Some(result),
            }
        });
        if let Some(result) = ran {
            let _ = done.send(result);
        }
    };
    std::thread::Builder::new()
        .name("goondan-code".into())
        .stack_size(STACK_BYTES)
        .spawn(thread)
        .map_err(cannot_start)?;
    answer.await.unwrap_or_else(|_| {
        Err(ToolError::new("the program's thread ended without an answer").with_code(codes::ERROR))
    })
}

/// The error of a program whose interpreter (its thread, its worker) could not start.
fn cannot_start(e: impl std::fmt::Display) -> ToolError {
    ToolError::new(format!("the interpreter cannot start: {e}"))
        .with_code(codes::ERROR)
        .retryable()
}

/// Runs `program` to its end, making each of its calls through `calls`.
async fn drive(
    ctx: ToolContext,
    calls: Arc<dyn StepCalls>,
    program: Program,
    worker: Option<Arc<dyn WorkerLauncher>>,
) -> Result<Value, ToolError> {
    let mut interpreter = Interpreter::start(program, worker.as_ref()).map_err(cannot_start)?;
    let mut made = Vec::new();
    // What the program prints goes to the host as progress (an MCP client that asked for
    // progress, `goondan run`'s terminal), one report per line.
    let mut lines = Lines::default();
    loop {
        match interpreter.next().await {
            Request::Printed(text) => lines.add(&text, &ctx),
            Request::Call { tool, args } => {
                let index = made.len() + 1;
                let id = format!("{}.{index}", ctx.tool_call_id());
                let call = ToolCall::new(id, tool.clone(), Value::Object(args));
                // An error: the program, run again after a crash, does not match its journal;
                // dropping the interpreter stops it.
                let result = calls.call(call, index, &ctx).await?;
                made.push(Made {
                    tool,
                    code: result.error_code().map(str::to_owned),
                });
                interpreter.reply(reply(result));
            }
            Request::Finished(outcome) => {
                lines.flush(&ctx);
                calls.ended(&ctx, made.len())?;
                return finish(outcome, &made);
            }
        }
    }
}

/// What a program printed, reported as progress one line at a time (the interpreter hands
/// over each piece of a `print`: its arguments, their separators, its end).
#[derive(Default)]
struct Lines {
    partial: String,
    reported: u32,
}

impl Lines {
    /// Takes `text`, and reports each line it completes.
    fn add(&mut self, text: &str, ctx: &ToolContext) {
        self.partial.push_str(text);
        while let Some(end) = self.partial.find('\n') {
            let line: String = self.partial.drain(..=end).collect();
            self.report(line.trim_end_matches(['\n', '\r']), ctx);
        }
    }

    /// Reports the line the program left unfinished, if any.
    fn flush(&mut self, ctx: &ToolContext) {
        let rest = std::mem::take(&mut self.partial);
        if !rest.is_empty() {
            self.report(&rest, ctx);
        }
    }

    fn report(&mut self, line: &str, ctx: &ToolContext) {
        self.reported += 1;
        ctx.progress(f64::from(self.reported), None, Some(line));
    }
}

/// What the program gets for a call's result.
fn reply(result: ToolCallResult) -> Reply {
    if let Some(err) = &result.error {
        let mut text = format!("{}: {}", err.code(), err.message());
        if let Some(s) = err.suggestion() {
            let _ = write!(text, " (suggestion: {s})");
        }
        return Reply::Error(text);
    }
    if result.is_pending() {
        return Reply::Error(format!(
            "{}: `{}` answers later (a pending result), which a program cannot wait for; call it directly",
            codes::ERROR,
            result.tool_name
        ));
    }
    match (result.output, result.content.is_empty()) {
        (Some(output), _) => Reply::Value(output),
        (None, false) => Reply::Value(Value::Array(result.content.iter().map(described).collect())),
        (None, true) => Reply::Value(Value::Null),
    }
}

/// A content part as a program sees it: text as text, binary data described by its type
/// and size (a program has no use for base64; the model asks for the part itself).
fn described(part: &Content) -> Value {
    match part {
        Content::Image(b) => {
            json!({"type": "image", "mimeType": b.mime_type, "bytes": b.data.len()})
        }
        Content::Audio(b) => {
            json!({"type": "audio", "mimeType": b.mime_type, "bytes": b.data.len()})
        }
        Content::Resource(r) => match &r.body {
            ResourceBody::Text(text) => {
                json!({"type": "resource", "uri": r.uri, "mimeType": r.mime_type, "text": text})
            }
            ResourceBody::Blob(b) => {
                json!({"type": "resource", "uri": r.uri, "mimeType": r.mime_type, "bytes": b.len()})
            }
        },
        other => other.to_json(),
    }
}

/// The code tool's answer for a finished run.
fn finish(outcome: Outcome, made: &[Made]) -> Result<Value, ToolError> {
    let Outcome {
        result,
        printed,
        answer,
    } = outcome;
    match result {
        Ok(value) => {
            let mut output = json!({"value": value, "printed": printed, "calls": made.len()});
            if let Some(answer) = answer {
                output[ANSWER_KEY] = Value::String(answer);
            }
            Ok(output)
        }
        Err(failure) => Err(failure_error(&failure, &printed, made)),
    }
}

/// The structured error of a failed program: what failed and where, what it printed, and the
/// calls it made.
fn failure_error(failure: &Failure, printed: &str, made: &[Made]) -> ToolError {
    let (code, headline, suggestion) = match &failure.kind {
        FailureKind::Syntax => (
            codes::SYNTAX,
            "the program does not parse".to_owned(),
            "fix the line the error points at; the interpreter runs a subset of Python 3",
        ),
        FailureKind::Uncaught => (
            codes::ERROR,
            "the program raised an exception it did not catch".to_owned(),
            "fix the line the traceback ends at, or catch the exception (a failed tool call raises ToolError)",
        ),
        FailureKind::Worker => (
            codes::ERROR,
            "the program's worker process failed".to_owned(),
            "run the program again; if it fails the same way, do less in one program",
        ),
        FailureKind::Limit(limit) => (
            codes::LIMIT,
            format!("the program reached its {} limit", limit.name()),
            "do less in one program: fewer calls, smaller values, no unbounded loops or recursion",
        ),
    };
    let mut message = headline;
    if let Some(line) = failure.line {
        let _ = write!(message, " (line {line})");
    }
    let _ = write!(message, ":\n{}", head(&failure.report, KEPT_REPORT_CHARS));
    if !printed.is_empty() {
        let _ = write!(
            message,
            "\nprinted before it stopped:\n{}",
            tail(printed, KEPT_PRINTED_CHARS)
        );
    }
    let listed: Vec<String> = made
        .iter()
        .take(LISTED_CALLS)
        .map(|m| format!("{} {}", m.tool, m.code.as_deref().unwrap_or("ok")))
        .collect();
    let _ = write!(message, "\ntool calls made: {}", made.len());
    if !listed.is_empty() {
        let more = if made.len() > LISTED_CALLS {
            ", ..."
        } else {
            ""
        };
        let _ = write!(message, " ({}{more})", listed.join(", "));
    }
    ToolError::new(message)
        .with_code(code)
        .with_suggestion(suggestion)
}

/// The first `max` characters of `text`.
fn head(text: &str, max: usize) -> &str {
    text.char_indices()
        .nth(max)
        .map_or(text, |(at, _)| &text[..at])
}

/// The last `max` characters of `text`.
fn tail(text: &str, max: usize) -> &str {
    let count = text.chars().count();
    let start = text.char_indices().nth(count.saturating_sub(max));
    start.map_or(text, |(at, _)| &text[at..])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_answer_a_program_gave_ends_the_turn_only_right_after_its_code_calls() {
        let call = |id: &str, name: &str| ToolCall::new(id, name, json!({}));
        // A tool message holds its result as JSON.
        let result = |id: &str, name: &str, output: Value| {
            let content = serde_json::to_string(&ToolCallResult::ok(id, name, output)).unwrap();
            let mut message = Message::assistant(format!("r-{id}"), Some(content), Vec::new());
            message.role = "tool".into();
            message
        };
        let answered = json!({"value": null, "printed": "", "calls": 1, "answer": "42 rows"});
        let code = Message::assistant("m1", None, vec![call("c1", TOOL_NAME)]);
        let mut messages = vec![code, result("c1", TOOL_NAME, answered.clone())];
        assert_eq!(given_answer(&messages).as_deref(), Some("42 rows"));
        // A message after the results (the user's next Turn, a completion) is the model's.
        let mut user = Message::assistant("m2", Some("and now?".into()), Vec::new());
        user.role = "user".into();
        messages.push(user);
        assert_eq!(given_answer(&messages), None);
        // A direct call beside the code call: the model sees its result first.
        let both = vec![call("c1", TOOL_NAME), call("c2", "a__b")];
        let messages = vec![
            Message::assistant("m1", None, both),
            result("c1", TOOL_NAME, answered),
            result("c2", "a__b", json!(1)),
        ];
        assert_eq!(given_answer(&messages), None);
        // A program that gave no answer.
        let code = Message::assistant("m1", None, vec![call("c1", TOOL_NAME)]);
        let plain = json!({"value": 3, "printed": "", "calls": 0});
        assert_eq!(given_answer(&[code, result("c1", TOOL_NAME, plain)]), None);
    }

    #[test]
    fn head_and_tail_cut_on_characters() {
        assert_eq!(head("héllo", 2), "hé");
        assert_eq!(tail("héllo", 4), "éllo");
        assert_eq!(tail("ab", 5), "ab");
    }

    #[test]
    fn a_failed_call_reaches_the_program_as_its_code_message_and_suggestion() {
        let err = ToolError::new("missing `path`")
            .with_code("E_TOOL_INVALID_ARGS")
            .with_suggestion("pass path");
        let Reply::Error(text) = reply(ToolCallResult::error("c", "a__b", err)) else {
            panic!("an error is an error")
        };
        assert_eq!(
            text,
            "E_TOOL_INVALID_ARGS: missing `path` (suggestion: pass path)"
        );
    }

    #[test]
    fn content_parts_reach_the_program_as_text_or_a_description_of_their_bytes() {
        let result = ToolCallResult {
            output: None,
            ..ToolCallResult::ok("c", "a__b", Value::Null)
        }
        .with_content(vec![Content::text("hi"), Content::image_png(vec![0; 10])]);
        let Reply::Value(value) = reply(result) else {
            panic!("content is a value")
        };
        assert_eq!(
            value,
            json!([{"type": "text", "text": "hi"}, {"type": "image", "mimeType": "image/png", "bytes": 10}])
        );
    }
}
