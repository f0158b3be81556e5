//! `http-fetch`: HTTP(S) requests that cannot reach inside the host's network (BASE-3).
//!
//! - `http-fetch__get {url, headers?, timeoutMs?, maxBytes?}`
//! - `http-fetch__post {url, body?, bodyString?, headers?, timeoutMs?, maxBytes?}`
//!
//! Both answer `{url, status, headers, body, truncated, durationMs, redirects}`; a non-2xx
//! status is data. Only `http` and `https` URLs without user info are fetched. The host is
//! resolved once per hop through the policy's [`Resolver`], every address is checked (public
//! unicast only, unless [`HttpPolicy`] says otherwise), and the connection goes to a checked
//! address, so DNS rebinding has no second lookup to win. Redirects are followed by hand (at most 10), each
//! hop checked again. The body is streamed and capped after decompression.

mod address;
#[cfg(feature = "http-tools")]
pub(crate) mod client;
mod resolver;
pub(crate) mod target;

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;
#[cfg(feature = "http-tools")]
use std::time::Instant;

#[cfg(feature = "http-tools")]
use bytes::Bytes;
use goondan_runtime::ToolError;
#[cfg(feature = "http-tools")]
use goondan_runtime::{ToolContext, tool};
#[cfg(feature = "http-tools")]
use http::header::{self, HeaderMap, HeaderName, HeaderValue};
#[cfg(feature = "http-tools")]
use http::{Method, Request};
#[cfg(feature = "http-tools")]
use http_body_util::Full;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use self::address::{Class, classify};
pub use self::resolver::{ResolveFuture, Resolver, StaticResolver, SystemResolver};
pub(crate) use self::target::{Host, Target};

/// Error codes of `http-fetch`.
pub mod codes {
    /// The scheme is not http or https.
    pub const SCHEME: &str = "E_HTTP_SCHEME";
    /// The URL cannot be parsed or names no valid host.
    pub const URL_INVALID: &str = "E_HTTP_URL_INVALID";
    /// The URL carries `user:password@`.
    pub const USERINFO: &str = "E_HTTP_USERINFO";
    /// The host is, or resolves to, an address the policy refuses.
    pub const FORBIDDEN_ADDRESS: &str = "E_HTTP_FORBIDDEN_ADDRESS";
    /// The host name does not resolve.
    pub const DNS: &str = "E_HTTP_DNS";
    /// The connection or the exchange failed.
    pub const CONNECT: &str = "E_HTTP_CONNECT";
    /// The response body could not be read or decoded.
    pub const BODY: &str = "E_HTTP_BODY";
    /// More redirects than the policy allows.
    pub const TOO_MANY_REDIRECTS: &str = "E_HTTP_TOO_MANY_REDIRECTS";
    /// A request header is invalid or reserved.
    pub const HEADER: &str = "E_HTTP_HEADER";
    /// `body` and `bodyString` were both given.
    pub const BODY_CONFLICT: &str = "E_HTTP_BODY_CONFLICT";
    /// The request took longer than its timeout.
    pub const TIMEOUT: &str = "E_HTTP_TIMEOUT";
    /// The call was cancelled.
    pub const CANCELLED: &str = "E_HTTP_CANCELLED";
}

/// What `http-fetch` may reach.
#[derive(Debug, Clone)]
pub struct HttpPolicy {
    /// Allow `127.0.0.0/8` and `::1` (default false).
    pub allow_loopback: bool,
    /// Host names (or IP literals as written in URLs, without brackets) exempt from the
    /// address check, compared case-insensitively.
    pub allowed_hosts: Vec<String>,
    /// Timeout of the whole request, redirects included, when the call sets none (30 s).
    pub default_timeout: Duration,
    /// The largest timeout a call may ask for (120 s).
    pub max_timeout: Duration,
    /// Body bytes kept when the call sets no `maxBytes` (100000).
    pub default_max_bytes: u64,
    /// The largest `maxBytes` a call may ask for (10 MiB).
    pub max_bytes_limit: u64,
    /// Redirects followed at most (10).
    pub max_redirects: usize,
    /// How host names are resolved (default: the system resolver).
    pub resolver: Arc<dyn Resolver>,
    /// The `User-Agent` sent when the call sets none.
    pub user_agent: String,
}

impl Default for HttpPolicy {
    fn default() -> Self {
        Self {
            allow_loopback: false,
            allowed_hosts: Vec::new(),
            default_timeout: Duration::from_secs(30),
            max_timeout: Duration::from_secs(120),
            default_max_bytes: 100_000,
            max_bytes_limit: 10 * 1024 * 1024,
            max_redirects: 10,
            resolver: Arc::new(SystemResolver),
            user_agent: concat!("goondan-http-fetch/", env!("CARGO_PKG_VERSION")).to_owned(),
        }
    }
}

impl HttpPolicy {
    /// Also allows loopback addresses (for a server on 127.0.0.1 in tests).
    #[must_use]
    pub fn allow_loopback(mut self) -> Self {
        self.allow_loopback = true;
        self
    }

    /// Exempts `host` from the address check.
    #[must_use]
    pub fn allow_host(mut self, host: impl Into<String>) -> Self {
        self.allowed_hosts.push(host.into().to_ascii_lowercase());
        self
    }

    /// Resolves names with `resolver`.
    #[must_use]
    pub fn resolver(mut self, resolver: impl Resolver) -> Self {
        self.resolver = Arc::new(resolver);
        self
    }
}

/// Input of `http-fetch__get`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct GetInput {
    /// An `http://` or `https://` URL.
    pub url: String,
    /// Request headers.
    #[serde(default)]
    pub headers: Option<BTreeMap<String, String>>,
    /// Milliseconds for the whole request, redirects included (default 30000).
    #[serde(default)]
    pub timeout_ms: Option<u64>,
    /// Body bytes kept, after decompression (default 100000).
    #[serde(default)]
    pub max_bytes: Option<u64>,
}

/// Input of `http-fetch__post`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PostInput {
    /// An `http://` or `https://` URL.
    pub url: String,
    /// A JSON body (sent as `application/json`).
    #[serde(default)]
    pub body: Option<serde_json::Value>,
    /// A text body (sent as `text/plain; charset=utf-8`). Not with `body`.
    #[serde(default)]
    pub body_string: Option<String>,
    /// Request headers.
    #[serde(default)]
    pub headers: Option<BTreeMap<String, String>>,
    /// Milliseconds for the whole request, redirects included (default 30000).
    #[serde(default)]
    pub timeout_ms: Option<u64>,
    /// Body bytes kept, after decompression (default 100000).
    #[serde(default)]
    pub max_bytes: Option<u64>,
}

/// A response. A non-2xx `status` is data, not an error.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FetchOutput {
    /// The final URL, after redirects.
    pub url: String,
    /// The HTTP status.
    pub status: u16,
    /// Response headers, lowercase names; repeated headers joined with `, `.
    pub headers: BTreeMap<String, String>,
    /// The body as text (lossy UTF-8), at most `maxBytes` bytes.
    pub body: String,
    /// Whether the body was cut.
    pub truncated: bool,
    /// Wall time.
    pub duration_ms: u64,
    /// Every URL redirected to, in order.
    pub redirects: Vec<String>,
}

/// The `http-fetch` tool (feature `http-tools`).
#[cfg(feature = "http-tools")]
#[derive(Debug, Clone, Default)]
pub struct HttpFetch {
    policy: Arc<HttpPolicy>,
}

#[cfg(feature = "http-tools")]
struct Outgoing {
    post: bool,
    url: String,
    headers: Option<BTreeMap<String, String>>,
    body: Option<(Bytes, &'static str)>,
    timeout_ms: Option<u64>,
    max_bytes: Option<u64>,
}

#[cfg(feature = "http-tools")]
impl HttpFetch {
    /// The resource name.
    pub const NAME: &'static str = "http-fetch";
    /// How many characters of an error message the model sees.
    pub const ERROR_MESSAGE_LIMIT: usize = 1000;
}

/// HTTP(S) requests to public internet addresses.
#[cfg(feature = "http-tools")]
#[tool(name = "http-fetch", error_message_limit = 1000)]
impl HttpFetch {
    /// An `http-fetch` with `policy`.
    pub fn new(policy: HttpPolicy) -> Self {
        Self {
            policy: Arc::new(policy),
        }
    }

    /// Send a GET request to an http(s) URL. A non-2xx status is returned as data.
    #[export(read_only, open_world)]
    pub async fn get(&self, ctx: &ToolContext, input: GetInput) -> Result<FetchOutput, ToolError> {
        self.fetch(
            ctx,
            Outgoing {
                post: false,
                url: input.url,
                headers: input.headers,
                body: None,
                timeout_ms: input.timeout_ms,
                max_bytes: input.max_bytes,
            },
        )
        .await
    }

    /// Send a POST request with a JSON `body` or a text `bodyString`. A non-2xx status is
    /// returned as data.
    #[export(open_world)]
    pub async fn post(
        &self,
        ctx: &ToolContext,
        input: PostInput,
    ) -> Result<FetchOutput, ToolError> {
        let body = match (input.body, input.body_string) {
            (Some(_), Some(_)) => {
                return Err(ToolError::new("`body` and `bodyString` were both given")
                    .with_code(codes::BODY_CONFLICT)
                    .with_name("BodyConflictError")
                    .with_suggestion("send JSON in `body` or text in `bodyString`, not both"));
            }
            (Some(json), None) => {
                Some((Bytes::from(serde_json::to_vec(&json)?), "application/json"))
            }
            (None, Some(text)) => Some((Bytes::from(text), "text/plain; charset=utf-8")),
            (None, None) => None,
        };
        self.fetch(
            ctx,
            Outgoing {
                post: true,
                url: input.url,
                headers: input.headers,
                body,
                timeout_ms: input.timeout_ms,
                max_bytes: input.max_bytes,
            },
        )
        .await
    }
}

#[cfg(feature = "http-tools")]
impl HttpFetch {
    async fn fetch(&self, ctx: &ToolContext, out: Outgoing) -> Result<FetchOutput, ToolError> {
        let timeout = out
            .timeout_ms
            .map_or(self.policy.default_timeout, Duration::from_millis)
            .min(self.policy.max_timeout);
        let started = Instant::now();
        tokio::select! {
            result = tokio::time::timeout(timeout, self.follow(out, started)) => {
                result.unwrap_or_else(|_| Err(ToolError::new(format!(
                    "the request took longer than {} ms", timeout.as_millis()))
                    .with_code(codes::TIMEOUT)
                    .with_name("TimeoutError")
                    .with_suggestion("retry with a larger `timeoutMs`, or check that the server answers")
                    .retryable()))
            }
            () = ctx.cancellation().cancelled() => Err(ToolError::new("the request was cancelled")
                .with_code(codes::CANCELLED)
                .with_name("CancelledError")
                .with_suggestion("send it again if it is still needed")),
        }
    }

    async fn follow(&self, out: Outgoing, started: Instant) -> Result<FetchOutput, ToolError> {
        let cap = out
            .max_bytes
            .unwrap_or(self.policy.default_max_bytes)
            .min(self.policy.max_bytes_limit);
        let cap = usize::try_from(cap).unwrap_or(usize::MAX);
        let mut headers = user_headers(out.headers.as_ref())?;
        let mut target = Target::parse(&out.url)?;
        let mut method = client::method(out.post);
        let mut body = out.body;
        let mut redirects = Vec::new();
        loop {
            let addrs = self.addresses(&target).await?;
            let request = build_request(&target, &method, &headers, body.as_ref(), &self.policy)?;
            let (response, _conn) = client::send(&target, &addrs, request).await?;
            let status = response.status().as_u16();
            let location = response
                .headers()
                .get(header::LOCATION)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned);
            if let (301 | 302 | 303 | 307 | 308, Some(location)) = (status, location) {
                if redirects.len() >= self.policy.max_redirects {
                    return Err(ToolError::new(format!(
                        "more than {} redirects; the last was to `{location}`",
                        self.policy.max_redirects
                    ))
                    .with_code(codes::TOO_MANY_REDIRECTS)
                    .with_name("TooManyRedirectsError")
                    .with_suggestion("fetch the final URL directly"));
                }
                let next = target.join(&location)?;
                if status == 303 || (matches!(status, 301 | 302) && method == Method::POST) {
                    method = Method::GET;
                    body = None;
                }
                if (next.https, &next.host, next.port) != (target.https, &target.host, target.port)
                {
                    // Credentials meant for one origin do not follow a redirect to another.
                    for name in [
                        header::AUTHORIZATION,
                        header::COOKIE,
                        header::PROXY_AUTHORIZATION,
                    ] {
                        headers.remove(name);
                    }
                }
                redirects.push(next.to_string());
                target = next;
                continue;
            }
            let (parts, incoming) = response.into_parts();
            let (mut bytes, truncated) = client::read_body(&parts.headers, incoming, cap).await?;
            if truncated
                && let Err(err) = std::str::from_utf8(&bytes)
                && err.error_len().is_none()
            {
                bytes.truncate(err.valid_up_to());
            }
            let mut response_headers: BTreeMap<String, String> = BTreeMap::new();
            for (name, value) in &parts.headers {
                let value = String::from_utf8_lossy(value.as_bytes()).into_owned();
                response_headers
                    .entry(name.as_str().to_owned())
                    .and_modify(|v| {
                        v.push_str(", ");
                        v.push_str(&value);
                    })
                    .or_insert(value);
            }
            return Ok(FetchOutput {
                url: target.to_string(),
                status,
                headers: response_headers,
                body: String::from_utf8_lossy(&bytes).into_owned(),
                truncated,
                duration_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
                redirects,
            });
        }
    }

    /// Resolves the target's host once and checks every address.
    async fn addresses(&self, target: &Target) -> Result<Vec<IpAddr>, ToolError> {
        checked_addresses(&self.policy, &target.host, &target.to_string()).await
    }
}

/// Resolves `host` once and checks every address against `policy` (loopback only when it
/// allows loopback; hosts it exempts pass whatever they resolve to). `shown` names what was
/// asked for in the error. The sandbox's proxy checks each connection with this too.
pub(crate) async fn checked_addresses(
    policy: &HttpPolicy,
    host: &Host,
    shown: &str,
) -> Result<Vec<IpAddr>, ToolError> {
    let exempt_name = match host {
        Host::Name(name) => name.clone(),
        Host::Ip(ip) => ip.to_string(),
    };
    let exempt = policy
        .allowed_hosts
        .iter()
        .any(|h| h.eq_ignore_ascii_case(&exempt_name));
    let addrs = match host {
        Host::Ip(ip) => vec![*ip],
        Host::Name(name) => policy.resolver.resolve(name).await.map_err(|err| {
            ToolError::new(format!("`{name}` does not resolve: {err}"))
                .with_code(codes::DNS)
                .with_name("DnsError")
                .with_suggestion("check the host name")
        })?,
    };
    if addrs.is_empty() {
        return Err(ToolError::new(format!("`{host}` has no address"))
            .with_code(codes::DNS)
            .with_name("DnsError")
            .with_suggestion("check the host name"));
    }
    if exempt {
        return Ok(addrs);
    }
    for ip in &addrs {
        let why = match classify(*ip) {
            Class::Public => continue,
            Class::Loopback if policy.allow_loopback => continue,
            Class::Loopback => "a loopback address",
            Class::Forbidden(why) => why,
        };
        return Err(ToolError::new(format!("`{shown}` is refused: {ip} is {why}"))
            .with_code(codes::FORBIDDEN_ADDRESS)
            .with_name("ForbiddenAddressError")
            .with_suggestion(
                "only public internet addresses can be fetched; private, loopback, link-local and metadata addresses are blocked",
            ));
    }
    Ok(addrs)
}

/// Headers a caller may not set: they frame the request, and the fetcher owns them.
#[cfg(feature = "http-tools")]
const RESERVED_HEADERS: &[&str] = &[
    "host",
    "content-length",
    "transfer-encoding",
    "connection",
    "keep-alive",
    "proxy-connection",
    "te",
    "trailer",
    "upgrade",
];

#[cfg(feature = "http-tools")]
fn header_error(why: String) -> ToolError {
    ToolError::new(why)
        .with_code(codes::HEADER)
        .with_name("InvalidHeaderError")
        .with_suggestion(format!(
            "use valid header names and values without line breaks; these are set by the tool: {}",
            RESERVED_HEADERS.join(", ")
        ))
}

#[cfg(feature = "http-tools")]
fn user_headers(headers: Option<&BTreeMap<String, String>>) -> Result<HeaderMap, ToolError> {
    let mut map = HeaderMap::new();
    for (name, value) in headers.into_iter().flatten() {
        let header_name = HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| header_error(format!("`{name}` is not a valid header name")))?;
        if RESERVED_HEADERS.contains(&header_name.as_str()) {
            return Err(header_error(format!("the `{name}` header cannot be set")));
        }
        let header_value = HeaderValue::from_str(value).map_err(|_| {
            header_error(format!("the value of `{name}` is not a valid header value"))
        })?;
        map.append(header_name, header_value);
    }
    Ok(map)
}

#[cfg(feature = "http-tools")]
fn build_request(
    target: &Target,
    method: &Method,
    user: &HeaderMap,
    body: Option<&(Bytes, &'static str)>,
    policy: &HttpPolicy,
) -> Result<Request<Full<Bytes>>, ToolError> {
    let mut builder = Request::builder()
        .method(method.clone())
        .uri(target.path.as_str())
        .header(header::HOST, target.authority())
        .header(header::CONNECTION, "close");
    let has = |name: &HeaderName| user.contains_key(name);
    if !has(&header::USER_AGENT) {
        builder = builder.header(header::USER_AGENT, policy.user_agent.as_str());
    }
    if !has(&header::ACCEPT_ENCODING) {
        builder = builder.header(header::ACCEPT_ENCODING, "gzip, deflate");
    }
    if let Some((_, content_type)) = body
        && !has(&header::CONTENT_TYPE)
    {
        builder = builder.header(header::CONTENT_TYPE, *content_type);
    }
    for (name, value) in user {
        builder = builder.header(name, value);
    }
    let bytes = body.map(|(b, _)| b.clone()).unwrap_or_default();
    builder
        .body(Full::new(bytes))
        .map_err(|e| header_error(format!("the request cannot be built: {e}")))
}
