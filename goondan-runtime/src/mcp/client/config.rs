//! What an MCP extension connects to: its servers, each a child process speaking stdio or a
//! Streamable HTTP endpoint, with the tools to take from it and the bounds on waiting.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use super::auth::{Authorizer, McpAuth};
use super::launcher::Launcher;
use super::token_store::TokenStore;

use crate::tools::name::{NameError, validate_resource_name};

/// How long a call waits for its server to be up (starting or restarting) before it fails
/// with `E_MCP_UNAVAILABLE`.
pub const DEFAULT_STARTUP_TIMEOUT: Duration = Duration::from_secs(20);

/// How long a bridged call may run when its export sets no timeout of its own.
pub const DEFAULT_CALL_TIMEOUT: Duration = Duration::from_secs(300);

/// The longest pause between two restarts of a server that keeps failing.
pub const MAX_RESTART_BACKOFF: Duration = Duration::from_secs(30);

/// The first pause before a restart.
pub const FIRST_RESTART_BACKOFF: Duration = Duration::from_millis(100);

/// How to reach one MCP server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum McpTransport {
    /// A child process speaking MCP over its stdin and stdout.
    Stdio {
        /// The program.
        command: PathBuf,
        /// Its arguments.
        args: Vec<String>,
        /// Variables added to the inherited environment.
        env: BTreeMap<String, String>,
        /// Its working directory (default: the host's).
        cwd: Option<PathBuf>,
    },
    /// A Streamable HTTP endpoint.
    Http {
        /// The endpoint, e.g. `http://127.0.0.1:8080/mcp`.
        url: String,
        /// Headers sent with every request (e.g. `Authorization`).
        headers: BTreeMap<String, String>,
    },
}

/// One MCP server of an extension: a name (the resource part of its tools' names), how to
/// reach it, and which of its tools to take.
///
/// ```
/// use goondan_runtime::mcp::client::McpServerConfig;
/// let files = McpServerConfig::stdio("files", "mcp-server-filesystem")
///     .arg("/tmp")
///     .env("LOG_LEVEL", "warn")
///     .exclude(["write_file"]);
/// assert_eq!(files.name(), "files");
/// let search = McpServerConfig::http("search", "http://127.0.0.1:8080/mcp")
///     .header("Authorization", "Bearer secret")
///     .include(["search"]);
/// assert!(search.takes("search"));
/// assert!(!search.takes("index"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpServerConfig {
    pub(crate) name: String,
    pub(crate) transport: McpTransport,
    pub(crate) include: Option<Vec<String>>,
    pub(crate) exclude: Vec<String>,
    pub(crate) startup_timeout: Duration,
    pub(crate) call_timeout: Duration,
    pub(crate) auth: McpAuth,
    pub(crate) protocol_version: Option<String>,
    pub(crate) sampling: bool,
    pub(crate) launcher: Shared<dyn Launcher>,
    pub(crate) sandbox: Option<serde_json::Value>,
    pub(crate) required: bool,
}

impl McpServerConfig {
    /// A server run as the child process `command`, spoken to over stdio.
    pub fn stdio(name: impl Into<String>, command: impl Into<PathBuf>) -> Self {
        Self::with_transport(
            name,
            McpTransport::Stdio {
                command: command.into(),
                args: Vec::new(),
                env: BTreeMap::new(),
                cwd: None,
            },
        )
    }

    /// A server at the Streamable HTTP endpoint `url`.
    pub fn http(name: impl Into<String>, url: impl Into<String>) -> Self {
        Self::with_transport(
            name,
            McpTransport::Http {
                url: url.into(),
                headers: BTreeMap::new(),
            },
        )
    }

    fn with_transport(name: impl Into<String>, transport: McpTransport) -> Self {
        Self {
            name: name.into(),
            transport,
            include: None,
            exclude: Vec::new(),
            startup_timeout: DEFAULT_STARTUP_TIMEOUT,
            call_timeout: DEFAULT_CALL_TIMEOUT,
            auth: McpAuth::None,
            protocol_version: None,
            sampling: true,
            launcher: Shared::default(),
            sandbox: None,
            required: false,
        }
    }

    /// Starts a stdio server's process through `launcher` (goondan-base's sandbox, say)
    /// instead of as the host runs it; no effect on an HTTP server.
    #[must_use]
    pub fn launcher(mut self, launcher: impl Launcher) -> Self {
        self.launcher = Shared(Some(Arc::new(launcher)));
        self
    }

    /// Whether a [`Launcher`] starts the server.
    pub fn has_launcher(&self) -> bool {
        self.launcher.0.is_some()
    }

    /// The server's `sandbox` setting as a bundle wrote it (read by the program that starts
    /// the server; goondan-base's sandbox reads a mode or `{mode, read, write, env, network}`).
    #[must_use]
    pub fn sandbox(mut self, setting: serde_json::Value) -> Self {
        self.sandbox = Some(setting);
        self
    }

    /// The setting of [`McpServerConfig::sandbox`].
    pub fn sandbox_setting(&self) -> Option<&serde_json::Value> {
        self.sandbox.as_ref()
    }

    /// Whether the server may ask the agent's model for completions mid-call (MCP
    /// sampling; default: yes). When not, the client does not announce sampling to it and
    /// refuses its sampling requests.
    #[must_use]
    pub fn sampling(mut self, allowed: bool) -> Self {
        self.sampling = allowed;
        self
    }

    /// How to authorize with an HTTP server (no effect on a stdio server).
    #[must_use]
    pub fn auth(mut self, auth: McpAuth) -> Self {
        self.auth = auth;
        self
    }

    /// The protocol revision to speak, e.g. `2026-07-28` (the stateless lifecycle:
    /// `server/discover` and per-request metadata) or `2025-11-25` (the `initialize`
    /// handshake). Default: `2025-11-25`'s handshake, which every server answers.
    #[must_use]
    pub fn protocol_version(mut self, version: impl Into<String>) -> Self {
        self.protocol_version = Some(version.into());
        self
    }

    /// Adds an argument of a stdio server's command (no effect on an HTTP server).
    #[must_use]
    pub fn arg(self, arg: impl Into<String>) -> Self {
        self.args([arg])
    }

    /// Adds arguments of a stdio server's command.
    #[must_use]
    pub fn args<S: Into<String>>(mut self, more: impl IntoIterator<Item = S>) -> Self {
        if let McpTransport::Stdio { args, .. } = &mut self.transport {
            args.extend(more.into_iter().map(Into::into));
        }
        self
    }

    /// Sets an environment variable of a stdio server.
    #[must_use]
    pub fn env(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        if let McpTransport::Stdio { env, .. } = &mut self.transport {
            env.insert(key.into(), value.into());
        }
        self
    }

    /// Sets the working directory of a stdio server.
    #[must_use]
    pub fn cwd(mut self, dir: impl Into<PathBuf>) -> Self {
        if let McpTransport::Stdio { cwd, .. } = &mut self.transport {
            *cwd = Some(dir.into());
        }
        self
    }

    /// Adds a header sent with every request to an HTTP server.
    #[must_use]
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        if let McpTransport::Http { headers, .. } = &mut self.transport {
            headers.insert(name.into(), value.into());
        }
        self
    }

    /// Takes only these tools (remote names); the default takes every tool.
    #[must_use]
    pub fn include<S: Into<String>>(mut self, tools: impl IntoIterator<Item = S>) -> Self {
        self.include
            .get_or_insert_with(Vec::new)
            .extend(tools.into_iter().map(Into::into));
        self
    }

    /// Leaves these tools (remote names) out, whatever `include` says.
    #[must_use]
    pub fn exclude<S: Into<String>>(mut self, tools: impl IntoIterator<Item = S>) -> Self {
        self.exclude.extend(tools.into_iter().map(Into::into));
        self
    }

    /// Whether the extension cannot start without this server (default `false`). A server that
    /// is not required and is not up within its startup timeout (unreachable, refusing, not
    /// authorized, too slow, answering something unusable) is left out with a warning, and
    /// [`McpExtension::connect`](super::McpExtension::connect) succeeds with the others; it
    /// keeps being started again with backoff, and its tools come when it is up. A required
    /// one fails the whole start.
    #[must_use]
    pub fn required(mut self, required: bool) -> Self {
        self.required = required;
        self
    }

    /// How long a call waits for the server to be up before `E_MCP_UNAVAILABLE` (default
    /// [`DEFAULT_STARTUP_TIMEOUT`]); also the bound on the first connection.
    #[must_use]
    pub fn startup_timeout(mut self, timeout: Duration) -> Self {
        self.startup_timeout = timeout;
        self
    }

    /// How long one call may run (default [`DEFAULT_CALL_TIMEOUT`]); past it the call is
    /// cancelled on the server (`notifications/cancelled`) and fails with `E_TOOL_TIMEOUT`.
    /// The executor's own timeout, when shorter, fires first.
    #[must_use]
    pub fn call_timeout(mut self, timeout: Duration) -> Self {
        self.call_timeout = timeout;
        self
    }

    /// The server's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// How to reach it.
    pub fn transport(&self) -> &McpTransport {
        &self.transport
    }

    /// How it authorizes.
    pub fn authorization(&self) -> &McpAuth {
        &self.auth
    }

    /// The URL of an HTTP server; `None` for a stdio one.
    pub fn url(&self) -> Option<&str> {
        match &self.transport {
            McpTransport::Http { url, .. } => Some(url),
            McpTransport::Stdio { .. } => None,
        }
    }

    /// Whether the remote tool `tool` is taken (include, then exclude).
    pub fn takes(&self, tool: &str) -> bool {
        let included = self
            .include
            .as_ref()
            .is_none_or(|list| list.iter().any(|t| t == tool));
        included && !self.exclude.iter().any(|t| t == tool)
    }
}

/// An MCP extension: a name (the `source.name` and `source.mcp.extensionName` of its tools)
/// and its servers.
///
/// ```
/// use goondan_runtime::mcp::client::{McpExtensionConfig, McpServerConfig};
/// let config = McpExtensionConfig::new("mcp")
///     .server(McpServerConfig::stdio("everything", "mcp-server-everything").exclude(["get-env"]));
/// assert!(config.check().is_ok());
/// assert!(McpExtensionConfig::new("mcp").server(McpServerConfig::stdio("a__b", "x")).check().is_err());
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpExtensionConfig {
    pub(crate) name: String,
    pub(crate) servers: Vec<McpServerConfig>,
    pub(crate) tokens: Option<TokenStore>,
    pub(crate) authorizer: Shared<dyn Authorizer>,
    pub(crate) skills: Option<super::SkillsShown>,
}

/// A shared object of a configuration (an extension's authorizer, a server's launcher), if
/// any: equal when it is the same one.
pub(crate) struct Shared<T: ?Sized>(pub(crate) Option<Arc<T>>);

impl<T: ?Sized> Default for Shared<T> {
    fn default() -> Self {
        Self(None)
    }
}

impl<T: ?Sized> Clone for Shared<T> {
    fn clone(&self) -> Self {
        Self(self.0.clone())
    }
}

impl<T: ?Sized> std::fmt::Debug for Shared<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() { "Some(..)" } else { "None" })
    }
}

impl<T: ?Sized> PartialEq for Shared<T> {
    fn eq(&self, other: &Self) -> bool {
        match (&self.0, &other.0) {
            (Some(a), Some(b)) => Arc::ptr_eq(a, b),
            (None, None) => true,
            _ => false,
        }
    }
}

impl<T: ?Sized> Eq for Shared<T> {}

/// Why an extension's configuration is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum McpConfigError {
    /// A server's name cannot be the resource part of a tool name.
    #[error("MCP server name `{server}` cannot prefix tool names: {source}")]
    ServerName {
        /// The server.
        server: String,
        /// Why.
        #[source]
        source: NameError,
    },
    /// Two servers share a name.
    #[error("MCP server `{server}` is declared twice")]
    DuplicateServer {
        /// The server.
        server: String,
    },
    /// A protocol revision this client does not speak.
    #[error(
        "MCP server `{server}`: protocol version `{version}` is not one this client speaks ({known})"
    )]
    ProtocolVersion {
        /// The server.
        server: String,
        /// The version asked for.
        version: String,
        /// The versions spoken.
        known: String,
    },
    /// A header name or value HTTP does not accept.
    #[error("MCP server `{server}`: header `{header}` is not a valid HTTP header")]
    Header {
        /// The server.
        server: String,
        /// The header's name.
        header: String,
    },
}

impl McpExtensionConfig {
    /// An extension with no servers yet.
    pub fn new(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            servers: Vec::new(),
            tokens: None,
            authorizer: Shared::default(),
            skills: None,
        }
    }

    /// Shows the skills of this extension's servers to the agent's model (`spec.mcp.skills`:
    /// `tool` or `prompt`); the base tools' `Skills` extension does it. Default: not shown.
    #[must_use]
    pub fn show_skills(mut self, shown: super::SkillsShown) -> Self {
        self.skills = Some(shown);
        self
    }

    /// How this extension's skills are shown to the model, if they are.
    pub fn skills_shown(&self) -> Option<super::SkillsShown> {
        self.skills
    }

    /// Where the OAuth tokens of this extension's servers are kept (default:
    /// [`TokenStore::for_user`]).
    #[must_use]
    pub fn token_store(mut self, store: TokenStore) -> Self {
        self.tokens = Some(store);
        self
    }

    /// Who opens the authorization URL when a server needs a person's authorization and the
    /// token store has no usable tokens. Without one, such a server is `E_MCP_AUTH`.
    #[must_use]
    pub fn authorizer(mut self, authorizer: Arc<dyn Authorizer>) -> Self {
        self.authorizer = Shared(Some(authorizer));
        self
    }

    /// Adds a server.
    #[must_use]
    pub fn server(mut self, server: McpServerConfig) -> Self {
        self.servers.push(server);
        self
    }

    /// The extension's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Its servers, in order.
    pub fn servers(&self) -> &[McpServerConfig] {
        &self.servers
    }

    /// Replaces each server with what `f` makes of it (a program setting every server's
    /// [`McpServerConfig::launcher`] from its sandbox setting, say).
    #[must_use]
    pub fn map_servers(mut self, f: impl FnMut(McpServerConfig) -> McpServerConfig) -> Self {
        self.servers = self.servers.into_iter().map(f).collect();
        self
    }

    /// Checks the server names (each a valid resource name, no two alike) and headers.
    pub fn check(&self) -> Result<(), McpConfigError> {
        let mut seen = std::collections::HashSet::new();
        let known: Vec<_> = rmcp::model::ProtocolVersion::KNOWN_VERSIONS
            .iter()
            .map(|k| k.as_str())
            .collect();
        for s in &self.servers {
            validate_resource_name(&s.name).map_err(|source| McpConfigError::ServerName {
                server: s.name.clone(),
                source,
            })?;
            if !seen.insert(s.name.as_str()) {
                return Err(McpConfigError::DuplicateServer {
                    server: s.name.clone(),
                });
            }
            if let Some(version) = &s.protocol_version
                && !known.contains(&version.as_str())
            {
                return Err(McpConfigError::ProtocolVersion {
                    server: s.name.clone(),
                    version: version.clone(),
                    known: known.join(", "),
                });
            }
            if let McpTransport::Http { headers, .. } = &s.transport {
                for (k, v) in headers {
                    let ok = http::HeaderName::try_from(k.as_str()).is_ok()
                        && http::HeaderValue::try_from(v.as_str()).is_ok();
                    if !ok {
                        return Err(McpConfigError::Header {
                            server: s.name.clone(),
                            header: k.clone(),
                        });
                    }
                }
            }
        }
        Ok(())
    }
}
