//! The host's part: from a policy and a command, the helper program to start and what it is
//! told ([`prepare`]); afterwards, what it reported ([`Prepared::unavailable`]).

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};

use super::policy::{PolicyError, SandboxMode, SandboxPolicy};
use super::proxy::{self, Proxy};
use super::spec::{self, LaunchSpec, Report, SPEC_VAR};
use super::{DEFAULT_ENV_ALLOW, codes, helper};
use goondan_runtime::ToolError;

/// The environment variable naming the helper program, for a program that neither serves as
/// its own helper nor has `goondan-sandbox` beside it or on `PATH`.
pub const HELPER_VAR: &str = "GOONDAN_SANDBOX_HELPER";
/// The helper program's name.
const HELPER_NAME: &str = "goondan-sandbox";

/// System trees a sandboxed process reads and runs programs from.
const SYSTEM_READ: &[&str] = &[
    "/usr",
    "/bin",
    "/sbin",
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    "/etc",
    "/proc",
    "/sys/devices/system/cpu",
];
/// Device files a sandboxed process reads and writes (bound into its `/dev`; `/dev/shm` is a
/// private tmpfs there).
const DEVICES: &[&str] = &[
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/random",
    "/dev/urandom",
    "/dev/shm",
];
/// Secrets inside the system trees, hidden.
const SYSTEM_SECRETS: &[&str] = &[
    "/etc/shadow",
    "/etc/shadow-",
    "/etc/gshadow",
    "/etc/gshadow-",
    "/etc/ssl/private",
    "/etc/security/opasswd",
];
/// Files beside a toolchain that hold its user's credentials, hidden.
const TOOLCHAIN_SECRETS: &[&str] = &[
    "credentials",
    "credentials.toml",
    ".credentials.toml",
    ".netrc",
    ".pypirc",
    ".npmrc",
    "auth.json",
];

/// Why a process cannot run in the sandbox. It never runs unconfined instead.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SandboxError {
    /// This host cannot enforce the policy (no Landlock, no user namespaces, not Linux, no
    /// helper program): what is missing.
    #[error("the sandbox is not available here: {0}")]
    Unavailable(String),
    /// The policy cannot be used.
    #[error("the sandbox policy cannot be used: {0}")]
    Policy(#[from] PolicyError),
}

impl From<SandboxError> for ToolError {
    fn from(err: SandboxError) -> Self {
        match &err {
            SandboxError::Unavailable(_) => ToolError::new(err.to_string())
                .with_code(codes::UNAVAILABLE)
                .with_name("SandboxUnavailableError")
                .with_suggestion(
                    "`goondan sandbox check` says what this machine lacks; to run without the \
                     sandbox, a person sets `policy.sandbox: off` in the bundle, `--sandbox off`, \
                     or `SandboxPolicy::off()` in Rust",
                ),
            SandboxError::Policy(_) => ToolError::new(err.to_string())
                .with_code(codes::POLICY)
                .with_name("SandboxPolicyError")
                .with_suggestion("fix the sandbox policy's paths and names"),
        }
    }
}

/// What to run inside the sandbox.
#[derive(Debug, Clone)]
pub(crate) struct Target<'a> {
    pub(crate) program: &'a OsStr,
    pub(crate) args: &'a [OsString],
    pub(crate) cwd: &'a Path,
    /// The whole environment (see [`super::sandbox_env`]); `TMPDIR` is set here.
    pub(crate) env: Vec<(OsString, OsString)>,
    pub(crate) workdir: &'a Path,
    /// The command reads the host's stdin (an MCP server); else its stdin is `/dev/null`.
    pub(crate) stdin: bool,
}

/// A command made ready for the sandbox: the helper to start instead, with its one argument
/// and its environment, and the call's private directory.
#[derive(Debug)]
pub(crate) struct Prepared {
    pub(crate) program: PathBuf,
    pub(crate) args: Vec<OsString>,
    pub(crate) env: Vec<(OsString, OsString)>,
    pub(crate) private: PrivateDir,
}

/// A call's private part: the directory holding its `TMPDIR`, the helper's report and the new
/// root's mount point, and its network proxy when the policy has an allow-list; removed and
/// stopped when dropped, so kept until the call is over.
#[derive(Debug)]
pub(crate) struct PrivateDir {
    // Declared first: the proxy stops before its socket's directory goes.
    pub(super) proxy: Option<Proxy>,
    pub(super) dir: tempfile::TempDir,
}

impl PrivateDir {
    /// A new private directory, with a proxy for the sandbox listening in it when `proxy` is
    /// the policy of one (with a network allow-list).
    pub(super) fn new(proxy: Option<&SandboxPolicy>) -> Result<Self, SandboxError> {
        let dir = tempfile::Builder::new()
            .prefix("goondan-sandbox-")
            .tempdir()
            .map_err(|e| SandboxError::Unavailable(format!("a private directory: {e}")))?;
        let proxy = match proxy.filter(|policy| policy.has_network()) {
            Some(policy) => {
                let socket = dir.path().join("proxy");
                Some(Proxy::start(&socket, policy).map_err(SandboxError::Unavailable)?)
            }
            None => None,
        };
        Ok(Self { proxy, dir })
    }

    /// What the helper found missing, when it could not set the sandbox up (the command did
    /// not run).
    pub(crate) fn unavailable(&self) -> Option<String> {
        match Report::read_from(&self.report()) {
            Some(Report::Unavailable(what)) => Some(what),
            _ => None,
        }
    }

    pub(super) fn report(&self) -> PathBuf {
        self.dir.path().join("report")
    }
}

/// Prepares `target` to run under `policy` (which must be on), in a sandbox of its own.
pub(crate) fn prepare(
    policy: &SandboxPolicy,
    target: Target<'_>,
) -> Result<Prepared, SandboxError> {
    let program = locate_helper(policy)?;
    let private = PrivateDir::new(Some(policy))?;
    let launch = launch_spec(policy, target, &private)?;
    Ok(Prepared {
        program,
        args: vec![helper::HELPER_FLAG.into()],
        env: vec![(SPEC_VAR.into(), spec_json(&launch)?.into())],
        private,
    })
}

/// Prepares `program args` to run under `policy` (which must be on) in a sandbox of its own
/// that writes nowhere, not even a `TMPDIR`, with an empty environment, its stdin and stdout
/// the host's: a code worker's (`CodeSandbox`). Its workdir is an empty directory of
/// the call's private one.
#[cfg(feature = "code-mode")]
pub(crate) fn prepare_sealed(
    policy: &SandboxPolicy,
    program: &OsStr,
    args: &[OsString],
) -> Result<Prepared, SandboxError> {
    let helper = locate_helper(policy)?;
    let private = PrivateDir::new(None)?;
    let workdir = private.dir.path().join("work");
    std::fs::create_dir(&workdir)
        .map_err(|e| SandboxError::Unavailable(format!("a private workdir: {e}")))?;
    let target = Target {
        program,
        args,
        cwd: &workdir,
        env: Vec::new(),
        workdir: &workdir,
        stdin: true,
    };
    let mut launch = launch_spec(policy, target, &private)?;
    launch.write.clear();
    launch.env.clear();
    Ok(Prepared {
        program: helper,
        args: vec![helper::HELPER_FLAG.into()],
        env: vec![(SPEC_VAR.into(), spec_json(&launch)?.into())],
        private,
    })
}

/// The spec of a sandbox of its own for `target` under `policy`, in `private`.
pub(super) fn launch_spec(
    policy: &SandboxPolicy,
    target: Target<'_>,
    private: &PrivateDir,
) -> Result<LaunchSpec, SandboxError> {
    if cfg!(not(target_os = "linux")) {
        return Err(SandboxError::Unavailable(format!(
            "it needs Linux (Landlock, seccomp, namespaces); this is {}",
            std::env::consts::OS
        )));
    }
    let workdir = target.workdir.canonicalize().map_err(|e| {
        SandboxError::Unavailable(format!("the workdir {}: {e}", target.workdir.display()))
    })?;
    let tmp = private.dir.path().join("tmp");
    let root = private.dir.path().join("root");
    std::fs::create_dir(&tmp)
        .and_then(|()| std::fs::create_dir(&root))
        .map_err(|e| SandboxError::Unavailable(format!("a private TMPDIR: {e}")))?;

    let path_var = target
        .env
        .iter()
        .find(|(name, _)| name == "PATH")
        .map(|(_, value)| value.clone());
    let toolchains = toolchain_roots(path_var.as_deref());
    let mut read: Vec<PathBuf> = SYSTEM_READ.iter().map(PathBuf::from).collect();
    read.extend(path_dirs(path_var.as_deref()));
    read.extend(toolchains.iter().cloned());
    read.extend(policy.read_paths().iter().cloned());
    let mut write = vec![tmp.clone()];
    match policy.mode {
        SandboxMode::Workspace => write.push(workdir.clone()),
        SandboxMode::ReadOnly | SandboxMode::Off => read.push(workdir.clone()),
    }
    write.extend(policy.write_paths().iter().cloned());

    let mut mask: Vec<PathBuf> = SYSTEM_SECRETS.iter().map(PathBuf::from).collect();
    mask.extend(ssh_host_keys());
    for root in &toolchains {
        mask.extend(TOOLCHAIN_SECRETS.iter().map(|name| root.join(name)));
    }
    for denied in policy.denied_paths() {
        if denied == &workdir {
            return Err(PolicyError::OpensDenied {
                path: workdir.display().to_string(),
                denied: denied.display().to_string(),
            }
            .into());
        }
        mask.push(denied.clone());
    }
    // Only what lies inside an opened tree needs hiding; the ruleset keeps out the rest.
    let opened: Vec<&PathBuf> = read.iter().chain(&write).collect();
    mask.retain(|m| opened.iter().any(|root| m.starts_with(root) && m != *root));

    let env = command_env(
        target.env,
        &tmp,
        private.proxy.is_some().then_some(proxy::PORT),
    );
    Ok(LaunchSpec {
        program: spec::bytes(target.program),
        args: target.args.iter().map(spec::bytes).collect(),
        cwd: canonical_cwd(target.cwd)?,
        env,
        read: read.iter().map(spec::bytes).collect(),
        write: write.iter().map(spec::bytes).collect(),
        devices: DEVICES.iter().map(spec::bytes).collect(),
        mask: mask.iter().map(spec::bytes).collect(),
        root: spec::bytes(&root),
        report: spec::bytes(private.report()),
        proxy: private
            .proxy
            .is_some()
            .then(|| spec::bytes(private.dir.path().join("proxy"))),
        stdin: target.stdin,
        loopback: policy.has_network(),
        warm: false,
    })
}

/// The working directory as the spec holds it: canonical, since a `..` would pass through
/// directories the new root does not have.
pub(super) fn canonical_cwd(cwd: &Path) -> Result<Vec<u8>, SandboxError> {
    cwd.canonicalize()
        .map(spec::bytes)
        .map_err(|e| SandboxError::Unavailable(format!("the working directory: {e}")))
}

/// The command's environment: `env` with its own `TMPDIR`, and the variables naming the proxy
/// when one listens on `proxy_port` (whatever `env` said of proxies goes).
pub(super) fn command_env(
    mut env: Vec<(OsString, OsString)>,
    tmp: &Path,
    proxy_port: Option<u16>,
) -> Vec<(Vec<u8>, Vec<u8>)> {
    env.retain(|(name, _)| {
        name != "TMPDIR"
            && !proxy::PROXY_VARS
                .iter()
                .chain(proxy::NO_PROXY_VARS)
                .any(|var| name == var)
    });
    env.push(("TMPDIR".into(), tmp.as_os_str().to_owned()));
    if let Some(port) = proxy_port {
        let url = proxy::url(port);
        env.extend(
            proxy::PROXY_VARS
                .iter()
                .map(|var| (OsString::from(var), OsString::from(&url))),
        );
    }
    env.iter()
        .map(|(k, v)| (spec::bytes(k), spec::bytes(v)))
        .collect()
}

pub(super) fn spec_json(launch: &LaunchSpec) -> Result<String, SandboxError> {
    launch
        .to_json()
        .map_err(|e| SandboxError::Unavailable(format!("the helper's spec: {e}")))
}

/// The helper program: the policy's, [`HELPER_VAR`]'s, this program when it serves as its own
/// ([`helper::serve_if_asked`]), else `goondan-sandbox` beside this program, one directory up
/// (cargo's `deps/` and `examples/`), or on `PATH`.
pub(crate) fn locate_helper(policy: &SandboxPolicy) -> Result<PathBuf, SandboxError> {
    let named = policy
        .helper_path()
        .map(Path::to_path_buf)
        .or_else(|| std::env::var_os(HELPER_VAR).map(PathBuf::from));
    if let Some(named) = named {
        return if is_program(&named) {
            Ok(named)
        } else {
            Err(SandboxError::Unavailable(format!(
                "the helper program {} is not an executable file",
                named.display()
            )))
        };
    }
    let exe = std::env::current_exe().ok();
    if helper::serves_itself()
        && let Some(exe) = &exe
    {
        return Ok(exe.clone());
    }
    let beside = exe.iter().flat_map(|exe| {
        let dir = exe.parent();
        [dir, dir.and_then(Path::parent)]
            .into_iter()
            .flatten()
            .map(|dir| dir.to_path_buf())
            .collect::<Vec<_>>()
    });
    let on_path = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .unwrap_or_default();
    beside
        .chain(on_path)
        .map(|dir| dir.join(HELPER_NAME))
        .find(|candidate| is_program(candidate))
        .ok_or_else(|| {
            SandboxError::Unavailable(format!(
                "its helper program `{HELPER_NAME}` was not found beside this program or on PATH \
                 (install it with goondan-base, name it in {HELPER_VAR}, or let the program \
                 serve as its own helper: goondan_base::sandbox::serve_if_asked)"
            ))
        })
}

fn is_program(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// The absolute directories of `PATH`.
fn path_dirs(path: Option<&OsStr>) -> Vec<PathBuf> {
    path.map(|p| {
        std::env::split_paths(p)
            .filter(|dir| dir.is_absolute())
            .collect()
    })
    .unwrap_or_default()
}

/// The toolchains installed under the home directory whose programs are on `PATH` (pyenv,
/// rustup, nvm): the directory holding each such `bin` or `shims`, and rustup's home beside
/// cargo's. Their programs need the whole tree to start.
fn toolchain_roots(path: Option<&OsStr>) -> Vec<PathBuf> {
    let Some(home) = std::env::var_os("HOME").map(PathBuf::from) else {
        return Vec::new();
    };
    let mut roots = Vec::new();
    for dir in path_dirs(path) {
        if !dir.starts_with(&home) || dir == home {
            continue;
        }
        let named = |name: &str| dir.file_name().is_some_and(|n| n == name);
        let root = if named("bin") || named("shims") {
            dir.parent().map(Path::to_path_buf)
        } else {
            Some(dir.clone())
        };
        let Some(root) = root.filter(|root| root != &home) else {
            continue;
        };
        if root.ends_with(".cargo") {
            let rustup =
                std::env::var_os("RUSTUP_HOME").map_or_else(|| home.join(".rustup"), PathBuf::from);
            roots.push(rustup);
        }
        roots.push(root);
    }
    roots.sort();
    roots.dedup();
    roots
}

/// The SSH host's private keys (`/etc/ssh/ssh_host_*_key`).
fn ssh_host_keys() -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir("/etc/ssh") else {
        return Vec::new();
    };
    entries
        .flatten()
        .map(|entry| entry.path())
        .filter(|path| {
            path.file_name()
                .and_then(OsStr::to_str)
                .is_some_and(|name| name.starts_with("ssh_host_") && name.ends_with("_key"))
        })
        .collect()
}

/// The host environment a sandboxed process gets: the names of [`DEFAULT_ENV_ALLOW`] and the
/// policy's (a `*` at the end of a name matches any rest), nothing else.
pub fn sandbox_env(
    policy: &SandboxPolicy,
    host: impl IntoIterator<Item = (OsString, OsString)>,
) -> Vec<(OsString, OsString)> {
    let allowed = |name: &str| {
        DEFAULT_ENV_ALLOW
            .iter()
            .copied()
            .chain(policy.env_names().iter().map(String::as_str))
            .any(|pattern| match pattern.strip_suffix('*') {
                Some(prefix) => name.starts_with(prefix),
                None => name == pattern,
            })
    };
    host.into_iter()
        .filter(|(name, _)| name.to_str().is_some_and(allowed))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sbx_env_is_an_allow_list() {
        let policy = SandboxPolicy::default().env("MY_APP_*").unwrap();
        let host = [
            ("PATH", "/bin"),
            ("HOME", "/h"),
            ("LC_ALL", "C"),
            ("GITHUB_TOKEN", "t"),
            ("SOME_NEW_SECRET_NAME", "s"),
            ("MY_APP_MODE", "x"),
            ("TMPDIR", "/tmp"),
        ]
        .map(|(k, v)| (OsString::from(k), OsString::from(v)));
        let kept: Vec<_> = sandbox_env(&policy, host)
            .into_iter()
            .map(|(k, _)| k)
            .collect();
        assert_eq!(kept, ["PATH", "HOME", "LC_ALL", "MY_APP_MODE"]);
    }

    #[test]
    fn sbx_toolchains_on_path_under_home_are_opened_whole() {
        let Some(home) = std::env::var_os("HOME").map(PathBuf::from) else {
            return;
        };
        let path = std::env::join_paths([
            home.join(".pyenv/shims"),
            home.join(".cargo/bin"),
            home.clone(),
            PathBuf::from("/usr/bin"),
        ])
        .unwrap();
        let roots = toolchain_roots(Some(&path));
        assert!(roots.contains(&home.join(".pyenv")), "{roots:?}");
        assert!(roots.contains(&home.join(".cargo")), "{roots:?}");
        assert!(!roots.contains(&home), "{roots:?}");
        assert!(!roots.iter().any(|r| r.starts_with("/usr")), "{roots:?}");
    }
}
