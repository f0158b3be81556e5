//! [`SqliteJournal`]: the embedded journal, one SQLite file per instance (feature `sqlite`).
//!
//! SQLite in write-ahead-log mode, locked for one process (`locking_mode = EXCLUSIVE`): a write
//! is one transaction, so a crash leaves all of its records or none. A lock file beside the database (`{file}.lock`, an advisory lock the
//! system drops with the process) keeps a second process out. The format version is the
//! database's `user_version`.

use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use rusqlite::{Connection, OptionalExtension};

use super::record::{FORMAT_VERSION, MAX_RECORD_BYTES, Record};
use super::{Journal, JournalError, JournalFuture, Recovered, Replay};
use crate::lock;

/// How durable a written record is, SQLite's `synchronous` setting in WAL mode.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Durability {
    /// `synchronous = NORMAL`: a record survives the process being killed at any point; the
    /// last writes before a power loss or a kernel crash may be lost (never torn). The default.
    #[default]
    Normal,
    /// `synchronous = FULL`: every write is flushed to the disk before `append` returns, so it
    /// also survives a power loss. Each write costs a disk flush.
    Full,
}

/// A run journal in a SQLite file (WAL mode), one per instance.
///
/// ```
/// use goondan_runtime::step::journal::{Durability, Journal, Record, SqliteJournal};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let state = tempfile::tempdir()?;
/// let file = SqliteJournal::file_in(state.path(), "helper", "default");
/// let journal = SqliteJournal::open(&file, Durability::Normal)?;
/// journal.append(&[Record::Imported { messages: Vec::new() }]).await?;
/// assert_eq!(journal.read().await?.records.len(), 1);
/// assert!(journal.replay()?.conversation.is_empty());
///
/// // A second opening while the first is open is refused, not shared.
/// assert!(SqliteJournal::open(&file, Durability::Normal).is_err());
/// drop(journal);
/// assert!(SqliteJournal::open(&file, Durability::Normal).is_ok());
/// # Ok(())
/// # }
/// ```
pub struct SqliteJournal {
    path: PathBuf,
    conn: Mutex<Connection>,
    /// What opening found (a torn write-ahead log), told by the first read.
    warnings: Mutex<Vec<String>>,
    /// Held while the journal is open: the advisory lock that keeps other processes out.
    _lock: File,
}

impl std::fmt::Debug for SqliteJournal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteJournal")
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

impl SqliteJournal {
    /// Where the journal of `agent`'s instance `instance_key` is kept under the state
    /// directory `state`: `{state}/journal/{agent}.{instance_key}.sqlite3`.
    pub fn file_in(state: &Path, agent: &str, instance_key: &str) -> PathBuf {
        state
            .join("journal")
            .join(format!("{agent}.{instance_key}.sqlite3"))
    }

    /// Opens the journal at `path`, creating it (and its directory) when there is none.
    ///
    /// Fails when another process (or another opening in this one) has it open
    /// ([`JournalError::InUse`]), when a newer goondan wrote it ([`JournalError::NewerFormat`]),
    /// or when the file is not a journal.
    pub fn open(path: impl Into<PathBuf>, durability: Durability) -> Result<Self, JournalError> {
        Self::open_waiting(path, durability, Duration::ZERO)
    }

    /// [`open`](Self::open), waiting up to `wait` for another process to let go of the journal:
    /// what a restarted agent process does while the process it replaces is still exiting.
    /// Blocks the calling thread while it waits.
    pub fn open_waiting(
        path: impl Into<PathBuf>,
        durability: Durability,
        wait: Duration,
    ) -> Result<Self, JournalError> {
        let path = path.into();
        let io = |source| JournalError::Io {
            path: path.clone(),
            source,
        };
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(io)?;
        }
        let lock_path = with_suffix(&path, ".lock");
        let lock_io = |source| JournalError::Io {
            path: lock_path.clone(),
            source,
        };
        let lock = File::options()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&lock_path)
            .map_err(lock_io)?;
        let deadline = Instant::now() + wait;
        loop {
            match lock.try_lock() {
                Ok(()) => break,
                Err(std::fs::TryLockError::WouldBlock) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(20));
                }
                Err(std::fs::TryLockError::WouldBlock) => {
                    return Err(JournalError::InUse { path });
                }
                Err(std::fs::TryLockError::Error(source)) => return Err(lock_io(source)),
            }
        }
        let warnings = torn_wal(&with_suffix(&path, "-wal"))
            .into_iter()
            .collect::<Vec<_>>();
        for w in &warnings {
            tracing::warn!(target: "goondan::journal", journal = %path.display(), "{w}");
        }
        let storage = |e: rusqlite::Error| JournalError::storage(path.display(), e);
        let conn = Connection::open(&path).map_err(storage)?;
        // One process has the journal (the lock file says so): SQLite need not lock for each
        // write, and keeps the write-ahead log's index in memory instead of a shared file.
        conn.pragma_update(None, "locking_mode", "EXCLUSIVE")
            .map_err(storage)?;
        let mode: String = conn
            .query_row("PRAGMA journal_mode = WAL", [], |row| row.get(0))
            .map_err(storage)?;
        if !mode.eq_ignore_ascii_case("wal") {
            let refused = format!("SQLite refused write-ahead-log mode (it is `{mode}`)");
            return Err(JournalError::storage(path.display(), refused));
        }
        let synchronous = match durability {
            Durability::Normal => "NORMAL",
            Durability::Full => "FULL",
        };
        conn.pragma_update(None, "synchronous", synchronous)
            .map_err(storage)?;
        let version: u32 = conn
            .query_row("PRAGMA user_version", [], |row| row.get(0))
            .map_err(storage)?;
        if version > FORMAT_VERSION {
            return Err(JournalError::NewerFormat {
                place: path.display().to_string(),
                found: version,
                supported: FORMAT_VERSION,
            });
        }
        let has_table = conn
            .query_row(
                "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'records'",
                [],
                |_| Ok(()),
            )
            .optional()
            .map_err(storage)?
            .is_some();
        if !has_table {
            conn.execute_batch(&format!(
                "BEGIN;
                 CREATE TABLE records (
                     seq INTEGER PRIMARY KEY,
                     kind TEXT NOT NULL,
                     turn_id TEXT NOT NULL,
                     body TEXT NOT NULL
                 );
                 PRAGMA user_version = {FORMAT_VERSION};
                 COMMIT;"
            ))
            .map_err(storage)?;
        } else if version < FORMAT_VERSION {
            // An older format's records read as they are; the records written from now on
            // may be of this format, which an older build must refuse rather than misread.
            conn.pragma_update(None, "user_version", FORMAT_VERSION)
                .map_err(storage)?;
        }
        Ok(Self {
            path,
            conn: Mutex::new(conn),
            warnings: Mutex::new(warnings),
            _lock: lock,
        })
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Reads the journal and replays it, without an async runtime: what a tool that looks at
    /// a stopped agent's state needs (its conversation, the Turn it left unfinished).
    pub fn replay(&self) -> Result<Replay, JournalError> {
        Ok(Replay::from_recovered(self.load()?))
    }

    fn write(&self, records: &[Record]) -> Result<(), JournalError> {
        let storage = |e: rusqlite::Error| JournalError::storage(self.path.display(), e);
        let mut conn = lock(&self.conn);
        let tx = conn.transaction().map_err(storage)?;
        {
            let mut insert = tx
                .prepare_cached("INSERT INTO records (kind, turn_id, body) VALUES (?1, ?2, ?3)")
                .map_err(storage)?;
            for record in records {
                let body = serde_json::to_string(record)
                    .map_err(|e| JournalError::storage(self.path.display(), e))?;
                insert
                    .execute((record.kind(), record.turn_id(), body))
                    .map_err(storage)?;
            }
        }
        tx.commit().map_err(storage)
    }

    fn load(&self) -> Result<Recovered, JournalError> {
        let storage = |e: rusqlite::Error| JournalError::storage(self.path.display(), e);
        let conn = lock(&self.conn);
        let mut select = conn
            .prepare(
                "SELECT seq, length(body), CASE WHEN length(body) <= ?1 THEN body END
                 FROM records ORDER BY seq",
            )
            .map_err(storage)?;
        let limit = i64::try_from(MAX_RECORD_BYTES).unwrap_or(i64::MAX);
        let mut rows = select.query([limit]).map_err(storage)?;
        let mut records = Vec::new();
        let mut position = 0u64;
        while let Some(row) = rows.next().map_err(storage)? {
            position += 1;
            let corrupt = |reason: String| JournalError::Corrupt {
                place: self.path.display().to_string(),
                position,
                reason,
            };
            let bytes: Option<i64> = row.get(1).map_err(|e| corrupt(e.to_string()))?;
            let body: Option<String> = row.get(2).map_err(|e| corrupt(e.to_string()))?;
            let Some(body) = body else {
                return Err(corrupt(format!(
                    "{} bytes, more than the {MAX_RECORD_BYTES} a record may have",
                    bytes.unwrap_or(-1)
                )));
            };
            let record =
                serde_json::from_str(&body).map_err(|e| corrupt(format!("not a record: {e}")))?;
            records.push(record);
        }
        let warnings = std::mem::take(&mut *lock(&self.warnings));
        Ok(Recovered { records, warnings })
    }
}

impl Journal for SqliteJournal {
    fn append<'a>(&'a self, records: &'a [Record]) -> JournalFuture<'a, ()> {
        // A write is a few tens of microseconds: done here rather than on a blocking thread,
        // which would cost more than the write.
        Box::pin(std::future::ready(self.write(records)))
    }

    fn read(&self) -> JournalFuture<'_, Recovered> {
        Box::pin(std::future::ready(self.load()))
    }
}

fn with_suffix(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

/// Whether the write-ahead log at `wal` ends in a torn frame (a crash while writing it, or
/// a cut file): SQLite ignores such a frame and everything after it, so the journal recovers
/// to its last complete write; this says so.
fn torn_wal(wal: &Path) -> Option<String> {
    const HEADER: u64 = 32;
    const FRAME_HEADER: u64 = 24;
    let len = std::fs::metadata(wal).ok()?.len();
    if len == 0 {
        return None;
    }
    let mut header = [0u8; 32];
    let page_size = File::open(wal)
        .and_then(|mut f| f.read_exact(&mut header))
        .ok()
        .map(|()| {
            u64::from(u32::from_be_bytes([
                header[8], header[9], header[10], header[11],
            ]))
        });
    let whole = match page_size {
        Some(page) if page >= 512 && len >= HEADER => {
            (len - HEADER).is_multiple_of(FRAME_HEADER + page)
        }
        _ => false,
    };
    (!whole).then(|| {
        format!(
            "the journal's write-ahead log `{}` ends in a torn write ({len} bytes); the journal \
             goes on from its last complete write",
            wal.display()
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::context::Message;

    fn imported(text: &str) -> Record {
        Record::Imported {
            messages: vec![Message::assistant("m1", Some(text.into()), Vec::new())],
        }
    }

    fn open(path: &Path) -> SqliteJournal {
        SqliteJournal::open(path, Durability::Normal).unwrap_or_else(|e| panic!("{e}"))
    }

    fn raw(path: &Path, sql: &str) {
        let conn = Connection::open(path).unwrap_or_else(|e| panic!("{e}"));
        conn.execute_batch(sql).unwrap_or_else(|e| panic!("{e}"));
    }

    #[tokio::test]
    async fn records_come_back_in_the_order_written_after_reopening() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let path = SqliteJournal::file_in(dir.path(), "a", "k");
        let journal = open(&path);
        let written = [imported("one"), imported("two")];
        for record in &written {
            journal
                .append(std::slice::from_ref(record))
                .await
                .unwrap_or_else(|e| panic!("{e}"));
        }
        drop(journal);
        let journal =
            SqliteJournal::open(&path, Durability::Full).unwrap_or_else(|e| panic!("{e}"));
        let read = journal.read().await.unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(read.records, written);
        assert!(read.warnings.is_empty());
    }

    #[tokio::test]
    async fn a_journal_of_a_newer_format_is_refused() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let path = dir.path().join("j.sqlite3");
        drop(open(&path));
        raw(&path, "PRAGMA user_version = 99;");
        let err = SqliteJournal::open(&path, Durability::Normal).map(|_| ());
        assert!(
            matches!(
                err,
                Err(JournalError::NewerFormat {
                    found: 99,
                    supported: FORMAT_VERSION,
                    ..
                })
            ),
            "{err:?}"
        );
        let message = err.err().map(|e| e.to_string()).unwrap_or_default();
        assert!(message.contains("upgrade goondan"), "{message}");
    }

    #[tokio::test]
    async fn a_journal_of_format_1_reads_as_it_was_and_is_marked_with_this_format() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let path = dir.path().join("j.sqlite3");
        let old = imported("old");
        let journal = open(&path);
        journal
            .append(std::slice::from_ref(&old))
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        drop(journal);
        raw(&path, "PRAGMA user_version = 1;");
        let journal = open(&path);
        let read = journal.read().await.unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(read.records, [old]);
        drop(journal);
        let conn = Connection::open(&path).unwrap_or_else(|e| panic!("{e}"));
        let version: u32 = conn
            .query_row("PRAGMA user_version", [], |row| row.get(0))
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            version, FORMAT_VERSION,
            "an older build refuses it from now on"
        );
    }

    #[tokio::test]
    async fn a_record_that_does_not_parse_or_is_too_large_is_an_error_naming_its_position() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let path = dir.path().join("j.sqlite3");
        let journal = open(&path);
        journal
            .append(&[imported("fine")])
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        drop(journal);
        raw(
            &path,
            "INSERT INTO records (kind, turn_id, body) VALUES ('callStarted', 't', '{\"type\":42}');",
        );
        let err = open(&path).read().await.map(|_| ());
        assert!(
            matches!(&err, Err(JournalError::Corrupt { position: 2, .. })),
            "{err:?}"
        );
        raw(
            &path,
            &format!(
                "UPDATE records SET body = zeroblob({}) WHERE seq = 2;",
                MAX_RECORD_BYTES + 1
            ),
        );
        let err = open(&path).read().await.map(|_| ());
        let message = err.err().map(|e| e.to_string()).unwrap_or_default();
        assert!(
            message.contains("record 2") && message.contains("more than"),
            "{message}"
        );
    }

    #[test]
    fn a_file_that_is_not_a_journal_is_a_clear_error() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let path = dir.path().join("j.sqlite3");
        std::fs::write(&path, vec![b'x'; 4096]).unwrap_or_else(|e| panic!("{e}"));
        let err = SqliteJournal::open(&path, Durability::Normal).map(|_| ());
        let message = err.err().map(|e| e.to_string()).unwrap_or_default();
        assert!(
            message.contains("j.sqlite3") && message.contains("not a database"),
            "{message}"
        );
    }

    #[test]
    fn a_second_opening_is_refused_while_the_first_is_open_or_waits_for_it() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let path = dir.path().join("j.sqlite3");
        let first = open(&path);
        let second = SqliteJournal::open(&path, Durability::Normal).map(|_| ());
        assert!(
            matches!(second, Err(JournalError::InUse { .. })),
            "{second:?}"
        );
        let released = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(200));
            drop(first);
        });
        let waited =
            SqliteJournal::open_waiting(&path, Durability::Normal, Duration::from_secs(30));
        assert!(waited.is_ok(), "{:?}", waited.map(|_| ()));
        released
            .join()
            .unwrap_or_else(|_| panic!("the releasing thread panicked"));
    }

    #[test]
    fn a_write_ahead_log_cut_inside_a_frame_is_torn_and_a_whole_one_is_not() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let wal = dir.path().join("j.sqlite3-wal");
        assert_eq!(torn_wal(&wal), None, "no log");
        let mut header = vec![0u8; 32];
        header[8..12].copy_from_slice(&4096u32.to_be_bytes());
        let mut whole = header.clone();
        whole.extend(vec![0u8; 2 * (24 + 4096)]);
        std::fs::write(&wal, &whole).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(torn_wal(&wal), None, "two whole frames");
        std::fs::write(&wal, &whole[..whole.len() - 100]).unwrap_or_else(|e| panic!("{e}"));
        assert!(torn_wal(&wal).is_some_and(|w| w.contains("torn")));
        std::fs::write(&wal, &header[..10]).unwrap_or_else(|e| panic!("{e}"));
        assert!(torn_wal(&wal).is_some(), "a cut header");
    }
}
