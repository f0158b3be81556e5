//! [`MemoryJournal`]: a journal in memory, shared by its clones; for tests and examples.

use std::sync::{Arc, Mutex};

use super::{Journal, JournalFuture, Record, Recovered};
use crate::lock;

/// A journal kept in memory: clones share it, so a second instance built on a clone sees what
/// the first wrote, as a restarted process would see a file. It does not survive the process.
#[derive(Debug, Clone, Default)]
pub struct MemoryJournal {
    records: Arc<Mutex<Vec<Record>>>,
}

impl MemoryJournal {
    /// An empty journal.
    pub fn new() -> Self {
        Self::default()
    }

    /// Every record written so far.
    pub fn records(&self) -> Vec<Record> {
        lock(&self.records).clone()
    }
}

impl Journal for MemoryJournal {
    fn append<'a>(&'a self, records: &'a [Record]) -> JournalFuture<'a, ()> {
        lock(&self.records).extend_from_slice(records);
        Box::pin(std::future::ready(Ok(())))
    }

    fn read(&self) -> JournalFuture<'_, Recovered> {
        let records = self.records();
        Box::pin(std::future::ready(Ok(Recovered {
            records,
            warnings: Vec::new(),
        })))
    }
}
