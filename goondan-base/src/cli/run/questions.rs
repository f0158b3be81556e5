//! The approval questions of a state directory (`{state}/approvals.sqlite3`), or, for agents
//! whose run journal is on JetStream, of that NATS server (a key-value bucket): kept by the
//! agent processes of `goondan run` until someone answers them, at the terminal or with
//! `goondan approvals answer`, in this run or a later one, on this machine or another.

use std::path::Path;
use std::sync::Arc;

use goondan_runtime::calls::approval::{
    Answered, Decision, Listing, NatsQuestions, Question, QuestionError, QuestionStore,
    SqliteQuestions,
};
use serde_json::Value;

use super::link::short;

/// The state directory's questions, when the file can be opened.
pub(crate) fn open(state: &Path) -> Result<SqliteQuestions, QuestionError> {
    SqliteQuestions::open(SqliteQuestions::file_in(state))
}

/// The questions kept on the NATS server `url` (JetStream), with the connection's credentials
/// from the environment (`GOONDAN_NATS_TOKEN`, ...).
pub(crate) async fn open_nats(url: &str) -> Result<NatsQuestions, QuestionError> {
    let storage = |e: String| QuestionError::Storage {
        place: url.to_owned(),
        source: e.into(),
    };
    let client = crate::cli::NatsConnection::default()
        .options(url)
        .connect("goondan-approvals")
        .await
        .map_err(|e| storage(e.to_string()))?;
    let jetstream = async_nats::jetstream::new(client);
    NatsQuestions::open(&jetstream, NatsQuestions::DEFAULT_BUCKET).await
}

/// The store of an agent process: on the NATS server `nats` when its journal is there, else
/// in the state directory; `None`, with the reason logged, when neither can be opened (the
/// questions are then asked at the terminal only). Called from the agent process's runtime,
/// outside a task.
pub(crate) fn open_for_agent(
    state: Option<&Path>,
    nats: Option<&str>,
) -> Option<Arc<dyn QuestionStore>> {
    let opened = match (nats, state) {
        (Some(url), _) => match tokio::runtime::Handle::try_current() {
            Ok(runtime) => runtime
                .block_on(open_nats(url))
                .map(|s| Arc::new(s) as Arc<dyn QuestionStore>),
            Err(_) => return None,
        },
        (None, Some(state)) => open(state).map(|s| Arc::new(s) as Arc<dyn QuestionStore>),
        (None, None) => return None,
    };
    opened
        .map_err(|e| {
            tracing::error!(target: "goondan::run", error = %e, "the approval questions cannot be kept; they are asked at the terminal only");
        })
        .ok()
}

/// Where the questions of the state directory `state` are kept: on the NATS server `nats`
/// when the journals are there, else in the directory's file; `None` when that file was never
/// made (nothing was asked there).
pub(crate) async fn kept_in(
    state: &Path,
    nats: Option<&str>,
) -> Result<Option<Box<dyn QuestionStore>>, QuestionError> {
    Ok(match nats {
        Some(url) => Some(Box::new(open_nats(url).await?)),
        None if !SqliteQuestions::file_in(state).exists() => None,
        None => Some(Box::new(open(state)?)),
    })
}

/// The waiting questions of an earlier session, if any (on the NATS server `nats` when the
/// journals are there): nothing when there is no file yet.
pub(crate) async fn waiting_in(state: &Path, nats: Option<&str>) -> Vec<Question> {
    let listed = match kept_in(state, nats).await {
        Ok(Some(store)) => store.list(Listing::Waiting).await,
        Ok(None) => return Vec::new(),
        Err(e) => Err(e),
    };
    listed.unwrap_or_else(|e| {
        tracing::warn!(target: "goondan::run", error = %e, "the approval questions cannot be read");
        Vec::new()
    })
}

/// One question on one line: `ID  agent/instance  tool {args}  (why)`, and its answer or
/// expiry when it has one.
pub(crate) fn describe(question: &Question, now_ms: u64) -> String {
    let args = short(&Value::Object(question.args.clone()), 60);
    let mut text = format!(
        "{}  {}/{}  {} {}  ({}, asked {} ago)",
        question.id,
        question.agent,
        question.instance_key,
        question.tool_name,
        args,
        question.why,
        age(now_ms.saturating_sub(question.asked_at_ms)),
    );
    match (&question.answer, question.expires_at_ms) {
        (Some(answer), _) => {
            text.push_str(&format!("  → {}", answered(answer)));
        }
        (None, Some(at)) if at <= now_ms => text.push_str("  → expired (denied when next seen)"),
        (None, Some(at)) => {
            text.push_str(&format!("  expires in {}", age(at.saturating_sub(now_ms))));
        }
        (None, None) => {}
    }
    text
}

/// An answer in a few words: `approved by cli`, `denied by terminal: reason`.
pub(crate) fn answered(answer: &Answered) -> String {
    match &answer.decision {
        Decision::Approve => format!("approved by {}", answer.by),
        Decision::ApproveWith(args) => format!(
            "approved with edited arguments {} by {}",
            short(&Value::Object(args.clone()), 60),
            answer.by
        ),
        Decision::Deny { reason } => format!(
            "denied by {}: {}",
            answer.by,
            short(&Value::from(reason.as_str()), 100)
        ),
    }
}

/// A duration in milliseconds as `42s`, `3m`, `5h`, `2d`.
fn age(ms: u64) -> String {
    let s = ms / 1000;
    match s {
        0..60 => format!("{s}s"),
        60..3600 => format!("{}m", s / 60),
        3600..86400 => format!("{}h", s / 3600),
        _ => format!("{}d", s / 86400),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_question_reads_on_one_line_with_its_answer_or_expiry() {
        let mut q = Question {
            id: "abc".into(),
            agent: "coder".into(),
            instance_key: "default".into(),
            turn_id: "t".into(),
            tool_call_id: "c".into(),
            tool_name: "bash__exec".into(),
            args: serde_json::Map::from_iter([("cmd".to_owned(), Value::from("rm -rf x"))]),
            why: "the tool is marked destructive".into(),
            asked_at_ms: 1_000,
            expires_at_ms: Some(181_000),
            answer: None,
        };
        let line = describe(&q, 61_000);
        assert_eq!(
            line,
            "abc  coder/default  bash__exec {\"cmd\":\"rm -rf x\"}  (the tool is marked destructive, asked 1m ago)  expires in 2m"
        );
        assert!(describe(&q, 181_000).ends_with("→ expired (denied when next seen)"));
        q.answer = Some(Answered {
            decision: Decision::Deny {
                reason: "not now".into(),
            },
            by: "cli".into(),
            at_ms: 2_000,
        });
        assert!(describe(&q, 181_000).ends_with("→ denied by cli: not now"));
    }
}
