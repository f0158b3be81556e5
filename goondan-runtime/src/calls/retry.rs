//! [`RetryBudget`]: how many failures of one tool a model may see in a Turn before the Turn
//! stops, instead of looping on a call it keeps getting wrong until `maxStepsPerTurn`.

use std::collections::HashMap;
#[cfg(feature = "host")]
use std::sync::Mutex;

#[cfg(feature = "host")]
use crate::lock;
#[cfg(feature = "host")]
use crate::tools::error::{ToolError, codes};
#[cfg(feature = "host")]
use crate::tools::result::{ToolCallResult, ToolStatus};
#[cfg(feature = "host")]
use crate::tools::schema::escape_pointer;

/// How many failures of one tool the model may see in a Turn: per export (`bash__exec`), per
/// tool (`bash`, for each of its exports), and for the Agent's other tools. Failures that count
/// are invalid arguments (`E_TOOL_INVALID_ARGS`) and errors marked
/// [`retryable`](crate::tools::error::ToolError::retryable). Each one the model sees says how many tries are left;
/// one more than the budget stops the Turn with `StepError::RetryBudget`.
///
/// In a bundle: an Agent's (or its Swarm's) `policy.toolRetries`, a number for every tool or
/// `{default: 3, tools: {bash: 5, http-fetch__get: 1}}`.
///
/// ```
/// use goondan_runtime::calls::retry::RetryBudget;
///
/// let budget = RetryBudget::per_tool(3).tool("bash", 5).tool("bash__run", 1);
/// assert_eq!(budget.of("bash__exec"), Some(5)); // the tool's
/// assert_eq!(budget.of("bash__run"), Some(1)); // the export's
/// assert_eq!(budget.of("http-fetch__get"), Some(3)); // the Agent's
/// assert_eq!(RetryBudget::default().of("bash__exec"), None); // no budget: unlimited
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RetryBudget {
    default: Option<u32>,
    by_name: HashMap<String, u32>,
}

impl RetryBudget {
    /// At most `n` failures the model sees of each tool, per Turn.
    pub fn per_tool(n: u32) -> Self {
        Self {
            default: Some(n),
            by_name: HashMap::new(),
        }
    }

    /// At most `n` for the tool `name` (a resource, `bash`, for each of its exports) or the
    /// export `name` (`bash__exec`, which wins over its tool's).
    pub fn tool(mut self, name: impl Into<String>, n: u32) -> Self {
        self.by_name.insert(name.into(), n);
        self
    }

    /// The budget of the export `tool_name` (`resource__export`): the export's, else its
    /// tool's, else the Agent's; `None` when there is none (unlimited).
    pub fn of(&self, tool_name: &str) -> Option<u32> {
        if let Some(&n) = self.by_name.get(tool_name) {
            return Some(n);
        }
        let resource = tool_name.split_once("__").map_or(tool_name, |(r, _)| r);
        self.by_name.get(resource).copied().or(self.default)
    }

    #[cfg(feature = "host")]
    /// Reads a bundle's `policy.toolRetries`: a number for every tool, or
    /// `{default: N, tools: {NAME: N}}`. On a wrong value, the JSON pointer under it and why.
    pub(crate) fn from_policy(value: &serde_json::Value) -> Result<Self, (String, String)> {
        let count = |v: &serde_json::Value, at: String| {
            v.as_u64()
                .and_then(|n| u32::try_from(n).ok())
                .ok_or_else(|| {
                    (
                        at,
                        format!("a retry budget is a number of failures (0 or more), not {v}"),
                    )
                })
        };
        if value.is_number() {
            return Ok(Self::per_tool(count(value, String::new())?));
        }
        let Some(map) = value.as_object() else {
            return Err((
                String::new(),
                "`policy.toolRetries` is a number, or `{default: N, tools: {NAME: N}}`".to_owned(),
            ));
        };
        let mut budget = Self::default();
        for (key, v) in map {
            match key.as_str() {
                "default" => budget.default = Some(count(v, "/default".to_owned())?),
                "tools" => {
                    let Some(tools) = v.as_object() else {
                        return Err((
                            "/tools".to_owned(),
                            "`policy.toolRetries.tools` maps tool or export names to numbers"
                                .to_owned(),
                        ));
                    };
                    for (name, n) in tools {
                        let at = format!("/tools/{}", escape_pointer(name));
                        let n = count(n, at.clone())?;
                        if name.is_empty() || name.split("__").any(str::is_empty) {
                            return Err((at, format!("`{name}` is not a tool or export name")));
                        }
                        budget.by_name.insert(name.clone(), n);
                    }
                }
                other => {
                    return Err((
                        String::new(),
                        format!(
                            "`policy.toolRetries` has no setting `{other}` (it takes `default` and `tools`)"
                        ),
                    ));
                }
            }
        }
        Ok(budget)
    }

    /// Whether no tool has a budget.
    pub fn is_unlimited(&self) -> bool {
        self.default.is_none() && self.by_name.is_empty()
    }
}

#[cfg(feature = "host")]
/// Whether `result` is a failure a retry budget counts.
pub(crate) fn counts(result: &ToolCallResult) -> bool {
    result.status == ToolStatus::Error
        && result
            .error
            .as_ref()
            .is_some_and(|e| e.is_retryable() || e.code() == codes::INVALID_ARGS)
}

#[cfg(feature = "host")]
/// The failures of each tool in the running Turn, and the one that spent its budget.
#[derive(Debug, Default)]
pub(crate) struct Failures {
    seen: Mutex<HashMap<String, u32>>,
    spent: Mutex<Option<Spent>>,
}

#[cfg(feature = "host")]
/// A tool that failed more often than its budget allows.
#[derive(Debug, Clone)]
pub(crate) struct Spent {
    pub(crate) tool: String,
    pub(crate) failures: u32,
    pub(crate) error: ToolError,
}

#[cfg(feature = "host")]
impl Failures {
    /// Starts a Turn, counting the failures of the results it already has (a Turn resumed after
    /// a crash).
    pub(crate) fn start<'a>(&self, earlier: impl IntoIterator<Item = &'a ToolCallResult>) {
        let mut seen = lock(&self.seen);
        seen.clear();
        for result in earlier.into_iter().filter(|r| counts(r)) {
            *seen.entry(result.tool_name.to_string()).or_default() += 1;
        }
        *lock(&self.spent) = None;
    }

    /// Counts `result` against `budget`: says in its suggestion how many tries are left, or,
    /// past the budget, that the Turn stops, and remembers that it must.
    pub(crate) fn count(&self, budget: &RetryBudget, result: &mut ToolCallResult) {
        if !counts(result) {
            return;
        }
        let Some(limit) = budget.of(&result.tool_name) else {
            return;
        };
        let failures = {
            let mut seen = lock(&self.seen);
            let n = seen.entry(result.tool_name.to_string()).or_default();
            *n += 1;
            *n
        };
        let Some(error) = result.error.take() else {
            return;
        };
        let tool = result.tool_name.to_string();
        let note = match limit.checked_sub(failures) {
            Some(0) => {
                format!("tries left for `{tool}` in this turn: 0 (one more failure ends the turn)")
            }
            Some(left) => format!("tries left for `{tool}` in this turn: {left}"),
            None => format!(
                "`{tool}` failed {failures} times in this turn, more than its {limit}: the turn stopped"
            ),
        };
        let suggestion = match error.suggestion() {
            Some(s) => format!("{s}; {note}"),
            None => note,
        };
        let error = error.with_suggestion(suggestion);
        if failures > limit {
            lock(&self.spent).get_or_insert_with(|| Spent {
                tool,
                failures,
                error: error.clone(),
            });
        }
        result.error = Some(error);
    }

    /// The tool that spent its budget in this Turn, if one did.
    pub(crate) fn spent(&self) -> Option<Spent> {
        lock(&self.spent).clone()
    }
}

#[cfg(test)]
#[cfg(feature = "host")]
mod tests {
    use super::*;

    fn failed(tool: &str, error: ToolError) -> ToolCallResult {
        ToolCallResult::error("c", tool, error)
    }

    #[test]
    fn only_invalid_arguments_and_retryable_errors_count_and_each_says_what_is_left() {
        let budget = RetryBudget::per_tool(2);
        let failures = Failures::default();
        failures.start([]);
        let mut denied = failures_of("E_TOOL_DENIED", false);
        failures.count(&budget, &mut denied);
        assert_eq!(suggestion_of(&denied), "fix it", "not counted, not changed");

        let mut first = failures_of(codes::INVALID_ARGS, false);
        failures.count(&budget, &mut first);
        let said = suggestion_of(&first);
        assert!(
            said.ends_with("tries left for `jobs__run` in this turn: 1"),
            "{said}"
        );
        let mut second = failures_of("E_BUSY", true);
        failures.count(&budget, &mut second);
        assert!(failures.spent().is_none());
        let mut third = failures_of("E_BUSY", true);
        failures.count(&budget, &mut third);
        let spent = failures.spent().map(|s| (s.tool, s.failures));
        assert_eq!(spent, Some(("jobs__run".to_owned(), 3)));

        // A new Turn starts from the failures it already has.
        failures.start([&first]);
        assert!(failures.spent().is_none());
        let mut again = failures_of(codes::INVALID_ARGS, false);
        failures.count(&budget, &mut again);
        let said = suggestion_of(&again);
        assert!(said.contains("in this turn: 0"), "{said}");
    }

    fn suggestion_of(result: &ToolCallResult) -> &str {
        result
            .error
            .as_ref()
            .and_then(|e| e.suggestion())
            .unwrap_or_default()
    }

    fn failures_of(code: &'static str, retryable: bool) -> ToolCallResult {
        let error = ToolError::new("no")
            .with_code(code)
            .with_suggestion("fix it");
        failed(
            "jobs__run",
            if retryable { error.retryable() } else { error },
        )
    }
}
