//! The inside of a warm sandbox (see the `warm` module): its first process starts each call's
//! command, so that a call costs one program start, as outside the sandbox.
//!
//! Once its root is made and it has restricted itself (Landlock, seccomp), the warm sandbox's
//! first process serves the host over its stdin, a Unix socket. For each call the host sends
//! one byte carrying descriptors: the call's own socket, the command's stdout
//! and stderr, the read end of its **gate**, and the `cgroup.procs` files of the call's cgroups
//! (opened by the host: the kernel checks a move into a cgroup against whoever opened the
//! file). On the call's socket the host then writes the command ([`CallRequest`], one JSON
//! line). This process
//!
//! 1. starts the command, in a process group of its own, with the gate as its stdin: the
//!    command is `sh` running `GATE_SCRIPT` (`super::spec`), which waits for one line on the gate before it
//!    runs anything of the call's;
//! 2. writes the command's pid into each `cgroup.procs`, so that everything the command starts
//!    is born in the call's cgroups;
//! 3. answers [`Report::Started`] (with a listener on the sandbox's loopback when the policy
//!    has a network allow-list: the host serves it as the call's own proxy, which the
//!    command's `http_proxy` names); the host, which now finds the command's pid in the call's
//!    cgroup, opens the gate;
//! 4. reaps every process inside, and answers [`Report::Exit`] or [`Report::Signal`] when the
//!    command ends.
//!
//! Each call is served on a thread of its own, which restricts itself further before it starts
//! the command (`confine::CallRules`): the command inherits a Landlock domain of the
//! call's own, where it writes only the workdir, its own `TMPDIR` and what the policy opens,
//! and signals no process of another call. Every descriptor is received close-on-exec, so a
//! command inherits only its own three. No command can trace this process or read its memory
//! (it is not dumpable, its domain is outside theirs, and they have no `CAP_SYS_PTRACE`), and
//! the kernel ignores their signals to it (it is their PID namespace's first process). When the host goes (the socket ends), this
//! process ends, and the kernel kills everything inside.

use std::collections::HashMap;
use std::fs::File;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::mem::MaybeUninit;
use std::net::{Ipv4Addr, TcpListener};
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::time::Duration;

use nix::errno::Errno;
use nix::sys::wait::{WaitStatus, waitpid};
use nix::unistd::Pid;

use super::confine::CallRules;
use super::spec::{self, CallRequest, MAX_FDS, Report};
use super::{netns, proxy};

/// The most a call's request may take: commands and environments, with room to spare.
const MAX_REQUEST: u64 = 16 * 1024 * 1024;
/// What serving the calls shares: the calls running, by the pid of their command (in this PID
/// namespace), and what each may read.
struct Running {
    rules: CallRules,
    calls: Mutex<HashMap<i32, UnixStream>>,
    /// Signalled when a command starts, for a reaper that found nothing to wait for.
    started: Condvar,
}

/// Serves calls until the host goes; never returns while it is there.
pub(crate) fn serve(control: OwnedFd, rules: CallRules) -> u8 {
    let running = Arc::new(Running {
        rules,
        calls: Mutex::default(),
        started: Condvar::new(),
    });
    let calls = Arc::clone(&running);
    let accepting = std::thread::Builder::new()
        .name("calls".to_owned())
        .spawn(move || accept(&control, &calls));
    if let Err(e) = accepting {
        eprintln!("goondan-sandbox: a thread to serve calls: {e}");
        return 1;
    }
    reap(&running)
}

/// Receives the host's calls, each served on a thread of its own, until the host goes: then
/// the whole process ends (the kernel kills everything inside).
fn accept(control: &OwnedFd, running: &Arc<Running>) {
    loop {
        match receive(control) {
            Ok(Some(fds)) => {
                let running = Arc::clone(running);
                // A call that cannot get a thread is dropped: its socket closes, and the host
                // reports the sandbox as unavailable.
                let _ = std::thread::Builder::new()
                    .name("call".to_owned())
                    .spawn(move || serve_call(fds, &running));
            }
            Ok(None) => std::process::exit(0),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => {
                eprintln!("goondan-sandbox: receiving a call: {e}");
                std::process::exit(1);
            }
        }
    }
}

/// One call's descriptors; `None` when the host is gone.
fn receive(control: &OwnedFd) -> io::Result<Option<Vec<OwnedFd>>> {
    use rustix::net::{RecvAncillaryBuffer, RecvAncillaryMessage, RecvFlags, recvmsg};
    let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(MAX_FDS))];
    let mut control_buffer = RecvAncillaryBuffer::new(&mut space);
    let mut byte = [0u8; 1];
    let received = recvmsg(
        control,
        &mut [io::IoSliceMut::new(&mut byte)],
        &mut control_buffer,
        RecvFlags::CMSG_CLOEXEC,
    )?;
    let mut fds = Vec::new();
    for message in control_buffer.drain() {
        if let RecvAncillaryMessage::ScmRights(received) = message {
            fds.extend(received);
        }
    }
    if received.bytes == 0 && fds.is_empty() {
        return Ok(None);
    }
    Ok(Some(fds))
}

/// Starts one call's command; the reaper answers when it ends.
fn serve_call(fds: Vec<OwnedFd>, running: &Running) {
    let mut fds = fds.into_iter();
    let (Some(socket), Some(stdout), Some(stderr), Some(gate)) =
        (fds.next(), fds.next(), fds.next(), fds.next())
    else {
        return;
    };
    let mut socket = UnixStream::from(socket);
    let procs: Vec<File> = fds.map(File::from).collect();
    // This thread's own Landlock layer, which the command inherits: the call's domain.
    let request = read_request(&socket).and_then(|request| {
        running
            .rules
            .restrict(&request.write, &request.devices)
            .map(|()| request)
    });
    let request = request.and_then(|mut request| {
        let listener = proxy_listener(&mut request)?;
        Ok((request, listener))
    });
    let (request, listener) = match request {
        Ok(request) => request,
        Err(what) => {
            answer(&mut socket, &Report::Unavailable(what));
            return;
        }
    };
    let mut command = Command::new(spec::os(&request.program));
    command
        .args(request.args.iter().map(|a| spec::os(a)))
        .current_dir(spec::path(&request.cwd))
        .env_clear()
        .envs(request.env.iter().map(|(k, v)| (spec::os(k), spec::os(v))))
        .stdin(Stdio::from(gate))
        .stdout(Stdio::from(stdout))
        .stderr(Stdio::from(stderr))
        .process_group(0);
    // Held while the command starts, so that the reaper finds the call when it ends.
    let mut calls = running.calls.lock().unwrap_or_else(PoisonError::into_inner);
    let child = match command.spawn() {
        Ok(child) => child,
        Err(e) => {
            drop(calls);
            // As a shell would say it: the command cannot be found, or cannot run.
            let code = if e.kind() == io::ErrorKind::NotFound {
                127
            } else {
                126
            };
            answer(
                &mut socket,
                &Report::Unavailable(format!(
                    "cannot run {}: {e} (exit {code})",
                    spec::path(&request.program).display()
                )),
            );
            return;
        }
    };
    let pid = i32::try_from(child.id()).unwrap_or(i32::MAX);
    drop(command);
    let entered = procs.iter().try_for_each(|mut file| {
        file.write_all(pid.to_string().as_bytes())
            .map_err(|e| format!("entering the call's cgroup: {e}"))
    });
    if let Err(what) = entered {
        drop(calls);
        // Still at its gate: nothing of the call's ran.
        let _ = nix::sys::signal::kill(Pid::from_raw(pid), nix::sys::signal::Signal::SIGKILL);
        answer(&mut socket, &Report::Unavailable(what));
        return;
    }
    drop(procs);
    match &listener {
        // The call's proxy listener goes to the host with the answer.
        Some(listener) => {
            let line = serde_json::to_vec(&Report::Started)
                .map(|mut line| {
                    line.push(b'\n');
                    line
                })
                .unwrap_or_default();
            let _ = netns::send_fd(&socket, &line, listener);
        }
        None => answer(&mut socket, &Report::Started),
    }
    drop(listener);
    calls.insert(pid, socket);
    drop(calls);
    running.started.notify_one();
}

/// For a call with a proxy: a listener on a port of the sandbox's loopback, which the host
/// will serve as the call's proxy, and the variables that name it in the command's
/// environment.
fn proxy_listener(request: &mut CallRequest) -> Result<Option<TcpListener>, String> {
    if !request.proxy {
        return Ok(None);
    }
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
        .map_err(|e| format!("listening for the call's network proxy: {e}"))?;
    let port = listener
        .local_addr()
        .map_err(|e| format!("the call's network proxy: {e}"))?
        .port();
    let url = proxy::url(port);
    request
        .env
        .retain(|(name, _)| !proxy::PROXY_VARS.iter().any(|var| name == var.as_bytes()));
    request.env.extend(
        proxy::PROXY_VARS
            .iter()
            .map(|var| (var.as_bytes().to_vec(), url.clone().into_bytes())),
    );
    Ok(Some(listener))
}

/// The call's request: one JSON line on its socket.
fn read_request(socket: &UnixStream) -> Result<CallRequest, String> {
    let mut line = Vec::new();
    BufReader::new(socket.take(MAX_REQUEST))
        .read_until(b'\n', &mut line)
        .map_err(|e| format!("reading the call: {e}"))?;
    serde_json::from_slice(&line).map_err(|e| format!("the call's request: {e}"))
}

/// Writes one report line to the host (a host that went no longer needs it).
fn answer(socket: &mut UnixStream, report: &Report) {
    if let Ok(mut line) = serde_json::to_vec(report) {
        line.push(b'\n');
        let _ = socket.write_all(&line);
    }
}

/// Reaps every process that ends inside (commands and what they left behind, which becomes
/// this process's), answering for each command that was a call's.
fn reap(running: &Running) -> u8 {
    loop {
        let (pid, report) = match waitpid(Pid::from_raw(-1), None) {
            Ok(WaitStatus::Exited(pid, code)) => (pid, Report::Exit(code)),
            Ok(WaitStatus::Signaled(pid, signal, _)) => (pid, Report::Signal(signal as i32)),
            Ok(_) | Err(Errno::EINTR) => continue,
            Err(Errno::ECHILD) => {
                // Nothing to wait for: until a command starts (the timeout only guards
                // against a lost wake-up).
                let calls = running.calls.lock().unwrap_or_else(PoisonError::into_inner);
                let _ = running.started.wait_timeout_while(
                    calls,
                    Duration::from_millis(100),
                    |calls| calls.is_empty(),
                );
                continue;
            }
            Err(e) => {
                eprintln!("goondan-sandbox: reaping: {e}");
                return 1;
            }
        };
        let call = running
            .calls
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&pid.as_raw());
        if let Some(mut socket) = call {
            answer(&mut socket, &report);
        }
    }
}

/// Makes this process safe to serve calls from: not dumpable (no command can trace it or read
/// its memory, its `/proc` files or its descriptors), and no command it starts gets
/// `CAP_SYS_PTRACE`.
pub(crate) fn harden() -> Result<(), String> {
    nix::sys::prctl::set_dumpable(false).map_err(|e| format!("PR_SET_DUMPABLE: {e}"))?;
    rustix::thread::remove_capability_from_bounding_set(rustix::thread::CapabilitySet::SYS_PTRACE)
        .map_err(|e| format!("dropping CAP_SYS_PTRACE: {e}"))
}

/// The stdin this process was given: the host's socket.
pub(crate) fn control() -> io::Result<OwnedFd> {
    io::stdin().as_fd().try_clone_to_owned()
}
