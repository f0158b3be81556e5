//! `goondan mcp login`, `logout` and `servers`: the OAuth tokens of a bundle's bridged MCP
//! servers, kept in the user's token store.

use std::io::Write;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use goondan_runtime::bundle::{Bundle, BundleError};
use goondan_runtime::mcp::client::{
    AuthState, LeftOutTool, LoopbackAuthorizer, McpAuth, McpClientError, McpExtension,
    McpExtensionConfig, McpServerConfig, ServerStatus, TokenStore, TokenStoreError,
};
use serde_json::json;

use super::EXIT_OK;

/// Why a `goondan mcp login|logout|servers` could not finish.
#[derive(Debug, thiserror::Error)]
pub(crate) enum McpAuthCliError {
    #[error(transparent)]
    Bundle(#[from] BundleError),
    #[error("the bundle declares no MCP server `{server}`; its servers: {known}")]
    UnknownServer { server: String, known: String },
    #[error(
        "the MCP server `{server}` does not use OAuth (`auth: oauth`): there is nothing to log in to"
    )]
    NoOAuth { server: String },
    #[error(
        "there is no token store: no OS keyring answers and neither XDG_STATE_HOME nor HOME is set"
    )]
    NoTokenStore,
    #[error("cannot listen on 127.0.0.1 for the browser's redirect: {0}")]
    Listen(#[source] std::io::Error),
    #[error(transparent)]
    Login(#[from] McpClientError),
    #[error("cannot forget the tokens of `{server}`: {source}")]
    Forget {
        server: String,
        #[source]
        source: TokenStoreError,
    },
    #[error("cannot start the async runtime: {0}")]
    Runtime(#[source] std::io::Error),
    #[error("cannot write to the terminal: {0}")]
    Io(#[from] std::io::Error),
}

/// What `goondan mcp login` logs in to.
pub(crate) struct Login<'a> {
    pub(crate) server: &'a str,
    pub(crate) bundle: &'a Path,
    pub(crate) port: u16,
    pub(crate) wait: Duration,
}

fn store() -> Result<TokenStore, McpAuthCliError> {
    TokenStore::for_user().ok_or(McpAuthCliError::NoTokenStore)
}

/// The extension and configuration of the bundle's server `name`.
fn find(bundle: &Bundle, name: &str) -> Result<(String, McpServerConfig), McpAuthCliError> {
    let mut known = Vec::new();
    for extension in bundle.mcp_extensions()? {
        for server in extension.servers() {
            if server.name() == name {
                return Ok((extension.name().to_owned(), server.clone()));
            }
            known.push(server.name().to_owned());
        }
    }
    Err(McpAuthCliError::UnknownServer {
        server: name.to_owned(),
        known: if known.is_empty() {
            "none".to_owned()
        } else {
            known.join(", ")
        },
    })
}

/// Runs the authorization-code flow for one server (the bridge's own: the same connect a
/// run makes, with a browser to ask), and keeps its tokens.
pub(crate) fn login(login: &Login<'_>, out: &mut dyn Write) -> Result<u8, McpAuthCliError> {
    let bundle = Bundle::read(login.bundle)?;
    let (extension, server) = find(&bundle, login.server)?;
    if !matches!(server.authorization(), McpAuth::OAuth(_)) {
        return Err(McpAuthCliError::NoOAuth {
            server: login.server.to_owned(),
        });
    }
    let store = store()?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(McpAuthCliError::Runtime)?;
    // A person takes longer than a server's start: the wait for the browser bounds it.
    // A login that cannot reach the server, or is refused, fails: the server is required.
    let server = server
        .startup_timeout(login.wait + Duration::from_secs(30))
        .required(true);
    let url = server.url().unwrap_or_default().to_owned();
    runtime.block_on(async {
        let browser = LoopbackAuthorizer::bind(login.port)
            .await
            .map_err(McpAuthCliError::Listen)?
            .wait(login.wait);
        let config = McpExtensionConfig::new(extension)
            .server(server)
            .token_store(store.clone())
            .authorizer(Arc::new(browser));
        let mcp = McpExtension::connect(config).await?;
        mcp.shutdown();
        Ok::<_, McpAuthCliError>(())
    })?;
    match store.state(login.server, &url) {
        AuthState::LoggedIn { scopes, .. } if !scopes.is_empty() => writeln!(
            out,
            "logged in to `{}` (scopes: {}); its tokens are kept in {}",
            login.server,
            scopes.join(" "),
            store.location()
        )?,
        _ => writeln!(
            out,
            "logged in to `{}`; its tokens are kept in {}",
            login.server,
            store.location()
        )?,
    }
    Ok(EXIT_OK)
}

/// Forgets one server's tokens.
pub(crate) fn logout(server: &str, out: &mut dyn Write) -> Result<u8, McpAuthCliError> {
    let forgot = store()?
        .forget(server)
        .map_err(|source| McpAuthCliError::Forget {
            server: server.to_owned(),
            source,
        })?;
    if forgot {
        writeln!(out, "logged out of `{server}`")?;
    } else {
        writeln!(out, "no tokens were kept for `{server}`")?;
    }
    Ok(EXIT_OK)
}

/// Lists the bundle's MCP servers with their auth state.
pub(crate) fn servers(
    path: &Path,
    check: bool,
    as_json: bool,
    out: &mut dyn Write,
) -> Result<u8, McpAuthCliError> {
    let bundle = Bundle::read(path)?;
    let store = TokenStore::for_user();
    let extensions = bundle.mcp_extensions()?;
    let statuses = if check {
        checked(path, &extensions)?
    } else {
        Vec::new()
    };
    let mut rows = Vec::new();
    for extension in extensions {
        for server in extension.servers() {
            let auth = match server.authorization() {
                McpAuth::OAuth(_) => "oauth",
                McpAuth::ClientCredentials(_) => "client-credentials",
                McpAuth::WorkloadIdentity(_) => "workload-identity",
                McpAuth::Enterprise(_) => "enterprise",
                _ => "none",
            };
            let state = match (server.authorization(), server.url(), &store) {
                (McpAuth::OAuth(_), Some(url), Some(store)) => {
                    match store.state(server.name(), url) {
                        AuthState::LoggedIn {
                            refreshable: true, ..
                        } => "logged in".to_owned(),
                        AuthState::LoggedIn { .. } => "logged in (no refresh token)".to_owned(),
                        AuthState::LoggedOut => {
                            format!("logged out: goondan mcp login {}", server.name())
                        }
                        AuthState::Unreadable(why) => format!("unreadable: {why}"),
                    }
                }
                (McpAuth::OAuth(_), _, None) => "no token store (set HOME)".to_owned(),
                (
                    McpAuth::ClientCredentials(_)
                    | McpAuth::WorkloadIdentity(_)
                    | McpAuth::Enterprise(_),
                    ..,
                ) => "authorized when started".to_owned(),
                _ => "-".to_owned(),
            };
            let place = server
                .url()
                .map(str::to_owned)
                .unwrap_or_else(|| "stdio".to_owned());
            // Where an OAuth server's tokens are (the OS keyring, or a directory).
            let kept_in = match (server.authorization(), &store) {
                (McpAuth::OAuth(_), Some(store)) => Some(store.location().to_string()),
                _ => None,
            };
            let status = statuses
                .iter()
                .find(|(e, s, _)| e == extension.name() && s == server.name())
                .map(|(_, _, status)| status.clone());
            rows.push((
                server.name().to_owned(),
                extension.name().to_owned(),
                place,
                auth,
                state,
                kept_in,
                status,
            ));
        }
    }
    if as_json {
        let list: Vec<_> = rows
            .iter()
            .map(|(name, extension, place, auth, state, kept_in, status)| {
                let mut row = json!({"name": name, "extension": extension, "at": place, "auth": auth, "state": state});
                if let Some(kept_in) = kept_in {
                    row["tokens"] = json!(kept_in);
                }
                if let Some(status) = status {
                    row["status"] = json!(status);
                }
                row
            })
            .collect();
        writeln!(out, "{}", serde_json::Value::Array(list))?;
        return Ok(EXIT_OK);
    }
    let kept_in = rows.iter().find_map(|row| row.5.clone());
    for (name, extension, place, auth, state, _, status) in rows {
        match status {
            Some(status) => {
                writeln!(
                    out,
                    "{name}\t{extension}\t{place}\t{auth}\t{state}\t{status}"
                )?;
            }
            None => writeln!(out, "{name}\t{extension}\t{place}\t{auth}\t{state}")?,
        }
    }
    if let Some(kept_in) = kept_in {
        writeln!(out, "tokens are kept in {kept_in}")?;
    }
    Ok(EXIT_OK)
}

/// Starts each extension's servers as `goondan run` does (stdio servers in their sandbox, the
/// user's kept tokens, no browser), none of them required, and says where each stands once it
/// is settled: `(extension, server, status)`.
fn checked(
    path: &Path,
    extensions: &[McpExtensionConfig],
) -> Result<Vec<(String, String, String)>, McpAuthCliError> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(McpAuthCliError::Runtime)?;
    let mut statuses = Vec::new();
    for config in extensions {
        let extension = config.name().to_owned();
        let config = super::run::sandbox::sandboxed_servers(
            config.clone().map_servers(|s| s.required(false)),
            Some(path),
            None,
            None,
        );
        let mcp = runtime.block_on(McpExtension::connect(config))?;
        for (server, status) in mcp.statuses() {
            let status = match status {
                ServerStatus::Up { .. } => {
                    let up = format!("up ({} tools)", mcp.tool_names(&server).len());
                    match LeftOutTool::summary(&mcp.left_out(&server)) {
                        Some(left) => format!("{up}; {left}"),
                        None => up,
                    }
                }
                ServerStatus::Starting => "starting".to_owned(),
                ServerStatus::Down { reason } => format!("unavailable: {reason}"),
                ServerStatus::Unauthorized { reason } => format!("not authorized: {reason}"),
            };
            statuses.push((extension.clone(), server, status));
        }
        mcp.shutdown();
    }
    Ok(statuses)
}
