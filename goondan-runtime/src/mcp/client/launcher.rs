//! [`Launcher`]: how a stdio server's process is started when it must not run as the host
//! runs it (goondan-base's sandbox is one).

use std::any::Any;
use std::ffi::OsString;
use std::fmt;
use std::path::PathBuf;

/// A stdio server's command as the bridge would run it: the program, its arguments, its whole
/// environment (the host's, minus the agent's own token, plus the server's `env`) and its
/// working directory, when the configuration names one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StdioCommand {
    /// The program.
    pub program: PathBuf,
    /// Its arguments.
    pub args: Vec<OsString>,
    /// Its whole environment; nothing else is inherited.
    pub env: Vec<(OsString, OsString)>,
    /// Its working directory; `None` leaves the choice to the launcher (the host's otherwise).
    pub cwd: Option<PathBuf>,
}

/// What a [`Launcher`] made of a [`StdioCommand`]: the command to start instead, and what must
/// live as long as the process (a private directory, a proxy); dropped when it ends.
pub struct Launched {
    /// The command to start.
    pub command: StdioCommand,
    /// Kept until the process has ended.
    pub keep: Box<dyn Any + Send + Sync>,
}

impl fmt::Debug for Launched {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Launched")
            .field("command", &self.command)
            .finish_non_exhaustive()
    }
}

/// Turns a stdio server's command into the one to start, each time the server starts. An
/// error keeps the server down with that reason (`E_MCP_UNAVAILABLE` for its calls); the
/// server never starts another way instead.
///
/// ```
/// use goondan_runtime::mcp::client::{Launched, Launcher, McpServerConfig, StdioCommand};
///
/// /// Runs every server under `nice`.
/// struct Nice;
///
/// impl Launcher for Nice {
///     fn launch(&self, _server: &str, command: StdioCommand) -> Result<Launched, String> {
///         let mut args = vec![command.program.into_os_string()];
///         args.extend(command.args);
///         let command = StdioCommand { program: "nice".into(), args, ..command };
///         Ok(Launched { command, keep: Box::new(()) })
///     }
/// }
///
/// let server = McpServerConfig::stdio("files", "mcp-server-filesystem").launcher(Nice);
/// # drop(server);
/// ```
pub trait Launcher: Send + Sync + 'static {
    /// The command to start for the server named `server`.
    fn launch(&self, server: &str, command: StdioCommand) -> Result<Launched, String>;
}
