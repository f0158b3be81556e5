//! The link to one MCP server: a supervisor task that starts it (a child process or an HTTP
//! session), lists its tools, notices when it stops and starts it again with backoff; and the
//! calls that go through it, each bounded in time.

use std::collections::{BTreeMap, HashSet};
use std::ffi::OsString;
use std::path::Path;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use rmcp::ClientHandler;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, ClientCapabilities, ClientConfig, Implementation,
};
use rmcp::service::{
    ClientLifecycleMode, NotificationContext, Peer, RoleClient, RunningService, ServiceError,
    serve_client_with_lifecycle,
};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::auth::{AuthClient, AuthorizationManager};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::Value;
use tokio::io::AsyncBufReadExt;
use tokio::sync::watch;
use tokio_util::sync::{CancellationToken, DropGuard};

use super::access::{Access, AccessError};
use super::auth::McpAuth;
use super::config::{FIRST_RESTART_BACKOFF, MAX_RESTART_BACKOFF, McpServerConfig, McpTransport};
use super::input::{self, Asking};
use super::launcher::{Launched, StdioCommand};
use super::listing::{ListError, Listing, list_tools};
use super::naming::local_name;
use super::outcome::{self, not_authorized, unavailable};
use super::screen::{LeftOutSink, LeftOutTool};
use super::stdio::ChildTransport;
use super::streamable::{Screening, plain_client};
use super::task;
use crate::calls::refusal;
use crate::lock;
use crate::tools::context::ToolContext;
use crate::tools::error::ToolError;
use crate::tools::handler::Outcome;
use crate::tools::result::JsonObject;

/// Where a server stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ServerStatus {
    /// Being started for the first time. A server started again after it failed or stopped
    /// stands at that failure (`Down`, `Unauthorized`) until the start succeeds.
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
    /// The server wants an OAuth authorization the bridge does not hold (`E_MCP_AUTH`).
    Unauthorized {
        /// Why (no tokens kept, a refused refresh, a failed flow).
        reason: String,
    },
}

/// The OAuth client of a connection, shared with its transport: a new grant replaces what it
/// holds, and the next request carries the new token.
type SharedAuth = Arc<tokio::sync::Mutex<AuthorizationManager>>;

/// A connection: the server's peer, and its OAuth client when it has one.
type Connection = (Peer<RoleClient>, Option<SharedAuth>);

/// Where a server stands, and its connection while it is up.
struct State {
    status: ServerStatus,
    up: Option<Connection>,
}

/// How long a server that let a call time out has to answer a ping before it is restarted.
pub(crate) const PING_TIMEOUT: Duration = Duration::from_secs(5);

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
    /// How long the last listing is fresh (its `ttlMs`).
    fresh_for: Option<Duration>,
    /// The tools of the last listing left out, and why.
    left_out: Vec<LeftOutTool>,
}

/// The most tools of one server named as left out.
const MAX_LEFT_OUT: usize = 4096;

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
    /// Why the last start failed, or the last connection ended: what a server being started
    /// again after a failure stands at, until a start succeeds.
    failed: Mutex<Option<ServerStatus>>,
    listed: Mutex<Listed>,
    /// The tools the screen of a stdio server's output left out of its listings, until the
    /// listing is kept.
    screened: LeftOutSink,
    changed: Arc<dyn ToolsChanged>,
    access: Access,
    /// Held while a new grant is sought, so that concurrent calls that all met the same
    /// challenge start one authorization, not several.
    granting: tokio::sync::Mutex<()>,
    /// The calls running now, for the server's own questions.
    asking: Asking,
    /// Told when the server is found hung (a call timed out and a ping went unanswered): its
    /// supervisor then restarts it.
    hung: Arc<tokio::sync::Notify>,
    stop: CancellationToken,
    _stop_on_drop: DropGuard,
}

impl ServerLink {
    /// Starts the supervisor of `config`'s server; `changed` hears of every new tool list.
    pub(crate) fn start(
        extension: &str,
        config: McpServerConfig,
        changed: Arc<dyn ToolsChanged>,
        access: Access,
    ) -> Arc<Self> {
        let stop = CancellationToken::new();
        let link = Arc::new(Self {
            config,
            extension: extension.to_owned(),
            state: watch::Sender::new(State {
                status: ServerStatus::Starting,
                up: None,
            }),
            failed: Mutex::new(None),
            listed: Mutex::new(Listed::default()),
            screened: LeftOutSink::default(),
            changed,
            access,
            granting: tokio::sync::Mutex::new(()),
            asking: Asking::default(),
            hung: Arc::new(tokio::sync::Notify::new()),
            stop: stop.clone(),
            _stop_on_drop: stop.clone().drop_guard(),
        });
        tokio::spawn(supervise(Arc::downgrade(&link), stop));
        link
    }

    /// Moves the server to `status`, with its connection when it is up, and keeps why when it
    /// failed.
    fn set(&self, status: ServerStatus, up: Option<Connection>) {
        match &status {
            ServerStatus::Starting => {}
            ServerStatus::Up { .. } => *lock(&self.failed) = None,
            failure => *lock(&self.failed) = Some(failure.clone()),
        }
        self.state.send_replace(State { status, up });
    }

    /// Where the server stands. A server being started again after a failure stands at that
    /// failure until the start succeeds.
    pub(crate) fn status(&self) -> ServerStatus {
        match &self.state.borrow().status {
            ServerStatus::Starting => lock(&self.failed).clone().unwrap_or(ServerStatus::Starting),
            status => status.clone(),
        }
    }

    /// Waits, at most `limit`, until the server is up or has failed.
    pub(crate) async fn settled(&self, limit: Duration) -> ServerStatus {
        let mut rx = self.state.subscribe();
        let _ =
            tokio::time::timeout(limit, rx.wait_for(|s| s.status != ServerStatus::Starting)).await;
        self.status()
    }

    /// The current tools, by local name.
    pub(crate) fn tools(&self) -> BTreeMap<String, RemoteTool> {
        lock(&self.listed).tools.clone()
    }

    /// Whether `local` is a tool the server lists now.
    pub(crate) fn lists(&self, local: &str) -> bool {
        lock(&self.listed).tools.contains_key(local)
    }

    /// Lists the tools again (after `why`); a failed listing keeps the tools as they were.
    async fn relist(self: &Arc<Self>, peer: &Peer<RoleClient>, why: &str) {
        let server = &self.config.name;
        match tokio::time::timeout(self.config.startup_timeout, list_tools(peer)).await {
            Ok(Ok(listing)) => {
                if self.set_tools(listing) {
                    self.changed.tools_changed(self);
                }
            }
            Ok(Err(e)) => {
                tracing::warn!(target: "goondan::mcp", server = %server, "after {why}, the tools are kept as they were: {e}");
            }
            Err(_) => {
                tracing::warn!(target: "goondan::mcp", server = %server, "`tools/list` after {why} timed out");
            }
        }
    }

    /// Stops the supervisor and the server.
    pub(crate) fn shutdown(&self) {
        self.stop.cancel();
    }

    /// The tools the server lists that the bridge leaves out, and why: those it could not
    /// read, those whose names would meet, those the registry refused.
    pub(crate) fn left_out(&self) -> Vec<LeftOutTool> {
        lock(&self.listed).left_out.clone()
    }

    /// Notes that the registry refused the tool `remote` and why (once per listing).
    pub(crate) fn refused(&self, remote: &str, reason: String) {
        let mut listed = lock(&self.listed);
        if listed.left_out.len() < MAX_LEFT_OUT && !listed.left_out.iter().any(|t| t.name == remote)
        {
            listed.left_out.push(LeftOutTool {
                name: remote.to_owned(),
                reason,
            });
        }
    }

    /// Keeps the tools of `listing` that the configuration takes, under their local names,
    /// and how long they are fresh; reports each mapped name once. Two remote tools whose
    /// local names would meet (a name mapped onto another tool's name) are both left out, in
    /// any order the server lists them: neither may stand for the other. Returns whether the
    /// set changed.
    fn set_tools(&self, listing: Listing) -> bool {
        let server = self.config.name();
        let mut left_out = std::mem::take(&mut *lock(&self.screened));
        left_out.truncate(MAX_LEFT_OUT);
        let mut listed = lock(&self.listed);
        listed.fresh_for = listing.fresh_for;
        let mut named: BTreeMap<String, Vec<RemoteTool>> = BTreeMap::new();
        for t in listing.tools {
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
            named.entry(local.full).or_default().push(RemoteTool {
                remote,
                description: t.description.map(|d| d.to_string()),
                parameters: Value::Object(t.input_schema.as_ref().clone()),
            });
        }
        let mut tools = BTreeMap::new();
        for (local, mut same) in named {
            if same.len() == 1 {
                if let Some(tool) = same.pop() {
                    tools.insert(local, tool);
                }
                continue;
            }
            let remotes: Vec<String> = same.iter().map(|t| format!("`{}`", t.remote)).collect();
            let reason = format!(
                "{} would all be `{local}`; none of them is bridged",
                remotes.join(" and ")
            );
            tracing::warn!(target: "goondan::mcp", server, tool = %local, "the MCP tools {reason}");
            for tool in same {
                if left_out.len() < MAX_LEFT_OUT {
                    left_out.push(LeftOutTool {
                        name: tool.remote,
                        reason: reason.clone(),
                    });
                }
            }
        }
        let changed = listed.tools != tools || listed.left_out != left_out;
        listed.tools = tools;
        listed.left_out = left_out;
        changed
    }

    /// Waits, at most the startup timeout, for the server to be up.
    pub(crate) async fn peer(&self) -> Result<Connection, ToolError> {
        let limit = self.config.startup_timeout;
        let mut rx = self.state.subscribe();
        // A peer whose transport closed is a server that just stopped: its supervisor is about
        // to restart it, so wait for the new one.
        let up = |s: &State| s.up.as_ref().is_some_and(|(p, _)| !p.is_transport_closed());
        let waited = tokio::time::timeout(limit, rx.wait_for(up))
            .await
            .ok()
            .and_then(Result::ok)
            .and_then(|s| s.up.clone());
        waited.ok_or_else(|| {
            let why = match &self.state.borrow().status {
                ServerStatus::Down { reason } => reason.clone(),
                ServerStatus::Unauthorized { reason } => {
                    return not_authorized(&self.config.name, reason);
                }
                _ => format!("it did not start within {} ms", limit.as_millis()),
            };
            unavailable(&self.config.name, &format!("is not running: {why}"))
        })
    }

    /// A new grant after `challenge`, asking for the scopes `auth` holds too, put into `auth`
    /// (the connection's OAuth client): at a start and during a call alike, one at a time.
    async fn grant_into(
        &self,
        url: &str,
        auth: &SharedAuth,
        challenge: &str,
    ) -> Result<(), AccessError> {
        let _one_at_a_time = self.granting.lock().await;
        let held = auth.lock().await.get_current_scopes().await;
        let granted = self
            .access
            .grant(&self.config, url, Some(challenge), &held)
            .await?;
        *auth.lock().await = granted;
        Ok(())
    }

    /// Asks a server that let a call time out whether it still answers: one that does not
    /// answer a ping within [`PING_TIMEOUT`] is hung, and its supervisor restarts it (its
    /// calls in flight end with the connection).
    fn probe(&self, peer: Peer<RoleClient>) {
        let hung = Arc::clone(&self.hung);
        let server = self.config.name.clone();
        tokio::spawn(async move {
            let ping = rmcp::model::ClientRequest::PingRequest(rmcp::model::PingRequest {
                method: Default::default(),
                extensions: Default::default(),
            });
            let answered = tokio::time::timeout(PING_TIMEOUT, peer.send_request(ping)).await;
            if !matches!(answered, Ok(Ok(_))) {
                tracing::warn!(target: "goondan::mcp", server = %server, "MCP server `{server}` let a call time out and does not answer a ping; restarting it");
                hung.notify_waiters();
            }
        });
    }

    /// Calls the remote tool `remote` with `args`. The call is bounded by the call timeout and
    /// by `ctx`'s cancellation; either drops the request, which sends `notifications/cancelled`.
    /// The server's questions meanwhile go to `ctx` ([`input`]).
    pub(crate) async fn call(
        &self,
        ctx: ToolContext,
        remote: String,
        args: JsonObject,
    ) -> Result<Outcome, ToolError> {
        let (mut peer, auth) = self.peer().await?;
        let _asking = self.asking.enter(&ctx);
        let mut params = CallToolRequestParams::new(remote.clone()).with_arguments(args);
        // The call's trace continues in the server (SEP-414: `traceparent` in `_meta`).
        if let Some(parent) = crate::telemetry::traceparent() {
            let mut meta = rmcp::model::RequestMetaObject::new();
            meta.set_traceparent(parent);
            params.meta = Some(meta);
        }
        let limit = self.config.call_timeout;
        let deadline = tokio::time::Instant::now() + limit;
        let send = |peer: Peer<RoleClient>, params: CallToolRequestParams| {
            let ctx = &ctx;
            async move {
                let probe = peer.clone();
                tokio::select! {
                    answer = peer.call_tool_once(params) => Ok(answer),
                    () = ctx.cancellation().cancelled() => Err(refusal::cancelled()),
                    () = tokio::time::sleep_until(deadline) => {
                        self.probe(probe);
                        Err(refusal::timed_out(limit))
                    }
                }
            }
        };
        let mut answer = send(peer.clone(), params.clone()).await?;
        // A token the server refuses, or one without the scope this tool needs: one new grant
        // (a refresh, a step-up), given to the connection's OAuth client and kept in the token
        // store, then the call once more. Only an HTTP server has OAuth.
        if let (Some(auth), Err(e), McpTransport::Http { url, .. }) =
            (&auth, &answer, &self.config.transport)
            && let Some(challenge) = e.auth_challenge().map(str::to_owned)
        {
            self.grant_into(url, auth, &challenge)
                .await
                .map_err(|e| not_authorized(&self.config.name, &e.to_string()))?;
            if peer.is_transport_closed() {
                peer = self.peer().await?.0;
            }
            answer = send(peer.clone(), params.clone()).await?;
            if let Err(e) = &answer
                && e.auth_challenge().is_some()
            {
                return Err(not_authorized(
                    &self.config.name,
                    &format!("`{remote}` was refused again after a new authorization: {e}"),
                ));
            }
        }
        let server = &self.config.name;
        let refused = |why: &str| outcome::remote_error(server, &remote, why);
        // Input required (2026-07-28): the answers and the server's state, then the call
        // again, a bounded number of times.
        let mut rounds = 0;
        while let Ok(CallToolResponse::InputRequired(needed)) = answer {
            if rounds == input::MAX_INPUT_ROUNDS {
                return Err(refused(&format!(
                    "the server asked for input {} times without finishing",
                    input::MAX_INPUT_ROUNDS
                )));
            }
            rounds += 1;
            let only_state = needed.input_requests.as_ref().is_none_or(|r| r.is_empty());
            let (responses, state) = input::answer_all(&ctx, needed, self.config.sampling)
                .await
                .map_err(|why| refused(&why))?;
            if only_state {
                // Nothing was asked: the server is still working; not a busy loop.
                tokio::time::sleep(Duration::from_millis(50 << rounds.min(5))).await;
            }
            params.input_responses = responses;
            params.request_state = state;
            answer = send(peer.clone(), params.clone()).await?;
        }
        match answer {
            Ok(CallToolResponse::Complete(result)) => outcome::from_result(server, &remote, result),
            Ok(CallToolResponse::Task(created)) => Ok(Outcome::Pending(task::pending(
                peer,
                server.clone(),
                remote,
                created.task,
                limit,
            ))),
            Ok(_) => Err(refused(
                "the server answered `tools/call` with a reply this client does not know",
            )),
            Err(ServiceError::McpError(e)) => Err(refused(&e.message)),
            Err(ServiceError::TransportClosed | ServiceError::TransportSend(_)) => Err(
                unavailable(server, &format!("stopped while running `{remote}`")),
            ),
            Err(e) => Err(refused(&e.to_string())),
        }
    }

    /// Answers the server's own request `method` (elicitation, sampling, roots) through the
    /// latest call running on it; a request while none runs is answered as by a client that
    /// cannot ask.
    async fn answer_server(&self, method: &str, params: &Value) -> Result<Value, String> {
        let question = input::question_of(method, params)
            .ok_or_else(|| format!("this client does not answer `{method}`"))?;
        let ctx = self
            .asking
            .latest()
            .unwrap_or_else(|| ToolContext::builder(".").build());
        input::answer(&ctx, None, question, self.config.sampling).await
    }
}

/// Starts the server, keeps it running, and starts it again with backoff when it stops, until
/// the link is dropped or shut down.
async fn supervise(link: Weak<ServerLink>, stop: CancellationToken) {
    let mut pauses = backoff();
    loop {
        let Some(strong) = link.upgrade() else { return };
        strong.set(ServerStatus::Starting, None);
        let started = tokio::select! {
            () = stop.cancelled() => return,
            r = tokio::time::timeout(strong.config.startup_timeout, start(&strong, &link)) => r,
        };
        let running = match started {
            Ok(Ok(Started {
                running,
                pid,
                auth,
                keep,
            })) => {
                let peer = running.peer().clone();
                pauses = backoff();
                strong.set(ServerStatus::Up { pid }, Some((peer, auth)));
                strong.changed.tools_changed(&strong);
                Some((running, keep))
            }
            Ok(Err(StartError::Down(reason))) => {
                strong.set(ServerStatus::Down { reason }, None);
                None
            }
            Ok(Err(StartError::Unauthorized(reason))) => {
                strong.set(ServerStatus::Unauthorized { reason }, None);
                None
            }
            Err(_) => {
                let reason = format!(
                    "it did not start within {} ms",
                    strong.config.startup_timeout.as_millis()
                );
                strong.set(ServerStatus::Down { reason }, None);
                None
            }
        };
        let server = strong.config.name.clone();
        let stateless = stateless(&strong.config);
        let hung = Arc::clone(&strong.hung);
        drop(strong);
        if let Some((running, _keep)) = running {
            let token = running.cancellation_token();
            // The listening ends with this connection.
            let listening = CancellationToken::new();
            let _stop_listening = listening.clone().drop_guard();
            if stateless {
                let peer = running.peer().clone();
                tokio::spawn(refresh(link.clone(), peer.clone(), listening.clone()));
                tokio::spawn(listen(peer, listening, server.clone()));
            }
            tokio::select! {
                () = stop.cancelled() => {
                    token.cancel();
                    return;
                }
                quit = running.waiting() => {
                    tracing::warn!(target: "goondan::mcp", server = %server, ?quit, "MCP server stopped; restarting");
                }
                () = hung.notified() => token.cancel(),
            }
            let Some(strong) = link.upgrade() else { return };
            let reason = "the server stopped; it is being restarted".to_owned();
            strong.set(ServerStatus::Down { reason }, None);
        }
        tokio::select! {
            () = stop.cancelled() => return,
            () = tokio::time::sleep(pauses.next().unwrap_or(MAX_RESTART_BACKOFF)) => {}
        }
    }
}

/// On the stateless revision no session carries `notifications/tools/list_changed`: the
/// client asks for it with `subscriptions/listen`, a request the server holds open and
/// streams its notifications on (they reach [`Notifier::on_tool_list_changed`]). Opened
/// again after a pause when it ends while the connection lives.
async fn listen(peer: Peer<RoleClient>, token: CancellationToken, server: String) {
    use rmcp::model::{
        ClientRequest, Request, SubscriptionFilter, SubscriptionsListenRequestParams,
    };
    let mut pauses = backoff();
    loop {
        let filter = SubscriptionFilter::builder().tools_list_changed().build();
        let request = ClientRequest::SubscriptionsListenRequest(Request::new(
            SubscriptionsListenRequestParams::new(filter),
        ));
        tokio::select! {
            () = token.cancelled() => return,
            ended = peer.send_request(request) => {
                tracing::debug!(target: "goondan::mcp", server = %server, ?ended, "`subscriptions/listen` ended");
            }
        }
        if peer.is_transport_closed() {
            return;
        }
        tokio::select! {
            () = token.cancelled() => return,
            () = tokio::time::sleep(pauses.next().unwrap_or(MAX_RESTART_BACKOFF)) => {}
        }
    }
}

/// The shortest pause between two listings a server's `ttlMs` can ask for.
const MIN_REFRESH: Duration = Duration::from_secs(1);

/// On the stateless revision a listing is fresh for its `ttlMs`: it is used that long, then
/// listed again (at most once a second), whether or not a `list_changed` came. A server
/// that gives no `ttlMs` (or 0) is listed again only when it says its list changed.
async fn refresh(link: Weak<ServerLink>, peer: Peer<RoleClient>, token: CancellationToken) {
    loop {
        let Some(fresh_for) = link
            .upgrade()
            .and_then(|l| lock(&l.listed).fresh_for)
            .filter(|d| !d.is_zero())
        else {
            return;
        };
        tokio::select! {
            () = token.cancelled() => return,
            () = tokio::time::sleep(fresh_for.max(MIN_REFRESH)) => {}
        }
        let Some(strong) = link.upgrade() else { return };
        strong.relist(&peer, "the listing's `ttlMs`").await;
    }
}

/// The pauses between restarts: [`FIRST_RESTART_BACKOFF`], doubling up to
/// [`MAX_RESTART_BACKOFF`]; made anew (back to the first) after a successful start.
fn backoff() -> impl Iterator<Item = Duration> {
    std::iter::successors(Some(FIRST_RESTART_BACKOFF), |pause| {
        Some((*pause * 2).min(MAX_RESTART_BACKOFF))
    })
}

/// How many new grants one start may seek before the server is `Unauthorized`.
const MAX_GRANTS_PER_START: usize = 2;

/// A connection made by [`start`].
struct Started {
    running: RunningService<RoleClient, Notifier>,
    pid: Option<u32>,
    auth: Option<SharedAuth>,
    /// Kept while the connection lives (a launcher's private directory and proxy).
    keep: Option<Kept>,
}

/// Why [`start`] failed.
enum StartError {
    Down(String),
    Unauthorized(String),
}

impl From<String> for StartError {
    fn from(reason: String) -> Self {
        Self::Down(reason)
    }
}

/// Whether `config`'s protocol version is the stateless one (2026-07-28 or later).
fn stateless(config: &McpServerConfig) -> bool {
    config
        .protocol_version
        .as_deref()
        .is_some_and(|v| v >= rmcp::model::ProtocolVersion::V_2026_07_28.as_str())
}

/// The lifecycle of `config`'s protocol version: the stateless one (`server/discover`, the
/// version in every request) from 2026-07-28 on, else the `initialize` handshake.
fn lifecycle(config: &McpServerConfig) -> ClientLifecycleMode {
    use rmcp::model::ProtocolVersion;
    match config.protocol_version.as_deref() {
        Some(v) if stateless(config) => {
            // The configured version first, then the others, newest first.
            let (mut preferred, others): (Vec<ProtocolVersion>, Vec<_>) =
                ProtocolVersion::KNOWN_VERSIONS
                    .iter()
                    .rev()
                    .cloned()
                    .partition(|k| k.as_str() == v);
            preferred.extend(others);
            ClientLifecycleMode::Discover {
                preferred_versions: preferred,
            }
        }
        _ => ClientLifecycleMode::Initialize,
    }
}

/// Connects once and lists the tools.
async fn start(link: &Arc<ServerLink>, weak: &Weak<ServerLink>) -> Result<Started, StartError> {
    let notifier = || Notifier { link: weak.clone() };
    let server = link.config.name.clone();
    let lifecycle = || lifecycle(&link.config);
    lock(&link.screened).clear();
    let (running, pid, keep) = match &link.config.transport {
        McpTransport::Stdio {
            command,
            args,
            env,
            cwd,
        } => {
            let (cmd, keep) = stdio_command(&link.config, command, args, env, cwd.as_deref())?;
            let (child, pid, stderr) =
                ChildTransport::spawn(cmd, &server, Arc::clone(&link.screened))
                    .map_err(|e| format!("cannot start `{}`: {e}", command.display()))?;
            if let Some(stderr) = stderr {
                tokio::spawn(forward_stderr(server.clone(), stderr));
            }
            let running = serve_client_with_lifecycle(notifier(), child, lifecycle())
                .await
                .map_err(|e| format!("the MCP handshake failed: {e}"))?;
            (running, pid, keep)
        }
        McpTransport::Http { url, headers } => {
            // rmcp's transport builds a reqwest client of its own.
            crate::tls::install_crypto_provider();
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
            if matches!(link.config.auth, McpAuth::None) {
                let client = Screening::new(plain_client()?, &server, Arc::clone(&link.screened));
                let transport = StreamableHttpClientTransport::with_client(client, config);
                let running = serve_client_with_lifecycle(notifier(), transport, lifecycle())
                    .await
                    .map_err(|e| format!("cannot connect to `{url}`: {e}"))?;
                (running, None, None)
            } else {
                let unauthorized = |e: AccessError| StartError::Unauthorized(e.to_string());
                let kept = link
                    .access
                    .kept(&link.config, url)
                    .await
                    .map_err(unauthorized)?;
                let http = link
                    .access
                    .resource_client(&link.config)
                    .map_err(unauthorized)?;
                let client = AuthClient::new(http, kept);
                let shared = Arc::clone(&client.auth_manager);
                let attempt = || {
                    let screening =
                        Screening::new(client.clone(), &server, Arc::clone(&link.screened));
                    let transport =
                        StreamableHttpClientTransport::with_client(screening, config.clone());
                    connect_and_list(notifier(), transport, lifecycle())
                };
                // No tokens, or tokens the server refuses (expired, revoked, minted by an
                // authorization server it has since left): a new grant, then once more; twice
                // at most.
                let mut grants = 0;
                let (running, tools) = loop {
                    match attempt().await {
                        Ok(done) => break done,
                        Err(Refused::Auth { challenge, message }) => {
                            if grants == MAX_GRANTS_PER_START {
                                return Err(StartError::Unauthorized(format!(
                                    "the server refused the new authorization: {message}"
                                )));
                            }
                            grants += 1;
                            link.grant_into(url, &shared, &challenge)
                                .await
                                .map_err(unauthorized)?;
                        }
                        Err(Refused::Other(message)) => {
                            return Err(format!("cannot connect to `{url}`: {message}").into());
                        }
                    }
                };
                link.set_tools(tools);
                return Ok(Started {
                    running,
                    pid: None,
                    auth: Some(shared),
                    keep: None,
                });
            }
        }
    };
    let tools = list_tools(running.peer())
        .await
        .map_err(|e| e.to_string())?;
    link.set_tools(tools);
    Ok(Started {
        running,
        pid,
        auth: None,
        keep,
    })
}

/// The command that starts a stdio server: as the host runs it (its environment inherited,
/// less the agent's token, plus the server's `env`), or as the server's [`Launcher`] makes it,
/// with what must live as long as the process.
fn stdio_command(
    config: &McpServerConfig,
    program: &Path,
    args: &[String],
    env: &BTreeMap<String, String>,
    cwd: Option<&Path>,
) -> Result<(tokio::process::Command, Option<Kept>), String> {
    // An MCP server started by an agent process is not that agent: without the token, a
    // server built on goondan (`goondan mcp serve`) serves MCP instead of taking the agent's
    // place at the Orchestrator.
    let token = crate::agents::orchestrator::agent_mode::ENV_TOKEN;
    let Some(launcher) = &config.launcher.0 else {
        let mut cmd = tokio::process::Command::new(program);
        cmd.env_remove(token).args(args).envs(env);
        if let Some(dir) = cwd {
            cmd.current_dir(dir);
        }
        return Ok((cmd, None));
    };
    let mut whole: Vec<(OsString, OsString)> = std::env::vars_os()
        .filter(|(name, _)| name != token && !env.contains_key(&*name.to_string_lossy()))
        .collect();
    whole.extend(env.iter().map(|(k, v)| (k.into(), v.into())));
    let command = StdioCommand {
        program: program.to_path_buf(),
        args: args.iter().map(OsString::from).collect(),
        env: whole,
        cwd: cwd.map(Path::to_path_buf),
    };
    let Launched { command, keep } = launcher.launch(&config.name, command)?;
    let mut cmd = tokio::process::Command::new(&command.program);
    cmd.args(&command.args).env_clear().envs(command.env);
    if let Some(dir) = &command.cwd {
        cmd.current_dir(dir);
    }
    Ok((cmd, Some(keep)))
}

/// What a [`Launcher`] keeps alive with its server's process.
type Kept = Box<dyn std::any::Any + Send + Sync>;

/// Why [`connect_and_list`] failed: the server's authorization challenge (a 401, or a 403
/// `insufficient_scope`, at the handshake or at the listing), or anything else.
enum Refused {
    Auth { challenge: String, message: String },
    Other(String),
}

impl Refused {
    /// The refusal of `error`, an authorization one when it carries a `challenge`.
    fn of(challenge: Option<&str>, error: &dyn std::fmt::Display) -> Self {
        let message = error.to_string();
        match challenge {
            Some(challenge) => Self::Auth {
                challenge: challenge.to_owned(),
                message,
            },
            None => Self::Other(message),
        }
    }
}

/// Connects with `transport` and lists the tools: one attempt of an authorized start.
async fn connect_and_list<T, E, A>(
    notifier: Notifier,
    transport: T,
    lifecycle: ClientLifecycleMode,
) -> Result<(RunningService<RoleClient, Notifier>, Listing), Refused>
where
    T: rmcp::transport::IntoTransport<RoleClient, E, A>,
    E: std::error::Error + Send + Sync + 'static,
{
    let running = serve_client_with_lifecycle(notifier, transport, lifecycle)
        .await
        .map_err(|e| Refused::of(e.auth_challenge(), &e))?;
    match list_tools(running.peer()).await {
        Ok(tools) => Ok((running, tools)),
        Err(e) => {
            let challenge = match &e {
                ListError::Service(s) => s.auth_challenge(),
                _ => None,
            };
            let refused = Refused::of(challenge, &e);
            let _ = running.cancel().await;
            Err(refused)
        }
    }
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

impl Notifier {
    /// Answers the server's request `method` with `params` (any serializable rmcp type),
    /// read back as `T`.
    async fn answer<P: serde::Serialize, T: serde::de::DeserializeOwned>(
        &self,
        method: &str,
        params: &P,
    ) -> Result<T, rmcp::ErrorData> {
        let Some(link) = self.link.upgrade() else {
            return Err(rmcp::ErrorData::internal_error(
                "the bridge is shutting down",
                None,
            ));
        };
        let params = serde_json::to_value(params)
            .map_err(|e| rmcp::ErrorData::invalid_params(e.to_string(), None))?;
        let answer = link
            .answer_server(method, &params)
            .await
            .map_err(|why| rmcp::ErrorData::internal_error(why, None))?;
        serde_json::from_value(answer).map_err(|e| {
            rmcp::ErrorData::internal_error(format!("the answer to `{method}`: {e}"), None)
        })
    }
}

impl ClientHandler for Notifier {
    async fn create_elicitation(
        &self,
        request: rmcp::model::ElicitRequestParams,
        _context: rmcp::service::RequestContext<RoleClient>,
    ) -> Result<rmcp::model::ElicitResult, rmcp::ErrorData> {
        self.answer("elicitation/create", &request).await
    }

    // SEP-2577 deprecates sampling and roots; the servers of 2025-11-25 still ask for them.
    #[allow(deprecated)]
    async fn create_message(
        &self,
        params: rmcp::model::CreateMessageRequestParams,
        _context: rmcp::service::RequestContext<RoleClient>,
    ) -> Result<rmcp::model::CreateMessageResult, rmcp::ErrorData> {
        self.answer("sampling/createMessage", &params).await
    }

    #[allow(deprecated)]
    async fn list_roots(
        &self,
        _context: rmcp::service::RequestContext<RoleClient>,
    ) -> Result<rmcp::model::ListRootsResult, rmcp::ErrorData> {
        self.answer("roots/list", &Value::Null).await
    }

    async fn on_tool_list_changed(&self, context: NotificationContext<RoleClient>) {
        let link = self.link.clone();
        let peer = context.peer;
        // The listing is a request: it cannot be awaited inside the notification's handler,
        // which runs on the connection's own loop.
        tokio::spawn(async move {
            if let Some(strong) = link.upgrade() {
                strong.relist(&peer, "`list_changed`").await;
            }
        });
    }

    fn get_info(&self) -> ClientConfig {
        // The tasks extension (SEP-2663): a server may answer a call with a task, which
        // becomes a pending result here.
        // A bridged server may ask, mid-call, what our own tools may ask ([`input`]).
        let mut capabilities = ClientCapabilities::builder().enable_tasks().build();
        capabilities.elicitation = Some(
            rmcp::model::ElicitationCapability::new()
                .with_form(rmcp::model::FormElicitationCapability::new()),
        );
        let link = self.link.upgrade();
        // A server the bundle does not let sample the agent's model is not told it may.
        let sampling = link.as_ref().is_none_or(|l| l.config.sampling);
        if sampling {
            capabilities.sampling = Some(rmcp::model::SamplingCapability::default());
        }
        capabilities.roots = Some(rmcp::model::RootsCapabilities::default());
        let config = ClientConfig::new(
            capabilities,
            Implementation::new("goondan", env!("CARGO_PKG_VERSION")),
        );
        // The `initialize` handshake offers the configured revision (else the newest
        // stateful one); the stateless lifecycle carries it in every request instead.
        let version = link
            .and_then(|l| l.config.protocol_version.clone())
            .unwrap_or_else(|| {
                rmcp::model::ProtocolVersion::V_2025_11_25
                    .as_str()
                    .to_owned()
            });
        match serde_json::from_value(Value::String(version)) {
            Ok(v) => config.with_protocol_version(v),
            Err(_) => config,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn restart_pauses_double_from_the_first_up_to_the_cap() {
        let pauses: Vec<_> = backoff().take(12).map(|p| p.as_millis()).collect();
        assert_eq!(
            pauses,
            [
                100, 200, 400, 800, 1600, 3200, 6400, 12800, 25600, 30000, 30000, 30000
            ]
        );
    }
}
