//! A replay server on 127.0.0.1: answers each request with the next scripted [`Reply`]
//! (status, headers, a delay, and a body sent in pieces) and records what it was sent.
#![allow(dead_code, unreachable_pub)]

use std::collections::VecDeque;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use futures_util::StreamExt;
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, StreamBody};
use hyper::body::{Frame, Incoming};
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use serde_json::Value;

/// One scripted answer.
#[derive(Debug, Clone)]
pub struct Reply {
    /// The HTTP status.
    pub status: u16,
    /// The response headers, in order.
    pub headers: Vec<(String, String)>,
    /// Before the head is sent.
    pub delay: Duration,
    /// The body's pieces, each sent after its pause.
    pub pieces: Vec<(Duration, Vec<u8>)>,
}

impl Reply {
    /// A JSON answer.
    pub fn json(status: u16, body: &Value) -> Self {
        Self {
            status,
            headers: vec![("content-type".into(), "application/json".into())],
            delay: Duration::ZERO,
            pieces: vec![(Duration::ZERO, body.to_string().into_bytes())],
        }
    }

    /// A server-sent event stream, one piece per event (each piece `event:`/`data:` lines).
    pub fn sse(events: &[String]) -> Self {
        Self {
            status: 200,
            headers: vec![("content-type".into(), "text/event-stream".into())],
            delay: Duration::ZERO,
            pieces: events
                .iter()
                .map(|e| (Duration::from_millis(2), format!("{e}\n\n").into_bytes()))
                .collect(),
        }
    }

    /// The same body cut into pieces of `n` bytes (across event and UTF-8 boundaries alike).
    pub fn split_every(mut self, n: usize) -> Self {
        let whole: Vec<u8> = self.pieces.iter().flat_map(|(_, p)| p.clone()).collect();
        self.pieces = whole
            .chunks(n)
            .map(|c| (Duration::from_millis(1), c.to_vec()))
            .collect();
        self
    }

    /// With one more response header.
    pub fn header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// Sent after waiting `d`.
    pub fn delay(mut self, d: Duration) -> Self {
        self.delay = d;
        self
    }
}

/// `data: {json}`.
pub fn data(v: &Value) -> String {
    format!("data: {v}")
}

/// `event: name` then `data: {json}`.
pub fn named(name: &str, v: &Value) -> String {
    format!("event: {name}\ndata: {v}")
}

/// What the server was sent.
#[derive(Debug, Clone)]
pub struct Recorded {
    /// The request's path and query.
    pub path: String,
    /// Its headers, names in lower case.
    pub headers: Vec<(String, String)>,
    /// Its body as JSON (`null` when it was not JSON).
    pub body: Value,
}

impl Recorded {
    /// The value of header `name` (lower case), if it was sent.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

/// The server.
pub struct ReplayServer {
    /// Where it listens.
    pub addr: SocketAddr,
    replies: Arc<Mutex<VecDeque<Reply>>>,
    seen: Arc<Mutex<Vec<Recorded>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for ReplayServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl ReplayServer {
    /// Listens on a free port of 127.0.0.1 and answers with `replies`, in order.
    pub async fn start(replies: impl IntoIterator<Item = Reply>) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let replies = Arc::new(Mutex::new(replies.into_iter().collect::<VecDeque<_>>()));
        let seen = Arc::new(Mutex::new(Vec::new()));
        let (r, s) = (Arc::clone(&replies), Arc::clone(&seen));
        let task = tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    return;
                };
                let (r, s) = (Arc::clone(&r), Arc::clone(&s));
                tokio::spawn(async move {
                    let service =
                        service_fn(move |req| answer(req, Arc::clone(&r), Arc::clone(&s)));
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                });
            }
        });
        Self {
            addr,
            replies,
            seen,
            task,
        }
    }

    /// `http://127.0.0.1:port` followed by `path`.
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// Every request received so far, in order.
    pub fn requests(&self) -> Vec<Recorded> {
        self.seen.lock().unwrap().clone()
    }

    /// How many replies are still to be sent.
    pub fn left(&self) -> usize {
        self.replies.lock().unwrap().len()
    }

    /// Waits until `n` requests were received; panics, saying how many came, after 30 s.
    pub async fn wait_for_requests(&self, n: usize) {
        let start = std::time::Instant::now();
        while !self.received(n, start) {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// [`wait_for_requests`](Self::wait_for_requests) for a thread outside the runtime.
    pub fn wait_for_requests_blocking(&self, n: usize) {
        let start = std::time::Instant::now();
        while !self.received(n, start) {
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn received(&self, n: usize, start: std::time::Instant) -> bool {
        let got = self.seen.lock().unwrap().len();
        assert!(
            got >= n || start.elapsed() < Duration::from_secs(30),
            "the replay server was sent {got} requests, not {n}"
        );
        got >= n
    }
}

async fn answer(
    req: Request<Incoming>,
    replies: Arc<Mutex<VecDeque<Reply>>>,
    seen: Arc<Mutex<Vec<Recorded>>>,
) -> Result<Response<BoxBody<Bytes, Infallible>>, Infallible> {
    let path = req
        .uri()
        .path_and_query()
        .map(|p| p.as_str().to_owned())
        .unwrap_or_default();
    let headers = req
        .headers()
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_str().unwrap_or_default().to_owned()))
        .collect();
    let bytes = req.into_body().collect().await.unwrap().to_bytes();
    let body = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    seen.lock().unwrap().push(Recorded {
        path,
        headers,
        body,
    });
    let reply = replies.lock().unwrap().pop_front().unwrap_or_else(|| {
        Reply::json(
            418,
            &serde_json::json!({"error": {"message": "the replay server has no reply left"}}),
        )
    });
    tokio::time::sleep(reply.delay).await;
    let pieces = futures_util::stream::iter(reply.pieces).then(|(pause, piece)| async move {
        tokio::time::sleep(pause).await;
        Ok::<_, Infallible>(Frame::data(Bytes::from(piece)))
    });
    let mut response = Response::builder().status(reply.status);
    for (k, v) in &reply.headers {
        response = response.header(k, v);
    }
    Ok(response
        .body(BodyExt::boxed(StreamBody::new(pieces)))
        .unwrap())
}
