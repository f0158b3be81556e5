//! The helper program: it confines itself and then runs the command, so the host needs no
//! `unsafe` and no hook between `fork` and `exec`.
//!
//! It runs in two stages, both this same program:
//!
//! 1. The **outer stage** (started by the host inside the call's cgroup) makes new user,
//!    PID, network, IPC, UTS and cgroup namespaces, maps the host user to itself, and
//!    starts the inner stage, which is the new PID namespace's first process. It waits for the
//!    report and ends as the command ended (the same exit code, or the same signal). The signals the
//!    host sends to the whole call are for the command: this stage blocks them.
//! 2. The **inner stage** (PID 1 inside) makes a mount namespace and a new root holding only
//!    the opened trees (see `confine::mounts`), hides the masked paths,
//!    restricts itself with Landlock and seccomp, starts the command and reaps every process
//!    inside. When the command ends, it writes the report and goes on reaping until nothing
//!    is left inside: what the command left behind gets the host's SIGTERM and grace period,
//!    as outside the sandbox, and the call's cgroup is killed after it. When the inner stage
//!    ends, the kernel kills anything still inside (the namespace ends with its first
//!    process).
//!
//! A **warm** sandbox (`bash`'s, one per tool and workdir: see the `warm` module) is made by the same
//! two stages without a command: the inner stage reports that its root is ready, and then
//! starts the calls' commands itself (the `spawner` module), the host sending each over a socket,
//! its stdin; the outer stage reports that the sandbox is up and stays until the host kills it
//! or dies (the inner stage, and everything inside, follow).
//!
//! The outcome goes to the host as a report (one JSON line) in a file of the call's private directory
//! that the command cannot reach (the stage opens it before it restricts itself). A
//! sandbox that cannot be set up reports what was missing, and the command never runs.

use std::ffi::OsString;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};

use super::spec::{LaunchSpec, SPEC_VAR};

/// The first argument that makes a program the sandbox's outer stage.
pub const HELPER_FLAG: &str = "--goondan-sandbox-helper";
/// The first argument of the inner stage.
const INIT_FLAG: &str = "--goondan-sandbox-init";
/// The first argument that makes the helper print what the kernel says of Landlock.
pub(crate) const LANDLOCK_FLAG: &str = "--goondan-sandbox-landlock";
/// The exit code of a helper that could not set the sandbox up (its report says why).
const UNAVAILABLE_EXIT: u8 = 125;

/// Set by [`serve_if_asked`]: this program serves as its own helper.
static SERVES_ITSELF: AtomicBool = AtomicBool::new(false);

/// Whether the running program called [`serve_if_asked`].
pub(crate) fn serves_itself() -> bool {
    SERVES_ITSELF.load(Ordering::Relaxed)
}

/// Lets this program be its own sandbox helper: when it was started as one, it does the
/// helper's work and exits here; otherwise it returns at once, and the sandbox starts this
/// program as its helper instead of looking for `goondan-sandbox`.
///
/// Call it first in `main`, before any thread starts (a process with threads cannot enter a
/// new user namespace, and `#[tokio::main]` starts them before the body runs):
///
/// ```no_run
/// # #![allow(clippy::needless_doctest_main)] // the example is where the call goes in `main`
/// fn main() {
///     goondan_base::sandbox::serve_if_asked();
///     // ... build the tokio runtime, the tools, the agent
/// }
/// ```
pub fn serve_if_asked() {
    SERVES_ITSELF.store(true, Ordering::Relaxed);
    let first = std::env::args_os().nth(1);
    if let Some(code) = first.and_then(|arg| run_stage(&arg)) {
        std::process::exit(i32::from(code));
    }
}

/// The `goondan-sandbox` program.
pub fn main() -> ExitCode {
    serve_if_asked();
    eprintln!(
        "goondan-sandbox: the helper of goondan's sandbox; goondan starts it for each sandboxed \
         process (see `goondan sandbox check`)"
    );
    ExitCode::from(2)
}

fn run_stage(arg: &OsString) -> Option<u8> {
    if arg == HELPER_FLAG {
        Some(stage::outer())
    } else if arg == INIT_FLAG {
        Some(stage::inner())
    } else if arg == LANDLOCK_FLAG {
        use std::io::Write;
        let _ = writeln!(std::io::stdout(), "{}", stage::landlock());
        Some(0)
    } else {
        None
    }
}

/// The spec from the environment, and the report file it names.
fn read_spec() -> Result<(LaunchSpec, String), String> {
    let json = std::env::var(SPEC_VAR).map_err(|_| format!("{SPEC_VAR} is not set"))?;
    let spec = LaunchSpec::from_json(&json).map_err(|e| format!("{SPEC_VAR}: {e}"))?;
    Ok((spec, json))
}

#[cfg(target_os = "linux")]
mod stage {
    use std::fs::File;
    use std::io::Write;
    use std::process::{Command, Stdio};

    use nix::errno::Errno;
    use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
    use nix::sched::{CloneFlags, unshare};
    use nix::sys::inotify::{AddWatchFlags, InitFlags, Inotify};
    use nix::sys::signal::{SigSet, Signal, kill, raise};
    use nix::sys::wait::{WaitStatus, waitpid};
    use nix::unistd::{Pid, getgid, getppid, getuid};
    use std::os::fd::OwnedFd;

    use super::super::spec::{self, LaunchSpec, Report, SPEC_VAR};
    use super::super::{confine, netns, spawner};
    use super::{INIT_FLAG, UNAVAILABLE_EXIT, read_spec};

    /// Tells the host what was missing; the command does not run.
    fn unavailable(spec: Option<&LaunchSpec>, what: String) -> u8 {
        eprintln!("goondan-sandbox: {what}");
        if let Some(spec) = spec {
            // Without a report the host still sees the exit code and the line above.
            let _ = Report::Unavailable(what).write_to(&spec::path(&spec.report));
        }
        UNAVAILABLE_EXIT
    }

    /// Holds back the signals the host sends to a whole call: they are for the command.
    fn hold_signals() -> nix::Result<()> {
        let mut held = SigSet::empty();
        for signal in [
            Signal::SIGTERM,
            Signal::SIGINT,
            Signal::SIGHUP,
            Signal::SIGQUIT,
        ] {
            held.add(signal);
        }
        held.thread_block()
    }

    pub(super) fn outer() -> u8 {
        let (spec, json) = match read_spec() {
            Ok(read) => read,
            Err(what) => return unavailable(None, what),
        };
        if let Err(e) = hold_signals() {
            return unavailable(Some(&spec), format!("blocking signals: {e}"));
        }
        // Opened before the namespaces, while the host's pid means the host.
        let host = match watch_host() {
            Ok(host) => host,
            Err(what) => return unavailable(Some(&spec), what),
        };
        let (uid, gid) = (getuid(), getgid());
        // The mount namespace is the inner stage's own (see `confine::mounts`).
        let namespaces = CloneFlags::CLONE_NEWUSER
            | CloneFlags::CLONE_NEWPID
            | CloneFlags::CLONE_NEWNET
            | CloneFlags::CLONE_NEWIPC
            | CloneFlags::CLONE_NEWUTS
            | CloneFlags::CLONE_NEWCGROUP;
        if let Err(e) = unshare(namespaces) {
            return unavailable(
                Some(&spec),
                format!(
                    "namespaces: unshare failed ({e}); user namespaces may be off \
                     (kernel.unprivileged_userns_clone, user.max_user_namespaces, or an \
                     AppArmor rule)"
                ),
            );
        }
        let maps = [
            ("/proc/self/setgroups", "deny".to_owned()),
            ("/proc/self/uid_map", format!("{uid} {uid} 1")),
            ("/proc/self/gid_map", format!("{gid} {gid} 1")),
        ];
        for (file, line) in maps {
            if let Err(e) = std::fs::write(file, line) {
                return unavailable(Some(&spec), format!("user namespace: {file}: {e}"));
            }
        }
        if spec.loopback
            && let Err(e) = netns::loopback_up()
        {
            return unavailable(Some(&spec), format!("bringing loopback up: {e}"));
        }
        if let Some(socket) = &spec.proxy
            && let Err(what) = netns::open_way_out(&spec::path(socket))
        {
            return unavailable(Some(&spec), format!("the network proxy: {what}"));
        }
        // The report is written when the command ends, and the inner stage then stays to reap
        // what the command left behind (the host gives it SIGTERM and the grace period, then
        // kills the call's cgroup). This stage ends as soon as the report is closed, so the
        // host learns the command's status at once.
        let report_path = spec::path(&spec.report);
        let watch = match watch_report(&report_path) {
            Ok(watch) => watch,
            Err(e) => return unavailable(Some(&spec), format!("watching the report: {e}")),
        };
        let inner = Command::new("/proc/self/exe")
            .arg(INIT_FLAG)
            .env_clear()
            .env(SPEC_VAR, json)
            .stdin(if spec.stdin || spec.warm {
                Stdio::inherit()
            } else {
                Stdio::null()
            })
            .spawn();
        let mut inner = match inner {
            Ok(inner) => inner,
            Err(e) => return unavailable(Some(&spec), format!("starting the inner stage: {e}")),
        };
        wait_for_report(&watch, inner.id(), &host);
        if spec.warm {
            return serve_warm(&report_path, inner, &host);
        }
        if spec.stdin {
            // A server's sandbox lives as long as this helper, which its host stops by killing
            // it: the inner stage dies with it (its parent-death signal), and everything inside
            // with the inner stage. So this stage waits for the inner one to end.
            let _ = inner.wait();
        }
        let report = match Report::read_from(&report_path) {
            Some(report) => report,
            // The inner stage was killed before it reported: its own end is the outcome.
            None => match inner.wait() {
                Ok(status) => reported(status),
                Err(e) => {
                    return unavailable(Some(&spec), format!("waiting for the inner stage: {e}"));
                }
            },
        };
        end_as(report)
    }

    /// Waits until the report is closed: written, or the inner stage died without writing.
    ///
    /// Meanwhile it watches the host (the process that started this helper) through a pidfd:
    /// when the host dies, however it dies, the inner stage is killed, and with it, as its
    /// namespace's first process, everything inside. (One thread only: a process that made a
    /// PID namespace can start no thread.)
    fn wait_for_report(watch: &Inotify, inner: u32, host: &OwnedFd) {
        use std::os::fd::AsFd;
        let inner = Pid::from_raw(i32::try_from(inner).unwrap_or(i32::MAX));
        let mut host_alive = true;
        loop {
            let mut fds = vec![PollFd::new(watch.as_fd(), PollFlags::POLLIN)];
            if host_alive {
                fds.push(PollFd::new(host.as_fd(), PollFlags::POLLIN));
            }
            match poll(&mut fds, PollTimeout::NONE) {
                Ok(_) | Err(Errno::EINTR) => {}
                Err(_) => return,
            }
            let ready = |fd: &PollFd<'_>| fd.revents().is_some_and(|r| !r.is_empty());
            let (report_ready, host_gone) = (ready(&fds[0]), fds.get(1).is_some_and(ready));
            drop(fds);
            if host_gone {
                host_alive = false;
                let _ = kill(inner, Signal::SIGKILL);
            }
            if report_ready {
                match watch.read_events() {
                    Ok(events)
                        if events
                            .iter()
                            .any(|e| e.mask.contains(AddWatchFlags::IN_CLOSE_WRITE)) =>
                    {
                        return;
                    }
                    Ok(_) | Err(Errno::EINTR | Errno::EAGAIN) => {}
                    Err(_) => return,
                }
            }
        }
    }

    /// A warm sandbox's outer stage, once the inner stage reported: tells the host the sandbox
    /// is up, then stays until the inner stage ends, or the
    /// host does (the inner stage is then killed, and everything inside with it). The host
    /// stops the sandbox by killing this stage: the inner stage's parent-death signal follows.
    fn serve_warm(report: &std::path::Path, mut inner: std::process::Child, host: &OwnedFd) -> u8 {
        use std::os::fd::AsFd;
        let give_up = |mut inner: std::process::Child| {
            let _ = inner.kill();
            let _ = inner.wait();
            UNAVAILABLE_EXIT
        };
        if Report::read_from(report) != Some(Report::Ready) {
            return give_up(inner);
        }
        if let Err(e) = Report::Warm.write_to(report) {
            eprintln!("goondan-sandbox: the report: {e}");
            return give_up(inner);
        }
        let pid = rustix::process::Pid::from_raw(i32::try_from(inner.id()).unwrap_or(i32::MAX));
        let inner_fd = pid.and_then(|pid| {
            rustix::process::pidfd_open(pid, rustix::process::PidfdFlags::empty()).ok()
        });
        let Some(inner_fd) = inner_fd else {
            return give_up(inner);
        };
        loop {
            let mut fds = [
                PollFd::new(inner_fd.as_fd(), PollFlags::POLLIN),
                PollFd::new(host.as_fd(), PollFlags::POLLIN),
            ];
            match poll(&mut fds, PollTimeout::NONE) {
                Ok(_) | Err(Errno::EINTR) => {}
                Err(_) => break,
            }
            let ready = |fd: &PollFd<'_>| fd.revents().is_some_and(|r| !r.is_empty());
            let (inner_gone, host_gone) = (ready(&fds[0]), ready(&fds[1]));
            if host_gone {
                let _ = inner.kill();
            }
            if inner_gone || host_gone {
                break;
            }
        }
        let _ = inner.wait();
        0
    }

    /// A pidfd of the process that started this helper, which becomes readable when it ends.
    /// Refused when it has already ended (this process was handed to another parent).
    fn watch_host() -> Result<OwnedFd, String> {
        let parent = getppid();
        let pid = rustix::process::Pid::from_raw(parent.as_raw())
            .ok_or_else(|| "the process that started the helper has already ended".to_owned())?;
        let fd = rustix::process::pidfd_open(pid, rustix::process::PidfdFlags::empty())
            .map_err(|e| format!("watching the host process (pidfd_open, Linux 5.3+): {e}"))?;
        if getppid() != parent {
            return Err("the process that started the helper has already ended".to_owned());
        }
        Ok(fd)
    }

    /// An inotify watch for the report's closing (the file is made empty first).
    fn watch_report(report: &std::path::Path) -> nix::Result<Inotify> {
        File::create(report).map_err(|e| Errno::from_raw(e.raw_os_error().unwrap_or(0)))?;
        let inotify = Inotify::init(InitFlags::IN_CLOEXEC)?;
        inotify.add_watch(report, AddWatchFlags::IN_CLOSE_WRITE)?;
        Ok(inotify)
    }

    /// An exit status as the report of how it ended.
    fn reported(status: std::process::ExitStatus) -> Report {
        use std::os::unix::process::ExitStatusExt;
        match (status.code(), status.signal()) {
            (Some(code), _) => Report::Exit(code),
            (None, Some(signal)) => Report::Signal(signal),
            (None, None) => Report::Exit(1),
        }
    }

    /// Ends this process as the command ended: its exit code, or its signal raised here.
    fn end_as(report: Report) -> u8 {
        let signal = match report {
            Report::Exit(code) => return u8::try_from(code & 0xff).unwrap_or(1),
            Report::Signal(signal) => signal,
            Report::Unavailable(_) | Report::Ready | Report::Warm | Report::Started => {
                return UNAVAILABLE_EXIT;
            }
        };
        if let Ok(signal) = Signal::try_from(signal) {
            let _ = SigSet::all().thread_unblock();
            let _ = raise(signal);
        }
        // A signal whose default is not to end the process.
        u8::try_from((128 + signal) & 0xff).unwrap_or(1)
    }

    pub(super) fn landlock() -> String {
        confine::landlock_status()
    }

    pub(super) fn inner() -> u8 {
        let spec = match read_spec() {
            Ok((spec, _)) => spec,
            Err(what) => return unavailable(None, what),
        };
        // A server's or a warm sandbox ends when its helper is killed (see the outer stage).
        if (spec.stdin || spec.warm)
            && let Err(e) = nix::sys::prctl::set_pdeathsig(Signal::SIGKILL)
        {
            return unavailable(Some(&spec), format!("the parent-death signal: {e}"));
        }
        // The outer stage holds back the host's signals; the command must get them.
        if let Err(e) = SigSet::all().thread_unblock() {
            return unavailable(Some(&spec), format!("unblocking signals: {e}"));
        }
        // Opened before the ruleset, which puts the file out of the command's reach.
        let mut report = match File::create(spec::path(&spec.report)) {
            Ok(file) => file,
            Err(e) => return unavailable(Some(&spec), format!("the report file: {e}")),
        };
        // A warm sandbox's first process serves the calls over its stdin, the host's socket.
        let control = match spec.warm.then(spawner::control).transpose() {
            Ok(control) => control,
            Err(e) => return unavailable(Some(&spec), format!("the host's socket: {e}")),
        };
        let mut rules = None;
        let confined = confine::mounts(&spec).and_then(|()| {
            // Opened inside the new root, once: the warm sandbox's calls reuse them.
            let opened = rules.insert(confine::CallRules::open(&spec));
            confine::restrict(&spec, opened)
        });
        if let Err(what) =
            confined.and_then(|()| control.as_ref().map_or(Ok(()), |_| spawner::harden()))
        {
            return unavailable(Some(&spec), what);
        }
        if let (Some(control), Some(rules)) = (control, rules) {
            let ready = serde_json::to_string(&Report::Ready).unwrap_or_default();
            let _ = report.write_all(ready.as_bytes());
            drop(report);
            return spawner::serve(control, rules);
        }
        let outcome = run(&spec);
        let json = serde_json::to_string(&outcome).unwrap_or_default();
        let _ = report.write_all(json.as_bytes());
        // Closing it tells the outer stage.
        drop(report);
        // Reaps what the command left behind until nothing is left (the host signals them);
        // returning ends PID 1, and with it anything still inside.
        while let Ok(_) | Err(Errno::EINTR) = waitpid(Pid::from_raw(-1), None) {}
        0
    }

    /// Starts the command and reaps every process inside until the command ends.
    fn run(spec: &LaunchSpec) -> Report {
        let child = Command::new(spec::os(&spec.program))
            .args(spec.args.iter().map(|a| spec::os(a)))
            .current_dir(spec::path(&spec.cwd))
            .env_clear()
            .envs(spec.env.iter().map(|(k, v)| (spec::os(k), spec::os(v))))
            .spawn();
        let child = match child {
            Ok(child) => child,
            Err(e) => {
                eprintln!(
                    "goondan-sandbox: cannot run {}: {e}",
                    spec::path(&spec.program).display()
                );
                let code = if e.kind() == std::io::ErrorKind::NotFound {
                    127
                } else {
                    126
                };
                return Report::Exit(code);
            }
        };
        let command = Pid::from_raw(i32::try_from(child.id()).unwrap_or(i32::MAX));
        loop {
            match waitpid(Pid::from_raw(-1), None) {
                Ok(WaitStatus::Exited(pid, code)) if pid == command => break Report::Exit(code),
                Ok(WaitStatus::Signaled(pid, signal, _)) if pid == command => {
                    break Report::Signal(signal as i32);
                }
                Ok(_) | Err(Errno::EINTR) => {}
                Err(e) => {
                    eprintln!("goondan-sandbox: waiting for the command: {e}");
                    break Report::Exit(1);
                }
            }
        }
    }
}

#[cfg(not(target_os = "linux"))]
mod stage {
    pub(super) fn outer() -> u8 {
        eprintln!("goondan-sandbox: the sandbox needs Linux");
        super::UNAVAILABLE_EXIT
    }

    pub(super) fn inner() -> u8 {
        outer()
    }

    pub(super) fn landlock() -> String {
        "Linux only".to_owned()
    }
}
