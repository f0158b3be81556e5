//! The run journal's cost per tool call, two ways, in the same run.
//!
//! `journal_turn/*`: one Turn of ten calls of a trivial tool (one Step of calls, then the
//! answer) on a fresh instance and journal, without a journal and with each backend.
//! Criterion reports the time per call (`Throughput::Elements(10)`); the journal's cost per
//! call is the difference to `plain` (admission, start and result of each call, plus its
//! share of the Turn's input, the two model answers and the Turn's end, and of creating the
//! journal's write-ahead log on its first write).
//!
//! `journal_step/*`: the records of one Step of ten calls, written exactly as the step loop
//! writes them (the answer with the ten admissions, then each call's start with the previous
//! call's result, then the last result: twelve writes), to a journal kept open across
//! iterations: the steady state of a long-running agent, checkpoints of the write-ahead log
//! included.
//!
//! - `plain`: no journal, the floor.
//! - `memory`: [`MemoryJournal`], the step loop's own share (records built, cloned, replayable).
//! - `sqlite_normal`: [`SqliteJournal`] with `synchronous = NORMAL` (survives a killed
//!   process; the default).
//! - `sqlite_full`: `synchronous = FULL` (survives a power loss: a disk flush per write).
//! - `jetstream`: [`NatsJournal`] on a `nats-server -js` on loopback (file storage, the
//!   server's default sync: every two minutes), which this binary starts
//!   (`scripts/nats-server` installs it when missing). Each write is one publish and its ack;
//!   a fresh journal also takes its instance's lease and looks up the subject's last message.
//!
//! `journal_turn_shapes/*`: the same Turn with the step loop's batching at work, without a
//! journal and on SQLite (NORMAL): `concurrent_*` runs the ten calls together
//! (`concurrency(10)`), so their starts are committed together; `read_only_*` runs ten calls
//! of a read-only export one after another, whose starts and results wait for the Step's
//! last write (such a call runs again on resume whether or not they were written).
#![allow(
    missing_docs,
    unreachable_pub,
    clippy::unwrap_used,
    clippy::expect_used
)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use criterion::{BatchSize, Criterion, Throughput};
use goondan_runtime::prelude::*;
use goondan_runtime::step::journal::{
    Durability, Journal, MemoryJournal, NatsJournal, NatsJournalOptions, Record, SqliteJournal,
};
use goondan_runtime::step::{AgentInstance, Model, ModelFuture, ModelRequest, ModelResponse};
use goondan_runtime::{Message, ToolCallResult};
use goondan_test_peers::nats::NatsServer;
use serde_json::json;

const CALLS: usize = 10;

/// Adds.
#[tool(name = "calc")]
pub fn add(a: i64, b: i64) -> i64 {
    a + b
}

/// Adds, and says it changes nothing.
#[tool(name = "look")]
pub mod look {
    /// Adds.
    #[export(read_only)]
    pub fn add(a: i64, b: i64) -> i64 {
        a + b
    }
}

/// Step 0: `calls` calls of the tool named; then the answer.
struct Calls {
    tool: &'static str,
    calls: usize,
}

impl Model for Calls {
    fn respond<'a>(&'a self, request: &'a ModelRequest) -> ModelFuture<'a> {
        let response = if request.step == 0 {
            ModelResponse::calls(
                (0..self.calls)
                    .map(|i| ToolCall::new(format!("c{i}"), self.tool, json!({"a": i, "b": 1}))),
            )
        } else {
            ModelResponse::text("done")
        };
        Box::pin(async move { Ok(response) })
    }
}

#[derive(Clone, Copy)]
enum Backend<'a> {
    Plain,
    Memory,
    Sqlite(Durability),
    JetStream(&'a JetStream),
}

/// The JetStream of the bench's own `nats-server`. The client lives on a runtime of its own
/// (one worker thread, as on a host's multi-threaded runtime), so that journals can be opened
/// in criterion's setup, which runs inside the bench's runtime, and leases renew between
/// measurements.
struct JetStream {
    rt: tokio::runtime::Runtime,
    context: async_nats::jetstream::Context,
    /// A fresh instance per journal, so no journal waits for another's lease.
    instances: AtomicUsize,
}

impl JetStream {
    fn connect(url: &str) -> Self {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let context = rt.block_on(async {
            async_nats::jetstream::new(async_nats::connect(url).await.unwrap())
        });
        Self {
            rt,
            context,
            instances: AtomicUsize::new(0),
        }
    }

    /// A journal of a new instance (made outside the timed part: opening is not a call's cost).
    fn journal(&self) -> NatsJournal {
        let instance = format!("i{}", self.instances.fetch_add(1, Ordering::Relaxed));
        let context = self.context.clone();
        let (tx, rx) = std::sync::mpsc::channel();
        self.rt.spawn(async move {
            let options = NatsJournalOptions::default()
                .holder("bench")
                .lease_ttl(Duration::from_secs(120));
            let _ = tx.send(NatsJournal::open(&context, "bench", &instance, &options).await);
        });
        rx.recv().unwrap().unwrap()
    }
}

/// A fresh instance (and journal) per Turn, so every Turn starts from the same state.
struct Setup {
    agent: AgentInstance,
    _dir: tempfile::TempDir,
}

/// How the Turn's calls run: the tool (`calc__add`, `look__add`), how many calls, and how
/// many at once.
#[derive(Clone, Copy)]
struct Shape {
    tool: &'static str,
    calls: usize,
    concurrency: usize,
}

const PLAIN_SHAPE: Shape = Shape {
    tool: "calc__add",
    calls: CALLS,
    concurrency: 1,
};

fn setup(registry: &Arc<ToolRegistry>, backend: Backend<'_>, shape: Shape) -> Setup {
    let dir = tempfile::tempdir().unwrap();
    let model = Arc::new(Calls {
        tool: shape.tool,
        calls: shape.calls,
    });
    let mut builder = AgentInstance::builder("bench", Arc::clone(registry), model)
        .tools(["calc", "look"])
        .concurrency(shape.concurrency)
        .state_dir(dir.path());
    let journal: Option<Arc<dyn Journal>> = match backend {
        Backend::Plain => None,
        Backend::Memory => Some(Arc::new(MemoryJournal::new())),
        Backend::Sqlite(durability) => {
            let file = SqliteJournal::file_in(dir.path(), "bench", "default");
            Some(Arc::new(SqliteJournal::open(file, durability).unwrap()))
        }
        Backend::JetStream(jetstream) => Some(Arc::new(jetstream.journal())),
    };
    if let Some(journal) = journal {
        builder = builder.journal(journal);
    }
    Setup {
        agent: builder.build().unwrap(),
        _dir: dir,
    }
}

fn main() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let server = NatsServer::start_jetstream();
    let jetstream = JetStream::connect(&server.url);
    let registry = Arc::new(
        ToolRegistry::builder()
            .tool(add::TOOL)
            .tool(look::TOOL)
            .build()
            .unwrap(),
    );
    let mut c = Criterion::default().configure_from_args();
    bench_turns(
        &mut c,
        &rt,
        &registry,
        "journal_turn",
        &[
            ("plain", Backend::Plain, PLAIN_SHAPE),
            ("memory", Backend::Memory, PLAIN_SHAPE),
            (
                "sqlite_normal",
                Backend::Sqlite(Durability::Normal),
                PLAIN_SHAPE,
            ),
            (
                "sqlite_full",
                Backend::Sqlite(Durability::Full),
                PLAIN_SHAPE,
            ),
            ("jetstream", Backend::JetStream(&jetstream), PLAIN_SHAPE),
        ],
    );
    let concurrent = Shape {
        concurrency: CALLS,
        ..PLAIN_SHAPE
    };
    let read_only = Shape {
        tool: "look__add",
        ..PLAIN_SHAPE
    };
    // The same Turn with one call: what nine more calls add is the cost per call alone,
    // without the Turn's own writes (its input, the final answer, its end).
    let one_call = Shape {
        calls: 1,
        ..PLAIN_SHAPE
    };
    let normal = Backend::Sqlite(Durability::Normal);
    bench_turns(
        &mut c,
        &rt,
        &registry,
        "journal_turn_shapes",
        &[
            ("concurrent_plain", Backend::Plain, concurrent),
            ("concurrent_sqlite_normal", normal, concurrent),
            ("read_only_plain", Backend::Plain, read_only),
            ("read_only_sqlite_normal", normal, read_only),
            ("one_call_plain", Backend::Plain, one_call),
            ("one_call_sqlite_normal", normal, one_call),
        ],
    );
    bench_step_records(&mut c, &rt, &jetstream);
    c.final_summary();
    drop(server);
}

/// One Turn of ten calls per case, on a fresh instance and journal each time.
fn bench_turns(
    c: &mut Criterion,
    rt: &tokio::runtime::Runtime,
    registry: &Arc<ToolRegistry>,
    group: &str,
    cases: &[(&str, Backend<'_>, Shape)],
) {
    let mut group = c.benchmark_group(group);
    for &(name, backend, shape) in cases {
        group.throughput(Throughput::Elements(shape.calls as u64));
        group.bench_function(name, |b| {
            b.to_async(rt).iter_batched(
                || setup(registry, backend, shape),
                |s| async move {
                    let turn = s.agent.run_turn("add them").await.unwrap();
                    assert_eq!(turn.steps[0].results.len(), shape.calls);
                    s
                },
                BatchSize::PerIteration,
            );
        });
    }
    group.finish();
}

/// The writes of one Step of `CALLS` calls, as the step loop makes them.
fn step_writes(turn: &str) -> Vec<Vec<Record>> {
    let calls: Vec<ToolCall> = (0..CALLS)
        .map(|i| ToolCall::new(format!("c{i}"), "calc__add", json!({"a": i, "b": 1})))
        .collect();
    let assistant = Message::assistant("msg-1", None, calls.clone());
    let mut answer = vec![Record::ModelAnswered {
        turn_id: turn.into(),
        step: 0,
        assistant,
        usage: None,
    }];
    answer.extend(calls.iter().map(|c| Record::CallAdmitted {
        turn_id: turn.into(),
        message_id: "msg-1".into(),
        call_id: c.id.to_string(),
    }));
    let result = |c: &ToolCall| Record::CallFinished {
        turn_id: turn.into(),
        message_id: "msg-1".into(),
        tool_message_id: format!("msg-r-{}", c.id),
        at: 1_795_000_000_000,
        result: ToolCallResult::ok(c.id.clone(), c.name.clone(), json!(2)),
    };
    let mut writes = vec![answer];
    for (i, c) in calls.iter().enumerate() {
        let mut write: Vec<Record> = i
            .checked_sub(1)
            .map(|p| result(&calls[p]))
            .into_iter()
            .collect();
        write.push(Record::CallStarted {
            turn_id: turn.into(),
            message_id: "msg-1".into(),
            call_id: c.id.to_string(),
        });
        writes.push(write);
    }
    writes.push(calls.last().map(result).into_iter().collect());
    writes
}

fn bench_step_records(c: &mut Criterion, rt: &tokio::runtime::Runtime, jetstream: &JetStream) {
    let writes = step_writes("turn-1");
    let dir = tempfile::tempdir().unwrap();
    let mut group = c.benchmark_group("journal_step");
    group.throughput(Throughput::Elements(CALLS as u64));
    // (No memory journal here: kept across millions of iterations it would only grow.)
    let backends: Vec<(&str, Arc<dyn Journal>)> = vec![
        (
            "sqlite_normal",
            Arc::new(
                SqliteJournal::open(dir.path().join("normal.sqlite3"), Durability::Normal).unwrap(),
            ),
        ),
        (
            "sqlite_full",
            Arc::new(
                SqliteJournal::open(dir.path().join("full.sqlite3"), Durability::Full).unwrap(),
            ),
        ),
        ("jetstream", Arc::new(jetstream.journal())),
    ];
    for (name, journal) in backends {
        group.bench_function(name, |b| {
            b.to_async(rt).iter(|| async {
                for write in &writes {
                    journal.append(write).await.unwrap();
                }
            });
        });
    }
    group.finish();
}
