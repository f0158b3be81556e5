//! The worker process: a program runs in a process of its own, so that a crash of the
//! interpreter, or a kill of it, ends the code call and not the agent.
//!
//! A worker is this program started with [`WORKER_FLAG`]: [`serve_if_asked`], called first
//! in `main`, makes it one. It reads the program from its stdin, runs it as the agent's
//! process would, on a thread of its own (`super::program`), and speaks the same messages,
//! one JSON object a line: on its stdout the program's calls, prints and end, on its stdin
//! the host's replies. It then exits; each program gets a worker of its own.
//!
//! The host reads what a worker says as untrusted: a line longer than [`MAX_FRAME`] ends the
//! program at the output limit, a line that does not read ends it as an error, and so does a
//! worker that ends before the program did, unless the [`WorkerGuard`] says the kernel ended
//! it for its memory (the memory limit). A worker that runs longer than the program's time
//! limit, and a grace period, without a word (or without reading what the host sends) is
//! killed (the time limit). The calls it asks for are counted against the program's limit,
//! and what it prints against its output limit, on the host's side too.
//!
//! Where a worker runs is its [`WorkerLauncher`]'s choice: the `goondan` program starts it in
//! the kernel sandbox with a memory limit of the kernel's (`goondan_base`'s `CodeSandbox`);
//! [`Unconfined`] starts it as it is.

use std::ffi::OsString;
use std::fmt;
use std::io::{BufRead, Write};
use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout};

use super::program::{
    Failure, FailureKind, Limit, Limits, Message, Program, Reply, STACK_BYTES, start,
};

/// The first argument that makes a program a code worker.
pub const WORKER_FLAG: &str = "--goondan-code-worker";

/// The longest line a worker or its host may send, in bytes: a program, a call's arguments or
/// result, or the program's end.
pub const MAX_FRAME: usize = 16 * 1024 * 1024;

/// How long past its time limit a worker that says nothing is given before it is killed:
/// the worker's own start, and the interpreter's own check of the time, come first.
const TIME_GRACE: Duration = Duration::from_secs(2);

/// How long the host waits for a worker that closed its stdout to end.
const END_WAIT: Duration = Duration::from_secs(2);

/// How much of what a worker wrote on its stderr the host keeps, from the start: a panic's
/// message, or what its sandbox could not set up.
const STDERR_KEPT: usize = 2048;

/// What the host sends a worker: the program first, then a reply to each call.
#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "camelCase")]
enum ToWorker {
    Start { program: Program },
    Reply { reply: Reply },
}

/// Makes this program a code worker when it was started as one: it serves one program and
/// exits here; otherwise it returns at once.
///
/// Call it first in `main`, in every program that runs code mode in worker processes:
///
/// ```no_run
/// # #![allow(clippy::needless_doctest_main)] // the example is where the call goes in `main`
/// fn main() {
///     goondan_runtime::code::worker::serve_if_asked();
///     // ... build the tokio runtime, the tools, the agent
/// }
/// ```
pub fn serve_if_asked() {
    if std::env::args_os()
        .nth(1)
        .is_some_and(|arg| arg == WORKER_FLAG)
    {
        // The program runs on a thread with the interpreter's stack.
        let served = std::thread::Builder::new()
            .name("goondan-code".into())
            .stack_size(STACK_BYTES)
            .spawn(|| serve(std::io::stdin().lock(), std::io::stdout().lock()))
            .map_or(1, |thread| thread.join().unwrap_or(1));
        std::process::exit(served);
    }
}

/// Serves one program: read from `input`, its messages written to `output`. The exit status:
/// 0 when the program's end was sent, 1 when the host went or did not speak our messages.
fn serve(input: impl BufRead, mut output: impl Write) -> i32 {
    let mut input = input.take(0);
    let mut read = move |max: usize| -> Option<ToWorker> {
        let mut line = Vec::new();
        input.set_limit(u64::try_from(max).unwrap_or(u64::MAX).saturating_add(1));
        input.read_until(b'\n', &mut line).ok()?;
        serde_json::from_slice(&line).ok()
    };
    let Some(ToWorker::Start { program }) = read(MAX_FRAME) else {
        return 1;
    };
    // A reply holds a result of up to the program's result limit.
    let max_reply = program.limits.result.saturating_add(MAX_FRAME);
    let mut running = start(program);
    loop {
        let message = running.next();
        if send(&mut output, &message).is_err() {
            return 1;
        }
        match message {
            Message::Call { .. } => match read(max_reply) {
                Some(ToWorker::Reply { reply }) => running.reply(reply),
                // The host is gone, or said what does not read: the worker ends, and the
                // program with it.
                _ => return 1,
            },
            Message::Print { .. } | Message::Answer { .. } => {}
            Message::End { .. } => return 0,
        }
    }
}

/// Writes `message` as one line and flushes it.
fn send(output: &mut impl Write, message: &impl Serialize) -> std::io::Result<()> {
    let mut line = serde_json::to_vec(message).map_err(std::io::Error::other)?;
    line.push(b'\n');
    output.write_all(&line)?;
    output.flush()
}

/// How to start a worker: a program, its arguments and its whole environment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkerCommand {
    /// The program.
    pub program: PathBuf,
    /// Its arguments.
    pub args: Vec<OsString>,
    /// Its environment; nothing of the agent's is passed on.
    pub env: Vec<(OsString, OsString)>,
}

impl WorkerCommand {
    /// This program, started with [`WORKER_FLAG`] and an empty environment.
    pub fn this_program() -> std::io::Result<Self> {
        Ok(Self {
            program: std::env::current_exe()?,
            args: vec![WORKER_FLAG.into()],
            env: Vec::new(),
        })
    }
}

/// Starts workers: turns a worker's command into the one to start, once per program
/// ([`CodeMode::worker`](super::CodeMode::worker)). An error ends the code call with it
/// (`E_CODE_ERROR`); the program never runs another way instead.
///
/// ```
/// use goondan_runtime::code::worker::{LaunchedWorker, WorkerCommand, WorkerLauncher};
///
/// /// Starts the worker with `nice`, so that programs give way to the agent.
/// struct Nice;
///
/// impl WorkerLauncher for Nice {
///     fn launch(&self, worker: WorkerCommand) -> Result<LaunchedWorker, String> {
///         let mut args = vec![worker.program.into_os_string()];
///         args.extend(worker.args);
///         let command = WorkerCommand { program: "/usr/bin/nice".into(), args, env: worker.env };
///         Ok(LaunchedWorker { command, guard: Box::new(()) })
///     }
/// }
/// ```
pub trait WorkerLauncher: Send + Sync + 'static {
    /// The command to start for `worker`, and what watches it.
    fn launch(&self, worker: WorkerCommand) -> Result<LaunchedWorker, String>;
}

/// What a [`WorkerLauncher`] made of a worker's command.
pub struct LaunchedWorker {
    /// The command to start: its stdin and stdout carry the messages.
    pub command: WorkerCommand,
    /// Kept until the worker has ended, then dropped.
    pub guard: Box<dyn WorkerGuard>,
}

impl fmt::Debug for LaunchedWorker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LaunchedWorker")
            .field("command", &self.command)
            .finish_non_exhaustive()
    }
}

/// What lives as long as a worker (its sandbox's private directory, its cgroup) and knows
/// why it ended.
pub trait WorkerGuard: Send + 'static {
    /// Whether the kernel ended the worker for going past its memory limit.
    fn memory_exceeded(&self) -> bool {
        false
    }
}

/// Nothing to keep, no limit to report.
impl WorkerGuard for () {}

/// Starts the worker as it is: a crash or a kill of it does not take the agent down, but it
/// sees what the agent's process sees and has no memory limit of the kernel's.
#[derive(Debug, Clone, Copy, Default)]
pub struct Unconfined;

impl WorkerLauncher for Unconfined {
    fn launch(&self, worker: WorkerCommand) -> Result<LaunchedWorker, String> {
        Ok(LaunchedWorker {
            command: worker,
            guard: Box::new(()),
        })
    }
}

/// A worker running one program, seen from the host.
pub(crate) struct Connection {
    // Declared first: the worker is killed before what guards it goes.
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    /// The start of what the worker wrote on its stderr, once it closed it.
    stderr: tokio::task::JoinHandle<Vec<u8>>,
    guard: Box<dyn WorkerGuard>,
    limits: Limits,
    /// Time spent sending to the worker and waiting for its messages, the time it ran.
    ran: Duration,
    /// What to send before the next message is read: the program, then each reply.
    pending: Option<ToWorker>,
}

impl Connection {
    /// Starts a worker through `launcher`, for `program` (sent when its first message is
    /// asked for).
    pub(crate) fn start(launcher: &dyn WorkerLauncher, program: Program) -> Result<Self, String> {
        let worker = WorkerCommand::this_program()
            .map_err(|e| format!("this program's path cannot be read: {e}"))?;
        let LaunchedWorker { command, guard } = launcher.launch(worker)?;
        let mut child = tokio::process::Command::new(&command.program)
            .args(&command.args)
            .env_clear()
            .envs(command.env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| format!("{}: {e}", command.program.display()))?;
        let (Some(stdin), Some(stdout), Some(stderr)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            return Err("the worker's pipes were not made".into());
        };
        Ok(Self {
            child,
            stdin,
            stdout: BufReader::new(stdout),
            stderr: tokio::spawn(kept_start(stderr)),
            guard,
            limits: program.limits,
            ran: Duration::ZERO,
            pending: Some(ToWorker::Start { program }),
        })
    }

    /// Answers the pending call, when the next message is asked for.
    pub(crate) fn reply(&mut self, reply: Reply) {
        self.pending = Some(ToWorker::Reply { reply });
    }

    /// The worker's next message; a worker that broke off, or said what does not read, ends
    /// the run with a failure (it is killed).
    pub(crate) async fn next(&mut self) -> Message {
        let pending = self.pending.take();
        let budget = self
            .limits
            .time
            .saturating_add(TIME_GRACE)
            .saturating_sub(self.ran);
        let started = Instant::now();
        let exchange = async {
            if let Some(message) = &pending {
                // A worker that died meanwhile is found out by the read.
                let _ = self.write(message).await;
            }
            read_frame(&mut self.stdout).await
        };
        let read = tokio::time::timeout(budget, exchange).await;
        self.ran += started.elapsed();
        let stopped = match read {
            Ok(Ok(Frame::Line(line))) => match serde_json::from_slice(&line) {
                Ok(message) => return message,
                Err(e) => end(
                    FailureKind::Worker,
                    format!(
                        "the worker process sent a message that does not read ({e}); it was stopped"
                    ),
                ),
            },
            Ok(Ok(Frame::TooLong)) => end(
                FailureKind::Limit(Limit::Output),
                format!(
                    "the worker process sent a message of more than {MAX_FRAME} bytes; it was stopped"
                ),
            ),
            Ok(Ok(Frame::Closed)) => return self.ended().await,
            Ok(Err(e)) => end(
                FailureKind::Worker,
                format!("the worker process cannot be read: {e}"),
            ),
            Err(_) => end(
                FailureKind::Limit(Limit::Time),
                format!(
                    "the program ran past its time limit ({:?}) and its worker process was stopped",
                    self.limits.time
                ),
            ),
        };
        self.stop().await;
        stopped
    }

    /// The end of a worker that closed its stdout: how it ended, or the memory limit when the
    /// kernel ended it for that.
    async fn ended(&mut self) -> Message {
        let status = match tokio::time::timeout(END_WAIT, self.child.wait()).await {
            Ok(Ok(status)) => status.to_string(),
            Ok(Err(e)) => format!("cannot be waited for: {e}"),
            Err(_) => {
                self.stop().await;
                "closed its output and was stopped".to_owned()
            }
        };
        let said = match tokio::time::timeout(END_WAIT, &mut self.stderr).await {
            Ok(Ok(said)) => String::from_utf8_lossy(&said).trim().to_owned(),
            _ => String::new(),
        };
        let status = if said.is_empty() {
            status
        } else {
            format!("{status}; it said: {said}")
        };
        if self.guard.memory_exceeded() {
            end(
                FailureKind::Limit(Limit::Memory),
                format!(
                    "the program's worker process went past its memory limit and the kernel ended it ({status})"
                ),
            )
        } else {
            end(
                FailureKind::Worker,
                format!("the program's worker process ended before the program did ({status})"),
            )
        }
    }

    /// Kills the worker and waits for it.
    pub(crate) async fn stop(&mut self) {
        let _ = self.child.start_kill();
        let _ = tokio::time::timeout(END_WAIT, self.child.wait()).await;
    }

    async fn write(&mut self, message: &ToWorker) -> std::io::Result<()> {
        let mut line = serde_json::to_vec(message).map_err(std::io::Error::other)?;
        line.push(b'\n');
        self.stdin.write_all(&line).await?;
        self.stdin.flush().await
    }
}

/// The first [`STDERR_KEPT`] bytes `stderr` gives until it closes.
async fn kept_start(mut stderr: tokio::process::ChildStderr) -> Vec<u8> {
    let mut kept = Vec::new();
    let mut buffer = [0u8; 1024];
    while let Ok(n @ 1..) = stderr.read(&mut buffer).await {
        let room = STDERR_KEPT.saturating_sub(kept.len());
        kept.extend_from_slice(&buffer[..n.min(room)]);
    }
    kept
}

/// The end of a run the worker failed: why, and what to report.
fn end(kind: FailureKind, report: String) -> Message {
    Message::End {
        result: Err(Failure::of(kind, report)),
    }
}

/// One line from a worker.
enum Frame {
    Line(Vec<u8>),
    /// Longer than [`MAX_FRAME`].
    TooLong,
    /// The worker closed its stdout.
    Closed,
}

async fn read_frame(from: &mut (impl AsyncBufRead + Unpin)) -> std::io::Result<Frame> {
    let mut line = Vec::new();
    let read = from
        .take(MAX_FRAME as u64 + 1)
        .read_until(b'\n', &mut line)
        .await?;
    if read == 0 {
        return Ok(Frame::Closed);
    }
    if line.len() > MAX_FRAME {
        return Ok(Frame::TooLong);
    }
    if line.last() != Some(&b'\n') {
        // The worker ended in the middle of a line.
        return Ok(Frame::Closed);
    }
    Ok(Frame::Line(line))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_worker_serves_one_program_over_lines() {
        let program = Program::new(
            "print('hi')\nn = notes.list()['n']\nn + 1".into(),
            &super::super::program::tests_support::functions(),
            super::super::program::tests_support::limits(),
        );
        let mut input = serde_json::to_vec(&ToWorker::Start { program }).unwrap();
        input.push(b'\n');
        let reply = ToWorker::Reply {
            reply: Reply::Value(serde_json::json!({"n": 41})),
        };
        input.extend(serde_json::to_vec(&reply).unwrap());
        input.push(b'\n');
        let mut output = Vec::new();
        assert_eq!(serve(&input[..], &mut output), 0);
        let messages: Vec<Message> = output
            .split(|b| *b == b'\n')
            .filter(|l| !l.is_empty())
            .map(|l| serde_json::from_slice(l).unwrap())
            .collect();
        assert_eq!(
            messages,
            [
                Message::Print { text: "hi".into() },
                Message::Print { text: "\n".into() },
                Message::Call {
                    tool: "notes__list".into(),
                    args: serde_json::Map::new()
                },
                Message::End {
                    result: Ok(serde_json::json!(42))
                },
            ]
        );
    }

    #[test]
    fn a_worker_whose_host_says_nothing_it_reads_ends() {
        let mut output = Vec::new();
        assert_eq!(serve(&b"garbage\n"[..], &mut output), 1);
        assert!(output.is_empty());
    }
}
