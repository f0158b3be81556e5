//! [`WaitingApprover`]: an approver whose questions are kept in a [`QuestionStore`] until
//! someone answers them, in this process or another, now or after a restart.

use std::sync::Arc;
use std::time::Duration;

use super::question::{AnswerOutcome, BY_EXPIRY, Question, QuestionStore, now_ms};
use super::{ApprovalRequest, Approver, Decision, DecisionFuture};

/// Who answered when the live approver did.
pub const BY_LIVE: &str = "live";

/// How often a waiting question is looked up in its store by default.
const POLL: Duration = Duration::from_millis(250);

/// An [`Approver`] that keeps each question in a [`QuestionStore`] and waits for its answer:
///
/// - the question's id is the same for the same call of the same Turn, so a Turn resumed
///   after a crash finds its question again, answered or still waiting;
/// - the answer comes from the store (`goondan approvals answer`, [`QuestionStore::answer`]
///   from Rust, another process) or from a live approver (a terminal prompt) asked at the
///   same time; the first answer stands, and the live one is recorded in the store;
/// - a question with an expiry that nobody answers in time is denied with the reason
///   [`EXPIRED`](super::EXPIRED);
/// - a store that cannot keep the question denies the call (nothing runs unapproved).
///
/// ```
/// use std::sync::Arc;
/// use goondan_runtime::calls::approval::{
///     Approvals, Decision, Listing, MemoryQuestions, QuestionStore, WaitingApprover, now_ms,
/// };
/// use goondan_runtime::prelude::*;
/// use goondan_runtime::testing::TestKit;
///
/// /// Notes.
/// #[tool(name = "notes")]
/// pub mod notes {
///     use super::*;
///     /// Delete every note.
///     #[export(destructive)]
///     pub async fn clear() -> Result<String, ToolError> {
///         Ok("cleared".into())
///     }
/// }
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let store = MemoryQuestions::new();
/// let approver = WaitingApprover::new(Arc::new(store.clone()));
/// let kit = TestKit::builder().tool(notes::TOOL).middleware(0, Approvals::new(approver)).build()?;
///
/// // Someone else answers the question while the call waits.
/// let answering = tokio::spawn(async move {
///     loop {
///         if let Some(question) = store.list(Listing::Waiting).await?.pop() {
///             store.answer(&question.id, None, Decision::Approve, "ops", now_ms()).await?;
///             return Ok::<_, goondan_runtime::calls::approval::QuestionError>(question.id);
///         }
///         tokio::time::sleep(std::time::Duration::from_millis(10)).await;
///     }
/// });
/// let result = kit.call("notes__clear", serde_json::json!({})).await;
/// assert_eq!(result.output, Some(serde_json::json!("cleared")));
/// answering.await??;
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct WaitingApprover {
    store: Arc<dyn QuestionStore>,
    live: Option<Arc<dyn Approver>>,
    expires_after: Option<Duration>,
    poll: Duration,
}

impl std::fmt::Debug for WaitingApprover {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WaitingApprover")
            .field("live", &self.live.is_some())
            .field("expires_after", &self.expires_after)
            .field("poll", &self.poll)
            .finish_non_exhaustive()
    }
}

impl WaitingApprover {
    /// Keeps questions in `store` and waits for their answers there, without expiry.
    pub fn new(store: Arc<dyn QuestionStore>) -> Self {
        Self {
            store,
            live: None,
            expires_after: None,
            poll: POLL,
        }
    }

    /// Also asks `live` (a terminal prompt, say) at the same time; its answer is recorded in
    /// the store unless another came first.
    #[must_use]
    pub fn live(mut self, live: impl Approver) -> Self {
        self.live = Some(Arc::new(live));
        self
    }

    /// Denies a question nobody answered within `after` of its asking
    /// ([`EXPIRED`](super::EXPIRED)).
    #[must_use]
    pub fn expires_after(mut self, after: Duration) -> Self {
        self.expires_after = Some(after);
        self
    }

    /// How often the store is looked up for an answer (default 250 ms).
    #[must_use]
    pub fn poll_every(mut self, every: Duration) -> Self {
        self.poll = every.max(Duration::from_millis(1));
        self
    }

    async fn wait(&self, request: &ApprovalRequest) -> Decision {
        let asked = Question::from_request(request, now_ms(), self.expires_after);
        let question = match self.store.ask(asked).await {
            Ok(question) => question,
            Err(e) => return cannot_keep(&e),
        };
        if let Some(answer) = &question.answer {
            return answer.decision.clone();
        }
        let id = question.id.clone();
        let live = async {
            match &self.live {
                Some(live) => live.decide(request).await,
                None => std::future::pending().await,
            }
        };
        let expiry = async {
            match question.expires_at_ms {
                Some(at) => {
                    let left = at.saturating_sub(now_ms());
                    tokio::time::sleep(Duration::from_millis(left)).await;
                }
                None => std::future::pending().await,
            }
        };
        let answered_elsewhere = async {
            let mut ticks = tokio::time::interval(self.poll);
            loop {
                ticks.tick().await;
                match self.store.get(&id).await {
                    Ok(Some(q)) => {
                        if let Some(answer) = q.answer {
                            return answer.decision;
                        }
                    }
                    Ok(None) => {
                        return Decision::Deny {
                            reason: format!(
                                "the approval question {id} was removed before anyone answered it"
                            ),
                        };
                    }
                    Err(e) => return cannot_keep(&e),
                }
            }
        };
        // The live approver stays asked until the answer is kept: dropping it tells its
        // person the question was settled, and they may look the answer up at once.
        let mut live = Box::pin(live);
        let (decision, by) = tokio::select! {
            decision = answered_elsewhere => return decision,
            decision = &mut live => (decision, BY_LIVE),
            () = expiry => (question.expiry_decision(), BY_EXPIRY),
        };
        let kept = self
            .store
            .answer(&id, None, decision.clone(), by, now_ms())
            .await;
        drop(live);
        match kept {
            Ok(AnswerOutcome::Recorded(_)) => decision,
            Ok(outcome) => outcome.decision().cloned().unwrap_or(decision),
            // The answer is given but not kept: a resumed Turn asks again.
            Err(e) => {
                tracing::warn!(target: "goondan::approval", question = %id, error = %e, "the answer cannot be kept");
                decision
            }
        }
    }
}

fn cannot_keep(e: &super::QuestionError) -> Decision {
    Decision::Deny {
        reason: format!(
            "the approval question cannot be kept, so nobody can answer it: {e}; the call runs \
             only when approved"
        ),
    }
}

impl Approver for WaitingApprover {
    fn decide<'a>(&'a self, request: &'a ApprovalRequest) -> DecisionFuture<'a> {
        Box::pin(self.wait(request))
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use futures_util::FutureExt;

    use super::*;
    use crate::calls::approval::question::{AnswerOutcome, Listing, QuestionError, QuestionFuture};
    use crate::calls::approval::{EXPIRED, MemoryQuestions, approver_fn};
    use crate::tools::annotations::ExportAnnotations;
    use crate::tools::context::ToolContext;

    fn request(call: &str) -> ApprovalRequest {
        ApprovalRequest {
            tool_name: "notes__clear".into(),
            tool_call_id: call.into(),
            args: crate::tools::result::JsonObject::new(),
            annotations: ExportAnnotations::default(),
            why: "the tool is marked destructive",
            ctx: ToolContext::builder(std::env::temp_dir())
                .agent_name("coder")
                .turn_id("turn-1")
                .build(),
        }
    }

    /// A live approver that answers `decision` after `after`, counting how often it is asked.
    fn live(decision: Decision, after: Duration, asked: Arc<AtomicUsize>) -> impl Approver {
        approver_fn(move |_| {
            asked.fetch_add(1, Ordering::SeqCst);
            let decision = decision.clone();
            async move {
                tokio::time::sleep(after).await;
                decision
            }
        })
    }

    #[tokio::test]
    async fn the_live_answer_is_kept_and_a_resumed_turn_gets_it_without_asking_again() {
        let store = MemoryQuestions::new();
        let asked = Arc::new(AtomicUsize::new(0));
        let approver = WaitingApprover::new(Arc::new(store.clone())).live(live(
            Decision::Approve,
            Duration::ZERO,
            Arc::clone(&asked),
        ));
        assert_eq!(approver.decide(&request("c1")).await, Decision::Approve);
        let kept = store.list(Listing::All).await.unwrap();
        assert_eq!(kept.len(), 1);
        assert_eq!(
            kept[0].answer.as_ref().map(|a| a.by.as_str()),
            Some(BY_LIVE)
        );
        // The same call again (a Turn resumed after a crash): answered from the store.
        assert_eq!(approver.decide(&request("c1")).await, Decision::Approve);
        assert_eq!(asked.load(Ordering::SeqCst), 1);
    }

    #[tokio::test]
    async fn an_answer_from_elsewhere_wins_over_a_live_approver_still_asking() {
        let store = MemoryQuestions::new();
        let asked = Arc::new(AtomicUsize::new(0));
        let approver = WaitingApprover::new(Arc::new(store.clone()))
            .live(live(Decision::Approve, Duration::from_secs(3600), asked))
            .poll_every(Duration::from_millis(5));
        let waiting = tokio::spawn(async move { approver.decide(&request("c1")).await });
        let id = loop {
            if let Some(q) = store.list(Listing::Waiting).await.unwrap().pop() {
                break q.id;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        };
        let deny = Decision::Deny {
            reason: "not today".into(),
        };
        store
            .answer(&id, None, deny.clone(), "cli", now_ms())
            .await
            .unwrap();
        assert_eq!(waiting.await.unwrap(), deny);
    }

    #[tokio::test]
    async fn a_question_nobody_answers_in_time_is_denied_as_expired_and_stays_so() {
        let store = MemoryQuestions::new();
        let approver = WaitingApprover::new(Arc::new(store.clone()))
            .expires_after(Duration::from_millis(30))
            .poll_every(Duration::from_millis(5));
        let decision = approver.decide(&request("c1")).await;
        assert!(
            matches!(&decision, Decision::Deny { reason } if reason.starts_with(EXPIRED)),
            "{decision:?}"
        );
        let kept = store.list(Listing::All).await.unwrap().remove(0);
        assert_eq!(kept.answer.as_ref().map(|a| a.by.as_str()), Some(BY_EXPIRY));
        let late = store
            .answer(&kept.id, None, Decision::Approve, "cli", now_ms())
            .await
            .unwrap();
        assert!(matches!(late, AnswerOutcome::AlreadyAnswered(_)));
    }

    /// A live approver that never answers and, when it is dropped (its question settled),
    /// records the answer its store holds at that moment.
    fn watching(store: MemoryQuestions, seen: Arc<Mutex<Vec<Option<String>>>>) -> impl Approver {
        struct Watch(MemoryQuestions, Arc<Mutex<Vec<Option<String>>>>);
        impl Drop for Watch {
            fn drop(&mut self) {
                let kept = self.0.list(Listing::All).now_or_never();
                let by = kept
                    .and_then(Result::ok)
                    .and_then(|mut all| all.pop())
                    .and_then(|q| q.answer)
                    .map(|a| a.by);
                self.1.lock().unwrap().push(by);
            }
        }
        approver_fn(move |_| {
            let watch = Watch(store.clone(), Arc::clone(&seen));
            async move {
                let _watch = watch;
                std::future::pending::<Decision>().await
            }
        })
    }

    #[tokio::test]
    async fn the_live_approver_is_told_a_question_expired_only_once_the_expiry_is_kept() {
        let store = MemoryQuestions::new();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let approver = WaitingApprover::new(Arc::new(store.clone()))
            .live(watching(store.clone(), Arc::clone(&seen)))
            .expires_after(Duration::from_millis(20))
            .poll_every(Duration::from_secs(3600));
        let decision = approver.decide(&request("c1")).await;
        assert!(matches!(&decision, Decision::Deny { .. }), "{decision:?}");
        assert_eq!(*seen.lock().unwrap(), [Some(BY_EXPIRY.to_owned())]);
    }

    /// A store whose every operation fails.
    struct Broken;

    impl QuestionStore for Broken {
        fn ask(&self, _: Question) -> QuestionFuture<'_, Question> {
            Box::pin(async {
                Err(QuestionError::Storage {
                    place: "broken".into(),
                    source: "the disk is full".into(),
                })
            })
        }
        fn answer<'a>(
            &'a self,
            id: &'a str,
            _: Option<&'a str>,
            _: Decision,
            _: &'a str,
            _: u64,
        ) -> QuestionFuture<'a, AnswerOutcome> {
            Box::pin(async move { Err(QuestionError::Unknown { id: id.into() }) })
        }
        fn get<'a>(&'a self, _: &'a str) -> QuestionFuture<'a, Option<Question>> {
            Box::pin(async { Ok(None) })
        }
        fn list(&self, _: Listing) -> QuestionFuture<'_, Vec<Question>> {
            Box::pin(async { Ok(Vec::new()) })
        }
    }

    #[tokio::test]
    async fn a_store_that_cannot_keep_the_question_denies_the_call_without_asking() {
        let asked = Arc::new(AtomicUsize::new(0));
        let approver = WaitingApprover::new(Arc::new(Broken)).live(live(
            Decision::Approve,
            Duration::ZERO,
            Arc::clone(&asked),
        ));
        let decision = approver.decide(&request("c1")).await;
        assert!(
            matches!(&decision, Decision::Deny { reason } if reason.contains("the disk is full")),
            "{decision:?}"
        );
        assert_eq!(asked.load(Ordering::SeqCst), 0);
    }
}
