//! What this machine supports ([`check`]): the kernel's parts one by one, and a real command
//! run in the sandbox, for `goondan sandbox check`.

use std::ffi::OsString;
use std::path::Path;
use std::process::{Command, Stdio};

use serde::Serialize;

use super::launch::{Target, locate_helper, prepare};
use super::limits::CgroupVersion;
use super::limits::Resource;
use super::policy::{SandboxMode, SandboxPolicy};

/// What this machine can enforce, and whether a command really runs in the sandbox.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Support {
    /// The operating system.
    pub os: String,
    /// Landlock: its ABI, or why it is missing.
    pub landlock: String,
    /// User namespaces: how many may be made, or why none.
    pub user_namespaces: String,
    /// Whether seccomp filters are available.
    pub seccomp: bool,
    /// The helper program, or why none was found.
    pub helper: String,
    /// Each resource limit: the policy's, and whether and how this machine enforces it.
    pub limits: Vec<LimitSupport>,
    /// `None` when sandboxed calls can run here (`true` ran in the sandbox, and every limit
    /// the policy sets can be enforced); else what stops them.
    pub probe: Option<String>,
}

/// Whether this machine can enforce one resource limit, and how.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LimitSupport {
    /// The limit.
    pub limit: Resource,
    /// The policy's value (`4 GiB`, `4096`, `none`).
    pub value: String,
    /// Whether the policy sets it (else it is a default, enforced where this machine can).
    pub set: bool,
    /// The cgroup version that enforces it here, if any.
    pub cgroup: Option<CgroupVersion>,
    /// Where calls' cgroups for it are made, or why it cannot be enforced.
    pub detail: String,
}

impl Support {
    /// Whether sandboxed calls can run here.
    pub fn ready(&self) -> bool {
        self.probe.is_none()
    }

    /// What a mode enforces, in a few lines.
    pub fn enforces(mode: SandboxMode) -> &'static [&'static str] {
        match mode {
            SandboxMode::Workspace => &[
                "files: write the workdir and a private TMPDIR; read them, the system's programs and libraries, PATH and its toolchains; nothing else exists",
                "network: none (a network namespace of its own)",
                "processes: only its own (PID namespace); no mount, namespaces, bpf, keyctl, modules (seccomp); no_new_privs",
                "environment: an allow-list",
            ],
            SandboxMode::ReadOnly => {
                &["as workspace, but the workdir is read-only: only the private TMPDIR is written"]
            }
            SandboxMode::Off => &["nothing: commands can do whatever this user can"],
        }
    }
}

/// Looks at what this machine supports and runs `/bin/sh -c true` under `policy` in `workdir`.
/// `enforcement` says where each resource limit is enforced (the cgroup version and the
/// directory the calls' cgroups are made under), or why it cannot be: `bash`'s
/// `goondan_base::bash::enforcement`.
pub fn check(
    policy: &SandboxPolicy,
    workdir: &Path,
    enforcement: impl Fn(Resource) -> Result<(CgroupVersion, std::path::PathBuf), String>,
) -> Support {
    let helper = locate_helper(policy);
    let limits = limits(policy, enforcement);
    let unenforced = limits
        .iter()
        .find(|l| l.set && l.cgroup.is_none() && policy.is_on())
        .map(|l| {
            format!(
                "the {} limit ({}) cannot be enforced: {}",
                l.limit, l.value, l.detail
            )
        });
    Support {
        os: std::env::consts::OS.to_owned(),
        landlock: landlock(helper.as_deref().ok()),
        user_namespaces: user_namespaces(),
        seccomp: seccomp(),
        helper: helper.map_or_else(|e| e.to_string(), |p| p.display().to_string()),
        limits,
        probe: probe(policy, workdir).err().or(unenforced),
    }
}

/// The policy's limits and how this machine enforces each.
fn limits(
    policy: &SandboxPolicy,
    enforcement: impl Fn(Resource) -> Result<(CgroupVersion, std::path::PathBuf), String>,
) -> Vec<LimitSupport> {
    let limits = policy.limits();
    Resource::ALL
        .into_iter()
        .map(|limit| {
            let (cgroup, detail) = match enforcement(limit) {
                Ok((version, base)) => (Some(version), format!("under {}", base.display())),
                Err(why) => (None, why),
            };
            LimitSupport {
                limit,
                value: limits.describe(limit),
                set: limits.is_set(limit),
                cgroup,
                detail,
            }
        })
        .collect()
}

/// What the helper says of Landlock (it restricts itself to find out).
fn landlock(helper: Option<&Path>) -> String {
    let Some(helper) = helper else {
        return "unknown (no helper program)".to_owned();
    };
    match Command::new(helper)
        .arg(super::helper::LANDLOCK_FLAG)
        .output()
    {
        Ok(out) if out.status.success() => String::from_utf8_lossy(&out.stdout).trim().to_owned(),
        Ok(out) => format!("unknown (the helper ended with {})", out.status),
        Err(e) => format!("unknown ({e})"),
    }
}

fn user_namespaces() -> String {
    let read = |file: &str| {
        std::fs::read_to_string(file)
            .ok()
            .map(|s| s.trim().to_owned())
    };
    if read("/proc/sys/kernel/unprivileged_userns_clone").as_deref() == Some("0") {
        return "off for users other than root (kernel.unprivileged_userns_clone = 0)".to_owned();
    }
    match read("/proc/sys/user/max_user_namespaces") {
        Some(n) if n == "0" => "off (user.max_user_namespaces = 0)".to_owned(),
        Some(n) => format!("up to {n}"),
        None => "unknown (no /proc/sys/user/max_user_namespaces)".to_owned(),
    }
}

fn seccomp() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .is_ok_and(|status| status.lines().any(|l| l.starts_with("Seccomp_filters:")))
}

/// Runs `/bin/sh -c true` in the sandbox, as a call would.
fn probe(policy: &SandboxPolicy, workdir: &Path) -> Result<(), String> {
    if !policy.is_on() {
        return Ok(());
    }
    let args = [OsString::from("-c"), OsString::from("true")];
    let env = super::sandbox_env(policy, std::env::vars_os());
    let target = Target {
        program: "/bin/sh".as_ref(),
        args: &args,
        cwd: workdir,
        env,
        workdir,
        stdin: false,
    };
    let prepared = prepare(policy, target).map_err(|e| e.to_string())?;
    let output = Command::new(&prepared.program)
        .args(&prepared.args)
        .env_clear()
        .envs(prepared.env.iter().map(|(k, v)| (k, v)))
        .current_dir(workdir)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("starting {}: {e}", prepared.program.display()))?;
    if let Some(what) = prepared.private.unavailable() {
        return Err(what);
    }
    if output.status.success() {
        Ok(())
    } else {
        Err(format!(
            "`true` ended with {} ({})",
            output.status,
            String::from_utf8_lossy(&output.stderr).trim()
        ))
    }
}
