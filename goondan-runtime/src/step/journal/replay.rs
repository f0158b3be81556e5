//! [`Replay`]: what a journal says about an instance: its conversation, and the Turn a crash
//! left unfinished.

use super::Recovered;
use super::record::{Record, TurnEnding};
use crate::step::model::TokenUsage;
use crate::step::tool_message::tool_message_at;
use crate::tools::context::Message;
use crate::tools::result::{ToolCall, ToolCallResult};

/// How far a call of an unfinished Step got before the process stopped.
#[derive(Debug, Clone, PartialEq)]
pub enum CallProgress {
    /// Not yet handed to the executor: it runs on resume.
    Waiting,
    /// Handed to the executor (maybe waiting for an approval), its handler not started: it
    /// runs on resume.
    Admitted,
    /// Its handler started and no result was written: it runs again on resume only when its
    /// export is marked idempotent, and otherwise answers `E_TOOL_INTERRUPTED`.
    Started,
    /// Its result is journaled: it is not run again.
    Finished(Box<FinishedCall>),
}

/// A journaled result and the tool message that carries it.
#[derive(Debug, Clone, PartialEq)]
pub struct FinishedCall {
    /// The result.
    pub result: ToolCallResult,
    /// The tool message's id.
    pub tool_message_id: String,
    /// When the result came, in milliseconds since the Unix epoch.
    pub at: u64,
}

/// A Step whose model answer is journaled and whose calls are not all finished.
#[derive(Debug, Clone, PartialEq)]
pub struct OpenStep {
    /// Its index in the Turn.
    pub step: usize,
    /// The model's answer, with the calls.
    pub assistant: Message,
    /// The tokens the model used.
    pub usage: Option<TokenUsage>,
    /// Each call's progress, in call order.
    pub calls: Vec<CallProgress>,
    /// For each call, in call order, the calls its program made as far as the journal has
    /// them, oldest first: empty but for a started code call (code mode).
    pub programs: Vec<Vec<InnerCall>>,
}

/// A call that a code call's program made, as the journal has it.
#[derive(Debug, Clone, PartialEq)]
pub struct InnerCall {
    /// The called tool, as the program named it.
    pub tool: String,
    /// The arguments, as the program gave them.
    pub args: serde_json::Value,
    /// Its result, once journaled; `None` when its handler started and no result was written.
    pub result: Option<ToolCallResult>,
}

/// A Turn that started and did not end: the process stopped in the middle of it.
#[derive(Debug, Clone, PartialEq)]
pub struct UnfinishedTurn {
    /// The Turn.
    pub turn_id: String,
    /// Its trace.
    pub trace_id: String,
    /// The user's message.
    pub input: Message,
    /// The Steps whose answer and results are all journaled (and in the conversation).
    pub steps_done: usize,
    /// The Step after those, when the model's answer to it is journaled.
    pub open: Option<OpenStep>,
    /// The last finished Step is the model's answer without calls: only the Turn's end is
    /// missing.
    pub answered: bool,
}

/// A call whose result was `pending` and whose completion is not in the conversation: the
/// process that ran it stopped, so on resume it runs again when its export is marked
/// idempotent or read-only, and otherwise completes with `E_TOOL_INTERRUPTED`.
#[derive(Debug, Clone, PartialEq)]
pub struct Submitted {
    /// The assistant message holding the call.
    pub message_id: String,
    /// The call, as the model made it.
    pub call: ToolCall,
}

/// What a journal's records say: the conversation they add up to, the Turn left unfinished,
/// and what did not fit (a record for a Turn or a call that does not exist, say), each a
/// warning. A record that does not fit is ignored: nothing runs on its behalf.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Replay {
    /// The conversation, oldest first: finished Turns, then the unfinished Turn's input and
    /// finished Steps.
    pub conversation: Vec<Message>,
    /// The Turn a crash left unfinished.
    pub unfinished: Option<UnfinishedTurn>,
    /// Calls whose result was `pending` and whose completion is not journaled, oldest first.
    pub submitted: Vec<Submitted>,
    /// Records that did not fit, in the order read.
    pub warnings: Vec<String>,
    /// How many records were read.
    pub records: usize,
}

impl Replay {
    /// Replays `records`, oldest first.
    ///
    /// ```
    /// use goondan_runtime::step::journal::{Record, Replay};
    /// use goondan_runtime::Message;
    ///
    /// let mut input = Message::assistant("m1", Some("hi".into()), Vec::new());
    /// input.role = "user".into();
    /// let replay = Replay::from_records([Record::TurnStarted {
    ///     turn_id: "t1".into(),
    ///     trace_id: "trace".into(),
    ///     input,
    /// }]);
    /// assert_eq!(replay.conversation.len(), 1);
    /// assert_eq!(replay.unfinished.map(|t| t.turn_id), Some("t1".to_owned()));
    /// ```
    pub fn from_records(records: impl IntoIterator<Item = Record>) -> Self {
        let mut replay = Self::default();
        for record in records {
            replay.apply(record);
            replay.records += 1;
        }
        replay
    }

    /// Replays what a journal read back: its warnings (a torn last write) come first.
    pub fn from_recovered(recovered: Recovered) -> Self {
        let mut replay = Self::from_records(recovered.records);
        replay.warnings.splice(0..0, recovered.warnings);
        replay
    }

    fn warn(&mut self, record: &Record, why: &str) {
        self.warnings.push(format!(
            "journal record {} ({}, turn `{}`) ignored: {why}",
            self.records + 1,
            record.kind(),
            record.turn_id()
        ));
    }

    fn apply(&mut self, record: Record) {
        match record {
            Record::Imported { .. } if self.records > 0 => {
                self.warn(&record, "an import comes only first");
            }
            Record::Imported { messages } => self.conversation = messages,
            Record::TurnStarted {
                turn_id,
                trace_id,
                input,
            } => {
                if let Some(turn) = self.unfinished.take() {
                    self.warnings.push(format!(
                        "turn `{}` has no end before the next turn starts; it is not resumed",
                        turn.turn_id
                    ));
                }
                self.conversation.push(input.clone());
                self.unfinished = Some(UnfinishedTurn {
                    turn_id,
                    trace_id,
                    input,
                    steps_done: 0,
                    open: None,
                    answered: false,
                });
            }
            record => self.apply_in_turn(record),
        }
    }

    /// A record of the running Turn: a model answer, a call's progress, a completion, the end.
    fn apply_in_turn(&mut self, record: Record) {
        let (steps_done, has_open) = match self.unfinished.as_ref() {
            Some(t) if t.turn_id == record.turn_id() => (t.steps_done, t.open.is_some()),
            _ => return self.warn(&record, "no such turn is running"),
        };
        match record {
            Record::ModelAnswered { step, .. } if has_open || step != steps_done => {
                let why = format!("step {step} answered while step {steps_done} runs");
                self.warn(&record, &why);
            }
            Record::ModelAnswered {
                step,
                assistant,
                usage,
                ..
            } => {
                let calls = vec![CallProgress::Waiting; assistant.tool_calls.len()];
                let programs = vec![Vec::new(); calls.len()];
                if let Some(turn) = self.unfinished.as_mut() {
                    turn.open = Some(OpenStep {
                        step,
                        assistant,
                        usage,
                        calls,
                        programs,
                    });
                }
                self.close_step_if_done();
            }
            Record::CallAdmitted {
                ref message_id,
                ref call_id,
                ..
            } => {
                self.advance(&record, message_id, call_id, CallProgress::Admitted);
            }
            Record::CallStarted {
                ref message_id,
                ref call_id,
                ..
            } => {
                self.advance(&record, message_id, call_id, CallProgress::Started);
            }
            Record::CallFinished {
                ref message_id,
                ref result,
                ref tool_message_id,
                at,
                ..
            } => {
                let finished = CallProgress::Finished(Box::new(FinishedCall {
                    result: result.clone(),
                    tool_message_id: tool_message_id.clone(),
                    at,
                }));
                if self.advance(&record, message_id, &result.tool_call_id, finished)
                    && result.is_pending()
                {
                    self.submit(message_id, &result.tool_call_id);
                }
                self.close_step_if_done();
            }
            Record::InnerCallStarted {
                ref message_id,
                ref call_id,
                index,
                ref tool,
                ref args,
                ..
            } => {
                let call = InnerCall {
                    tool: tool.clone(),
                    args: args.clone(),
                    result: None,
                };
                if let Err(why) = self.inner_started(message_id, call_id, index, call) {
                    self.warn(&record, &why);
                }
            }
            Record::InnerCallFinished {
                ref message_id,
                ref call_id,
                index,
                ref result,
                ..
            } => {
                if let Err(why) = self.inner_finished(message_id, call_id, index, result) {
                    self.warn(&record, &why);
                }
            }
            Record::SubmissionCompleted { .. } if has_open => {
                self.warn(&record, "a completion comes only between steps");
            }
            Record::SubmissionCompleted {
                ref message_id,
                ref call_id,
                ref message,
                ..
            } => {
                let found = self
                    .submitted
                    .iter()
                    .position(|s| s.message_id == *message_id && s.call.id == *call_id);
                match found {
                    Some(i) => {
                        self.submitted.remove(i);
                        self.conversation.push(message.clone());
                    }
                    None => self.warn(&record, "no such call was submitted"),
                }
            }
            Record::TurnEnded { ref end, .. } => {
                let dropped = self.unfinished.take().is_some_and(|t| t.open.is_some());
                if dropped && !matches!(end, TurnEnding::Failed { .. }) {
                    self.warn(
                        &record,
                        "the turn ended with calls unfinished; they are dropped",
                    );
                }
            }
            Record::Imported { .. } | Record::TurnStarted { .. } => {}
        }
    }

    /// Keeps the open Step's call `call_id`, whose result is `pending`, as submitted.
    fn submit(&mut self, message_id: &str, call_id: &str) {
        let call = self
            .unfinished
            .as_ref()
            .and_then(|t| t.open.as_ref())
            .and_then(|o| o.assistant.tool_calls.iter().find(|c| c.id == call_id));
        if let Some(call) = call {
            self.submitted.push(Submitted {
                message_id: message_id.to_owned(),
                call: call.clone(),
            });
        }
    }

    /// Moves a call of the open Step forward; never backward (a late `callAdmitted` does not
    /// undo a `callStarted`). True when the call moved. A start of a submitted call that runs
    /// again after a crash belongs to no Step, and is no warning.
    fn advance(
        &mut self,
        record: &Record,
        message_id: &str,
        call_id: &str,
        to: CallProgress,
    ) -> bool {
        let rank = |p: &CallProgress| match p {
            CallProgress::Waiting => 0,
            CallProgress::Admitted => 1,
            CallProgress::Started => 2,
            CallProgress::Finished(_) => 3,
        };
        let Some(open) = self.open_step(message_id) else {
            let resubmitted = self
                .submitted
                .iter()
                .any(|s| s.message_id == message_id && s.call.id == call_id);
            if !resubmitted {
                self.warn(record, "no such step is running");
            }
            return false;
        };
        let slot = open
            .assistant
            .tool_calls
            .iter()
            .zip(open.calls.iter_mut())
            .filter(|(call, _)| call.id == call_id)
            .map(|(_, progress)| progress)
            .find(|progress| rank(progress) < 3);
        match slot {
            Some(progress) if rank(progress) < rank(&to) => {
                *progress = to;
                true
            }
            Some(_) => false,
            None => {
                self.warn(record, "no such call is running");
                false
            }
        }
    }

    /// The open Step, when its assistant message is `message_id`.
    fn open_step(&mut self, message_id: &str) -> Option<&mut OpenStep> {
        let open = self.unfinished.as_mut()?.open.as_mut()?;
        (open.assistant.id == message_id).then_some(open)
    }

    /// The program of the open Step's started call `call_id` (of the message `message_id`).
    fn program(&mut self, message_id: &str, call_id: &str) -> Result<&mut Vec<InnerCall>, String> {
        let open = self
            .open_step(message_id)
            .ok_or_else(|| "no such step is running".to_owned())?;
        open.assistant
            .tool_calls
            .iter()
            .zip(&open.calls)
            .zip(open.programs.iter_mut())
            .find(|((call, progress), _)| {
                call.id == call_id && matches!(progress, CallProgress::Started)
            })
            .map(|(_, program)| program)
            .ok_or_else(|| "no such call is running (started, without a result)".to_owned())
    }

    /// Adds the `index`th call to the program of a started call; the calls of a program come
    /// one after another, each once.
    fn inner_started(
        &mut self,
        message_id: &str,
        call_id: &str,
        index: usize,
        call: InnerCall,
    ) -> Result<(), String> {
        let program = self.program(message_id, call_id)?;
        if index != program.len() + 1 {
            return Err(format!(
                "call {index} of the program started after {} calls",
                program.len()
            ));
        }
        program.push(call);
        Ok(())
    }

    /// Gives the `index`th call of a started call's program its result, once.
    fn inner_finished(
        &mut self,
        message_id: &str,
        call_id: &str,
        index: usize,
        result: &ToolCallResult,
    ) -> Result<(), String> {
        let program = self.program(message_id, call_id)?;
        let call = index
            .checked_sub(1)
            .and_then(|i| program.get_mut(i))
            .ok_or_else(|| format!("call {index} of the program did not start"))?;
        if call.result.is_some() {
            return Err(format!(
                "call {index} of the program has its result already"
            ));
        }
        if result.tool_name.as_str() != call.tool {
            return Err(format!(
                "call {index} of the program is of `{}`, the result of `{}`",
                call.tool, result.tool_name
            ));
        }
        call.result = Some(result.clone());
        Ok(())
    }

    /// Appends the open Step to the conversation when every call has its result.
    fn close_step_if_done(&mut self) {
        let Some(turn) = self.unfinished.as_mut() else {
            return;
        };
        let done = |o: &mut OpenStep| {
            o.calls
                .iter()
                .all(|c| matches!(c, CallProgress::Finished(_)))
        };
        let Some(open) = turn.open.take_if(done) else {
            return;
        };
        turn.steps_done = open.step + 1;
        turn.answered = open.calls.is_empty();
        self.conversation.push(open.assistant);
        for call in open.calls {
            if let CallProgress::Finished(f) = call {
                self.conversation
                    .push(tool_message_at(&f.result, f.tool_message_id, f.at));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::result::ToolCall;

    fn user(text: &str) -> Message {
        let mut m = Message::assistant("u1", Some(text.into()), Vec::new());
        m.role = "user".into();
        m.created_at = 1; // fixed, so two calls give equal messages
        m
    }

    fn answered(calls: &[&str]) -> Record {
        let calls = calls
            .iter()
            .map(|id| ToolCall::new(*id, "calc__add", serde_json::json!({})))
            .collect();
        Record::ModelAnswered {
            turn_id: "t1".into(),
            step: 0,
            assistant: Message::assistant("a1", None, calls),
            usage: None,
        }
    }

    fn started(call: &str) -> Record {
        Record::CallStarted {
            turn_id: "t1".into(),
            message_id: "a1".into(),
            call_id: call.into(),
        }
    }

    fn finished(call: &str) -> Record {
        Record::CallFinished {
            turn_id: "t1".into(),
            message_id: "a1".into(),
            tool_message_id: format!("r-{call}"),
            at: 7,
            result: ToolCallResult::ok(call, "calc__add", serde_json::json!(1)),
        }
    }

    fn turn() -> Record {
        Record::TurnStarted {
            turn_id: "t1".into(),
            trace_id: "tr".into(),
            input: user("add"),
        }
    }

    #[test]
    fn a_crash_after_a_start_leaves_that_call_started_and_the_rest_waiting() {
        let replay = Replay::from_records([
            turn(),
            answered(&["c1", "c2", "c3"]),
            finished("c1"),
            started("c2"),
        ]);
        let open = replay.unfinished.and_then(|t| t.open);
        let progress: Vec<_> = open
            .map(|o| o.calls)
            .unwrap_or_default()
            .into_iter()
            .map(|c| match c {
                CallProgress::Finished(_) => "finished",
                CallProgress::Started => "started",
                CallProgress::Admitted => "admitted",
                CallProgress::Waiting => "waiting",
            })
            .collect();
        assert_eq!(progress, ["finished", "started", "waiting"]);
        assert_eq!(
            replay.conversation,
            [user("add")],
            "the open step is not in it yet"
        );
        assert!(replay.warnings.is_empty(), "{:?}", replay.warnings);
    }

    #[test]
    fn a_step_whose_calls_all_finished_is_in_the_conversation_in_call_order() {
        let replay = Replay::from_records([
            turn(),
            answered(&["c1", "c2"]),
            finished("c2"),
            finished("c1"),
        ]);
        let turn = replay.unfinished.clone();
        assert_eq!(turn.as_ref().map(|t| t.steps_done), Some(1));
        assert_eq!(turn.and_then(|t| t.open), None);
        let ids: Vec<_> = replay.conversation.iter().map(|m| m.id.as_str()).collect();
        assert_eq!(ids, ["u1", "a1", "r-c1", "r-c2"]);
    }

    #[test]
    fn records_for_turns_and_calls_that_do_not_exist_are_warnings_and_change_nothing() {
        let stray = Record::CallStarted {
            turn_id: "t9".into(),
            message_id: "a1".into(),
            call_id: "c1".into(),
        };
        let replay = Replay::from_records([turn(), answered(&["c1"]), stray, started("c7")]);
        assert_eq!(replay.warnings.len(), 2, "{:?}", replay.warnings);
        let open = replay.unfinished.and_then(|t| t.open);
        assert_eq!(open.map(|o| o.calls), Some(vec![CallProgress::Waiting]));
    }

    #[test]
    fn an_ended_turn_is_not_unfinished_and_a_late_admission_does_not_undo_a_start() {
        let admitted = Record::CallAdmitted {
            turn_id: "t1".into(),
            message_id: "a1".into(),
            call_id: "c1".into(),
        };
        let replay = Replay::from_records([turn(), answered(&["c1"]), started("c1"), admitted]);
        let open = replay.unfinished.and_then(|t| t.open);
        assert_eq!(open.map(|o| o.calls), Some(vec![CallProgress::Started]));

        let ended = Record::TurnEnded {
            turn_id: "t1".into(),
            end: TurnEnding::Answered,
        };
        let replay = Replay::from_records([turn(), answered(&["c1"]), finished("c1"), ended]);
        assert_eq!(replay.unfinished, None);
        assert_eq!(replay.conversation.len(), 3);
    }

    #[test]
    fn a_pending_result_stays_submitted_until_its_completion_and_stray_completions_are_warnings() {
        let pending = Record::CallFinished {
            turn_id: "t1".into(),
            message_id: "a1".into(),
            tool_message_id: "r-c1".into(),
            at: 7,
            result: ToolCallResult::pending("c1", "calc__add", "pending-x-1"),
        };
        let completion = |call: &str| Record::SubmissionCompleted {
            turn_id: "t1".into(),
            message_id: "a1".into(),
            call_id: call.into(),
            message: user("done"),
        };
        let replay = Replay::from_records([turn(), answered(&["c1"]), pending.clone()]);
        let submitted: Vec<_> = replay
            .submitted
            .iter()
            .map(|s| s.call.id.as_str())
            .collect();
        assert_eq!(submitted, ["c1"], "its process is gone: it is resumed");

        let replay = Replay::from_records([
            turn(),
            answered(&["c1", "c2"]),
            pending,
            completion("c1"), // inside the open step: not yet
            finished("c2"),
            completion("c9"), // no such submission
            completion("c1"),
        ]);
        assert_eq!(replay.warnings.len(), 2, "{:?}", replay.warnings);
        assert!(replay.submitted.is_empty());
        let ids: Vec<_> = replay.conversation.iter().map(|m| m.id.as_str()).collect();
        assert_eq!(ids, ["u1", "a1", "r-c1", "r-c2", "u1"]);
    }

    fn inner_started(call: &str, index: usize, tool: &str) -> Record {
        Record::InnerCallStarted {
            turn_id: "t1".into(),
            message_id: "a1".into(),
            call_id: call.into(),
            index,
            tool: tool.into(),
            args: serde_json::json!({"n": index}),
        }
    }

    fn inner_finished(call: &str, index: usize, tool: &str) -> Record {
        Record::InnerCallFinished {
            turn_id: "t1".into(),
            message_id: "a1".into(),
            call_id: call.into(),
            index,
            result: ToolCallResult::ok(format!("{call}.{index}"), tool, serde_json::json!(index)),
        }
    }

    fn programs(replay: &Replay) -> Vec<Vec<(String, bool)>> {
        let open = replay.unfinished.as_ref().and_then(|t| t.open.as_ref());
        open.map(|o| {
            o.programs
                .iter()
                .map(|p| {
                    p.iter()
                        .map(|c| (c.tool.clone(), c.result.is_some()))
                        .collect()
                })
                .collect()
        })
        .unwrap_or_default()
    }

    #[test]
    fn the_calls_of_a_started_code_call_s_program_are_kept_in_order_with_their_results() {
        let replay = Replay::from_records([
            turn(),
            answered(&["c1", "c2"]),
            finished("c1"),
            started("c2"),
            inner_started("c2", 1, "shop__price"),
            inner_finished("c2", 1, "shop__price"),
            inner_started("c2", 2, "ledger__pay"),
        ]);
        assert!(replay.warnings.is_empty(), "{:?}", replay.warnings);
        assert_eq!(
            programs(&replay),
            [
                vec![],
                vec![
                    ("shop__price".to_owned(), true),
                    ("ledger__pay".to_owned(), false)
                ]
            ]
        );
        let open = replay.unfinished.and_then(|t| t.open);
        let first = open.as_ref().map(|o| o.programs[1][0].clone());
        assert_eq!(first.map(|c| c.args), Some(serde_json::json!({"n": 1})));
    }

    #[test]
    fn inner_records_that_do_not_fit_are_warnings_and_change_nothing() {
        let stray_turn = Record::InnerCallStarted {
            turn_id: "t9".into(),
            message_id: "a1".into(),
            call_id: "c2".into(),
            index: 1,
            tool: "a__b".into(),
            args: serde_json::Value::Null,
        };
        let replay = Replay::from_records([
            turn(),
            answered(&["c1", "c2"]),
            inner_started("c1", 1, "a__b"), // c1 has not started
            started("c2"),
            stray_turn,                      // no such turn
            inner_started("c9", 1, "a__b"),  // no such call
            inner_started("c2", 2, "a__b"),  // a gap: call 1 never started
            inner_started("c2", 0, "a__b"),  // no call 0
            inner_finished("c2", 1, "a__b"), // call 1 did not start
            inner_started("c2", 1, "a__b"),
            inner_started("c2", 1, "a__b"),  // twice
            inner_finished("c2", 1, "x__y"), // the result of another tool
            inner_finished("c2", usize::MAX, "a__b"),
            inner_finished("c2", 1, "a__b"),
            inner_finished("c2", 1, "a__b"), // twice
        ]);
        assert_eq!(replay.warnings.len(), 10, "{:#?}", replay.warnings);
        assert_eq!(programs(&replay), [vec![], vec![("a__b".to_owned(), true)]]);
        // Inner records of a call with its result are warnings: its program is over.
        let replay = Replay::from_records([
            turn(),
            answered(&["c1", "c2"]),
            finished("c1"),
            inner_started("c1", 1, "a__b"),
        ]);
        assert_eq!(replay.warnings.len(), 1, "{:?}", replay.warnings);
    }
}
