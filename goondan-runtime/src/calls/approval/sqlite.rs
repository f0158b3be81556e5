//! [`SqliteQuestions`]: approval questions in a SQLite file under the state directory, shared
//! by every process of the machine (feature `sqlite`).

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use rusqlite::{Connection, OptionalExtension, TransactionBehavior};

use super::Decision;
use super::question::{
    AnswerOutcome, Listing, Question, QuestionError, QuestionFuture, QuestionStore, apply_answer,
    from_stored, same_call, to_stored, unless_damaged,
};
use crate::lock;

/// The format of the questions' file; a newer one is refused.
const FORMAT_VERSION: u32 = 1;

/// The largest question kept: the arguments of a call are bounded by the model's message.
const MAX_QUESTION_BYTES: usize = 4 * 1024 * 1024;

/// How long a write waits for another process's write to the same file.
const BUSY_WAIT: Duration = Duration::from_secs(5);

/// A [`QuestionStore`] in a SQLite file (WAL mode) that several processes open at once: the
/// agent processes ask, `goondan approvals` lists and answers. An answer is one transaction
/// that records it only when the question has none, so the first answer stands across
/// processes.
///
/// ```
/// use goondan_runtime::calls::approval::{
///     AnswerOutcome, Decision, Listing, Question, QuestionStore, SqliteQuestions,
/// };
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let state = tempfile::tempdir()?;
/// let store = SqliteQuestions::open(SqliteQuestions::file_in(state.path()))?;
/// let question = Question {
///     id: Question::id_for("coder", "default", "turn-1", "call-1"),
///     agent: "coder".into(),
///     instance_key: "default".into(),
///     turn_id: "turn-1".into(),
///     tool_call_id: "call-1".into(),
///     tool_name: "bash__exec".into(),
///     args: serde_json::Map::new(),
///     why: "the tool is marked destructive".into(),
///     asked_at_ms: 1,
///     expires_at_ms: None,
///     answer: None,
/// };
/// store.ask(question.clone()).await?;
///
/// // Another process opens the same file and answers; a second answer does not change it.
/// let other = SqliteQuestions::open(SqliteQuestions::file_in(state.path()))?;
/// let first = other.answer(&question.id, None, Decision::Approve, "cli", 2).await?;
/// assert!(matches!(first, AnswerOutcome::Recorded(_)));
/// let deny = Decision::Deny { reason: "no".into() };
/// let second = store.answer(&question.id, None, deny, "cli", 3).await?;
/// assert!(matches!(second, AnswerOutcome::AlreadyAnswered(_)));
/// assert_eq!(second.decision(), Some(&Decision::Approve));
/// assert!(store.list(Listing::Waiting).await?.is_empty());
/// # Ok(())
/// # }
/// ```
pub struct SqliteQuestions {
    path: PathBuf,
    conn: Mutex<Connection>,
}

impl std::fmt::Debug for SqliteQuestions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteQuestions")
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

impl SqliteQuestions {
    /// Where the questions of state directory `state` are kept: `{state}/approvals.sqlite3`.
    pub fn file_in(state: &Path) -> PathBuf {
        state.join("approvals.sqlite3")
    }

    /// Opens the questions' file at `path`, creating it (and its directory) when there is none.
    /// Fails when a newer goondan wrote it, or when it is not a questions' file.
    pub fn open(path: impl Into<PathBuf>) -> Result<Self, QuestionError> {
        let path = path.into();
        let conn = connect(&path).map_err(|e| QuestionError::storage(path.display(), e))?;
        Ok(Self {
            path,
            conn: Mutex::new(conn),
        })
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn storage(&self, e: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> QuestionError {
        QuestionError::storage(self.path.display(), e)
    }

    fn parse(&self, id: &str, body: &str) -> Result<Question, QuestionError> {
        let place = self.path.display();
        from_stored(&place, id, body.as_bytes(), MAX_QUESTION_BYTES)
    }

    fn encode(&self, question: &Question) -> Result<String, QuestionError> {
        to_stored(&self.path.display(), question, MAX_QUESTION_BYTES)
    }

    fn ask_now(&self, question: &Question) -> Result<Question, QuestionError> {
        let body = self.encode(question)?;
        let mut conn = lock(&self.conn);
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(|e| self.storage(e))?;
        if let Some(kept) = self.body_of(&tx, &question.id)? {
            let kept = self.parse(&question.id, &kept)?;
            same_call(&kept, question)?;
            return Ok(kept);
        }
        tx.execute(
            "INSERT INTO questions (id, agent, answered, body) VALUES (?1, ?2, ?3, ?4)",
            rusqlite::params![question.id, question.agent, question.answer.is_some(), body],
        )
        .map_err(|e| self.storage(e))?;
        tx.commit().map_err(|e| self.storage(e))?;
        Ok(question.clone())
    }

    fn answer_now(
        &self,
        id: &str,
        agent: Option<&str>,
        decision: Decision,
        by: &str,
        now_ms: u64,
    ) -> Result<AnswerOutcome, QuestionError> {
        let mut conn = lock(&self.conn);
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(|e| self.storage(e))?;
        let Some(body) = self.body_of(&tx, id)? else {
            return Err(QuestionError::Unknown { id: id.to_owned() });
        };
        let outcome = apply_answer(self.parse(id, &body)?, agent, decision, by, now_ms)?;
        if matches!(outcome, AnswerOutcome::AlreadyAnswered(_)) {
            return Ok(outcome);
        }
        let body = self.encode(outcome.question())?;
        tx.execute(
            "UPDATE questions SET answered = 1, body = ?2 WHERE id = ?1",
            rusqlite::params![id, body],
        )
        .map_err(|e| self.storage(e))?;
        tx.commit().map_err(|e| self.storage(e))?;
        Ok(outcome)
    }

    fn get_now(&self, id: &str) -> Result<Option<Question>, QuestionError> {
        let body = self.body_of(&lock(&self.conn), id)?;
        body.map(|b| self.parse(id, &b)).transpose()
    }

    /// The stored body of question `id`, if kept.
    fn body_of(&self, conn: &Connection, id: &str) -> Result<Option<String>, QuestionError> {
        conn.query_row("SELECT body FROM questions WHERE id = ?1", [id], |row| {
            row.get(0)
        })
        .optional()
        .map_err(|e| self.storage(e))
    }

    fn list_now(&self, which: Listing) -> Result<Vec<Question>, QuestionError> {
        let sql = match which {
            Listing::Waiting => "SELECT id, body FROM questions WHERE answered = 0 ORDER BY seq",
            Listing::All => "SELECT id, body FROM questions ORDER BY seq",
        };
        let conn = lock(&self.conn);
        let mut statement = conn.prepare(sql).map_err(|e| self.storage(e))?;
        let rows = statement
            .query_map([], |row| {
                Ok((row.get::<_, String>(0)?, row.get::<_, String>(1)?))
            })
            .map_err(|e| self.storage(e))?;
        let mut questions = Vec::new();
        for row in rows {
            let (id, body) = row.map_err(|e| self.storage(e))?;
            questions.extend(unless_damaged(self.parse(&id, &body)));
        }
        Ok(questions)
    }
}

/// The questions' file at `path`, made when there is none (its directory too) and checked:
/// write-ahead-log mode, a format this build reads, the table.
fn connect(path: &Path) -> Result<Connection, Box<dyn std::error::Error + Send + Sync>> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)?;
    }
    let conn = Connection::open(path)?;
    conn.busy_timeout(BUSY_WAIT)?;
    let mode: String = conn.query_row("PRAGMA journal_mode = WAL", [], |row| row.get(0))?;
    if !mode.eq_ignore_ascii_case("wal") {
        return Err(format!("SQLite refused write-ahead-log mode (it is `{mode}`)").into());
    }
    conn.pragma_update(None, "synchronous", "NORMAL")?;
    let version: u32 = conn.query_row("PRAGMA user_version", [], |row| row.get(0))?;
    if version > FORMAT_VERSION {
        return Err(format!(
            "it has format {version}; this build reads up to {FORMAT_VERSION}: upgrade goondan"
        )
        .into());
    }
    conn.execute_batch(&format!(
        "BEGIN IMMEDIATE;
             CREATE TABLE IF NOT EXISTS questions (
                 seq INTEGER PRIMARY KEY,
                 id TEXT NOT NULL UNIQUE,
                 agent TEXT NOT NULL,
                 answered INTEGER NOT NULL DEFAULT 0,
                 body TEXT NOT NULL
             );
             PRAGMA user_version = {FORMAT_VERSION};
             COMMIT;"
    ))?;
    Ok(conn)
}

impl QuestionStore for SqliteQuestions {
    fn ask(&self, question: Question) -> QuestionFuture<'_, Question> {
        Box::pin(std::future::ready(self.ask_now(&question)))
    }

    fn answer<'a>(
        &'a self,
        id: &'a str,
        agent: Option<&'a str>,
        decision: Decision,
        by: &'a str,
        now_ms: u64,
    ) -> QuestionFuture<'a, AnswerOutcome> {
        Box::pin(std::future::ready(
            self.answer_now(id, agent, decision, by, now_ms),
        ))
    }

    fn get<'a>(&'a self, id: &'a str) -> QuestionFuture<'a, Option<Question>> {
        Box::pin(std::future::ready(self.get_now(id)))
    }

    fn list(&self, which: Listing) -> QuestionFuture<'_, Vec<Question>> {
        Box::pin(std::future::ready(self.list_now(which)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::calls::approval::BY_EXPIRY;
    use crate::tools::result::JsonObject;

    fn question(call: &str, expires_at_ms: Option<u64>) -> Question {
        Question {
            id: Question::id_for("coder", "default", "turn-1", call),
            agent: "coder".into(),
            instance_key: "default".into(),
            turn_id: "turn-1".into(),
            tool_call_id: call.into(),
            tool_name: "bash__exec".into(),
            args: JsonObject::new(),
            why: "the tool is marked destructive".into(),
            asked_at_ms: 10,
            expires_at_ms,
            answer: None,
        }
    }

    fn store() -> (tempfile::TempDir, SqliteQuestions) {
        let dir = tempfile::tempdir().unwrap();
        let store = SqliteQuestions::open(SqliteQuestions::file_in(dir.path())).unwrap();
        (dir, store)
    }

    /// Question `id` approved from the command line at `at_ms`, for any agent.
    async fn approve(
        store: &SqliteQuestions,
        id: &str,
        at_ms: u64,
    ) -> Result<AnswerOutcome, QuestionError> {
        store
            .answer(id, None, Decision::Approve, "cli", at_ms)
            .await
    }

    #[tokio::test]
    async fn asking_the_same_call_twice_keeps_one_question_and_its_answer() {
        let (_dir, store) = store();
        let q = question("c1", None);
        store.ask(q.clone()).await.unwrap();
        approve(&store, &q.id, 20).await.unwrap();
        let again = store.ask(q.clone()).await.unwrap();
        assert_eq!(again.answer.map(|a| a.decision), Some(Decision::Approve));
        assert_eq!(store.list(Listing::All).await.unwrap().len(), 1);
    }

    #[tokio::test]
    async fn an_expired_question_is_denied_as_expired_and_a_late_answer_is_refused() {
        let (_dir, store) = store();
        let q = question("c1", Some(15));
        store.ask(q.clone()).await.unwrap();
        let late = approve(&store, &q.id, 20).await.unwrap();
        let AnswerOutcome::Expired(kept) = late else {
            panic!("not expired: {late:?}")
        };
        let answer = kept.answer.unwrap();
        assert_eq!(answer.by, BY_EXPIRY);
        assert!(
            matches!(&answer.decision, Decision::Deny { reason } if reason.starts_with("expired"))
        );
        // The expiry's denial stands for later answers too.
        let again = approve(&store, &q.id, 30).await.unwrap();
        assert!(matches!(again, AnswerOutcome::AlreadyAnswered(_)));
    }

    #[tokio::test]
    async fn bad_answers_are_structured_errors_that_change_nothing() {
        let (dir, store) = store();
        let q = question("c1", None);
        store.ask(q.clone()).await.unwrap();
        let unknown = approve(&store, "nope", 20).await;
        assert!(matches!(unknown, Err(QuestionError::Unknown { .. })));
        let other = store
            .answer(&q.id, Some("reviewer"), Decision::Approve, "cli", 20)
            .await;
        assert!(matches!(other, Err(QuestionError::OtherAgent { .. })));
        // A call of another Turn that happened to get the id is refused, not merged.
        let mut clash = question("c1", None);
        clash.turn_id = "turn-9".into();
        assert!(matches!(
            store.ask(clash).await,
            Err(QuestionError::Mismatch { .. })
        ));
        // A damaged row: get and answer say so, the list leaves it out.
        let damaged = question("c2", None);
        store.ask(damaged.clone()).await.unwrap();
        lock(&store.conn)
            .execute(
                "UPDATE questions SET body = '{\"id\": 5' WHERE id = ?1",
                [&damaged.id],
            )
            .unwrap();
        assert!(matches!(
            store.get(&damaged.id).await,
            Err(QuestionError::Corrupt { .. })
        ));
        assert!(matches!(
            approve(&store, &damaged.id, 20).await,
            Err(QuestionError::Corrupt { .. })
        ));
        let waiting = store.list(Listing::Waiting).await.unwrap();
        assert_eq!(waiting.iter().map(|q| &q.id).collect::<Vec<_>>(), [&q.id]);
        // A file written by a newer goondan is refused.
        lock(&store.conn)
            .pragma_update(None, "user_version", FORMAT_VERSION + 1)
            .unwrap();
        drop(store);
        let newer = SqliteQuestions::open(SqliteQuestions::file_in(dir.path()));
        assert!(
            matches!(&newer, Err(QuestionError::Storage { source, .. }) if source.to_string().contains("format 2")),
            "{newer:?}"
        );
    }
}
