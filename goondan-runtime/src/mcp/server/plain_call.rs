//! A plain `tools/call` read once, for the request that rmcp's checks plainly pass.
//!
//! rmcp's `StreamableHttpService` reads every request body as a `ClientJsonRpcMessage`: an
//! untagged enum over JSON-RPC's four shapes, whose request shape is again an untagged enum
//! over every method the protocol knows. A `tools/call` is copied into serde's buffer three
//! times and tried against the thirteen methods before it, each refusal formatting an error
//! message: a large share of what a session's `tools/call` costs both ends, which rmcp's own
//! server pays too (`docs/benchmarks.md` has the figures). A 2026-07-28 request standing alone
//! pays that, and then as much again to check its standard headers (`Mcp-Method`,
//! `Mcp-Name`) against a copy of the whole message as a `serde_json::Value`.
//!
//! [`read`] takes a request that is plainly a `tools/call`, whose headers rmcp's checks let
//! through without a doubt, and reads its body straight as a `tools/call`, with rmcp's own
//! types. It goes where rmcp would send it ([`Route`]): on a session, to the session
//! (`SessionManager::create_stream`); standing alone, to the server served for it alone
//! ([`serve_alone`], rmcp's `serve_directly_with_ct`, as rmcp serves it). Its answer comes
//! back as rmcp frames it ([`sse_response`], or JSON where rmcp answers in JSON). Any other
//! request (another method, a header spelt otherwise, a body that does not read, an unknown
//! session) goes to rmcp's service, which decides it as it always has. So the server answers
//! exactly as through rmcp alone; only the cost of the common request changes. Tests send the
//! same requests, plain and not, to a server with this lane and to one without it, and ask
//! for the same answers byte for byte.
//!
//! What "plainly" means, each a condition under which rmcp's check passes whatever its
//! configuration (see `tower.rs` in rmcp's `streamable_http_server`):
//! - `POST`, with no `Origin` header (the origin check passes with no origin);
//! - one `Accept` header naming exactly `application/json` and `text/event-stream`, in either
//!   order, and one `Content-Type` header `application/json`;
//! - a body that is one JSON object with `method` `tools/call` and no `result` or `error`
//!   member, which reads as rmcp's `JsonRpcRequest<CallToolRequest>`;
//! - on a session: no `MCP-Protocol-Version` header, or one naming a revision rmcp knows from
//!   before 2026-07-28 (the session's revisions, which need neither `_meta` nor the standard
//!   headers); one `Mcp-Session-Id` header in visible ASCII; no `io.modelcontextprotocol/`
//!   member in the body's `_meta` (no revision of its own);
//! - standing alone: one `MCP-Protocol-Version` header naming a revision rmcp knows from
//!   2026-07-28 on, and the same revision in the body's `_meta`; no `Mcp-Session-Id` header;
//!   one `Mcp-Method` header `tools/call` and one `Mcp-Name` header spelling the tool's name
//!   as it is (not in base64); and (looked at by the caller, `McpServer::names_param_headers`)
//!   no `x-mcp-header` anywhere in the tool's input schema, so that no `Mcp-Param-*` header is
//!   asked for.

use std::borrow::Cow;
use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use futures_util::{Stream, StreamExt};
use http_body_util::BodyExt;
use hyper::header::{
    ACCEPT, CACHE_CONTROL, CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue, ORIGIN,
};
use hyper::{Method, Response, StatusCode};
use pin_project_lite::pin_project;
use rmcp::RoleServer;
use rmcp::model::{
    CallToolRequest, ClientCapabilities, ClientJsonRpcMessage, ClientRequest, ErrorCode,
    GetExtensions, Implementation, InitializeRequestParams, JsonRpcRequest, ProtocolVersion,
    RequestMetaObject, ServerJsonRpcMessage,
};
use rmcp::service::serve_directly_with_ct;
use rmcp::transport::common::http_header::BASE64_HEADER_PREFIX;
use rmcp::transport::streamable_http_server::session::{ServerSseMessage, SessionId};
use rmcp::transport::{OneshotTransport, StreamableHttpServerConfig};
use serde::Deserialize;
use serde::de::IgnoredAny;
use tokio_util::sync::{CancellationToken, DropGuard};

use super::McpServer;
use super::http_limits::{HttpResponse, SESSION_ID, json_answer};

/// The revision header, as rmcp names it.
const PROTOCOL_VERSION: HeaderName = HeaderName::from_static("mcp-protocol-version");
/// The standard header naming a request's method (from 2026-07-28 on).
const MCP_METHOD: HeaderName = HeaderName::from_static("mcp-method");
/// The standard header naming what a request is about: for `tools/call`, the tool.
const MCP_NAME: HeaderName = HeaderName::from_static("mcp-name");
/// The `_meta` prefix of the protocol's own members (a request's revision among them).
const PROTOCOL_META: &str = "io.modelcontextprotocol/";

/// A `tools/call` read in the lane: where it goes, and the request as rmcp reads it.
#[derive(Debug)]
pub(super) struct PlainCall {
    /// Where it goes.
    pub(super) route: Route,
    /// The request, without the HTTP parts rmcp puts in its extensions (see [`Self::into_message`]).
    call: JsonRpcRequest<CallToolRequest>,
}

/// Where a plain call goes, as rmcp would send it.
#[derive(Debug)]
pub(super) enum Route {
    /// To the live session it names (a revision before 2026-07-28).
    Session(SessionId),
    /// To a server served for it alone (2026-07-28 on).
    Alone {
        /// The revision it names, which the handler is told its client speaks.
        version: ProtocolVersion,
        /// Whether its `_meta` lacks a member the revision asks for: an invalid-params
        /// answer is then HTTP 400, as rmcp sends it.
        meta_malformed: bool,
    },
}

impl PlainCall {
    /// The tool it calls.
    pub(super) fn tool(&self) -> &str {
        &self.call.request.params.name
    }

    /// Where it goes, and the message rmcp's service would hand on: the request, with the
    /// HTTP request's parts in its extensions, as rmcp puts them there for handlers.
    pub(super) fn into_message(
        self,
        parts: hyper::http::request::Parts,
    ) -> (Route, ClientJsonRpcMessage) {
        let mut call = self.call;
        call.request.extensions_mut().insert(parts);
        let request = JsonRpcRequest {
            jsonrpc: call.jsonrpc,
            id: call.id,
            request: ClientRequest::CallToolRequest(call.request),
        };
        (self.route, ClientJsonRpcMessage::Request(request))
    }
}

/// The request with `method`, `headers` and `body` if it is a plain `tools/call` (see the
/// module docs); else `None`, and the request is rmcp's to decide.
pub(super) fn read(method: &Method, headers: &HeaderMap, body: &[u8]) -> Option<PlainCall> {
    let mut versions = headers.get_all(&PROTOCOL_VERSION).iter();
    let alone = match (versions.next(), versions.next()) {
        (None, _) => None,
        (Some(version), None) => match revision(version.as_bytes())? {
            Revision::Session => None,
            Revision::Alone(version) => Some(version),
        },
        _ => return None,
    };
    if method != Method::POST || headers.contains_key(ORIGIN) {
        return None;
    }
    if !one_of(headers, &ACCEPT, |v| {
        v == b"application/json, text/event-stream" || v == b"text/event-stream, application/json"
    }) || !one_of(headers, &CONTENT_TYPE, |v| {
        v.eq_ignore_ascii_case(b"application/json")
    }) {
        return None;
    }
    let session = match alone {
        None => Some(single(headers, &SESSION_ID)?.to_str().ok()?),
        Some(_) if headers.contains_key(SESSION_ID) => return None,
        Some(_) if !one_of(headers, &MCP_METHOD, |v| v == b"tools/call") => return None,
        Some(_) => None,
    };
    let shape: Shape<'_> = serde_json::from_slice(body).ok()?;
    if shape.method.as_deref() != Some("tools/call") || shape.result.0 || shape.error.0 {
        return None;
    }
    let call: JsonRpcRequest<CallToolRequest> = serde_json::from_slice(body).ok()?;
    let name_header_fits = match alone {
        None => true,
        Some(_) => single(headers, &MCP_NAME)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v == call.request.params.name && !v.starts_with(BASE64_HEADER_PREFIX)),
    };
    if !name_header_fits {
        return None;
    }
    // Where rmcp keeps a request's `_meta` (what its `GetMeta` reads).
    let meta = call.request.extensions().get::<RequestMetaObject>();
    let route = match (alone, session) {
        (None, Some(session)) => {
            if meta.is_some_and(|meta| meta.keys().any(|key| key.starts_with(PROTOCOL_META))) {
                return None;
            }
            Route::Session(session.into())
        }
        (Some(version), _) => {
            let meta = meta.filter(|meta| meta.protocol_version().as_ref() == Some(version))?;
            Route::Alone {
                version: version.clone(),
                meta_malformed: !meta
                    .missing_required_keys(&ProtocolVersion::V_2026_07_28)
                    .is_empty(),
            }
        }
        (None, None) => return None,
    };
    Some(PlainCall { route, call })
}

/// Whether `headers` has exactly one `name` header, and it passes `test`.
fn one_of(headers: &HeaderMap, name: &HeaderName, test: impl Fn(&[u8]) -> bool) -> bool {
    single(headers, name).is_some_and(|v| test(v.as_bytes()))
}

/// The one `name` header of `headers`, if there is exactly one.
fn single<'h>(headers: &'h HeaderMap, name: &HeaderName) -> Option<&'h HeaderValue> {
    let mut all = headers.get_all(name).iter();
    match (all.next(), all.next()) {
        (Some(value), None) => Some(value),
        _ => None,
    }
}

/// How rmcp serves a request of a revision it knows.
enum Revision {
    /// On a session: the revisions before 2026-07-28, which need neither a request's `_meta`
    /// nor the standard headers.
    Session,
    /// Standing alone, the revision named in its `_meta`, with the standard headers (2026-07-28
    /// on).
    Alone(&'static ProtocolVersion),
}

/// How rmcp serves a request of the revision `version` names, if it knows it (and the two
/// marks of a revision standing alone, no sessions and the standard headers, agree).
fn revision(version: &[u8]) -> Option<Revision> {
    let known = ProtocolVersion::KNOWN_VERSIONS
        .iter()
        .find(|known| known.as_str().as_bytes() == version)?;
    let alone = known.as_str() >= ProtocolVersion::V_2026_07_28.as_str();
    let headers = known.as_str() >= ProtocolVersion::STANDARD_HEADERS.as_str();
    match (alone, headers) {
        (false, false) => Some(Revision::Session),
        (true, true) => Some(Revision::Alone(known)),
        _ => None,
    }
}

/// Serves `message`, a plain call standing alone of `version`, on `server` for it alone, as
/// rmcp serves a 2026-07-28 request with `config`: the handler is told the revision (and no
/// more of the client), runs until it answers or the client goes away (the config's
/// cancellation ends it with the server), and its first message decides the answer: a final
/// one in JSON when the config asks for JSON answers or when its status is not 200, else
/// every message as Server-Sent Events (a comment every keep-alive interval).
pub(super) async fn serve_alone(
    server: McpServer,
    message: ClientJsonRpcMessage,
    (version, meta_malformed): (ProtocolVersion, bool),
    config: &StreamableHttpServerConfig,
) -> HttpResponse {
    let peer =
        InitializeRequestParams::new(ClientCapabilities::default(), Implementation::default())
            .with_protocol_version(version);
    let (transport, mut messages) = OneshotTransport::<RoleServer>::new(message);
    let call = CancellationToken::new();
    let running = serve_directly_with_ct(server, transport, Some(peer), call.clone());
    tokio::spawn(async move {
        let _ = running.waiting().await;
    });
    // The call is cancelled if the client goes away before the first message (this future is
    // dropped), and not once the first message is there.
    let gone = call.clone().drop_guard();
    let server_stop = config.cancellation_token.child_token();
    let first = tokio::select! {
        first = messages.recv() => first,
        () = server_stop.cancelled() => None,
    };
    let Some(first) = first else {
        return internal_error(
            "empty response",
            &std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                "no response message received from handler",
            ),
        );
    };
    gone.disarm();
    let last = matches!(
        first,
        ServerJsonRpcMessage::Response(_) | ServerJsonRpcMessage::Error(_)
    );
    let status = http_status(&first, meta_malformed);
    if last && (config.json_response || status != StatusCode::OK) {
        // Nothing after it can reach the client: a handler still running is stopped.
        call.cancel();
        return json_response(&first, status);
    }
    let rest = futures_util::stream::poll_fn(move |cx| messages.poll_recv(cx));
    let all = futures_util::stream::iter([first])
        .chain(rest)
        .map(ServerSseMessage::from_message);
    sse_response(
        CancelOnDrop {
            inner: all,
            cancel: Some(call.drop_guard()),
        },
        config.sse_keep_alive,
        config.cancellation_token.child_token(),
    )
}

/// The HTTP status of an answer standing alone whose first message is `message`, as rmcp
/// gives it: 400 for a protocol error of the request's headers or revision (or invalid params
/// when its `_meta` was malformed), 404 for an unknown method, else 200.
fn http_status(message: &ServerJsonRpcMessage, meta_malformed: bool) -> StatusCode {
    let ServerJsonRpcMessage::Error(error) = message else {
        return StatusCode::OK;
    };
    match error.error.code {
        ErrorCode::UNSUPPORTED_PROTOCOL_VERSION
        | ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY
        | ErrorCode::HEADER_MISMATCH => StatusCode::BAD_REQUEST,
        ErrorCode::INVALID_PARAMS if meta_malformed => StatusCode::BAD_REQUEST,
        ErrorCode::METHOD_NOT_FOUND => StatusCode::NOT_FOUND,
        _ => StatusCode::OK,
    }
}

/// One message as the whole answer, in JSON, with `status`.
fn json_response(message: &ServerJsonRpcMessage, status: StatusCode) -> HttpResponse {
    match serde_json::to_vec(message) {
        Ok(body) => json_answer(status, body),
        Err(error) => internal_error("serialize json response", &error),
    }
}

/// What the lane looks at before reading a body as a `tools/call`: its method, and whether it
/// has a member that would make it a response (which rmcp refuses).
#[derive(Deserialize)]
struct Shape<'a> {
    #[serde(borrow, default)]
    method: Option<Cow<'a, str>>,
    #[serde(default)]
    result: Present,
    #[serde(default)]
    error: Present,
}

/// Whether a member is there, whatever its value (`null` included).
#[derive(Default)]
struct Present(bool);

impl<'de> Deserialize<'de> for Present {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        IgnoredAny::deserialize(deserializer).map(|_| Present(true))
    }
}

/// The answer to a request the lane took: the session's messages as Server-Sent Events, framed
/// as rmcp frames them (a comment every `keep_alive`, the stream ended when `stop` is
/// cancelled, and `stop` cancelled when the answer is dropped), with rmcp's headers.
pub(super) fn sse_response(
    messages: impl Stream<Item = ServerSseMessage> + Send + Sync + 'static,
    keep_alive: Option<Duration>,
    stop: CancellationToken,
) -> HttpResponse {
    let stopped = stop.clone();
    let events = messages
        .map(|message| Ok::<_, Infallible>(event(message)))
        .take_until(async move { stopped.cancelled().await });
    let events = StopOnDrop {
        inner: events,
        _stop: stop.drop_guard(),
    };
    let body = sse_stream::SseBody::new(events);
    let body = match keep_alive {
        Some(interval) => body
            .with_keep_alive::<Sleep>(sse_stream::KeepAlive::new().interval(interval))
            .boxed(),
        None => body.boxed(),
    };
    let mut response = Response::new(body);
    let headers = response.headers_mut();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
    headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    headers.insert("x-accel-buffering", HeaderValue::from_static("no"));
    response
}

/// rmcp's answer when its session manager fails while `doing` something: HTTP 500, saying what.
pub(super) fn internal_error(doing: &str, error: &dyn std::fmt::Display) -> HttpResponse {
    tracing::error!("Internal server error when {doing}: {error}");
    let mut response = Response::new(
        http_body_util::Full::new(Bytes::from(format!(
            "Encounter an error when {doing}: {error}"
        )))
        .boxed(),
    );
    *response.status_mut() = hyper::StatusCode::INTERNAL_SERVER_ERROR;
    response
}

/// One message as an event: its JSON as data (empty for a priming event), its id and retry.
fn event(message: ServerSseMessage) -> sse_stream::Sse {
    let data = match message.message.as_deref().map(serde_json::to_string) {
        Some(Ok(json)) => json,
        None => String::new(),
        // A server message is plain JSON; should one not write, the client is told, in the
        // answer's own stream.
        Some(Err(error)) => {
            tracing::error!(%error, "an MCP answer could not be written as JSON");
            serde_json::json!({
                "jsonrpc": "2.0",
                "id": null,
                "error": {"code": -32603, "message": format!("the answer could not be written: {error}")},
            })
            .to_string()
        }
    };
    let mut sse = sse_stream::Sse::default().data(data);
    sse.id = message.event_id;
    sse.retry = message
        .retry
        .map(|retry| u64::try_from(retry.as_millis()).unwrap_or(u64::MAX));
    sse
}

pin_project! {
    /// A stream that cancels a call when dropped before its end (the client went away).
    struct CancelOnDrop<S> {
        #[pin]
        inner: S,
        cancel: Option<DropGuard>,
    }
}

impl<S: Stream> Stream for CancelOnDrop<S> {
    type Item = S::Item;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<S::Item>> {
        let this = self.project();
        let polled = this.inner.poll_next(cx);
        if let Poll::Ready(None) = polled {
            // Ended: the call is over, and nothing is cancelled.
            if let Some(guard) = this.cancel.take() {
                guard.disarm();
            }
        }
        polled
    }
}

pin_project! {
    /// A stream that cancels its token when dropped (the client went away, or it ended).
    struct StopOnDrop<S> {
        #[pin]
        inner: S,
        _stop: DropGuard,
    }
}

impl<S: Stream> Stream for StopOnDrop<S> {
    type Item = S::Item;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<S::Item>> {
        self.project().inner.poll_next(cx)
    }
}

pin_project! {
    /// tokio's sleep as the keep-alive's timer.
    struct Sleep {
        #[pin]
        sleep: tokio::time::Sleep,
    }
}

impl std::future::Future for Sleep {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        self.project().sleep.poll(cx)
    }
}

impl sse_stream::Timer for Sleep {
    fn from_duration(duration: Duration) -> Self {
        Self {
            sleep: tokio::time::sleep(duration),
        }
    }

    fn reset(self: Pin<&mut Self>, when: std::time::Instant) {
        self.project()
            .sleep
            .reset(tokio::time::Instant::from_std(when));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.append(
                hyper::header::HeaderName::from_bytes(name.as_bytes()).unwrap_or(ACCEPT),
                HeaderValue::from_str(value).unwrap_or(HeaderValue::from_static("x")),
            );
        }
        map
    }

    const PLAIN: &[(&str, &str)] = &[
        ("accept", "application/json, text/event-stream"),
        ("content-type", "application/json"),
        ("mcp-protocol-version", "2025-11-25"),
        ("mcp-session-id", "abc"),
    ];
    const CALL: &[u8] =
        br#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}"#;

    /// The HTTP parts of a request with none (they are not part of the message's JSON).
    fn no_parts() -> hyper::http::request::Parts {
        hyper::Request::new(()).into_parts().0
    }

    /// What rmcp reads from `body`, as JSON (extensions' `_meta` included).
    fn rmcp_reads(body: &[u8]) -> Option<serde_json::Value> {
        let message: ClientJsonRpcMessage = serde_json::from_slice(body).ok()?;
        serde_json::to_value(message).ok()
    }

    /// Every body the lane takes reads in it as rmcp reads it; the ones it leaves are left for
    /// a reason rmcp's check would look at.
    #[test]
    fn a_body_the_lane_takes_reads_as_rmcp_reads_it() {
        let taken: &[&[u8]] = &[
            CALL,
            br#"{"id":"x","jsonrpc":"2.0","params":{"name":"echo"},"method":"tools/call"}"#,
            br#"{"jsonrpc":"2.0","id":-1,"method":"tools/call","params":{"name":"a","arguments":{"n":1.5e300,"m":[1,null,{"k":true}]},"_meta":{"progressToken":3,"x":"y"}}}"#,
            br#"{"jsonrpc":"2.0","id":1,"method":"tools\/call","params":{"name":"\u00e9"},"extra":{"a":1}}"#,
            br#" {"jsonrpc":"2.0","id":9223372036854775807,"method":"tools/call","params":{"name":"a","requestState":"s"}} "#,
        ];
        for body in taken {
            let Some(call) = read(&Method::POST, &headers(PLAIN), body) else {
                panic!("not taken: {}", String::from_utf8_lossy(body));
            };
            assert_eq!(
                serde_json::to_value(call.into_message(no_parts()).1).ok(),
                rmcp_reads(body),
                "{}",
                String::from_utf8_lossy(body)
            );
        }
        let left: &[&[u8]] = &[
            b"",
            b"[]",
            b"not json",
            br#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#,
            br#"{"jsonrpc":"2.0","method":"tools/call","params":{"name":"a"}}"#,
            br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a"},"result":null}"#,
            br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a"},"error":{}}"#,
            br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","method":"tools/call","params":{"name":"a"}}"#,
            br#"{"jsonrpc":"1.0","id":1,"method":"tools/call","params":{"name":"a"}}"#,
            br#"{"jsonrpc":"2.0","id":1,"method":"tools/call"}"#,
            br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":3}}"#,
            br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","arguments":[1]}}"#,
            br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","_meta":{"io.modelcontextprotocol/protocolVersion":"2025-11-25"}}}"#,
            br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a"}} x"#,
            br#"{"jsonrpc":"2.0","id":18446744073709551615,"method":"tools/call","params":{"name":"a"}}"#,
        ];
        for body in left {
            assert!(
                read(&Method::POST, &headers(PLAIN), body).is_none(),
                "taken: {}",
                String::from_utf8_lossy(body)
            );
        }
    }

    #[test]
    fn only_plain_headers_are_taken() {
        assert!(read(&Method::POST, &headers(PLAIN), CALL).is_some());
        assert!(read(&Method::GET, &headers(PLAIN), CALL).is_none());
        let with = |extra: (&str, &str)| {
            let mut pairs = PLAIN.to_vec();
            pairs.push(extra);
            read(&Method::POST, &headers(&pairs), CALL).is_some()
        };
        assert!(!with(("origin", "http://localhost")));
        assert!(!with(("accept", "application/json, text/event-stream")));
        assert!(!with(("mcp-session-id", "abc")));
        assert!(!with(("mcp-protocol-version", "2025-11-25")));
        let replacing = |name: &str, value: Option<&str>| {
            let mut pairs: Vec<(&str, &str)> =
                PLAIN.iter().copied().filter(|(n, _)| *n != name).collect();
            if let Some(value) = value {
                pairs.push((name, value));
            }
            read(&Method::POST, &headers(&pairs), CALL).is_some()
        };
        assert!(replacing(
            "accept",
            Some("text/event-stream, application/json")
        ));
        assert!(!replacing("accept", Some("application/json")));
        assert!(!replacing("accept", Some("*/*")));
        assert!(!replacing("accept", None));
        assert!(replacing("content-type", Some("Application/JSON")));
        assert!(!replacing(
            "content-type",
            Some("application/json; charset=utf-8")
        ));
        assert!(!replacing("content-type", None));
        assert!(replacing("mcp-protocol-version", None));
        assert!(replacing("mcp-protocol-version", Some("2024-11-05")));
        assert!(replacing("mcp-protocol-version", Some("2025-06-18")));
        assert!(!replacing("mcp-protocol-version", Some("2026-07-28")));
        assert!(!replacing("mcp-protocol-version", Some("2025-11-26")));
        assert!(!replacing("mcp-session-id", None));
    }

    const ALONE: &[(&str, &str)] = &[
        ("accept", "application/json, text/event-stream"),
        ("content-type", "application/json"),
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", "tools/call"),
        ("mcp-name", "echo"),
    ];
    const ALONE_CALL: &str = r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"c","version":"1"}}}}"#;

    /// Where the lane sends a call standing alone with `extra` headers, `without` one, and
    /// its body's `_meta` members replaced: `None` when it leaves it to rmcp.
    fn alone(
        extra: &[(&str, &str)],
        without: Option<&str>,
        body: &str,
    ) -> Option<(ProtocolVersion, bool)> {
        let mut pairs: Vec<(&str, &str)> = ALONE
            .iter()
            .copied()
            .filter(|(name, _)| Some(*name) != without)
            .collect();
        pairs.extend_from_slice(extra);
        match read(&Method::POST, &headers(&pairs), body.as_bytes())?.route {
            Route::Alone {
                version,
                meta_malformed,
            } => Some((version, meta_malformed)),
            Route::Session(_) => panic!("a call standing alone went to a session"),
        }
    }

    /// A 2026-07-28 call is taken standing alone when its headers say what its body says, as
    /// rmcp's checks want them; a header missing, doubled or at odds with the body, or a
    /// session named, leaves it to rmcp.
    #[test]
    fn a_call_standing_alone_is_taken_only_when_its_headers_agree_with_its_body() {
        assert_eq!(
            alone(&[], None, ALONE_CALL),
            Some((ProtocolVersion::V_2026_07_28, false))
        );
        // Its `_meta` without the client's capabilities: still rmcp's path, but an invalid
        // params answer is a 400.
        let no_capabilities =
            ALONE_CALL.replace(r#""io.modelcontextprotocol/clientCapabilities":{},"#, "");
        assert_eq!(
            alone(&[], None, &no_capabilities),
            Some((ProtocolVersion::V_2026_07_28, true))
        );
        let taken = |extra: &[(&str, &str)], without: Option<&str>, body: &str| {
            alone(extra, without, body).is_some()
        };
        for header in ["mcp-protocol-version", "mcp-method", "mcp-name", "accept"] {
            assert!(!taken(&[], Some(header), ALONE_CALL), "without {header}");
        }
        assert!(!taken(&[("mcp-method", "tools/call")], None, ALONE_CALL));
        assert!(!taken(&[("mcp-name", "echo")], None, ALONE_CALL));
        assert!(!taken(
            &[("mcp-protocol-version", "2026-07-28")],
            None,
            ALONE_CALL
        ));
        assert!(!taken(&[("mcp-session-id", "abc")], None, ALONE_CALL));
        assert!(!taken(&[("origin", "http://localhost")], None, ALONE_CALL));
        // Another method or name, or the name in base64 (the same name, but rmcp's to decode).
        for (header, value) in [
            ("mcp-method", "tools/list"),
            ("mcp-method", "Tools/Call"),
            ("mcp-name", "other"),
            ("mcp-name", "ECHO"),
            ("mcp-name", "=?base64?ZWNobw==?="),
        ] {
            assert!(
                !taken(&[(header, value)], Some(header), ALONE_CALL),
                "{header}: {value}"
            );
        }
        for version in ["2099-01-01", "2025-11-26", "2026-07-28 "] {
            assert!(
                !taken(
                    &[("mcp-protocol-version", version)],
                    Some("mcp-protocol-version"),
                    ALONE_CALL
                ),
                "{version}"
            );
        }
        // The body's revision must be the header's.
        let other = ALONE_CALL.replace(
            r#"protocolVersion":"2026-07-28"#,
            r#"protocolVersion":"2025-11-25"#,
        );
        assert!(!taken(&[], None, &other));
        let missing = ALONE_CALL.replace(
            r#""io.modelcontextprotocol/protocolVersion":"2026-07-28","#,
            "",
        );
        assert!(!taken(&[], None, &missing));
        let malformed = ALONE_CALL.replace(
            r#"protocolVersion":"2026-07-28"#,
            r#"protocolVersion":20260728"#,
        );
        assert!(!taken(&[], None, &malformed));
        // What `read` takes reads as rmcp reads it.
        let Some(call) = read(&Method::POST, &headers(ALONE), ALONE_CALL.as_bytes()) else {
            panic!("not taken");
        };
        assert_eq!(call.tool(), "echo");
        assert_eq!(
            serde_json::to_value(call.into_message(no_parts()).1).ok(),
            rmcp_reads(ALONE_CALL.as_bytes())
        );
    }
}
