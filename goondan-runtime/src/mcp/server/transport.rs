//! Where an [`McpServer`] listens: stdio (one client, the process that started us), any rmcp
//! transport (an in-process duplex in tests), or Streamable HTTP on an address the user gives
//! (rmcp's `StreamableHttpService` on a hyper server; loopback `Host`s only by default, as a
//! defence against DNS rebinding, decided as rmcp decides it: see `host_check`). A plain
//! `tools/call` is read once and handed to rmcp's session, or served alone, directly, answered
//! as rmcp's service answers it (see `plain_call`).

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;

use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use rmcp::service::{RunningService, ServerInitializeError};
use rmcp::transport::IntoTransport;
use rmcp::transport::streamable_http_server::session::SessionManager;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{RoleServer, ServiceExt};
use tokio::net::TcpListener;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::McpServer;
use super::connection;
use super::host_check::PlainHosts;
use super::http_limits::{self, Checked};
use super::plain_call::{self, Route};

/// Why serving stopped or could not start.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// The MCP handshake with the client failed.
    #[error("the MCP handshake failed: {0}")]
    Initialize(#[source] Box<ServerInitializeError>),
    /// The HTTP address could not be bound.
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The serving task ended abnormally.
    #[error("the MCP service task failed: {0}")]
    Task(#[from] tokio::task::JoinError),
}

impl McpServer {
    /// Serves one client over `transport` (an rmcp transport: stdio, a duplex stream, a
    /// child process's pipes) and returns the running service once the client has connected.
    pub async fn serve<T, E, A>(
        self,
        transport: T,
    ) -> Result<RunningService<RoleServer, McpServer>, ServeError>
    where
        T: IntoTransport<RoleServer, E, A>,
        E: std::error::Error + Send + Sync + 'static,
    {
        ServiceExt::serve(self, transport)
            .await
            .map_err(|e| ServeError::Initialize(Box::new(e)))
    }

    /// Serves the client on this process's stdin and stdout until it disconnects. Nothing
    /// else may write to stdout meanwhile (log to stderr).
    pub async fn serve_stdio(self) -> Result<(), ServeError> {
        let running = self.serve(rmcp::transport::stdio()).await?;
        running.waiting().await?;
        Ok(())
    }

    /// Serves Streamable HTTP on `addr` (e.g. `127.0.0.1:8080`, or port 0 for any free port)
    /// at every path; clients use `http://{addr}/mcp`. Returns once listening. Sessions,
    /// bodies and malformed requests are bounded by the builder's
    /// [`http_limits`](super::McpServerBuilder::http_limits).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use goondan_runtime::ToolRegistry;
    /// use goondan_runtime::mcp::server::McpServer;
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let server = McpServer::builder(Arc::new(ToolRegistry::new())).build()?;
    /// let http = server.serve_http("127.0.0.1:0".parse()?).await?;
    /// assert!(http.url().starts_with("http://127.0.0.1:"));
    /// http.shutdown().await?;
    /// # Ok(())
    /// # }
    /// ```
    pub async fn serve_http(self, addr: SocketAddr) -> Result<HttpServer, ServeError> {
        self.serve_http_with(addr, Lane::PlainCalls).await
    }

    /// [`Self::serve_http`], with or without the lane for plain calls (see `plain_call`); the
    /// tests serve both and compare.
    pub(super) async fn serve_http_with(
        self,
        addr: SocketAddr,
        lane: Lane,
    ) -> Result<HttpServer, ServeError> {
        let listener = TcpListener::bind(addr)
            .await
            .map_err(|source| ServeError::Bind { addr, source })?;
        let local_addr = listener
            .local_addr()
            .map_err(|source| ServeError::Bind { addr, source })?;
        let stop = CancellationToken::new();
        let limits = self.shared.http_limits;
        let mut config = StreamableHttpServerConfig::default();
        config.cancellation_token = stop.child_token();
        config.max_request_body_bytes = limits.body_bytes();
        let mut sessions = LocalSessionManager::default();
        sessions.session_config.keep_alive = Some(limits.idle());
        let sessions = Arc::new(sessions);
        let server = self;
        let alone_server = server.clone();
        // Shared, not cloned per request: a clone copies the config (its host and origin
        // lists, a cancellation token taken under a lock) and drops it again. One `Arc` for
        // all a request needs, so that a request takes one reference, not one for each.
        let service = StreamableHttpService::new(
            move || Ok(server.for_session()),
            Arc::clone(&sessions),
            config,
        );
        // The same service (its sessions, its handler) without rmcp's host check, for the
        // requests the Front has seen to pass it (see `host_check`).
        let plain_hosts = PlainHosts::of(&service.config.allowed_hosts);
        let mut plain_service = service.clone();
        plain_service.config.allowed_hosts.clear();
        let front = Arc::new(Front {
            session_lane: lane == Lane::PlainCalls
                && service.config.legacy_session_mode
                && service.config.session_store.is_none(),
            alone_lane: lane == Lane::PlainCalls && sessions.event_store().is_none(),
            server: alone_server,
            service,
            plain_service,
            plain_hosts,
            sessions,
            gate: tokio::sync::Mutex::new(()),
            limits,
        });
        let accept_stop = stop.clone();
        let task = tokio::spawn(async move {
            loop {
                let stream = tokio::select! {
                    () = accept_stop.cancelled() => break,
                    accepted = listener.accept() => match accepted {
                        Ok((stream, _)) => {
                            // Small JSON-RPC answers go out at once, not after the peer's
                            // delayed ACK (Nagle's algorithm costs ~40 ms a request).
                            let _ = stream.set_nodelay(true);
                            stream
                        }
                        Err(error) => {
                            tracing::warn!(%error, "accepting an MCP connection failed");
                            continue;
                        }
                    },
                };
                let front = Arc::clone(&front);
                // A token of its own: polling a shared one would take the same lock on every
                // request of every connection.
                let conn_stop = accept_stop.child_token();
                tokio::spawn(async move {
                    let svc = service_fn(move |req| {
                        let front = Arc::clone(&front);
                        async move {
                            let (request, body, opens) =
                                match http_limits::check(req, &front.limits).await {
                                    Checked::Answer(response) => return Ok(response),
                                    Checked::Pass {
                                        request,
                                        body,
                                        opens,
                                    } => (request, body, opens),
                                };
                            // New sessions are made one at a time, so the cap holds.
                            let _opening = if opens {
                                let guard = front.gate.lock().await;
                                if let Some(refusal) =
                                    http_limits::over_cap(&front.sessions, &front.limits).await
                                {
                                    return Ok(refusal);
                                }
                                Some(guard)
                            } else {
                                None
                            };
                            // Looked at once: the lane and the choice of service both ask.
                            let plain_host = front.plain_hosts.admits(request.headers());
                            let request = if opens || !plain_host {
                                request
                            } else {
                                match front.plain_call(request, &body).await {
                                    Ok(answer) => return Ok(answer),
                                    Err(request) => request,
                                }
                            };
                            let response = front.service_for(plain_host).handle(request).await;
                            Ok::<_, Infallible>(http_limits::explain(response, &body))
                        }
                    });
                    let conn = http1::Builder::new().serve_connection(TokioIo::new(stream), svc);
                    if let Err(error) = connection::until_stopped(conn, &conn_stop).await {
                        tracing::debug!(%error, "MCP connection ended");
                    }
                });
            }
        });
        Ok(HttpServer {
            local_addr,
            stop,
            task,
        })
    }
}

/// Whether a Streamable HTTP server reads plain calls itself (see `plain_call`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Lane {
    /// It does: the server as it is served.
    PlainCalls,
    /// Every request goes to rmcp's service: the path the lane is compared against.
    #[cfg_attr(not(test), allow(dead_code))]
    RmcpOnly,
}

/// What every request of a Streamable HTTP server uses.
struct Front {
    /// Whether plain calls on a session take the lane: asked for, and rmcp's service keeps
    /// sessions in memory only (no store to restore them from, which the lane does not look
    /// at).
    session_lane: bool,
    /// Whether plain calls standing alone take the lane: asked for, and rmcp keeps no events
    /// of them to replay (which the lane does not keep).
    alone_lane: bool,
    /// The server, which rmcp's service serves anew for each session or request alone.
    server: McpServer,
    /// rmcp's service.
    service: StreamableHttpService<McpServer, LocalSessionManager>,
    /// The same service without its host check, for a request whose `Host` is plainly allowed.
    plain_service: StreamableHttpService<McpServer, LocalSessionManager>,
    /// The allowed hosts, read once.
    plain_hosts: PlainHosts,
    /// Its sessions, counted against the cap.
    sessions: Arc<LocalSessionManager>,
    /// Held while a session is made, so that the cap holds.
    gate: tokio::sync::Mutex<()>,
    limits: http_limits::HttpLimits,
}

impl Front {
    /// Answers `request`, whose `Host` the host check plainly admits, in the lane if it is a
    /// plain call on a live session or standing alone (see `plain_call`), as rmcp's service
    /// would; else gives it back for rmcp's service.
    async fn plain_call(
        &self,
        request: hyper::Request<http_body_util::Full<bytes::Bytes>>,
        body: &bytes::Bytes,
    ) -> Result<http_limits::HttpResponse, hyper::Request<http_body_util::Full<bytes::Bytes>>> {
        if !self.session_lane && !self.alone_lane {
            return Err(request);
        }
        let Some(call) = plain_call::read(request.method(), request.headers(), body) else {
            return Err(request);
        };
        let taken = match &call.route {
            // An unknown session is rmcp's to answer (it may restore it, or say 404).
            Route::Session(session) => {
                self.session_lane && matches!(self.sessions.has_session(session).await, Ok(true))
            }
            // A tool whose arguments may be asked for in headers is rmcp's to check.
            Route::Alone { .. } => {
                self.alone_lane
                    && self
                        .server
                        .names_param_headers(call.tool())
                        .is_none_or(|names| !names)
            }
        };
        if !taken {
            return Err(request);
        }
        let (parts, _) = request.into_parts();
        let config = &self.plain_service.config;
        Ok(match call.into_message(parts) {
            (Route::Session(session), message) => {
                match self.sessions.create_stream(&session, message).await {
                    Ok(messages) => plain_call::sse_response(
                        messages,
                        config.sse_keep_alive,
                        config.cancellation_token.child_token(),
                    ),
                    // The session ended between the look and the call: rmcp's answer for it.
                    Err(error) => plain_call::internal_error("get session", &error),
                }
            }
            (
                Route::Alone {
                    version,
                    meta_malformed,
                },
                message,
            ) => {
                plain_call::serve_alone(
                    self.server.for_session(),
                    message,
                    (version, meta_malformed),
                    config,
                )
                .await
            }
        })
    }

    /// The service for a request: the one without rmcp's host check when its `Host` is
    /// `plain_host`, plainly allowed (see `host_check`), else the one with it.
    fn service_for(
        &self,
        plain_host: bool,
    ) -> &StreamableHttpService<McpServer, LocalSessionManager> {
        if plain_host {
            &self.plain_service
        } else {
            &self.service
        }
    }
}

/// A running Streamable HTTP server.
#[derive(Debug)]
pub struct HttpServer {
    local_addr: SocketAddr,
    stop: CancellationToken,
    task: JoinHandle<()>,
}

impl HttpServer {
    /// The address it listens on.
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// The URL clients connect to: `http://{addr}/mcp`.
    pub fn url(&self) -> String {
        format!("http://{}/mcp", self.local_addr)
    }

    /// Stops accepting connections, ends the sessions, and waits for the accept loop.
    pub async fn shutdown(self) -> Result<(), ServeError> {
        self.stop.cancel();
        self.task.await?;
        Ok(())
    }

    /// Serves until `ctrl_c` (or any future) resolves, then shuts down.
    pub async fn run_until(
        self,
        signal: impl std::future::Future<Output = ()>,
    ) -> Result<(), ServeError> {
        signal.await;
        self.shutdown().await
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use serde_json::{Value, json};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    use super::*;
    use crate::tools::error::ToolError;
    use crate::tools::registry::ToolRegistry;
    use crate::tools::tool::{Export, Tool};

    const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}"#;
    const INITIALIZED: &str = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;

    /// A server with one tool that gives its arguments back, or fails when asked to.
    fn server() -> Result<McpServer, Box<dyn std::error::Error>> {
        let echo = Export::new(
            "say",
            json!({"type": "object", "properties": {"text": {"type": "string"}}}),
            crate::handler_fn(|_ctx, args: serde_json::Map<String, Value>| async move {
                match args.get("fail") {
                    Some(why) => Err(ToolError::new(why.to_string()).with_code("E_ASKED")),
                    None => Ok::<_, ToolError>(Value::Object(args)),
                }
            }),
        );
        // Writes `lines` log lines (one if not said), then answers.
        let talk = Export::new(
            "talk",
            json!({"type": "object", "properties": {"lines": {"type": "integer"}}}),
            crate::handler_fn(|ctx, args: serde_json::Map<String, Value>| async move {
                let lines = args.get("lines").and_then(Value::as_u64).unwrap_or(1);
                for line in 0..lines {
                    ctx.log(
                        crate::tools::context::LogLevel::Info,
                        format!("line {line}"),
                    );
                }
                Ok::<_, ToolError>("talked")
            }),
        );
        // Asks the user for a name.
        let ask = Export::new(
            "ask",
            json!({"type": "object"}),
            crate::handler_fn(|ctx, _args: serde_json::Map<String, Value>| async move {
                let schema = json!({"type": "object", "properties": {"name": {"type": "string"}}});
                match ctx.elicit("Your name?", schema).await {
                    Ok(answer) => Ok(format!("{answer:?}")),
                    Err(error) => Err(ToolError::new(error.to_string())),
                }
            }),
        );
        // Its `region` is also sent as the `Mcp-Param-Region` header (SEP-2243).
        let find = Export::new(
            "find",
            json!({"type": "object", "properties": {
                "region": {"type": "string", "x-mcp-header": "Region"}}}),
            crate::handler_fn(|_ctx, args: serde_json::Map<String, Value>| async move {
                Ok::<_, ToolError>(Value::Object(args))
            }),
        );
        let registry = ToolRegistry::builder()
            .tool(
                Tool::builder("echo")
                    .export(echo)
                    .export(talk)
                    .export(ask)
                    .export(find)
                    .build()?,
            )
            .build()?;
        Ok(McpServer::builder(Arc::new(registry)).build()?)
    }

    /// One HTTP/1.1 request on a connection of its own; the answer as status, headers (names
    /// lowercase) and body (de-chunked).
    async fn exchange(
        addr: SocketAddr,
        method: &str,
        headers: &[(String, Vec<u8>)],
        body: &[u8],
    ) -> Result<(u16, Vec<(String, String)>, Vec<u8>), String> {
        let mut stream = tokio::net::TcpStream::connect(addr)
            .await
            .map_err(|e| e.to_string())?;
        let mut request = format!("{method} /mcp HTTP/1.1\r\n").into_bytes();
        for (name, value) in headers {
            request.extend_from_slice(name.as_bytes());
            request.extend_from_slice(b": ");
            request.extend_from_slice(value);
            request.extend_from_slice(b"\r\n");
        }
        request.extend_from_slice(
            format!(
                "Content-Length: {}\r\nConnection: close\r\n\r\n",
                body.len()
            )
            .as_bytes(),
        );
        request.extend_from_slice(body);
        stream
            .write_all(&request)
            .await
            .map_err(|e| e.to_string())?;
        let mut answer = Vec::new();
        tokio::time::timeout(Duration::from_secs(20), stream.read_to_end(&mut answer))
            .await
            .map_err(|_| "no answer in 20 s".to_owned())?
            .map_err(|e| e.to_string())?;
        let split = answer
            .windows(4)
            .position(|w| w == b"\r\n\r\n")
            .ok_or("no end of head")?;
        let head = String::from_utf8_lossy(&answer[..split]).into_owned();
        let mut rest = answer[split + 4..].to_vec();
        let mut lines = head.split("\r\n");
        let status = lines
            .next()
            .and_then(|l| l.split(' ').nth(1))
            .and_then(|s| s.parse().ok())
            .ok_or("no status")?;
        let mut fields = Vec::new();
        let mut chunked = false;
        for line in lines {
            let (name, value) = line.split_once(':').ok_or("a bad header line")?;
            let (name, value) = (name.to_ascii_lowercase(), value.trim().to_owned());
            chunked |= name == "transfer-encoding" && value == "chunked";
            fields.push((name, value));
        }
        if chunked {
            let mut body = Vec::new();
            loop {
                let end = rest
                    .windows(2)
                    .position(|w| w == b"\r\n")
                    .ok_or("a cut chunk")?;
                let size = usize::from_str_radix(&String::from_utf8_lossy(&rest[..end]), 16)
                    .map_err(|e| e.to_string())?;
                if size == 0 {
                    break;
                }
                body.extend_from_slice(rest.get(end + 2..end + 2 + size).ok_or("a short chunk")?);
                rest.drain(..end + 4 + size);
            }
            rest = body;
        }
        Ok((status, fields, rest))
    }

    /// A session on `addr`: its id, after the handshake.
    async fn open(addr: SocketAddr) -> Result<String, String> {
        let mut headers = vec![
            ("Host".to_owned(), addr.to_string().into_bytes()),
            (
                "Accept".to_owned(),
                b"application/json, text/event-stream".to_vec(),
            ),
            ("Content-Type".to_owned(), b"application/json".to_vec()),
        ];
        let (_, fields, _) = exchange(addr, "POST", &headers, INITIALIZE.as_bytes()).await?;
        let id = fields
            .into_iter()
            .find_map(|(name, value)| (name == "mcp-session-id").then_some(value))
            .ok_or("no session id")?;
        headers.push(("Mcp-Session-Id".to_owned(), id.clone().into_bytes()));
        headers.push(("MCP-Protocol-Version".to_owned(), b"2025-11-25".to_vec()));
        let (status, _, _) = exchange(addr, "POST", &headers, INITIALIZED.as_bytes()).await?;
        if status != 202 {
            return Err(format!("notifications/initialized: {status}"));
        }
        Ok(id)
    }

    /// An answer without what differs between two servers however alike: the date, the
    /// session id, and a sealed request state (each server seals with a key of its own).
    fn comparable(
        (status, fields, mut body): (u16, Vec<(String, String)>, Vec<u8>),
    ) -> (u16, Vec<(String, String)>, Vec<u8>) {
        let fields = fields
            .into_iter()
            .filter(|(name, _)| name != "date" && name != "mcp-session-id")
            .collect();
        const STATE: &[u8] = br#""requestState":""#;
        let mut from = 0;
        while let Some(at) = body[from..].windows(STATE.len()).position(|w| w == STATE) {
            let start = from + at + STATE.len();
            let len = body[start..].iter().position(|&b| b == b'"').unwrap_or(0);
            body.drain(start..start + len);
            from = start;
        }
        (status, fields, body)
    }

    /// The cases of a differential test over `dimensions` (each the number of its choices,
    /// the first of each making the plain request): the plain request, each other choice on
    /// its own, `extra`, and 300 mixes (a fixed-seed generator: the same requests every run),
    /// mostly of plain choices, so that they stay near the lane.
    fn cases(dimensions: &[usize], extra: Vec<Vec<usize>>) -> Vec<Vec<usize>> {
        let plain = vec![0; dimensions.len()];
        let mut cases = vec![plain.clone()];
        for (d, &n) in dimensions.iter().enumerate() {
            for choice in 1..n {
                let mut case = plain.clone();
                case[d] = choice;
                cases.push(case);
            }
        }
        cases.extend(extra);
        let mut seed: u64 = 0x2545_f491_4f6c_dd1d;
        for _ in 0..300 {
            let mut case = plain.clone();
            for (d, &n) in dimensions.iter().enumerate() {
                seed = seed
                    .wrapping_mul(6_364_136_223_846_793_005)
                    .wrapping_add(1_442_695_040_888_963_407);
                let pick = (seed >> 33) as usize;
                if pick.is_multiple_of(3) {
                    case[d] = pick / 3 % n;
                }
            }
            cases.push(case);
        }
        cases
    }

    /// A request of a differential test: method, headers, body.
    type Sent = (&'static str, Vec<(String, Vec<u8>)>, &'static [u8]);

    /// Sends each case, as `request` writes it for each server (its address and session), to
    /// a server with the lane and to one without, and asks for the same answers; `in_lane`
    /// says whether the first takes it in the lane. Both kinds must have been tried: at least
    /// 60 calls the lane took, and 100 requests it left to rmcp.
    async fn same_answers(
        cases: &[Vec<usize>],
        request: impl Fn(&[usize], SocketAddr, &str) -> Sent,
        in_lane: impl Fn(&[usize], &Sent) -> bool,
    ) {
        let servers = with_and_without_lane().await;
        let addrs = [servers[0].local_addr(), servers[1].local_addr()];
        let mut sessions = Vec::new();
        for addr in addrs {
            sessions.push(open(addr).await.unwrap());
        }
        let (mut taken, mut left) = (0, 0);
        for case in cases {
            let mut answers = Vec::new();
            for (addr, session) in addrs.iter().zip(&sessions) {
                let sent = request(case, *addr, session);
                if *addr == addrs[0] {
                    if in_lane(case, &sent) {
                        taken += 1;
                    } else {
                        left += 1;
                    }
                }
                let (method, headers, body) = sent;
                answers.push(comparable(
                    exchange(*addr, method, &headers, body)
                        .await
                        .unwrap_or_else(|e| panic!("{case:?}: {e}")),
                ));
            }
            assert_eq!(
                answers[0],
                answers[1],
                "{case:?}: {}",
                String::from_utf8_lossy(&answers[1].2)
            );
        }
        assert!(
            taken >= 60 && left >= 100,
            "{taken} in the lane, {left} left"
        );
        for server in servers {
            server.shutdown().await.unwrap();
        }
    }

    /// Whether `plain_call::read` takes `sent` (headers it cannot hold aside).
    fn read_takes(sent: &Sent) -> Option<plain_call::PlainCall> {
        let (method, headers, body) = sent;
        let mut map = hyper::HeaderMap::new();
        for (name, value) in headers {
            if let (Ok(name), Ok(value)) = (
                hyper::header::HeaderName::from_bytes(name.as_bytes()),
                hyper::header::HeaderValue::from_bytes(value),
            ) {
                map.append(name, value);
            }
        }
        let method = hyper::Method::from_bytes(method.as_bytes()).ok()?;
        plain_call::read(&method, &map, body)
    }

    /// A request's `Host` (`own`: the server's address) and `Accept` (if any) headers.
    fn first_headers(
        host: &str,
        addr: SocketAddr,
        accept: Option<&[u8]>,
    ) -> Vec<(String, Vec<u8>)> {
        let host = match host {
            "own" => addr.to_string(),
            other => other.to_owned(),
        };
        let mut headers = vec![("Host".to_owned(), host.into_bytes())];
        if let Some(accept) = accept {
            headers.push(("Accept".to_owned(), accept.to_vec()));
        }
        headers
    }

    /// The two servers of a differential test: with the lane for plain calls, and without.
    async fn with_and_without_lane() -> [HttpServer; 2] {
        let addr: SocketAddr = "127.0.0.1:0".parse().unwrap();
        [
            server()
                .unwrap()
                .serve_http_with(addr, Lane::PlainCalls)
                .await
                .unwrap(),
            server()
                .unwrap()
                .serve_http_with(addr, Lane::RmcpOnly)
                .await
                .unwrap(),
        ]
    }

    /// The lane for plain calls answers every request exactly as the same server without it
    /// (every request through rmcp's service): the same status, headers and body, byte for
    /// byte, for plain calls and for requests near them (another header, another spelling,
    /// another body, another session) that the lane leaves to rmcp.
    #[tokio::test]
    async fn mcp_http_a_plain_call_is_answered_as_through_rmcp_s_service() {
        // Each dimension's choices; the first of each makes a plain call.
        let accepts: &[Option<&[u8]>] = &[
            Some(b"application/json, text/event-stream"),
            Some(b"text/event-stream, application/json"),
            Some(b"application/json"),
            Some(b"*/*"),
            Some(b"application/json, text/event-stream;q=0"),
            Some(b"Application/JSON, Text/Event-Stream"),
            None,
        ];
        let types: &[Option<&[u8]>] = &[
            Some(b"application/json"),
            Some(b"APPLICATION/JSON"),
            Some(b"application/json; charset=utf-8"),
            Some(b"text/plain"),
            None,
        ];
        let versions: &[Option<&[u8]>] = &[
            Some(b"2025-11-25"),
            None,
            Some(b"2025-06-18"),
            Some(b"2025-03-26"),
            Some(b"2024-11-05"),
            Some(b"2026-07-28"),
            Some(b"2099-01-01"),
            Some(b"2025-11-25 x"),
            Some(b"\xff"),
        ];
        // `None`: no session header; the others are spelt out below.
        let session_kinds: &[Option<&str>] = &[Some("own"), Some("unknown"), None, Some("twice")];
        let origins: &[Option<&[u8]>] = &[
            None,
            Some(b"http://localhost"),
            Some(b"http://evil.example"),
        ];
        let hosts = ["own", "evil.example"];
        let methods = ["POST", "PUT"];
        let bodies: &[&[u8]] = &[
            br#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo__say","arguments":{"text":"hi"}}}"#,
            br#"{"id":"x","jsonrpc":"2.0","params":{"name":"echo__say"},"method":"tools/call"}"#,
            br#"{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"echo__say","arguments":{"n":1.5e300,"m":[1,null,{"k":true}]},"_meta":{"progressToken":3}}}"#,
            br#"{"jsonrpc":"2.0","id":9,"method":"tools\/call","params":{"name":"echo__say","arguments":{"text":"\u00e9"}},"extra":1}"#,
            br#"{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"echo__say","arguments":{"fail":"asked"}}}"#,
            br#"{"jsonrpc":"2.0","id":11,"method":"tools/call","params":{"name":"no__such"}}"#,
            br#"{"jsonrpc":"2.0","id":12,"method":"tools/call","params":{"name":"echo__say","arguments":{"text":3}}}"#,
            br#"{"jsonrpc":"2.0","id":13,"method":"tools/list"}"#,
            br#"{"jsonrpc":"2.0","method":"tools/call","params":{"name":"echo__say"}}"#,
            br#"{"jsonrpc":"2.0","id":14,"method":"tools/call","params":{"name":"echo__say"},"result":null}"#,
            br#"{"jsonrpc":"2.0","id":15,"method":"tools/call","params":{"name":"echo__say"},"error":{"code":1,"message":"m"}}"#,
            br#"{"jsonrpc":"2.0","id":16,"method":"tools/call","method":"tools/call","params":{"name":"echo__say"}}"#,
            br#"{"jsonrpc":"1.0","id":17,"method":"tools/call","params":{"name":"echo__say"}}"#,
            br#"{"jsonrpc":"2.0","id":18,"method":"tools/call"}"#,
            br#"{"jsonrpc":"2.0","id":19,"method":"tools/call","params":{"name":"echo__say","arguments":[1]}}"#,
            br#"{"jsonrpc":"2.0","id":20,"method":"tools/call","params":{"name":"echo__say","_meta":{"io.modelcontextprotocol/protocolVersion":"2025-11-25"}}}"#,
            br#"{"jsonrpc":"2.0","id":21,"method":"tools/call","params":{"name":"echo__say"}} x"#,
            b"not json",
            b"",
        ];
        let dimensions = [
            accepts.len(),
            types.len(),
            versions.len(),
            session_kinds.len(),
            origins.len(),
            hosts.len(),
            methods.len(),
            bodies.len(),
        ];
        let every_call = (1..7).map(|body| vec![0, 0, 0, 0, 0, 0, 0, body]).collect();
        let request = |case: &[usize], addr: SocketAddr, session: &str| -> Sent {
            let mut headers = first_headers(hosts[case[5]], addr, accepts[case[0]]);
            if let Some(kind) = types[case[1]] {
                headers.push(("Content-Type".into(), kind.to_vec()));
            }
            if let Some(version) = versions[case[2]] {
                headers.push(("MCP-Protocol-Version".into(), version.to_vec()));
            }
            let session = match session_kinds[case[3]] {
                Some("own") => vec![session],
                Some("twice") => vec![session, session],
                Some(other) => vec![other],
                None => vec![],
            };
            for id in session {
                headers.push(("Mcp-Session-Id".into(), id.as_bytes().to_vec()));
            }
            if let Some(origin) = origins[case[4]] {
                headers.push(("Origin".into(), origin.to_vec()));
            }
            (methods[case[6]], headers, bodies[case[7]])
        };
        let in_lane = |case: &[usize], sent: &Sent| {
            read_takes(sent).is_some()
                && hosts[case[5]] == "own"
                && matches!(session_kinds[case[3]], Some("own"))
        };
        same_answers(&cases(&dimensions, every_call), request, in_lane).await;
    }

    /// The same for 2026-07-28 calls standing alone: the lane serves a plain one for it alone
    /// and answers exactly as rmcp's service would (a result, a tool's failure, a log line
    /// before the result, a question for the user, the protocol's errors in JSON with their
    /// HTTP status), and leaves the rest to rmcp (a standard header missing or at odds with
    /// the body, a tool with a header-mapped argument, a session named).
    #[tokio::test]
    async fn mcp_http_a_plain_call_standing_alone_is_answered_as_through_rmcp_s_service() {
        const META: &str = r#""io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"c","version":"1"}"#;
        let accepts: &[Option<&[u8]>] = &[
            Some(b"application/json, text/event-stream"),
            Some(b"text/event-stream, application/json"),
            Some(b"application/json"),
            None,
        ];
        let versions: &[&[&[u8]]] = &[
            &[b"2026-07-28"],
            &[],
            &[b"2025-11-25"],
            &[b"2099-01-01"],
            &[b"2026-07-28", b"2026-07-28"],
        ];
        let mcp_methods: &[&[&[u8]]] = &[
            &[b"tools/call"],
            &[],
            &[b"tools/list"],
            &[b"tools/call", b"tools/call"],
            &[b"Tools/Call"],
        ];
        // `None`: the name the body calls; `Some(b"=")`: that name in base64.
        let names: &[&[Option<&[u8]>]] = &[
            &[None],
            &[],
            &[Some(b"echo__other")],
            &[Some(b"=")],
            &[None, None],
        ];
        let session_kinds: &[Option<&str>] = &[None, Some("own"), Some("unknown")];
        let origins: &[Option<&[u8]>] = &[None, Some(b"http://localhost")];
        let hosts = ["own", "evil.example"];
        let methods = ["POST", "PUT"];
        // Each body with the tool it calls (for `Mcp-Name`).
        let bodies: Vec<(&str, &'static [u8])> = [
            ("echo__say", format!(r#"{{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{{"name":"echo__say","arguments":{{"text":"hi"}},"_meta":{{{META}}}}}}}"#)),
            ("echo__say", format!(r#"{{"params":{{"_meta":{{{META},"progressToken":"p"}},"name":"echo__say"}},"id":"x","method":"tools/call","jsonrpc":"2.0"}}"#)),
            ("echo__say", format!(r#"{{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{{"name":"echo__say","arguments":{{"fail":"asked"}},"_meta":{{{META}}}}}}}"#)),
            ("echo__say", format!(r#"{{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{{"name":"echo__say","arguments":{{"text":3}},"_meta":{{{META}}}}}}}"#)),
            ("no__such", format!(r#"{{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{{"name":"no__such","_meta":{{{META}}}}}}}"#)),
            ("echo__talk", format!(r#"{{"jsonrpc":"2.0","id":11,"method":"tools/call","params":{{"name":"echo__talk","_meta":{{{META},"io.modelcontextprotocol/logLevel":"info"}}}}}}"#)),
            ("echo__talk", format!(r#"{{"jsonrpc":"2.0","id":12,"method":"tools/call","params":{{"name":"echo__talk","_meta":{{{META},"io.modelcontextprotocol/logLevel":"error"}}}}}}"#)),
            ("echo__ask", format!(r#"{{"jsonrpc":"2.0","id":13,"method":"tools/call","params":{{"name":"echo__ask","_meta":{{{META}}}}}}}"#)),
            ("echo__ask", format!(r#"{{"jsonrpc":"2.0","id":14,"method":"tools/call","params":{{"name":"echo__ask","_meta":{{{}}}}}}}"#, META.replace(r#"clientCapabilities":{}"#, r#"clientCapabilities":{"elicitation":{"form":{}}}"#))),
            ("echo__find", format!(r#"{{"jsonrpc":"2.0","id":15,"method":"tools/call","params":{{"name":"echo__find","arguments":{{"region":"eu"}},"_meta":{{{META}}}}}}}"#)),
            ("echo__say", r#"{"jsonrpc":"2.0","id":16,"method":"tools/call","params":{"name":"echo__say","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}"#.to_owned()),
            ("no__such", r#"{"jsonrpc":"2.0","id":17,"method":"tools/call","params":{"name":"no__such","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}"#.to_owned()),
            ("echo__say", format!(r#"{{"jsonrpc":"2.0","id":18,"method":"tools/call","params":{{"name":"echo__say","_meta":{}}}}}"#, format!("{{{META}}}").replace(r#"protocolVersion":"2026-07-28"#, r#"protocolVersion":"2025-11-25"#))),
            ("echo__say", r#"{"jsonrpc":"2.0","id":19,"method":"tools/call","params":{"name":"echo__say"}}"#.to_owned()),
            ("echo__say", format!(r#"{{"jsonrpc":"2.0","id":20,"method":"tools/list","params":{{"_meta":{{{META}}}}}}}"#)),
            ("echo__say", format!(r#"{{"jsonrpc":"2.0","method":"tools/call","params":{{"name":"echo__say","_meta":{{{META}}}}}}}"#)),
            ("echo__say", "not json".to_owned()),
        ]
        .into_iter()
        .map(|(tool, body)| (tool, &*Box::leak(body.into_bytes().into_boxed_slice())))
        .collect();
        let dimensions = [
            accepts.len(),
            versions.len(),
            mcp_methods.len(),
            names.len(),
            session_kinds.len(),
            origins.len(),
            hosts.len(),
            methods.len(),
            bodies.len(),
        ];
        let every_body = (1..bodies.len())
            .map(|body| vec![0, 0, 0, 0, 0, 0, 0, 0, body])
            .collect();
        let request = |case: &[usize], addr: SocketAddr, session: &str| -> Sent {
            let (tool, body) = bodies[case[8]];
            let mut headers = first_headers(hosts[case[6]], addr, accepts[case[0]]);
            headers.push(("Content-Type".into(), b"application/json".to_vec()));
            for version in versions[case[1]] {
                headers.push(("MCP-Protocol-Version".into(), version.to_vec()));
            }
            for method in mcp_methods[case[2]] {
                headers.push(("Mcp-Method".into(), method.to_vec()));
            }
            for name in names[case[3]] {
                let name = match name {
                    None => tool.as_bytes().to_vec(),
                    Some(b"=") => {
                        use base64::Engine;
                        let encoded = base64::engine::general_purpose::STANDARD.encode(tool);
                        format!("=?base64?{encoded}?=").into_bytes()
                    }
                    Some(other) => other.to_vec(),
                };
                headers.push(("Mcp-Name".into(), name));
            }
            match session_kinds[case[4]] {
                Some("own") => headers.push(("Mcp-Session-Id".into(), session.as_bytes().to_vec())),
                Some(other) => headers.push(("Mcp-Session-Id".into(), other.as_bytes().to_vec())),
                None => {}
            }
            if let Some(origin) = origins[case[5]] {
                headers.push(("Origin".into(), origin.to_vec()));
            }
            (methods[case[7]], headers, body)
        };
        let in_lane = |case: &[usize], sent: &Sent| {
            matches!(
                read_takes(sent).map(|call| call.route),
                Some(Route::Alone { .. })
            ) && hosts[case[6]] == "own"
                && bodies[case[8]].0 != "echo__find"
        };
        same_answers(&cases(&dimensions, every_body), request, in_lane).await;
    }

    /// The `data` of each event of an SSE answer, as JSON.
    fn events(body: &[u8]) -> Vec<Value> {
        String::from_utf8_lossy(body)
            .lines()
            .filter_map(|line| line.strip_prefix("data: "))
            .filter_map(|data| serde_json::from_str(data).ok())
            .collect()
    }

    /// A call's log lines reach the client in the order written, all of them before its
    /// result, in the call's own answer: a 2026-07-28 call standing alone, with the lane and
    /// without. (On a session, rmcp sends log lines on the session's own stream, `GET`.) A
    /// tool that writes faster than they can go out (here: all at once, on this test's one
    /// thread) has at most `MAX_WAITING_LINES` kept, and the client told how many were not.
    #[tokio::test]
    async fn mcp_http_a_calls_log_lines_reach_the_client_in_order_before_its_result() {
        use super::super::caller::MAX_WAITING_LINES;
        let servers = with_and_without_lane().await;
        for written in [40, MAX_WAITING_LINES + 2_000] {
            let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
                "name": "echo__talk", "arguments": {"lines": written}, "_meta": {
                    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                    "io.modelcontextprotocol/clientCapabilities": {},
                    "io.modelcontextprotocol/logLevel": "info"}}});
            let kept = written.min(MAX_WAITING_LINES);
            let mut expected: Vec<String> = (0..kept).map(|i| format!("line {i}")).collect();
            if written > kept {
                expected.push(format!(
                    "{} log lines of this call were not sent: more than {MAX_WAITING_LINES} \
                     were waiting for the client",
                    written - kept
                ));
            }
            for server in &servers {
                let addr = server.local_addr();
                let headers = [
                    ("Host", addr.to_string().into_bytes()),
                    ("Accept", b"application/json, text/event-stream".to_vec()),
                    ("Content-Type", b"application/json".to_vec()),
                    ("MCP-Protocol-Version", b"2026-07-28".to_vec()),
                    ("Mcp-Method", b"tools/call".to_vec()),
                    ("Mcp-Name", b"echo__talk".to_vec()),
                ]
                .map(|(name, value)| (name.to_owned(), value));
                let (status, _, body) =
                    exchange(addr, "POST", &headers, call.to_string().as_bytes())
                        .await
                        .unwrap();
                assert_eq!(status, 200);
                let events = events(&body);
                let lines: Vec<&str> = events
                    .iter()
                    .filter(|e| e["method"] == "notifications/message")
                    .filter_map(|e| e["params"]["data"].as_str())
                    .collect();
                assert_eq!(lines, expected, "{written} written");
                assert_eq!(events.len(), expected.len() + 1, "{written} written");
                let last = &events[expected.len()];
                assert_eq!(last["result"]["content"][0]["text"], "talked", "{last}");
                if written > kept {
                    assert_eq!(events[kept]["params"]["level"], "warning");
                }
            }
        }
        for server in servers {
            server.shutdown().await.unwrap();
        }
    }
}
