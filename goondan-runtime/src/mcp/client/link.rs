//! The link to one MCP server: a supervisor task that starts it (a child process or an HTTP
//! session), lists its tools, notices when it stops and starts it again with backoff; and the
//! calls that go through it, each bounded in time.

use std::collections::{BTreeMap, HashSet};
use std::process::Stdio;
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, ClientCapabilities, ClientConfig, Implementation,
};
use rmcp::service::{NotificationContext, Peer, RoleClient, RunningService, ServiceError};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{ClientHandler, serve_client};
use serde_json::Value;
use tokio::io::AsyncBufReadExt;
use tokio::sync::watch;
use tokio_util::sync::{CancellationToken, DropGuard};

use super::config::{FIRST_RESTART_BACKOFF, MAX_RESTART_BACKOFF, McpServerConfig, McpTransport};
use super::naming::local_name;
use super::outcome::{self, unavailable};
use super::task;
use crate::calls::refusal;
use crate::tools::context::ToolContext;
use crate::tools::error::ToolError;
use crate::tools::handler::Outcome;
use crate::tools::result::JsonObject;

/// Where a server stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ServerStatus {
    /// Being started (first start or restart).
    Starting,
    /// Connected.
    Up {
        /// The process id of a stdio server.
        pid: Option<u32>,
    },
    /// Stopped or unreachable; the supervisor tries again after a pause.
    Down {
        /// Why.
        reason: String,
    },
}

#[derive(Clone)]
enum State {
    Starting,
    Up {
        peer: Peer<RoleClient>,
        pid: Option<u32>,
    },
    Down {
        reason: String,
    },
}

/// One remote tool the extension bridges.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct RemoteTool {
    /// The name the server gives it.
    pub(crate) remote: String,
    /// Its description.
    pub(crate) description: Option<String>,
    /// Its input schema.
    pub(crate) parameters: Value,
}

#[derive(Default)]
struct Listed {
    /// The current tools, by local name.
    tools: BTreeMap<String, RemoteTool>,
    /// The remote names whose mapping was reported.
    reported: HashSet<String>,
}

/// What a link tells its extension: the server's tools changed.
pub(crate) trait ToolsChanged: Send + Sync + 'static {
    /// The tools of `link` changed (first listing, `list_changed`, restart).
    fn tools_changed(&self, link: &Arc<ServerLink>);
}

/// The link to one server. Dropping the last handle stops the supervisor and the server.
pub(crate) struct ServerLink {
    pub(crate) config: McpServerConfig,
    pub(crate) extension: String,
    state: watch::Sender<State>,
    listed: Mutex<Listed>,
    changed: Arc<dyn ToolsChanged>,
    stop: CancellationToken,
    _stop_on_drop: DropGuard,
}

impl ServerLink {
    /// Starts the supervisor of `config`'s server; `changed` hears of every new tool list.
    pub(crate) fn start(
        extension: &str,
        config: McpServerConfig,
        changed: Arc<dyn ToolsChanged>,
    ) -> Arc<Self> {
        let stop = CancellationToken::new();
        let link = Arc::new(Self {
            config,
            extension: extension.to_owned(),
            state: watch::Sender::new(State::Starting),
            listed: Mutex::new(Listed::default()),
            changed,
            stop: stop.clone(),
            _stop_on_drop: stop.clone().drop_guard(),
        });
        tokio::spawn(supervise(Arc::downgrade(&link), stop));
        link
    }

    fn listed(&self) -> MutexGuard<'_, Listed> {
        self.listed.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Where the server stands.
    pub(crate) fn status(&self) -> ServerStatus {
        match &*self.state.borrow() {
            State::Starting => ServerStatus::Starting,
            State::Up { pid, .. } => ServerStatus::Up { pid: *pid },
            State::Down { reason } => ServerStatus::Down {
                reason: reason.clone(),
            },
        }
    }

    /// Waits, at most `limit`, until the server is up or has failed.
    pub(crate) async fn settled(&self, limit: Duration) -> ServerStatus {
        let mut rx = self.state.subscribe();
        let _ = tokio::time::timeout(limit, rx.wait_for(|s| !matches!(s, State::Starting))).await;
        self.status()
    }

    /// The current tools, by local name.
    pub(crate) fn tools(&self) -> BTreeMap<String, RemoteTool> {
        self.listed().tools.clone()
    }

    /// Whether `local` is a tool the server lists now.
    pub(crate) fn lists(&self, local: &str) -> bool {
        self.listed().tools.contains_key(local)
    }

    fn notify_changed(self: &Arc<Self>) {
        self.changed.tools_changed(self);
    }

    /// Stops the supervisor and the server.
    pub(crate) fn shutdown(&self) {
        self.stop.cancel();
    }

    /// Keeps the tools of `listing` that the configuration takes, under their local names;
    /// reports each mapped name once. Returns whether the set changed.
    fn set_tools(&self, listing: Vec<rmcp::model::Tool>) -> bool {
        let server = self.config.name();
        let mut listed = self.listed();
        let mut tools = BTreeMap::new();
        for t in listing {
            let remote = t.name.to_string();
            if !self.config.takes(&remote) {
                continue;
            }
            let local = local_name(server, &remote);
            if local.mapped && listed.reported.insert(remote.clone()) {
                tracing::info!(
                    target: "goondan::mcp",
                    extension = %self.extension,
                    server,
                    remote = %remote,
                    local = %local.full,
                    "MCP tool name mapped: `{remote}` is `{}` here",
                    local.full
                );
            }
            tools.insert(
                local.full,
                RemoteTool {
                    remote,
                    description: t.description.map(|d| d.to_string()),
                    parameters: Value::Object(t.input_schema.as_ref().clone()),
                },
            );
        }
        let changed = listed.tools != tools;
        listed.tools = tools;
        changed
    }

    /// Waits, at most the startup timeout, for the server to be up.
    async fn peer(&self) -> Result<Peer<RoleClient>, ToolError> {
        let limit = self.config.startup_timeout;
        let mut rx = self.state.subscribe();
        // A peer whose transport closed is a server that just stopped: its supervisor is about
        // to restart it, so wait for the new one.
        let up = |s: &State| matches!(s, State::Up { peer, .. } if !peer.is_transport_closed());
        let waited = tokio::time::timeout(limit, rx.wait_for(up))
            .await
            .ok()
            .and_then(Result::ok)
            .and_then(|s| match &*s {
                State::Up { peer, .. } => Some(peer.clone()),
                _ => None,
            });
        waited.ok_or_else(|| {
            let why = match &*self.state.borrow() {
                State::Down { reason } => reason.clone(),
                _ => format!("it did not start within {} ms", limit.as_millis()),
            };
            unavailable(&self.config.name, &format!("is not running: {why}"))
        })
    }

    /// Calls the remote tool `remote` with `args`. The call is bounded by the call timeout and
    /// by `ctx`'s cancellation; either drops the request, which sends `notifications/cancelled`.
    pub(crate) async fn call(
        &self,
        ctx: ToolContext,
        remote: String,
        args: JsonObject,
    ) -> Result<Outcome, ToolError> {
        let peer = self.peer().await?;
        let mut params = CallToolRequestParams::new(remote.clone()).with_arguments(args);
        // The call's trace continues in the server (SEP-414: `traceparent` in `_meta`).
        if let Some(parent) = crate::telemetry::traceparent() {
            let mut meta = rmcp::model::RequestMetaObject::new();
            meta.set_traceparent(parent);
            params.meta = Some(meta);
        }
        let limit = self.config.call_timeout;
        let answer = tokio::select! {
            answer = peer.call_tool_once(params) => answer,
            () = ctx.cancellation().cancelled() => return Err(refusal::cancelled()),
            () = tokio::time::sleep(limit) => return Err(refusal::timed_out(limit)),
        };
        let server = &self.config.name;
        match answer {
            Ok(CallToolResponse::Complete(result)) => outcome::from_result(server, &remote, result),
            Ok(CallToolResponse::InputRequired(_)) => Err(outcome::remote_error(
                server,
                &remote,
                "the server asked for more input (elicitation), which this bridge cannot give",
            )),
            Ok(CallToolResponse::Task(created)) => Ok(Outcome::Pending(task::pending(
                peer,
                server.clone(),
                remote,
                created.task,
                limit,
            ))),
            Ok(_) => Err(outcome::remote_error(
                server,
                &remote,
                "the server answered `tools/call` with a reply this client does not know",
            )),
            Err(ServiceError::McpError(e)) => {
                Err(outcome::remote_error(server, &remote, &e.message))
            }
            Err(ServiceError::TransportClosed | ServiceError::TransportSend(_)) => Err(
                unavailable(server, &format!("stopped while running `{remote}`")),
            ),
            Err(e) => Err(outcome::remote_error(server, &remote, &e.to_string())),
        }
    }
}

/// Starts the server, keeps it running, and starts it again with backoff when it stops, until
/// the link is dropped or shut down.
async fn supervise(link: Weak<ServerLink>, stop: CancellationToken) {
    let mut backoff = Backoff::default();
    loop {
        let Some(strong) = link.upgrade() else { return };
        strong.state.send_replace(State::Starting);
        let started = tokio::select! {
            () = stop.cancelled() => return,
            r = tokio::time::timeout(strong.config.startup_timeout, start(&strong, &link)) => r,
        };
        let running = match started {
            Ok(Ok((running, pid))) => {
                let peer = running.peer().clone();
                backoff = Backoff::default();
                strong.state.send_replace(State::Up { peer, pid });
                strong.notify_changed();
                Some(running)
            }
            Ok(Err(reason)) => {
                strong.state.send_replace(State::Down { reason });
                None
            }
            Err(_) => {
                let reason = format!(
                    "it did not start within {} ms",
                    strong.config.startup_timeout.as_millis()
                );
                strong.state.send_replace(State::Down { reason });
                None
            }
        };
        let server = strong.config.name.clone();
        drop(strong);
        if let Some(running) = running {
            let token = running.cancellation_token();
            tokio::select! {
                () = stop.cancelled() => {
                    token.cancel();
                    return;
                }
                quit = running.waiting() => {
                    tracing::warn!(target: "goondan::mcp", server = %server, ?quit, "MCP server stopped; restarting");
                }
            }
            let Some(strong) = link.upgrade() else { return };
            strong.state.send_replace(State::Down {
                reason: "the server stopped; it is being restarted".to_owned(),
            });
        }
        tokio::select! {
            () = stop.cancelled() => return,
            () = tokio::time::sleep(backoff.next_pause()) => {}
        }
    }
}

/// The pauses between restarts: [`FIRST_RESTART_BACKOFF`], doubling up to
/// [`MAX_RESTART_BACKOFF`]; back to the first after a successful start.
#[derive(Debug)]
struct Backoff {
    next: Duration,
}

impl Default for Backoff {
    fn default() -> Self {
        Self {
            next: FIRST_RESTART_BACKOFF,
        }
    }
}

impl Backoff {
    fn next_pause(&mut self) -> Duration {
        let pause = self.next;
        self.next = (self.next * 2).min(MAX_RESTART_BACKOFF);
        pause
    }
}

/// Connects once and lists the tools.
async fn start(
    link: &Arc<ServerLink>,
    weak: &Weak<ServerLink>,
) -> Result<(RunningService<RoleClient, Notifier>, Option<u32>), String> {
    let notifier = Notifier { link: weak.clone() };
    let server = link.config.name.clone();
    let (running, pid) = match &link.config.transport {
        McpTransport::Stdio {
            command,
            args,
            env,
            cwd,
        } => {
            let mut cmd = tokio::process::Command::new(command);
            // An MCP server started by an agent process is not that agent: without the token,
            // a server built on goondan (`goondan mcp serve`) serves MCP instead of taking the
            // agent's place at the Orchestrator.
            cmd.env_remove(crate::agents::orchestrator::agent_mode::ENV_TOKEN);
            cmd.args(args).envs(env);
            if let Some(dir) = cwd {
                cmd.current_dir(dir);
            }
            let (child, stderr) = TokioChildProcess::builder(cmd)
                .stderr(Stdio::piped())
                .spawn()
                .map_err(|e| format!("cannot start `{}`: {e}", command.display()))?;
            let pid = child.id();
            if let Some(stderr) = stderr {
                tokio::spawn(forward_stderr(server.clone(), stderr));
            }
            let running = serve_client(notifier, child)
                .await
                .map_err(|e| format!("the MCP handshake failed: {e}"))?;
            (running, pid)
        }
        McpTransport::Http { url, headers } => {
            let mut custom = std::collections::HashMap::new();
            for (k, v) in headers {
                let name = http::HeaderName::try_from(k.as_str())
                    .map_err(|e| format!("header `{k}`: {e}"))?;
                let value = http::HeaderValue::try_from(v.as_str())
                    .map_err(|e| format!("header `{k}`: {e}"))?;
                custom.insert(name, value);
            }
            let config =
                StreamableHttpClientTransportConfig::with_uri(url.as_str()).custom_headers(custom);
            let transport = StreamableHttpClientTransport::from_config(config);
            let running = serve_client(notifier, transport)
                .await
                .map_err(|e| format!("cannot connect to `{url}`: {e}"))?;
            (running, None)
        }
    };
    let tools = running
        .peer()
        .list_all_tools()
        .await
        .map_err(|e| format!("`tools/list` failed: {e}"))?;
    link.set_tools(tools);
    Ok((running, pid))
}

/// The server's stderr, line by line, as debug events.
async fn forward_stderr(server: String, stderr: tokio::process::ChildStderr) {
    let mut lines = tokio::io::BufReader::new(stderr).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        tracing::debug!(target: "goondan::mcp", server = %server, "{line}");
    }
}

/// The client side of the protocol: announces this client and follows
/// `notifications/tools/list_changed`.
struct Notifier {
    link: Weak<ServerLink>,
}

impl ClientHandler for Notifier {
    async fn on_tool_list_changed(&self, context: NotificationContext<RoleClient>) {
        let link = self.link.clone();
        let peer = context.peer;
        // The listing is a request: it cannot be awaited inside the notification's handler,
        // which runs on the connection's own loop.
        tokio::spawn(async move {
            let Some(strong) = link.upgrade() else { return };
            let limit = strong.config.startup_timeout;
            match tokio::time::timeout(limit, peer.list_all_tools()).await {
                Ok(Ok(tools)) => {
                    if strong.set_tools(tools) {
                        strong.notify_changed();
                    }
                }
                Ok(Err(e)) => {
                    tracing::warn!(target: "goondan::mcp", server = %strong.config.name, "`tools/list` after `list_changed` failed: {e}")
                }
                Err(_) => {
                    tracing::warn!(target: "goondan::mcp", server = %strong.config.name, "`tools/list` after `list_changed` timed out")
                }
            }
        });
    }

    fn get_info(&self) -> ClientConfig {
        // The tasks extension (SEP-2663): a server may answer a call with a task, which
        // becomes a pending result here.
        ClientConfig::new(
            ClientCapabilities::builder().enable_tasks().build(),
            Implementation::new("goondan", env!("CARGO_PKG_VERSION")),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn restart_pauses_double_from_the_first_up_to_the_cap() {
        let mut b = Backoff::default();
        let pauses: Vec<_> = (0..12).map(|_| b.next_pause().as_millis()).collect();
        assert_eq!(
            pauses,
            [
                100, 200, 400, 800, 1600, 3200, 6400, 12800, 25600, 30000, 30000, 30000
            ]
        );
    }
}
