//! The cgroups of a call: where this host lets us make them, the limits written into them,
//! and whether the call went past one.
//!
//! Per-call cgroups are made under this process's own cgroup, one directory of the same name
//! (`goondan-bash-<pid>-<n>`) in each **hierarchy** that has a part to play:
//!
//! - the cgroup v2 hierarchy, when it is writable and has `cgroup.kill`: it holds the call
//!   (see the containment module), and carries the controllers enabled for this process's
//!   children (`cgroup.subtree_control`);
//! - on a hybrid host, where the memory, pids or cpu controller is bound to a cgroup v1
//!   hierarchy instead, that hierarchy too: it only carries the limit.
//!
//! A **controller** is where its files live (v1 or v2) and how a limit is written and a hit read:
//!
//! | limit     | v2 files                        | v1 files                                | hit            |
//! |-----------|---------------------------------|-----------------------------------------|----------------|
//! | memory    | `memory.max`, `memory.swap.max` | `memory.limit_in_bytes`, `memory.memsw.*` | `oom_kill` > 0 (`memory.events` / `memory.oom_control`) |
//! | processes | `pids.max`                      | `pids.max`                              | `max` > 0 (`pids.events`) |
//! | cpu       | `cpu.max`                       | `cpu.cfs_quota_us`                      | none: throttled |
//!
//! The limits are written before the command starts; the wrapper shell enters every directory
//! of the call before it becomes the command, so nothing the command starts is outside them.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

use crate::sandbox::{Limits, Resource};

pub use crate::sandbox::CgroupVersion;

/// The prefix of the per-call cgroups' names.
pub(super) const PREFIX: &str = "goondan-bash-";

/// A resource controller of the kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Controller {
    Memory,
    Pids,
    Cpu,
}

/// The CPU period the CPU limit is a share of, in microseconds (the kernel's default).
const CPU_PERIOD_US: u64 = 100_000;

/// A file to write for a limit; `optional` ones may be missing (swap accounting is off).
struct Write {
    file: &'static str,
    value: String,
    optional: bool,
}

impl Controller {
    const ALL: [Self; 3] = [Self::Memory, Self::Pids, Self::Cpu];

    /// The kernel's name.
    fn name(self) -> &'static str {
        match self {
            Self::Memory => "memory",
            Self::Pids => "pids",
            Self::Cpu => "cpu",
        }
    }

    fn of(resource: Resource) -> Self {
        match resource {
            Resource::Memory => Self::Memory,
            Resource::Processes => Self::Pids,
            Resource::Cpu => Self::Cpu,
        }
    }

    fn resource(self) -> Resource {
        match self {
            Self::Memory => Resource::Memory,
            Self::Pids => Resource::Processes,
            Self::Cpu => Resource::Cpu,
        }
    }

    fn index(self) -> usize {
        self as usize
    }

    /// The limit of `limits` this controller holds, in its own unit (bytes, tasks, thousandths
    /// of a core); `None` for no limit.
    fn value(self, limits: &Limits) -> Option<u64> {
        match self {
            Self::Memory => Some(limits.memory()),
            Self::Pids => Some(limits.processes()),
            Self::Cpu => limits.cpu_millis().map(u64::from),
        }
    }

    /// A file only a cgroup carrying this controller has.
    fn marker_file(self, version: CgroupVersion) -> &'static str {
        match (self, version) {
            (Self::Memory, CgroupVersion::V2) => "memory.max",
            (Self::Memory, CgroupVersion::V1) => "memory.limit_in_bytes",
            (Self::Pids, _) => "pids.max",
            (Self::Cpu, CgroupVersion::V2) => "cpu.max",
            (Self::Cpu, CgroupVersion::V1) => "cpu.cfs_quota_us",
        }
    }

    /// What to write, in order, for `value` (`None`: no limit). Memory counts swap too: in v2
    /// the call gets none, in v1 memory and swap together stay within the limit.
    fn writes(self, version: CgroupVersion, value: Option<u64>) -> Vec<Write> {
        let write = |file, value: String| Write {
            file,
            value,
            optional: false,
        };
        let optional = |file, value: &str| Write {
            file,
            value: value.to_owned(),
            optional: true,
        };
        let v2_max = |v: Option<u64>| v.map_or_else(|| "max".to_owned(), |v| v.to_string());
        let v1_max = |v: Option<u64>| v.map_or_else(|| "-1".to_owned(), |v| v.to_string());
        match (self, version) {
            (Self::Memory, CgroupVersion::V2) => vec![
                write("memory.max", v2_max(value)),
                optional("memory.swap.max", if value.is_some() { "0" } else { "max" }),
            ],
            // memory+swap may never be below memory: lift it first, then set both.
            (Self::Memory, CgroupVersion::V1) => {
                let mut writes = vec![
                    optional("memory.memsw.limit_in_bytes", "-1"),
                    write("memory.limit_in_bytes", v1_max(value)),
                ];
                if let Some(bytes) = value {
                    writes.push(optional("memory.memsw.limit_in_bytes", &bytes.to_string()));
                }
                writes
            }
            (Self::Pids, _) => vec![write("pids.max", v2_max(value))],
            (Self::Cpu, version) => {
                let quota = value.map(|millis| millis * CPU_PERIOD_US / 1000);
                match version {
                    CgroupVersion::V2 => {
                        vec![write(
                            "cpu.max",
                            format!("{} {CPU_PERIOD_US}", v2_max(quota)),
                        )]
                    }
                    CgroupVersion::V1 => vec![
                        write("cpu.cfs_period_us", CPU_PERIOD_US.to_string()),
                        write("cpu.cfs_quota_us", v1_max(quota)),
                    ],
                }
            }
        }
    }

    /// The file and the key whose count says the limit was hit: the kernel's OOM kills, the
    /// forks refused at `pids.max`. CPU has none: past its limit a call is throttled.
    fn hit_counter(self, version: CgroupVersion) -> Option<(&'static str, &'static str)> {
        match (self, version) {
            (Self::Memory, CgroupVersion::V2) => Some(("memory.events", "oom_kill")),
            (Self::Memory, CgroupVersion::V1) => Some(("memory.oom_control", "oom_kill")),
            (Self::Pids, _) => Some(("pids.events", "max")),
            (Self::Cpu, _) => None,
        }
    }
}

/// Where per-call cgroups are made in one hierarchy, and the controllers they carry there.
#[derive(Debug)]
pub(super) struct Hierarchy {
    /// This process's own cgroup in the hierarchy.
    base: PathBuf,
    version: CgroupVersion,
    controllers: Vec<Controller>,
}

impl Hierarchy {
    /// Whether it holds calls (cgroup v2, with `cgroup.kill`).
    pub(super) fn holds_calls(&self) -> bool {
        self.version == CgroupVersion::V2
    }
}

/// The cgroups calls can use on this host, found once per process ([`cgroups`]).
#[derive(Debug)]
pub(super) struct Cgroups {
    /// The hierarchies per-call cgroups are made in: the cgroup v2 one first, when there is one.
    hierarchies: Vec<Hierarchy>,
    /// Why no cgroup v2 holds calls, when none does.
    no_v2: Option<String>,
    /// The controllers found nowhere, each with why.
    missing: Vec<(Controller, String)>,
}

impl Cgroups {
    /// The hierarchy that holds calls (cgroup v2), if any.
    pub(super) fn holder(&self) -> Option<&Hierarchy> {
        self.hierarchies.first().filter(|h| h.holds_calls())
    }

    /// Why no cgroup v2 holds calls, when none does.
    pub(super) fn no_holder_why(&self) -> Option<&str> {
        self.no_v2.as_deref()
    }

    /// Every hierarchy per-call cgroups are made in.
    pub(super) fn hierarchies(&self) -> &[Hierarchy] {
        &self.hierarchies
    }

    /// Where `resource`'s limit is enforced: the cgroup version and the directory under which
    /// calls' cgroups are made, or why it cannot be.
    pub(super) fn enforcer(&self, resource: Resource) -> Result<(CgroupVersion, &Path), String> {
        let controller = Controller::of(resource);
        if let Some(h) = self
            .hierarchies
            .iter()
            .find(|h| h.controllers.contains(&controller))
        {
            return Ok((h.version, &h.base));
        }
        Err(self
            .missing
            .iter()
            .find(|(c, _)| *c == controller)
            .map_or_else(|| "no cgroup for calls".to_owned(), |(_, why)| why.clone()))
    }
}

/// Where `resource`'s limit is enforced on this host: the cgroup version and the directory
/// under which calls' cgroups are made, or why it cannot be (for
/// [`crate::sandbox::check`]).
pub fn enforcement(resource: Resource) -> Result<(CgroupVersion, PathBuf), String> {
    cgroups()
        .enforcer(resource)
        .map(|(version, base)| (version, base.to_path_buf()))
}

/// The cgroups of this host, found once per process.
pub(super) fn cgroups() -> &'static Cgroups {
    static CGROUPS: OnceLock<Cgroups> = OnceLock::new();
    CGROUPS.get_or_init(detect)
}

fn detect() -> Cgroups {
    let own = std::fs::read_to_string("/proc/self/cgroup")
        .map_err(|err| format!("cannot read /proc/self/cgroup: {err}"));
    let mounts = std::fs::read_to_string("/proc/self/mountinfo")
        .map_err(|err| format!("cannot read /proc/self/mountinfo: {err}"));
    let (own, mounts) = match (own, mounts) {
        (Ok(own), Ok(mounts)) => (own, mounts),
        (Err(why), _) | (_, Err(why)) => {
            return Cgroups {
                hierarchies: Vec::new(),
                no_v2: Some(why.clone()),
                missing: Controller::ALL.map(|c| (c, why.clone())).to_vec(),
            };
        }
    };
    let mut hierarchies = Vec::new();
    let mut missing = Vec::new();
    let mut v2_why = String::new();
    let no_v2 = match find_v2_base(&own, &mounts) {
        Ok(base) => {
            let (controllers, why) = enable_v2_controllers(&base);
            v2_why = why;
            hierarchies.push(Hierarchy {
                base,
                version: CgroupVersion::V2,
                controllers,
            });
            None
        }
        Err(why) => Some(why),
    };
    for controller in Controller::ALL {
        if hierarchies
            .first()
            .is_some_and(|h| h.controllers.contains(&controller))
        {
            continue;
        }
        match find_v1_base(controller, &own, &mounts) {
            Ok(base) => match hierarchies.iter_mut().find(|h| h.base == base) {
                Some(h) => h.controllers.push(controller),
                None => hierarchies.push(Hierarchy {
                    base,
                    version: CgroupVersion::V1,
                    controllers: vec![controller],
                }),
            },
            Err(v1_why) => {
                let v2 = no_v2.as_deref().unwrap_or(&v2_why);
                missing.push((controller, format!("{v2}; {v1_why}")));
            }
        }
    }
    Cgroups {
        hierarchies,
        no_v2,
        missing,
    }
}

/// This process's own cgroup v2, if it is writable and has `cgroup.kill`.
fn find_v2_base(own: &str, mounts: &str) -> Result<PathBuf, String> {
    let own = own
        .lines()
        .find_map(|line| line.strip_prefix("0::"))
        .ok_or("the process is in no cgroup v2")?;
    let (root, mount_point) = mounts
        .lines()
        .find_map(|line| cgroup_mount(line, "cgroup2"))
        .ok_or("no cgroup2 file system is mounted")?;
    let inside = Path::new(own.trim())
        .strip_prefix(&root)
        .map_err(|_| format!("the process's cgroup `{own}` is not under the cgroup2 mount"))?;
    let base = within(mount_point, inside);
    probe(&base, "cgroup.kill")
        .map_err(|why| why.replace("`cgroup.kill`", "`cgroup.kill` (Linux 5.14+)"))?;
    Ok(base)
}

/// Enables the memory, pids and cpu controllers for the children of `base` where it may; the
/// ones its children get, and why the others are missing.
fn enable_v2_controllers(base: &Path) -> (Vec<Controller>, String) {
    let read = |file: &str| std::fs::read_to_string(base.join(file)).unwrap_or_default();
    let listed = |text: &str, c: Controller| text.split_whitespace().any(|n| n == c.name());
    let available = read("cgroup.controllers");
    let mut why = Vec::new();
    for controller in Controller::ALL {
        if !listed(&available, controller) {
            continue;
        }
        if listed(&read("cgroup.subtree_control"), controller) {
            continue;
        }
        if let Err(err) = std::fs::write(
            base.join("cgroup.subtree_control"),
            format!("+{}", controller.name()),
        ) {
            why.push(format!("cannot enable {}: {err}", controller.name()));
        }
    }
    let enabled = read("cgroup.subtree_control");
    let controllers: Vec<Controller> = Controller::ALL
        .into_iter()
        .filter(|c| listed(&enabled, *c))
        .collect();
    let mut text = format!(
        "cgroup v2 at {} offers {} to its children",
        base.display(),
        match enabled.trim() {
            "" => "no controller",
            list => list,
        }
    );
    if !why.is_empty() {
        text.push_str(&format!(" ({})", why.join(", ")));
    }
    (controllers, text)
}

/// This process's own cgroup in the cgroup v1 hierarchy of `controller`, if it is writable.
fn find_v1_base(controller: Controller, own: &str, mounts: &str) -> Result<PathBuf, String> {
    let name = controller.name();
    let own = own
        .lines()
        .find_map(|line| {
            let mut fields = line.splitn(3, ':');
            let (_, names, path) = (fields.next()?, fields.next()?, fields.next()?);
            names.split(',').any(|n| n == name).then_some(path)
        })
        .ok_or_else(|| format!("no cgroup v1 {name} hierarchy"))?;
    let (root, mount_point) = mounts
        .lines()
        .find_map(|line| cgroup_mount(line, "cgroup").filter(|_| mounts_controller(line, name)))
        .ok_or_else(|| format!("the cgroup v1 {name} hierarchy is not mounted"))?;
    let inside = Path::new(own.trim())
        .strip_prefix(&root)
        .map_err(|_| format!("the process's {name} cgroup `{own}` is not under its mount"))?;
    let base = within(mount_point, inside);
    probe(&base, controller.marker_file(CgroupVersion::V1))?;
    Ok(base)
}

/// The cgroup at `inside` of the hierarchy mounted at `mount_point` (the mount point itself
/// for its root).
fn within(mount_point: PathBuf, inside: &Path) -> PathBuf {
    if inside.as_os_str().is_empty() {
        mount_point
    } else {
        mount_point.join(inside)
    }
}

/// Makes and removes a cgroup under `base`, checking that it has `file`.
fn probe(base: &Path, file: &str) -> Result<(), String> {
    let dir = base.join(format!("{PREFIX}{}-probe", std::process::id()));
    std::fs::create_dir(&dir)
        .or_else(|err| match err.kind() {
            io::ErrorKind::AlreadyExists => Ok(()),
            _ => Err(err),
        })
        .map_err(|err| format!("cannot create a cgroup under {}: {err}", base.display()))?;
    let has = dir.join(file).exists();
    remove_dir(&dir).ok();
    if has {
        Ok(())
    } else {
        Err(format!(
            "the cgroups under {} have no `{file}`",
            base.display()
        ))
    }
}

/// `(root, mount point)` of a line of `/proc/self/mountinfo` of file system type `fs_type`.
pub(super) fn cgroup_mount(line: &str, fs_type: &str) -> Option<(PathBuf, PathBuf)> {
    let (before, after) = line.split_once(" - ")?;
    if after.split_whitespace().next()? != fs_type {
        return None;
    }
    let mut fields = before.split_whitespace().skip(3);
    let root = unescape(fields.next()?)?;
    let mount_point = unescape(fields.next()?)?;
    Some((root, mount_point))
}

/// Whether a cgroup v1 line of `/proc/self/mountinfo` mounts the controller `name`.
fn mounts_controller(line: &str, name: &str) -> bool {
    line.split_once(" - ")
        .and_then(|(_, after)| after.split_whitespace().nth(2))
        .is_some_and(|options| options.split(',').any(|o| o == name))
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
    Some(PathBuf::from(std::ffi::OsString::from_vec(out)))
}

/// The cgroups of one call: a directory of one name in each hierarchy it uses.
#[derive(Debug)]
pub(super) struct CallCgroup {
    dirs: Vec<(&'static Hierarchy, PathBuf)>,
    /// The limit written for each controller (`None`: none, as the kernel makes a cgroup).
    written: [Option<u64>; 3],
    /// Killed, or past a limit: never kept for another call.
    spent: AtomicBool,
    /// Seen empty after its command was reaped, never spent: it may serve another call.
    reusable: bool,
    /// Where it goes back to when reusable (none for a stale cgroup).
    pool: Option<Arc<CgroupPool>>,
}

impl CallCgroup {
    /// New cgroups in every hierarchy of `cgroups`.
    fn create(cgroups: &'static Cgroups) -> io::Result<Self> {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let name = format!("{PREFIX}{}-{n}", std::process::id());
        let mut made = Self::at(Vec::new());
        for hierarchy in &cgroups.hierarchies {
            let dir = hierarchy.base.join(&name);
            std::fs::create_dir(&dir).map_err(|err| {
                io::Error::new(
                    err.kind(),
                    format!(
                        "cannot create a cgroup under {}: {err}",
                        hierarchy.base.display()
                    ),
                )
            })?;
            // Removed with the others when a later one fails.
            made.dirs.push((hierarchy, dir));
        }
        Ok(made)
    }

    /// The cgroups at `dirs`, which exist.
    pub(super) fn at(dirs: Vec<(&'static Hierarchy, PathBuf)>) -> Self {
        Self {
            dirs,
            written: [None; 3],
            spent: AtomicBool::new(false),
            reusable: false,
            pool: None,
        }
    }

    /// The directory that holds the call (cgroup v2), if any.
    pub(super) fn holder(&self) -> Option<&Path> {
        self.dirs
            .iter()
            .find(|(h, _)| h.holds_calls())
            .map(|(_, dir)| dir.as_path())
    }

    /// Writes `limits`; the limits not enforced, each with why (no controller, a write
    /// refused).
    pub(super) fn apply(&mut self, limits: &Limits) -> Vec<(Resource, String)> {
        let mut unenforced = Vec::new();
        for controller in Controller::ALL {
            let value = controller.value(limits);
            let Some((hierarchy, dir)) = self
                .dirs
                .iter()
                .find(|(h, _)| h.controllers.contains(&controller))
            else {
                if value.is_some() {
                    let why = cgroups()
                        .enforcer(controller.resource())
                        .err()
                        .unwrap_or_default();
                    unenforced.push((controller.resource(), why));
                }
                continue;
            };
            let written = &mut self.written[controller.index()];
            if *written == value {
                continue;
            }
            let result = controller
                .writes(hierarchy.version, value)
                .into_iter()
                .try_for_each(|w| match std::fs::write(dir.join(w.file), &w.value) {
                    Err(err) if w.optional && err.kind() == io::ErrorKind::NotFound => Ok(()),
                    Err(err) => Err(format!("writing {} to {}: {err}", w.value, w.file)),
                    Ok(()) => Ok(()),
                });
            match result {
                Ok(()) => *written = value,
                Err(why) => {
                    // What is written is unknown: never kept for another call.
                    self.spent.store(true, Ordering::Relaxed);
                    if value.is_some() {
                        unenforced.push((controller.resource(), why));
                    }
                }
            }
        }
        unenforced
    }

    /// The `cgroup.procs` files the command enters: the holder's, and each of the others whose
    /// limits `limits` sets.
    pub(super) fn procs_files(&self, limits: &Limits) -> Vec<PathBuf> {
        self.dirs
            .iter()
            .filter(|(h, _)| {
                h.holds_calls() || h.controllers.iter().any(|c| c.value(limits).is_some())
            })
            .map(|(_, dir)| dir.join("cgroup.procs"))
            .collect()
    }

    /// Whether any of its limits can be hit (a memory or process limit is written).
    pub(super) fn watches(&self) -> bool {
        self.written[Controller::Memory.index()].is_some()
            || self.written[Controller::Pids.index()].is_some()
    }

    /// The limit the call went past, if any (read from the kernel's counters; a cgroup past
    /// one is never kept for another call).
    pub(super) fn hit(&self) -> Option<Resource> {
        for (hierarchy, dir) in &self.dirs {
            for controller in &hierarchy.controllers {
                if self.written[controller.index()].is_none() {
                    continue;
                }
                let Some((file, key)) = controller.hit_counter(hierarchy.version) else {
                    continue;
                };
                if counter(&dir.join(file), key) > 0 {
                    self.spent.store(true, Ordering::Relaxed);
                    return Some(controller.resource());
                }
            }
        }
        None
    }

    /// The processes inside the holder.
    pub(super) fn members(&self) -> Vec<Pid> {
        self.holder().map(members_of).unwrap_or_default()
    }

    /// Kills every process inside: at once with the holder's `cgroup.kill`, else SIGKILL to
    /// each member of its cgroup v1 directories.
    pub(super) fn kill(&self) {
        self.spent.store(true, Ordering::Relaxed);
        match self.holder() {
            Some(dir) => {
                if let Err(err) = std::fs::write(dir.join("cgroup.kill"), "1") {
                    tracing::warn!(cgroup = %dir.display(), %err, "cannot kill the call's cgroup");
                }
            }
            None => self.dirs.iter().for_each(|(_, dir)| kill_inside(dir)),
        }
    }

    /// Whether a live process is inside the holder.
    pub(super) fn populated(&self) -> bool {
        self.holder().is_some_and(populated)
    }

    /// Lets it serve another call when `reusable` (and it was never spent).
    pub(super) fn set_reusable(&mut self, reusable: bool) {
        self.reusable = reusable && !self.spent.load(Ordering::Relaxed);
    }
}

impl Drop for CallCgroup {
    /// Goes back to its pool when it may serve another call and the pool has room, else
    /// removes its directories; when members are still dying, a thread retries for a while.
    fn drop(&mut self) {
        if let Some(pool) = self.pool.take().filter(|_| self.reusable) {
            let mut kept = Self::at(std::mem::take(&mut self.dirs));
            kept.written = self.written;
            // A full pool gives it back, and dropping it removes it.
            let _ = pool.keep(kept);
            return;
        }
        let mut left: Vec<PathBuf> = std::mem::take(&mut self.dirs)
            .into_iter()
            .map(|(_, dir)| dir)
            .filter(|dir| remove_dir(dir).is_err())
            .collect();
        if left.is_empty() {
            return;
        }
        std::thread::spawn(move || {
            let deadline = Instant::now() + Duration::from_secs(10);
            while Instant::now() < deadline {
                left.retain(|dir| {
                    kill_inside(dir);
                    remove_dir(dir).is_err()
                });
                if left.is_empty() {
                    return;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            for dir in left {
                tracing::warn!(cgroup = %dir.display(), "cannot remove the call's cgroup");
            }
        });
    }
}

/// Empty per-call cgroups of one tool, kept for its next calls: making and removing cgroups
/// is directory operations in the kernel's cgroup file systems on every call, and a cgroup
/// that was seen empty after its command was reaped, and was never killed nor past a limit,
/// holds nothing a later call could inherit (no process is left inside to fork, and the
/// wrapper that enters it is gone). At most [`CgroupPool::SIZE`] are kept; the ones kept are
/// removed when the pool is dropped (with the last clone of its tool), or by the next process
/// that finds them left by a process that no longer exists.
#[derive(Debug, Default)]
pub(crate) struct CgroupPool {
    kept: Mutex<Vec<CallCgroup>>,
}

impl CgroupPool {
    /// How many empty cgroups a pool keeps.
    pub(crate) const SIZE: usize = 8;

    /// Empty cgroups of `cgroups` for a call: kept ones, else new ones; either goes back here
    /// when it may serve another call.
    pub(super) fn take(self: &Arc<Self>, cgroups: &'static Cgroups) -> io::Result<CallCgroup> {
        let kept = self.lock().pop();
        let mut cgroup = match kept {
            Some(cgroup) => cgroup,
            None => CallCgroup::create(cgroups)?,
        };
        cgroup.pool = Some(Arc::clone(self));
        Ok(cgroup)
    }

    /// Keeps `cgroup` for a later call; gives it back when the pool is full.
    fn keep(&self, cgroup: CallCgroup) -> Result<(), CallCgroup> {
        let mut kept = self.lock();
        if kept.len() >= Self::SIZE {
            return Err(cgroup);
        }
        kept.push(cgroup);
        Ok(())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<CallCgroup>> {
        self.kept.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The value of `key` in a flat-keyed cgroup file (`oom_kill 1`); 0 when unreadable.
fn counter(file: &Path, key: &str) -> u64 {
    std::fs::read_to_string(file)
        .ok()
        .and_then(|text| {
            text.lines().find_map(|line| {
                let (k, v) = line.split_once(' ')?;
                (k == key).then(|| v.trim().parse().ok()).flatten()
            })
        })
        .unwrap_or(0)
}

/// The processes in the cgroup `dir`.
pub(super) fn members_of(dir: &Path) -> Vec<Pid> {
    std::fs::read_to_string(dir.join("cgroup.procs"))
        .map(|text| {
            text.lines()
                .filter_map(|line| line.trim().parse().ok())
                .map(Pid::from_raw)
                .collect()
        })
        .unwrap_or_default()
}

/// Kills what is inside the cgroup `dir`: `cgroup.kill` in v2, SIGKILL to each member in v1.
pub(super) fn kill_inside(dir: &Path) {
    if std::fs::write(dir.join("cgroup.kill"), "1").is_ok() {
        return;
    }
    for pid in members_of(dir) {
        kill(pid, Signal::SIGKILL).ok();
    }
}

/// Whether a live process is inside the cgroup v2 `dir`; an unreadable cgroup counts as empty
/// (it is gone).
pub(super) fn populated(dir: &Path) -> bool {
    std::fs::read_to_string(dir.join("cgroup.events"))
        .is_ok_and(|events| events.lines().any(|line| line.trim() == "populated 1"))
}

/// Removes an empty cgroup; one already gone is fine.
fn remove_dir(dir: &Path) -> io::Result<()> {
    match std::fs::remove_dir(dir) {
        Err(err) if err.kind() != io::ErrorKind::NotFound => Err(err),
        _ => Ok(()),
    }
}

/// The per-call cgroups under `hierarchy` that `pick` picks by the pid of the process that
/// made them and their directory.
pub(super) fn call_cgroups(
    hierarchy: &'static Hierarchy,
    pick: impl Fn(&str, &Path) -> bool,
) -> Vec<CallCgroup> {
    let Ok(entries) = std::fs::read_dir(&hierarchy.base) else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter(|entry| {
            let name = entry.file_name();
            let maker = name
                .to_str()
                .and_then(|name| name.strip_prefix(PREFIX))
                .and_then(|rest| rest.split_once('-'));
            maker.is_some_and(|(pid, _)| pick(pid, &entry.path()))
        })
        // Made only for the ones picked: dropping a `CallCgroup` removes its directory.
        .map(|entry| CallCgroup::at(vec![(hierarchy, entry.path())]))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mountinfo_lines_are_read() {
        let line = "41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw";
        assert_eq!(
            cgroup_mount(line, "cgroup2"),
            Some((PathBuf::from("/"), PathBuf::from("/sys/fs/cgroup/unified")))
        );
        let spaced = r"41 31 0:38 /a /mnt/my\040cg rw - cgroup2 cgroup2 rw";
        assert_eq!(
            cgroup_mount(spaced, "cgroup2"),
            Some((PathBuf::from("/a"), PathBuf::from("/mnt/my cg")))
        );
        let v1 = "32 31 0:29 / /sys/fs/cgroup/cpu,cpuacct rw - cgroup cgroup rw,cpu,cpuacct";
        assert_eq!(cgroup_mount(v1, "cgroup2"), None);
        assert!(cgroup_mount(v1, "cgroup").is_some());
        assert!(mounts_controller(v1, "cpu") && mounts_controller(v1, "cpuacct"));
        assert!(!mounts_controller(v1, "memory"));
    }

    #[test]
    fn limits_become_the_controllers_files() {
        let limits = Limits::default()
            .with_memory(64 << 20)
            .unwrap()
            .with_cpu(1.5)
            .unwrap();
        let files = |c: Controller, v: CgroupVersion| -> Vec<(&str, String)> {
            c.writes(v, c.value(&limits))
                .into_iter()
                .map(|w| (w.file, w.value))
                .collect()
        };
        let mib64 = (64u64 << 20).to_string();
        assert_eq!(
            files(Controller::Memory, CgroupVersion::V2),
            [
                ("memory.max", mib64.clone()),
                ("memory.swap.max", "0".into())
            ]
        );
        assert_eq!(
            files(Controller::Memory, CgroupVersion::V1),
            [
                ("memory.memsw.limit_in_bytes", "-1".into()),
                ("memory.limit_in_bytes", mib64.clone()),
                ("memory.memsw.limit_in_bytes", mib64),
            ]
        );
        assert_eq!(
            files(Controller::Pids, CgroupVersion::V1),
            [("pids.max", crate::sandbox::DEFAULT_PROCESSES.to_string())]
        );
        assert_eq!(
            files(Controller::Cpu, CgroupVersion::V2),
            [("cpu.max", "150000 100000".into())]
        );
        assert_eq!(
            files(Controller::Cpu, CgroupVersion::V1)[1],
            ("cpu.cfs_quota_us", "150000".into())
        );
        let none = Controller::Cpu.writes(CgroupVersion::V2, None);
        assert_eq!(none[0].value, "max 100000");
    }

    #[test]
    fn counters_are_read_by_key() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("memory.events");
        std::fs::write(&file, "low 0\nhigh 0\nmax 3\noom 1\noom_kill 1\n").unwrap();
        assert_eq!(counter(&file, "oom_kill"), 1);
        assert_eq!(counter(&file, "max"), 3);
        assert_eq!(counter(&file, "nothing"), 0);
        assert_eq!(counter(&dir.path().join("gone"), "max"), 0);
    }
}
