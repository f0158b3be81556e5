//! Containment: making sure no process a call started outlives the call.
//!
//! A process group is not enough: a command can leave it with `setsid` (or a double fork
//! followed by `setsid`), and such a daemon then survives the call and, holding the output
//! pipes, keeps the call waiting. So each call runs in **its own cgroup v2**, created under the
//! host process's cgroup (`<mount>/<own cgroup>/goondan-bash-<pid>-<n>`):
//!
//! - The command is started as `/bin/sh -c 'echo $$ > "${1}" ... exec "$@"' sh
//!   <cgroup>/cgroup.procs <program> <args>...`: the wrapper moves itself into the call's
//!   cgroups *before* it execs the command, so every descendant is born inside, with no window
//!   for a fork to slip out (no `pre_exec` hook, which would need `unsafe`). The command keeps
//!   the wrapper's pid. (On a hybrid host it also enters the call's cgroups of the cgroup v1
//!   hierarchies that hold its resource limits: see `bash/cgroup.rs`.)
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
//! The call's cgroups also hold its resource limits ([`crate::sandbox::Limits`]): a call that
//! goes past its memory or process limit is ended at once.
//! Without cgroups, no limit is enforced.
//!
//! A host killed with SIGKILL cannot end its calls: [`end_stale_calls`] ends the calls of
//! processes that no longer exist (an agent calls it when it starts, and the first call of any
//! process sweeps the cgroups). A program about to exit while calls it gave up on still run
//! ends them with [`end_own_calls`].

use std::ffi::{OsStr, OsString};
use std::path::Path;
use std::sync::Arc;
use std::sync::Once;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use nix::errno::Errno;
use nix::sys::signal::{Signal, kill, killpg};
use nix::unistd::Pid;
use tokio::process::Command;

use super::cgroup::{self, CallCgroup, CgroupPool, Cgroups};
use crate::sandbox::{Limits, Resource};

/// The shell that moves itself into the call's cgroups and then becomes the command.
const WRAPPER_SHELL: &str = "/bin/sh";
/// The environment variable that marks a call's processes in the fallback.
pub const MARKER_VAR: &str = "GOONDAN_BASH_CALL";
/// How often a running call's limits are looked at: two small reads of the kernel's counters.
const LIMIT_CHECK: Duration = Duration::from_millis(50);

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
        let cgroups = cgroup::cgroups();
        if cgroups.holder().is_some() {
            Self::Cgroup
        } else {
            if let Some(why) = cgroups.no_holder_why() {
                warn_fallback(why);
            }
            Self::ProcessGroup
        }
    }
}

/// The wrapper script: it moves the shell into the `n` cgroups whose `cgroup.procs` files are
/// `$1`..`$n` *before* the command runs, so every descendant is born inside. Then it either
/// execs `"$@"` (the command and its arguments), or, `in_place`, for a command that is itself
/// `/bin/sh -c COMMAND` (every `bash__exec`), runs COMMAND in place instead of starting a
/// second shell (one exec fewer, half the start-up cost): `$0` is then the program's path as
/// `sh -c` would have it, `${n+1}` the command, and the `shift` leaves it no positional
/// parameters, as `sh -c`. Only a syntax error reads differently (`sh: 1: eval: Syntax error`
/// for `sh: 1: Syntax error`).
fn wrapper_script(n: usize, in_place: bool) -> String {
    let mut script = String::with_capacity(120 * n + 20);
    for i in 1..=n {
        script.push_str(&format!(
            r#"echo $$ > "${{{i}}}" || {{ echo "goondan: cannot enter the call's cgroup ${{{i}}}" >&2; exit 126; }}; "#
        ));
    }
    if in_place {
        script.push_str(&format!(r#"eval "shift {m}; ${{{m}}}""#, m = n + 1));
    } else {
        script.push_str(&format!(r#"shift {n}; exec "$@""#));
    }
    script
}

/// The processes of one call.
#[derive(Debug)]
pub(crate) struct Containment {
    cgroup: Option<CallCgroup>,
    /// The value of [`MARKER_VAR`] when no cgroup holds the call.
    marker: Option<String>,
    /// The command's process group, once started (its pid).
    pgid: Option<Pid>,
    /// Seen empty once: nothing can enter again (no process is left inside to fork).
    emptied: AtomicBool,
    /// The limits written into the call's cgroups.
    limits: Limits,
}

impl Containment {
    /// A fresh containment with `limits`: empty cgroups (ones `pool` kept, else new ones) when
    /// `use_cgroup` and possible, else the process group and an environment marker.
    ///
    /// A limit that cannot be enforced here is logged once and left out, unless it was set
    /// (not a default) and `enforce` (the call is sandboxed): then the call is refused with
    /// what is missing.
    pub(crate) fn new(
        use_cgroup: bool,
        limits: Limits,
        enforce: bool,
        pool: &Arc<CgroupPool>,
    ) -> Result<Self, String> {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let (mut cgroup, no_cgroup) = if use_cgroup {
            cgroups_for_call(pool)
        } else {
            (None, Some("the tool's `use_cgroup` is false".to_owned()))
        };
        let unenforced = match &mut cgroup {
            Some(cgroup) => cgroup.apply(&limits),
            None => {
                let why = |resource| match &no_cgroup {
                    Some(why) => why.clone(),
                    None => cgroup::cgroups()
                        .enforcer(resource)
                        .err()
                        .unwrap_or_default(),
                };
                Resource::ALL
                    .into_iter()
                    .filter(|r| limits.limits(*r))
                    .map(|r| (r, why(r)))
                    .collect()
            }
        };
        if enforce && let Some((resource, why)) = unenforced.iter().find(|(r, _)| limits.is_set(*r))
        {
            return Err(format!(
                "the {resource} limit ({}) cannot be enforced: {why}; a limit that is set is \
                 enforced or the call refused (left unset, the defaults are enforced where this \
                 host can)",
                limits.describe(*resource)
            ));
        }
        for (resource, why) in &unenforced {
            warn_unenforced(*resource, why);
        }
        let held = cgroup.as_ref().and_then(CallCgroup::holder).is_some();
        let marker = (!held).then(|| {
            let n = NEXT.fetch_add(1, Ordering::Relaxed);
            format!("{}-{n}", std::process::id())
        });
        Ok(Self {
            cgroup,
            marker,
            pgid: None,
            emptied: AtomicBool::new(false),
            limits,
        })
    }

    /// The processes a call of this or another process left: its cgroup, or its marker.
    fn left(cgroup: Option<CallCgroup>, marker: Option<String>) -> Self {
        Self {
            cgroup,
            marker,
            pgid: None,
            emptied: AtomicBool::new(false),
            limits: Limits::default(),
        }
    }

    /// The cgroup that holds the call, if one does.
    fn holder(&self) -> Option<&CallCgroup> {
        self.cgroup.as_ref().filter(|_| self.marker.is_none())
    }

    /// A command that runs `program args` inside: through the wrapper when there are cgroups
    /// to enter, in its own process group in any case.
    pub(crate) fn command(&self, program: &OsStr, args: &[OsString]) -> Command {
        let (program, args) = self.argv(program, args);
        let mut command = Command::new(program);
        command.args(args).process_group(0);
        command
    }

    /// The program and arguments that run `program args` inside: the wrapper's when there are
    /// cgroups to enter, else `program args` themselves.
    pub(crate) fn argv(&self, program: &OsStr, args: &[OsString]) -> (OsString, Vec<OsString>) {
        let procs = self
            .cgroup
            .as_ref()
            .map(|c| c.procs_files(&self.limits))
            .unwrap_or_default();
        let procs = procs.iter().map(|p| p.as_os_str().to_owned());
        match args {
            _ if procs.len() == 0 => (program.to_owned(), args.to_vec()),
            [dash_c, script] if program == WRAPPER_SHELL && dash_c == "-c" => {
                let mut argv = vec!["-c".into(), wrapper_script(procs.len(), true).into()];
                argv.push(program.to_owned());
                argv.extend(procs);
                argv.push(script.clone());
                (WRAPPER_SHELL.into(), argv)
            }
            _ => {
                let mut argv = vec!["-c".into(), wrapper_script(procs.len(), false).into()];
                argv.push(WRAPPER_SHELL.into());
                argv.extend(procs);
                argv.push(program.to_owned());
                argv.extend(args.iter().cloned());
                (WRAPPER_SHELL.into(), argv)
            }
        }
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

    /// The `cgroup.procs` files of the call's cgroups, opened for writing, for a command that
    /// another process starts (a warm sandbox's: see `crate::sandbox::WarmCall::start`).
    pub(crate) fn open_procs(&self) -> std::io::Result<Vec<std::fs::File>> {
        let files = self
            .cgroup
            .as_ref()
            .map(|c| c.procs_files(&self.limits))
            .unwrap_or_default();
        files
            .iter()
            .map(|file| std::fs::OpenOptions::new().write(true).open(file))
            .collect()
    }

    /// The environment marker a command started by another process needs (fallback only).
    pub(crate) fn marker_env(&self) -> Option<(OsString, OsString)> {
        self.marker
            .as_ref()
            .map(|marker| (OsString::from(MARKER_VAR), OsString::from(marker)))
    }

    /// Records a command that another process started and moved inside, where it waits and is
    /// the only process: its pid is found there.
    pub(crate) fn started_inside(&mut self) {
        if let Some(pid) = self.members().first() {
            self.pgid = Some(*pid);
        }
    }

    /// The processes inside besides the process group: the cgroup's, or the marked ones.
    fn members(&self) -> Vec<Pid> {
        match (&self.marker, &self.cgroup) {
            (Some(marker), _) => marked(marker),
            (None, Some(cgroup)) => cgroup.members(),
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
        }
        if self.holder().is_some() {
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
        let empty = match self.holder() {
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
        let poll = if self.holder().is_some() {
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

    /// The limit the call went past, if any.
    pub(crate) fn limit_hit(&self) -> Option<Resource> {
        self.cgroup.as_ref().and_then(CallCgroup::hit)
    }

    /// Resolves when the call goes past a limit (looked at every [`LIMIT_CHECK`]); never when
    /// it has none to go past.
    pub(crate) async fn limit_passed(&self) -> Resource {
        if !self.cgroup.as_ref().is_some_and(CallCgroup::watches) {
            return std::future::pending().await;
        }
        loop {
            tokio::time::sleep(LIMIT_CHECK).await;
            if let Some(resource) = self.limit_hit() {
                return resource;
            }
        }
    }

    /// Ends the containment of a command that was waited for (its process reaped, so it can no
    /// longer be on its way into the cgroup): cgroups seen empty, never killed and within
    /// their limits go back to the pool for the tool's next call. Anything else is dropped as
    /// usual.
    pub(crate) fn close_reaped(mut self) {
        let empty = self.pgid.is_some() && self.is_empty();
        if let Some(cgroup) = &mut self.cgroup {
            cgroup.set_reusable(empty);
        }
    }
}

impl Drop for Containment {
    /// Kills whatever is left; the cgroups remove themselves (or go back to the pool).
    fn drop(&mut self) {
        if !self.is_empty() {
            self.kill();
        }
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

/// Empty cgroups for a call, kept in `pool` or new; else why there are none (`None` when this
/// host has no hierarchy to make them in: each limit then has its own why).
fn cgroups_for_call(pool: &Arc<CgroupPool>) -> (Option<CallCgroup>, Option<String>) {
    let cgroups = swept_cgroups();
    if let Some(why) = cgroups.no_holder_why() {
        warn_fallback(why);
    }
    if cgroups.hierarchies().is_empty() {
        return (None, None);
    }
    match pool.take(cgroups) {
        Ok(cgroup) => (Some(cgroup), None),
        Err(err) => {
            let why = err.to_string();
            warn_fallback(&why);
            (None, Some(why))
        }
    }
}

/// Set once the cgroups left by processes that no longer exist were swept in this process.
static STALE_SWEPT: Once = Once::new();

/// The cgroups of this host, rid once per process of the ones left by processes that no
/// longer exist.
fn swept_cgroups() -> &'static Cgroups {
    let cgroups = cgroup::cgroups();
    STALE_SWEPT.call_once(|| remove_stale(cgroups));
    cgroups
}

/// Kills and removes the per-call cgroups, in every hierarchy, left by processes that no
/// longer exist.
fn remove_stale(cgroups: &'static Cgroups) {
    for hierarchy in cgroups.hierarchies() {
        for cgroup in cgroup::call_cgroups(hierarchy, |owner, _| !is_alive(owner)) {
            cgroup.kill();
            // Dropping removes it.
        }
    }
}

/// The cgroups holding processes of calls whose starter `owner` picks (by its pid). Empty
/// ones are left alone: they may be kept for a later call.
fn running_cgroups(owner: impl Fn(&str) -> bool) -> Vec<Containment> {
    let Some(holder) = cgroup::cgroups().holder() else {
        return Vec::new();
    };
    cgroup::call_cgroups(holder, |pid, dir| owner(pid) && cgroup::populated(dir))
        .into_iter()
        .map(|cgroup| Containment::left(Some(cgroup), None))
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
    // This sweep covers the one of the first call.
    STALE_SWEPT.call_once(|| ());
    remove_stale(cgroup::cgroups());
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
    left.extend(running_cgroups(is_own));
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

/// Warns once per limit that calls run without it.
fn warn_unenforced(resource: Resource, why: &str) {
    static WARNED: [AtomicBool; 3] = [const { AtomicBool::new(false) }; 3];
    let index = Resource::ALL
        .iter()
        .position(|r| *r == resource)
        .unwrap_or(0);
    if !WARNED[index].swap(true, Ordering::Relaxed) {
        tracing::warn!(
            limit = resource.as_str(),
            why,
            "bash calls run without this limit: no cgroup controller enforces it here"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_wrapper_enters_each_cgroup_then_runs_the_command() {
        assert_eq!(
            wrapper_script(1, true),
            r#"echo $$ > "${1}" || { echo "goondan: cannot enter the call's cgroup ${1}" >&2; exit 126; }; eval "shift 2; ${2}""#
        );
        let two = wrapper_script(2, false);
        assert!(two.contains(r#"echo $$ > "${2}""#), "{two}");
        assert!(two.ends_with(r#"shift 2; exec "$@""#), "{two}");
    }
}
