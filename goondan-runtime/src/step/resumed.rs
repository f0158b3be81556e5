//! [`Programs`]: what the programs of a resumed Step's code calls did before the process
//! stopped, as the run journal has it.
//!
//! A program has no clock, randomness, files or network: given the same results for its
//! calls, it makes the same calls. So a code call whose start is journaled runs its program
//! again from the start, and each call the program makes is answered in order from the
//! journal: a journaled result is the answer (the call does not run again); a call whose
//! handler started without a result runs again only when its export is idempotent or
//! read-only, and otherwise answers `E_TOOL_INTERRUPTED` inside the program; a call the
//! journal does not have runs. A program that asks for another call than the journal has at
//! that place, or ends before the calls the journal has, is not trusted further: the code
//! call answers `E_TOOL_INTERRUPTED`, naming the difference.

use std::collections::HashMap;
use std::fmt::Write;
use std::sync::Mutex;

use serde_json::Value;

use super::journal::{CallProgress, INTERRUPTED, InnerCall, OpenStep};
use crate::lock;
use crate::tools::error::ToolError;
use crate::tools::result::ToolCallResult;

/// The journaled calls of the programs of a resumed Step's started calls, by call id.
#[derive(Debug, Default)]
pub(crate) struct Programs(Mutex<HashMap<String, Vec<InnerCall>>>);

/// What the journal says of a call that a resumed program makes.
#[derive(Debug, PartialEq)]
pub(crate) enum Replayed {
    /// Its result is journaled: that is the answer, and the call does not run.
    Finished(ToolCallResult),
    /// Its handler started and no result was written.
    Started,
    /// The journal has nothing of it: it runs.
    New,
}

impl Programs {
    /// The programs of `open`'s started calls. Of two calls with one id, the first has it.
    pub(crate) fn of(open: &OpenStep) -> Self {
        let mut programs = HashMap::new();
        let started = open.assistant.tool_calls.iter().zip(&open.calls);
        for ((call, _), program) in started
            .zip(&open.programs)
            .filter(|((_, progress), _)| matches!(progress, CallProgress::Started))
        {
            programs
                .entry(call.id.to_string())
                .or_insert_with(|| program.clone());
        }
        Self(Mutex::new(programs))
    }

    /// What the journal says of the `index`th call (from 1) of the program of the code call
    /// `outer`, a call of `tool` with `args`. An error when the journal has another call
    /// there: the program stops, and the error is the code call's answer.
    pub(crate) fn replay(
        &self,
        outer: &str,
        index: usize,
        tool: &str,
        args: &Value,
    ) -> Result<Replayed, ToolError> {
        let mut programs = lock(&self.0);
        let Some(program) = programs.get_mut(outer) else {
            return Ok(Replayed::New);
        };
        let Some(journaled) = index.checked_sub(1).and_then(|i| program.get(i)) else {
            return Ok(Replayed::New);
        };
        let differs = if journaled.tool != tool {
            Some(format!(
                "`{tool}`, where the journal has `{}`",
                journaled.tool
            ))
        } else if !same_json(&journaled.args, args) {
            Some(format!(
                "`{tool}` with other arguments than the journal has"
            ))
        } else {
            None
        };
        if let Some(differs) = differs {
            let program = programs.remove(outer).unwrap_or_default();
            return Err(unresumable(
                &format!("its call {index} is now {differs}"),
                &program,
            ));
        }
        Ok(match &journaled.result {
            Some(result) => Replayed::Finished(result.clone()),
            None => Replayed::Started,
        })
    }

    /// The program of the code call `outer` ended after `made` calls. An error when the
    /// journal has more calls of it than that.
    pub(crate) fn ended(&self, outer: &str, made: usize) -> Result<(), ToolError> {
        let Some(program) = lock(&self.0).remove(outer) else {
            return Ok(());
        };
        if program.len() <= made {
            return Ok(());
        }
        Err(unresumable(
            &format!(
                "it now ends after {made} calls, where the journal has {}",
                program.len()
            ),
            &program,
        ))
    }
}

/// The code call's answer when its program does not match its journal: it was interrupted,
/// and the calls the journal has may have taken effect.
fn unresumable(why: &str, journaled: &[InnerCall]) -> ToolError {
    let mut message = format!(
        "the program was running when the agent's process stopped, and cannot be resumed: {why}. \
         The calls it had made ({}",
        journaled.len()
    );
    let listed: Vec<String> = journaled
        .iter()
        .map(|c| {
            let how = match &c.result {
                Some(r) => r.error_code().unwrap_or("ok"),
                None => "started",
            };
            format!("{} {how}", c.tool)
        })
        .collect();
    if !listed.is_empty() {
        let _ = write!(message, ": {}", listed.join(", "));
    }
    message.push_str(") may or may not have taken effect");
    ToolError::new(message)
        .with_code(INTERRUPTED)
        .with_suggestion(
            "check whether those calls took effect (read the file, list the items) before running the program again",
        )
}

/// Whether two JSON values are the same: numbers that are not integers within a few units in
/// the last place (a journal reads a float back to the nearest it can, not always to the
/// very one written).
fn same_json(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) if x.is_f64() || y.is_f64() => {
            match (x.as_f64(), y.as_f64()) {
                (Some(x), Some(y)) => {
                    x == y || (x - y).abs() <= 4.0 * f64::EPSILON * x.abs().max(y.abs())
                }
                _ => false,
            }
        }
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(x, y)| same_json(x, y))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| same_json(v, w)))
        }
        _ => a == b,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::tools::context::Message;
    use crate::tools::result::ToolCall;

    fn inner(tool: &str, args: Value, result: Option<Value>) -> InnerCall {
        InnerCall {
            tool: tool.into(),
            args,
            result: result.map(|v| ToolCallResult::ok("c1.x", tool, v)),
        }
    }

    /// A resumed Step of one started code call `c1`, whose program made `calls`.
    fn programs(calls: Vec<InnerCall>) -> Programs {
        let code = ToolCall::new("c1", "code__run", json!({"code": "..."}));
        Programs::of(&OpenStep {
            step: 0,
            assistant: Message::assistant("m1", None, vec![code]),
            usage: None,
            calls: vec![CallProgress::Started],
            programs: vec![calls],
        })
    }

    #[test]
    fn journaled_calls_are_answered_in_order_then_the_program_runs_on() {
        let p = programs(vec![
            inner(
                "shop__price",
                json!({"name": "fig", "x": 0.1}),
                Some(json!(80)),
            ),
            inner("ledger__pay", json!({"amount": 5}), None),
        ]);
        let fig = json!({"x": 0.1 + 1e-17, "name": "fig"});
        let first = p.replay("c1", 1, "shop__price", &fig);
        assert!(
            matches!(&first, Ok(Replayed::Finished(r)) if r.output == Some(json!(80))),
            "{first:?}"
        );
        let second = p.replay("c1", 2, "ledger__pay", &json!({"amount": 5}));
        assert_eq!(second.ok(), Some(Replayed::Started));
        let third = p.replay("c1", 3, "ledger__pay", &json!({"amount": 6}));
        assert_eq!(third.ok(), Some(Replayed::New));
        assert!(p.ended("c1", 3).is_ok());
        // Another code call, or one of a Step not resumed: nothing journaled.
        assert_eq!(
            p.replay("c2", 1, "x__y", &json!({})).ok(),
            Some(Replayed::New)
        );
    }

    #[test]
    fn another_tool_or_other_arguments_than_the_journal_has_stop_the_program_as_interrupted() {
        for (tool, args, says) in [
            (
                "ledger__mark",
                json!({"amount": 5}),
                "`ledger__mark`, where the journal has `ledger__pay`",
            ),
            ("ledger__pay", json!({"amount": 7}), "other arguments"),
            (
                "ledger__pay",
                json!({"amount": 5, "memo": "x"}),
                "other arguments",
            ),
        ] {
            let p = programs(vec![
                inner("shop__price", json!({"name": "fig"}), Some(json!(80))),
                inner("ledger__pay", json!({"amount": 5}), None),
            ]);
            assert!(
                p.replay("c1", 1, "shop__price", &json!({"name": "fig"}))
                    .is_ok()
            );
            let err = p
                .replay("c1", 2, tool, &args)
                .err()
                .unwrap_or_else(|| panic!("{tool} {args}"));
            assert_eq!(err.code(), INTERRUPTED);
            let message = err.message();
            assert!(message.contains(says), "{message}");
            assert!(
                message.contains("(2: shop__price ok, ledger__pay started)"),
                "{message}"
            );
            // Not trusted further: nothing more is answered from it.
            assert_eq!(
                p.replay("c1", 3, "ledger__pay", &args).ok(),
                Some(Replayed::New)
            );
        }
    }

    #[test]
    fn a_program_that_ends_before_the_calls_the_journal_has_is_interrupted() {
        let p = programs(vec![
            inner("shop__price", json!({}), Some(json!(1))),
            inner("shop__price", json!({}), Some(json!(2))),
        ]);
        assert!(p.replay("c1", 1, "shop__price", &json!({})).is_ok());
        let err = p.ended("c1", 1).err();
        let message = err.as_ref().map(ToolError::message).unwrap_or_default();
        assert!(
            message.contains("ends after 1 calls, where the journal has 2"),
            "{message}"
        );
    }

    #[test]
    fn only_started_calls_have_programs_to_resume() {
        let code = ToolCall::new("c1", "code__run", json!({}));
        let p = Programs::of(&OpenStep {
            step: 0,
            assistant: Message::assistant("m1", None, vec![code]),
            usage: None,
            calls: vec![CallProgress::Admitted],
            programs: vec![vec![inner("a__b", json!({}), Some(json!(1)))]],
        });
        assert_eq!(
            p.replay("c1", 1, "a__b", &json!({})).ok(),
            Some(Replayed::New)
        );
    }
}
