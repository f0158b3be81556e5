//! Run journals: what an [`AgentInstance`](crate::step::AgentInstance) decided and did, written
//! before it takes effect, so that a process killed in the middle of a Turn resumes it without
//! losing a message or running a call twice.
//!
//! The step loop writes, in order: the Turn's input ([`Record::TurnStarted`]); each model
//! answer with its token usage ([`Record::ModelAnswered`]); each call's admission (handed to
//! the executor), start (every middleware passed, approvals included; the handler about to run)
//! and result; the Turn's end. [`AgentInstance::resume`](crate::step::AgentInstance::resume)
//! reads them back ([`Replay`]) and finishes the Turn a crash left:
//!
//! - a model answer already written is not asked for again;
//! - a call whose result is written is not run again;
//! - a call that started and has no result runs again only when its export is marked
//!   idempotent (`#[export(idempotent)]`, MCP's `idempotentHint`); otherwise the model gets
//!   [`E_TOOL_INTERRUPTED`](INTERRUPTED) and decides;
//! - a call admitted but not started runs;
//! - a code call that started runs its program again, whose calls the journal answers in
//!   order by the same rules ([`Record::InnerCallStarted`], [`Record::InnerCallFinished`];
//!   see [`crate::code`]).
//!
//! Backends: [`SqliteJournal`] (feature `sqlite`, the default: one file per instance under the
//! state directory), `NatsJournal` (feature `nats`: one subject per instance in a JetStream
//! stream, with a lease so that two hosts never run one instance) and [`MemoryJournal`] (for
//! tests). [`Journal`] is the trait to write
//! another.
//!
//! ```
//! use std::sync::Arc;
//! use goondan_runtime::prelude::*;
//! use goondan_runtime::step::journal::MemoryJournal;
//! use goondan_runtime::step::{AgentInstance, ModelResponse, ScriptedModel};
//!
//! /// Adds.
//! #[tool(name = "calc")]
//! pub fn add(a: i64, b: i64) -> i64 { a + b }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let registry = Arc::new(ToolRegistry::builder().tool(add::TOOL).build()?);
//! let journal = MemoryJournal::new();
//! let model = Arc::new(ScriptedModel::new([
//!     ModelResponse::calls([ToolCall::new("c1", "calc__add", serde_json::json!({"a": 2, "b": 3}))]),
//!     ModelResponse::text("5"),
//! ]));
//! let state = tempfile::tempdir()?;
//! let agent = AgentInstance::builder("helper", Arc::clone(&registry), model)
//!     .tools(["calc"])
//!     .state_dir(state.path())
//!     .journal(Arc::new(journal.clone()))
//!     .build()?;
//! agent.run_turn("what is 2 + 3?").await?;
//!
//! // Another instance on the same journal (a restarted process) has the conversation back.
//! let again = AgentInstance::builder("helper", registry, Arc::new(ScriptedModel::new([])))
//!     .state_dir(state.path())
//!     .journal(Arc::new(journal))
//!     .build()?;
//! assert!(again.resume().await?.is_none(), "nothing was left unfinished");
//! assert_eq!(again.conversation().len(), 4); // the question, the call, its result, the answer
//! # Ok(())
//! # }
//! ```

mod memory;
#[cfg(feature = "nats")]
mod nats;
mod point;
mod record;
mod replay;
#[cfg(feature = "sqlite")]
mod sqlite;

use std::path::PathBuf;

use crate::calls::middleware::BoxFuture;

pub use self::memory::MemoryJournal;
#[cfg(feature = "nats")]
pub use self::nats::{Lease, NatsJournal, NatsJournalOptions};
pub(crate) use self::point::reached;
pub use self::point::{JournalPoint, halt_at};
pub use self::record::{FORMAT_VERSION, MAX_RECORD_BYTES, Record, TurnEnding};
pub use self::replay::{
    CallProgress, FinishedCall, InnerCall, OpenStep, Replay, Submitted, UnfinishedTurn,
};
#[cfg(feature = "sqlite")]
pub use self::sqlite::{Durability, SqliteJournal};

/// The error code of a call whose handler had started when the process stopped, and whose
/// export is not marked idempotent: it may or may not have taken effect, so it is not run again
/// without the model deciding.
pub const INTERRUPTED: &str = "E_TOOL_INTERRUPTED";

/// The future a [`Journal`] returns.
pub type JournalFuture<'a, T> = BoxFuture<'a, Result<T, JournalError>>;

/// Where an instance's run records are kept. One journal holds one instance
/// (`{agent}.{instanceKey}`); [`append`](Journal::append) is called one write at a time.
pub trait Journal: Send + Sync + 'static {
    /// Writes `records` as one unit, after the ones written before: after a crash, all of
    /// them are there or none. Returns once they are as durable as the backend promises.
    fn append<'a>(&'a self, records: &'a [Record]) -> JournalFuture<'a, ()>;

    /// Reads every complete record, oldest first. A torn last write (a crash while writing)
    /// is left out with a warning; a record that does not parse before the end is an error.
    fn read(&self) -> JournalFuture<'_, Recovered>;
}

/// What [`Journal::read`] found.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Recovered {
    /// The complete records, oldest first.
    pub records: Vec<Record>,
    /// What was left out, and why (a torn last write, say).
    pub warnings: Vec<String>,
}

impl JournalError {
    /// [`Storage`](Self::Storage): the storage at `place` failed with `source`.
    pub(crate) fn storage(
        place: impl std::fmt::Display,
        source: impl Into<Box<dyn std::error::Error + Send + Sync>>,
    ) -> Self {
        Self::Storage {
            place: place.to_string(),
            source: source.into(),
        }
    }
}

/// Why a journal could not be opened, read or written.
#[derive(Debug, thiserror::Error)]
pub enum JournalError {
    /// A file could not be used.
    #[error("cannot use the journal `{}`: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The storage under the journal failed.
    #[error("the journal `{place}` failed: {source}")]
    Storage {
        /// The file or the stream.
        place: String,
        /// Why.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// Another process has the journal open.
    #[error(
        "the journal `{}` is open in another process (another `goondan run` or agent host of \
         the same agent and instance?); stop it, or give this one another state directory",
        path.display()
    )]
    InUse {
        /// The journal.
        path: PathBuf,
    },
    /// The journal was written by a newer version of goondan.
    #[error(
        "the journal `{place}` has format {found}; this build reads up to {supported}: \
         upgrade goondan, or move the journal away to start afresh"
    )]
    NewerFormat {
        /// The file or the stream.
        place: String,
        /// Its format.
        found: u32,
        /// The newest this build reads.
        supported: u32,
    },
    /// A name (an agent's, an instance key) cannot name a journal.
    #[error("the {what} `{name}` cannot name a journal: {reason}")]
    Name {
        /// What the name is of: `agent`, `instance key`.
        what: &'static str,
        /// The name.
        name: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// A write is larger than the journal takes.
    #[error(
        "a {what} of {bytes} bytes is larger than the journal `{place}` takes ({limit} bytes); \
         make the tool return less (a file in its workdir, a summary)"
    )]
    TooLarge {
        /// The file or the stream.
        place: String,
        /// `record` (one record) or `write` (the records written together).
        what: &'static str,
        /// Its size.
        bytes: usize,
        /// The limit.
        limit: usize,
    },
    /// Another host holds the journal's lease: it runs the same agent instance.
    #[error(
        "the journal `{place}` is held by `{holder}` (another host running the same agent and \
         instance); it is free once that host stops, or {ttl:?} after it last renewed its lease"
    )]
    Held {
        /// The journal's lease.
        place: String,
        /// Who holds it.
        holder: String,
        /// How long a lease lasts without renewal.
        ttl: std::time::Duration,
    },
    /// This host no longer holds the journal: its lease expired or another writer wrote to it.
    /// It writes nothing more, so that two hosts never run one instance; starting it again
    /// resumes from what the journal holds.
    #[error("this host lost the journal `{place}`: {reason}; it stops writing to it")]
    Lost {
        /// The journal or its lease.
        place: String,
        /// How.
        reason: String,
    },
    /// A record before the end does not parse: the journal is damaged and nothing is resumed
    /// from it.
    #[error(
        "the journal `{place}` is damaged at record {position}: {reason}; \
         it is left as it is (move it away to start afresh)"
    )]
    Corrupt {
        /// The file or the stream.
        place: String,
        /// The record's position, from 1.
        position: u64,
        /// What is wrong with it.
        reason: String,
    },
}
