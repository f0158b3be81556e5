//! The sandbox's one way out: an HTTP proxy of the host's, one per call, that checks every
//! connection as `http-fetch` checks a URL.
//!
//! A sandboxed process has a network namespace of its own with nothing but loopback. When the
//! policy has a network allow-list, the sandbox listens on a port of its loopback and hands the
//! listening socket over to this proxy (a sandbox of its own: the helper's outer stage, on
//! `127.0.0.1:3128`, before it starts the command, over a Unix socket, [`Proxy::start`]; a warm
//! sandbox's call: the first process, on a port of its choosing, with its answer that the
//! command started, [`Proxy::serve`]), and the command gets `http_proxy`, `https_proxy` and
//! `all_proxy` naming it. The proxy accepts the
//! sandbox's connections on that socket, so nothing runs inside to forward them, and every
//! connection out is made by the host, from the host's namespace, after these checks:
//!
//! - only `CONNECT host:port` (HTTPS, and any protocol a client tunnels) and plain HTTP
//!   requests in absolute form (`GET http://host/path`) are served;
//! - the host must be a name on the allow-list ([`SandboxPolicy::allow_host`]); an IP address
//!   never is;
//! - the name is resolved once and every address must pass `http-fetch`'s rules
//!   ([`SandboxPolicy::address_rules`]: no loopback, private, link-local or metadata address);
//!   the connection goes to a checked address, with no second lookup to rebind;
//! - a plain HTTP request is sent on with `Connection: close`, so the next one, to whatever
//!   host, comes back through the checks.
//!
//! A refusal is answered `403 Forbidden` with the reason in the body, and kept for the call's
//! result ([`Proxy::refused`]). What the proxy does not look at: the bytes inside a tunnel, so
//! a TLS client's SNI, or a plain request's `Host` header, may name another host than the one
//! allowed; those bytes still go only to the checked address.

use std::io;
use std::mem::MaybeUninit;
use std::net::Ipv4Addr;
use std::os::fd::{AsFd, OwnedFd};
use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream, UnixListener};
use tokio::sync::Semaphore;
use tokio::task::{JoinHandle, JoinSet};

use super::policy::SandboxPolicy;
use crate::http_fetch::{Host, Target, checked_addresses};

/// The port the proxy of a sandbox of its own listens on inside (on its own loopback).
pub(crate) const PORT: u16 = 3128;
/// The largest request head read (request line and headers).
const HEAD_LIMIT: usize = 16 * 1024;
/// Connections served at once; more wait to be accepted.
const MAX_CONNECTIONS: usize = 64;
/// How long a client may take to send its request head.
const HEAD_TIMEOUT: Duration = Duration::from_secs(30);
/// How long a connection to an upstream address may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Refusals kept for the call's result.
const REFUSALS_KEPT: usize = 16;
/// The environment variables that point a sandboxed process's clients at the proxy.
pub(crate) const PROXY_VARS: &[&str] = &[
    "http_proxy",
    "https_proxy",
    "all_proxy",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "ALL_PROXY",
];
/// The environment variables that would exempt hosts from the proxy (none is kept).
pub(crate) const NO_PROXY_VARS: &[&str] = &["no_proxy", "NO_PROXY"];

/// The address of a proxy listening on `port` of the sandbox's loopback, as the sandboxed
/// process's environment names it.
pub(crate) fn url(port: u16) -> String {
    format!("http://{}:{port}", Ipv4Addr::LOCALHOST)
}

/// The proxy of one call: it stops, and every connection through it ends, when dropped.
#[derive(Debug)]
pub(crate) struct Proxy {
    task: JoinHandle<()>,
    refused: Arc<Mutex<Vec<String>>>,
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Proxy {
    /// Listens on the Unix socket `socket` for the helper's listening socket, then serves the
    /// sandbox's connections under `policy`. Needs a Tokio runtime.
    pub(crate) fn start(socket: &Path, policy: &SandboxPolicy) -> Result<Self, String> {
        let runtime = tokio::runtime::Handle::try_current()
            .map_err(|_| "the network proxy needs a Tokio runtime".to_owned())?;
        let handover = std::os::unix::net::UnixListener::bind(socket)
            .and_then(|listener| {
                listener.set_nonblocking(true)?;
                Ok(listener)
            })
            .map_err(|e| format!("the network proxy's socket {}: {e}", socket.display()))?;
        let policy = Arc::new(policy.clone());
        let refused = Arc::new(Mutex::new(Vec::new()));
        let kept = Arc::clone(&refused);
        let task = runtime.spawn(async move {
            let listener = match UnixListener::from_std(handover) {
                Ok(handover) => receive(&handover).await,
                Err(e) => Err(e),
            };
            match listener.and_then(|listener| loopback_listener(listener, Some(PORT))) {
                Ok(listener) => serve_all(listener, policy, kept).await,
                Err(e) => tracing::warn!("sandbox proxy: no listening socket from the helper: {e}"),
            }
        });
        Ok(Self { task, refused })
    }

    /// Serves the sandbox's connections on `listener`, a socket listening on the sandbox's
    /// loopback that the sandbox made for one call (see the `spawner` module), under `policy`.
    /// Needs a Tokio runtime.
    pub(crate) fn serve(
        listener: std::net::TcpListener,
        policy: &SandboxPolicy,
    ) -> Result<Self, String> {
        let runtime = tokio::runtime::Handle::try_current()
            .map_err(|_| "the network proxy needs a Tokio runtime".to_owned())?;
        let listener = {
            let _entered = runtime.enter();
            loopback_listener(listener, None)
                .map_err(|e| format!("the call's network proxy: {e}"))?
        };
        let policy = Arc::new(policy.clone());
        let refused = Arc::new(Mutex::new(Vec::new()));
        let task = runtime.spawn(serve_all(listener, policy, Arc::clone(&refused)));
        Ok(Self { task, refused })
    }

    /// What the proxy refused during the call (at most the first 16), each a sentence.
    pub(crate) fn refused(&self) -> Vec<String> {
        self.refused
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

/// Accepts the helper's one connection and receives the listening socket it sends.
async fn receive(handover: &UnixListener) -> io::Result<std::net::TcpListener> {
    let (stream, _) = handover.accept().await?;
    let fd = loop {
        stream.readable().await?;
        match stream.try_io(tokio::io::Interest::READABLE, || receive_fd(&stream)) {
            Ok(fd) => break fd,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
            Err(e) => return Err(e),
        }
    };
    Ok(std::net::TcpListener::from(fd))
}

/// `listener` to serve, when it is a socket listening on `127.0.0.1` (on `port`, when given):
/// only the sandbox's loopback listener is served, whatever was sent.
fn loopback_listener(
    listener: std::net::TcpListener,
    port: Option<u16>,
) -> io::Result<TcpListener> {
    let local = listener.local_addr()?;
    if local.ip() != Ipv4Addr::LOCALHOST || port.is_some_and(|port| local.port() != port) {
        return Err(io::Error::other(
            "the socket sent is not the sandbox's listener",
        ));
    }
    listener.set_nonblocking(true)?;
    TcpListener::from_std(listener)
}

/// One file descriptor passed with `SCM_RIGHTS`.
fn receive_fd(stream: &impl AsFd) -> io::Result<OwnedFd> {
    use rustix::net::{RecvAncillaryBuffer, RecvAncillaryMessage, RecvFlags, recvmsg};
    let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(1))];
    let mut control = RecvAncillaryBuffer::new(&mut space);
    let mut byte = [0u8; 1];
    recvmsg(
        stream,
        &mut [io::IoSliceMut::new(&mut byte)],
        &mut control,
        RecvFlags::CMSG_CLOEXEC,
    )?;
    let mut received = None;
    for message in control.drain() {
        if let RecvAncillaryMessage::ScmRights(fds) = message {
            // Any further descriptor is closed when dropped.
            for fd in fds {
                received.get_or_insert(fd);
            }
        }
    }
    received.ok_or_else(|| io::Error::other("no socket was handed over"))
}

/// Serves the sandbox's connections until the proxy is dropped.
async fn serve_all(
    listener: TcpListener,
    policy: Arc<SandboxPolicy>,
    refused: Arc<Mutex<Vec<String>>>,
) {
    let slots = Arc::new(Semaphore::new(MAX_CONNECTIONS));
    // Dropped with the task: every connection ends with the call.
    let mut connections = JoinSet::new();
    loop {
        let Ok(slot) = Arc::clone(&slots).acquire_owned().await else {
            return;
        };
        let Ok((client, _)) = listener.accept().await else {
            return;
        };
        let (policy, refused) = (Arc::clone(&policy), Arc::clone(&refused));
        connections.spawn(async move {
            serve(client, &policy, &refused).await;
            drop(slot);
        });
        while connections.try_join_next().is_some() {}
    }
}

/// Why a request is not sent on: the status and the sentence the client gets.
struct Refusal {
    status: &'static str,
    why: String,
}

impl Refusal {
    fn forbidden(why: String) -> Self {
        Self {
            status: "403 Forbidden",
            why,
        }
    }

    fn bad(why: impl Into<String>) -> Self {
        Self {
            status: "400 Bad Request",
            why: why.into(),
        }
    }
}

/// Serves one connection: reads the request head, checks it, connects, and relays.
async fn serve(mut client: TcpStream, policy: &SandboxPolicy, refused: &Mutex<Vec<String>>) {
    let Ok(Ok((head, rest))) = tokio::time::timeout(HEAD_TIMEOUT, read_head(&mut client)).await
    else {
        return;
    };
    let opened = match head {
        Some(head) => open(&head, policy).await,
        None => Err(Refusal {
            status: "431 Request Header Fields Too Large",
            why: format!("the request head is longer than {HEAD_LIMIT} bytes"),
        }),
    };
    let (mut upstream, first) = match opened {
        Ok(opened) => opened,
        Err(refusal) => {
            tracing::info!("sandbox proxy refused: {}", refusal.why);
            {
                let mut kept = refused.lock().unwrap_or_else(PoisonError::into_inner);
                if kept.len() < REFUSALS_KEPT {
                    kept.push(refusal.why.clone());
                }
            }
            let body = format!("goondan sandbox: {}\n", refusal.why);
            let response = format!(
                "HTTP/1.1 {}\r\ncontent-type: text/plain; charset=utf-8\r\ncontent-length: {}\r\n\
                 connection: close\r\n\r\n{body}",
                refusal.status,
                body.len()
            );
            let _ = client.write_all(response.as_bytes()).await;
            return;
        }
    };
    let sent = match first {
        // A tunnel: the client learns it is open, and what it sent early goes on.
        Sent::Tunnel => client
            .write_all(b"HTTP/1.1 200 Connection Established\r\n\r\n")
            .await
            .and(upstream.write_all(&rest).await),
        Sent::Request(head) => upstream
            .write_all(&head)
            .await
            .and(upstream.write_all(&rest).await),
    };
    if sent.is_ok() {
        let _ = tokio::io::copy_bidirectional(&mut client, &mut upstream).await;
    }
}

/// What goes to the upstream first.
enum Sent {
    /// Nothing: the client's bytes follow the `200` answer.
    Tunnel,
    /// The request head rewritten to origin form.
    Request(Vec<u8>),
}

/// Reads up to the end of the request head: the head (`None` when longer than
/// [`HEAD_LIMIT`]) and what came after it.
async fn read_head(client: &mut TcpStream) -> io::Result<(Option<Vec<u8>>, Vec<u8>)> {
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0u8; 4096];
    loop {
        let n = client.read(&mut chunk).await?;
        if n == 0 {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let rest = buf.split_off(end + 4);
            return Ok((Some(buf), rest));
        }
        if buf.len() > HEAD_LIMIT {
            return Ok((None, Vec::new()));
        }
    }
}

/// Checks a request and connects to its checked address.
async fn open(head: &[u8], policy: &SandboxPolicy) -> Result<(TcpStream, Sent), Refusal> {
    let mut headers = [httparse::EMPTY_HEADER; 64];
    let mut request = httparse::Request::new(&mut headers);
    match request.parse(head) {
        Ok(httparse::Status::Complete(_)) => {}
        Ok(httparse::Status::Partial) | Err(_) => {
            return Err(Refusal::bad("the request is not HTTP/1.x"));
        }
    }
    let (Some(method), Some(uri)) = (request.method, request.path) else {
        return Err(Refusal::bad("the request line is incomplete"));
    };
    let shown: String = uri.chars().take(256).collect();
    let (target, sent) = if method.eq_ignore_ascii_case("CONNECT") {
        let port_given = uri
            .rsplit_once(':')
            .is_some_and(|(_, port)| !port.is_empty() && port.bytes().all(|b| b.is_ascii_digit()));
        if !port_given || uri.contains(['/', '@', '?', '#']) {
            return Err(Refusal::bad(format!(
                "CONNECT needs `host:port`, not `{shown}`"
            )));
        }
        let target = Target::parse(&format!("https://{uri}/"))
            .map_err(|e| Refusal::bad(format!("`{shown}`: {}", e.message())))?;
        (target, Sent::Tunnel)
    } else {
        let lower = uri.get(..7).map(str::to_ascii_lowercase);
        if lower.as_deref() != Some("http://") {
            return Err(Refusal::bad(format!(
                "the sandbox's proxy serves CONNECT and `http://` URLs, not `{shown}`"
            )));
        }
        let target =
            Target::parse(uri).map_err(|e| Refusal::bad(format!("`{shown}`: {}", e.message())))?;
        let head = origin_form(method, &target.path, request.version, request.headers);
        (target, Sent::Request(head))
    };
    let name = match &target.host {
        Host::Name(name) => name,
        Host::Ip(ip) => {
            return Err(Refusal::forbidden(format!(
                "`{shown}` names an address ({ip}); the sandbox's network allows host names only"
            )));
        }
    };
    if !policy.allows_host(name) {
        let allowed: Vec<String> = policy.allowed_hosts().collect();
        return Err(Refusal::forbidden(format!(
            "`{name}` is not in the sandbox's network allow-list ({})",
            allowed.join(", ")
        )));
    }
    let authority = format!("{name}:{}", target.port);
    let addresses = checked_addresses(&policy.addresses(), &target.host, &authority)
        .await
        .map_err(|e| Refusal::forbidden(e.message().to_owned()))?;
    let mut last = None;
    for ip in addresses {
        match tokio::time::timeout(CONNECT_TIMEOUT, TcpStream::connect((ip, target.port))).await {
            Ok(Ok(upstream)) => return Ok((upstream, sent)),
            Ok(Err(e)) => last = Some(format!("{ip}: {e}")),
            Err(_) => last = Some(format!("{ip}: no answer within {CONNECT_TIMEOUT:?}")),
        }
    }
    Err(Refusal {
        status: "502 Bad Gateway",
        why: format!(
            "cannot connect to `{authority}` ({})",
            last.unwrap_or_else(|| "no address".to_owned())
        ),
    })
}

/// A plain request's head for the origin server: the path instead of the URL, the proxy's
/// own headers and the client's `connection` dropped, and `connection: close`.
fn origin_form(
    method: &str,
    path: &str,
    version: Option<u8>,
    headers: &[httparse::Header<'_>],
) -> Vec<u8> {
    let mut head = format!("{method} {path} HTTP/1.{}\r\n", version.unwrap_or(1)).into_bytes();
    for header in headers {
        let name = header.name;
        let dropped = [
            "connection",
            "proxy-connection",
            "proxy-authorization",
            "keep-alive",
        ]
        .iter()
        .any(|d| name.eq_ignore_ascii_case(d));
        if !dropped {
            head.extend_from_slice(name.as_bytes());
            head.extend_from_slice(b": ");
            head.extend_from_slice(header.value);
            head.extend_from_slice(b"\r\n");
        }
    }
    head.extend_from_slice(b"connection: close\r\n\r\n");
    head
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sbx_proxy_rewrites_a_plain_request_to_origin_form() {
        let raw = b"GET http://a.test/x?y=1 HTTP/1.1\r\nHost: a.test\r\nProxy-Connection: keep-alive\r\nProxy-Authorization: Basic x\r\nConnection: keep-alive\r\nAccept: */*\r\n\r\n";
        let mut headers = [httparse::EMPTY_HEADER; 16];
        let mut request = httparse::Request::new(&mut headers);
        assert!(request.parse(raw).unwrap().is_complete());
        let head = origin_form("GET", "/x?y=1", request.version, request.headers);
        assert_eq!(
            String::from_utf8(head).unwrap(),
            "GET /x?y=1 HTTP/1.1\r\nHost: a.test\r\nAccept: */*\r\nconnection: close\r\n\r\n"
        );
    }
}
