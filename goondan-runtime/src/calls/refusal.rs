//! The errors the runtime writes itself when it refuses or stops a call: an invalid name, a
//! tool outside the catalog or missing from the registry, invalid arguments, a panic, a timeout,
//! a cancellation. Each has a code, a name and a suggestion that helps the model recover.

use std::any::Any;
use std::time::Duration;

use serde_json::Value;

use crate::tools::catalog::ToolCatalog;
use crate::tools::error::{ToolError, codes};
use crate::tools::name::{self, split_tool_name};
use crate::tools::schema::{ArgProblem, keys_of};

/// How many argument problems an `E_TOOL_INVALID_ARGS` message lists before counting the rest.
pub const MAX_LISTED_PROBLEMS: usize = 5;

fn closest<'a>(name: &str, catalog: &'a ToolCatalog) -> Vec<&'a str> {
    let wanted_resource = split_tool_name(name).map_or(name, |(r, _)| r);
    let mut same: Vec<&str> = catalog
        .names()
        .filter(|n| split_tool_name(n).is_some_and(|(r, _)| r == wanted_resource))
        .collect();
    if same.is_empty() {
        same = catalog.names().collect();
    }
    same.truncate(10);
    same
}

/// How alike two names must be (normalised Damerau-Levenshtein, 0 to 1) for the one in the
/// catalog to be offered as what the model meant: one or two slips in a short name, a few more
/// in a long one, never an unrelated tool.
const DID_YOU_MEAN_SIMILARITY: f64 = 0.7;

/// The catalog's name most like `name`, when one is close enough to be a slip of the pen
/// (`notes__sav`, `Notes__save`, `notes_save`, `notes__svae`).
fn did_you_mean<'a>(name: &str, catalog: &'a ToolCatalog) -> Option<&'a str> {
    let wanted = name.to_ascii_lowercase();
    catalog
        .names()
        .map(|candidate| {
            let score =
                strsim::normalized_damerau_levenshtein(&wanted, &candidate.to_ascii_lowercase());
            (candidate, score)
        })
        .filter(|(_, score)| *score >= DID_YOU_MEAN_SIMILARITY)
        .max_by(|a, b| a.1.total_cmp(&b.1))
        .map(|(candidate, _)| candidate)
}

/// A suggestion for a call to `name` the catalog cannot serve: the likely meant name first,
/// then `advice`, then a few of the catalog's names.
fn suggest(name: &str, catalog: &ToolCatalog, advice: &str) -> String {
    let names = closest(name, catalog);
    let list = if names.is_empty() {
        "the catalog is empty".to_owned()
    } else {
        format!("available tools include: {}", names.join(", "))
    };
    match did_you_mean(name, catalog) {
        Some(meant) if meant != name => format!("did you mean `{meant}`? {advice}; {list}"),
        _ => format!("{advice}; {list}"),
    }
}

pub(crate) fn invalid_name(name: &str, err: &name::NameError, catalog: &ToolCatalog) -> ToolError {
    ToolError::new(format!("invalid tool name `{name}`: {err}"))
        .with_code(codes::INVALID_NAME)
        .with_name("InvalidToolNameError")
        .with_suggestion(suggest(
            name,
            catalog,
            "call a tool by its full `{resource}__{export}` name, exactly as listed",
        ))
}

pub(crate) fn not_in_catalog(name: &str, catalog: &ToolCatalog) -> ToolError {
    ToolError::new(format!(
        "Tool '{name}' is not available in the current Tool Catalog."
    ))
    .with_code(codes::NOT_IN_CATALOG)
    .with_name("ToolNotInCatalogError")
    .with_suggestion(suggest(
        name,
        catalog,
        "add the tool to the Agent's spec.tools or register it from a step middleware",
    ))
}

pub(crate) fn not_found(name: &str, catalog: &ToolCatalog) -> ToolError {
    ToolError::new(format!(
        "Tool '{name}' is in the catalog but no registered handler executes it."
    ))
    .with_code(codes::NOT_FOUND)
    .with_name("ToolNotFoundError")
    .with_suggestion(suggest(
        name,
        catalog,
        "register the tool before listing it in the catalog",
    ))
}

fn json_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

pub(crate) fn args_not_object(args: &Value, schema: &Value) -> ToolError {
    let message = match args {
        // Text that starts like an object: JSON the model broke off (at its answer's token
        // limit, say) or got wrong. Say where, so it can send the whole object again.
        Value::String(text) if text.trim_start().starts_with('{') => {
            let why = serde_json::from_str::<Value>(text)
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default();
            format!(
                "the arguments must be a JSON object, and this text is not valid JSON ({why}); an answer cut at its token limit ends so: send the whole object"
            )
        }
        other => format!(
            "the arguments must be a JSON object, not {}",
            json_type(other)
        ),
    };
    invalid_args(
        vec![ArgProblem {
            path: String::new(),
            message,
        }],
        schema,
    )
}

pub(crate) fn invalid_args(problems: Vec<ArgProblem>, schema: &Value) -> ToolError {
    let total = problems.len();
    let mut message = format!(
        "invalid arguments ({total} problem{}):",
        if total == 1 { "" } else { "s" }
    );
    for p in problems.iter().take(MAX_LISTED_PROBLEMS) {
        let path = if p.path.is_empty() { "/" } else { &p.path };
        message.push_str(&format!("\n- at `{path}`: {}", p.message));
    }
    if total > MAX_LISTED_PROBLEMS {
        message.push_str(&format!("\n- and {} more", total - MAX_LISTED_PROBLEMS));
    }
    let (required, allowed) = keys_of(schema);
    ToolError::new(message)
        .with_code(codes::INVALID_ARGS)
        .with_name("InvalidArgumentsError")
        .with_suggestion(format!(
            "send a JSON object matching the tool's parameters; required: {}; allowed: {}; \
             values are not converted (send 5, not \"5\")",
            quoted(&required),
            quoted(&allowed)
        ))
}

/// `items` as a list of code spans (`` `a`, `b` ``), or `none`.
pub(crate) fn quoted<T: std::fmt::Display>(items: impl IntoIterator<Item = T>) -> String {
    let quoted: Vec<String> = items.into_iter().map(|i| format!("`{i}`")).collect();
    if quoted.is_empty() {
        "none".to_owned()
    } else {
        quoted.join(", ")
    }
}

pub(crate) fn timed_out(limit: Duration) -> ToolError {
    ToolError::new(format!(
        "the tool did not finish within {} ms",
        limit.as_millis()
    ))
    .with_code(codes::TIMEOUT)
    .with_name("ToolTimeoutError")
    .with_suggestion("retry with a smaller request, or ask for the work to be split")
    .retryable()
}

pub(crate) fn content_too_large(bytes: usize, max: usize) -> ToolError {
    ToolError::new(format!(
        "the tool's result carries {bytes} bytes of content parts; at most {max} are allowed"
    ))
    .with_code(codes::CONTENT_TOO_LARGE)
    .with_name("ToolContentTooLargeError")
    .with_suggestion("ask for less at a time: a smaller image, a shorter recording, fewer files")
}

pub(crate) fn cancelled() -> ToolError {
    ToolError::new("the call was cancelled before it finished")
        .with_code(codes::CANCELLED)
        .with_name("ToolCancelledError")
        .with_suggestion("the turn was stopped; do not retry unless asked to")
}

/// What the errors below say of a panic whose payload is not text.
const NOT_TEXT: &str = "a non-text panic payload";

/// The text of a panic's payload; `otherwise` when it is not text.
pub(crate) fn panic_text(payload: &(dyn Any + Send), otherwise: &str) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| otherwise.to_owned())
}

/// The error of a panicking `toolCall` middleware (RES-3: it still reaches the model as a
/// result).
pub(crate) fn middleware_panic_error(payload: &(dyn Any + Send)) -> ToolError {
    let what = panic_text(payload, NOT_TEXT);
    ToolError::new(format!("a toolCall middleware panicked: {what}"))
        .with_code(codes::PANIC)
        .with_name("ToolPanicError")
        .with_suggestion("this is a bug in the agent's middleware, not in your call; try again or use another tool")
}

/// The error of a panicking handler.
pub(crate) fn panic_error(payload: &(dyn Any + Send)) -> ToolError {
    let what = panic_text(payload, NOT_TEXT);
    ToolError::new(format!("the tool panicked: {what}"))
        .with_code(codes::PANIC)
        .with_name("ToolPanicError")
        .with_suggestion("this is a bug in the tool; try different arguments or another tool")
}
