//! `code__search`: finds the program's functions for a query and answers their stubs, for a
//! catalog too big to list whole in the code tool's description. It ranks with a
//! [`Ranker`] over the same catalog the program's calls are checked against.

use std::sync::Arc;

use serde_json::{Value, json};

use super::TOOL_NAME;
use super::names::{Function, Functions};
use super::stubs::stubs_of;
use crate::tools::context::ToolContext;
use crate::tools::error::{ToolError, codes};
use crate::tools::result::JsonObject;
use crate::tools::search::{MAX_QUERY_CHARS, Ranker, ToolDoc, ToolDocs};

/// The name of the search tool.
pub const SEARCH_NAME: &str = "code__search";
/// How many functions one search answers at most, and by default.
const MAX_RESULTS: u64 = 20;
const DEFAULT_RESULTS: u64 = 8;

/// The search tool's parameters.
pub(crate) fn parameters() -> Value {
    json!({
        "type": "object",
        "properties": {
            "query": {
                "type": "string",
                "description": "What the functions should do, in a few words.",
                "minLength": 1,
                "maxLength": MAX_QUERY_CHARS,
            },
            "limit": {
                "type": "integer",
                "description": "How many functions to answer at most.",
                "minimum": 1,
                "maximum": MAX_RESULTS,
                "default": DEFAULT_RESULTS,
            }
        },
        "required": ["query"],
        "additionalProperties": false,
    })
}

/// The handler of the search tool: the stubs of the best matches, best first, as text.
pub(crate) async fn search(
    ctx: ToolContext,
    args: JsonObject,
    ranker: Arc<dyn Ranker>,
) -> Result<Value, ToolError> {
    let query = args
        .get("query")
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|q| !q.is_empty() && q.chars().count() <= MAX_QUERY_CHARS)
        .ok_or_else(|| {
            ToolError::new(format!(
                "`query` must be a string of 1 to {MAX_QUERY_CHARS} characters, not all blank"
            ))
            .with_code(codes::INVALID_ARGS)
        })?;
    let limit = match args.get("limit") {
        None | Some(Value::Null) => DEFAULT_RESULTS,
        Some(v) => v
            .as_u64()
            .filter(|n| (1..=MAX_RESULTS).contains(n))
            .ok_or_else(|| {
                ToolError::new(format!(
                    "`limit` must be a whole number from 1 to {MAX_RESULTS}"
                ))
                .with_code(codes::INVALID_ARGS)
            })?,
    };
    let Some(calls) = ctx.step_calls() else {
        return Err(ToolError::new(format!(
            "`{SEARCH_NAME}` runs only where code mode is offered"
        ))
        .with_code(super::codes::ERROR));
    };
    let functions = Functions::of(calls.catalog(), TOOL_NAME);
    let all: Vec<&Function> = functions.all().collect();
    let docs: ToolDocs = all.iter().map(|f| ToolDoc::of(&f.item)).collect();
    let limit = usize::try_from(limit).unwrap_or(usize::MAX);
    let found: Vec<&Function> = ranker
        .rank(query, &docs, limit)
        .into_iter()
        .filter_map(|i| all.get(i).copied())
        .take(limit)
        .collect();
    if found.is_empty() {
        return Ok(Value::String(format!(
            "No function matches `{query}`; try other words."
        )));
    }
    Ok(Value::String(stubs_of(&found, &functions)))
}
