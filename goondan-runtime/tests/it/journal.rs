//! Durable runs with real processes, on the SQLite journal and on JetStream: the
//! test binary runs [`crash_child`] as a child process that halts at a journal point
//! ([`goondan_runtime::step::journal::halt_at`]) and is killed there with SIGKILL; a second
//! child on the same state directory (and, on JetStream, the same instance) resumes the Turn. Each point is checked against a run
//! without a crash: no message lost, no call that is not idempotent run twice, the same
//! conversation (except where a call was interrupted, which the model is told).

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use goondan_runtime::code::CodeMode;
use goondan_runtime::prelude::*;
use goondan_runtime::step::journal::{
    Durability, Journal, JournalError, JournalPoint, NatsJournal, NatsJournalOptions,
    SqliteJournal, halt_at,
};
use goondan_runtime::step::{
    AgentInstance, Model, ModelFuture, ModelRequest, ModelResponse, TurnEnd,
};
use goondan_runtime::{Message, ToolStatus};
use serde_json::{Value, json};

const ENV_STATE: &str = "GOONDAN_TEST_JOURNAL_STATE";
const ENV_HALT: &str = "GOONDAN_TEST_JOURNAL_HALT";
/// The NATS server of a child whose journal is on JetStream.
const ENV_NATS: &str = "GOONDAN_TEST_JOURNAL_NATS";
/// The file in the state directory with the child's Turn input, when not `pay rent`.
const INPUT_FILE: &str = "input.txt";

/// How long a lease lasts in these tests: a killed host's instance is free this long after.
/// A halted child renews nothing (its one thread is parked), so this is also how long the
/// test has to see its lease held before killing it.
pub(crate) const LEASE_TTL: Duration = Duration::from_secs(3);

/// A ledger in the workdir: each run of a handler leaves a line in a file, so the test counts
/// how many times each ran, across processes.
#[tool(name = "ledger")]
pub mod ledger {
    use super::*;

    fn note(ctx: &ToolContext, file: &str, line: &str) -> Result<(), ToolError> {
        use std::io::Write;
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(ctx.workdir().join(file))
            .map_err(|e| ToolError::new(e.to_string()))?;
        writeln!(f, "{line}").map_err(|e| ToolError::new(e.to_string()))
    }

    /// Pay an amount: not idempotent (each run pays again).
    pub fn pay(
        ctx: &ToolContext,
        /// How much.
        amount: u32,
    ) -> Result<String, ToolError> {
        note(ctx, "paid.txt", &amount.to_string())?;
        Ok(format!("paid {amount}"))
    }

    /// Mark an entry as seen: idempotent (a second run changes nothing more).
    #[export(idempotent)]
    pub fn mark(
        ctx: &ToolContext,
        /// The entry.
        entry: String,
    ) -> Result<String, ToolError> {
        note(ctx, "marked.txt", &entry)?;
        Ok(format!("marked {entry}"))
    }

    /// Settle the account in the background: not idempotent. The settlement is made when the
    /// call is made; its confirmation comes later.
    pub fn settle(ctx: &ToolContext) -> Result<Pending, ToolError> {
        note(ctx, "settled.txt", "settled")?;
        Ok(Pending::new(async {
            tokio::time::sleep(PENDING_FOR).await;
            Ok::<_, ToolError>("settled")
        }))
    }

    /// Count the entries in the background: idempotent.
    #[export(idempotent)]
    pub fn tally(ctx: &ToolContext) -> Result<Pending, ToolError> {
        note(ctx, "tallied.txt", "tallied")?;
        Ok(Pending::new(async {
            tokio::time::sleep(PENDING_FOR).await;
            Ok::<_, ToolError>("2 entries")
        }))
    }
}

/// How long the ledger's background work takes: long enough that the model has answered
/// without calls (and the Turn waits) before it finishes.
const PENDING_FOR: Duration = Duration::from_millis(700);

/// The Turn's input that asks for background work instead of a payment.
const SETTLE: &str = "settle up";

/// The Turn's input that asks for one program (code mode) that marks, pays and marks again.
const IN_CODE: &str = "pay rent in code";

/// The program of [`IN_CODE`]: an idempotent call, one that is not (whose failure the
/// program catches), and another idempotent one.
const PROGRAM: &str = "out = [ledger.mark(entry='rent')]\ntry:\n    out.append(ledger.pay(amount=5))\nexcept ToolError as e:\n    out.append(str(e).split(':')[0])\nout.append(ledger.mark(entry='water'))\nout";

/// Answers by the Step's index, so a process that resumes mid-Turn gets the same answer
/// the first process would have. For `pay rent`: Step 0 pays and marks, Step 1 answers. For
/// [`SETTLE`]: Step 0 settles in the background, Step 1 waits for it, Step 2 tallies in the
/// background, Step 3 waits, Step 4 answers. For [`IN_CODE`]: Step 0 runs [`PROGRAM`], Step 1
/// answers. Each request leaves the Step's index as a line in [`ASKED`] under the state
/// directory, so the test counts how often the model was asked for each Step, across
/// processes.
struct ByStep {
    asked: PathBuf,
}

/// The file of the Steps the model was asked for.
const ASKED: &str = "asked.txt";

impl ByStep {
    fn new(state: &Path) -> Arc<Self> {
        Arc::new(Self {
            asked: state.join(ASKED),
        })
    }
}

impl Model for ByStep {
    fn respond<'a>(&'a self, request: &'a ModelRequest) -> ModelFuture<'a> {
        use std::io::Write;
        let noted = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.asked)
            .and_then(|mut f| writeln!(f, "{}", request.step));
        let input = request.messages.first().and_then(|m| m.content.as_deref());
        let response = match (input, request.step) {
            (Some(SETTLE), 0) => {
                ModelResponse::calls([ToolCall::new("s1", "ledger__settle", json!({}))])
            }
            (Some(SETTLE), 2) => {
                ModelResponse::calls([ToolCall::new("s2", "ledger__tally", json!({}))])
            }
            (Some(SETTLE), 1 | 3) => ModelResponse::text("waiting for it"),
            (Some(IN_CODE), 0) => {
                ModelResponse::calls([ToolCall::new("p1", "code__run", json!({"code": PROGRAM}))])
            }
            (Some(SETTLE | IN_CODE), _) => ModelResponse::text("done"),
            (_, 0) => ModelResponse::calls([
                ToolCall::new("c1", "ledger__pay", json!({"amount": 5})),
                ToolCall::new("c2", "ledger__mark", json!({"entry": "rent"})),
            ]),
            _ => ModelResponse::text("done"),
        };
        Box::pin(async move {
            noted.map_err(|e| goondan_runtime::step::ModelError::Failed {
                message: e.to_string(),
            })?;
            Ok(response)
        })
    }
}

fn agent(state: &Path, code: bool) -> Result<AgentInstance, Box<dyn std::error::Error>> {
    let journal = SqliteJournal::open(
        SqliteJournal::file_in(state, "payer", "default"),
        Durability::Normal,
    )?;
    payer(state, Arc::new(journal), code)
}

/// The payer agent with its workdir under `state`, on `journal`.
pub(crate) fn agent_on(
    state: &Path,
    journal: Arc<dyn Journal>,
) -> Result<AgentInstance, Box<dyn std::error::Error>> {
    payer(state, journal, false)
}

/// The payer agent with its workdir under `state`, on `journal`, offering code mode when
/// `code`.
fn payer(
    state: &Path,
    journal: Arc<dyn Journal>,
    code: bool,
) -> Result<AgentInstance, Box<dyn std::error::Error>> {
    let registry = Arc::new(ToolRegistry::builder().tool(ledger::TOOL).build()?);
    let mut builder = AgentInstance::builder("payer", registry, ByStep::new(state))
        .tools(["ledger"])
        .state_dir(state)
        .journal(journal);
    if code {
        builder = builder.code_mode(CodeMode::new());
    }
    Ok(builder.build()?)
}

/// The options of every JetStream journal of these tests: leases of [`LEASE_TTL`], this host
/// named `holder`, waiting up to `wait` for another host's lease.
pub(crate) fn nats_options(holder: &str, wait: Duration) -> NatsJournalOptions {
    NatsJournalOptions::default()
        .holder(holder)
        .lease_ttl(LEASE_TTL)
        .wait(wait)
}

/// The JetStream journal of the payer's instance kept under `state` (the instance key is the
/// state directory's name, so each test directory has an instance of its own).
pub(crate) async fn open_nats(
    url: &str,
    state: &Path,
    holder: &str,
    wait: Duration,
) -> Result<NatsJournal, JournalError> {
    let client = async_nats::connect(url).await.unwrap();
    let jetstream = async_nats::jetstream::new(client);
    NatsJournal::open(
        &jetstream,
        "payer",
        &instance_of(state),
        &nats_options(holder, wait),
    )
    .await
}

/// The instance key of the journal on JetStream of the state directory `state`.
pub(crate) fn instance_of(state: &Path) -> String {
    state
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "default".to_owned())
}

/// The conversation as the model sees it: roles, texts, calls; not ids or times.
fn shape(conversation: &[Message]) -> Vec<Value> {
    conversation
        .iter()
        .map(|m| {
            let calls: Vec<Value> = m
                .tool_calls
                .iter()
                .map(|c| json!([c.id.as_str(), c.name.as_str(), c.args]))
                .collect();
            // A handle is issued by the process that ran the call: unique, so not compared.
            let content = match m.content.as_deref().map(serde_json::from_str::<Value>) {
                Some(Ok(mut result)) if result.get("handle").is_some() => {
                    result["handle"] = json!("*");
                    Some(result.to_string())
                }
                _ => m.content.clone(),
            };
            json!({"role": m.role, "content": content, "calls": calls})
        })
        .collect()
}

pub(crate) fn lines(state: &Path, file: &str) -> usize {
    std::fs::read_to_string(state.join("workspace").join(file))
        .map(|t| t.lines().count())
        .unwrap_or(0)
}

/// The child: resumes what the state directory's journal left (on JetStream when `ENV_NATS`
/// names a server), then runs the Turn `pay rent` (or what [`INPUT_FILE`] says) unless the
/// journal already holds it; halts
/// where `ENV_HALT` says (`point[:nth]`). Writes the conversation it ends with to
/// `conversation.json`.
#[tokio::test]
#[ignore = "run as a child process by the crash matrix"]
async fn crash_child() {
    let Some(state) = std::env::var_os(ENV_STATE).map(PathBuf::from) else {
        return;
    };
    if let Ok(halt) = std::env::var(ENV_HALT) {
        let (name, nth) = halt.split_once(':').unwrap_or((&halt, "1"));
        let point = JournalPoint::from_name(name).unwrap();
        halt_at(point, nth.parse().unwrap());
    }
    let input =
        std::fs::read_to_string(state.join(INPUT_FILE)).unwrap_or_else(|_| "pay rent".to_owned());
    let code = input == IN_CODE;
    let nats = match std::env::var(ENV_NATS) {
        // A host taking over from one killed waits for its lease to expire.
        Ok(url) => Some(Arc::new(
            open_nats(
                &url,
                &state,
                &format!("child-{}", std::process::id()),
                Duration::from_secs(30),
            )
            .await
            .unwrap(),
        )),
        Err(_) => None,
    };
    let agent = match &nats {
        Some(journal) => payer(&state, Arc::clone(journal) as Arc<dyn Journal>, code).unwrap(),
        None => agent(&state, code).unwrap(),
    };
    let resumed = agent.resume().await.unwrap();
    if resumed.is_none() && agent.conversation().is_empty() {
        let turn = agent.run_turn(input).await.unwrap();
        assert_eq!(turn.end, TurnEnd::Answered);
    }
    let text = serde_json::to_string(&agent.conversation()).unwrap();
    std::fs::write(state.join("conversation.json"), text).unwrap();
    if let Some(journal) = nats {
        journal.release().await.unwrap();
    }
}

fn child(state: &Path, nats: Option<&str>, halt: Option<&str>) -> Command {
    let exe = std::env::current_exe().unwrap();
    let name = match module_path!().split_once("::") {
        Some((_, module)) => format!("{module}::crash_child"),
        None => "crash_child".to_owned(),
    };
    let mut cmd = Command::new(exe);
    cmd.args([
        "--exact",
        &name,
        "--ignored",
        "--test-threads=1",
        "--nocapture",
    ])
    .env(ENV_STATE, state)
    .env_remove(ENV_HALT)
    .env_remove(ENV_NATS);
    if let Some(url) = nats {
        cmd.env(ENV_NATS, url);
    }
    if let Some(halt) = halt {
        cmd.env(ENV_HALT, halt);
    }
    cmd
}

/// Runs the child to its end (its journal on the NATS server `nats`, else in SQLite);
/// returns the conversation it wrote.
pub(crate) fn run_to_end(state: &Path, nats: Option<&str>) -> Vec<Message> {
    let out = child(state, nats, None).output().unwrap();
    assert!(
        out.status.success() && String::from_utf8_lossy(&out.stdout).contains("1 passed"),
        "the child failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let text = std::fs::read_to_string(state.join("conversation.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

/// Kills a run at `halt`, then runs a new process to the end: its conversation, and its shape.
fn crash_and_resume(state: &Path, nats: Option<&str>, halt: &str) -> (Vec<Message>, Vec<Value>) {
    run_and_kill(state, nats, halt);
    let conversation = run_to_end(state, nats);
    let got = shape(&conversation);
    (conversation, got)
}

/// Runs the child until it halts at `halt`, checks that the journal is refused to another
/// process meanwhile, and kills it with SIGKILL.
pub(crate) fn run_and_kill(state: &Path, nats: Option<&str>, halt: &str) {
    let mut process = child(state, nats, Some(halt))
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = process.stderr.take().unwrap();
    let want = format!(
        "goondan: halted at {}",
        halt.split(':').next().unwrap_or(halt)
    );
    let mut seen = Vec::new();
    let halted = BufReader::new(stderr)
        .lines()
        .map_while(Result::ok)
        .inspect(|l| seen.push(l.clone()))
        .any(|l| l == want);
    if !halted {
        let _ = process.kill();
        panic!("the child never reached {halt}:\n{}", seen.join("\n"));
    }
    match nats {
        Some(url) => {
            let busy = block_on(open_nats(url, state, "intruder", Duration::ZERO)).map(|_| ());
            assert!(
                matches!(&busy, Err(JournalError::Held { holder, .. }) if holder.starts_with("child-")),
                "a second host opened the journal: {busy:?}"
            );
        }
        None => {
            let file = SqliteJournal::file_in(state, "payer", "default");
            let busy = SqliteJournal::open(&file, Durability::Normal).map(|_| ());
            assert!(
                matches!(busy, Err(JournalError::InUse { .. })),
                "a second process opened the journal: {busy:?}"
            );
        }
    }
    process.kill().unwrap(); // SIGKILL
    let status = process.wait().unwrap();
    assert!(!status.success());
}

/// `future` on a runtime of its own, for the tests that run child processes.
pub(crate) fn block_on<F: std::future::Future>(future: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(future)
}

/// The crash matrix on SQLite: killed at each journal point, then resumed by a new process.
#[test]
fn durable_runs_survive_sigkill_at_every_journal_point_on_sqlite() {
    crash_matrix(None);
}

/// The crash matrix on JetStream (a real `nats-server -js`): killed at each journal point,
/// then resumed by a new process on another host's lease, once the killed one's expired.
#[test]
fn durable_runs_survive_sigkill_at_every_journal_point_on_jetstream() {
    let server = goondan_test_peers::nats::NatsServer::start_jetstream();
    crash_matrix(Some(&server.url));
}

/// Killed at each journal point, then resumed by a new process: no message lost, no call that
/// is not idempotent run twice, the conversation of a run without a crash. The journals are in
/// SQLite, or on the NATS server `nats`.
fn crash_matrix(nats: Option<&str>) {
    let reference = tempfile::tempdir().unwrap();
    let expected = shape(&run_to_end(reference.path(), nats));
    assert_eq!(
        expected.len(),
        5,
        "question, calls, two results, answer: {expected:?}"
    );
    assert_eq!(
        (
            lines(reference.path(), "paid.txt"),
            lines(reference.path(), "marked.txt")
        ),
        (1, 1)
    );

    // (point, calls paid, calls marked, the same conversation as without a crash)
    let matrix = [
        ("after-input", 1, 1, true),
        ("after-model-answer", 1, 1, true),
        ("after-admission", 1, 1, true),
        // The payment had started: it is not paid again, the model is told instead.
        ("after-start:1", 0, 1, false),
        // The mark had started: idempotent, so it runs again.
        ("after-start:2", 1, 1, true),
        ("after-result:1", 1, 1, true),
        ("after-result:2", 1, 1, true),
        ("after-turn-end", 1, 1, true),
    ];
    // The rows are independent (a state directory, so a journal, each) and mostly wait: for a
    // child to start, and on JetStream for the killed host's lease to expire. They run at once.
    std::thread::scope(|rows| {
        for (halt, paid, marked, same) in matrix {
            let expected = &expected;
            rows.spawn(move || crash_row(nats, halt, (paid, marked), same, expected));
        }
        rows.spawn(|| pending_matrix(nats));
        rows.spawn(|| code_matrix(nats));
    });
}

/// One row of the crash matrix: killed at `halt`, resumed, then the calls made (`(paid,
/// marked)`) and the conversation (the same as `expected`, or with the payment interrupted).
fn crash_row(
    nats: Option<&str>,
    halt: &str,
    (paid, marked): (usize, usize),
    same: bool,
    expected: &[Value],
) {
    let state = tempfile::tempdir().unwrap();
    let (conversation, got) = crash_and_resume(state.path(), nats, halt);
    assert_eq!(
        (
            lines(state.path(), "paid.txt"),
            lines(state.path(), "marked.txt")
        ),
        (paid, marked),
        "runs after a crash at {halt}"
    );
    if same {
        assert_eq!(got, expected, "conversation after a crash at {halt}");
        return;
    }
    assert_eq!(got.len(), expected.len(), "{halt}: {got:?}");
    let paid: ToolCallResult =
        serde_json::from_str(conversation[2].content.as_deref().unwrap_or_default()).unwrap();
    assert_eq!(paid.status, ToolStatus::Error);
    assert_eq!(paid.error_code(), Some("E_TOOL_INTERRUPTED"), "{halt}");
    let error = paid.error.as_ref().unwrap();
    assert!(
        error.suggestion().is_some() && error.help_url().is_some(),
        "{error:?}"
    );
    assert_eq!(got[3], expected[3], "{halt}: the mark's result");
    assert_eq!(got[4], expected[4], "{halt}: the answer");
}

/// Killed while a call whose result is `pending` runs in the background (the model answered
/// without calls and the Turn waits for its completion), then resumed by a new process: the
/// background work of a call that is not idempotent is not done again and its completion is
/// `E_TOOL_INTERRUPTED`; an idempotent call's work runs again and completes as without a crash.
fn pending_matrix(nats: Option<&str>) {
    let settle = |state: &Path| std::fs::write(state.join(INPUT_FILE), SETTLE).unwrap();
    let reference = tempfile::tempdir().unwrap();
    settle(reference.path());
    let expected = shape(&run_to_end(reference.path(), nats));
    let roles: Vec<&str> = expected.iter().filter_map(|m| m["role"].as_str()).collect();
    assert_eq!(
        roles,
        [
            "user",
            "assistant",
            "tool",
            "assistant",
            "user",
            "assistant",
            "tool",
            "assistant",
            "user",
            "assistant"
        ],
        "each completion joins the conversation after the model's wait: {expected:?}"
    );
    let counts = |state: &Path| (lines(state, "settled.txt"), lines(state, "tallied.txt"));
    assert_eq!(counts(reference.path()), (1, 1));

    // A row: (point, settled, tallied, the same conversation as without a crash).
    let row = |halt: &str, settled: usize, tallied: usize, same: bool| {
        let state = tempfile::tempdir().unwrap();
        settle(state.path());
        let (conversation, got) = crash_and_resume(state.path(), nats, halt);
        assert_eq!(
            counts(state.path()),
            (settled, tallied),
            "runs after a crash at {halt}"
        );
        if same {
            assert_eq!(got, expected, "conversation after a crash at {halt}");
            return;
        }
        assert_eq!(got.len(), expected.len(), "{halt}: {got:?}");
        for i in (0..got.len()).filter(|&i| i != 4) {
            assert_eq!(got[i], expected[i], "{halt}: message {i}");
        }
        let completion = conversation[4].content.as_deref().unwrap_or_default();
        assert!(
            completion.contains("`s1`") && completion.contains("E_TOOL_INTERRUPTED"),
            "{halt}: {completion}"
        );
    };
    // As in the crash matrix, the two rows run at once.
    std::thread::scope(|rows| {
        rows.spawn(|| row("while-pending:1", 1, 1, false));
        rows.spawn(|| row("while-pending:2", 1, 2, true));
    });
}

/// Killed at each journal point inside a code call's program (its calls' starts and results),
/// then resumed by a new process: the program runs again, each of its calls whose result is
/// journaled is answered from the journal without running again, the started payment (not
/// idempotent) answers `E_TOOL_INTERRUPTED` inside the program, which catches it, and the
/// model is not asked again for the code call's Step. The journal holds every call of the
/// program once.
fn code_matrix(nats: Option<&str>) {
    let in_code = |state: &Path| std::fs::write(state.join(INPUT_FILE), IN_CODE).unwrap();
    let reference = tempfile::tempdir().unwrap();
    in_code(reference.path());
    let expected = shape(&run_to_end(reference.path(), nats));
    assert_eq!(
        expected.len(),
        4,
        "question, code call, its result, answer: {expected:?}"
    );
    let counts = |state: &Path| (lines(state, "marked.txt"), lines(state, "paid.txt"));
    assert_eq!(counts(reference.path()), (2, 1));
    let completed = json!(["marked rent", "paid 5", "marked water"]);
    let interrupted = json!(["marked rent", "E_TOOL_INTERRUPTED", "marked water"]);

    // A row: (point, marks run, payments run, the program's value). The program's calls are
    // mark (idempotent), pay (not), mark; a start of a call that is not idempotent is written
    // with the results before it, so an `after-inner-result` shares its write with the next
    // call's start.
    let row = |halt: &str, marked: usize, paid: usize, value: &Value| {
        let state = tempfile::tempdir().unwrap();
        in_code(state.path());
        let (conversation, got) = crash_and_resume(state.path(), nats, halt);
        assert_eq!(
            counts(state.path()),
            (marked, paid),
            "runs after a crash at {halt}"
        );
        let asked = std::fs::read_to_string(state.path().join(ASKED)).unwrap();
        assert_eq!(
            asked.lines().collect::<Vec<_>>(),
            ["0", "1"],
            "{halt}: the model is asked for each Step once"
        );
        assert_eq!(got.len(), expected.len(), "{halt}: {got:?}");
        for i in [0, 1, 3] {
            assert_eq!(got[i], expected[i], "{halt}: message {i}");
        }
        let result: ToolCallResult =
            serde_json::from_str(conversation[2].content.as_deref().unwrap_or_default()).unwrap();
        let output = result
            .output
            .unwrap_or_else(|| panic!("{halt}: {:?}", result.error));
        assert_eq!(&output["value"], value, "{halt}");
        assert_eq!(output["calls"], 3, "{halt}");
        journaled_once(state.path(), nats, halt);
    };
    let rows: [(&str, usize, usize, &Value); 7] = [
        // The code call started, none of its calls: the program runs them all.
        ("after-start:1", 2, 1, &completed),
        // The first mark's start is not durable yet (it may run again): it runs.
        ("after-inner-start:1", 2, 1, &completed),
        // The payment started: the program gets E_TOOL_INTERRUPTED and catches it.
        ("after-inner-result:1", 2, 0, &interrupted),
        ("after-inner-start:2", 2, 0, &interrupted),
        // The payment's result is journaled: it is not paid again; the second mark runs again.
        ("after-inner-result:2", 2, 1, &completed),
        ("after-inner-start:3", 2, 1, &completed),
        // The program's last result, with the code call's own.
        ("after-inner-result:3", 2, 1, &completed),
    ];
    // Killed twice: first while the payment runs, then while the resumed program's second
    // mark runs (its start written with the interrupted payment's result). The third process
    // answers both from the journal the two before wrote, and runs the mark again.
    let twice = || {
        let state = tempfile::tempdir().unwrap();
        in_code(state.path());
        run_and_kill(state.path(), nats, "after-inner-start:2");
        run_and_kill(state.path(), nats, "after-inner-start:1");
        let conversation = run_to_end(state.path(), nats);
        assert_eq!(counts(state.path()), (2, 0), "runs after two crashes");
        let result: ToolCallResult =
            serde_json::from_str(conversation[2].content.as_deref().unwrap_or_default()).unwrap();
        let output = result
            .output
            .unwrap_or_else(|| panic!("{:?}", result.error));
        assert_eq!(output["value"], interrupted, "after two crashes");
        let asked = std::fs::read_to_string(state.path().join(ASKED)).unwrap();
        assert_eq!(
            asked.lines().collect::<Vec<_>>(),
            ["0", "1"],
            "after two crashes"
        );
        journaled_once(state.path(), nats, "two crashes");
    };
    std::thread::scope(|scope| {
        for (halt, marked, paid, value) in rows {
            scope.spawn(move || row(halt, marked, paid, value));
        }
        scope.spawn(twice);
    });
}

/// Checks the journal of `state` after a resumed code call: its start once, and each of its
/// program's three calls started once and finished once.
fn journaled_once(state: &Path, nats: Option<&str>, halt: &str) {
    use goondan_runtime::step::journal::Record;
    let records = block_on(async {
        match nats {
            Some(url) => {
                let journal = open_nats(url, state, "checker", Duration::from_secs(30))
                    .await
                    .unwrap();
                let records = journal.read().await.unwrap().records;
                journal.release().await.unwrap();
                records
            }
            None => {
                let file = SqliteJournal::file_in(state, "payer", "default");
                let journal = SqliteJournal::open(&file, Durability::Normal).unwrap();
                journal.read().await.unwrap().records
            }
        }
    });
    let count = |f: &dyn Fn(&Record) -> bool| records.iter().filter(|r| f(r)).count();
    assert_eq!(
        count(&|r| matches!(r, Record::CallStarted { call_id, .. } if call_id == "p1")),
        1,
        "{halt}: the code call's start"
    );
    for index in 1..=3 {
        let started = count(
            &|r| matches!(r, Record::InnerCallStarted { call_id, index: i, .. } if call_id == "p1" && *i == index),
        );
        let finished = count(
            &|r| matches!(r, Record::InnerCallFinished { call_id, index: i, .. } if call_id == "p1" && *i == index),
        );
        assert_eq!(
            (started, finished),
            (1, 1),
            "{halt}: call {index} of the program"
        );
    }
}

/// A journal whose write-ahead log was cut in the middle of a write (a crash, a full disk)
/// goes on from its last complete write, with a warning; the Turn resumes from there.
#[test]
fn a_torn_write_ahead_log_recovers_to_the_last_complete_record_with_a_warning() {
    let state = tempfile::tempdir().unwrap();
    run_and_kill(state.path(), None, "after-result:1");
    let file = SqliteJournal::file_in(state.path(), "payer", "default");
    let wal = PathBuf::from(format!("{}-wal", file.display()));
    let len = std::fs::metadata(&wal).unwrap().len();
    assert!(len > 1000, "the killed process left its write-ahead log");
    std::fs::OpenOptions::new()
        .write(true)
        .open(&wal)
        .unwrap()
        .set_len(len - 100)
        .unwrap();

    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let agent = agent(state.path(), false).unwrap();
        let turn = agent
            .resume()
            .await
            .unwrap()
            .expect("the turn was unfinished");
        assert_eq!(turn.end, TurnEnd::Answered);
        let warnings = agent.journal_warnings();
        assert!(warnings.iter().any(|w| w.contains("torn")), "{warnings:?}");
        // The cut write was the payment's result; its start survived, so it is interrupted,
        // not paid twice.
        assert_eq!(lines(state.path(), "paid.txt"), 1);
        let results = &turn.steps[0].results;
        assert_eq!(results[0].error_code(), Some("E_TOOL_INTERRUPTED"));
    });
}

/// A Turn left unfinished must be resumed before another starts; once resumed, Turns run.
#[tokio::test]
async fn a_new_turn_waits_for_the_unfinished_one_to_be_resumed() {
    use goondan_runtime::step::StepError;
    use goondan_runtime::step::journal::{Journal, MemoryJournal, Record};

    let journal = MemoryJournal::new();
    let mut input = Message::assistant("m1", Some("pay rent".into()), Vec::new());
    input.role = "user".into();
    journal
        .append(&[Record::TurnStarted {
            turn_id: "t1".into(),
            trace_id: "trace-1".into(),
            input,
        }])
        .await
        .unwrap();
    let state = tempfile::tempdir().unwrap();
    let registry = Arc::new(ToolRegistry::builder().tool(ledger::TOOL).build().unwrap());
    let agent = AgentInstance::builder("payer", registry, ByStep::new(state.path()))
        .tools(["ledger"])
        .state_dir(state.path())
        .journal(Arc::new(journal.clone()))
        .build()
        .unwrap();
    let refused = agent.run_turn("something else").await;
    assert!(
        matches!(&refused, Err(StepError::Unfinished { turn_id }) if turn_id == "t1"),
        "{refused:?}"
    );
    let resumed = agent.resume().await.unwrap().unwrap();
    assert_eq!(
        (resumed.turn_id.as_str(), resumed.trace_id.as_str()),
        ("t1", "trace-1")
    );
    assert_eq!(resumed.answer(), Some("done"));
    assert_eq!(lines(state.path(), "paid.txt"), 1);
    assert!(agent.resume().await.unwrap().is_none());
    agent.run_turn("something else").await.unwrap();
    let ends = journal
        .records()
        .iter()
        .filter(|r| matches!(r, Record::TurnEnded { .. }))
        .count();
    assert_eq!(ends, 2);
}

/// A journal that cannot be written stops the Turn before anything it should have recorded
/// takes effect: no tool runs on an unwritten decision.
#[tokio::test]
async fn a_journal_that_cannot_be_written_stops_the_turn_before_any_call_runs() {
    use goondan_runtime::step::StepError;
    use goondan_runtime::step::journal::{Journal, JournalFuture, Record, Recovered};

    /// Reads as empty; accepts the Turn's input, then refuses every write.
    struct Full(std::sync::atomic::AtomicUsize);

    impl Journal for Full {
        fn append<'a>(&'a self, _records: &'a [Record]) -> JournalFuture<'a, ()> {
            let n = self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            Box::pin(async move {
                if n == 0 {
                    return Ok(());
                }
                Err(JournalError::Io {
                    path: PathBuf::from("/full"),
                    source: std::io::Error::other("no space left on device"),
                })
            })
        }

        fn read(&self) -> JournalFuture<'_, Recovered> {
            Box::pin(async { Ok(Recovered::default()) })
        }
    }

    let state = tempfile::tempdir().unwrap();
    let registry = Arc::new(ToolRegistry::builder().tool(ledger::TOOL).build().unwrap());
    let agent = AgentInstance::builder("payer", registry, ByStep::new(state.path()))
        .tools(["ledger"])
        .state_dir(state.path())
        .journal(Arc::new(Full(Default::default())))
        .build()
        .unwrap();
    let failed = agent.run_turn("pay rent").await;
    let message = failed
        .as_ref()
        .err()
        .map(ToString::to_string)
        .unwrap_or_default();
    assert!(
        matches!(failed, Err(StepError::Journal(_))) && message.contains("no space left"),
        "{message}"
    );
    assert_eq!(lines(state.path(), "paid.txt"), 0, "nothing ran");
}
