//! The sandbox of a bridged stdio MCP server: [`ServerSandbox`], the [`Launcher`] that starts
//! it through the helper, confined like a `bash` command but speaking over its stdin and
//! stdout for as long as the bridge keeps it.

use std::path::PathBuf;

use goondan_runtime::mcp::client::{Launched, Launcher, StdioCommand};

use super::launch::{Prepared, Target, prepare, sandbox_env};
use super::policy::{PolicyError, SandboxPolicy};

/// Starts bridged stdio MCP servers in the sandbox ([`McpServerConfig::launcher`]).
///
/// Each server writes only in its own workdir (made when missing) and its private `TMPDIR`,
/// reads the system, `PATH` and its toolchains, its program and its working directory (its
/// workdir when the configuration names none), and
/// reaches the network only through the sandbox's proxy, under `policy`.
/// [`ServerSandbox::default_policy`] lets it reach any public host by name; nothing of the
/// host's (its loopback services, private addresses, the home directory) is in reach.
///
/// ```
/// use goondan_base::sandbox::ServerSandbox;
/// use goondan_runtime::mcp::client::McpServerConfig;
///
/// let workdir = std::env::temp_dir().join("files-server");
/// let server = McpServerConfig::stdio("files", "mcp-server-filesystem")
///     .launcher(ServerSandbox::new(ServerSandbox::default_policy(), workdir));
/// assert!(server.has_launcher());
/// ```
///
/// [`McpServerConfig::launcher`]: goondan_runtime::mcp::client::McpServerConfig::launcher
#[derive(Debug, Clone)]
pub struct ServerSandbox {
    policy: SandboxPolicy,
    workdir: PathBuf,
}

impl ServerSandbox {
    /// Servers confined by `policy` (which should be on: with it off, [`Launcher::launch`]
    /// refuses rather than start a server unconfined), each with `workdir` as its own.
    pub fn new(policy: SandboxPolicy, workdir: impl Into<PathBuf>) -> Self {
        Self {
            policy,
            workdir: workdir.into(),
        }
    }

    /// A bridged server's policy when its bundle sets none: the workspace mode, and any public
    /// host by name through the proxy (`network: {allow: ["*"]}`).
    pub fn default_policy() -> SandboxPolicy {
        SandboxPolicy::default()
            .allow_host("*")
            .unwrap_or_else(|_| SandboxPolicy::default())
    }

    /// The policy the servers run under.
    pub fn policy(&self) -> &SandboxPolicy {
        &self.policy
    }

    /// `policy` with the server's program and working directory opened for reading, when they
    /// lie outside its workdir (a script beside the bundle, a program built in a project).
    fn opened_for(&self, command: &StdioCommand) -> Result<SandboxPolicy, PolicyError> {
        let mut policy = self.policy.clone();
        for path in std::iter::once(&command.program).chain(&command.cwd) {
            let outside = path.is_absolute() && !path.starts_with(&self.workdir);
            if outside && path.parent().is_some() {
                policy = policy.read(path.to_string_lossy())?;
            }
        }
        Ok(policy)
    }
}

impl Launcher for ServerSandbox {
    fn launch(&self, server: &str, command: StdioCommand) -> Result<Launched, String> {
        if !self.policy.is_on() {
            return Err(format!(
                "the sandbox of MCP server `{server}` is off; leave out its launcher instead"
            ));
        }
        std::fs::create_dir_all(&self.workdir).map_err(|e| {
            format!(
                "the sandbox of MCP server `{server}`: its workdir {}: {e}",
                self.workdir.display()
            )
        })?;
        let policy = self
            .opened_for(&command)
            .map_err(|e| format!("the sandbox of MCP server `{server}`: {e}"))?;
        let env = sandbox_env(&policy, command.env);
        // Without a working directory of its own, the server runs in its workdir.
        let cwd = command.cwd.unwrap_or_else(|| self.workdir.clone());
        let target = Target {
            program: command.program.as_os_str(),
            args: &command.args,
            cwd: &cwd,
            env,
            workdir: &self.workdir,
            stdin: true,
        };
        let Prepared {
            program,
            args,
            env,
            private,
        } = prepare(&policy, target)
            .map_err(|e| format!("the sandbox of MCP server `{server}`: {e}"))?;
        Ok(Launched {
            command: StdioCommand {
                program,
                args,
                env,
                cwd: Some(cwd),
            },
            keep: Box::new(private),
        })
    }
}

/// The workdir of the server `server` of the MCP extension `extension`, under `state` (a
/// `goondan run` state directory).
#[cfg(feature = "cli")]
pub(crate) fn server_workdir(state: &std::path::Path, extension: &str, server: &str) -> PathBuf {
    state.join("mcp-servers").join(extension).join(server)
}
