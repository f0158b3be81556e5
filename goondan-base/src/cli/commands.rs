//! What each subcommand does.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use goondan_runtime::bundle::{Bundle, BundleError, Severity, ToolLibrary, export_tools};
use goondan_runtime::dialect::DialectError;
use goondan_runtime::tools::catalog::CatalogError;
use goondan_runtime::tools::registry::RegistryError;
use goondan_runtime::{
    Dialect, ToolCall, ToolCatalog, ToolContext, ToolExecutor, ToolRegistry, ToolStatus,
};
use serde_json::{Value, json};
use tokio::signal::unix::{Signal, SignalKind, signal};
use tokio_util::sync::CancellationToken;

use super::{
    Cli, Command, EXIT_FAILED, EXIT_INTERRUPTED, EXIT_OK, EXIT_TERMINATED, Format, McpCommand,
    SandboxCommand, ToolsCommand,
};
use crate::bash::BashPolicy;
use crate::sandbox::{self, PolicyError, SandboxPolicy, Support};

/// Why a command could not run (exit status 2).
#[derive(Debug, thiserror::Error)]
pub(crate) enum CliError {
    #[error(transparent)]
    Bundle(#[from] BundleError),
    #[error(transparent)]
    Registry(#[from] RegistryError),
    #[error(transparent)]
    Catalog(#[from] CatalogError),
    #[error(transparent)]
    Dialect(#[from] DialectError),
    #[error("the arguments are not JSON: {0}")]
    Args(#[source] serde_json::Error),
    #[error("the bundle `{}` has no Agent to take the catalog from; pass `--agent`", path.display())]
    NoAgent { path: PathBuf },
    #[error("cannot write the output: {0}")]
    Io(#[from] std::io::Error),
    #[error("cannot start the async runtime: {0}")]
    Runtime(#[source] std::io::Error),
    #[error("cannot catch SIGINT and SIGTERM: {0}")]
    Signals(#[source] std::io::Error),
    #[error(transparent)]
    Mcp(#[from] super::mcp::McpCliError),
    #[error(transparent)]
    McpAuth(#[from] super::mcp_auth::McpAuthCliError),
    #[error(transparent)]
    Run(#[from] super::run::RunError),
    #[error(transparent)]
    Approvals(#[from] super::approvals::ApprovalsError),
    #[error(transparent)]
    Sandbox(#[from] PolicyError),
}

pub(crate) fn execute(
    cli: &Cli,
    library: &ToolLibrary,
    out: &mut dyn Write,
) -> Result<u8, CliError> {
    set_sandbox(cli)?;
    match &cli.command {
        Command::Sandbox(SandboxCommand::Check { workdir }) => {
            let workdir = match workdir {
                Some(w) => w.clone(),
                None => std::env::current_dir()?,
            };
            let policy = sandbox::host_policy().cloned().unwrap_or_default();
            {
                let support = sandbox::check(&policy, &workdir, crate::bash::enforcement);
                sandbox_check(&support, &policy, cli.json, out)
            }
        }
        Command::Validate { bundle } => validate(bundle, library, cli.json, out),
        Command::AgentHost(args) => Ok(super::agent_host::run(args, library, out)),
        Command::Tools(ToolsCommand::List {
            bundle,
            agent,
            format,
        }) => {
            let (registry, catalog) = catalog(bundle.as_deref(), agent.as_deref(), library)?;
            drop(registry);
            let format = if cli.json && *format == Format::Text {
                Format::Json
            } else {
                *format
            };
            list(&catalog, format, out)
        }
        Command::Tools(ToolsCommand::Call {
            name,
            args,
            workdir,
            bundle,
            agent,
        }) => {
            let args: Value = serde_json::from_str(args).map_err(CliError::Args)?;
            let (registry, catalog) = catalog(bundle.as_deref(), agent.as_deref(), library)?;
            let workdir = match workdir {
                Some(w) => w.clone(),
                None => std::env::current_dir()?,
            };
            call(
                registry,
                &catalog,
                name,
                args,
                workdir,
                agent.as_deref(),
                cli.json,
                out,
            )
        }
        Command::Run(args) => Ok(super::run::execute(args, cli.sandbox)?),
        Command::Approvals(command) => Ok(super::approvals::execute(command, cli.json, out)?),
        Command::Mcp(McpCommand::Serve {
            bundle,
            agent,
            tools,
            http,
            max_sessions,
            session_idle_secs,
            workdir,
            approve,
            code_mode,
            skills,
        }) => {
            let serve = super::mcp::Serve {
                bundle: bundle.as_deref(),
                agent: agent.as_deref(),
                tools,
                http: *http,
                limits: goondan_runtime::mcp::server::HttpLimits::default()
                    .max_sessions(*max_sessions)
                    .idle_timeout(std::time::Duration::from_secs(*session_idle_secs)),
                workdir: workdir.as_deref(),
                approve: *approve,
                code_mode: *code_mode,
                skills: skills.as_deref(),
            };
            Ok(super::mcp::serve(&serve, library, out)?)
        }
        Command::Mcp(McpCommand::Login {
            server,
            bundle,
            port,
            wait_secs,
        }) => {
            let login = super::mcp_auth::Login {
                server,
                bundle,
                port: *port,
                wait: std::time::Duration::from_secs(*wait_secs),
            };
            Ok(super::mcp_auth::login(&login, out)?)
        }
        Command::Mcp(McpCommand::Logout { server }) => Ok(super::mcp_auth::logout(server, out)?),
        Command::Mcp(McpCommand::Servers { bundle, check }) => {
            Ok(super::mcp_auth::servers(bundle, *check, cli.json, out)?)
        }
        Command::Tools(ToolsCommand::Export { tools }) => {
            let mut chosen: Vec<_> = library
                .iter()
                .filter(|t| tools.is_empty() || tools.iter().any(|n| n == t.name()))
                .collect();
            chosen.sort_by(|a, b| a.name().cmp(b.name()));
            out.write_all(export_tools(chosen).as_bytes())?;
            Ok(EXIT_OK)
        }
    }
}

fn validate(
    path: &Path,
    library: &ToolLibrary,
    json: bool,
    out: &mut dyn Write,
) -> Result<u8, CliError> {
    let bundle = Bundle::read(path)?;
    let (diagnostics, tools) = match bundle.registry(library) {
        Ok(registry) => (bundle.diagnostics().to_vec(), registry.len()),
        Err(e) => (e.diagnostics().to_vec(), 0),
    };
    let errors = diagnostics
        .iter()
        .filter(|d| d.severity == Severity::Error)
        .count();
    if json {
        let report = json!({
            "file": bundle.file(),
            "ok": errors == 0,
            "resources": bundle.resources().len(),
            "tools": tools,
            "diagnostics": diagnostics,
        });
        writeln!(
            out,
            "{}",
            serde_json::to_string_pretty(&report).unwrap_or_default()
        )?;
    } else {
        for d in &diagnostics {
            writeln!(out, "{d}")?;
        }
        if errors == 0 {
            writeln!(
                out,
                "ok: {} is valid: {} resources, {tools} tools, {} warning(s)",
                bundle.file().display(),
                bundle.resources().len(),
                diagnostics.len()
            )?;
        } else {
            writeln!(out, "{} has {errors} error(s)", bundle.file().display())?;
        }
    }
    Ok(if errors == 0 { EXIT_OK } else { EXIT_FAILED })
}

/// Sets the sandbox of this process's base tools: the bundle's `policy.sandbox` (of `--agent`,
/// else the entry agent), its mode replaced by `--sandbox`; the bundle file and its state
/// directory are always out of reach.
fn set_sandbox(cli: &Cli) -> Result<(), CliError> {
    let (bundle, agent, state) = match &cli.command {
        Command::Tools(ToolsCommand::Call { bundle, agent, .. })
        | Command::Mcp(McpCommand::Serve { bundle, agent, .. }) => {
            (bundle.clone(), agent.clone(), None)
        }
        Command::Run(args) => (Some(args.bundle.clone()), None, args.state.clone()),
        _ => (None, None, None),
    };
    let mut policy =
        super::run::sandbox::bundle_sandbox(bundle.as_deref(), agent.as_deref(), state.as_deref())?;
    if let Some(mode) = cli.sandbox {
        policy.mode = mode;
    }
    // Set once per process, before any tool runs; a library caller that set its own keeps it.
    let _ = sandbox::set_host_policy(policy);
    Ok(())
}

fn sandbox_check(
    support: &Support,
    policy: &SandboxPolicy,
    json: bool,
    out: &mut dyn Write,
) -> Result<u8, CliError> {
    let code = if support.ready() {
        EXIT_OK
    } else {
        EXIT_FAILED
    };
    if json {
        let mut value = serde_json::to_value(support).unwrap_or_default();
        value["ready"] = json!(support.ready());
        value["mode"] = json!(policy.mode.as_str());
        writeln!(
            out,
            "{}",
            serde_json::to_string_pretty(&value).unwrap_or_default()
        )?;
        return Ok(code);
    }
    writeln!(out, "os               {}", support.os)?;
    writeln!(out, "landlock         {}", support.landlock)?;
    writeln!(out, "user namespaces  {}", support.user_namespaces)?;
    writeln!(
        out,
        "seccomp          {}",
        if support.seccomp { "yes" } else { "no" }
    )?;
    writeln!(out, "helper           {}", support.helper)?;
    writeln!(out, "limits of each call:")?;
    for limit in &support.limits {
        let value = if limit.set {
            limit.value.clone()
        } else {
            format!("{} (default)", limit.value)
        };
        let how = match limit.cgroup {
            Some(version) => format!("{version}, {}", limit.detail),
            None => format!("not enforced here: {}", limit.detail),
        };
        writeln!(out, "  {:<15}{value:<19}{how}", limit.limit.as_str())?;
    }
    for mode in [
        sandbox::SandboxMode::Workspace,
        sandbox::SandboxMode::ReadOnly,
        sandbox::SandboxMode::Off,
    ] {
        let chosen = if mode == policy.mode {
            " (this mode)"
        } else {
            ""
        };
        writeln!(out, "\n{mode}{chosen}:")?;
        for line in Support::enforces(mode) {
            writeln!(out, "  - {line}")?;
        }
    }
    match &support.probe {
        None => writeln!(out, "\nready: `true` ran in the {} sandbox", policy.mode)?,
        Some(why) => writeln!(
            out,
            "\nnot ready: {why}\nsandboxed calls are refused with E_SANDBOX_UNAVAILABLE; to run \
             without the sandbox, say so: --sandbox off, or policy.sandbox: off in the bundle"
        )?,
    }
    Ok(code)
}

/// The registry and catalog: every compiled tool, or an Agent's catalog in a bundle.
fn catalog(
    bundle: Option<&Path>,
    agent: Option<&str>,
    library: &ToolLibrary,
) -> Result<(Arc<ToolRegistry>, ToolCatalog), CliError> {
    let Some(path) = bundle else {
        let registry = ToolRegistry::builder()
            .tools(library.iter().cloned())
            .build()?;
        let catalog = ToolCatalog::all(&registry);
        return Ok((Arc::new(registry), catalog));
    };
    let bundle = Bundle::read(path)?;
    let registry = bundle.registry(library)?;
    let agent = match agent {
        Some(a) => a.to_owned(),
        None => bundle.entry_agent().ok_or_else(|| CliError::NoAgent {
            path: path.to_path_buf(),
        })?,
    };
    let tools = bundle.agent_tools(&agent)?;
    let catalog = ToolCatalog::build(&registry, tools.iter().map(String::as_str))?;
    Ok((Arc::new(registry), catalog))
}

fn list(catalog: &ToolCatalog, format: Format, out: &mut dyn Write) -> Result<u8, CliError> {
    let dialect = match format {
        Format::Text => {
            let width = catalog.names().map(str::len).max().unwrap_or(0);
            for item in catalog {
                let d = item.description().unwrap_or("");
                let first = d.lines().next().unwrap_or("");
                writeln!(out, "{:width$}  {first}", item.name().as_str())?;
            }
            return Ok(EXIT_OK);
        }
        Format::Json => {
            let text = serde_json::to_string_pretty(&catalog.to_json()).unwrap_or_default();
            writeln!(out, "{text}")?;
            return Ok(EXIT_OK);
        }
        Format::Openai => Dialect::OPENAI_CHAT,
        Format::OpenaiResponses => Dialect::OPENAI_RESPONSES,
        Format::Anthropic => Dialect::ANTHROPIC,
        Format::Gemini => Dialect::GEMINI,
        Format::Mcp => Dialect::MCP,
    };
    let tools = dialect.tools(catalog)?;
    writeln!(
        out,
        "{}",
        serde_json::to_string_pretty(&tools).unwrap_or_default()
    )?;
    Ok(EXIT_OK)
}

#[allow(clippy::too_many_arguments)]
fn call(
    registry: Arc<ToolRegistry>,
    catalog: &ToolCatalog,
    name: &str,
    args: Value,
    workdir: PathBuf,
    agent: Option<&str>,
    json: bool,
    out: &mut dyn Write,
) -> Result<u8, CliError> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(CliError::Runtime)?;
    let executor = ToolExecutor::new(registry);
    let cancel = CancellationToken::new();
    let ctx = ToolContext::builder(workdir)
        .agent_name(agent.unwrap_or("cli"))
        .cancellation(cancel.clone())
        .build();
    let call = ToolCall::new("cli-call-1", name, args);
    let running = executor.execute(call, &ctx, catalog);
    let (result, stopped) = runtime.block_on(until_stopped(running, &cancel))?;
    if json {
        let text = serde_json::to_string_pretty(&result).unwrap_or_default();
        writeln!(out, "{text}")?;
    } else {
        match result.status {
            ToolStatus::Ok => {
                let output = result.output.clone().unwrap_or(Value::Null);
                let text = serde_json::to_string_pretty(&output).unwrap_or_default();
                writeln!(out, "ok {}\n{text}", result.tool_name)?;
            }
            ToolStatus::Pending => {
                let handle = result.handle.as_deref().unwrap_or("");
                writeln!(out, "pending {} handle={handle}", result.tool_name)?;
            }
            ToolStatus::Error => {
                if let Some(e) = &result.error {
                    let code = e.code();
                    writeln!(out, "error {} [{code}]: {}", result.tool_name, e.message())?;
                    if let Some(s) = e.suggestion() {
                        writeln!(out, "suggestion: {s}")?;
                    }
                }
            }
        }
    }
    Ok(match stopped {
        Some(status) => status,
        None if result.status == ToolStatus::Error => EXIT_FAILED,
        None => EXIT_OK,
    })
}

/// Awaits `running`, a call that `cancel` cancels, until it ends or SIGINT or SIGTERM comes.
/// On a signal, cancels the call and waits for it and every process it started to end; the
/// exit status the signal gives comes with the result.
async fn until_stopped<T>(
    running: impl Future<Output = T>,
    cancel: &CancellationToken,
) -> Result<(T, Option<u8>), CliError> {
    let mut stop = StopSignals::listen().map_err(CliError::Signals)?;
    let mut running = std::pin::pin!(running);
    let status = tokio::select! {
        result = &mut running => return Ok((result, None)),
        status = stop.next() => status,
    };
    cancel.cancel();
    let result = running.await;
    // The executor gives up on a cancelled call at once; what it started may still run.
    crate::bash::end_own_calls(BashPolicy::default().kill_grace).await;
    Ok((result, Some(status)))
}

/// SIGINT and SIGTERM, caught while a call runs so that it is cancelled and every process it
/// started ends before this program does.
struct StopSignals {
    interrupt: Signal,
    terminate: Signal,
}

impl StopSignals {
    /// Catches both from now on (in place of their default, ending the program at once).
    fn listen() -> std::io::Result<Self> {
        Ok(Self {
            interrupt: signal(SignalKind::interrupt())?,
            terminate: signal(SignalKind::terminate())?,
        })
    }

    /// The next one to come, as the exit status it gives by convention.
    async fn next(&mut self) -> u8 {
        tokio::select! {
            _ = self.interrupt.recv() => EXIT_INTERRUPTED,
            _ = self.terminate.recv() => EXIT_TERMINATED,
        }
    }
}
