//! `bash`: run shell commands and scripts in the workdir (BASE-1, CTX-3).
//!
//! - `bash__exec {command, cwd?, timeoutMs? = 30000, env?, limits?, escalate?}` runs
//!   `sh -c command`.
//! - `bash__script {path, args?, timeoutMs?, env?, limits?, escalate?}` runs a script file of
//!   the workdir.
//!
//! Each call runs in the sandbox ([`crate::sandbox`]) of [`BashPolicy::sandbox`] (by default: write
//! only in the workdir and a private `TMPDIR`, no network but through the sandbox's proxy to the
//! hosts the policy allows, no other process, an environment allow-list); a call with
//! `escalate: {reason}` runs outside it only when a person approved it (see [`Escalation`]). Each
//! runs in its own cgroup v2 (see [`containment`] for why, and for the process-group
//! fallback where no writable cgroup exists), so no descendant outlives the call, not even one
//! that called `setsid` or forked twice. The call's cgroups hold its resource limits
//! ([`Bash::limits`], lowered by the call's `limits`): past its memory or process limit the call
//! is ended at once with [`sandbox::codes::LIMIT`]. On timeout or cancellation everything the command
//! started gets SIGTERM, then SIGKILL after a grace period; what a command that exited left
//! behind gets the same. Either way the call returns as soon as everything is gone, with all
//! the output written before. stdout and stderr are read concurrently and capped (head and tail
//! kept). A non-zero exit is data, not an error. The child's environment is the sandbox's allow-list of
//! the host's (with the sandbox off: the host's minus a deny list of secret-looking names), plus
//! `env`. `cwd` and `path` are confined to the workdir.

mod cgroup;
pub mod containment;
mod process;

use cap_std::fs::PermissionsExt;
use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

pub(crate) use self::cgroup::CgroupPool;
pub use self::cgroup::{CgroupVersion, enforcement};
use self::containment::Containment;
pub use self::containment::{ContainmentKind, end_own_calls, end_stale_calls};
use self::process::{Finished, Invocation};
use crate::sandbox::{self, Limits, LimitsInput, Resource, SandboxPolicy};
use crate::workspace::{RelPath, absolute_workdir, blocking, is_escape, open_workdir, outside};
use goondan_runtime::{ToolContext, ToolError, tool};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Error codes of `bash`.
pub mod codes {
    /// The command could not be started.
    pub const SPAWN: &str = "E_BASH_SPAWN";
    /// `cwd` is not a directory of the workdir.
    pub const CWD: &str = "E_BASH_CWD";
    /// The script does not exist or is not a file.
    pub const SCRIPT: &str = "E_BASH_SCRIPT";
    /// An `env` entry has an invalid name or value.
    pub const ENV: &str = "E_BASH_ENV";
    /// The call was cancelled; every process it started was killed.
    pub const CANCELLED: &str = "E_BASH_CANCELLED";
    /// The call's `limits` cannot be used: malformed, zero, or above the tool's.
    pub const LIMITS: &str = "E_BASH_LIMITS";
}

/// Environment variable names stripped from the child by default (`*` matches any run of
/// characters, case-insensitively).
pub const DEFAULT_ENV_DENY_LIST: &[&str] = &[
    "*_TOKEN",
    "*_TOKEN_*",
    "*_SECRET",
    "*_SECRET_*",
    "*_KEY",
    "*_KEY_ID",
    "*_PAT",
    "*PASSWORD*",
    "*PASSWD*",
    "*CREDENTIAL*",
    "*_DSN",
    "DATABASE_URL",
    "AWS_*",
    "AZURE_*",
    "SSH_AUTH_SOCK",
    "GPG_AGENT_INFO",
];

/// What `bash` may do.
#[derive(Debug, Clone)]
pub struct BashPolicy {
    /// The shell, run as `shell -c command` (default `/bin/sh`).
    pub shell: PathBuf,
    /// Timeout when the call sets none (default 30 s).
    pub default_timeout: Duration,
    /// The largest timeout a call may ask for (default 10 min).
    pub max_timeout: Duration,
    /// Between SIGTERM and SIGKILL (default 2 s).
    pub kill_grace: Duration,
    /// Bytes kept of each of stdout and stderr, half from the head, half from the tail
    /// (default 64 KiB).
    pub max_output_bytes: usize,
    /// The sandbox every command and script runs in (default: [`SandboxPolicy::default`], the
    /// workspace mode).
    pub sandbox: SandboxPolicy,
    /// With the sandbox off: names of host environment variables the child does not get (`*`
    /// wildcards, case-insensitive; default [`DEFAULT_ENV_DENY_LIST`]). A sandboxed child gets
    /// the sandbox's allow-list instead.
    pub env_deny_list: Vec<String>,
    /// Run each call in its own cgroup v2 when one is writable (default `true`). Without one,
    /// or when `false`, a call is held by its process group and an environment marker: see
    /// [`containment`]. When `false`, no resource limit is enforced either (a limit that is
    /// set then refuses sandboxed calls).
    pub use_cgroup: bool,
    /// This tool's resource limits for each call (default `None`: the sandbox policy's,
    /// [`SandboxPolicy::limits`]). Each stays within the sandbox policy's: a higher one gets
    /// the policy's. A call may lower them with its `limits` argument.
    pub limits: Option<Limits>,
}

impl Default for BashPolicy {
    fn default() -> Self {
        Self {
            shell: PathBuf::from("/bin/sh"),
            default_timeout: Duration::from_secs(30),
            max_timeout: Duration::from_secs(600),
            kill_grace: Duration::from_secs(2),
            max_output_bytes: 64 * 1024,
            sandbox: SandboxPolicy::default(),
            env_deny_list: DEFAULT_ENV_DENY_LIST
                .iter()
                .map(|s| (*s).to_owned())
                .collect(),
            use_cgroup: true,
            limits: None,
        }
    }
}

impl BashPolicy {
    /// Also strips variables matching `pattern`.
    #[must_use]
    pub fn deny_env(mut self, pattern: impl Into<String>) -> Self {
        self.env_deny_list.push(pattern.into());
        self
    }

    /// The host environment `parent` minus the denied names (names that are not UTF-8 are
    /// dropped too).
    pub fn child_env(
        &self,
        parent: impl IntoIterator<Item = (std::ffi::OsString, std::ffi::OsString)>,
    ) -> Vec<(std::ffi::OsString, std::ffi::OsString)> {
        parent
            .into_iter()
            .filter(|(name, _)| name.to_str().is_some_and(|n| !self.is_denied(n)))
            .collect()
    }

    /// Whether the host variable `name` is stripped.
    pub fn is_denied(&self, name: &str) -> bool {
        let name = name.to_ascii_uppercase();
        self.env_deny_list
            .iter()
            .any(|pattern| wildcard_match(&pattern.to_ascii_uppercase(), &name))
    }
}

/// `*` matches any run of characters; both sides are upper-cased by the caller, so that ASCII
/// letters match in either case.
fn wildcard_match(pattern: &str, text: &str) -> bool {
    let mut parts = pattern.split('*');
    let first = parts.next().unwrap_or_default();
    let Some(mut rest) = text.strip_prefix(first) else {
        return false;
    };
    let Some(last) = parts.next_back() else {
        // No `*`: the whole text is the pattern.
        return rest.is_empty();
    };
    for part in parts {
        match rest.find(part) {
            Some(i) => rest = &rest[i + part.len()..],
            None => return false,
        }
    }
    rest.len() >= last.len() && rest.ends_with(last)
}

/// A call's request to run outside the sandbox ([`ExecInput::escalate`]).
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Escalation {
    /// Why the command needs more than the sandbox allows, for the person who approves it.
    #[schemars(length(min = 1, max = 2000))]
    pub reason: String,
}

/// Input of `bash__exec`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ExecInput {
    /// The shell command, run with `sh -c`.
    pub command: String,
    /// Working directory, relative to the workdir (default: the workdir).
    #[serde(default)]
    pub cwd: Option<String>,
    /// Milliseconds before the command is killed (default 30000).
    #[serde(default)]
    pub timeout_ms: Option<u64>,
    /// Extra environment variables.
    #[serde(default)]
    pub env: Option<BTreeMap<String, String>>,
    /// Run outside the sandbox, with the host user's full power. The call always waits for a
    /// person's approval first (who reads `reason`), and is refused where nobody can approve it
    /// or the sandbox policy forbids it. Ask only for what the sandbox stops and the task needs.
    #[serde(default)]
    pub escalate: Option<Escalation>,
    /// Lower resource limits for this call (default: the tool's).
    #[serde(default)]
    pub limits: Option<LimitsInput>,
}

/// Input of `bash__script`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ScriptInput {
    /// The script, relative to the workdir. Run directly when executable, else with `sh`.
    pub path: String,
    /// Arguments passed to the script.
    #[serde(default)]
    pub args: Option<Vec<String>>,
    /// The interpreter, run as `shell path args...` (default: run the script directly when it
    /// is executable, else with the configured shell).
    #[serde(default)]
    pub shell: Option<String>,
    /// Milliseconds before the script is killed (default 30000).
    #[serde(default)]
    pub timeout_ms: Option<u64>,
    /// Extra environment variables.
    #[serde(default)]
    pub env: Option<BTreeMap<String, String>>,
    /// Run outside the sandbox, with the host user's full power. The call always waits for a
    /// person's approval first (who reads `reason`), and is refused where nobody can approve it
    /// or the sandbox policy forbids it. Ask only for what the sandbox stops and the task needs.
    #[serde(default)]
    pub escalate: Option<Escalation>,
    /// Lower resource limits for this call (default: the tool's).
    #[serde(default)]
    pub limits: Option<LimitsInput>,
}

/// What a command did. A non-zero `exitCode` is data, not an error.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ExecOutput {
    /// The command (`exec`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// The script (`script`), relative to the workdir.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// The working directory, relative to the workdir.
    pub cwd: String,
    /// Wall time.
    pub duration_ms: u64,
    /// Standard output (head and tail when truncated).
    pub stdout: String,
    /// Standard error (head and tail when truncated).
    pub stderr: String,
    /// Bytes written to stdout in all.
    pub stdout_bytes: u64,
    /// Bytes written to stderr in all.
    pub stderr_bytes: u64,
    /// The exit code; `null` when a signal ended the process.
    pub exit_code: Option<i32>,
    /// The signal that ended the process (`SIGKILL`, ...).
    pub signal: Option<String>,
    /// Whether the timeout killed the command.
    pub timed_out: bool,
    /// Whether stdout or stderr was cut.
    pub truncated: bool,
    /// What the sandbox's network proxy refused during the call (a connection to a host not
    /// on the allow-list, or to a private address), each a sentence; empty when nothing was.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub network_refused: Vec<String>,
    /// The call ran outside the sandbox, as a person approved (`escalate`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub outside_sandbox: bool,
}

/// The `bash` tool. `Bash::new(BashPolicy::default()).into_tool()` gives the resource.
#[derive(Debug, Clone)]
pub struct Bash {
    policy: Arc<BashPolicy>,
    /// Empty per-call cgroups kept for the next calls (shared by clones).
    cgroups: Arc<CgroupPool>,
    /// The warm sandboxes the calls run in, one per workdir (shared by clones).
    warm: Arc<sandbox::WarmSandboxes>,
}

impl Default for Bash {
    fn default() -> Self {
        Self::new(BashPolicy::default())
    }
}

impl Bash {
    /// The resource name.
    pub const NAME: &'static str = "bash";
    /// How many characters of an error message the model sees.
    pub const ERROR_MESSAGE_LIMIT: usize = 1200;

    /// The policy.
    pub fn policy(&self) -> &BashPolicy {
        &self.policy
    }

    /// The sandbox calls run in: the host program's ([`sandbox::set_host_policy`]) when it
    /// set one, else the policy's.
    pub fn sandbox(&self) -> &SandboxPolicy {
        sandbox::host_policy().unwrap_or(&self.policy.sandbox)
    }

    /// Each call's resource limits unless it lowers them: the policy's
    /// ([`BashPolicy::limits`]) within the sandbox's ([`SandboxPolicy::limits`]).
    pub fn limits(&self) -> Limits {
        let bound = *self.sandbox().limits();
        self.policy.limits.map_or(bound, |own| own.within(&bound))
    }
}

/// Shell commands and scripts, run in the workdir.
#[tool(name = "bash", error_message_limit = 1200)]
impl Bash {
    /// A `bash` with `policy`.
    pub fn new(policy: BashPolicy) -> Self {
        Self {
            policy: Arc::new(policy),
            cgroups: Arc::default(),
            warm: Arc::default(),
        }
    }

    /// Run a shell command (`sh -c`) in the workdir. Returns stdout, stderr and the exit code;
    /// a non-zero exit is not an error.
    #[export(destructive, open_world)]
    pub async fn exec(&self, ctx: &ToolContext, input: ExecInput) -> Result<ExecOutput, ToolError> {
        let (cwd_rel, cwd_abs) = self.resolve_cwd(ctx, input.cwd.as_deref()).await?;
        let invocation = Invocation {
            program: self.policy.shell.clone().into_os_string(),
            args: vec!["-c".into(), input.command.clone().into()],
            cwd: cwd_abs,
            env: self.child_env(input.env.as_ref())?,
        };
        let asked = (input.limits.as_ref(), input.escalate.as_ref());
        let mut out = self.run(ctx, invocation, input.timeout_ms, asked).await?;
        out.command = Some(input.command);
        out.cwd = cwd_rel;
        Ok(out)
    }

    /// Run a script file of the workdir with arguments (directly when executable, else with
    /// `sh`).
    #[export(destructive, open_world)]
    pub async fn script(
        &self,
        ctx: &ToolContext,
        input: ScriptInput,
    ) -> Result<ExecOutput, ToolError> {
        let workdir = absolute_workdir(ctx.workdir())?;
        let (rel, abs, executable) = resolve_script(&workdir, &input.path).await?;
        let script_args = input
            .args
            .unwrap_or_default()
            .into_iter()
            .map(OsString::from);
        let (program, args) = match input.shell {
            None if executable => (abs.into_os_string(), script_args.collect()),
            shell => {
                let shell = shell.map_or_else(|| self.policy.shell.clone(), PathBuf::from);
                let args = std::iter::once(abs.into_os_string()).chain(script_args);
                (shell.into_os_string(), args.collect())
            }
        };
        let invocation = Invocation {
            program,
            args,
            cwd: workdir,
            env: self.child_env(input.env.as_ref())?,
        };
        let asked = (input.limits.as_ref(), input.escalate.as_ref());
        let mut out = self.run(ctx, invocation, input.timeout_ms, asked).await?;
        out.path = Some(rel);
        out.cwd = ".".to_owned();
        Ok(out)
    }
}

impl Bash {
    async fn run(
        &self,
        ctx: &ToolContext,
        invocation: Invocation,
        timeout_ms: Option<u64>,
        (asked, escalate): (Option<&LimitsInput>, Option<&Escalation>),
    ) -> Result<ExecOutput, ToolError> {
        let timeout = timeout_ms
            .map_or(self.policy.default_timeout, Duration::from_millis)
            .min(self.policy.max_timeout);
        let bounds = process::Bounds {
            timeout,
            grace: self.policy.kill_grace,
            max_output_bytes: self.policy.max_output_bytes,
        };
        let limits = self.call_limits(asked)?;
        let started = Instant::now();
        let call = self.sandboxed(ctx, &invocation, escalate).await?;
        let containment = Containment::new(
            self.policy.use_cgroup,
            limits,
            self.sandbox().is_on(),
            &self.cgroups,
        )
        .map_err(sandbox::SandboxError::Unavailable)?;
        let start = match &call {
            Some(call) => process::Start::Sandbox(call),
            None => process::Start::Here(invocation),
        };
        let finished = process::run(start, bounds, ctx.cancellation(), containment)
            .await
            .map_err(
                |err| match call.as_ref().and_then(sandbox::WarmCall::unavailable) {
                    Some(what) => sandbox::SandboxError::Unavailable(what).into(),
                    None => spawn_error(err),
                },
            )?;
        if let Some(resource) = finished.limit {
            return Err(limit_error(resource, &limits, &finished));
        }
        if finished.cancelled {
            return Err(ToolError::new(
                "the call was cancelled; every process the command started was killed",
            )
            .with_code(codes::CANCELLED)
            .with_name("CancelledError")
            .with_suggestion("run the command again if it is still needed"));
        }
        Ok(ExecOutput {
            command: None,
            path: None,
            cwd: String::new(),
            duration_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
            stdout: finished.stdout.text(),
            stderr: finished.stderr.text(),
            stdout_bytes: finished.stdout.total(),
            stderr_bytes: finished.stderr.total(),
            exit_code: finished.exit_code(),
            signal: finished.signal(),
            timed_out: finished.timed_out,
            truncated: finished.stdout.truncated() || finished.stderr.truncated(),
            network_refused: call
                .as_ref()
                .map(sandbox::WarmCall::refused)
                .unwrap_or_default(),
            outside_sandbox: self.sandbox().is_on() && call.is_none(),
        })
    }

    /// Where `invocation` runs: here with the sandbox off, or for a call a person approved to
    /// run outside it (`None`); else in the warm sandbox of the workdir, as the returned call
    /// (kept until the call is over).
    async fn sandboxed(
        &self,
        ctx: &ToolContext,
        invocation: &Invocation,
        escalate: Option<&Escalation>,
    ) -> Result<Option<sandbox::WarmCall>, ToolError> {
        let policy = self.sandbox();
        if !policy.is_on() {
            return Ok(None);
        }
        if escalate.is_some() {
            if !policy.allows_escalation() {
                return Err(ToolError::new(
                    "the sandbox policy forbids running outside the sandbox",
                )
                .with_code(sandbox::codes::ESCALATION_FORBIDDEN)
                .with_name("SandboxEscalationForbidden")
                .with_suggestion("run the command inside the sandbox, without `escalate`"));
            }
            if !ctx.approved_by_person() {
                return Err(ToolError::new(
                    "running outside the sandbox needs a person's approval, and nobody approved \
                     this call",
                )
                .with_code(sandbox::codes::ESCALATION_NOT_APPROVED)
                .with_name("SandboxEscalationNotApproved")
                .with_suggestion(
                    "run the command inside the sandbox, without `escalate`; only where a person \
                     can approve calls (goondan run, goondan approvals) can a call leave it",
                ));
            }
            tracing::warn!(
                target: "goondan::sandbox",
                tool_call_id = ctx.tool_call_id(),
                "a call a person approved runs outside the sandbox"
            );
            return Ok(None);
        }
        // A missing shell or script is refused as a direct spawn would refuse it.
        process::check_program(&invocation.program).map_err(spawn_error)?;
        let target = sandbox::Target {
            program: &invocation.program,
            args: &invocation.args,
            cwd: &invocation.cwd,
            env: invocation.env.clone(),
            workdir: ctx.workdir(),
            stdin: false,
        };
        Ok(Some(self.warm.call(policy, target).await?))
    }

    /// The limits of a call: the tool's ([`Bash::limits`]), lowered by the call's own.
    fn call_limits(&self, asked: Option<&LimitsInput>) -> Result<Limits, ToolError> {
        let tool = self.limits();
        let Some(asked) = asked else {
            return Ok(tool);
        };
        tool.lowered(asked).map_err(|err| {
            ToolError::new(err.to_string())
                .with_code(codes::LIMITS)
                .with_name("InvalidLimitsError")
                .with_suggestion(format!(
                    "a call may only lower this tool's limits (memory {}, processes {}, cpu {}); \
                     leave `limits` out to use them",
                    tool.describe(Resource::Memory),
                    tool.describe(Resource::Processes),
                    tool.describe(Resource::Cpu),
                ))
        })
    }

    /// The child's whole environment: the sandbox's allow-list of the host's (with the
    /// sandbox off, the host's minus the deny list), plus `extra`.
    fn child_env(
        &self,
        extra: Option<&BTreeMap<String, String>>,
    ) -> Result<Vec<(OsString, OsString)>, ToolError> {
        let host = std::env::vars_os();
        let sandbox = self.sandbox();
        let mut env = if sandbox.is_on() {
            sandbox::sandbox_env(sandbox, host)
        } else {
            self.policy.child_env(host)
        };
        for (name, value) in extra.into_iter().flatten() {
            if name.is_empty() || name.contains(['=', '\0']) || value.contains('\0') {
                return Err(ToolError::new(format!(
                    "the environment variable `{name}` is not valid"
                ))
                .with_code(codes::ENV)
                .with_name("InvalidEnvError")
                .with_suggestion(
                    "names must be non-empty without `=` or NUL; values without NUL",
                ));
            }
            env.push((name.into(), value.into()));
        }
        Ok(env)
    }

    async fn resolve_cwd(
        &self,
        ctx: &ToolContext,
        cwd: Option<&str>,
    ) -> Result<(String, PathBuf), ToolError> {
        let workdir = absolute_workdir(ctx.workdir())?;
        let Some(cwd) = cwd else {
            return Ok((".".to_owned(), workdir));
        };
        let rel = RelPath::parse(cwd)?;
        let raw = cwd.to_owned();
        blocking(move || {
            let dir = open_workdir(&workdir)?;
            // Opening through the capability proves the directory is inside (links included).
            let canonical = dir
                .open_dir(rel.as_path())
                .and_then(|_| dir.canonicalize(rel.as_path()))
                .map_err(|err| {
                    if is_escape(&err) {
                        outside(&raw)
                    } else {
                        ToolError::new(format!("`{raw}` is not a directory of the workdir: {err}"))
                            .with_code(codes::CWD)
                            .with_name("InvalidCwdError")
                            .with_suggestion(
                                "create it first (`mkdir -p`) or omit `cwd` to use the workdir",
                            )
                    }
                })?;
            Ok((rel.display(), workdir.join(canonical)))
        })
        .await
    }
}

/// A call ended for going past its `resource` limit, with the end of what it wrote.
fn limit_error(resource: Resource, limits: &Limits, finished: &Finished) -> ToolError {
    let (limit, what, name, suggestion) = match resource {
        Resource::Memory => (
            format!("memory limit ({})", limits.describe(resource)),
            "the kernel killed a process of the command for lack of memory",
            "MemoryLimitError",
            "use less memory at once (smaller inputs, streaming, fewer parallel jobs), or lower \
             no further than needed; a person raises the bound in `policy.sandbox.limits`",
        ),
        Resource::Processes | Resource::Cpu => (
            format!("process limit ({} at once)", limits.describe(resource)),
            "a new process was refused",
            "ProcessLimitError",
            "start fewer processes at once (`make -j4`, `xargs -P 4`) and wait for background \
             jobs; a person raises the bound in `policy.sandbox.limits`",
        ),
    };
    let mut message = format!(
        "the command went past its {limit}: {what}, and the call was ended (limit: {resource})"
    );
    for (stream, captured) in [("stdout", &finished.stdout), ("stderr", &finished.stderr)] {
        let text = captured.text();
        let text = text.trim_end();
        if !text.is_empty() {
            message.push_str(&format!("\n{stream} (its end): {}", tail(text, 300)));
        }
    }
    ToolError::new(message)
        .with_code(sandbox::codes::LIMIT)
        .with_name(name)
        .with_suggestion(suggestion)
}

/// The last `chars` characters of `text`.
fn tail(text: &str, chars: usize) -> &str {
    let start = text
        .char_indices()
        .rev()
        .nth(chars.saturating_sub(1))
        .map_or(0, |(i, _)| i);
    &text[start..]
}

/// A command that could not be started.
fn spawn_error(err: std::io::Error) -> ToolError {
    ToolError::new(format!("the command could not be started: {err}"))
        .with_code(codes::SPAWN)
        .with_name("SpawnError")
        .with_suggestion("check that the shell or script exists and is executable")
}

async fn resolve_script(workdir: &Path, raw: &str) -> Result<(String, PathBuf, bool), ToolError> {
    let rel = RelPath::parse(raw)?;
    let workdir = workdir.to_path_buf();
    let raw = raw.to_owned();
    blocking(move || {
        let dir = open_workdir(&workdir)?;
        let not_found = |why: String| {
            ToolError::new(format!("the script `{raw}` cannot be run: {why}"))
                .with_code(codes::SCRIPT)
                .with_name("ScriptNotFoundError")
                .with_suggestion("give the path of a script file inside the workdir")
        };
        let meta = dir.metadata(rel.as_path()).map_err(|err| {
            if is_escape(&err) {
                outside(&raw)
            } else {
                not_found(err.to_string())
            }
        })?;
        if !meta.is_file() {
            return Err(not_found("it is not a file".to_owned()));
        }
        let canonical = dir.canonicalize(rel.as_path()).map_err(|err| {
            if is_escape(&err) {
                outside(&raw)
            } else {
                not_found(err.to_string())
            }
        })?;
        let executable = meta.permissions().mode() & 0o111 != 0;
        Ok((rel.display(), workdir.join(canonical), executable))
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wildcards_match_secret_names() {
        let policy = BashPolicy::default();
        for name in [
            "GITHUB_TOKEN",
            "OPENAI_API_KEY",
            "AWS_ACCESS_KEY_ID",
            "DB_PASSWORD",
            "my_secret",
            "GOOGLE_APPLICATION_CREDENTIALS",
            "SLACK_TOKEN_BOT",
        ] {
            assert!(policy.is_denied(name), "{name}");
        }
        for name in ["PATH", "HOME", "LANG", "KEYBOARD", "TERM"] {
            assert!(!policy.is_denied(name), "{name}");
        }
        assert!(wildcard_match("A*B*C", "AxxBxxC"));
        assert!(!wildcard_match("A*B", "AB_"));
        assert!(wildcard_match("*", ""));
        let parent = [
            ("GITHUB_TOKEN", "t"),
            ("PATH", "/bin"),
            ("AWS_REGION", "x"),
            ("LANG", "C"),
        ]
        .map(|(k, v)| (k.into(), v.into()));
        let kept: Vec<_> = policy
            .child_env(parent)
            .into_iter()
            .map(|(k, _)| k)
            .collect();
        assert_eq!(kept, ["PATH", "LANG"]);
    }
}
