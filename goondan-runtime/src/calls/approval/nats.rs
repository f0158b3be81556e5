//! [`NatsQuestions`]: approval questions in a JetStream key-value bucket (feature `nats`), for
//! agents whose hosts come and go: a question asked on one machine is answered from any other
//! and found again by the host that resumes the Turn.

use async_nats::jetstream::{self, kv};
use futures_util::TryStreamExt;

use super::Decision;
use super::question::{
    AnswerOutcome, Listing, Question, QuestionError, QuestionFuture, QuestionStore, apply_answer,
    from_stored, same_call, to_stored, unless_damaged,
};

/// The largest question kept, in bytes of JSON (a server's `max_payload` may be lower).
const MAX_QUESTION_BYTES: usize = 1024 * 1024;

/// A [`QuestionStore`] in a JetStream key-value bucket (file storage, entries kept until
/// deleted), one entry per question under its id. Asking creates the entry only when there is
/// none; answering updates it only at the revision it was read at (retrying when another
/// process wrote in between), so the first answer stands across processes and machines.
///
/// ```no_run
/// use goondan_runtime::calls::approval::{Decision, NatsQuestions, QuestionStore};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let client = async_nats::connect("nats://127.0.0.1:4222").await?;
/// let jetstream = async_nats::jetstream::new(client);
/// let questions = NatsQuestions::open(&jetstream, NatsQuestions::DEFAULT_BUCKET).await?;
/// let outcome = questions.answer("3f2a9c1d0b7e", None, Decision::Approve, "cli", 1).await?;
/// println!("{:?}", outcome.decision());
/// # Ok(())
/// # }
/// ```
pub struct NatsQuestions {
    store: kv::Store,
    place: String,
}

impl std::fmt::Debug for NatsQuestions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NatsQuestions")
            .field("place", &self.place)
            .finish_non_exhaustive()
    }
}

impl NatsQuestions {
    /// The bucket the `goondan` program keeps its questions in.
    pub const DEFAULT_BUCKET: &'static str = "goondan_approvals";

    /// The questions in bucket `bucket` (for example [`Self::DEFAULT_BUCKET`]), created when
    /// there is none.
    pub async fn open(jetstream: &jetstream::Context, bucket: &str) -> Result<Self, QuestionError> {
        let place = format!("key-value bucket {bucket}");
        let store = crate::kv::bucket(
            jetstream,
            bucket,
            "goondan: approval questions waiting for a person",
            None,
        )
        .await
        .map_err(|e| QuestionError::storage(&place, e))?;
        Ok(Self { store, place })
    }

    fn storage(&self, e: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> QuestionError {
        QuestionError::storage(&self.place, e)
    }

    fn parse(&self, id: &str, body: &[u8]) -> Result<Question, QuestionError> {
        from_stored(&self.place, id, body, MAX_QUESTION_BYTES)
    }

    fn encode(&self, question: &Question) -> Result<bytes::Bytes, QuestionError> {
        to_stored(&self.place, question, MAX_QUESTION_BYTES).map(|body| body.into_bytes().into())
    }

    /// An id as a key: ids are hexadecimal, but one from outside is checked before it is used.
    fn key<'a>(&self, id: &'a str) -> Result<&'a str, QuestionError> {
        let valid = !id.is_empty()
            && id.len() <= 64
            && id
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"-_".contains(&b));
        valid
            .then_some(id)
            .ok_or_else(|| QuestionError::Unknown { id: id.to_owned() })
    }
}

impl QuestionStore for NatsQuestions {
    fn ask(&self, question: Question) -> QuestionFuture<'_, Question> {
        Box::pin(async move {
            let key = self.key(&question.id)?;
            let body = self.encode(&question)?;
            match self.store.create(key, body).await {
                Ok(_) => Ok(question),
                Err(e) if e.kind() == kv::CreateErrorKind::AlreadyExists => {
                    let kept = self.get(key).await?.ok_or_else(|| {
                        self.storage(format!("question `{key}` was there and is gone"))
                    })?;
                    same_call(&kept, &question)?;
                    Ok(kept)
                }
                Err(e) => Err(self.storage(e)),
            }
        })
    }

    fn answer<'a>(
        &'a self,
        id: &'a str,
        agent: Option<&'a str>,
        decision: Decision,
        by: &'a str,
        now_ms: u64,
    ) -> QuestionFuture<'a, AnswerOutcome> {
        Box::pin(async move {
            let key = self.key(id)?;
            // Read, decide, write at that revision; another writer in between means read again.
            for _ in 0..16 {
                let entry = self.store.entry(key).await.map_err(|e| self.storage(e))?;
                let Some(entry) = entry.filter(|e| e.operation == kv::Operation::Put) else {
                    return Err(QuestionError::Unknown { id: id.to_owned() });
                };
                let question = self.parse(id, &entry.value)?;
                let outcome = apply_answer(question, agent, decision.clone(), by, now_ms)?;
                if matches!(outcome, AnswerOutcome::AlreadyAnswered(_)) {
                    return Ok(outcome);
                }
                let body = self.encode(outcome.question())?;
                match self.store.update(key, body, entry.revision).await {
                    Ok(_) => return Ok(outcome),
                    Err(e) if e.kind() == kv::UpdateErrorKind::WrongLastRevision => continue,
                    Err(e) => return Err(self.storage(e)),
                }
            }
            Err(self.storage(format!(
                "question `{id}` kept changing while it was answered"
            )))
        })
    }

    fn get<'a>(&'a self, id: &'a str) -> QuestionFuture<'a, Option<Question>> {
        Box::pin(async move {
            let Ok(key) = self.key(id) else {
                return Ok(None);
            };
            match self.store.get(key).await.map_err(|e| self.storage(e))? {
                Some(body) => self.parse(id, &body).map(Some),
                None => Ok(None),
            }
        })
    }

    fn list(&self, which: Listing) -> QuestionFuture<'_, Vec<Question>> {
        Box::pin(async move {
            let keys: Vec<String> = self
                .store
                .keys()
                .await
                .map_err(|e| self.storage(e))?
                .try_collect()
                .await
                .map_err(|e| self.storage(e))?;
            let mut questions = Vec::with_capacity(keys.len());
            for key in keys {
                let question = self.get(&key).await.transpose().and_then(unless_damaged);
                questions.extend(question.filter(|q| which == Listing::All || q.answer.is_none()));
            }
            questions.sort_by(|a, b| (a.asked_at_ms, &a.id).cmp(&(b.asked_at_ms, &b.id)));
            Ok(questions)
        })
    }
}
