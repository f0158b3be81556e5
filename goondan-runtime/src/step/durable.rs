//! The step loop's side of durable runs: writing the journal at each point, the call-start
//! middleware, and what a call that a crash interrupted answers.

use std::sync::{Arc, Mutex};

use super::journal::{INTERRUPTED, Journal, JournalError, JournalPoint, Record, reached};
use crate::calls::finish::{Announce, Rules, finish};
use crate::calls::middleware::{CallContext, Middleware, MiddlewareFuture, Next};
use crate::lock;
use crate::tools::context::ToolContext;
use crate::tools::error::ToolError;
use crate::tools::registry::ToolRegistry;
use crate::tools::result::{ToolCall, ToolCallResult};

/// The instance's journal, if it has one, and the records waiting to go with its next write.
///
/// Writes that wait at the same time are committed together (group commit): a writer queues
/// its records, lets the other calls of its Step run up to their own writes (one yield), and
/// the first to take the commit lock writes everything queued as one unit. Each writer returns
/// once its records are written; a call's handler never runs before its start is durable.
#[derive(Clone, Default)]
pub(crate) struct Writer(Option<Arc<Inner>>);

struct Inner {
    journal: Arc<dyn Journal>,
    queue: Mutex<Queue>,
    /// Held while a write is on its way to the journal.
    commit: tokio::sync::Mutex<()>,
}

#[derive(Default)]
struct Queue {
    /// Records for the next write: call results and rerunnable starts deferred to it, and
    /// the records of writers waiting for it.
    records: Vec<Record>,
    /// The point each of the call results among `records` reaches once written
    /// (`after-result`, or `after-inner-result` for a call a program made).
    results: Vec<JournalPoint>,
    /// How many of those are results of calls that would not run again after a crash: a
    /// rerunnable call's start does not wait for the next write while there are any.
    precious: usize,
    /// The ticket of the last writer that queued.
    queued: u64,
    /// Every writer with a ticket up to this one has its records written (or failed).
    written: u64,
    /// The last failed write: the tickets it held (from, to) and why.
    failed: Option<(u64, u64, String)>,
}

impl Writer {
    pub(crate) fn new(journal: Option<Arc<dyn Journal>>) -> Self {
        Self(journal.map(|journal| {
            Arc::new(Inner {
                journal,
                queue: Mutex::new(Queue::default()),
                commit: tokio::sync::Mutex::new(()),
            })
        }))
    }

    /// Writes the deferred records and those `build` makes (built only when there is a
    /// journal), with the records of writers waiting at the same time, as one unit; then
    /// marks the points reached: each result's (`after-result`, `after-inner-result`) for
    /// the results the write carried, then `points`.
    pub(crate) async fn write(
        &self,
        points: &[JournalPoint],
        build: impl FnOnce() -> Vec<Record>,
    ) -> Result<(), JournalError> {
        let Some(inner) = &self.0 else {
            return Ok(());
        };
        let ticket = {
            let mut queue = lock(&inner.queue);
            queue.records.extend(build());
            queue.queued += 1;
            queue.queued
        };
        // The Step's other calls, polled with this one, queue their starts meanwhile.
        tokio::task::yield_now().await;
        let _commit = inner.commit.lock().await;
        let (records, results, upto) = {
            let mut queue = lock(&inner.queue);
            if queue.written >= ticket {
                // Another writer wrote these records with its own.
                drop(queue);
                return Self::outcome(inner, ticket, points);
            }
            let records = std::mem::take(&mut queue.records);
            let results = std::mem::take(&mut queue.results);
            queue.precious = 0;
            (records, results, queue.queued)
        };
        let appended = if records.is_empty() {
            Ok(())
        } else {
            inner.journal.append(&records).await
        };
        let mut queue = lock(&inner.queue);
        let from = queue.written + 1;
        queue.written = upto;
        match appended {
            Ok(()) => {
                drop(queue);
                results
                    .into_iter()
                    .chain(points.iter().copied())
                    .for_each(reached);
                Ok(())
            }
            Err(e) => {
                queue.failed = Some((from, upto, e.to_string()));
                Err(e)
            }
        }
    }

    /// How the write that carried `ticket`'s records went, for a writer whose records another
    /// writer wrote.
    fn outcome(inner: &Inner, ticket: u64, points: &[JournalPoint]) -> Result<(), JournalError> {
        if let Some((from, to, why)) = &lock(&inner.queue).failed
            && (*from..=*to).contains(&ticket)
        {
            return Err(JournalError::storage("the run journal", why.clone()));
        }
        points.iter().copied().for_each(reached);
        Ok(())
    }

    /// The journal, if the instance has one.
    pub(crate) fn journal(&self) -> Option<&Arc<dyn Journal>> {
        self.0.as_ref().map(|inner| &inner.journal)
    }

    /// Keeps the call result `build` makes for the next write ([`write`](Self::write)), with
    /// whether its call may run again after a crash; the write reaches `point` for it. Built
    /// only when there is a journal.
    pub(crate) fn defer(&self, point: JournalPoint, build: impl FnOnce() -> (Record, bool)) {
        if let Some(inner) = &self.0 {
            let (record, rerunnable) = build();
            let mut queue = lock(&inner.queue);
            queue.records.push(record);
            queue.results.push(point);
            queue.precious += usize::from(!rerunnable);
        }
    }

    /// Keeps the start of a call that may run again after a crash for the next write, unless
    /// a result that would be lost with it waits for that write: such a start changes nothing
    /// on resume, so it need not be durable before the handler runs. True when it was kept.
    fn defer_start(&self, build: impl FnOnce() -> Record) -> bool {
        let Some(inner) = &self.0 else {
            return true;
        };
        let mut queue = lock(&inner.queue);
        if queue.precious > 0 {
            return false;
        }
        queue.records.push(build());
        true
    }

    /// Writes what was deferred.
    pub(crate) async fn flush(&self) -> Result<(), JournalError> {
        self.write(&[], Vec::new).await
    }
}

/// The innermost `toolCall` middleware of a journaled instance: writes the call's start after
/// every other middleware (approvals included) let it through, just before the handler. When
/// the start cannot be written, the call does not run. The start of a call marked idempotent
/// or read-only goes with the next write instead: such a call runs again on resume whether or
/// not its start was written. A call whose start the journal holds already (one resumed after
/// a crash) is not written again. A call that a code call's program makes is written as the
/// program's call ([`Record::InnerCallStarted`]), with the arguments the program gave.
pub(crate) struct JournalStarts(pub(crate) Writer);

impl Middleware for JournalStarts {
    fn handle(self: Arc<Self>, cx: CallContext, next: Next) -> MiddlewareFuture {
        Box::pin(async move {
            let journaled = cx.context().journaled();
            if journaled.is_some_and(|j| j.started) {
                return next.run(cx).await;
            }
            let inner = journaled.and_then(|j| j.inner.as_ref());
            let point = match inner {
                Some(_) => JournalPoint::AfterInnerStart,
                None => JournalPoint::AfterStart,
            };
            let start = || {
                let (turn_id, message_id) = (
                    cx.context().turn_id().to_owned(),
                    cx.context().message().id.clone(),
                );
                match inner {
                    Some(of) => Record::InnerCallStarted {
                        turn_id,
                        message_id,
                        call_id: cx.context().within().unwrap_or_default().to_owned(),
                        index: of.index,
                        tool: cx.tool_name().to_owned(),
                        args: of.args.clone(),
                    },
                    None => Record::CallStarted {
                        turn_id,
                        message_id,
                        call_id: cx.tool_call_id().to_owned(),
                    },
                }
            };
            if cx.annotations().rerunnable() && self.0.defer_start(start) {
                reached(point);
                return next.run(cx).await;
            }
            let written = self.0.write(&[point], || vec![start()]).await;
            if let Err(e) = written {
                let error = ToolError::new(format!(
                    "the run journal cannot record the call's start, so it did not run: {e}"
                ))
                .with_code("E_TOOL_INTERNAL")
                .with_suggestion("retry once; if it persists, tell the user");
                return ToolCallResult::error(cx.tool_call_id(), cx.tool_name(), error);
            }
            next.run(cx).await
        })
    }
}

/// Whether `name`'s export may run a second time after a crash stopped it midway: marked
/// idempotent, or read-only.
pub(crate) fn rerunnable(registry: &ToolRegistry, name: &str) -> bool {
    registry
        .get(name)
        .is_some_and(|entry| entry.export().annotations().rerunnable())
}

/// The answer of a call whose handler had started when the process stopped, and that is not
/// run again: `E_TOOL_INTERRUPTED`, finished like any result.
pub(crate) fn interrupted(
    call: &ToolCall,
    ctx: &ToolContext,
    registry: &ToolRegistry,
) -> ToolCallResult {
    let error = ToolError::new(format!(
        "`{}` was running when the agent's process stopped; it may or may not have taken effect",
        call.name
    ))
    .with_code(INTERRUPTED)
    .with_suggestion(
        "check whether it took effect (read the file, list the items) before calling it again",
    );
    let mut result = ToolCallResult::error(call.id.clone(), call.name.clone(), error);
    let limit = registry
        .get(&call.name)
        .map_or(crate::tools::error::DEFAULT_ERROR_MESSAGE_LIMIT, |entry| {
            entry.resource().error_message_limit()
        });
    finish(
        &mut result,
        Rules {
            limit,
            help_base: None,
        },
        Announce::Call(ctx),
    );
    result
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use futures_util::StreamExt;

    use super::*;
    use crate::step::journal::{JournalFuture, MemoryJournal, Recovered};

    /// A [`MemoryJournal`] that counts its appends, and fails them when told to.
    #[derive(Clone, Default)]
    struct Counting {
        inner: MemoryJournal,
        appends: Arc<AtomicUsize>,
        fail: bool,
    }

    impl Journal for Counting {
        fn append<'a>(&'a self, records: &'a [Record]) -> JournalFuture<'a, ()> {
            self.appends.fetch_add(1, Ordering::SeqCst);
            if self.fail {
                let full = JournalError::storage("test", "the disk is full");
                return Box::pin(std::future::ready(Err(full)));
            }
            self.inner.append(records)
        }

        fn read(&self) -> JournalFuture<'_, Recovered> {
            self.inner.read()
        }
    }

    fn record(kind: &str, call: usize) -> Record {
        let (turn_id, message_id, call_id) = ("t".to_owned(), "m".to_owned(), format!("c{call}"));
        match kind {
            "admitted" => Record::CallAdmitted {
                turn_id,
                message_id,
                call_id,
            },
            _ => Record::CallStarted {
                turn_id,
                message_id,
                call_id,
            },
        }
    }

    /// A Step of ten calls run together, as the step loop writes it: the admissions, each
    /// call's start before its "handler" (which checks the start is written), its result
    /// deferred, then the flush. Returns what each call saw and the writes' outcomes.
    async fn step(writer: &Writer, journal: &Counting) -> Vec<Result<bool, String>> {
        writer
            .write(&[], || (0..10).map(|i| record("admitted", i)).collect())
            .await
            .unwrap();
        let calls = futures_util::stream::iter(0..10)
            .map(|i| async move {
                writer
                    .write(&[], || vec![record("started", i)])
                    .await
                    .map_err(|e| e.to_string())?;
                // The handler runs now: its start must be in the journal already.
                let durable = journal.inner.records().contains(&record("started", i));
                writer.defer(JournalPoint::AfterResult, || {
                    (record("admitted", 100 + i), false)
                });
                Ok(durable)
            })
            .buffered(10)
            .collect::<Vec<_>>()
            .await;
        let _ = writer.flush().await;
        calls
    }

    fn sorted(records: Vec<Record>) -> Vec<String> {
        let mut texts: Vec<String> = records
            .iter()
            .map(|r| serde_json::to_string(r).unwrap())
            .collect();
        texts.sort();
        texts
    }

    #[tokio::test]
    async fn group_commit_writes_every_record_in_fewer_writes_and_never_late() {
        let journal = Counting::default();
        let seen = step(&Writer::new(Some(Arc::new(journal.clone()))), &journal).await;
        // Every call found its start written before it ran.
        assert_eq!(seen, vec![Ok(true); 10]);
        // Every record: the admissions, the starts, the deferred results.
        let want: Vec<Record> = (0..10)
            .map(|i| record("admitted", i))
            .chain((0..10).map(|i| record("started", i)))
            .chain((0..10).map(|i| record("admitted", 100 + i)))
            .collect();
        assert_eq!(sorted(journal.inner.records()), sorted(want));
        // One write per writer would be 12: the admissions, ten starts, the flush.
        let writes = journal.appends.load(Ordering::SeqCst);
        assert!(writes <= 3, "{writes} writes grouped");
    }

    #[tokio::test]
    async fn a_failed_group_write_fails_every_call_whose_start_it_carried() {
        let journal = Counting {
            fail: true,
            ..Counting::default()
        };
        let writer = Writer::new(Some(Arc::new(journal.clone())));
        assert!(
            writer.write(&[], Vec::new).await.is_ok(),
            "nothing to write"
        );
        let outcomes = futures_util::stream::iter(0..4)
            .map(|i| {
                let writer = &writer;
                async move { writer.write(&[], || vec![record("started", i)]).await }
            })
            .buffered(4)
            .collect::<Vec<_>>()
            .await;
        assert!(outcomes.iter().all(Result::is_err), "{outcomes:?}");
        assert!(journal.inner.records().is_empty());
    }

    #[tokio::test]
    async fn a_rerunnable_start_waits_for_the_next_write_unless_a_result_would_be_lost_with_it() {
        let journal = Counting::default();
        let writer = Writer::new(Some(Arc::new(journal.clone())));
        // Read-only calls one after another: neither their starts nor their results force
        // a write; the Step's flush writes them all.
        for i in 0..5 {
            assert!(writer.defer_start(|| record("started", i)));
            writer.defer(JournalPoint::AfterResult, || {
                (record("admitted", 100 + i), true)
            });
        }
        assert_eq!(journal.appends.load(Ordering::SeqCst), 0);
        // The result of a call that would not run again must not wait on a rerunnable start.
        writer.defer(JournalPoint::AfterResult, || {
            (record("admitted", 200), false)
        });
        assert!(!writer.defer_start(|| record("started", 9)));
        writer.flush().await.unwrap();
        assert_eq!(journal.appends.load(Ordering::SeqCst), 1);
        assert_eq!(journal.inner.records().len(), 11);
        assert!(
            writer.defer_start(|| record("started", 9)),
            "the flush wrote it"
        );
    }
}
