//! Running one command inside its [`Containment`]: capped output read concurrently, and on
//! timeout, cancellation, drop or exit every process left inside gets SIGTERM, then SIGKILL
//! after a grace period; past a resource limit, everything inside is killed at once.

use std::ffi::OsString;
use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::process::{ExitStatus, Stdio};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use nix::sys::signal::Signal;
use nix::unistd::Pid;
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::containment::Containment;
use crate::sandbox::{self, Resource};

/// How a command ended.
#[derive(Debug)]
pub(crate) struct Finished {
    pub(crate) status: Option<ExitStatus>,
    pub(crate) stdout: Captured,
    pub(crate) stderr: Captured,
    pub(crate) timed_out: bool,
    pub(crate) cancelled: bool,
    /// The resource limit the call went past, which ended it.
    pub(crate) limit: Option<Resource>,
}

impl Finished {
    pub(crate) fn exit_code(&self) -> Option<i32> {
        self.status.and_then(|s| s.code())
    }

    pub(crate) fn signal(&self) -> Option<String> {
        let raw = self.status.and_then(|s| s.signal())?;
        Some(
            Signal::try_from(raw)
                .map_or_else(|_| format!("signal {raw}"), |s| s.as_str().to_owned()),
        )
    }
}

/// What a stream wrote: its head and tail within a cap, and how much there was.
#[derive(Debug, Default)]
pub(crate) struct Captured {
    head: Vec<u8>,
    tail: Vec<u8>,
    total: u64,
    half: usize,
}

impl Captured {
    fn new(cap: usize) -> Self {
        Self {
            half: cap / 2,
            ..Self::default()
        }
    }

    fn push(&mut self, chunk: &[u8]) {
        self.total += chunk.len() as u64;
        let room = self.half.saturating_sub(self.head.len());
        let (to_head, rest) = chunk.split_at(room.min(chunk.len()));
        self.head.extend_from_slice(to_head);
        if rest.is_empty() {
            return;
        }
        if rest.len() >= self.half {
            self.tail.clear();
            self.tail.extend_from_slice(&rest[rest.len() - self.half..]);
        } else {
            self.tail.extend_from_slice(rest);
            let excess = self.tail.len().saturating_sub(self.half);
            self.tail.drain(..excess);
        }
    }

    /// Whether bytes were dropped between head and tail.
    pub(crate) fn truncated(&self) -> bool {
        self.total > (self.head.len() + self.tail.len()) as u64
    }

    /// Every byte the stream wrote, kept or not.
    pub(crate) fn total(&self) -> u64 {
        self.total
    }

    /// The text: head, a marker with the number of bytes left out, tail (lossy UTF-8).
    pub(crate) fn text(&self) -> String {
        let head = String::from_utf8_lossy(&self.head);
        if !self.truncated() {
            let mut all = head.into_owned();
            all.push_str(&String::from_utf8_lossy(&self.tail));
            return all;
        }
        let omitted = self.total - (self.head.len() + self.tail.len()) as u64;
        format!(
            "{head}\n... [{omitted} bytes omitted] ...\n{}",
            String::from_utf8_lossy(&self.tail)
        )
    }
}

/// What to run: a program with its arguments, working directory and whole environment.
#[derive(Debug, Clone)]
pub(crate) struct Invocation {
    pub(crate) program: OsString,
    pub(crate) args: Vec<OsString>,
    pub(crate) cwd: PathBuf,
    pub(crate) env: Vec<(OsString, OsString)>,
}

/// The time and output bounds of one run.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Bounds {
    pub(crate) timeout: Duration,
    pub(crate) grace: Duration,
    pub(crate) max_output_bytes: usize,
}

/// How long output readers may wait, once everything inside is dead, for a pipe held by a
/// process outside (only possible without a cgroup) before keeping what they read so far.
const OUTSIDE_HOLDER_WAIT: Duration = Duration::from_secs(1);

/// One output stream, read into a buffer shared with the run, so that what was read is kept
/// even when the reading has to be given up.
struct Reader {
    captured: Arc<Mutex<Captured>>,
    task: JoinHandle<()>,
}

impl Reader {
    fn spawn<R: AsyncRead + Unpin + Send + 'static>(mut pipe: R, cap: usize) -> Self {
        let captured = Arc::new(Mutex::new(Captured::new(cap)));
        let shared = Arc::clone(&captured);
        let task = tokio::spawn(async move {
            let mut buf = vec![0u8; 64 * 1024];
            loop {
                match pipe.read(&mut buf).await {
                    Ok(0) | Err(_) => break,
                    Ok(n) => shared
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .push(buf.get(..n).unwrap_or_default()),
                }
            }
        });
        Self { captured, task }
    }

    /// Waits for the end of the stream until `deadline`; `true` when it ended.
    async fn finish_by(&mut self, deadline: tokio::time::Instant) -> bool {
        self.task.is_finished()
            || tokio::time::timeout_at(deadline, &mut self.task)
                .await
                .is_ok()
    }

    /// What was read, reading stopped.
    fn take(self) -> Captured {
        self.task.abort();
        std::mem::take(&mut *self.captured.lock().unwrap_or_else(PoisonError::into_inner))
    }
}

/// Kills everything inside when the run is dropped before it finished (the executor's own
/// timeout, or the caller giving up): SIGTERM now, SIGKILL after the grace period on a plain
/// thread, since a destructor cannot wait.
struct DropGuard {
    containment: Option<Containment>,
    grace: Duration,
    readers: Vec<Reader>,
}

impl Drop for DropGuard {
    fn drop(&mut self) {
        for reader in self.readers.drain(..) {
            reader.task.abort();
        }
        let Some(containment) = self.containment.take() else {
            return;
        };
        if containment.is_empty() {
            return;
        }
        containment.signal(Signal::SIGTERM);
        let grace = self.grace;
        std::thread::spawn(move || {
            std::thread::sleep(grace);
            // Dropping kills whatever is left and removes the cgroup.
            drop(containment);
        });
    }
}

/// Fails like `spawn` would when `program` is a path (has a `/`) that is not an executable
/// file; a bare name is left to the `PATH` lookup.
pub(crate) fn check_program(program: &std::ffi::OsStr) -> std::io::Result<()> {
    use std::os::unix::ffi::OsStrExt;
    use std::os::unix::fs::PermissionsExt;
    if !program.as_bytes().contains(&b'/') {
        return Ok(());
    }
    let meta = std::fs::metadata(program)?;
    if meta.is_file() && meta.permissions().mode() & 0o111 != 0 {
        Ok(())
    } else {
        Err(std::io::Error::new(
            std::io::ErrorKind::PermissionDenied,
            format!("`{}` is not an executable file", program.to_string_lossy()),
        ))
    }
}

/// What to start, and where.
#[derive(Debug)]
pub(crate) enum Start<'a> {
    /// A command this process starts.
    Here(Invocation),
    /// A call's command, started by its warm sandbox (see `crate::sandbox::WarmCall`).
    Sandbox(&'a sandbox::WarmCall),
}

/// A started command.
enum Process {
    Here(tokio::process::Child),
    Sandbox(sandbox::WarmProcess),
}

impl Process {
    /// Waits for it to end (cancel-safe).
    async fn wait(&mut self) -> std::io::Result<ExitStatus> {
        match self {
            Self::Here(child) => child.wait().await,
            Self::Sandbox(process) => process.wait().await,
        }
    }
}

/// An output stream, whichever process started the command.
type Stream = Box<dyn AsyncRead + Unpin + Send>;

fn pipe(stream: impl AsyncRead + Unpin + Send + 'static) -> Stream {
    Box::new(stream)
}

/// Starts `invocation` as a child of this process, inside `containment`.
fn spawn_here(
    invocation: Invocation,
    containment: &mut Containment,
) -> std::io::Result<tokio::process::Child> {
    // The cgroup wrapper would turn a missing program into exit code 127: refuse it here, as a
    // direct spawn would.
    check_program(&invocation.program)?;
    let mut command = containment.command(&invocation.program, &invocation.args);
    command
        .current_dir(&invocation.cwd)
        .env_clear()
        .envs(invocation.env)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(false);
    containment.mark(&mut command);
    let child = command.spawn()?;
    let Some(raw_pid) = child.id().and_then(|id| i32::try_from(id).ok()) else {
        return Err(std::io::Error::other(
            "the child exited before its id could be read",
        ));
    };
    containment.started(Pid::from_raw(raw_pid));
    Ok(child)
}

/// Starts a command inside `containment` (fresh: nothing started in it yet) and waits for it
/// within `bounds`.
///
/// When the command exits, whatever it left inside gets SIGTERM and the grace period to end
/// (the call returns as soon as everything is gone), then SIGKILL. On timeout or cancellation
/// everything inside gets SIGTERM and the grace period in the same way, then SIGKILL. Past a
/// resource limit, everything inside is killed at once. Output written before the end is kept.
///
/// The grace period is spent only while something is left, but a process that ignores SIGTERM
/// costs all of it: nothing tells it apart from one that is still cleaning up.
pub(crate) async fn run(
    start: Start<'_>,
    bounds: Bounds,
    cancel: &CancellationToken,
    mut containment: Containment,
) -> std::io::Result<Finished> {
    let (mut process, stdout, stderr) = match start {
        Start::Here(invocation) => {
            let mut child = spawn_here(invocation, &mut containment)?;
            let (stdout, stderr) = (child.stdout.take(), child.stderr.take());
            (Process::Here(child), stdout.map(pipe), stderr.map(pipe))
        }
        Start::Sandbox(call) => {
            let procs = containment.open_procs()?;
            // The sandbox starts the command within the call's timeout, or the call fails (a
            // command dropped at its gate ends with nothing done).
            let starting = async {
                let mut started = call.start(containment.marker_env(), procs).await?;
                started.started(call).await?;
                Ok::<_, std::io::Error>(started)
            };
            let mut started = tokio::time::timeout(bounds.timeout, starting)
                .await
                .map_err(|_| {
                    call.unavailable_error(format!(
                        "the sandbox did not start the command within the call's timeout ({:?})",
                        bounds.timeout
                    ))
                })??;
            containment.started_inside();
            started.open_gate()?;
            let (stdout, stderr) = (started.stdout.take(), started.stderr.take());
            (
                Process::Sandbox(started),
                stdout.map(pipe),
                stderr.map(pipe),
            )
        }
    };
    let mut guard = DropGuard {
        containment: Some(containment),
        grace: bounds.grace,
        readers: Vec::with_capacity(2),
    };
    for stream in [stdout, stderr].into_iter().flatten() {
        guard
            .readers
            .push(Reader::spawn(stream, bounds.max_output_bytes));
    }
    let Some(inside) = guard.containment.as_ref() else {
        return Err(std::io::Error::other("the containment is gone"));
    };

    let (mut timed_out, mut cancelled, mut limit) = (false, false, None);
    let exited = tokio::select! {
        status = process.wait() => Some(status?),
        () = tokio::time::sleep(bounds.timeout) => { timed_out = true; None }
        () = cancel.cancelled() => { cancelled = true; None }
        passed = inside.limit_passed() => { limit = Some(passed); None }
    };
    let status = match exited {
        Some(status) => {
            // Leftovers (background children, daemons) get SIGTERM and the grace period,
            // during which the call ends as soon as the pipes close and nothing is left.
            // Usually nothing is left: then there is no one to signal.
            if !inside.is_empty() {
                inside.signal(Signal::SIGTERM);
            }
            let deadline = tokio::time::Instant::now() + bounds.grace;
            for reader in &mut guard.readers {
                reader.finish_by(deadline).await;
            }
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            inside.wait_empty(left).await;
            status
        }
        // Past a limit (a fork bomb, memory without end), no grace: everything is killed now.
        None if limit.is_some() => {
            inside.kill();
            process.wait().await?
        }
        None => {
            // Everything inside gets SIGTERM and the grace period, the command and what it
            // started alike: the call goes on as soon as nothing is left, not when the command
            // alone has ended (a leftover may still be cleaning up).
            inside.signal(Signal::SIGTERM);
            let deadline = tokio::time::Instant::now() + bounds.grace;
            match tokio::time::timeout_at(deadline, process.wait()).await {
                Ok(status) => {
                    let left = deadline.saturating_duration_since(tokio::time::Instant::now());
                    inside.wait_empty(left).await;
                    status?
                }
                Err(_) => {
                    inside.kill();
                    process.wait().await?
                }
            }
        }
    };
    // Nothing inside outlives the call; once it is all dead, the pipes close. (Seen empty
    // already, the common case: nothing to kill or wait for.)
    let emptied = inside.is_empty();
    if !emptied {
        inside.kill();
    }
    let deadline = tokio::time::Instant::now() + OUTSIDE_HOLDER_WAIT;
    for reader in &mut guard.readers {
        reader.finish_by(deadline).await;
    }
    if !emptied {
        inside.wait_empty(OUTSIDE_HOLDER_WAIT).await;
    }
    let mut outputs = std::mem::take(&mut guard.readers)
        .into_iter()
        .map(Reader::take);
    let stdout = outputs.next().unwrap_or_default();
    let stderr = outputs.next().unwrap_or_default();
    // A limit hit since the last look (a command that ended right after its fork was refused,
    // a process killed for memory while the rest went on) ends the call all the same.
    if limit.is_none() && !cancelled {
        limit = inside.limit_hit();
    }
    // The command was reaped: an empty cgroup goes back to the pool, else dropping the
    // containment kills a straggler that survived and removes the cgroup.
    if let Some(containment) = guard.containment.take() {
        containment.close_reaped();
    }
    Ok(Finished {
        status: Some(status),
        stdout,
        stderr,
        timed_out,
        cancelled,
        limit,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capture_keeps_head_and_tail() {
        let mut c = Captured::new(8);
        c.push(b"0123456789");
        c.push(b"abcdef");
        assert_eq!(c.total(), 16);
        assert!(c.truncated());
        assert_eq!(c.text(), "0123\n... [8 bytes omitted] ...\ncdef");

        let mut small = Captured::new(8);
        small.push(b"012");
        small.push(b"345");
        assert!(!small.truncated());
        assert_eq!(small.text(), "012345");
    }
}
