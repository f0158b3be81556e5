//! [`Record`]: one entry of a run journal, written before what it describes takes effect.

use serde::{Deserialize, Serialize};

use crate::step::model::TokenUsage;
use crate::tools::context::Message;
use crate::tools::result::ToolCallResult;

/// The journal format this build writes and reads. A journal written by a newer format is
/// refused ([`JournalError::NewerFormat`](super::JournalError::NewerFormat)), never guessed at.
/// Format 2 adds the records of the calls a code call's program makes
/// ([`Record::InnerCallStarted`], [`Record::InnerCallFinished`]); a journal of format 1 reads
/// as it was.
pub const FORMAT_VERSION: u32 = 2;

/// The largest record a journal reads back, in bytes of JSON. A larger one is refused as
/// corrupt instead of being loaded into memory.
pub const MAX_RECORD_BYTES: usize = 64 * 1024 * 1024;

/// One entry of a run journal. The step loop writes each before it acts on it, so a process
/// that starts again after a crash knows what was decided and what was done.
///
/// Calls are named by the Turn, the assistant message that holds them (one per Step) and the
/// model's call id.
///
/// ```
/// use goondan_runtime::step::journal::Record;
/// let record: Record = serde_json::from_str(
///     r#"{"type":"callStarted","turnId":"t1","messageId":"m1","callId":"c1"}"#,
/// )?;
/// assert_eq!(record.turn_id(), "t1");
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum Record {
    /// The conversation kept before this journal existed (a conversation file moved into it,
    /// or the history an instance was built with). Written once, first.
    #[serde(rename_all = "camelCase")]
    Imported {
        /// The messages, oldest first.
        messages: Vec<Message>,
    },
    /// A Turn began with this input.
    #[serde(rename_all = "camelCase")]
    TurnStarted {
        /// The Turn.
        turn_id: String,
        /// Its trace.
        trace_id: String,
        /// The user's message.
        input: Message,
    },
    /// The model answered Step `step`; its calls are admitted with it, in the same write.
    #[serde(rename_all = "camelCase")]
    ModelAnswered {
        /// The Turn.
        turn_id: String,
        /// The Step's index in its Turn.
        step: usize,
        /// The assistant message, with its calls.
        assistant: Message,
        /// The tokens the request used, when the provider said.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        usage: Option<TokenUsage>,
    },
    /// A call was admitted: handed to the executor, which may still refuse it or wait for a
    /// person's approval. Its handler has not started.
    #[serde(rename_all = "camelCase")]
    CallAdmitted {
        /// The Turn.
        turn_id: String,
        /// The assistant message holding the call.
        message_id: String,
        /// The model's id of the call.
        call_id: String,
    },
    /// The call passed every middleware (approvals included) and its handler is about to run.
    #[serde(rename_all = "camelCase")]
    CallStarted {
        /// The Turn.
        turn_id: String,
        /// The assistant message holding the call.
        message_id: String,
        /// The model's id of the call.
        call_id: String,
    },
    /// The call's result, and the tool message that carries it into the conversation.
    #[serde(rename_all = "camelCase")]
    CallFinished {
        /// The Turn.
        turn_id: String,
        /// The assistant message holding the call.
        message_id: String,
        /// The tool message's id.
        tool_message_id: String,
        /// When the result came, in milliseconds since the Unix epoch.
        at: u64,
        /// The result.
        result: ToolCallResult,
    },
    /// A call that a code call's program made passed every middleware (approvals included) and
    /// its handler is about to run (code mode). It is the program's `index`th call (from 1),
    /// with the tool and the arguments the program gave, so that a program run again after a
    /// crash is checked against what it asked before.
    #[serde(rename_all = "camelCase")]
    InnerCallStarted {
        /// The Turn.
        turn_id: String,
        /// The assistant message holding the code call.
        message_id: String,
        /// The model's id of the code call.
        call_id: String,
        /// The call's position in the program, from 1.
        index: usize,
        /// The called tool, as the program named it (`resource__export`).
        tool: String,
        /// The arguments, as the program gave them.
        args: serde_json::Value,
    },
    /// The result of a call that a code call's program made, as the program got it.
    #[serde(rename_all = "camelCase")]
    InnerCallFinished {
        /// The Turn.
        turn_id: String,
        /// The assistant message holding the code call.
        message_id: String,
        /// The model's id of the code call.
        call_id: String,
        /// The call's position in the program, from 1.
        index: usize,
        /// The result.
        result: ToolCallResult,
    },
    /// The completion of a call whose result was `pending` (RES-2), and the message that
    /// brings it into the conversation between two Steps of the Turn `turn_id`.
    #[serde(rename_all = "camelCase")]
    SubmissionCompleted {
        /// The Turn whose conversation it joins.
        turn_id: String,
        /// The assistant message holding the call.
        message_id: String,
        /// The model's id of the call.
        call_id: String,
        /// The message, with the completed result.
        message: Message,
    },
    /// The Turn ended.
    #[serde(rename_all = "camelCase")]
    TurnEnded {
        /// The Turn.
        turn_id: String,
        /// How.
        end: TurnEnding,
    },
}

/// How a journaled Turn ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum TurnEnding {
    /// The model answered without calls.
    Answered,
    /// `policy.maxStepsPerTurn` Steps ran.
    MaxSteps,
    /// The Turn stopped with an error (the model failed, it was cancelled, a middleware
    /// stopped it); it is not resumed.
    Failed {
        /// The error, as the caller saw it.
        message: String,
    },
}

impl Record {
    /// The Turn the record belongs to; empty for [`Record::Imported`].
    pub fn turn_id(&self) -> &str {
        match self {
            Self::Imported { .. } => "",
            Self::TurnStarted { turn_id, .. }
            | Self::ModelAnswered { turn_id, .. }
            | Self::CallAdmitted { turn_id, .. }
            | Self::CallStarted { turn_id, .. }
            | Self::CallFinished { turn_id, .. }
            | Self::InnerCallStarted { turn_id, .. }
            | Self::InnerCallFinished { turn_id, .. }
            | Self::SubmissionCompleted { turn_id, .. }
            | Self::TurnEnded { turn_id, .. } => turn_id,
        }
    }

    /// The record's type as written: `turnStarted`, `callFinished`, ...
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Imported { .. } => "imported",
            Self::TurnStarted { .. } => "turnStarted",
            Self::ModelAnswered { .. } => "modelAnswered",
            Self::CallAdmitted { .. } => "callAdmitted",
            Self::CallStarted { .. } => "callStarted",
            Self::CallFinished { .. } => "callFinished",
            Self::InnerCallStarted { .. } => "innerCallStarted",
            Self::InnerCallFinished { .. } => "innerCallFinished",
            Self::SubmissionCompleted { .. } => "submissionCompleted",
            Self::TurnEnded { .. } => "turnEnded",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_is_written_with_its_type_and_camel_case_fields() {
        let record = Record::TurnEnded {
            turn_id: "t1".into(),
            end: TurnEnding::Failed {
                message: "cancelled".into(),
            },
        };
        let json = serde_json::to_value(&record).unwrap_or_default();
        assert_eq!(
            json,
            serde_json::json!({"type": "turnEnded", "turnId": "t1",
                               "end": {"kind": "failed", "message": "cancelled"}})
        );
        assert_eq!(record.kind(), "turnEnded");
        let back: Result<Record, _> = serde_json::from_value(json);
        assert_eq!(back.ok(), Some(record));
    }

    #[test]
    fn a_record_of_an_unknown_type_does_not_parse() {
        let parsed: Result<Record, _> =
            serde_json::from_str(r#"{"type":"callExploded","turnId":"t1"}"#);
        assert!(parsed.is_err());
    }
}
