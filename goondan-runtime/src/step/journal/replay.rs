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
                if let Some(turn) = self.unfinished.as_mut() {
                    turn.open = Some(OpenStep {
                        step,
                        assistant,
                        usage,
                        calls,
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
        let open = self
            .unfinished
            .as_mut()
            .and_then(|t| t.open.as_mut())
            .filter(|o| o.assistant.id == message_id);
        let Some(open) = open else {
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
}
