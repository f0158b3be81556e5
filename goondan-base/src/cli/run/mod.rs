//! `goondan run [BUNDLE] [--agent NAME] [--input TEXT] [--state DIR] [--approve POLICY]`:
//! runs a bundle's swarm, its agents as real processes under an Orchestrator (the `goondan`
//! program is their host: see `serve_if_requested`).
//!
//! - With `--input`, one Turn: the answer on stdout, exit status 0; a failure is one line on
//!   stderr and status 1.
//! - Without, a session: a Turn per line typed; the answer streams as it is written; each tool
//!   call is shown while it runs (name, short arguments, a spinner, the time so far), then on
//!   one line its duration and result or error. Ctrl-C cancels the current Turn, not the
//!   session; Ctrl-D or `exit` ends it.
//! - Approvals: `--approve destructive` (the default) asks before calls of tools marked
//!   destructive; `risky` also before open-world ones; `always` before every call; `never`
//!   never asks; `deny` refuses them. The prompt reads `y`, `n reason` (the model sees
//!   `E_TOOL_DENIED` with the reason) or `e {"edited": "arguments"}`. Each question is also
//!   kept in `{state}/approvals.sqlite3` under an id shown with it, so that
//!   `goondan approvals answer ID approve|deny|edit` answers it from another terminal, and a
//!   question left by a crash is shown when the next run starts and asked again when its Turn
//!   goes on; the first answer stands. `--approval-expiry 30m` denies a question nobody
//!   answered in time (`E_TOOL_DENIED`, reason `expired`).
//! - Forms: what a call asks the person (a tool's `elicit`, a bridged MCP server's
//!   elicitation) is asked at the terminal: fill it in (`y`), decline (`n`) or cancel (`c`),
//!   then each field on a line, with its default on an empty line.
//! - State: `.goondan/` next to the bundle, or `--state DIR`. The agents' tools work in
//!   `{state}/workspace`; each agent's conversation is kept in
//!   `{state}/conversations/{agent}.{instance}.jsonl` and goes on in the next run, and after a
//!   restart asked for by `self-restart__request` (the terminal says "restarted").
//! - The model: each Agent's `kind: Model` resource; `GOONDAN_MODEL` overrides its model name,
//!   and `OPENAI_BASE_URL` is the base URL of an OpenAI Model without `endpoint`. API keys are
//!   read from the variables the Models name and are never printed.

mod agent;
mod form;
mod journal;
mod link;
mod model;
pub(crate) mod questions;
mod remote;
mod render;
pub(crate) mod sandbox;
mod session;
mod state;

use std::path::PathBuf;

use goondan_runtime::agents::orchestrator::OrchestratorError;
use goondan_runtime::agents::swarm::SwarmSpecError;
use goondan_runtime::bundle::BundleError;
use goondan_runtime::calls::approval::Policy;

pub(crate) use self::agent::serve_if_requested;
pub(crate) use self::link::{ENV_JOURNAL, ENV_JOURNAL_LEASE, ENV_STATE};

/// The state directory of the bundle at `bundle`: `explicit` when given, else `.goondan/` next
/// to the bundle (for `goondan approvals`, which finds the questions where `goondan run` keeps
/// them).
pub(crate) fn state_dir_of(
    bundle: &std::path::Path,
    explicit: Option<&std::path::Path>,
) -> PathBuf {
    state::state_dir(&bundle_file(bundle), explicit)
}

/// The bundle file `bundle` names: itself, or `goondan.yaml` in it when it is a directory.
pub(crate) fn bundle_file(bundle: &std::path::Path) -> PathBuf {
    if bundle.is_dir() {
        bundle.join("goondan.yaml")
    } else {
        bundle.to_path_buf()
    }
}

/// The arguments of `goondan run`.
#[derive(Debug, Clone, clap::Args)]
pub struct RunArgs {
    /// The bundle file, or a directory holding `goondan.yaml`.
    #[arg(default_value = "goondan.yaml")]
    pub bundle: PathBuf,
    /// The agent to talk to (default: the Swarm's entry agent).
    #[arg(long)]
    pub agent: Option<String>,
    /// Run one Turn with this input, print the answer and exit.
    #[arg(long)]
    pub input: Option<String>,
    /// The state directory (default: `.goondan/` next to the bundle).
    #[arg(long)]
    pub state: Option<PathBuf>,
    /// When to ask before a tool call: `destructive` (default), `risky` (destructive or
    /// open-world), `always`, `never`, or `deny` (refuse them).
    #[arg(long, value_name = "POLICY", default_value_t = session::DEFAULT_POLICY)]
    pub approve: Policy,
    /// The policy of some tools: `PATTERN=POLICY`, a full name or a `*` pattern
    /// (`bash__*=always`, `file-system__write=never`); repeatable, the first match wins,
    /// `--approve` for the rest.
    #[arg(long, value_name = "PATTERN=POLICY", value_parser = parse_tool_policy)]
    pub approve_tool: Vec<(String, Policy)>,
    /// Deny an approval question nobody answered within this long (`90s`, `30m`, `2h`); the
    /// model reads `E_TOOL_DENIED` with the reason `expired`. Default: questions wait until
    /// answered, here or with `goondan approvals answer`, across restarts.
    #[arg(long, value_name = "DURATION", value_parser = humantime::parse_duration)]
    pub approval_expiry: Option<std::time::Duration>,
    /// Where the agents' run journals go (default: SQLite files in the state directory).
    #[command(flatten)]
    pub journal: crate::cli::JournalArgs,
    /// Talk to the swarm on this NATS server (its agents served by `goondan agent-host`s)
    /// instead of running the agents here. The answers are printed; the Turns' text, tool
    /// calls and approvals stay on the hosts.
    #[arg(long, value_name = "URL")]
    pub nats: Option<String>,
    /// With `--nats`: credentials and TLS.
    #[command(flatten)]
    pub nats_connection: crate::cli::NatsConnection,
}

/// `PATTERN=POLICY`, for `--approve-tool`.
fn parse_tool_policy(text: &str) -> Result<(String, Policy), String> {
    let (pattern, policy) = text
        .split_once('=')
        .ok_or_else(|| format!("`{text}` is not PATTERN=POLICY (e.g. `bash__*=always`)"))?;
    let pattern = pattern.trim();
    if pattern.is_empty() || pattern.contains(char::is_whitespace) {
        return Err(format!("`{pattern}` is not a tool name or pattern"));
    }
    let policy = policy.parse::<Policy>().map_err(|e| e.to_string())?;
    Ok((pattern.to_owned(), policy))
}

/// Why `goondan run` could not run.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The bundle cannot be read or has errors.
    #[error(transparent)]
    Bundle(#[from] BundleError),
    /// The bundle's Swarm is not usable.
    #[error(transparent)]
    Swarm(#[from] SwarmSpecError),
    /// The bundle has no Agent.
    #[error("the bundle has no Agent to run")]
    NoAgent,
    /// `--agent` names no agent of the swarm.
    #[error("the swarm has no agent `{agent}`; its agents are: {}", known.join(", "))]
    UnknownAgent {
        /// The name asked for.
        agent: String,
        /// The swarm's agents.
        known: Vec<String>,
    },
    /// A file or directory cannot be used.
    #[error("cannot use `{}`: {source}", path.display())]
    Io {
        /// The path.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// This program's path is unknown, so it cannot host the agents.
    #[error("cannot find this program to run the agents: {0}")]
    Program(#[source] std::io::Error),
    /// The session socket cannot be set up.
    #[error("cannot set up the session socket: {0}")]
    Link(#[source] std::io::Error),
    /// Ctrl-C cannot be handled.
    #[error("cannot handle Ctrl-C: {0}")]
    Signal(#[source] std::io::Error),
    /// The swarm on NATS cannot be reached.
    #[error(transparent)]
    Nats(#[from] goondan_runtime::agents::orchestrator::nats::NatsError),
    /// The Orchestrator cannot start.
    #[error(transparent)]
    Orchestrator(#[from] OrchestratorError),
    /// The async runtime cannot start.
    #[error("cannot start the async runtime: {0}")]
    Runtime(#[source] std::io::Error),
}

/// Runs `goondan run` and returns the exit status; `sandbox` is the command line's `--sandbox`,
/// passed on to the agent processes.
pub(crate) fn execute(
    args: &RunArgs,
    sandbox: Option<crate::sandbox::SandboxMode>,
) -> Result<u8, RunError> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(RunError::Runtime)?;
    // A swarm on NATS (`remote` talks to it), else one of local processes (`session`).
    rt.block_on(async {
        match &args.nats {
            Some(url) => remote::run(args, url).await,
            None => session::run(args, sandbox).await,
        }
    })
}
