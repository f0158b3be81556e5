//! Where an [`McpServer`] listens: stdio (one client, the process that started us), any rmcp
//! transport (an in-process duplex in tests), or Streamable HTTP on an address the user gives.
//!
//! Over HTTP every request goes to rmcp's `StreamableHttpService`, with rmcp's own checks of
//! `Host` (loopback hosts only by default, a defence against DNS rebinding) and `Origin`. In
//! front of it, [`http_limits`] keeps the body and session caps and explains the refusals of
//! a body that is not a JSON-RPC message.

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
use super::http_limits;

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
    /// at every path; clients use `http://{addr}/mcp`. Returns once listening. Only loopback
    /// `Host`s (`localhost`, `127.0.0.1`, `::1`) are served: any other is refused with HTTP
    /// 403. Sessions, bodies and malformed requests are bounded by the builder's
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
        let bind = |source| ServeError::Bind { addr, source };
        let listener = TcpListener::bind(addr).await.map_err(bind)?;
        let local_addr = listener.local_addr().map_err(bind)?;
        let stop = CancellationToken::new();
        let limits = self.shared.http_limits;
        // rmcp's defaults: loopback hosts only, and `Origin` not checked.
        let mut config = StreamableHttpServerConfig::default();
        config.cancellation_token = stop.child_token();
        config.max_request_body_bytes = limits.body_bytes();
        let mut sessions = LocalSessionManager::default();
        sessions.session_config.keep_alive = Some(limits.idle());
        let sessions = Arc::new(sessions);
        let server = self;
        let front = Arc::new(Front {
            service: StreamableHttpService::new(
                move || Ok(server.for_session()),
                Arc::clone(&sessions),
                config,
            ),
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
                let conn_stop = accept_stop.clone();
                tokio::spawn(async move {
                    let svc = service_fn(move |request| {
                        let front = Arc::clone(&front);
                        async move { Ok::<_, Infallible>(front.answer(request).await) }
                    });
                    let conn = http1::Builder::new().serve_connection(TokioIo::new(stream), svc);
                    let mut conn = std::pin::pin!(conn);
                    // On a stop the connection finishes the response it is writing, if any,
                    // and closes.
                    let ended = tokio::select! {
                        ended = conn.as_mut() => ended,
                        () = conn_stop.cancelled() => {
                            conn.as_mut().graceful_shutdown();
                            conn.await
                        }
                    };
                    if let Err(error) = ended {
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

/// What every request of a Streamable HTTP server goes through: the limits, then rmcp's
/// service.
struct Front {
    /// rmcp's service.
    service: StreamableHttpService<McpServer, LocalSessionManager>,
    /// Its sessions, counted against the cap.
    sessions: Arc<LocalSessionManager>,
    /// Held while a session is made, so that the cap holds.
    gate: tokio::sync::Mutex<()>,
    limits: http_limits::HttpLimits,
}

impl Front {
    /// The answer to one request: the limits' refusal, or rmcp's answer (explained when it
    /// refuses the body).
    async fn answer(
        &self,
        request: hyper::Request<hyper::body::Incoming>,
    ) -> http_limits::HttpResponse {
        let (request, body, opens) = match http_limits::check(request, &self.limits).await {
            Ok(checked) => checked,
            Err(response) => return response,
        };
        // New sessions are made one at a time, so the cap holds.
        let _opening = if opens {
            let guard = self.gate.lock().await;
            if let Some(refusal) = http_limits::over_cap(&self.sessions, &self.limits).await {
                return refusal;
            }
            Some(guard)
        } else {
            None
        };
        let response = self.service.handle(request).await;
        http_limits::explain(response, &body)
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

    /// A server with one tool that writes `lines` log lines (one if not said), then answers.
    fn server() -> Result<McpServer, Box<dyn std::error::Error>> {
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
        let registry = ToolRegistry::builder()
            .tool(Tool::builder("echo").export(talk).build()?)
            .build()?;
        Ok(McpServer::builder(Arc::new(registry)).build()?)
    }

    /// Stopping the server closes its connections: a client's idle keep-alive connection
    /// reads its end at once.
    #[tokio::test]
    async fn mcp_http_a_stop_closes_idle_connections() {
        let server = server()
            .unwrap()
            .serve_http("127.0.0.1:0".parse().unwrap())
            .await
            .unwrap();
        let mut stream = tokio::net::TcpStream::connect(server.local_addr())
            .await
            .unwrap();
        let request = format!(
            "DELETE /mcp HTTP/1.1\r\nHost: {}\r\nContent-Length: 0\r\n\r\n",
            server.local_addr()
        );
        stream.write_all(request.as_bytes()).await.unwrap();
        let mut answer = [0u8; 1024];
        let read = stream.read(&mut answer).await.unwrap();
        assert!(answer[..read].starts_with(b"HTTP/1.1 "), "{read} bytes");
        server.shutdown().await.unwrap();
        let mut rest = Vec::new();
        tokio::time::timeout(Duration::from_secs(5), stream.read_to_end(&mut rest))
            .await
            .expect("the connection is closed")
            .unwrap();
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
    /// result, in the call's own answer: a 2026-07-28 call standing alone. (On a session, rmcp
    /// sends log lines on the session's own stream, `GET`.) A tool that writes faster than they
    /// can go out (here: all at once, on this test's one thread) has at most `MAX_WAITING_LINES` kept, and the client told how many were not.
    #[tokio::test]
    async fn mcp_http_a_calls_log_lines_reach_the_client_in_order_before_its_result() {
        use super::super::caller::MAX_WAITING_LINES;
        let server = server()
            .unwrap()
            .serve_http("127.0.0.1:0".parse().unwrap())
            .await
            .unwrap();
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
            crate::tls::install_crypto_provider();
            let answer = reqwest::Client::new()
                .post(server.url())
                .header("Accept", "application/json, text/event-stream")
                .header("Content-Type", "application/json")
                .header("MCP-Protocol-Version", "2026-07-28")
                .header("Mcp-Method", "tools/call")
                .header("Mcp-Name", "echo__talk")
                .body(call.to_string())
                .timeout(Duration::from_secs(20))
                .send()
                .await
                .unwrap();
            assert_eq!(answer.status(), 200);
            let events = events(&answer.bytes().await.unwrap());
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
        server.shutdown().await.unwrap();
    }
}
