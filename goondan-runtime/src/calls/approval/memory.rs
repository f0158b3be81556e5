//! [`MemoryQuestions`]: approval questions kept in this process only.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use super::Decision;
use super::question::{
    AnswerOutcome, Listing, Question, QuestionError, QuestionFuture, QuestionStore, apply_answer,
    same_call,
};
use crate::lock;

/// A [`QuestionStore`] in memory: for tests, and for a process that answers its own questions
/// (clones share the questions). Nothing outlives the process.
#[derive(Debug, Clone, Default)]
pub struct MemoryQuestions {
    /// By id, with the order they were asked in.
    questions: Arc<Mutex<BTreeMap<String, (u64, Question)>>>,
}

impl MemoryQuestions {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }
}

impl QuestionStore for MemoryQuestions {
    fn ask(&self, question: Question) -> QuestionFuture<'_, Question> {
        let mut questions = lock(&self.questions);
        let result = match questions.get(&question.id) {
            Some((_, kept)) => same_call(kept, &question).map(|()| kept.clone()),
            None => {
                let order = questions.len() as u64;
                questions.insert(question.id.clone(), (order, question.clone()));
                Ok(question)
            }
        };
        Box::pin(std::future::ready(result))
    }

    fn answer<'a>(
        &'a self,
        id: &'a str,
        agent: Option<&'a str>,
        decision: Decision,
        by: &'a str,
        now_ms: u64,
    ) -> QuestionFuture<'a, AnswerOutcome> {
        let mut questions = lock(&self.questions);
        let result = match questions.get_mut(id) {
            None => Err(QuestionError::Unknown { id: id.to_owned() }),
            Some((_, kept)) => {
                apply_answer(kept.clone(), agent, decision, by, now_ms).inspect(|outcome| {
                    if !matches!(outcome, AnswerOutcome::AlreadyAnswered(_)) {
                        *kept = outcome.question().clone();
                    }
                })
            }
        };
        Box::pin(std::future::ready(result))
    }

    fn get<'a>(&'a self, id: &'a str) -> QuestionFuture<'a, Option<Question>> {
        let found = lock(&self.questions).get(id).map(|(_, q)| q.clone());
        Box::pin(std::future::ready(Ok(found)))
    }

    fn list(&self, which: Listing) -> QuestionFuture<'_, Vec<Question>> {
        let mut found: Vec<(u64, Question)> = lock(&self.questions)
            .values()
            .filter(|(_, q)| which == Listing::All || q.answer.is_none())
            .cloned()
            .collect();
        found.sort_by_key(|(order, _)| *order);
        let found = found.into_iter().map(|(_, q)| q).collect();
        Box::pin(std::future::ready(Ok(found)))
    }
}
