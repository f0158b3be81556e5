//! Containment: making sure no process a call started outlives the call.
//!
//! A process group is not enough: a command can leave it with `setsid` (or a double fork
//! followed by `setsid`), and such a daemon then survives the call and, holding the output
//! pipes, keeps the call waiting. So each call runs in **its own cgroup v2**, created under the
//! host process's cgroup (`<mount>/<own cgroup>/goondan-bash-<pid>-<n>`):
//!
//! - The command is started as `/bin/sh -c 'echo $$ > "$0" ... exec "$@"' <cgroup>/cgroup.procs
//!   <program> <args>...`: the wrapper moves itself into the cgroup *before* it execs the
//!   command, so every descendant is born inside, with no window for a fork to slip out (no
//!   `pre_exec` hook, which would need `unsafe`). The command keeps the wrapper's pid.
//! - Membership is inherited on `fork` and is not changed by `setsid`, double forks or
//!   re-parenting, so the cgroup knows every descendant.
//! - SIGTERM goes to every member (`cgroup.procs`); the final kill is the kernel's atomic
//!   `cgroup.kill` (Linux 5.14+), which also catches processes forked meanwhile. `cgroup.events`
//!   says when the last member is gone; then the cgroup is removed, or kept for the tool's next
//!   call (see `CgroupPool`).
//!
//! Why this over the alternatives: a PID namespace (`unshare --pid --fork --kill-child`) kills
//! everything when its init dies, but makes the command (or a wrapper) PID 1, which ignores
//! signals it has no handler for (so `kill $$` and a SIGTERM on timeout stop working as in a
//! normal shell, and the exit signal cannot be passed on), and it needs `CAP_SYS_ADMIN` or
//! user namespaces. A per-call subreaper needs a helper process of our own. The cgroup keeps
//! every process's ordinary pid and signal behaviour and needs no helper binary.
//!
//! Where no writable cgroup v2 with `cgroup.kill` is found (no cgroup2 mount, a read-only
//! `/sys/fs/cgroup`, a cgroup the user may not write), calls fall back, with one `tracing`
//! warning, to their process group plus an environment marker: the command gets
//! `GOONDAN_BASH_CALL=<id>`, which every descendant inherits, and signals go to the process
//! group and to every process whose `/proc/<pid>/environ` carries the marker. That finds
//! `setsid` daemons and double forks too, but not a descendant that clears or rewrites its
//! environment (`env -i`), and a process forked during a sweep can be missed; hence cgroups
//! first.
//!
//! A host killed with SIGKILL cannot end its calls: [`end_stale_calls`] ends the calls of
//! processes that no longer exist (an agent calls it when it starts, and the first call of any
//! process sweeps the cgroups). A program about to exit while calls it gave up on still run
//! ends them with [`end_own_calls`].

use std::ffi::{OsStr, OsString};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Once, OnceLock, PoisonError};
use std::time::{Duration, Instant};

use nix::errno::Errno;
use nix::sys::signal::{Signal, kill, killpg};
use nix::unistd::Pid;
use tokio::process::Command;

/// The shell that moves itself into the call's cgroup and then becomes the command.
const WRAPPER_SHELL: &str = "/bin/sh";
/// `$0` is the cgroup's `cgroup.procs`, `"$@"` the command and its arguments.
const WRAPPER_SCRIPT: &str = r#"echo $$ > "$0" || { echo "goondan: cannot enter the call's cgroup $0" >&2; exit 126; }; exec "$@""#;
/// The wrapper for a command that is itself `/bin/sh -c COMMAND` (every `bash__exec`): the
/// wrapper shell runs COMMAND in place instead of starting a second shell (one exec fewer, half
/// the start-up cost). `$0` is the program's path as `sh -c` would have it, `$1` the cgroup's
/// `cgroup.procs`, `$2` the command; `shift 2` leaves it no positional parameters, as `sh -c`.
/// Only a syntax error reads differently (`sh: 1: eval: Syntax error` for `sh: 1: Syntax error`).
const WRAPPER_EVAL: &str = r#"echo $$ > "$1" || { echo "goondan: cannot enter the call's cgroup $1" >&2; exit 126; }; eval "shift 2; $2""#;
/// The prefix of the per-call cgroups' names.
const PREFIX: &str = "goondan-bash-";
/// The environment variable that marks a call's processes in the fallback.
pub const MARKER_VAR: &str = "GOONDAN_BASH_CALL";

/// How a call's processes are held together.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ContainmentKind {
    /// A cgroup v2 per call: every descendant is found and killed, `setsid` or not.
    Cgroup,
    /// The fallback: the process group plus the [`MARKER_VAR`] environment marker. A
    /// descendant that calls `setsid` is still found, one that clears its environment is not.
    ProcessGroup,
}

impl ContainmentKind {
    /// The containment calls get on this host: [`ContainmentKind::Cgroup`] when a writable
    /// cgroup v2 with `cgroup.kill` is found (looked up once per process), else
    /// [`ContainmentKind::ProcessGroup`].
    pub fn detect() -> Self {
        if cgroup_base().is_some() {
            Self::Cgroup
        } else {
            Self::ProcessGroup
        }
    }
}

/// The processes of one call.
#[derive(Debug)]
pub(crate) struct Containment {
    cgroup: Option<CallCgroup>,
    /// The value of [`MARKER_VAR`] when there is no cgroup.
    marker: Option<String>,
    /// The command's process group, once started (its pid).
    pgid: Option<Pid>,
    /// Seen empty once: nothing can enter again (no process is left inside to fork).
    emptied: AtomicBool,
}

impl Containment {
    /// A fresh containment: an empty cgroup (one `pool` kept, else a new one) when
    /// `use_cgroup` and possible, else the process group and an environment marker.
    pub(crate) fn new(use_cgroup: bool, pool: &Arc<CgroupPool>) -> Self {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let base = if use_cgroup {
            swept_cgroup_base()
        } else {
            None
        };
        let cgroup = base.and_then(|base| match pool.take(base) {
            Ok(cgroup) => Some(cgroup),
            Err(err) => {
                warn_fallback(&format!(
                    "cannot create a cgroup under {}: {err}",
                    base.display()
                ));
                None
            }
        });
        let marker = cgroup.is_none().then(|| {
            let n = NEXT.fetch_add(1, Ordering::Relaxed);
            format!("{}-{n}", std::process::id())
        });
        Self {
            cgroup,
            marker,
            pgid: None,
            emptied: AtomicBool::new(false),
        }
    }

    /// The processes a call of this or another process left: its cgroup, or its marker.
    fn left(cgroup: Option<CallCgroup>, marker: Option<String>) -> Self {
        Self {
            cgroup,
            marker,
            pgid: None,
            emptied: AtomicBool::new(false),
        }
    }

    /// A command that runs `program args` inside: through the wrapper for a cgroup, in its
    /// own process group in any case.
    pub(crate) fn command(&self, program: &OsStr, args: &[OsString]) -> Command {
        let procs = self.cgroup.as_ref().map(|c| c.dir.join("cgroup.procs"));
        let mut command = match (procs, args) {
            (Some(procs), [dash_c, script]) if program == WRAPPER_SHELL && dash_c == "-c" => {
                let mut c = Command::new(WRAPPER_SHELL);
                c.arg("-c")
                    .arg(WRAPPER_EVAL)
                    .arg(program)
                    .arg(procs)
                    .arg(script);
                c
            }
            (Some(procs), _) => {
                let mut c = Command::new(WRAPPER_SHELL);
                c.arg("-c")
                    .arg(WRAPPER_SCRIPT)
                    .arg(procs)
                    .arg(program)
                    .args(args);
                c
            }
            (None, _) => {
                let mut c = Command::new(program);
                c.args(args);
                c
            }
        };
        command.process_group(0);
        command
    }

    /// Adds the environment marker (fallback only); call after the environment is set.
    pub(crate) fn mark(&self, command: &mut Command) {
        if let Some(marker) = &self.marker {
            command.env(MARKER_VAR, marker);
        }
    }

    /// Records the started command's pid (also its process group).
    pub(crate) fn started(&mut self, pid: Pid) {
        self.pgid = Some(pid);
    }

    /// The processes inside besides the process group: the cgroup's, or the marked ones.
    fn members(&self) -> Vec<Pid> {
        match (&self.cgroup, &self.marker) {
            (Some(cgroup), _) => cgroup.members(),
            (None, Some(marker)) => marked(marker),
            (None, None) => Vec::new(),
        }
    }

    /// Sends `signal` to every process still inside.
    pub(crate) fn signal(&self, signal: Signal) {
        if let Some(pgid) = self.pgid {
            report(killpg(pgid, signal), "process group", pgid, signal);
        }
        for pid in self.members() {
            report(kill(pid, signal), "process", pid, signal);
        }
    }

    /// Kills every process still inside: `cgroup.kill` for a cgroup (atomic), else SIGKILL to
    /// the group and a few sweeps of the marked processes (for ones forked meanwhile).
    pub(crate) fn kill(&self) {
        if let Some(pgid) = self.pgid {
            report(
                killpg(pgid, Signal::SIGKILL),
                "process group",
                pgid,
                Signal::SIGKILL,
            );
        }
        if let Some(cgroup) = &self.cgroup {
            cgroup.kill();
            return;
        }
        for _ in 0..3 {
            let members = self.members();
            if members.is_empty() {
                break;
            }
            for pid in members {
                report(kill(pid, Signal::SIGKILL), "process", pid, Signal::SIGKILL);
            }
        }
    }

    /// Whether no process is left inside (zombies of the process group count as left).
    pub(crate) fn is_empty(&self) -> bool {
        if self.emptied.load(Ordering::Relaxed) {
            return true;
        }
        let empty = match &self.cgroup {
            Some(cgroup) => !cgroup.populated(),
            None => {
                let group_gone = self
                    .pgid
                    .is_none_or(|pgid| killpg(pgid, None) == Err(Errno::ESRCH));
                group_gone && self.members().is_empty()
            }
        };
        // Only once the command started: before, an empty cgroup only means not yet entered.
        if empty && self.pgid.is_some() {
            self.emptied.store(true, Ordering::Relaxed);
        }
        empty
    }

    /// Waits until nothing is left inside, at most `within`; `true` when empty.
    pub(crate) async fn wait_empty(&self, within: Duration) -> bool {
        // `cgroup.events` is one small read; a marker sweep reads all of `/proc`.
        let poll = if self.cgroup.is_some() {
            Duration::from_millis(5)
        } else {
            Duration::from_millis(25)
        };
        let deadline = tokio::time::Instant::now() + within;
        loop {
            if self.is_empty() {
                return true;
            }
            if tokio::time::Instant::now() >= deadline {
                return false;
            }
            tokio::time::sleep(poll).await;
        }
    }

    /// Ends the containment of a command that was waited for (its process reaped, so it can no
    /// longer be on its way into the cgroup): a cgroup seen empty and never killed goes back
    /// to the pool for the tool's next call. Anything else is dropped as usual.
    pub(crate) fn close_reaped(mut self) {
        let empty = self.pgid.is_some() && self.is_empty();
        if let Some(cgroup) = &mut self.cgroup {
            cgroup.reusable = empty && !cgroup.killed.load(Ordering::Relaxed);
        }
    }
}

impl Drop for Containment {
    /// Kills whatever is left; the cgroup removes itself (or goes back to the pool).
    fn drop(&mut self) {
        if !self.is_empty() {
            self.kill();
        }
    }
}

/// Empty per-call cgroups of one tool, kept for its next calls: making and removing a cgroup
/// is two directory operations in the kernel's cgroup file system on every call, and a cgroup
/// that was seen empty after its command was reaped, and was never killed, holds nothing a
/// later call could inherit (no process is left inside to fork, and the wrapper that enters it
/// is gone). At most [`CgroupPool::SIZE`] are kept; the ones kept are removed when the pool is
/// dropped (with the last clone of its tool), or by the next process that finds them left by a
/// process that no longer exists.
#[derive(Debug, Default)]
pub(crate) struct CgroupPool {
    kept: Mutex<Vec<PathBuf>>,
}

impl CgroupPool {
    /// How many empty cgroups a pool keeps.
    pub(crate) const SIZE: usize = 8;

    /// An empty cgroup under `base` for a call: a kept one, else a new one; either goes back
    /// here when it may serve another call.
    fn take(self: &Arc<Self>, base: &Path) -> io::Result<CallCgroup> {
        let kept = self.lock().pop();
        let mut cgroup = match kept {
            Some(dir) => CallCgroup::at(dir),
            None => CallCgroup::create(base)?,
        };
        cgroup.pool = Some(Arc::clone(self));
        Ok(cgroup)
    }

    /// Keeps `dir` for a later call; gives it back when the pool is full.
    fn keep(&self, dir: PathBuf) -> Result<(), PathBuf> {
        let mut kept = self.lock();
        if kept.len() >= Self::SIZE {
            return Err(dir);
        }
        kept.push(dir);
        Ok(())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<PathBuf>> {
        self.kept.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Drop for CgroupPool {
    /// Removes the kept cgroups (empty, so nothing is waited for).
    fn drop(&mut self) {
        for dir in self
            .kept
            .get_mut()
            .unwrap_or_else(PoisonError::into_inner)
            .drain(..)
        {
            if let Err(err) = remove_cgroup(&dir) {
                tracing::warn!(cgroup = %dir.display(), %err, "cannot remove a kept cgroup");
            }
        }
    }
}

/// The cgroup of one call.
#[derive(Debug)]
struct CallCgroup {
    dir: PathBuf,
    /// `cgroup.kill` was written: never kept for another call.
    killed: AtomicBool,
    /// Seen empty after its command was reaped, never killed: it may serve another call.
    reusable: bool,
    /// Where it goes back to when reusable (none for a probe or a stale cgroup).
    pool: Option<Arc<CgroupPool>>,
}

impl CallCgroup {
    /// A new cgroup under `base`.
    fn create(base: &Path) -> io::Result<Self> {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let dir = base.join(format!("{PREFIX}{}-{n}", std::process::id()));
        std::fs::create_dir(&dir)?;
        Ok(Self::at(dir))
    }

    /// The cgroup at `dir`, which exists.
    fn at(dir: PathBuf) -> Self {
        Self {
            dir,
            killed: AtomicBool::new(false),
            reusable: false,
            pool: None,
        }
    }

    fn members(&self) -> Vec<Pid> {
        std::fs::read_to_string(self.dir.join("cgroup.procs"))
            .map(|text| {
                text.lines()
                    .filter_map(|line| line.trim().parse().ok())
                    .map(Pid::from_raw)
                    .collect()
            })
            .unwrap_or_default()
    }

    fn kill(&self) {
        self.killed.store(true, Ordering::Relaxed);
        if let Err(err) = std::fs::write(self.dir.join("cgroup.kill"), "1") {
            tracing::warn!(cgroup = %self.dir.display(), %err, "cannot kill the call's cgroup");
        }
    }

    fn populated(&self) -> bool {
        populated(&self.dir)
    }
}

impl Drop for CallCgroup {
    /// Goes back to its pool when it may serve another call and the pool has room, else
    /// removes the cgroup; when members are still dying, a thread retries for a while.
    fn drop(&mut self) {
        if let Some(pool) = self.pool.take().filter(|_| self.reusable) {
            match pool.keep(std::mem::take(&mut self.dir)) {
                Ok(()) => return,
                Err(dir) => self.dir = dir,
            }
        }
        if remove_cgroup(&self.dir).is_ok() {
            return;
        }
        let dir = std::mem::take(&mut self.dir);
        std::thread::spawn(move || {
            let deadline = Instant::now() + Duration::from_secs(10);
            while Instant::now() < deadline {
                std::fs::write(dir.join("cgroup.kill"), "1").ok();
                if remove_cgroup(&dir).is_ok() {
                    return;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            tracing::warn!(cgroup = %dir.display(), "cannot remove the call's cgroup");
        });
    }
}

/// The live processes whose environment carries `MARKER_VAR=marker` (zombies have none).
fn marked(marker: &str) -> Vec<Pid> {
    let wanted = format!("{MARKER_VAR}={marker}");
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|entry| {
            let pid: i32 = entry.file_name().to_str()?.parse().ok()?;
            let environ = std::fs::read(entry.path().join("environ")).ok()?;
            environ
                .split(|b| *b == 0)
                .any(|var| var == wanted.as_bytes())
                .then_some(Pid::from_raw(pid))
        })
        .collect()
}

/// Whether a live process is inside the cgroup `dir`; an unreadable cgroup counts as empty
/// (it is gone).
fn populated(dir: &Path) -> bool {
    std::fs::read_to_string(dir.join("cgroup.events"))
        .is_ok_and(|events| events.lines().any(|line| line.trim() == "populated 1"))
}

/// Removes an empty cgroup; one already gone is fine.
fn remove_cgroup(dir: &Path) -> io::Result<()> {
    match std::fs::remove_dir(dir) {
        Err(err) if err.kind() != io::ErrorKind::NotFound => Err(err),
        _ => Ok(()),
    }
}

fn report(result: nix::Result<()>, what: &str, pid: Pid, signal: Signal) {
    match result {
        Ok(()) | Err(Errno::ESRCH) => {}
        Err(err) => tracing::warn!(what, pid = pid.as_raw(), %signal, %err, "cannot signal"),
    }
}

/// Warns once that calls fall back to their process group.
fn warn_fallback(why: &str) {
    static WARNED: AtomicBool = AtomicBool::new(false);
    if !WARNED.swap(true, Ordering::Relaxed) {
        tracing::warn!(
            why,
            "bash calls are contained by their process group and an environment marker: a descendant that clears its environment can outlive its call"
        );
    }
}

/// Set once the cgroups left by processes that no longer exist were swept in this process.
static STALE_SWEPT: Once = Once::new();

/// The directory under which per-call cgroups are made (this process's own cgroup v2), found
/// once; `None` when there is no writable cgroup v2 with `cgroup.kill`.
fn cgroup_base() -> Option<&'static Path> {
    static BASE: OnceLock<Option<PathBuf>> = OnceLock::new();
    BASE.get_or_init(|| match find_cgroup_base() {
        Ok(base) => Some(base),
        Err(why) => {
            warn_fallback(&why);
            None
        }
    })
    .as_deref()
}

/// [`cgroup_base`], rid once per process of the cgroups left by processes that no longer exist.
fn swept_cgroup_base() -> Option<&'static Path> {
    let base = cgroup_base()?;
    STALE_SWEPT.call_once(|| remove_stale(base));
    Some(base)
}

fn find_cgroup_base() -> Result<PathBuf, String> {
    let own = std::fs::read_to_string("/proc/self/cgroup")
        .map_err(|err| format!("cannot read /proc/self/cgroup: {err}"))?;
    let own = own
        .lines()
        .find_map(|line| line.strip_prefix("0::"))
        .ok_or("the process is in no cgroup v2")?;
    let mounts = std::fs::read_to_string("/proc/self/mountinfo")
        .map_err(|err| format!("cannot read /proc/self/mountinfo: {err}"))?;
    let (root, mount_point) = mounts
        .lines()
        .find_map(cgroup2_mount)
        .ok_or("no cgroup2 file system is mounted")?;
    let inside = Path::new(own.trim())
        .strip_prefix(&root)
        .map_err(|_| format!("the process's cgroup `{own}` is not under the cgroup2 mount"))?;
    let base = mount_point.join(inside);
    // Probe: make and remove one cgroup, and check that `cgroup.kill` exists.
    let probe = CallCgroup::create(&base)
        .map_err(|err| format!("cannot create a cgroup under {}: {err}", base.display()))?;
    if !probe.dir.join("cgroup.kill").exists() {
        return Err("the kernel has no `cgroup.kill` (Linux 5.14+)".to_owned());
    }
    drop(probe);
    Ok(base)
}

/// `(root, mount point)` of a cgroup2 line of `/proc/self/mountinfo`.
fn cgroup2_mount(line: &str) -> Option<(PathBuf, PathBuf)> {
    let (before, after) = line.split_once(" - ")?;
    if after.split_whitespace().next()? != "cgroup2" {
        return None;
    }
    let mut fields = before.split_whitespace().skip(3);
    let root = unescape(fields.next()?)?;
    let mount_point = unescape(fields.next()?)?;
    Some((root, mount_point))
}

/// Undoes mountinfo's octal escapes (`\040` for a space).
fn unescape(field: &str) -> Option<PathBuf> {
    use std::os::unix::ffi::OsStringExt;
    let bytes = field.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while let Some(&b) = bytes.get(i) {
        if b == b'\\' {
            let digits = std::str::from_utf8(bytes.get(i + 1..i + 4)?).ok()?;
            out.push(u8::from_str_radix(digits, 8).ok()?);
            i += 4;
        } else {
            out.push(b);
            i += 1;
        }
    }
    Some(PathBuf::from(OsString::from_vec(out)))
}

/// Kills and removes per-call cgroups left by processes that no longer exist.
fn remove_stale(base: &Path) {
    for (owner, dir) in call_cgroups(base) {
        if !is_alive(&owner) {
            std::fs::write(dir.join("cgroup.kill"), "1").ok();
            drop(CallCgroup::at(dir));
        }
    }
}

/// The per-call cgroups under `base`, each with the pid of the process that made it.
fn call_cgroups(base: &Path) -> Vec<(String, PathBuf)> {
    let Ok(entries) = std::fs::read_dir(base) else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|entry| {
            let name = entry.file_name();
            let owner = name.to_str()?.strip_prefix(PREFIX)?.split_once('-')?.0;
            Some((owner.to_owned(), entry.path()))
        })
        .collect()
}

/// The values of [`MARKER_VAR`] (`<pid>-<n>`) carried by live processes of this PID
/// namespace, each with the pid of the process that started the call. (A marker set in
/// another PID namespace, by a `goondan` running in a sandbox, names a pid of that namespace.)
fn call_markers() -> Vec<(String, String)> {
    let prefix = format!("{MARKER_VAR}=");
    let own_namespace = std::fs::read_link("/proc/self/ns/pid").ok();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let mut found: Vec<(String, String)> = entries
        .flatten()
        .filter(|entry| entry.file_name().to_str().is_some_and(is_pid))
        .filter(|entry| std::fs::read_link(entry.path().join("ns/pid")).ok() == own_namespace)
        .filter_map(|entry| {
            let environ = std::fs::read(entry.path().join("environ")).ok()?;
            let var = environ
                .split(|b| *b == 0)
                .find_map(|var| var.strip_prefix(prefix.as_bytes()))?;
            let marker = std::str::from_utf8(var).ok()?;
            let owner = marker.split_once('-')?.0;
            Some((owner.to_owned(), marker.to_owned()))
        })
        .collect();
    found.sort_unstable();
    found.dedup();
    found
}

fn is_pid(name: &str) -> bool {
    !name.is_empty() && name.bytes().all(|b| b.is_ascii_digit())
}

/// Whether the process `pid` exists and is not a zombie (a process killed with its parent
/// waits as one until it is reaped); a name that is no pid counts as alive (left alone).
fn is_alive(pid: &str) -> bool {
    if !is_pid(pid) {
        return true;
    }
    let Ok(stat) = std::fs::read_to_string(Path::new("/proc").join(pid).join("stat")) else {
        return false;
    };
    // `pid (name) state ...`: the name may hold spaces and parentheses, so read after its last `)`.
    let state = stat
        .rsplit_once(')')
        .and_then(|(_, rest)| rest.split_whitespace().next());
    state != Some("Z")
}

/// The cgroups under `base` holding processes, of calls whose starter `owner` picks (by its
/// pid). Empty ones are left alone: they may be kept for a later call.
fn running_cgroups(base: &Path, owner: impl Fn(&str) -> bool) -> Vec<Containment> {
    call_cgroups(base)
        .into_iter()
        .filter(|(pid, dir)| owner(pid) && populated(dir))
        .map(|(_, dir)| Containment::left(Some(CallCgroup::at(dir)), None))
        .collect()
}

/// The marked processes (the fallback) of calls whose starter `owner` picks, one
/// containment per call.
fn marked_calls(owner: impl Fn(&str) -> bool) -> Vec<Containment> {
    call_markers()
        .into_iter()
        .filter(|(pid, _)| owner(pid))
        .map(|(_, marker)| Containment::left(None, Some(marker)))
        .collect()
}

/// Ends what calls of processes that no longer exist left running (a host killed with
/// SIGKILL cannot end its calls): their processes are killed, their cgroups removed.
///
/// The first `bash` call of a process does this for cgroups on its own; an agent calls it
/// when it starts, before it resumes a Turn a crash cut short, so that the model is never
/// told a call was interrupted while that call's command still runs.
pub fn end_stale_calls() {
    if let Some(base) = cgroup_base() {
        // This sweep covers the one of the first call.
        STALE_SWEPT.call_once(|| ());
        remove_stale(base);
    }
    // Dropping kills every marked process.
    drop(marked_calls(|pid| !is_alive(pid)));
}

/// Ends every call of this process that still holds processes: SIGTERM, at most `grace` for
/// them to end, then SIGKILL.
///
/// For a program about to exit with calls cut short: the executor drops a cancelled call's
/// handler at once, which sends SIGTERM and leaves the SIGKILL after the grace period to a
/// thread that ends with the program.
pub async fn end_own_calls(grace: Duration) {
    let own = std::process::id().to_string();
    let is_own = |pid: &str| pid == own;
    let mut left = marked_calls(is_own);
    if let Some(base) = cgroup_base() {
        left.extend(running_cgroups(base, is_own));
    }
    for call in &left {
        call.signal(Signal::SIGTERM);
    }
    let deadline = tokio::time::Instant::now() + grace;
    for call in &left {
        let within = deadline.saturating_duration_since(tokio::time::Instant::now());
        call.wait_empty(within).await;
    }
    // Dropping kills whatever is left and removes the cgroups.
    drop(left);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mountinfo_lines_are_read() {
        let line = "41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw";
        assert_eq!(
            cgroup2_mount(line),
            Some((PathBuf::from("/"), PathBuf::from("/sys/fs/cgroup/unified")))
        );
        let spaced = r"41 31 0:38 /a /mnt/my\040cg rw - cgroup2 cgroup2 rw";
        assert_eq!(
            cgroup2_mount(spaced),
            Some((PathBuf::from("/a"), PathBuf::from("/mnt/my cg")))
        );
        let other = "30 1 0:26 / /sys/fs/cgroup/cpu rw - cgroup cgroup rw,cpu";
        assert_eq!(cgroup2_mount(other), None);
    }
}
