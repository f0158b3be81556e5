//! [`AuthServer`]: an OAuth-protected MCP endpoint and its authorization server on
//! 127.0.0.1, for what the conformance suite's servers do not do: a refresh token the server
//! has revoked, and metadata that names a token endpoint on another origin. The metadata
//! documents are RFC 9728's and RFC 8414's; `/authorize` redirects at once; `/token` grants
//! an authorization code (the access token `at-1`, living `expires_in` seconds, and the
//! refresh token `rt-1`) and refuses every refresh token (`invalid_grant`: revoked). `/mcp`
//! answers 401 with the challenge unless it is sent `at-1`; then it is a stateless MCP server
//! of one tool, `ping`, answering JSON (no SSE). Started [demanding DPoP
//! nonces](AuthServer::start_demanding), it takes `DPoP at-1` too, and one of its endpoints
//! asks for a new nonce on every request.
#![allow(dead_code)]

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use serde_json::json;

/// One request the server was sent: method, path and query, and the body as text.
#[derive(Debug, Clone)]
pub(crate) struct Seen {
    pub(crate) method: String,
    pub(crate) path: String,
    pub(crate) body: String,
}

/// Where and how the server asks for DPoP nonces (RFC 9449), never satisfied.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum NonceDemand {
    /// `/token` answers every request `use_dpop_nonce` with a new `DPoP-Nonce`.
    TokenEveryTime,
    /// `/token` answers `use_dpop_nonce` with a `DPoP-Nonce` that is not a nonce.
    TokenGarbage,
    /// `/token` grants; `/mcp` answers every request with a token `use_dpop_nonce` with a
    /// new `DPoP-Nonce`.
    ServerEveryTime,
}

/// The server.
pub(crate) struct AuthServer {
    addr: SocketAddr,
    seen: Arc<Mutex<Vec<Seen>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for AuthServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl AuthServer {
    /// Listens on a free port of 127.0.0.1. Its metadata names the token endpoint on
    /// `token_host` (the same port): `127.0.0.1` for its own origin, `localhost` for another.
    pub(crate) async fn start(token_host: &'static str) -> Self {
        Self::start_with(token_host, 3600).await
    }

    /// [`start`](Self::start), its access tokens living `expires_in` seconds.
    pub(crate) async fn start_with(token_host: &'static str, expires_in: u64) -> Self {
        Self::serve(token_host, expires_in, None).await
    }

    /// [`start`](Self::start) on its own origin, asking for DPoP nonces as `demand` says.
    pub(crate) async fn start_demanding(demand: NonceDemand) -> Self {
        Self::serve("127.0.0.1", 3600, Some(demand)).await
    }

    async fn serve(token_host: &'static str, expires_in: u64, demand: Option<NonceDemand>) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let seen: Arc<Mutex<Vec<Seen>>> = Arc::default();
        let kept = Arc::clone(&seen);
        let task = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let seen = Arc::clone(&kept);
                tokio::spawn(async move {
                    let service = service_fn(move |req| {
                        answer(req, addr, token_host, expires_in, demand, Arc::clone(&seen))
                    });
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                });
            }
        });
        Self { addr, seen, task }
    }

    /// The MCP endpoint.
    pub(crate) fn url(&self) -> String {
        format!("http://{}/mcp", self.addr)
    }

    /// The authorization server's issuer.
    pub(crate) fn issuer(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Every request so far.
    pub(crate) fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }
}

async fn answer(
    req: Request<Incoming>,
    addr: SocketAddr,
    token_host: &str,
    expires_in: u64,
    demand: Option<NonceDemand>,
    seen: Arc<Mutex<Vec<Seen>>>,
) -> Result<Response<Full<Bytes>>, Infallible> {
    let method = req.method().to_string();
    let path = req
        .uri()
        .path_and_query()
        .map(|p| p.as_str().to_owned())
        .unwrap_or_default();
    let query = req.uri().query().unwrap_or_default().to_owned();
    let authorized = req
        .headers()
        .get("authorization")
        .is_some_and(|v| v.as_bytes() == b"Bearer at-1" || v.as_bytes() == b"DPoP at-1");
    let body = req
        .into_body()
        .collect()
        .await
        .map(|b| String::from_utf8_lossy(&b.to_bytes()).into_owned())
        .unwrap_or_default();
    seen.lock().unwrap().push(Seen {
        method: method.clone(),
        path: path.clone(),
        body: body.clone(),
    });
    let base = format!("http://{addr}");
    let json = |status: u16, value: serde_json::Value| {
        Response::builder()
            .status(status)
            .header("content-type", "application/json")
            .body(Full::new(Bytes::from(value.to_string())))
            .unwrap()
    };
    let route = path.split('?').next().unwrap_or_default();
    // A new nonce for each request: the number of requests so far.
    let nonce = format!("n-{}", seen.lock().unwrap().len());
    let refuse = |status: u16, nonce: &str| {
        Response::builder()
            .status(status)
            .header("content-type", "application/json")
            .header("dpop-nonce", nonce)
            .header("www-authenticate", "DPoP error=\"use_dpop_nonce\"")
            .body(Full::new(Bytes::from(r#"{"error":"use_dpop_nonce"}"#)))
            .unwrap()
    };
    match (demand, route) {
        (Some(NonceDemand::TokenEveryTime), "/token") => return Ok(refuse(400, &nonce)),
        (Some(NonceDemand::TokenGarbage), "/token") => return Ok(refuse(400, "not a nonce")),
        (Some(NonceDemand::ServerEveryTime), "/mcp") if authorized => {
            return Ok(refuse(401, &nonce));
        }
        _ => {}
    }
    Ok(match route {
        "/mcp" if authorized && method == "POST" => mcp(&body),
        "/mcp" if authorized => Response::builder()
            .status(405)
            .body(Full::new(Bytes::new()))
            .unwrap(),
        "/mcp" => Response::builder()
            .status(401)
            .header(
                "www-authenticate",
                format!(
                    "Bearer resource_metadata=\"{base}/.well-known/oauth-protected-resource/mcp\""
                ),
            )
            .body(Full::new(Bytes::new()))
            .unwrap(),
        "/.well-known/oauth-protected-resource/mcp" => json(
            200,
            json!({"resource": format!("{base}/mcp"), "authorization_servers": [base]}),
        ),
        "/.well-known/oauth-authorization-server" => json(
            200,
            json!({
                "issuer": base,
                "authorization_endpoint": format!("{base}/authorize"),
                "token_endpoint": format!("http://{token_host}:{}/token", addr.port()),
                "registration_endpoint": format!("{base}/register"),
                "response_types_supported": ["code"],
                "grant_types_supported": ["authorization_code", "refresh_token"],
                "code_challenge_methods_supported": ["S256"],
                "token_endpoint_auth_methods_supported": ["none"],
            }),
        ),
        "/register" => json(
            201,
            json!({"client_id": "registered-client", "redirect_uris": ["http://127.0.0.1:3000/callback"]}),
        ),
        "/authorize" => {
            let param = |name: &str| {
                url::form_urlencoded::parse(query.as_bytes())
                    .find(|(k, _)| k == name)
                    .map(|(_, v)| v.into_owned())
                    .unwrap_or_default()
            };
            let mut to = url::Url::parse(&param("redirect_uri")).unwrap();
            to.query_pairs_mut()
                .append_pair("code", "a-code")
                .append_pair("state", &param("state"))
                .append_pair("iss", &base);
            Response::builder()
                .status(302)
                .header("location", to.as_str())
                .body(Full::new(Bytes::new()))
                .unwrap()
        }
        "/token" if body.contains("grant_type=refresh_token") => json(
            400,
            json!({"error": "invalid_grant", "error_description": "the refresh token was revoked"}),
        ),
        "/token" => json(
            200,
            json!({"access_token": "at-1", "token_type": "Bearer", "expires_in": expires_in,
                "refresh_token": "rt-1"}),
        ),
        _ => json(404, json!({"error": "not_found"})),
    })
}

/// The MCP server behind the authorization: `initialize`, `tools/list` (one tool, `ping`) and
/// `tools/call`, answered as JSON; notifications accepted.
fn mcp(body: &str) -> Response<Full<Bytes>> {
    let request: serde_json::Value = serde_json::from_str(body).unwrap_or_default();
    let Some(id) = request.get("id").cloned() else {
        return Response::builder()
            .status(202)
            .body(Full::new(Bytes::new()))
            .unwrap();
    };
    let result = match request["method"].as_str().unwrap_or_default() {
        "initialize" => json!({
            "protocolVersion": request["params"]["protocolVersion"],
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "protected", "version": "1.0.0"},
        }),
        "tools/list" => json!({"tools": [{"name": "ping", "inputSchema": {"type": "object"}}]}),
        "tools/call" => json!({"content": [{"type": "text", "text": "pong"}]}),
        _ => json!({}),
    };
    Response::builder()
        .status(200)
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from(
            json!({"jsonrpc": "2.0", "id": id, "result": result}).to_string(),
        )))
        .unwrap()
}
