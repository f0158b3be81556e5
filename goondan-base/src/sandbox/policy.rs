//! What a sandboxed process may touch: [`SandboxPolicy`], checked when it is made.

use std::path::{Component, Path, PathBuf};
use std::str::FromStr;
use std::sync::Arc;

use super::limits::kind;
use crate::http_fetch::HttpPolicy;

use super::limits::{LimitError, Limits};

/// How much a sandboxed process may do.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum SandboxMode {
    /// Read the workdir, the system and the programs on `PATH`; write only a private `TMPDIR`.
    ReadOnly,
    /// Like [`SandboxMode::ReadOnly`], and write in the workdir too (the default).
    #[default]
    Workspace,
    /// No sandbox: the process can do whatever the host user can. Only where a bundle or a
    /// program says so.
    Off,
}

impl SandboxMode {
    /// The mode's name as a bundle and `--sandbox` spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::ReadOnly => "read-only",
            Self::Workspace => "workspace",
            Self::Off => "off",
        }
    }
}

impl FromStr for SandboxMode {
    type Err = PolicyError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "read-only" => Ok(Self::ReadOnly),
            "workspace" => Ok(Self::Workspace),
            "off" => Ok(Self::Off),
            other => Err(PolicyError::Mode(other.chars().take(64).collect())),
        }
    }
}

impl std::fmt::Display for SandboxMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A policy that cannot be used. Nothing runs under it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PolicyError {
    /// The mode is not one of `read-only`, `workspace`, `off`.
    #[error("`{0}` is not a sandbox mode (read-only, workspace or off)")]
    Mode(String),
    /// A path is relative, empty, or climbs with `..`.
    #[error(
        "the sandbox path `{0}` must be absolute (or start with `~/`) and must not contain `..`"
    )]
    NotAbsolute(String),
    /// A path would open the whole file system.
    #[error("the sandbox path `{0}` would open the whole file system")]
    Root(String),
    /// A path the policy opens would open a path that is always out of reach.
    #[error("the sandbox path `{path}` would open `{denied}`, which stays out of reach")]
    OpensDenied {
        /// The path the policy names.
        path: String,
        /// The path kept out of reach (the state directory, the bundle).
        denied: String,
    },
    /// An environment variable name that cannot be one.
    #[error("`{0}` is not an environment variable name")]
    EnvName(String),
    /// A network allow-list entry that is not a host name (`crates.io`), a pattern for a
    /// domain's subdomains (`*.github.com`) or `*` (any name).
    #[error(
        "`{0}` cannot be in the sandbox's network allow-list: write a host name (`crates.io`), \
         `*.` and a domain (`*.github.com`), or `*` for any name; addresses are never allowed"
    )]
    Host(String),
    /// A bundle's `policy.sandbox` that is not a mode or a map of `mode`, `read`, `write`,
    /// `env`, `network`.
    #[error("policy.sandbox: {0}")]
    Bundle(String),
    /// A bundle's `policy.sandbox.limits` that cannot be used.
    #[error("policy.sandbox.limits: {0}")]
    Limits(#[from] LimitError),
}

/// Where a sandboxed process may read and write, which hosts it may reach through the
/// sandbox's proxy, and which environment it keeps.
///
/// ```
/// use goondan_base::sandbox::{SandboxMode, SandboxPolicy};
///
/// let policy = SandboxPolicy::default().read("~/.cargo/registry")?.env("RUST_LOG")?;
/// assert_eq!(policy.mode, SandboxMode::Workspace);
/// assert!(policy.read_paths()[0].ends_with(".cargo/registry"));
/// # Ok::<(), goondan_base::sandbox::PolicyError>(())
/// ```
#[derive(Debug, Clone, Default)]
pub struct SandboxPolicy {
    /// How much the process may do (default [`SandboxMode::Workspace`]).
    pub mode: SandboxMode,
    read: Vec<PathBuf>,
    write: Vec<PathBuf>,
    deny: Vec<PathBuf>,
    env: Vec<String>,
    network: Vec<HostPattern>,
    addresses: Option<Arc<HttpPolicy>>,
    no_escalation: bool,
    helper: Option<PathBuf>,
    limits: Limits,
}

impl SandboxPolicy {
    /// A policy of `mode` with nothing else opened.
    pub fn new(mode: SandboxMode) -> Self {
        Self {
            mode,
            ..Self::default()
        }
    }

    /// No sandbox at all.
    pub fn off() -> Self {
        Self::new(SandboxMode::Off)
    }

    /// Whether processes run confined.
    pub fn is_on(&self) -> bool {
        self.mode != SandboxMode::Off
    }

    /// Also lets the process read `path` (absolute, or `~/` for the home directory) and what
    /// is beneath it.
    pub fn read(mut self, path: impl AsRef<str>) -> Result<Self, PolicyError> {
        let path = self.opening(path.as_ref())?;
        self.read.push(path);
        Ok(self)
    }

    /// Also lets the process write `path` and what is beneath it.
    pub fn write(mut self, path: impl AsRef<str>) -> Result<Self, PolicyError> {
        let path = self.opening(path.as_ref())?;
        self.write.push(path);
        Ok(self)
    }

    /// Keeps `path` out of reach even when it lies in a tree the policy opens (a program puts
    /// its state directory and its bundle here). Earlier and later openings of it are refused.
    pub fn deny(mut self, path: impl AsRef<Path>) -> Result<Self, PolicyError> {
        let raw = path.as_ref().to_string_lossy().into_owned();
        let path = absolute(&raw)?;
        for opened in self.read.iter().chain(&self.write) {
            if opened.starts_with(&path) {
                return Err(PolicyError::OpensDenied {
                    path: opened.display().to_string(),
                    denied: path.display().to_string(),
                });
            }
        }
        self.deny.push(path);
        Ok(self)
    }

    /// Also passes the host's environment variable `name` to the process (`*` at the end
    /// matches any rest: `MY_APP_*`).
    pub fn env(mut self, name: impl Into<String>) -> Result<Self, PolicyError> {
        let name = name.into();
        let body = name.strip_suffix('*').unwrap_or(&name);
        let valid = !body.is_empty()
            && body.len() <= 256
            && body.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
            && !body.as_bytes()[0].is_ascii_digit();
        if !valid {
            return Err(PolicyError::EnvName(name.chars().take(64).collect()));
        }
        self.env.push(name);
        Ok(self)
    }

    /// Lets the process reach `host` (a name, `*.domain` for any of its subdomains, or `*` for
    /// any name: the public internet) through the sandbox's proxy, the only way out of its network namespace. The proxy checks each
    /// connection as `http-fetch` checks a URL: the name must be allowed, and every address it
    /// resolves to must be public (see [`SandboxPolicy::address_rules`]).
    ///
    /// ```
    /// use goondan_base::sandbox::SandboxPolicy;
    ///
    /// let policy = SandboxPolicy::default().allow_host("crates.io")?.allow_host("*.github.com")?;
    /// assert!(policy.allows_host("api.github.com"));
    /// assert!(!policy.allows_host("github.com.evil.test"));
    /// assert!(SandboxPolicy::default().allow_host("10.0.0.1").is_err());
    /// # Ok::<(), goondan_base::sandbox::PolicyError>(())
    /// ```
    pub fn allow_host(mut self, host: impl AsRef<str>) -> Result<Self, PolicyError> {
        self.network.push(HostPattern::parse(host.as_ref())?);
        Ok(self)
    }

    /// The address rules the proxy applies after a name is allowed, `http-fetch`'s
    /// ([`HttpPolicy`]: its resolver, its exempt hosts, whether loopback is allowed). By
    /// default, [`HttpPolicy::default`]: the system resolver, public addresses only.
    #[must_use]
    pub fn address_rules(mut self, rules: HttpPolicy) -> Self {
        self.addresses = Some(Arc::new(rules));
        self
    }

    /// Whether the network allow-list lets the process reach `host` (a lowercase name).
    pub fn allows_host(&self, host: &str) -> bool {
        self.network.iter().any(|pattern| pattern.matches(host))
    }

    /// Whether the process has a way out at all (a network allow-list).
    pub fn has_network(&self) -> bool {
        !self.network.is_empty()
    }

    /// The entries of the network allow-list, as written.
    pub fn allowed_hosts(&self) -> impl Iterator<Item = String> + '_ {
        self.network.iter().map(HostPattern::to_string)
    }

    /// The address rules of [`SandboxPolicy::address_rules`].
    pub(crate) fn addresses(&self) -> Arc<HttpPolicy> {
        self.addresses.clone().unwrap_or_default()
    }

    /// Forbids calls to run outside the sandbox even with a person's approval (a bundle's
    /// `escalate: false`). By default a call may ask (`bash`'s `escalate` argument), and runs
    /// outside only when a person approves it.
    #[must_use]
    pub fn forbid_escalation(mut self) -> Self {
        self.no_escalation = true;
        self
    }

    /// Whether a call a person approves may run outside the sandbox.
    pub fn allows_escalation(&self) -> bool {
        !self.no_escalation
    }

    /// Runs the sandbox through the helper program at `path` instead of looking for one (see
    /// [`crate::sandbox::helper`]).
    #[must_use]
    pub fn helper(mut self, path: impl Into<PathBuf>) -> Self {
        self.helper = Some(path.into());
        self
    }

    /// The paths opened for reading besides the defaults.
    pub fn read_paths(&self) -> &[PathBuf] {
        &self.read
    }

    /// The paths opened for writing besides the workdir and the private `TMPDIR`.
    pub fn write_paths(&self) -> &[PathBuf] {
        &self.write
    }

    /// The paths kept out of reach wherever they lie.
    pub fn denied_paths(&self) -> &[PathBuf] {
        &self.deny
    }

    /// The host environment names passed on besides the defaults.
    pub fn env_names(&self) -> &[String] {
        &self.env
    }

    /// The helper program named by [`SandboxPolicy::helper`].
    pub fn helper_path(&self) -> Option<&Path> {
        self.helper.as_deref()
    }

    /// Bounds each call's resources by `limits` (with the sandbox off too: they are the call's
    /// cgroup's). The limits of a tool under this policy and of its calls stay within them.
    #[must_use]
    pub fn with_limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// The bound on each call's resources (default [`Limits::default`]).
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// The policy a bundle's `policy.sandbox` says: a mode (`workspace`, `read-only`, `off`),
    /// or a map with `mode`, lists `read`, `write` (paths) and `env` (names), `network` with its
    /// `allow` list (host names, `*.domain`, `*`), `escalate` (`false` forbids running outside
    /// the sandbox even with a person's approval), and `limits` (see [`Limits::from_bundle`]).
    ///
    /// ```
    /// use goondan_base::sandbox::{SandboxMode, SandboxPolicy};
    /// use serde_json::json;
    ///
    /// let policy = SandboxPolicy::from_bundle(&json!({"mode": "read-only", "read": ["/opt/data"]}))?;
    /// assert_eq!(policy.mode, SandboxMode::ReadOnly);
    /// let online = SandboxPolicy::from_bundle(&json!({"network": {"allow": ["crates.io"]}}))?;
    /// assert!(online.allows_host("crates.io"));
    /// assert!(SandboxPolicy::from_bundle(&json!({"mod": "off"})).is_err());
    /// # Ok::<(), goondan_base::sandbox::PolicyError>(())
    /// ```
    pub fn from_bundle(value: &serde_json::Value) -> Result<Self, PolicyError> {
        use serde_json::Value;
        let bad = |why: String| PolicyError::Bundle(why);
        let map = match value {
            Value::String(mode) => return Ok(Self::new(mode.parse()?)),
            Value::Object(map) => map,
            other => {
                return Err(bad(format!(
                    "expected a mode or a map, found {}",
                    kind(other)
                )));
            }
        };
        let mut policy = Self::default();
        for (key, value) in map {
            let list = || -> Result<Vec<&str>, PolicyError> {
                let items = value
                    .as_array()
                    .ok_or_else(|| bad(format!("`{key}` must be a list of strings")))?;
                if items.len() > 256 {
                    return Err(bad(format!("`{key}` has more than 256 entries")));
                }
                items
                    .iter()
                    .map(|v| {
                        v.as_str()
                            .ok_or_else(|| bad(format!("`{key}` must be a list of strings")))
                    })
                    .collect()
            };
            match key.as_str() {
                "mode" => {
                    let mode = value
                        .as_str()
                        .ok_or_else(|| bad("`mode` must be a string".to_owned()))?;
                    policy.mode = mode.parse()?;
                }
                "read" => {
                    for path in list()? {
                        policy = policy.read(path)?;
                    }
                }
                "write" => {
                    for path in list()? {
                        policy = policy.write(path)?;
                    }
                }
                "env" => {
                    for name in list()? {
                        policy = policy.env(name)?;
                    }
                }
                "escalate" => match value {
                    serde_json::Value::Bool(true) => {}
                    serde_json::Value::Bool(false) => policy = policy.forbid_escalation(),
                    _ => return Err(bad("`escalate` must be true or false".to_owned())),
                },
                "network" => {
                    let allow = network_allow(value)?;
                    for host in allow {
                        policy = policy.allow_host(host)?;
                    }
                }
                "limits" => policy.limits = Limits::from_bundle(value)?,
                other => {
                    return Err(bad(format!(
                        "unknown key `{}` (mode, read, write, env, network, escalate, limits)",
                        other.chars().take(64).collect::<String>()
                    )));
                }
            }
        }
        Ok(policy)
    }

    /// Checks a path to open: absolute, not `/`, not a path kept out of reach nor beneath one.
    /// (A parent of one may be opened: the path kept out of reach is hidden inside it.)
    fn opening(&self, raw: &str) -> Result<PathBuf, PolicyError> {
        let path = absolute(raw)?;
        if path.parent().is_none() {
            return Err(PolicyError::Root(raw.chars().take(256).collect()));
        }
        if let Some(denied) = self.deny.iter().find(|denied| path.starts_with(denied)) {
            return Err(PolicyError::OpensDenied {
                path: path.display().to_string(),
                denied: denied.display().to_string(),
            });
        }
        Ok(path)
    }
}

/// The `allow` list of a bundle's `network: {allow: [...]}`.
fn network_allow(value: &serde_json::Value) -> Result<Vec<&str>, PolicyError> {
    let bad = |why: &str| PolicyError::Bundle(format!("`network` {why}"));
    let map = value.as_object().ok_or_else(|| {
        bad(&format!(
            "must be a map with `allow`, found {}",
            kind(value)
        ))
    })?;
    if let Some(key) = map.keys().find(|key| key.as_str() != "allow") {
        let key: String = key.chars().take(64).collect();
        return Err(bad(&format!("has an unknown key `{key}` (allow)")));
    }
    let Some(allow) = map.get("allow") else {
        return Ok(Vec::new());
    };
    let items = allow
        .as_array()
        .ok_or_else(|| bad("`allow` must be a list of host names"))?;
    if items.len() > 256 {
        return Err(bad("`allow` has more than 256 entries"));
    }
    items
        .iter()
        .map(|v| {
            v.as_str()
                .ok_or_else(|| bad("`allow` must be a list of host names"))
        })
        .collect()
}

/// An entry of the network allow-list: a host name, `*.` and a domain for its subdomains, or
/// `*` for any name (an empty `name`).
#[derive(Debug, Clone, PartialEq, Eq)]
struct HostPattern {
    /// Lowercase, without a trailing dot.
    name: String,
    subdomains: bool,
}

impl HostPattern {
    fn parse(raw: &str) -> Result<Self, PolicyError> {
        if raw == "*" {
            return Ok(Self {
                name: String::new(),
                subdomains: true,
            });
        }
        let refuse = || PolicyError::Host(raw.chars().take(64).collect());
        let (rest, subdomains) = match raw.strip_prefix("*.") {
            Some(rest) => (rest, true),
            None => (raw, false),
        };
        let name = rest.strip_suffix('.').unwrap_or(rest).to_ascii_lowercase();
        let label_ok = |label: &str| {
            (1..=63).contains(&label.len())
                && label
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-')
                && !label.starts_with('-')
                && !label.ends_with('-')
        };
        let labels: Vec<&str> = name.split('.').collect();
        // A name whose last label is all digits would be read as an IPv4 address.
        let numeric = labels
            .last()
            .is_some_and(|last| last.bytes().all(|b| b.is_ascii_digit()));
        if name.len() > 253 || !labels.iter().all(|l| label_ok(l)) || numeric {
            return Err(refuse());
        }
        Ok(Self { name, subdomains })
    }

    fn matches(&self, host: &str) -> bool {
        let host = host.strip_suffix('.').unwrap_or(host);
        if self.name.is_empty() {
            return !host.is_empty();
        }
        if self.subdomains {
            host.len() > self.name.len() + 1
                && host.ends_with(self.name.as_str())
                && host.as_bytes()[host.len() - self.name.len() - 1] == b'.'
        } else {
            host == self.name
        }
    }
}

impl std::fmt::Display for HostPattern {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match (self.subdomains, self.name.is_empty()) {
            (true, true) => f.write_str("*"),
            (true, false) => write!(f, "*.{}", self.name),
            (false, _) => f.write_str(&self.name),
        }
    }
}

/// `raw` as an absolute path: `~` and `~/...` against `HOME`; relative paths and `..` refused.
fn absolute(raw: &str) -> Result<PathBuf, PolicyError> {
    let refuse = || PolicyError::NotAbsolute(raw.chars().take(256).collect());
    let path = match raw.strip_prefix('~') {
        Some(rest) if rest.is_empty() || rest.starts_with('/') => {
            let home = std::env::var_os("HOME").ok_or_else(refuse)?;
            PathBuf::from(home).join(rest.trim_start_matches('/'))
        }
        _ => PathBuf::from(raw),
    };
    let climbs = path
        .components()
        .any(|c| matches!(c, Component::ParentDir | Component::CurDir));
    if !path.is_absolute() || climbs || raw.contains('\0') {
        return Err(refuse());
    }
    Ok(path.components().collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sbx_policy_paths_are_absolute_and_never_open_what_is_denied() {
        let policy = SandboxPolicy::default();
        for bad in ["relative", "", "/a/../etc", "./x", "~user/x"] {
            assert!(
                matches!(policy.clone().read(bad), Err(PolicyError::NotAbsolute(_))),
                "{bad}"
            );
        }
        assert!(matches!(
            policy.clone().write("/"),
            Err(PolicyError::Root(_))
        ));
        let policy = policy.deny("/srv/state").unwrap();
        for opens in ["/srv/state", "/srv/state/journal"] {
            assert!(
                matches!(
                    policy.clone().write(opens),
                    Err(PolicyError::OpensDenied { .. })
                ),
                "{opens}"
            );
        }
        assert!(policy.clone().read("/srv/other").is_ok());
        // A parent may be opened: the state directory is hidden inside it.
        assert!(policy.clone().write("/srv").is_ok());
        let opened = SandboxPolicy::default().read("/srv/state/x").unwrap();
        assert!(matches!(
            opened.deny("/srv/state"),
            Err(PolicyError::OpensDenied { .. })
        ));
        assert_eq!(
            policy.read("/a//b/").unwrap().read_paths(),
            [PathBuf::from("/a/b")]
        );
    }

    #[test]
    fn sbx_a_bundles_policy_is_read_and_bad_input_is_refused() {
        use serde_json::json;
        let policy = SandboxPolicy::from_bundle(&json!({
            "mode": "workspace", "read": ["/opt/data"], "write": ["/srv/out"], "env": ["RUST_LOG"]
        }))
        .unwrap();
        assert_eq!(policy.read_paths(), [PathBuf::from("/opt/data")]);
        assert_eq!(policy.write_paths(), [PathBuf::from("/srv/out")]);
        assert_eq!(policy.env_names(), ["RUST_LOG"]);
        assert!(policy.allows_escalation());
        let strict = SandboxPolicy::from_bundle(&json!({"escalate": false})).unwrap();
        assert!(!strict.allows_escalation());
        assert_eq!(
            SandboxPolicy::from_bundle(&json!("off")).unwrap().mode,
            SandboxMode::Off
        );
        let many: Vec<String> = (0..300).map(|i| format!("/p{i}")).collect();
        for bad in [
            json!(3),
            json!("none"),
            json!({"mode": 1}),
            json!({"read": "/x"}),
            json!({"read": ["relative"]}),
            json!({"write": ["/"]}),
            json!({"env": ["A-B"]}),
            json!({"network": {"allow": ["10.0.0.1"]}}),
            json!({"escalate": "yes"}),
            json!({"network": {"allow": "crates.io"}}),
            json!({"network": {"deny": ["x"]}}),
            json!({"network": ["crates.io"]}),
            json!({"network": {"allow": ["*x"]}}),
            json!({"network": {"allow": ["a".repeat(1_000_000)]}}),
            json!({"read": many}),
            json!({"mode": "x".repeat(1_000_000)}),
        ] {
            let err = SandboxPolicy::from_bundle(&bad).unwrap_err();
            assert!(err.to_string().len() < 400, "a bounded message: {err}");
        }
    }

    #[test]
    fn sbx_network_allow_list_holds_host_names_only() {
        let policy = SandboxPolicy::default();
        assert!(!policy.has_network());
        let policy = policy
            .allow_host("Crates.IO.")
            .unwrap()
            .allow_host("*.github.com")
            .unwrap();
        assert!(policy.has_network());
        assert!(policy.allows_host("crates.io"));
        assert!(policy.allows_host("api.github.com"));
        assert!(policy.allows_host("a.b.github.com"));
        for refused in ["github.com", "evilgithub.com", "crates.io.evil.test", "io"] {
            assert!(!policy.allows_host(refused), "{refused}");
        }
        assert_eq!(
            policy.allowed_hosts().collect::<Vec<_>>(),
            ["crates.io", "*.github.com"]
        );
        let any = SandboxPolicy::default().allow_host("*").unwrap();
        assert!(any.allows_host("example.com") && any.allows_host("localhost"));
        assert_eq!(any.allowed_hosts().collect::<Vec<_>>(), ["*"]);
        for bad in [
            "",
            "**",
            "*.",
            "10.0.0.1",
            "[::1]",
            "::1",
            "a..b",
            "-a.com",
            "a b.com",
            "http://crates.io",
            "crates.io:443",
            "*.*.com",
            "0x7f.1",
            "2130706433",
            &"a".repeat(64),
        ] {
            assert!(
                matches!(policy.clone().allow_host(bad), Err(PolicyError::Host(_))),
                "{bad}"
            );
        }
    }

    #[test]
    fn sbx_a_bundles_policy_sandbox_limits_are_read() {
        use serde_json::json;
        let policy = SandboxPolicy::from_bundle(&json!({
            "mode": "off", "limits": {"memory": "512MiB", "processes": 256, "cpu": 1.5}
        }))
        .unwrap();
        assert_eq!(policy.mode, SandboxMode::Off);
        let limits = policy.limits();
        assert_eq!(
            (limits.memory(), limits.processes(), limits.cpu()),
            (512 << 20, 256, Some(1.5))
        );
        let plain = SandboxPolicy::from_bundle(&json!("workspace")).unwrap();
        assert_eq!(plain.limits(), &Limits::default());
        for bad in [
            json!({"limits": {"memory": 0}}),
            json!({"limits": ["512MiB"]}),
            json!({"limits": {"nproc": 1}}),
            json!({"limits": {"processes": 1e300}}),
        ] {
            let err = SandboxPolicy::from_bundle(&bad).unwrap_err();
            assert!(matches!(err, PolicyError::Limits(_)), "{bad}: {err}");
            assert!(
                err.to_string().starts_with("policy.sandbox.limits: "),
                "{err}"
            );
        }
    }

    #[test]
    fn sbx_policy_modes_and_env_names_are_checked() {
        assert_eq!("read-only".parse(), Ok(SandboxMode::ReadOnly));
        assert_eq!("off".parse(), Ok(SandboxMode::Off));
        assert!(matches!("none".parse::<SandboxMode>(), Err(PolicyError::Mode(m)) if m == "none"));
        let policy = SandboxPolicy::default();
        for good in ["RUST_LOG", "MY_APP_*", "_X1"] {
            assert!(policy.clone().env(good).is_ok(), "{good}");
        }
        for bad in ["", "*", "1X", "A-B", "A=B", &"X".repeat(300)] {
            assert!(
                matches!(policy.clone().env(bad), Err(PolicyError::EnvName(_))),
                "{bad}"
            );
        }
    }
}
