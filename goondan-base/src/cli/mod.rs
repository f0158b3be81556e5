//! The `goondan` command: check bundles, list, call and export tools, serve them over MCP, and
//! run a bundle's agents ([`mod@run`]: `goondan run`, one Turn or a terminal session).
//!
//! The same commands are a library entry point, so that a program with its own tools linked in
//! gets them in one line:
//!
//! ```no_run
//! fn main() -> std::process::ExitCode {
//!     goondan_base::cli::run() // every linked #[tool], plus the base tools
//! }
//! ```
//!
//! Tools defined on `impl` blocks (with state) are not linked automatically: pass them with
//! [`run_with`] and [`ToolLibrary::tools`].

mod agent_host;
mod approvals;
mod commands;
mod mcp;
mod mcp_auth;
pub mod run;
mod telemetry;

pub use self::agent_host::{AgentHostArgs, JournalArgs, NatsConnection};
pub use self::approvals::{AnswerWord, ApprovalsCommand, StatePlace};

use std::ffi::OsString;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};
use goondan_runtime::bundle::ToolLibrary;

/// Exit status: success, and for `tools call` a result with `status: "ok"` or `"pending"`.
pub const EXIT_OK: u8 = 0;
/// Exit status: the bundle has errors, or the tool call's result has `status: "error"`.
pub const EXIT_FAILED: u8 = 1;
/// Exit status: the command could not run (bad arguments, unreadable file, unknown agent).
pub const EXIT_USAGE: u8 = 2;
/// Exit status: `tools call` stopped by SIGINT (128 + 2, as a shell reports it); the call was
/// cancelled and every process it started ended.
pub const EXIT_INTERRUPTED: u8 = 130;
/// Exit status: `tools call` stopped by SIGTERM (128 + 15); the call was cancelled and every
/// process it started ended.
pub const EXIT_TERMINATED: u8 = 143;

const AFTER_HELP: &str = "\
Exit status:
  0  success (for `tools call`: the result's status is ok or pending)
  1  the bundle has errors, or the tool call's result has status error
  2  the command could not run: bad arguments, unreadable file, unknown agent or tool set
  130  `tools call` stopped by SIGINT (143: by SIGTERM): the call was cancelled, and every
       process it started ended";

/// The `goondan` command line.
#[derive(Debug, Parser)]
#[command(name = "goondan", version, about = "Check Goondan bundles; list, call and export tools; run agents", after_help = AFTER_HELP)]
pub struct Cli {
    /// Print JSON instead of text.
    #[arg(long, global = true)]
    pub json: bool,
    /// The sandbox of the commands a model runs: `workspace` (the default: write only the
    /// workdir, no network), `read-only`, or `off`. Overrides the bundle's `policy.sandbox`.
    #[arg(long, global = true, value_name = "MODE")]
    pub sandbox: Option<crate::sandbox::SandboxMode>,
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// A subcommand.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Check a bundle: every problem, with file and line, and its Tool resources matched to
    /// the compiled tools.
    #[command(after_help = AFTER_HELP)]
    Validate {
        /// The bundle file, or a directory holding `goondan.yaml`.
        #[arg(default_value = "goondan.yaml")]
        bundle: PathBuf,
    },
    /// List, call or export tools.
    #[command(subcommand)]
    Tools(ToolsCommand),
    /// Serve tools over MCP (the Model Context Protocol).
    #[command(subcommand)]
    Mcp(McpCommand),
    /// Run a bundle's agents: one Turn with `--input`, else a session in the terminal.
    #[command(after_help = AFTER_HELP)]
    Run(run::RunArgs),
    /// Join a swarm on NATS and run the bundle's agents placed on this machine.
    AgentHost(AgentHostArgs),
    /// List and answer the approval questions `goondan run`'s agents wait on, from another
    /// terminal or after a restart.
    #[command(subcommand)]
    Approvals(ApprovalsCommand),
    /// What the sandbox of a model's commands can enforce on this machine.
    #[command(subcommand)]
    Sandbox(SandboxCommand),
}

/// `goondan sandbox ...`.
#[derive(Debug, Subcommand)]
pub enum SandboxCommand {
    /// Print what this machine supports (Landlock, user namespaces, seccomp, the helper
    /// program), what each mode enforces, and run `true` in the sandbox. Exits 1 when a
    /// sandboxed command cannot run here.
    Check {
        /// The workdir of the probe (default: the current directory).
        #[arg(long)]
        workdir: Option<PathBuf>,
    },
}

/// `goondan mcp ...`.
#[derive(Debug, Subcommand)]
pub enum McpCommand {
    /// Serve a catalog to MCP clients: every linked tool, the tools named by `--tools`, or
    /// an Agent's catalog from a bundle. Over stdio by default; over Streamable HTTP at
    /// `http://ADDR/mcp` with `--http ADDR`. Every call goes through the executor, so the
    /// catalog is the allow-list and errors are structured results.
    #[command(after_help = AFTER_HELP)]
    Serve {
        /// The bundle whose Agent's catalog is served.
        #[arg(long, conflicts_with = "tools")]
        bundle: Option<PathBuf>,
        /// The Agent (default: the bundle's entry agent).
        #[arg(long, requires = "bundle")]
        agent: Option<String>,
        /// Serve only these Tool resources, in this order (comma-separated).
        #[arg(long, value_delimiter = ',')]
        tools: Vec<String>,
        /// Serve Streamable HTTP on this address (e.g. `127.0.0.1:8080`) instead of stdio.
        #[arg(long, value_name = "ADDR")]
        http: Option<std::net::SocketAddr>,
        /// With `--http`: how many client sessions may be open at once; a client past it is
        /// refused with HTTP 503 until one closes or expires.
        #[arg(long, value_name = "N", default_value_t = 1024, requires = "http")]
        max_sessions: usize,
        /// With `--http`: how many seconds a session may stay idle before it ends.
        #[arg(long, value_name = "SECONDS", default_value_t = 300, requires = "http")]
        session_idle_secs: u64,
        /// The working directory of the calls (default: the current directory).
        #[arg(long)]
        workdir: Option<PathBuf>,
        /// Ask the client's user before calls (MCP elicitation): `never` (default), `always`,
        /// `risky` (destructive or open-world exports), `destructive`, or `deny` (refuse
        /// them). A client without elicitation cannot be asked: its asked calls are denied.
        #[arg(long, value_name = "POLICY", default_value = "never")]
        approve: goondan_runtime::calls::approval::Policy,
        /// Serve code mode: the client sees `code__run` (one Python program that calls the
        /// tools as functions) and `code__search` (finds the functions it needs), not the
        /// tools themselves. The limits are the bundle Agent's `spec.codeMode` when it has
        /// one.
        #[arg(long)]
        code_mode: bool,
        /// Serve the skills of this folder (the MCP Skills extension): each folder below it
        /// that holds a `SKILL.md` is a skill. Default: the bundle Agent's `spec.skills`, a
        /// folder relative to the bundle.
        #[arg(long, value_name = "DIR")]
        skills: Option<PathBuf>,
    },
    /// Authorize the bundle's MCP server SERVER (`auth: oauth`) once: prints the URL to open
    /// in a browser, waits for the redirect on 127.0.0.1, and keeps the tokens in your token
    /// store, never in the bundle: the OS keyring when one answers, else
    /// `$XDG_STATE_HOME/goondan/mcp-tokens` (mode 0600; or set GOONDAN_MCP_TOKEN_STORE=file).
    Login {
        /// The server's `name` in an Extension's `spec.mcp.servers`.
        server: String,
        /// The bundle file.
        #[arg(long, default_value = "goondan.yaml")]
        bundle: PathBuf,
        /// The port to listen on for the redirect (default: any free port).
        #[arg(long, default_value_t = 0)]
        port: u16,
        /// How many seconds to wait for the browser.
        #[arg(long, value_name = "SECONDS", default_value_t = 300)]
        wait_secs: u64,
    },
    /// Forget the tokens kept for the MCP server SERVER.
    Logout {
        /// The server's name.
        server: String,
    },
    /// List the bundle's MCP servers with how they authorize and whether tokens are kept.
    Servers {
        /// The bundle file.
        #[arg(long, default_value = "goondan.yaml")]
        bundle: PathBuf,
        /// Also start each server as `goondan run` does (in its sandbox, with the kept tokens,
        /// each within its startup timeout) and say whether it is up, with how many tools, or
        /// why not.
        #[arg(long)]
        check: bool,
    },
}

/// A `tools` subcommand.
#[derive(Debug, Subcommand)]
pub enum ToolsCommand {
    /// List the tools: every compiled tool, or an Agent's catalog when a bundle is given.
    #[command(after_help = AFTER_HELP)]
    List {
        /// A bundle; the catalog is then the one of `--agent` (default: the entry agent).
        #[arg(long)]
        bundle: Option<PathBuf>,
        /// The bundle's Agent whose `spec.tools` make the catalog.
        #[arg(long, requires = "bundle")]
        agent: Option<String>,
        /// The output format: text, json (the catalog), or a provider's tool format.
        #[arg(long, value_enum, default_value_t = Format::Text)]
        format: Format,
    },
    /// Call one tool with JSON arguments and print the ToolCallResult.
    #[command(after_help = AFTER_HELP)]
    Call {
        /// The full tool name, `{resource}__{export}`.
        name: String,
        /// The arguments, a JSON object.
        #[arg(default_value = "{}")]
        args: String,
        /// The working directory of the call (default: the current directory).
        #[arg(long)]
        workdir: Option<PathBuf>,
        /// A bundle; the call is then checked against `--agent`'s catalog.
        #[arg(long)]
        bundle: Option<PathBuf>,
        /// The bundle's Agent (default: the entry agent).
        #[arg(long, requires = "bundle")]
        agent: Option<String>,
    },
    /// Write the compiled tools as Tool resources (YAML), ready for a `goondan.yaml`.
    #[command(after_help = AFTER_HELP)]
    Export {
        /// Only these tools (resource names); default: all.
        #[arg(long = "tool")]
        tools: Vec<String>,
    },
}

/// Output formats of `tools list`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// One line per tool.
    Text,
    /// The catalog as JSON (`[{name, description, parameters, source}]`).
    Json,
    /// OpenAI Chat Completions `tools`.
    Openai,
    /// OpenAI Responses `tools`.
    OpenaiResponses,
    /// Anthropic Messages `tools`.
    Anthropic,
    /// Gemini `tools`.
    Gemini,
    /// MCP `tools/list` result.
    Mcp,
}

/// Every tool linked into this program and the base tools, with `@goondan/base` as a package:
/// [`crate::library`].
pub fn default_library() -> ToolLibrary {
    crate::library()
}

/// Runs the command line of this process with [`default_library`].
pub fn run() -> ExitCode {
    run_with(default_library())
}

/// Runs the command line of this process with `library`.
pub fn run_with(library: ToolLibrary) -> ExitCode {
    // Started as the sandbox's helper, this program does the helper's work and exits here.
    crate::sandbox::serve_if_asked();
    // Started as a code worker, this program runs one program of code mode and exits here.
    goondan_runtime::code::worker::serve_if_asked();
    let mut stderr = std::io::stderr();
    telemetry::start(&mut stderr);
    // In an agent process started by `goondan run`'s Orchestrator: serve the agent and exit.
    run::serve_if_requested(&library);
    // Not locked for the whole command: `goondan mcp serve` speaks MCP on stdout through
    // its own handle, which would wait forever for a lock held here.
    let mut stdout = std::io::stdout();
    let code = run_from(std::env::args_os(), &library, &mut stdout, &mut stderr);
    // The last spans and metrics, sent before the process ends.
    goondan_runtime::telemetry::shutdown();
    ExitCode::from(code)
}

/// Runs `args` (the program name first) and returns the exit status.
pub fn run_from<I, T>(
    args: I,
    library: &ToolLibrary,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> u8
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let cli = match Cli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(e) => {
            let use_stdout = !e.use_stderr();
            let text = e.render().to_string();
            let _ = if use_stdout {
                out.write_all(text.as_bytes())
            } else {
                err.write_all(text.as_bytes())
            };
            return if use_stdout { EXIT_OK } else { EXIT_USAGE };
        }
    };
    match commands::execute(&cli, library, out) {
        Ok(code) => code,
        // A closed pipe (`goondan tools list | head`) is not a failure.
        Err(commands::CliError::Io(e)) if e.kind() == std::io::ErrorKind::BrokenPipe => EXIT_OK,
        Err(e) => {
            let _ = writeln!(err, "error: {e}");
            EXIT_USAGE
        }
    }
}
