//! Running one command: its own process group, capped output read concurrently, and a group
//! kill (SIGTERM, then SIGKILL after a grace period) on timeout, cancellation, drop or exit.

use std::os::unix::process::ExitStatusExt;
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use nix::errno::Errno;
use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::process::Command;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// How a command ended.
#[derive(Debug)]
pub(crate) struct Finished {
    pub(crate) status: Option<ExitStatus>,
    pub(crate) stdout: Captured,
    pub(crate) stderr: Captured,
    pub(crate) timed_out: bool,
    pub(crate) cancelled: bool,
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

/// Limits of one run.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits {
    pub(crate) timeout: Duration,
    pub(crate) grace: Duration,
    pub(crate) max_output_bytes: usize,
}

/// Sends `signal` to process group `pgid`; a group that is already gone is fine.
fn signal_group(pgid: Pid, signal: Signal) {
    match killpg(pgid, signal) {
        Ok(()) | Err(Errno::ESRCH) => {}
        Err(err) => {
            tracing::warn!(pgid = pgid.as_raw(), %signal, %err, "cannot signal the process group")
        }
    }
}

/// Kills the group when the run is dropped before it finished (the executor's own timeout,
/// or the caller giving up): SIGTERM now, SIGKILL after the grace period on a plain thread,
/// since a destructor cannot wait.
struct GroupGuard {
    pgid: Pid,
    grace: Duration,
    armed: bool,
    readers: Vec<JoinHandle<Captured>>,
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        for reader in &self.readers {
            reader.abort();
        }
        if !self.armed {
            return;
        }
        signal_group(self.pgid, Signal::SIGTERM);
        let (pgid, grace) = (self.pgid, self.grace);
        std::thread::spawn(move || {
            std::thread::sleep(grace);
            signal_group(pgid, Signal::SIGKILL);
        });
    }
}

fn read_capped<R: AsyncRead + Unpin + Send + 'static>(
    mut pipe: R,
    cap: usize,
) -> JoinHandle<Captured> {
    tokio::spawn(async move {
        let mut captured = Captured::new(cap);
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            match pipe.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => captured.push(buf.get(..n).unwrap_or_default()),
            }
        }
        captured
    })
}

/// Spawns `command` in its own process group and waits for it within `limits`.
pub(crate) async fn run(
    mut command: Command,
    limits: Limits,
    cancel: &CancellationToken,
) -> std::io::Result<Finished> {
    command
        .process_group(0)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(false);
    let mut child = command.spawn()?;
    let Some(raw_pid) = child.id().and_then(|id| i32::try_from(id).ok()) else {
        return Err(std::io::Error::other(
            "the child exited before its id could be read",
        ));
    };
    let pgid = Pid::from_raw(raw_pid);
    let mut guard = GroupGuard {
        pgid,
        grace: limits.grace,
        armed: true,
        readers: Vec::new(),
    };
    if let Some(out) = child.stdout.take() {
        guard
            .readers
            .push(read_capped(out, limits.max_output_bytes));
    }
    if let Some(err) = child.stderr.take() {
        guard
            .readers
            .push(read_capped(err, limits.max_output_bytes));
    }

    let (mut timed_out, mut cancelled) = (false, false);
    let status = tokio::select! {
        status = child.wait() => Some(status?),
        () = tokio::time::sleep(limits.timeout) => { timed_out = true; None }
        () = cancel.cancelled() => { cancelled = true; None }
    };
    // Whatever is left of the group (the whole command on timeout, background children after
    // a normal exit) gets SIGTERM, then SIGKILL after the grace period.
    signal_group(pgid, Signal::SIGTERM);
    let status = match status {
        Some(status) => Some(status),
        None => match tokio::time::timeout(limits.grace, child.wait()).await {
            Ok(status) => Some(status?),
            Err(_) => {
                signal_group(pgid, Signal::SIGKILL);
                Some(child.wait().await?)
            }
        },
    };
    // The pipes close when the last holder dies; give leftovers the grace period, then kill.
    let readers = std::mem::take(&mut guard.readers);
    let mut outputs = Vec::with_capacity(2);
    let deadline = tokio::time::Instant::now() + limits.grace;
    let mut killed = false;
    for mut reader in readers {
        let captured = match tokio::time::timeout_at(deadline, &mut reader).await {
            Ok(done) => done.unwrap_or_default(),
            Err(_) => {
                if !killed {
                    signal_group(pgid, Signal::SIGKILL);
                    killed = true;
                }
                // Something outside the group (a daemon that called setsid) may still hold the
                // pipe: wait a little more, then keep nothing rather than hang.
                match tokio::time::timeout(Duration::from_secs(1), &mut reader).await {
                    Ok(done) => done.unwrap_or_default(),
                    Err(_) => {
                        reader.abort();
                        Captured::default()
                    }
                }
            }
        };
        outputs.push(captured);
    }
    if !killed {
        signal_group(pgid, Signal::SIGKILL);
    }
    guard.armed = false;
    let mut outputs = outputs.into_iter();
    Ok(Finished {
        status,
        stdout: outputs.next().unwrap_or_default(),
        stderr: outputs.next().unwrap_or_default(),
        timed_out,
        cancelled,
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
