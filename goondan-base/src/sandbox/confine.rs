//! The kernel's part: mounts that hide secrets, a Landlock ruleset for files, a seccomp filter
//! for the system calls that would undo the rest. Run by the helper's inner stage, in its own
//! user, mount, PID and network namespaces, before it starts the command.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use landlock::{
    ABI, Access, AccessFs, BitFlags, CompatLevel, Compatible, PathBeneath, PathFd, Ruleset,
    RulesetAttr, RulesetCreatedAttr, RulesetStatus, Scope, path_beneath_rules,
};
use nix::libc;
use nix::mount::{MsFlags, mount};
use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule, TargetArch,
};

use super::spec::{self, LaunchSpec};

/// The newest Landlock ABI whose rights the ruleset asks for; an older kernel enforces what it
/// has (at least ABI 1: files), a newer one these.
const LANDLOCK_ABI: ABI = ABI::V6;

/// Trees of the host that are often links to others (`/bin` to `/usr/bin`): made the same
/// links in the new root.
const ROOT_LINKS: &[&str] = &["/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"];

/// A new root holding only the opened trees, so that nothing else of the host can even be
/// named (its Unix sockets included): an empty tmpfs at the spec's `root`, the read trees
/// bound read-only, the write trees bound writable, a `/dev` of a few devices and a private
/// `/dev/shm`, a `/proc` of the new PID namespace, the masked paths hidden (a directory
/// under an empty read-only tmpfs, a file under `/dev/null`); then `pivot_root` into it.
pub(crate) fn mounts(spec: &LaunchSpec) -> Result<(), String> {
    let none = None::<&str>;
    let fail = |what: &str, e: nix::Error| format!("mount namespace: {what}: {e}");
    // A mount namespace of the inner stage's own: `pivot_root` moves every process of a
    // namespace, and the outer stage keeps the host's view (it reads the report there).
    nix::sched::unshare(nix::sched::CloneFlags::CLONE_NEWNS).map_err(|e| fail("unshare", e))?;
    mount(none, "/", none, MsFlags::MS_REC | MsFlags::MS_PRIVATE, none)
        .map_err(|e| fail("making / private", e))?;
    let root = spec::path(&spec.root);
    mount(
        Some("tmpfs"),
        &root,
        Some("tmpfs"),
        MsFlags::MS_NOSUID | MsFlags::MS_NODEV,
        Some("mode=755,size=1m"),
    )
    .map_err(|e| fail("the new root", e))?;
    for link in ROOT_LINKS {
        if let Ok(target) = std::fs::read_link(link) {
            std::os::unix::fs::symlink(target, inside(&root, Path::new(link)))
                .map_err(|e| format!("mount namespace: the link {link}: {e}"))?;
        }
    }
    for (source, writable) in binds(spec) {
        bind(&root, &source, writable)?;
    }
    // The spec's device files, bound; its `/dev/shm` is a tmpfs of the sandbox's own.
    let dev = inside(&root, Path::new("/dev"));
    let shm = dev.join("shm");
    for device in spec.devices.iter().map(|d| spec::path(d)) {
        if device != Path::new("/dev/shm") {
            bind(&root, &device, true)?;
        }
    }
    std::fs::create_dir_all(&shm).map_err(|e| format!("mount namespace: /dev/shm: {e}"))?;
    mount(
        Some("tmpfs"),
        &shm,
        Some("tmpfs"),
        MsFlags::MS_NOSUID | MsFlags::MS_NODEV,
        Some("size=64m,mode=1777"),
    )
    .map_err(|e| fail("a private /dev/shm", e))?;
    for (name, target) in [
        ("fd", "/proc/self/fd"),
        ("stdin", "/proc/self/fd/0"),
        ("stdout", "/proc/self/fd/1"),
        ("stderr", "/proc/self/fd/2"),
    ] {
        std::os::unix::fs::symlink(target, dev.join(name))
            .map_err(|e| format!("mount namespace: /dev/{name}: {e}"))?;
    }
    let proc = inside(&root, Path::new("/proc"));
    std::fs::create_dir_all(&proc).map_err(|e| format!("mount namespace: /proc: {e}"))?;
    let hardened = MsFlags::MS_NOSUID | MsFlags::MS_NODEV | MsFlags::MS_NOEXEC;
    mount(Some("proc"), &proc, Some("proc"), hardened, none)
        .map_err(|e| fail("a /proc of its own", e))?;
    for masked in &spec.mask {
        mask(&inside(&root, &spec::path(masked)))?;
    }
    mount(
        none,
        &root,
        none,
        MsFlags::MS_REMOUNT | MsFlags::MS_RDONLY | MsFlags::MS_NOSUID | MsFlags::MS_NODEV,
        none,
    )
    .map_err(|e| fail("the new root read-only", e))?;
    nix::unistd::chdir(&root).map_err(|e| fail("entering the new root", e))?;
    nix::unistd::pivot_root(".", ".").map_err(|e| fail("pivot_root", e))?;
    nix::mount::umount2(".", nix::mount::MntFlags::MNT_DETACH)
        .map_err(|e| fail("detaching the old root", e))?;
    nix::unistd::chdir("/").map_err(|e| fail("entering /", e))
}

/// `path` of the host inside the new `root`.
fn inside(root: &Path, path: &Path) -> PathBuf {
    root.join(path.strip_prefix("/").unwrap_or(path))
}

/// The trees to bind, by their real paths, parents first; a tree inside another tree that
/// is bound as openly is left to it. `/proc` is mounted anew instead.
fn binds(spec: &LaunchSpec) -> Vec<(PathBuf, bool)> {
    let real = |paths: &[Vec<u8>], writable: bool| {
        paths
            .iter()
            .filter_map(|p| spec::path(p).canonicalize().ok())
            .filter(|p| !p.starts_with("/proc") && !p.starts_with("/dev"))
            .map(move |p| (p, writable))
            .collect::<Vec<_>>()
    };
    let mut all = real(&spec.read, false);
    all.extend(real(&spec.write, true));
    all.sort_by_key(|(p, _)| p.components().count());
    let mut kept: Vec<(PathBuf, bool)> = Vec::new();
    for (path, writable) in all {
        let covered = kept
            .iter()
            .any(|(k, kw)| path.starts_with(k) && (*kw || !writable));
        if !covered {
            kept.push((path, writable));
        }
    }
    kept
}

/// Binds `source` at the same path in `root`, read-only unless `writable` (keeping the
/// flags the kernel locks on a mount made in a user namespace).
fn bind(root: &Path, source: &Path, writable: bool) -> Result<(), String> {
    let none = None::<&str>;
    let Ok(meta) = std::fs::metadata(source) else {
        return Ok(());
    };
    let target = inside(root, source);
    let made = if meta.is_dir() {
        std::fs::create_dir_all(&target)
    } else {
        target
            .parent()
            .map_or(Ok(()), std::fs::create_dir_all)
            .and_then(|()| std::fs::File::create(&target).map(drop))
    };
    made.map_err(|e| format!("mount namespace: a place for {}: {e}", source.display()))?;
    mount(
        Some(source),
        &target,
        none,
        MsFlags::MS_BIND | MsFlags::MS_REC,
        none,
    )
    .map_err(|e| format!("mount namespace: binding {}: {e}", source.display()))?;
    if writable {
        return Ok(());
    }
    let locked = nix::sys::statvfs::statvfs(&target)
        .map(|s| locked_flags(s.flags()))
        .map_err(|e| format!("mount namespace: the flags of {}: {e}", source.display()))?;
    mount(
        none,
        &target,
        none,
        MsFlags::MS_BIND | MsFlags::MS_REMOUNT | MsFlags::MS_RDONLY | locked,
        none,
    )
    .map_err(|e| format!("mount namespace: {} read-only: {e}", source.display()))
}

/// The flags of a mount that a remount in a user namespace must keep.
fn locked_flags(flags: nix::sys::statvfs::FsFlags) -> MsFlags {
    use nix::sys::statvfs::FsFlags;
    [
        (FsFlags::ST_NOSUID, MsFlags::MS_NOSUID),
        (FsFlags::ST_NODEV, MsFlags::MS_NODEV),
        (FsFlags::ST_NOEXEC, MsFlags::MS_NOEXEC),
        (FsFlags::ST_NOATIME, MsFlags::MS_NOATIME),
        (FsFlags::ST_NODIRATIME, MsFlags::MS_NODIRATIME),
        (FsFlags::ST_RELATIME, MsFlags::MS_RELATIME),
    ]
    .into_iter()
    .filter(|(st, _)| flags.contains(*st))
    .fold(MsFlags::empty(), |all, (_, ms)| all | ms)
}

/// Hides `path` (already inside the new root): a directory under an empty read-only tmpfs,
/// a file under `/dev/null`. A link is left: whoever opens it opens its target, which is
/// judged on its own.
fn mask(path: &Path) -> Result<(), String> {
    let none = None::<&str>;
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        return Ok(());
    };
    let result = if meta.is_dir() {
        mount(
            Some("tmpfs"),
            path,
            Some("tmpfs"),
            MsFlags::MS_NOSUID | MsFlags::MS_NODEV | MsFlags::MS_NOEXEC | MsFlags::MS_RDONLY,
            Some("size=4k,mode=000"),
        )
    } else if meta.is_file() {
        mount(Some("/dev/null"), path, none, MsFlags::MS_BIND, none)
    } else {
        return Ok(());
    };
    result.map_err(|e| format!("mount namespace: hiding {}: {e}", path.display()))
}

/// Restricts this process, and everything it starts, to the spec's trees (Landlock, the read
/// trees from `rules`, opened from `spec`) and takes away the system calls that would undo the
/// sandbox (seccomp). `no_new_privs` is set.
pub(crate) fn restrict(spec: &LaunchSpec, rules: &CallRules) -> Result<(), String> {
    rules.restrict(&spec.write, &spec.devices)?;
    seccomp()
}

fn existing(paths: &[Vec<u8>]) -> Vec<PathBuf> {
    paths
        .iter()
        .map(|p| spec::path(p))
        .filter(|p| p.exists())
        .collect()
}

/// What a sandboxed process may read, opened once: a warm sandbox's first process keeps them
/// for every call it starts (see [`CallRules::restrict`]).
pub(crate) struct CallRules {
    read: Vec<(PathFd, BitFlags<AccessFs>)>,
}

impl CallRules {
    /// Opens the trees of `spec` that calls may read.
    pub(crate) fn open(spec: &LaunchSpec) -> Self {
        let read = AccessFs::from_read(LANDLOCK_ABI);
        let read = existing(&spec.read)
            .into_iter()
            .filter_map(|path| {
                let access = if path.is_dir() {
                    read
                } else {
                    read & !AccessFs::ReadDir
                };
                Some((PathFd::new(path).ok()?, access))
            })
            .collect();
        Self { read }
    }

    /// Restricts this thread, and what it starts, with one more Landlock layer, where it
    /// reads only the opened trees and `write`, writes only `write` and `devices`, and sends no
    /// signal and reaches no abstract Unix socket beyond its own domain; `no_new_privs` is set.
    /// The helper's inner stage does this once for the whole sandbox; a warm sandbox's thread
    /// serving a call does it again before it starts the call's command (see the `spawner`
    /// module), so that each call has a domain of its own: no other call's `TMPDIR`, no signal
    /// to another call's processes.
    pub(crate) fn restrict(&self, write: &[Vec<u8>], devices: &[Vec<u8>]) -> Result<(), String> {
        let err = |e: landlock::RulesetError| format!("Landlock: {e}");
        let all = AccessFs::from_all(LANDLOCK_ABI);
        let status =
            Ruleset::default()
                .set_compatibility(CompatLevel::BestEffort)
                .handle_access(all)
                .map_err(err)?
                .scope(Scope::Signal | Scope::AbstractUnixSocket)
                .map_err(err)?
                .create()
                .map_err(err)?
                .add_rules(self.read.iter().map(|(fd, access)| {
                    Ok::<_, landlock::RulesetError>(PathBeneath::new(fd, *access))
                }))
                .map_err(err)?
                .add_rules(path_beneath_rules(existing(devices), all))
                .map_err(err)?
                .add_rules(path_beneath_rules(existing(write), all))
                .map_err(err)?
                .restrict_self()
                .map_err(err)?;
        if status.ruleset == RulesetStatus::NotEnforced {
            return Err("Landlock is not enabled in this kernel (Linux 5.13 or newer, with `landlock` in the `lsm=` list)".to_owned());
        }
        if !status.no_new_privs {
            return Err("no_new_privs could not be set".to_owned());
        }
        Ok(())
    }
}

/// What the kernel says of Landlock, learnt by restricting this (throw-away) process with an
/// empty ruleset: the kernel answers only to a process that restricts itself.
pub(crate) fn landlock_status() -> String {
    use landlock::LandlockStatus;
    let status = Ruleset::default()
        .handle_access(AccessFs::from_all(ABI::V1))
        .and_then(|ruleset| ruleset.create())
        .and_then(|ruleset| ruleset.restrict_self());
    match status.map(|s| s.landlock) {
        Ok(LandlockStatus::Available {
            effective_abi,
            kernel_abi: Some(kernel),
        }) => format!("ABI {kernel} (used as {effective_abi})"),
        Ok(LandlockStatus::Available { effective_abi, .. }) => format!("ABI {effective_abi}"),
        Ok(LandlockStatus::NotEnabled) => {
            "built in but not enabled (add landlock to the kernel's lsm= list)".to_owned()
        }
        Ok(LandlockStatus::NotImplemented) => "not in this kernel (Linux 5.13+)".to_owned(),
        Err(e) => format!("unknown ({e})"),
    }
}

/// System calls a sandboxed process never makes: mounting, namespaces, kernel modules and
/// keyrings, BPF, perf, reboot, swap, file handles that bypass paths.
const DENIED: &[libc::c_long] = &[
    libc::SYS_mount,
    libc::SYS_umount2,
    libc::SYS_pivot_root,
    libc::SYS_chroot,
    libc::SYS_unshare,
    libc::SYS_setns,
    libc::SYS_open_tree,
    libc::SYS_move_mount,
    libc::SYS_fsopen,
    libc::SYS_fsconfig,
    libc::SYS_fsmount,
    libc::SYS_fspick,
    libc::SYS_mount_setattr,
    libc::SYS_bpf,
    libc::SYS_keyctl,
    libc::SYS_add_key,
    libc::SYS_request_key,
    libc::SYS_init_module,
    libc::SYS_finit_module,
    libc::SYS_delete_module,
    libc::SYS_kexec_load,
    libc::SYS_kexec_file_load,
    libc::SYS_reboot,
    libc::SYS_swapon,
    libc::SYS_swapoff,
    libc::SYS_acct,
    libc::SYS_quotactl,
    libc::SYS_open_by_handle_at,
    libc::SYS_name_to_handle_at,
    libc::SYS_perf_event_open,
    libc::SYS_userfaultfd,
    libc::SYS_syslog,
    libc::SYS_settimeofday,
    libc::SYS_clock_settime,
    libc::SYS_clock_adjtime,
    libc::SYS_adjtimex,
];

/// The `clone` flags that make namespaces.
const NAMESPACE_FLAGS: &[libc::c_int] = &[
    libc::CLONE_NEWUSER,
    libc::CLONE_NEWNS,
    libc::CLONE_NEWPID,
    libc::CLONE_NEWNET,
    libc::CLONE_NEWIPC,
    libc::CLONE_NEWUTS,
    libc::CLONE_NEWCGROUP,
];

fn seccomp() -> Result<(), String> {
    fn err(e: impl std::fmt::Display) -> String {
        format!("seccomp: {e}")
    }
    let arch = TargetArch::try_from(std::env::consts::ARCH)
        .map_err(|e| format!("seccomp: no filter for {}: {e}", std::env::consts::ARCH))?;
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> =
        DENIED.iter().map(|&call| (call, Vec::new())).collect();
    // `clone` is checked by its flags (its first argument on every architecture we build for).
    let clone_rules = NAMESPACE_FLAGS
        .iter()
        .map(|&flag| {
            let flag = u64::from(flag.unsigned_abs());
            SeccompCondition::new(
                0,
                SeccompCmpArgLen::Qword,
                SeccompCmpOp::MaskedEq(flag),
                flag,
            )
            .and_then(|condition| SeccompRule::new(vec![condition]))
        })
        .collect::<Result<Vec<_>, _>>()
        .map_err(err)?;
    rules.insert(libc::SYS_clone, clone_rules);
    let denied = errno_filter(rules, libc::EPERM, arch).map_err(err)?;
    // `clone3` passes its flags in memory, where a filter cannot look: it answers ENOSYS, and
    // the C library falls back to `clone`, whose flags are checked above.
    let clone3 = BTreeMap::from([(libc::SYS_clone3, Vec::new())]);
    let clone3 = errno_filter(clone3, libc::ENOSYS, arch).map_err(err)?;
    seccompiler::apply_filter(&denied).map_err(err)?;
    seccompiler::apply_filter(&clone3).map_err(err)
}

fn errno_filter(
    rules: BTreeMap<i64, Vec<SeccompRule>>,
    errno: libc::c_int,
    arch: TargetArch,
) -> Result<BpfProgram, seccompiler::Error> {
    let filter = SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(errno.unsigned_abs()),
        arch,
    )?;
    Ok(BpfProgram::try_from(filter)?)
}
