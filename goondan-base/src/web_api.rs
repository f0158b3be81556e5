//! The HTTP side of the chat-service tools (`telegram`, `slack`): one request to a configured
//! API, with a timeout, the call's cancellation, a body cap, and bounded retries after a rate
//! limit (`retry-after`).
//!
//! It reuses `http-fetch`'s connection code (hyper over TCP, rustls for https). Unlike
//! `http-fetch` it does not refuse private addresses: the base URLs are configuration, and a
//! URL from the model is accepted only when it matches the configuration (see each tool).
//! Tokens travel in URLs (Telegram) or headers (Slack); they are never put in an error
//! message or a log line: [`Secret`] has a redacted `Debug`, and errors name the API's base
//! URL, never the full request URL.
//!
//! What both tools do alike lives here too, parameterised by a `Service` (each
//! tool's error codes and wording): `connection` opens a call's connection (base URL, token,
//! timeout) and retries rate-limited requests, `download` turns a downloaded file into
//! base64, a data URL and a saved copy.

pub(crate) mod connection;
pub(crate) mod download;
pub(crate) mod service;

use std::fmt;
use std::net::IpAddr;
use std::time::Duration;

use bytes::Bytes;
use http::header::{self, HeaderMap, HeaderValue};
use http::{Method, Request};
use http_body_util::Full;
use tokio_util::sync::CancellationToken;

use crate::http_fetch::target::{Host, Target};
use crate::http_fetch::{Resolver, SystemResolver, client};

/// A token: shown as `<redacted>` by `Debug`, read only where a request is built.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    /// Wraps `value`.
    pub fn new(value: impl Into<String>) -> Self {
        Self(value.into())
    }

    /// The token itself.
    pub(crate) fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(<redacted>)")
    }
}

/// How a tool retries after a rate limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Retries after a rate-limited answer, at most (default 2).
    pub max_retries: u32,
    /// The longest `retry-after` honoured; a longer one fails at once (default 30 s).
    pub max_wait: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            max_retries: 2,
            max_wait: Duration::from_secs(30),
        }
    }
}

impl RetryPolicy {
    /// Whether to wait `after` and retry, given that `done` retries were made already.
    pub(crate) fn allows(&self, done: u32, after: Duration) -> bool {
        done < self.max_retries && after <= self.max_wait
    }
}

/// Why an exchange failed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum WebError {
    /// The base URL cannot be used.
    #[error("the API base URL `{url}` is invalid: {why}")]
    BaseUrl {
        /// The URL as configured.
        url: String,
        /// Why.
        why: String,
    },
    /// The host name does not resolve.
    #[error("`{host}` does not resolve: {why}")]
    Dns {
        /// The host.
        host: String,
        /// Why.
        why: String,
    },
    /// Connecting or exchanging failed.
    #[error("{0}")]
    Connect(String),
    /// The request took longer than its timeout.
    #[error("the request took longer than {ms} ms")]
    Timeout {
        /// The timeout.
        ms: u128,
    },
    /// The call was cancelled.
    #[error("the request was cancelled")]
    Cancelled,
    /// The body is larger than the cap.
    #[error("the response is larger than {cap} bytes")]
    TooLarge {
        /// The cap.
        cap: usize,
    },
}

/// An API's base URL, without a trailing `/`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ApiBase {
    text: String,
    target: Target,
}

impl ApiBase {
    /// Parses `raw` (http or https, no user info, no query).
    pub(crate) fn parse(raw: &str) -> Result<Self, WebError> {
        let text = raw.trim().trim_end_matches('/').to_owned();
        let bad = |why: &str| WebError::BaseUrl {
            url: text.clone(),
            why: why.to_owned(),
        };
        let target = Target::parse(&text).map_err(|e| bad(e.message()))?;
        if target.path.contains('?') {
            return Err(bad("a base URL cannot carry a query"));
        }
        Ok(Self { text, target })
    }

    /// The base URL as text.
    pub(crate) fn as_str(&self) -> &str {
        &self.text
    }

    /// The target `{base}/{suffix}`; `suffix` is appended as it is.
    pub(crate) fn join(&self, suffix: &str) -> Target {
        let mut target = self.target.clone();
        let base = target.path.trim_end_matches('/');
        target.path = format!("{base}/{}", suffix.trim_start_matches('/'));
        target
    }

    /// Whether `other` names the same base URL.
    pub(crate) fn same_as(&self, other: &str) -> bool {
        ApiBase::parse(other).is_ok_and(|o| o.target == self.target)
    }
}

/// An answer, its body read up to the cap.
#[derive(Debug)]
pub(crate) struct Reply {
    pub(crate) status: u16,
    pub(crate) headers: HeaderMap,
    pub(crate) body: Vec<u8>,
}

impl Reply {
    /// The body as JSON, if it is JSON.
    pub(crate) fn json(&self) -> Option<serde_json::Value> {
        serde_json::from_slice(&self.body).ok()
    }

    /// A header as text.
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    /// `Retry-After` in whole seconds, if present.
    pub(crate) fn retry_after(&self) -> Option<Duration> {
        let secs = self.header("retry-after")?.trim().parse::<u64>().ok()?;
        Some(Duration::from_secs(secs))
    }

    /// `HTTP 404 Not Found`.
    pub(crate) fn describe(&self) -> String {
        match http::StatusCode::from_u16(self.status)
            .ok()
            .and_then(|s| s.canonical_reason())
        {
            Some(reason) => format!("HTTP {} {reason}", self.status),
            None => format!("HTTP {}", self.status),
        }
    }
}

/// One request.
pub(crate) struct Outgoing {
    pub(crate) method: Method,
    pub(crate) target: Target,
    pub(crate) headers: HeaderMap,
    pub(crate) body: Option<(Bytes, &'static str)>,
    /// Body bytes read at most; a longer body is [`WebError::TooLarge`].
    pub(crate) cap: usize,
}

/// Sends `out` once, within `timeout`, ended early by `cancel`.
pub(crate) async fn exchange(
    out: &Outgoing,
    timeout: Duration,
    cancel: &CancellationToken,
) -> Result<Reply, WebError> {
    tokio::select! {
        result = tokio::time::timeout(timeout, send(out)) => {
            result.unwrap_or(Err(WebError::Timeout { ms: timeout.as_millis() }))
        }
        () = cancel.cancelled() => Err(WebError::Cancelled),
    }
}

/// Waits `after`, unless `cancel` fires first.
pub(crate) async fn pause(after: Duration, cancel: &CancellationToken) -> Result<(), WebError> {
    tokio::select! {
        () = tokio::time::sleep(after) => Ok(()),
        () = cancel.cancelled() => Err(WebError::Cancelled),
    }
}

async fn send(out: &Outgoing) -> Result<Reply, WebError> {
    let target = &out.target;
    let addrs: Vec<IpAddr> = match &target.host {
        Host::Ip(ip) => vec![*ip],
        Host::Name(name) => SystemResolver
            .resolve(name)
            .await
            .map_err(|e| WebError::Dns {
                host: name.clone(),
                why: e.to_string(),
            })?,
    };
    let mut builder = Request::builder()
        .method(out.method.clone())
        .uri(target.path.as_str())
        .header(header::HOST, target.authority())
        .header(header::CONNECTION, "close")
        .header(
            header::USER_AGENT,
            concat!("goondan-base/", env!("CARGO_PKG_VERSION")),
        )
        .header(header::ACCEPT_ENCODING, "gzip, deflate");
    if let Some((_, content_type)) = &out.body {
        builder = builder.header(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    }
    for (name, value) in &out.headers {
        builder = builder.header(name, value);
    }
    let body = out
        .body
        .as_ref()
        .map(|(b, _)| b.clone())
        .unwrap_or_default();
    let request = builder
        .body(Full::new(body))
        .map_err(|e| WebError::Connect(format!("the request cannot be built: {e}")))?;
    let (response, _conn) = client::send(target, &addrs, request)
        .await
        .map_err(|e| WebError::Connect(e.message().to_owned()))?;
    let (parts, incoming) = response.into_parts();
    let (body, truncated) = client::read_body(&parts.headers, incoming, out.cap)
        .await
        .map_err(|e| WebError::Connect(e.message().to_owned()))?;
    if truncated {
        return Err(WebError::TooLarge { cap: out.cap });
    }
    Ok(Reply {
        status: parts.status.as_u16(),
        headers: parts.headers,
        body,
    })
}

/// The first non-empty of the call's token, the configured token, and the environment
/// variables `env_keys` (in order) as `lookup` reads them.
///
/// ```
/// use goondan_base::web_api::resolve_token;
/// let env = |key: &str| (key == "B").then(|| "from-env".to_owned());
/// assert_eq!(resolve_token(None, None, &["A", "B"], env).as_deref(), Some("from-env"));
/// assert_eq!(resolve_token(Some("given"), None, &["B"], env).as_deref(), Some("given"));
/// ```
pub fn resolve_token(
    given: Option<&str>,
    configured: Option<&Secret>,
    env_keys: &[&str],
    lookup: impl Fn(&str) -> Option<String>,
) -> Option<String> {
    if let Some(token) = given.filter(|t| !t.trim().is_empty()) {
        return Some(token.trim().to_owned());
    }
    if let Some(secret) = configured.filter(|s| !s.expose().is_empty()) {
        return Some(secret.expose().to_owned());
    }
    env_keys
        .iter()
        .find_map(|key| lookup(key).filter(|v| !v.is_empty()))
}

/// Percent-encodes `pairs` as `application/x-www-form-urlencoded`.
pub(crate) fn form_encode(pairs: &[(&str, String)]) -> String {
    let encode = |s: &str| {
        let mut out = String::with_capacity(s.len());
        for b in s.bytes() {
            match b {
                b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                    out.push(char::from(b));
                }
                b' ' => out.push('+'),
                _ => out.push_str(&format!("%{b:02X}")),
            }
        }
        out
    };
    pairs
        .iter()
        .map(|(k, v)| format!("{}={}", encode(k), encode(v)))
        .collect::<Vec<_>>()
        .join("&")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secret_debug_hides_the_token() {
        let s = Secret::new("123:abc");
        assert!(!format!("{s:?}").contains("abc"));
    }

    #[test]
    fn base_joins_paths_and_compares() {
        let base = ApiBase::parse("http://127.0.0.1:8080/api/").unwrap();
        assert_eq!(base.as_str(), "http://127.0.0.1:8080/api");
        assert_eq!(base.join("chat.postMessage").path, "/api/chat.postMessage");
        assert!(base.same_as("http://127.0.0.1:8080/api"));
        assert!(!base.same_as("http://127.0.0.2:8080/api"));
        assert!(ApiBase::parse("ftp://x").is_err());
        assert!(ApiBase::parse("https://x/?a=1").is_err());
    }

    #[test]
    fn form_encoding() {
        let body = form_encode(&[("channel", "C1".into()), ("latest", "1.5 x&y".into())]);
        assert_eq!(body, "channel=C1&latest=1.5+x%26y");
    }

    #[test]
    fn retry_policy_bounds() {
        let p = RetryPolicy::default();
        assert!(p.allows(0, Duration::from_secs(1)));
        assert!(!p.allows(2, Duration::from_secs(1)));
        assert!(!p.allows(0, Duration::from_secs(31)));
    }
}
