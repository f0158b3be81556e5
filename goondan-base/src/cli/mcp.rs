//! `goondan mcp serve`: a catalog served over MCP, on stdio or Streamable HTTP.

use std::io::Write;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;

use goondan_runtime::bundle::{Bundle, BundleError, ToolLibrary};
use goondan_runtime::calls::approval::{Approvals, Policy};
use goondan_runtime::code::CodeMode;
use goondan_runtime::mcp::server::{ElicitationApprover, McpServer, McpServerError, ServeError};
use goondan_runtime::tools::registry::RegistryError;
use goondan_runtime::{ToolExecutor, ToolRegistry};

use super::EXIT_OK;
use crate::extensions::Bm25Ranker;

/// Why `goondan mcp serve` could not serve.
#[derive(Debug, thiserror::Error)]
pub(crate) enum McpCliError {
    #[error(transparent)]
    Bundle(#[from] BundleError),
    #[error(transparent)]
    Registry(#[from] RegistryError),
    #[error(transparent)]
    Server(#[from] McpServerError),
    #[error(transparent)]
    Serve(#[from] ServeError),
    #[error("the bundle `{}` has no Agent to serve; pass `--agent`", path.display())]
    NoAgent { path: std::path::PathBuf },
    #[error("cannot start the async runtime: {0}")]
    Runtime(#[source] std::io::Error),
    #[error("cannot write to the terminal: {0}")]
    Io(#[from] std::io::Error),
}

/// What to serve, and where.
pub(crate) struct Serve<'a> {
    pub(crate) bundle: Option<&'a Path>,
    pub(crate) agent: Option<&'a str>,
    pub(crate) tools: &'a [String],
    pub(crate) http: Option<SocketAddr>,
    pub(crate) limits: goondan_runtime::mcp::server::HttpLimits,
    pub(crate) workdir: Option<&'a Path>,
    pub(crate) approve: Policy,
    /// Serve code mode (`--code-mode`).
    pub(crate) code_mode: bool,
    /// The skills folder to serve (`--skills`).
    pub(crate) skills: Option<&'a Path>,
}

/// Serves until the client disconnects (stdio) or the process is interrupted (HTTP).
pub(crate) fn serve(
    serve: &Serve<'_>,
    library: &ToolLibrary,
    out: &mut dyn Write,
) -> Result<u8, McpCliError> {
    // The bundle Agent's code mode, for its limits, and its skills folder.
    let mut agent_code_mode = None;
    let mut skills = serve.skills.map(Path::to_path_buf);
    let mut builder = match serve.bundle {
        Some(path) => {
            let bundle = Bundle::read(path)?;
            let agent = match serve.agent {
                Some(a) => a.to_owned(),
                None => bundle.entry_agent().ok_or_else(|| McpCliError::NoAgent {
                    path: path.to_path_buf(),
                })?,
            };
            agent_code_mode = bundle.code_mode(&agent);
            if skills.is_none() {
                skills = bundle.skills(&agent);
            }
            McpServer::for_agent(&bundle, library, &agent)?
        }
        None => {
            let registry = ToolRegistry::builder()
                .tools(library.iter().cloned())
                .build()?;
            let builder = McpServer::builder(Arc::new(registry));
            if serve.tools.is_empty() {
                builder
            } else {
                builder.tools(serve.tools.iter().cloned())
            }
        }
    };
    if let Some(w) = serve.workdir {
        builder = builder.workdir(w);
    }
    builder = builder.http_limits(serve.limits);
    if serve.approve != Policy::Allow {
        let approvals = Approvals::new(ElicitationApprover::new()).default_policy(serve.approve);
        let executor = ToolExecutor::builder(Arc::clone(builder.registry()))
            .middleware(approvals)
            .build();
        builder = builder.executor(executor);
    }
    if let Some(folder) = skills {
        builder = builder.skills(folder);
    }
    if serve.code_mode {
        // A client shown the code tool alone finds the functions with the search.
        let mode =
            agent_code_mode.unwrap_or_else(|| CodeMode::new().tools_callable_directly(false));
        let mode = crate::code_worker::as_this_host_runs_it(mode);
        builder = builder.code_mode(mode.search(Bm25Ranker::new()));
    }
    let server = builder.build()?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(McpCliError::Runtime)?;
    match serve.http {
        None => runtime.block_on(server.serve_stdio())?,
        Some(addr) => {
            let http = runtime.block_on(server.serve_http(addr))?;
            writeln!(out, "serving MCP at {}", http.url())?;
            out.flush()?;
            runtime.block_on(http.run_until(async {
                let _ = tokio::signal::ctrl_c().await;
            }))?;
        }
    }
    Ok(EXIT_OK)
}
