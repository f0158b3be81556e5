//! `goondan agent-host`: joins a swarm on NATS and runs the bundle's agents placed on this
//! machine as local processes (this same program, re-executed as each agent), serving their
//! requests from NATS. Several hosts serving one agent share its requests. With `--state DIR`,
//! each agent instance keeps a run journal there (`journal/{agent}.{instanceKey}.sqlite3`): a
//! process that crashed, or the whole host, goes on with its conversation when it starts again,
//! and finishes the Turn the crash cut short before the next one. With `--journal nats://...`
//! the journals are kept on JetStream instead, so that another host takes over the instances
//! of a host that died.

use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

use goondan_runtime::agents::orchestrator::nats::{AgentHost, NatsAuth, NatsError, NatsOptions};
use goondan_runtime::agents::orchestrator::{
    OrchestratorConfig, ProcessConfig, SwarmSpec, agent_mode,
};
use goondan_runtime::agents::swarm::{ENV_BUNDLE, StepWorker, SwarmSpecError};
use goondan_runtime::bundle::{Bundle, BundleError, ToolLibrary};
use goondan_runtime::provider::model_factory;

use super::{EXIT_OK, EXIT_USAGE};

/// `goondan agent-host --nats URL --swarm NAME --bundle F [--agents a,b]`.
#[derive(Debug, clap::Args)]
pub struct AgentHostArgs {
    /// The NATS server, `nats://host:port` (`tls://` for TLS).
    #[arg(long, value_name = "URL")]
    pub nats: String,
    /// The bundle's Swarm to join; also the namespace of its subjects on NATS.
    #[arg(long, value_name = "NAME")]
    pub swarm: String,
    /// The bundle (a file, or a directory holding `goondan.yaml`).
    #[arg(long, value_name = "F")]
    pub bundle: PathBuf,
    /// The agents placed on this host (comma-separated; default: every agent of the swarm).
    #[arg(long, value_delimiter = ',')]
    pub agents: Vec<String>,
    /// The agents' working directory (default: the current directory).
    #[arg(long)]
    pub workdir: Option<PathBuf>,
    /// Keep each agent instance's run journal in this directory, so that the agents survive
    /// a crash of their process or of the host (default: no journal, Turns live in memory).
    #[arg(long, value_name = "DIR")]
    pub state: Option<PathBuf>,
    /// Keep the run journals on JetStream at this NATS server (`nats://host:port`, credentials
    /// from `GOONDAN_NATS_TOKEN` and the like) instead: when this host dies, another host
    /// serving the same agents finishes their Turns. An instance is held by one host at a time.
    #[command(flatten)]
    pub journal: JournalArgs,
    /// Credentials and TLS.
    #[command(flatten)]
    pub connection: NatsConnection,
}

/// Where the run journals of the agents go besides the state directory (shared by
/// `goondan agent-host` and `goondan run`).
#[derive(Debug, Clone, Default, clap::Args)]
pub struct JournalArgs {
    /// Keep the agents' run journals on JetStream at this NATS server (`nats://host:port`)
    /// instead of SQLite files in the state directory.
    #[arg(long = "journal", value_name = "URL")]
    pub url: Option<String>,
    /// With `--journal`: how long a process's hold on an agent instance lasts without being
    /// renewed; after a host dies, another takes its instances over after at most this long.
    #[arg(long = "journal-lease", value_name = "DURATION", value_parser = humantime::parse_duration, requires = "url")]
    pub lease: Option<std::time::Duration>,
}

impl JournalArgs {
    /// Tells the agent processes where their journals go.
    pub(crate) fn pass_to(&self, mut process: ProcessConfig) -> ProcessConfig {
        if let Some(url) = &self.url {
            process = process.env(super::run::ENV_JOURNAL, url);
        }
        if let Some(lease) = self.lease {
            process = process.env(super::run::ENV_JOURNAL_LEASE, lease.as_millis().to_string());
        }
        process
    }
}

/// How to reach a NATS server besides its URL: credentials and TLS (shared by `goondan
/// agent-host` and `goondan run --nats`).
#[derive(Debug, Clone, Default, clap::Args)]
pub struct NatsConnection {
    /// NATS user, with `--nats-password` (or `GOONDAN_NATS_PASSWORD`).
    #[arg(long)]
    pub nats_user: Option<String>,
    /// NATS password.
    #[arg(long)]
    pub nats_password: Option<String>,
    /// NATS token (or `GOONDAN_NATS_TOKEN`).
    #[arg(long)]
    pub nats_token: Option<String>,
    /// NATS `.creds` file.
    #[arg(long, value_name = "FILE")]
    pub nats_creds: Option<PathBuf>,
    /// NATS NKey seed (or `GOONDAN_NATS_NKEY`).
    #[arg(long)]
    pub nats_nkey: Option<String>,
    /// A root certificate (PEM) to trust; repeatable.
    #[arg(long, value_name = "PEM")]
    pub nats_ca: Vec<PathBuf>,
    /// A client certificate (PEM), for mutual TLS (with `--nats-key`).
    #[arg(long, value_name = "PEM", requires = "nats_key")]
    pub nats_cert: Option<PathBuf>,
    /// The client certificate's key (PEM).
    #[arg(long, value_name = "PEM", requires = "nats_cert")]
    pub nats_key: Option<PathBuf>,
    /// Refuse a connection without TLS.
    #[arg(long)]
    pub nats_require_tls: bool,
}

impl AgentHostArgs {
    /// The NATS options the flags give.
    pub fn nats_options(&self) -> NatsOptions {
        self.connection.options(&self.nats)
    }
}

impl NatsConnection {
    /// The NATS options for the server at `url` with these credentials and TLS settings.
    pub fn options(&self, url: &str) -> NatsOptions {
        // Secrets may come from the environment, out of sight of `ps`.
        let secret =
            |flag: &Option<String>, var: &str| flag.clone().or_else(|| std::env::var(var).ok());
        let password = secret(&self.nats_password, "GOONDAN_NATS_PASSWORD");
        let token = secret(&self.nats_token, "GOONDAN_NATS_TOKEN");
        let nkey = secret(&self.nats_nkey, "GOONDAN_NATS_NKEY");
        let auth = if let (Some(user), Some(password)) = (&self.nats_user, password) {
            NatsAuth::UserPassword {
                user: user.clone(),
                password,
            }
        } else if let Some(token) = token {
            NatsAuth::Token(token)
        } else if let Some(path) = &self.nats_creds {
            NatsAuth::CredsFile(path.clone())
        } else if let Some(seed) = nkey {
            NatsAuth::NKey(seed)
        } else {
            NatsAuth::None
        };
        let mut o = NatsOptions::new(url).auth(auth);
        o.root_certificates = self.nats_ca.clone();
        o.client_certificate = self.nats_cert.clone().zip(self.nats_key.clone());
        o.require_tls = self.nats_require_tls;
        o
    }
}

/// Why a host could not start.
#[derive(Debug, thiserror::Error)]
enum AgentHostError {
    #[error(transparent)]
    Bundle(#[from] BundleError),
    #[error(transparent)]
    Swarm(#[from] SwarmSpecError),
    #[error(transparent)]
    Nats(#[from] NatsError),
    #[error("{0}")]
    Io(#[from] std::io::Error),
}

/// Runs the host until Ctrl-C or SIGTERM; in an agent process it re-executes as, serves the
/// agent instead. Errors go to standard error with exit status 2.
pub(crate) fn run(args: &AgentHostArgs, library: &ToolLibrary, out: &mut dyn Write) -> u8 {
    match serve(args, library, out) {
        Ok(()) => EXIT_OK,
        Err(e) => {
            let _ = writeln!(std::io::stderr(), "error: {e}");
            EXIT_USAGE
        }
    }
}

fn serve(
    args: &AgentHostArgs,
    library: &ToolLibrary,
    out: &mut dyn Write,
) -> Result<(), AgentHostError> {
    let bundle = Bundle::load(&args.bundle)?;
    // The agent processes are this program with the same arguments: serve the agent, exit.
    // (The `goondan` program serves its agent processes before this, as `goondan run`'s
    // agents: with the state directory below, each keeps its run journal there.)
    agent_mode::run_if_requested(|me| {
        StepWorker::from_env(me, library, &model_factory(bundle.clone()))
    });
    let swarm = SwarmSpec::from_bundle(&bundle, Some(&args.swarm))?;
    let placed = if args.agents.is_empty() {
        swarm.agent_names()
    } else {
        args.agents.clone()
    };
    let mut process = ProcessConfig::current_exe()?.env(ENV_BUNDLE, bundle.file());
    if let Some(state) = &args.state {
        // Absolute: the agent processes run in the agents' working directory.
        std::fs::create_dir_all(state)?;
        process = process.env(super::run::ENV_STATE, std::fs::canonicalize(state)?);
    }
    let process = args.journal.pass_to(process);
    let process = std::env::args_os()
        .skip(1)
        .fold(process, |p, arg| p.arg(arg));
    let workdir = match &args.workdir {
        Some(w) => w.clone(),
        None => std::env::current_dir()?,
    };
    let config = OrchestratorConfig {
        workdir,
        ..OrchestratorConfig::default()
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    runtime.block_on(async {
        let host = AgentHost::start(&args.nats_options(), swarm, &placed, process, config).await?;
        writeln!(
            out,
            "agent-host {} serving {} of swarm `{}` on {}",
            host.host_id(),
            placed.join(", "),
            args.swarm,
            args.nats
        )?;
        out.flush()?;
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = term.recv() => {}
        }
        host.shutdown(Duration::from_secs(10)).await;
        Ok(())
    })
}
