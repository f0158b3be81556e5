//! The sandbox of what a model runs: every process a base tool starts for a model (`bash`'s
//! commands and scripts) is confined by the kernel.
//!
//! In the default mode, [`SandboxMode::Workspace`], a sandboxed process
//!
//! - **writes** only in the workdir and a private `TMPDIR` (removed after the call);
//! - **reads** the workdir, the system's programs and libraries (`/usr`, `/bin`, `/lib*`,
//!   `/etc` without `/etc/shadow`, SSH host keys and `/etc/ssl/private`), the directories of
//!   `PATH` and the toolchains on it installed under the home directory (pyenv, rustup, nvm,
//!   without their credential files), and what the policy names; the rest of the home
//!   directory, the rest of `/tmp`, `/run` and the program's state directory and bundle are out
//!   of reach (Landlock; secrets inside opened trees are hidden by mounts in a mount namespace
//!   of its own);
//! - has **no network**: its own network namespace, with no interface up (so no loopback
//!   service of the host, and no abstract Unix socket, is reachable; the host's path Unix
//!   sockets are outside the opened trees). With a network allow-list
//!   ([`SandboxPolicy::allow_host`], a bundle's `network: {allow: [...]}`), its one way out is
//!   an HTTP proxy of the host's that lets through only the allowed names, and only to
//!   addresses `http-fetch` would connect to (see [`proxy`](self#the-network-proxy));
//! - sees only **its own processes** (a PID namespace and a `/proc` of its own): it cannot
//!   signal, trace or read the environment of any other; it cannot mount, make namespaces, load
//!   modules, use `bpf`, `keyctl` and their kind (seccomp), gains no privilege through `exec`
//!   (`no_new_privs`), and as root it is root only of its own user namespace;
//! - gets an **environment allow-list** ([`DEFAULT_ENV_ALLOW`] and the policy's names), not the
//!   host's environment;
//! - stays within its **resource limits** ([`Limits`]: memory, processes, optionally CPU; the
//!   call's cgroup holds them, with the sandbox off too): past the memory or process limit, the
//!   call is ended with [`codes::LIMIT`].
//!
//! [`SandboxMode::ReadOnly`] writes nowhere but its `TMPDIR`; [`SandboxMode::Off`] is no
//! sandbox, and only a person turns it on (a bundle's `policy.sandbox: off`, `--sandbox off`,
//! [`SandboxPolicy::off`]).
//!
//! It **fails closed**: where the kernel lacks what the policy needs (no Landlock, no user
//! namespaces, not Linux, no cgroup controller for a limit the policy sets) or the helper
//! program is missing, the call is refused with [`codes::UNAVAILABLE`] naming what is missing;
//! nothing runs unconfined in silence.
//!
//! # The network proxy
//!
//! The process's clients find the proxy through `http_proxy`, `https_proxy` and `all_proxy`
//! (`http://127.0.0.1:PORT`, on the sandbox's own loopback; one proxy per call). It serves `CONNECT host:port`
//! and plain `http://` requests; the name must be on the allow-list (an address never is),
//! every address it resolves to must pass `http-fetch`'s rules
//! ([`SandboxPolicy::address_rules`]), and the connection goes to a checked address. A
//! refusal is a `403` whose body says why, and the call's result lists it. Nothing else
//! leaves: there is no other interface, and no DNS.
//!
//! The work is done by a helper program of ours that confines itself and then runs the
//! command, so no `unsafe` code runs between `fork` and `exec` (see [`helper`]). It is
//! `goondan-sandbox`, installed beside `goondan`, or any program that calls
//! [`serve_if_asked`] first in `main`.

mod check;
mod host;
mod launch;
mod limits;
mod policy;
mod proxy;
#[cfg(feature = "mcp")]
mod server;
mod spec;
mod warm;

#[cfg(target_os = "linux")]
mod confine;
pub mod helper;
#[cfg(target_os = "linux")]
mod netns;
#[cfg(target_os = "linux")]
mod spawner;

pub use self::check::{LimitSupport, Support, check};
pub use self::helper::serve_if_asked;
pub use self::host::{AlreadySet, host_policy, set_host_policy};
pub(crate) use self::launch::Target;
pub use self::launch::{HELPER_VAR, SandboxError, sandbox_env};
#[cfg(feature = "code-mode")]
pub(crate) use self::launch::{PrivateDir, prepare_sealed};
pub use self::limits::{
    CgroupVersion, DEFAULT_MEMORY, DEFAULT_PROCESSES, LimitError, Limits, LimitsInput, Resource,
    Size,
};
pub use self::policy::{PolicyError, SandboxMode, SandboxPolicy};
#[cfg(feature = "mcp")]
pub use self::server::ServerSandbox;
#[cfg(feature = "cli")]
pub(crate) use self::server::server_workdir;
pub(crate) use self::warm::{WarmCall, WarmProcess, WarmSandboxes};

/// Error codes of the sandbox.
pub mod codes {
    /// The sandbox cannot be set up on this host; the process did not run.
    pub const UNAVAILABLE: &str = "E_SANDBOX_UNAVAILABLE";
    /// The sandbox policy cannot be used (a relative path, a path kept out of reach).
    pub const POLICY: &str = "E_SANDBOX_POLICY";
    /// A call asked to run outside the sandbox, and the policy forbids it.
    pub const ESCALATION_FORBIDDEN: &str = "E_SANDBOX_ESCALATION_FORBIDDEN";
    /// A call asked to run outside the sandbox, and no person approved it.
    pub const ESCALATION_NOT_APPROVED: &str = "E_SANDBOX_ESCALATION_NOT_APPROVED";
    /// The call went past one of its resource limits (memory, processes) and was ended.
    pub const LIMIT: &str = "E_SANDBOX_LIMIT";
}

/// The host environment variables a sandboxed process gets (a `*` at the end matches any
/// rest): the locale, the terminal, the user and what the toolchains on `PATH` need to start.
pub const DEFAULT_ENV_ALLOW: &[&str] = &[
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "SHELL",
    "LANG",
    "LANGUAGE",
    "LC_*",
    "TERM",
    "COLORTERM",
    "NO_COLOR",
    "TZ",
    "PYENV_ROOT",
    "PYENV_VERSION",
    "PYENV_SHELL",
    "RUSTUP_HOME",
    "RUSTUP_TOOLCHAIN",
    "CARGO_HOME",
    "NVM_DIR",
    "NVM_BIN",
    "NVM_INC",
    "GOROOT",
    "GOPATH",
    "JAVA_HOME",
    "VIRTUAL_ENV",
];
