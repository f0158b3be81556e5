//! A session's `tools/call` read once, for the request that rmcp's checks plainly pass.
//!
//! rmcp's `StreamableHttpService` reads every request body as a `ClientJsonRpcMessage`: an
//! untagged enum over JSON-RPC's four shapes, whose request shape is again an untagged enum
//! over every method the protocol knows. A `tools/call` is copied into serde's buffer three
//! times and tried against the thirteen methods before it, each refusal formatting an error
//! message: about 35,000 instructions of a session's `tools/call`, 14% of all it costs both
//! ends (measured with `scripts/callgrind mcp`; rmcp's own server pays the same).
//!
//! [`read`] takes a request that is plainly a `tools/call` on a session whose headers rmcp's
//! checks let through without a doubt, and reads its body straight as a `tools/call`, with
//! rmcp's own types. Such a request goes to the session as rmcp would send it
//! (`SessionManager::create_stream`), and its answer comes back as rmcp frames it
//! ([`sse_response`]). Any other request (another method, a header spelt otherwise, a body
//! that does not read, an unknown session) goes to rmcp's service, which decides it as it
//! always has. So the server answers exactly as through rmcp alone; only the cost of the
//! common request changes. A test sends the same requests, plain and not, to a server with
//! this lane and to one without it, and asks for the same answers byte for byte.
//!
//! What "plainly" means, each a condition under which rmcp's check passes whatever its
//! configuration (see `tower.rs` in rmcp's `streamable_http_server`):
//! - `POST`, with no `Origin` header (the origin check passes with no origin);
//! - one `Accept` header naming exactly `application/json` and `text/event-stream`, in either
//!   order, and one `Content-Type` header `application/json`;
//! - no `MCP-Protocol-Version` header, or one naming a revision rmcp knows from before
//!   2026-07-28: the session's revisions, which need neither `_meta` nor the standard headers;
//! - a `Mcp-Session-Id` header in visible ASCII;
//! - a body that is one JSON object with `method` `tools/call` and no `result` or `error`
//!   member, which reads as rmcp's `JsonRpcRequest<CallToolRequest>`, and whose `_meta` has
//!   no `io.modelcontextprotocol/` member (no revision of its own).

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
use hyper::{Method, Response};
use pin_project_lite::pin_project;
use rmcp::model::{
    CallToolRequest, ClientJsonRpcMessage, ClientRequest, GetExtensions, GetMeta, JsonRpcRequest,
    ProtocolVersion,
};
use rmcp::transport::streamable_http_server::session::{ServerSseMessage, SessionId};
use serde::Deserialize;
use serde::de::IgnoredAny;
use tokio_util::sync::{CancellationToken, DropGuard};

use super::http_limits::{HttpResponse, SESSION_ID};

/// The revision header, as rmcp names it.
const PROTOCOL_VERSION: HeaderName = HeaderName::from_static("mcp-protocol-version");
/// The `_meta` prefix of the protocol's own members (a request's revision among them).
const PROTOCOL_META: &str = "io.modelcontextprotocol/";

/// A `tools/call` read in the lane: the session it is for, and the request as rmcp reads it.
#[derive(Debug)]
pub(super) struct PlainCall {
    /// The session named by the request.
    pub(super) session: SessionId,
    /// The request, without the HTTP parts rmcp puts in its extensions (see [`Self::message`]).
    request: JsonRpcRequest<ClientRequest>,
}

impl PlainCall {
    /// The session, and the message rmcp's service would hand it: the request, with the HTTP
    /// request's parts in its extensions, as rmcp puts them there for handlers.
    pub(super) fn into_message(
        self,
        parts: hyper::http::request::Parts,
    ) -> (SessionId, ClientJsonRpcMessage) {
        let mut request = self.request;
        request.request.extensions_mut().insert(parts);
        (self.session, ClientJsonRpcMessage::Request(request))
    }
}

/// The request with `method`, `headers` and `body` if it is a plain `tools/call` on a session
/// (see the module docs); else `None`, and the request is rmcp's to decide.
pub(super) fn read(method: &Method, headers: &HeaderMap, body: &[u8]) -> Option<PlainCall> {
    // The revision first: it turns away every stateless (2026-07-28) request at once.
    let mut versions = headers.get_all(&PROTOCOL_VERSION).iter();
    match (versions.next(), versions.next()) {
        (None, _) => {}
        (Some(version), None) if is_session_revision(version.as_bytes()) => {}
        _ => return None,
    }
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
    let session = single(headers, &SESSION_ID)?.to_str().ok()?;
    let shape: Shape<'_> = serde_json::from_slice(body).ok()?;
    if shape.method.as_deref() != Some("tools/call") || shape.result.0 || shape.error.0 {
        return None;
    }
    let call: JsonRpcRequest<CallToolRequest> = serde_json::from_slice(body).ok()?;
    let request = JsonRpcRequest {
        jsonrpc: call.jsonrpc,
        id: call.id,
        request: ClientRequest::CallToolRequest(call.request),
    };
    if request
        .request
        .get_meta()
        .keys()
        .any(|key| key.starts_with(PROTOCOL_META))
    {
        return None;
    }
    Some(PlainCall {
        session: session.into(),
        request,
    })
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

/// Whether `version` is a revision rmcp knows that has sessions and needs neither a request's
/// `_meta` nor the standard headers (those from 2026-07-28 on).
fn is_session_revision(version: &[u8]) -> bool {
    let newest = ProtocolVersion::V_2026_07_28.as_str();
    let headers_from = ProtocolVersion::STANDARD_HEADERS.as_str();
    ProtocolVersion::KNOWN_VERSIONS.iter().any(|known| {
        let known = known.as_str();
        known.as_bytes() == version && known < newest && known < headers_from
    })
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
                serde_json::to_value(ClientJsonRpcMessage::Request(call.request)).ok(),
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
}
