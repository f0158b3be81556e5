//! Warm sandboxes: one per workdir for the commands of one tool, made at its first call. The
//! sandbox's first process starts each call's command (the `spawner` module), so that a call pays
//! for no namespace, no mount, no restriction and no helper program of its own: one program
//! start, as outside the sandbox (see `docs/benchmarks.md`, "The sandbox of `bash`").
//!
//! What the calls of one tool share: the root (the same trees opened, the secrets hidden the
//! same way), `/dev/shm`, the network namespace with its proxy, and the PID namespace, where
//! they see each other's processes (never the host's). What each call has of its own: its
//! `TMPDIR` (the only one it may write), its Landlock domain (no signal to another call's
//! processes), and its cgroup, which holds its limits and ends its processes when it is over. A sandbox whose helper died is made anew at the next call; it
//! ends when the tool is dropped, or with its agent process.

use std::collections::HashMap;
use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io::{self, Write};
use std::mem::MaybeUninit;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::ExitStatus;
use std::sync::{Arc, Mutex, PoisonError};

use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader, Lines, Take};
use tokio::net::unix::pipe;

use super::SandboxError;
use super::helper;
use super::launch::{
    PrivateDir, Target, canonical_cwd, command_env, launch_spec, locate_helper, spec_json,
};
use super::policy::SandboxPolicy;
use super::proxy::Proxy;
use super::spec::{
    self, CallRequest, GATE_SCRIPT, GATE_SCRIPT_IN_PLACE, MAX_FDS, Report, SPEC_VAR,
};

/// How long a warm sandbox may take to be up.
const WARM_START: std::time::Duration = std::time::Duration::from_secs(20);
/// The most the sandbox's answers to one call may take (a few short lines).
const MAX_ANSWERS: u64 = 64 * 1024;
/// The shell that waits at the gate and then becomes the command.
const SHELL: &str = "/bin/sh";

/// The warm sandboxes of one tool, by workdir.
#[derive(Debug, Default)]
pub(crate) struct WarmSandboxes {
    by_workdir: tokio::sync::Mutex<HashMap<PathBuf, Arc<WarmSandbox>>>,
}

impl WarmSandboxes {
    /// Prepares `target` to run in the warm sandbox of its workdir under `policy`, made first
    /// when there is none (or the last one died).
    pub(crate) async fn call(
        &self,
        policy: &SandboxPolicy,
        target: Target<'_>,
    ) -> Result<WarmCall, SandboxError> {
        let warm = self.get(policy, target.workdir, target.env.clone()).await?;
        warm.call(target)
    }

    async fn get(
        &self,
        policy: &SandboxPolicy,
        workdir: &Path,
        env: Vec<(OsString, OsString)>,
    ) -> Result<Arc<WarmSandbox>, SandboxError> {
        let mut by_workdir = self.by_workdir.lock().await;
        if let Some(warm) = by_workdir.get(workdir)
            && warm.is_up()
        {
            return Ok(Arc::clone(warm));
        }
        let warm = Arc::new(WarmSandbox::start(policy, workdir, env).await?);
        by_workdir.insert(workdir.to_path_buf(), Arc::clone(&warm));
        Ok(warm)
    }
}

/// A sandbox made once, whose first process starts the commands of every call: its
/// namespaces, its root and its proxy live as long as its helper, which the tool keeps.
#[derive(Debug)]
pub(crate) struct WarmSandbox {
    /// Where the calls' `TMPDIR`s are made: the sandbox's own.
    tmp: PathBuf,
    /// What every call may write besides its `TMPDIR` (the workdir, the policy's trees).
    write: Vec<Vec<u8>>,
    /// The device files a call may write.
    devices: Vec<Vec<u8>>,
    /// The policy, when it has a network allow-list: each call's proxy applies it.
    network: Option<SandboxPolicy>,
    /// The outer stage; killed when dropped, and the sandbox with it.
    helper: Mutex<tokio::process::Child>,
    /// The socket the calls are sent over (the first process's stdin): one byte each, with
    /// the call's descriptors.
    control: tokio::net::UnixStream,
    /// Its directory (the report, the root's mount point, the calls' `TMPDIR`s), removed when
    /// the sandbox goes.
    _private: PrivateDir,
}

impl WarmSandbox {
    /// Makes a warm sandbox for the commands of `policy` in `workdir`, with the environment
    /// `env` (its `PATH` opens the toolchains), and waits until it is up.
    async fn start(
        policy: &SandboxPolicy,
        workdir: &Path,
        env: Vec<(OsString, OsString)>,
    ) -> Result<Self, SandboxError> {
        let unavailable = |what: String| SandboxError::Unavailable(what);
        let program = locate_helper(policy)?;
        // No proxy for the whole sandbox: each call has one of its own.
        let private = PrivateDir::new(None)?;
        let target = Target {
            program: OsStr::new("/bin/true"),
            args: &[],
            cwd: workdir,
            env,
            workdir,
            stdin: false,
        };
        let mut launch = launch_spec(policy, target, &private)?;
        launch.warm = true;
        let socket_error = |e: io::Error| unavailable(format!("a socket for the calls: {e}"));
        let (host_end, inside_end) =
            std::os::unix::net::UnixStream::pair().map_err(socket_error)?;
        host_end.set_nonblocking(true).map_err(socket_error)?;
        let control = tokio::net::UnixStream::from_std(host_end).map_err(socket_error)?;
        let mut helper = tokio::process::Command::new(&program)
            .arg(helper::HELPER_FLAG)
            .env_clear()
            .env(SPEC_VAR, spec_json(&launch)?)
            .stdin(std::process::Stdio::from(OwnedFd::from(inside_end)))
            .stdout(std::process::Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| unavailable(format!("starting {}: {e}", program.display())))?;
        let report = private.report();
        let deadline = std::time::Instant::now() + WARM_START;
        loop {
            match Report::read_from(&report) {
                Some(Report::Warm) => break,
                Some(Report::Unavailable(what)) => return Err(unavailable(what)),
                _ => {}
            }
            if let Ok(Some(status)) = helper.try_wait() {
                return Err(unavailable(match Report::read_from(&report) {
                    Some(Report::Unavailable(what)) => what,
                    _ => format!("the helper ended before the sandbox was up ({status})"),
                }));
            }
            if std::time::Instant::now() > deadline {
                return Err(unavailable(format!(
                    "the sandbox was not up within {WARM_START:?}"
                )));
            }
            tokio::time::sleep(std::time::Duration::from_millis(2)).await;
        }
        let tmp = private.dir.path().join("tmp");
        let shared = spec::bytes(&tmp);
        launch.write.retain(|w| *w != shared);
        Ok(Self {
            tmp,
            write: launch.write,
            devices: launch.devices,
            network: policy.has_network().then(|| policy.clone()),
            helper: Mutex::new(helper),
            control,
            _private: private,
        })
    }

    /// Whether the sandbox is still up (its helper runs).
    fn is_up(&self) -> bool {
        let mut helper = self.helper.lock().unwrap_or_else(PoisonError::into_inner);
        matches!(helper.try_wait(), Ok(None))
    }

    /// Prepares `target` to run in this sandbox, with a `TMPDIR` of its own.
    fn call(self: &Arc<Self>, target: Target<'_>) -> Result<WarmCall, SandboxError> {
        let tmp = tempfile::Builder::new()
            .prefix("call-")
            .tempdir_in(&self.tmp)
            .map_err(|e| SandboxError::Unavailable(format!("a private TMPDIR: {e}")))?;
        let in_place =
            target.program == SHELL && matches!(target.args, [dash_c, _] if dash_c == "-c");
        let (script, rest) = if in_place {
            (
                GATE_SCRIPT_IN_PLACE,
                target.args.get(1..).unwrap_or_default(),
            )
        } else {
            (GATE_SCRIPT, target.args)
        };
        let mut args = vec![b"-c".to_vec(), script.as_bytes().to_vec(), SHELL.into()];
        if !in_place {
            args.push(spec::bytes(target.program));
        }
        args.extend(rest.iter().map(spec::bytes));
        let mut write = self.write.clone();
        write.push(spec::bytes(tmp.path()));
        let request = CallRequest {
            program: SHELL.into(),
            args,
            cwd: canonical_cwd(target.cwd)?,
            env: command_env(target.env, tmp.path(), None),
            write,
            devices: self.devices.clone(),
            proxy: self.network.is_some(),
        };
        Ok(WarmCall {
            request,
            _tmp: tmp,
            warm: Arc::clone(self),
            proxy: Mutex::new(None),
            unavailable: Mutex::new(None),
        })
    }

    /// Hands the sandbox one call's descriptors.
    async fn send(&self, fds: &[BorrowedFd<'_>]) -> io::Result<()> {
        use rustix::net::{SendAncillaryBuffer, SendAncillaryMessage, SendFlags, sendmsg};
        if fds.len() > MAX_FDS {
            return Err(io::Error::other("too many descriptors for one call"));
        }
        self.control
            .async_io(tokio::io::Interest::WRITABLE, || {
                let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(MAX_FDS))];
                let mut ancillary = SendAncillaryBuffer::new(&mut space);
                if !ancillary.push(SendAncillaryMessage::ScmRights(fds)) {
                    return Err(io::Error::other("no room for the call's descriptors"));
                }
                sendmsg(
                    &self.control,
                    &[io::IoSlice::new(b"C")],
                    &mut ancillary,
                    SendFlags::DONTWAIT | SendFlags::NOSIGNAL,
                )
                .map(|_| ())
                .map_err(io::Error::from)
            })
            .await
    }
}

/// One call to run in a warm sandbox: its command and its `TMPDIR`, kept until it is over.
#[derive(Debug)]
pub(crate) struct WarmCall {
    request: CallRequest,
    _tmp: tempfile::TempDir,
    warm: Arc<WarmSandbox>,
    /// The call's own network proxy, once the command started (with a network allow-list).
    proxy: Mutex<Option<Proxy>>,
    /// What the sandbox found missing, when it could not start the command.
    unavailable: Mutex<Option<String>>,
}

impl WarmCall {
    /// Starts the command: in the cgroups whose `cgroup.procs` files are `procs` (opened by the
    /// caller, for writing), with `extra_env` added, at its gate (see [`WarmProcess::started`]).
    pub(crate) async fn start(
        &self,
        extra_env: Option<(OsString, OsString)>,
        procs: Vec<File>,
    ) -> io::Result<WarmProcess> {
        let (out_r, out_w) = io::pipe()?;
        let (err_r, err_w) = io::pipe()?;
        let (gate_r, gate_w) = io::pipe()?;
        let (socket, inside) = std::os::unix::net::UnixStream::pair()?;
        let mut request = self.request.clone();
        request
            .env
            .extend(extra_env.map(|(k, v)| (spec::bytes(k), spec::bytes(v))));
        let mut line = serde_json::to_vec(&request).map_err(io::Error::other)?;
        line.push(b'\n');
        let mut fds = vec![inside.as_fd(), out_w.as_fd(), err_w.as_fd(), gate_r.as_fd()];
        fds.extend(procs.iter().map(AsFd::as_fd));
        self.warm.send(&fds).await?;
        drop(fds);
        // The sandbox holds its own copies now.
        drop((inside, out_w, err_w, gate_r, procs));
        socket.set_nonblocking(true)?;
        let mut socket = tokio::net::UnixStream::from_std(socket)?;
        socket.write_all(&line).await?;
        Ok(WarmProcess {
            stdout: Some(pipe::Receiver::from_owned_fd(OwnedFd::from(out_r))?),
            stderr: Some(pipe::Receiver::from_owned_fd(OwnedFd::from(err_r))?),
            gate: Some(gate_w),
            answers: Answers::First(socket),
            ended: None,
        })
    }

    /// Records that the sandbox could not start the command (`what`, for the call's error)
    /// and returns it as an I/O error.
    pub(crate) fn unavailable_error(&self, what: String) -> io::Error {
        let err = io::Error::other(what.clone());
        *self
            .unavailable
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some(what);
        err
    }

    /// What the sandbox found missing, when it could not start the command.
    pub(crate) fn unavailable(&self) -> Option<String> {
        self.unavailable
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// What the call's network proxy refused, each a sentence.
    pub(crate) fn refused(&self) -> Vec<String> {
        self.proxy
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .as_ref()
            .map(Proxy::refused)
            .unwrap_or_default()
    }
}

/// A command a warm sandbox started for a call.
#[derive(Debug)]
pub(crate) struct WarmProcess {
    pub(crate) stdout: Option<pipe::Receiver>,
    pub(crate) stderr: Option<pipe::Receiver>,
    /// Its gate: a line written here lets it run.
    gate: Option<io::PipeWriter>,
    answers: Answers,
    /// How it ended, once known.
    ended: Option<ExitStatus>,
}

/// The call's socket, from which the sandbox's answers are read.
#[derive(Debug)]
enum Answers {
    /// Before the first answer, which may carry the call's proxy listener.
    First(tokio::net::UnixStream),
    /// Then one line each.
    Lines(Lines<BufReader<Take<tokio::net::UnixStream>>>),
    /// Read, or given up.
    Gone,
}

impl WarmProcess {
    /// Waits until the command is in the call's cgroups, at its gate, where nothing of the
    /// call's has run yet. A command that could not start is an error (recorded in `call`).
    pub(crate) async fn started(&mut self, call: &WarmCall) -> io::Result<()> {
        let Answers::First(socket) = std::mem::replace(&mut self.answers, Answers::Gone) else {
            return Err(io::Error::other("the call has started already"));
        };
        let (first, listener) = first_answer(&socket).await?;
        self.answers = Answers::Lines(BufReader::new(socket.take(MAX_ANSWERS)).lines());
        match first {
            Some(Report::Started) => {
                if let Some(policy) = &call.warm.network {
                    let listener = listener.ok_or_else(|| {
                        call.unavailable_error("the sandbox sent no proxy for the call".to_owned())
                    })?;
                    let proxy = Proxy::serve(std::net::TcpListener::from(listener), policy)
                        .map_err(|what| call.unavailable_error(what))?;
                    *call.proxy.lock().unwrap_or_else(PoisonError::into_inner) = Some(proxy);
                }
                Ok(())
            }
            Some(Report::Unavailable(what)) => Err(call.unavailable_error(what)),
            Some(other) => Err(io::Error::other(format!(
                "the sandbox answered {other:?} to a new call"
            ))),
            None => Err(call
                .unavailable_error("the sandbox ended before it started the command".to_owned())),
        }
    }

    /// Lets the command run.
    pub(crate) fn open_gate(&mut self) -> io::Result<()> {
        match self.gate.take() {
            Some(mut gate) => gate.write_all(b"\n"),
            None => Ok(()),
        }
    }

    /// Waits for the command to end (cancel-safe).
    pub(crate) async fn wait(&mut self) -> io::Result<ExitStatus> {
        if let Some(status) = self.ended {
            return Ok(status);
        }
        let status = match self.answer().await? {
            Some(Report::Exit(code)) => ExitStatus::from_raw((code & 0xff) << 8),
            Some(Report::Signal(signal)) => ExitStatus::from_raw(signal & 0x7f),
            Some(other) => {
                return Err(io::Error::other(format!(
                    "the sandbox answered {other:?} for a running command"
                )));
            }
            None => {
                return Err(io::Error::other("the sandbox ended before the command did"));
            }
        };
        self.ended = Some(status);
        Ok(status)
    }

    /// The sandbox's next answer after the first; `None` when it has gone.
    async fn answer(&mut self) -> io::Result<Option<Report>> {
        let Answers::Lines(lines) = &mut self.answers else {
            return Ok(None);
        };
        match lines.next_line().await? {
            Some(line) => parse_answer(line.as_bytes()).map(Some),
            None => Ok(None),
        }
    }
}

fn parse_answer(line: &[u8]) -> io::Result<Report> {
    serde_json::from_slice(line).map_err(|e| io::Error::other(format!("the sandbox's answer: {e}")))
}

/// The sandbox's first answer to a call, and the descriptor it carries (the call's proxy
/// listener); `None` when the sandbox has gone. Nothing follows it until the gate opens.
async fn first_answer(
    socket: &tokio::net::UnixStream,
) -> io::Result<(Option<Report>, Option<OwnedFd>)> {
    use rustix::net::{RecvAncillaryBuffer, RecvAncillaryMessage, RecvFlags, recvmsg};
    let mut line = Vec::new();
    let mut received = None;
    while !line.ends_with(b"\n") {
        if line.len() as u64 > MAX_ANSWERS {
            return Err(io::Error::other("the sandbox's answer is too long"));
        }
        let mut chunk = [0u8; 1024];
        let got = socket
            .async_io(tokio::io::Interest::READABLE, || {
                let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(1))];
                let mut ancillary = RecvAncillaryBuffer::new(&mut space);
                let got = recvmsg(
                    socket,
                    &mut [io::IoSliceMut::new(&mut chunk)],
                    &mut ancillary,
                    RecvFlags::CMSG_CLOEXEC,
                )
                .map_err(io::Error::from)?;
                for message in ancillary.drain() {
                    if let RecvAncillaryMessage::ScmRights(fds) = message {
                        // Any further descriptor is closed when dropped.
                        for fd in fds {
                            received.get_or_insert(fd);
                        }
                    }
                }
                Ok(got.bytes)
            })
            .await?;
        if got == 0 {
            return Ok((None, received));
        }
        line.extend_from_slice(chunk.get(..got).unwrap_or_default());
    }
    parse_answer(&line).map(|report| (Some(report), received))
}
