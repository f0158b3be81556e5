//! What one Streamable HTTP server gives its clients at most: [`HttpLimits`], and the checks
//! in front of rmcp's service that keep to them.
//!
//! - A session idle for [`HttpLimits::idle_timeout`] ends (rmcp's session keep-alive).
//! - At most [`HttpLimits::max_sessions`] sessions are open; a new session past the cap is
//!   refused with HTTP 503 and a JSON-RPC error that says so, and open sessions go on.
//! - A request body is at most [`HttpLimits::max_body_bytes`] (HTTP 413).
//! - A body that is not JSON (invalid UTF-8, a syntax error, nesting deeper than the JSON
//!   reader's limit of 128) is HTTP 400 with the JSON-RPC parse error (`-32700`); JSON that
//!   is not a JSON-RPC message is HTTP 400 with the invalid-request error (`-32600`). Nothing
//!   of it reaches a handler.

use std::convert::Infallible;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full, LengthLimitError, Limited};
use hyper::body::Incoming;
use hyper::{Request, Response, StatusCode};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use serde_json::json;

/// The header a session's requests carry.
const SESSION_ID: hyper::header::HeaderName =
    hyper::header::HeaderName::from_static("mcp-session-id");

/// The limits of a Streamable HTTP server (see the module docs).
///
/// ```
/// use std::time::Duration;
/// use goondan_runtime::mcp::server::HttpLimits;
/// let limits = HttpLimits::default()
///     .max_sessions(100)
///     .idle_timeout(Duration::from_secs(60));
/// assert_eq!(limits.sessions(), 100);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HttpLimits {
    idle_timeout: Duration,
    max_sessions: usize,
    max_body_bytes: usize,
}

impl Default for HttpLimits {
    /// Idle sessions end after 5 minutes; at most 1,024 sessions; bodies up to 4 MiB.
    fn default() -> Self {
        Self {
            idle_timeout: Duration::from_secs(300),
            max_sessions: 1024,
            max_body_bytes: 4 * 1024 * 1024,
        }
    }
}

impl HttpLimits {
    /// How long a session may stay idle before it ends (at least 1 second).
    #[must_use]
    pub fn idle_timeout(mut self, idle: Duration) -> Self {
        self.idle_timeout = idle.max(Duration::from_secs(1));
        self
    }

    /// How many sessions may be open at once (at least 1).
    #[must_use]
    pub fn max_sessions(mut self, max: usize) -> Self {
        self.max_sessions = max.max(1);
        self
    }

    /// How large a request body may be, in bytes (at least 1 KiB).
    #[must_use]
    pub fn max_body_bytes(mut self, max: usize) -> Self {
        self.max_body_bytes = max.max(1024);
        self
    }

    /// The idle timeout.
    pub fn idle(&self) -> Duration {
        self.idle_timeout
    }

    /// The session cap.
    pub fn sessions(&self) -> usize {
        self.max_sessions
    }

    /// The body cap.
    pub fn body_bytes(&self) -> usize {
        self.max_body_bytes
    }
}

/// A response rmcp's service would give, or that the checks give instead.
pub(super) type HttpResponse = Response<BoxBody<Bytes, Infallible>>;

/// A request whose body has been read, ready for rmcp's service: the request, its body bytes
/// (kept to explain a refusal of them), and whether it opens a session (an `initialize`
/// without a session id).
pub(super) type Checked = (Request<Full<Bytes>>, Bytes, bool);

/// Reads `request`'s body within the limit; a refusal is the checks' answer.
pub(super) async fn check(
    request: Request<Incoming>,
    limits: &HttpLimits,
) -> Result<Checked, HttpResponse> {
    let (parts, incoming) = request.into_parts();
    let body = match read_body(incoming, limits.max_body_bytes).await {
        Ok(body) => body,
        Err(refusal) => {
            let (status, message) = match refusal {
                BodyRefusal::TooLarge => (
                    StatusCode::PAYLOAD_TOO_LARGE,
                    format!("the request body exceeds {} bytes", limits.max_body_bytes),
                ),
                BodyRefusal::Unreadable(e) => (
                    StatusCode::BAD_REQUEST,
                    format!("the request body could not be read: {e}"),
                ),
            };
            return Err(rpc_error(status, -32600, &message));
        }
    };
    // The body first: most requests are not `initialize`, and then the headers need no look.
    let opens = is_initialize(&body)
        && parts.method == hyper::Method::POST
        && !parts.headers.contains_key(SESSION_ID);
    let request = Request::from_parts(parts, Full::new(body.clone()));
    Ok((request, body, opens))
}

/// Why a body was not read.
enum BodyRefusal {
    /// It is longer than the limit.
    TooLarge,
    /// The connection failed while it was read.
    Unreadable(Box<dyn std::error::Error + Send + Sync>),
}

/// The data of `body`, at most `max` bytes; trailers are ignored. A body that says it is
/// longer is refused before any of it is read.
async fn read_body<B>(body: B, max: usize) -> Result<Bytes, BodyRefusal>
where
    B: hyper::body::Body<Data = Bytes>,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    if body.size_hint().lower() > max as u64 {
        return Err(BodyRefusal::TooLarge);
    }
    match Limited::new(body, max).collect().await {
        Ok(collected) => Ok(collected.to_bytes()),
        Err(error) if error.is::<LengthLimitError>() => Err(BodyRefusal::TooLarge),
        Err(error) => Err(BodyRefusal::Unreadable(error)),
    }
}

/// The refusal of a new session when `sessions` are at the cap. The caller holds the
/// server's session gate from this check until the session is made, so the cap holds under
/// concurrent `initialize` requests.
pub(super) async fn over_cap(
    sessions: &LocalSessionManager,
    limits: &HttpLimits,
) -> Option<HttpResponse> {
    let open = sessions.sessions.read().await.len();
    (open >= limits.max_sessions).then(|| {
        rpc_error(
            StatusCode::SERVICE_UNAVAILABLE,
            -32000,
            &format!(
                "too many open sessions ({open}, the cap is {}); close one (HTTP DELETE) or \
                 try again once idle sessions have expired",
                limits.max_sessions
            ),
        )
    })
}

/// rmcp answers a body it cannot read as a message with 415; the protocol wants 400 and a
/// JSON-RPC error: `-32700` for a body that is not JSON, `-32600` for JSON that is not a
/// message. Any other response passes unchanged.
pub(super) fn explain(response: HttpResponse, body: &Bytes) -> HttpResponse {
    if response.status() != StatusCode::UNSUPPORTED_MEDIA_TYPE || body.is_empty() {
        return response;
    }
    match serde_json::from_slice::<serde_json::Value>(body) {
        Err(e) => rpc_error(
            StatusCode::BAD_REQUEST,
            -32700,
            &format!("Parse error: the body is not JSON ({e})"),
        ),
        Ok(_) => rpc_error(
            StatusCode::BAD_REQUEST,
            -32600,
            "Invalid Request: the body is JSON but not a JSON-RPC request, notification or \
             response",
        ),
    }
}

/// Whether `body` is an `initialize` request, read without parsing all of it: a new session
/// begins with one, and anything else without a session is rmcp's to refuse.
fn is_initialize(body: &[u8]) -> bool {
    // Most requests are not: a look for the word spares them a parse.
    static WORD: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
        std::sync::LazyLock::new(|| memchr::memmem::Finder::new(b"initialize"));
    if WORD.find(body).is_none() {
        return false;
    }
    #[derive(serde::Deserialize)]
    struct Method<'a> {
        #[serde(borrow)]
        method: Option<std::borrow::Cow<'a, str>>,
    }
    serde_json::from_slice::<Method<'_>>(body)
        .ok()
        .and_then(|m| m.method)
        .is_some_and(|m| m == "initialize")
}

/// An answer of `status` whose body is the JSON-RPC error `code` with `message`.
fn rpc_error(status: StatusCode, code: i64, message: &str) -> HttpResponse {
    let body = json!({
        "jsonrpc": "2.0",
        "id": null,
        "error": {"code": code, "message": message},
    });
    let mut response = Response::new(Full::new(Bytes::from(body.to_string())).boxed());
    *response.status_mut() = status;
    response.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static("application/json"),
    );
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_an_initialize_request_opens_a_session() {
        assert!(is_initialize(
            br#"{"jsonrpc":"2.0","id":1,"method":"initialize"}"#
        ));
        assert!(!is_initialize(
            br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#
        ));
        assert!(!is_initialize(b"not json"));
    }

    /// A body of one frame or several, read whole; one past the limit refused, whether it
    /// says so first or not.
    #[tokio::test]
    async fn a_body_is_read_whole_within_its_limit() {
        use http_body_util::StreamBody;
        use hyper::body::Frame;
        type Framed = Result<Frame<Bytes>, std::convert::Infallible>;
        fn frames(
            parts: &[&'static str],
        ) -> StreamBody<futures_util::stream::Iter<std::vec::IntoIter<Framed>>> {
            let mut all: Vec<Framed> = parts
                .iter()
                .map(|p| Ok(Frame::data(Bytes::from_static(p.as_bytes()))))
                .collect();
            all.insert(
                1.min(all.len()),
                Ok(Frame::trailers(hyper::HeaderMap::new())),
            );
            StreamBody::new(futures_util::stream::iter(all))
        }
        let read = |parts: &'static [&'static str], max| async move {
            read_body(frames(parts), max).await
        };
        assert!(matches!(read(&[], 10).await, Ok(b) if b.is_empty()));
        assert!(matches!(read(&["{\"a\":1}"], 10).await, Ok(b) if b == "{\"a\":1}"));
        assert!(matches!(read(&["ab", "cd", "ef"], 6).await, Ok(b) if b == "abcdef"));
        assert!(matches!(
            read(&["ab", "cd", "efg"], 6).await,
            Err(BodyRefusal::TooLarge)
        ));
        assert!(matches!(
            read(&["abcdefg"], 6).await,
            Err(BodyRefusal::TooLarge)
        ));
        let full = Full::new(Bytes::from_static(b"abcdefg"));
        assert!(matches!(
            read_body(full, 6).await,
            Err(BodyRefusal::TooLarge)
        ));
    }

    #[test]
    fn limits_have_floors() {
        let l = HttpLimits::default()
            .max_sessions(0)
            .max_body_bytes(1)
            .idle_timeout(Duration::ZERO);
        assert_eq!(l.sessions(), 1);
        assert_eq!(l.body_bytes(), 1024);
        assert_eq!(l.idle(), Duration::from_secs(1));
    }
}
