//! One HTTP/1.1 exchange with an address that was already checked: connect (TCP, then TLS for
//! https with the URL's host name), send, and read the body up to a cap, decompressing gzip
//! and deflate as it streams so the cap applies to the decoded bytes. TLS is rustls with ring
//! and the Mozilla roots of `webpki-roots` (feature `tls`, on by default); without it https is
//! refused before any connection.

use std::io::Write;
use std::net::{IpAddr, SocketAddr};
#[cfg(feature = "tls")]
use std::sync::{Arc, OnceLock};

use bytes::Bytes;
use goondan_runtime::ToolError;
use http::{HeaderMap, Method, Request, Response};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;
use tokio::task::JoinHandle;
#[cfg(feature = "tls")]
use tokio_rustls::TlsConnector;
#[cfg(feature = "tls")]
use tokio_rustls::rustls::{self, pki_types::ServerName};

use super::codes;
#[cfg(feature = "tls")]
use super::target::Host;
use super::target::Target;

/// Aborts the connection task when the exchange is over.
pub(crate) struct Connection(JoinHandle<()>);

impl Drop for Connection {
    fn drop(&mut self) {
        self.0.abort();
    }
}

#[cfg(feature = "tls")]
fn tls_config() -> Result<Arc<rustls::ClientConfig>, ToolError> {
    static CONFIG: OnceLock<Result<Arc<rustls::ClientConfig>, String>> = OnceLock::new();
    CONFIG
        .get_or_init(|| {
            let mut roots = rustls::RootCertStore::empty();
            roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
            rustls::ClientConfig::builder_with_provider(Arc::new(
                rustls::crypto::ring::default_provider(),
            ))
            .with_safe_default_protocol_versions()
            .map(|b| Arc::new(b.with_root_certificates(roots).with_no_client_auth()))
            .map_err(|e| e.to_string())
        })
        .clone()
        .map_err(|e| connect_error(&format!("TLS cannot be set up: {e}")))
}

fn connect_error(why: &str) -> ToolError {
    ToolError::new(format!("the request failed: {why}"))
        .with_code(codes::CONNECT)
        .with_name("ConnectError")
        .with_suggestion("check the URL; the server may be down or refuse the connection")
        .retryable()
}

/// Without the `tls` feature: https is refused.
#[cfg(not(feature = "tls"))]
fn no_tls() -> ToolError {
    ToolError::new(
        "the scheme `https` is refused: this program was built without goondan-base's `tls` \
         feature, so only http is fetched",
    )
    .with_code(codes::SCHEME)
    .with_name("UnsupportedSchemeError")
    .with_suggestion("use an `http://` URL, or build with goondan-base's `tls` feature")
}

/// Connects to the first of `addrs` that answers and sends `request` there.
pub(crate) async fn send(
    target: &Target,
    addrs: &[IpAddr],
    request: Request<Full<Bytes>>,
) -> Result<(Response<Incoming>, Connection), ToolError> {
    #[cfg(not(feature = "tls"))]
    if target.https {
        return Err(no_tls());
    }
    let mut last_error = String::from("no address to connect to");
    for ip in addrs {
        let stream = match TcpStream::connect(SocketAddr::new(*ip, target.port)).await {
            Ok(stream) => stream,
            Err(err) => {
                last_error = format!("cannot connect to {ip}: {err}");
                continue;
            }
        };
        if !target.https {
            return exchange(stream, request).await;
        }
        #[cfg(feature = "tls")]
        {
            let name = match &target.host {
                Host::Name(name) => ServerName::try_from(name.clone()).map_err(|e| {
                    connect_error(&format!("`{name}` is not a TLS server name: {e}"))
                })?,
                Host::Ip(ip) => ServerName::IpAddress((*ip).into()),
            };
            let tls = TlsConnector::from(tls_config()?)
                .connect(name, stream)
                .await
                .map_err(|e| connect_error(&format!("TLS handshake with {ip} failed: {e}")))?;
            return exchange(tls, request).await;
        }
    }
    Err(connect_error(&last_error))
}

async fn exchange<S>(
    stream: S,
    request: Request<Full<Bytes>>,
) -> Result<(Response<Incoming>, Connection), ToolError>
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .map_err(|e| connect_error(&e.to_string()))?;
    let conn = Connection(tokio::spawn(async move {
        let _ = conn.await;
    }));
    let response = sender
        .send_request(request)
        .await
        .map_err(|e| connect_error(&e.to_string()))?;
    Ok((response, conn))
}

/// A writer that keeps at most `cap` bytes and notes whether more came.
struct Capped {
    buf: Vec<u8>,
    cap: usize,
    overflow: bool,
}

impl Write for Capped {
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        let room = self.cap.saturating_sub(self.buf.len());
        if data.len() > room {
            self.overflow = true;
        }
        self.buf
            .extend_from_slice(data.get(..room.min(data.len())).unwrap_or_default());
        Ok(data.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

enum Sink {
    Plain(Capped),
    Gzip(flate2::write::GzDecoder<Capped>),
    Deflate(flate2::write::ZlibDecoder<Capped>),
}

impl Sink {
    fn new(headers: &HeaderMap, cap: usize) -> Self {
        let capped = Capped {
            buf: Vec::new(),
            cap,
            overflow: false,
        };
        let encoding = headers
            .get(http::header::CONTENT_ENCODING)
            .and_then(|v| v.to_str().ok())
            .map(|v| v.trim().to_ascii_lowercase());
        match encoding.as_deref() {
            Some("gzip" | "x-gzip") => Sink::Gzip(flate2::write::GzDecoder::new(capped)),
            Some("deflate") => Sink::Deflate(flate2::write::ZlibDecoder::new(capped)),
            _ => Sink::Plain(capped),
        }
    }

    fn write(&mut self, data: &[u8]) -> std::io::Result<()> {
        match self {
            Sink::Plain(w) => w.write_all(data),
            Sink::Gzip(w) => w.write_all(data),
            Sink::Deflate(w) => w.write_all(data),
        }
    }

    fn capped(&self) -> &Capped {
        match self {
            Sink::Plain(w) => w,
            Sink::Gzip(w) => w.get_ref(),
            Sink::Deflate(w) => w.get_ref(),
        }
    }

    fn finish(self) -> std::io::Result<Capped> {
        match self {
            Sink::Plain(w) => Ok(w),
            Sink::Gzip(w) => w.finish(),
            Sink::Deflate(w) => w.finish(),
        }
    }
}

/// Reads `body` (decoded) up to `cap` bytes; `true` when more was there.
pub(crate) async fn read_body(
    headers: &HeaderMap,
    mut body: Incoming,
    cap: usize,
) -> Result<(Vec<u8>, bool), ToolError> {
    let body_error = |why: String| {
        ToolError::new(format!("the response body could not be read: {why}"))
            .with_code(codes::BODY)
            .with_name("ResponseBodyError")
            .with_suggestion("retry; if it persists the server sends a broken body")
    };
    let mut sink = Sink::new(headers, cap);
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|e| body_error(e.to_string()))?;
        let Ok(data) = frame.into_data() else {
            continue;
        };
        sink.write(&data).map_err(|e| body_error(e.to_string()))?;
        if sink.capped().overflow {
            // Stop reading: the rest is never downloaded.
            let capped = match sink {
                Sink::Plain(w) => w,
                Sink::Gzip(w) => w.get_ref().clone_capped(),
                Sink::Deflate(w) => w.get_ref().clone_capped(),
            };
            return Ok((capped.buf, true));
        }
    }
    let capped = sink.finish().map_err(|e| body_error(e.to_string()))?;
    Ok((capped.buf, capped.overflow))
}

impl Capped {
    fn clone_capped(&self) -> Capped {
        Capped {
            buf: self.buf.clone(),
            cap: self.cap,
            overflow: self.overflow,
        }
    }
}

/// The method of a request.
pub(crate) fn method(post: bool) -> Method {
    if post { Method::POST } else { Method::GET }
}
