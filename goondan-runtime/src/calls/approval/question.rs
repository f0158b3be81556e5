//! [`Question`]: an approval question kept in a [`QuestionStore`], so that it outlives the
//! process that asked it and can be answered from another one.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::{ApprovalRequest, Decision};
use crate::calls::middleware::BoxFuture;
use crate::tools::result::JsonObject;

/// The reason a question nobody answered in time is denied with: the model reads
/// `E_TOOL_DENIED` with a suggestion that starts with it.
pub const EXPIRED: &str = "expired";

/// Who answered a question when its expiry answered it.
pub const BY_EXPIRY: &str = "expiry";

/// An approval question: the call asked about, and its answer once there is one.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Question {
    /// The question's id, the same every time the same call of the same Turn is asked about
    /// ([`Question::id_for`]): a resumed Turn finds its question again.
    pub id: String,
    /// The agent whose call it is.
    pub agent: String,
    /// The agent instance.
    pub instance_key: String,
    /// The Turn.
    pub turn_id: String,
    /// The call's id.
    pub tool_call_id: String,
    /// The full tool name.
    pub tool_name: String,
    /// The arguments as they would run.
    pub args: JsonObject,
    /// Why the policy asks.
    pub why: String,
    /// When it was asked, in milliseconds since the Unix epoch.
    pub asked_at_ms: u64,
    /// When it is denied if nobody answers, in milliseconds since the Unix epoch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at_ms: Option<u64>,
    /// The answer, once there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer: Option<Answered>,
}

/// A question's answer: the first one given; later ones are refused.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Answered {
    /// What was decided.
    pub decision: Decision,
    /// Who answered: `terminal`, `cli`, [`BY_EXPIRY`], or what a Rust caller says.
    pub by: String,
    /// When, in milliseconds since the Unix epoch.
    pub at_ms: u64,
}

impl Question {
    /// The id of the question about call `tool_call_id` of Turn `turn_id` of an instance: 12
    /// hexadecimal digits of a SHA-256 of the four, so the same call always gets the same id.
    ///
    /// ```
    /// use goondan_runtime::calls::approval::Question;
    /// let id = Question::id_for("coder", "default", "turn-1", "call-1");
    /// assert_eq!(id.len(), 12);
    /// assert_eq!(id, Question::id_for("coder", "default", "turn-1", "call-1"));
    /// assert_ne!(id, Question::id_for("coder", "default", "turn-2", "call-1"));
    /// ```
    pub fn id_for(agent: &str, instance_key: &str, turn_id: &str, tool_call_id: &str) -> String {
        let mut hash = Sha256::new();
        for part in [agent, instance_key, turn_id, tool_call_id] {
            hash.update(part.as_bytes());
            hash.update([0]);
        }
        hash.finalize()[..6]
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect()
    }

    /// The id of the question about `request`'s call ([`id_for`](Self::id_for) its agent,
    /// instance, Turn and call).
    pub fn id_of(request: &ApprovalRequest) -> String {
        let ctx = request.context();
        Self::id_for(
            ctx.agent_name(),
            ctx.instance_key(),
            ctx.turn_id(),
            request.tool_call_id(),
        )
    }

    /// The question `request` asks, at `now_ms`, denied after `expires_after` when set.
    pub fn from_request(
        request: &ApprovalRequest,
        now_ms: u64,
        expires_after: Option<Duration>,
    ) -> Self {
        let ctx = request.context();
        Self {
            id: Self::id_of(request),
            agent: ctx.agent_name().to_owned(),
            instance_key: ctx.instance_key().to_owned(),
            turn_id: ctx.turn_id().to_owned(),
            tool_call_id: request.tool_call_id().to_owned(),
            tool_name: request.tool_name().to_owned(),
            args: request.args().clone(),
            why: request.why().to_owned(),
            asked_at_ms: now_ms,
            expires_at_ms: expires_after
                .map(|d| now_ms.saturating_add(u64::try_from(d.as_millis()).unwrap_or(u64::MAX))),
            answer: None,
        }
    }

    /// Whether it has no answer and its expiry has passed at `now_ms`.
    pub fn is_expired(&self, now_ms: u64) -> bool {
        self.answer.is_none() && self.expires_at_ms.is_some_and(|at| at <= now_ms)
    }

    /// The denial an expired question gets.
    pub fn expiry_decision(&self) -> Decision {
        Decision::Deny {
            reason: format!(
                "{EXPIRED}: nobody answered the approval question {} in time; ask the user \
                 before trying `{}` again",
                self.id, self.tool_name
            ),
        }
    }
}

/// What [`QuestionStore::answer`] did.
#[derive(Debug, Clone, PartialEq)]
pub enum AnswerOutcome {
    /// The answer was recorded: it is the question's answer.
    Recorded(Question),
    /// The question had an answer already; it stands, and the new one was not recorded.
    AlreadyAnswered(Question),
    /// The question's expiry had passed: it is denied ([`EXPIRED`]), and the new answer was
    /// not recorded.
    Expired(Question),
}

impl AnswerOutcome {
    /// The question as it is now, with the answer that stands.
    pub fn question(&self) -> &Question {
        match self {
            Self::Recorded(q) | Self::AlreadyAnswered(q) | Self::Expired(q) => q,
        }
    }

    /// The decision that stands.
    pub fn decision(&self) -> Option<&Decision> {
        self.question().answer.as_ref().map(|a| &a.decision)
    }
}

/// Which questions [`QuestionStore::list`] gives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Listing {
    /// Those with no answer (expired ones included: they are denied when next looked at).
    #[default]
    Waiting,
    /// All of them, answered ones included.
    All,
}

/// Why a question could not be kept, found or answered.
#[derive(Debug, thiserror::Error)]
pub enum QuestionError {
    /// No question has this id.
    #[error("no approval question has the id `{id}` (see `goondan approvals list`)")]
    Unknown {
        /// The id asked for.
        id: String,
    },
    /// The question belongs to another agent than the one answering.
    #[error("the approval question `{id}` is `{owner}`'s, not `{agent}`'s")]
    OtherAgent {
        /// The question.
        id: String,
        /// Its agent.
        owner: String,
        /// The agent the answer was for.
        agent: String,
    },
    /// A question with this id exists for another call: two calls hash alike, or the store
    /// was edited.
    #[error("the approval question `{id}` is kept for another call ({reason})")]
    Mismatch {
        /// The question.
        id: String,
        /// What differs.
        reason: String,
    },
    /// A kept question does not parse.
    #[error("the approval question `{id}` in `{place}` is damaged: {reason}")]
    Corrupt {
        /// The store.
        place: String,
        /// The question.
        id: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The storage under the store failed.
    #[error("the approval store `{place}` failed: {source}")]
    Storage {
        /// The store.
        place: String,
        /// Why.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
}

impl QuestionError {
    /// The [`Storage`](Self::Storage) error of the store at `place`.
    #[cfg(any(feature = "sqlite", feature = "nats"))]
    pub(super) fn storage(
        place: impl std::fmt::Display,
        source: impl Into<Box<dyn std::error::Error + Send + Sync>>,
    ) -> Self {
        Self::Storage {
            place: place.to_string(),
            source: source.into(),
        }
    }
}

/// The future a [`QuestionStore`] returns.
pub type QuestionFuture<'a, T> = BoxFuture<'a, Result<T, QuestionError>>;

/// Where approval questions are kept until answered: [`SqliteQuestions`](super::SqliteQuestions)
/// (a file under the state directory, shared by every process of the machine),
/// [`MemoryQuestions`](super::MemoryQuestions) (one process).
pub trait QuestionStore: Send + Sync + 'static {
    /// Keeps `question` unless one with its id is kept already; returns the one kept (with
    /// its answer, if it has one). Asking again for the same call is harmless.
    fn ask(&self, question: Question) -> QuestionFuture<'_, Question>;

    /// Answers question `id`, for `agent` when given (else any agent's), as `by` at `now_ms`.
    /// The first answer stands: a second one is [`AnswerOutcome::AlreadyAnswered`]; an
    /// unanswered question past its expiry is denied then ([`AnswerOutcome::Expired`]).
    fn answer<'a>(
        &'a self,
        id: &'a str,
        agent: Option<&'a str>,
        decision: Decision,
        by: &'a str,
        now_ms: u64,
    ) -> QuestionFuture<'a, AnswerOutcome>;

    /// The question `id`, if kept.
    fn get<'a>(&'a self, id: &'a str) -> QuestionFuture<'a, Option<Question>>;

    /// The questions kept, oldest first.
    fn list(&self, which: Listing) -> QuestionFuture<'_, Vec<Question>>;
}

/// A question as a store keeps it: its JSON, refused when longer than `max` bytes. `place`
/// names the store in the error.
#[cfg(any(feature = "sqlite", feature = "nats"))]
pub(super) fn to_stored(
    place: &dyn std::fmt::Display,
    question: &Question,
    max: usize,
) -> Result<String, QuestionError> {
    let body = serde_json::to_string(question).map_err(|e| QuestionError::storage(place, e))?;
    if body.len() > max {
        let why = format!(
            "the question is {} bytes; at most {max} are kept",
            body.len()
        );
        return Err(QuestionError::storage(place, why));
    }
    Ok(body)
}

/// The question `id` read back from a store (`place`): damaged when it does not parse, when
/// it is longer than `max` bytes, or when it says it is another question.
#[cfg(any(feature = "sqlite", feature = "nats"))]
pub(super) fn from_stored(
    place: &dyn std::fmt::Display,
    id: &str,
    body: &[u8],
    max: usize,
) -> Result<Question, QuestionError> {
    let corrupt = |reason: String| QuestionError::Corrupt {
        place: place.to_string(),
        id: id.to_owned(),
        reason,
    };
    if body.len() > max {
        return Err(corrupt(format!("it is {} bytes", body.len())));
    }
    let question: Question = serde_json::from_slice(body).map_err(|e| corrupt(e.to_string()))?;
    if question.id != id {
        return Err(corrupt(format!("it says its id is `{}`", question.id)));
    }
    Ok(question)
}

/// A question a store read back for a listing, or `None` when it is damaged (with a warning):
/// one damaged question does not hide the others.
#[cfg(any(feature = "sqlite", feature = "nats"))]
pub(super) fn unless_damaged(read: Result<Question, QuestionError>) -> Option<Question> {
    read.inspect_err(|e| {
        tracing::warn!(target: "goondan::approval", error = %e, "an approval question is left out");
    })
    .ok()
}

/// Answers `question` as every store does: checks whose it is; keeps an answer it has
/// already ([`AnswerOutcome::AlreadyAnswered`]); denies it for good when its expiry has passed
/// ([`AnswerOutcome::Expired`]); else records `decision` by `by` at `now_ms`. The store then
/// keeps the question as it is now unless it was already answered.
pub(super) fn apply_answer(
    mut question: Question,
    agent: Option<&str>,
    decision: Decision,
    by: &str,
    now_ms: u64,
) -> Result<AnswerOutcome, QuestionError> {
    if let Some(agent) = agent
        && agent != question.agent
    {
        return Err(QuestionError::OtherAgent {
            id: question.id.clone(),
            owner: question.agent.clone(),
            agent: agent.to_owned(),
        });
    }
    if question.answer.is_some() {
        return Ok(AnswerOutcome::AlreadyAnswered(question));
    }
    let expired = question.is_expired(now_ms);
    let (decision, by) = if expired {
        (question.expiry_decision(), BY_EXPIRY)
    } else {
        (decision, by)
    };
    question.answer = Some(Answered {
        decision,
        by: by.to_owned(),
        at_ms: now_ms,
    });
    Ok(if expired {
        AnswerOutcome::Expired(question)
    } else {
        AnswerOutcome::Recorded(question)
    })
}

/// The checks of [`QuestionStore::ask`] when a question with the id is kept: it must be the
/// same call.
pub(super) fn same_call(kept: &Question, asked: &Question) -> Result<(), QuestionError> {
    let reason = if kept.agent != asked.agent || kept.instance_key != asked.instance_key {
        "another agent instance"
    } else if kept.turn_id != asked.turn_id || kept.tool_call_id != asked.tool_call_id {
        "another call"
    } else if kept.tool_name != asked.tool_name {
        "another tool"
    } else {
        return Ok(());
    };
    Err(QuestionError::Mismatch {
        id: kept.id.clone(),
        reason: reason.to_owned(),
    })
}

/// Milliseconds since the Unix epoch, now.
pub fn now_ms() -> u64 {
    crate::tools::context::now_ms()
}
