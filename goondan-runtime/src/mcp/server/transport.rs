//! Where an [`McpServer`] listens: stdio (one client, the process that started us), any rmcp
//! transport (an in-process duplex in tests), or Streamable HTTP on an address the user gives
//! (rmcp's `StreamableHttpService` on a hyper server; loopback `Host`s only by default, as a
//! defence against DNS rebinding, decided as rmcp decides it: see `host_check`).

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;

use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use rmcp::service::{RunningService, ServerInitializeError};
use rmcp::transport::IntoTransport;
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
                            let response =
                                front.service_for(request.headers()).handle(request).await;
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

/// What every request of a Streamable HTTP server uses.
struct Front {
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
    /// The service for a request with `headers`: the one without rmcp's host check when its
    /// `Host` is plainly allowed (see `host_check`), else the one with it.
    fn service_for(
        &self,
        headers: &hyper::HeaderMap,
    ) -> &StreamableHttpService<McpServer, LocalSessionManager> {
        if self.plain_hosts.admits(headers) {
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
