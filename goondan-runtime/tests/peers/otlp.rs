//! An OTLP/HTTP receiver on 127.0.0.1: takes `POST /v1/traces` and `POST /v1/metrics` bodies in
//! protobuf, decodes them with opentelemetry-proto's messages and keeps the spans and metric
//! points, flattened. [`OtlpReceiver::start_hanging`] takes requests and never answers: an
//! endpoint that is slow.
#![allow(dead_code, unreachable_pub)]

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsServiceRequest;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::{AnyValue, KeyValue, any_value};
use opentelemetry_proto::tonic::metrics::v1::metric::Data;
use prost::Message;
use serde_json::Value;

/// One span as received.
#[derive(Debug, Clone)]
pub struct Span {
    /// The trace id, 32 hex digits.
    pub trace_id: String,
    /// The span id, 16 hex digits.
    pub span_id: String,
    /// The parent's span id, empty for a root.
    pub parent_span_id: String,
    /// The span's name.
    pub name: String,
    /// OTLP's span kind: 1 internal, 2 server, 3 client.
    pub kind: i32,
    /// OTLP's status code: 0 unset, 1 ok, 2 error.
    pub status: i32,
    /// The span's attributes.
    pub attributes: BTreeMap<String, Value>,
    /// The attributes of the resource (the process) that sent it.
    pub resource: BTreeMap<String, Value>,
}

impl Span {
    /// The attribute `key` as text.
    pub fn attr(&self, key: &str) -> Option<&str> {
        self.attributes.get(key).and_then(Value::as_str)
    }
}

/// One point of a metric as received.
#[derive(Debug, Clone)]
pub struct Point {
    /// The metric's name.
    pub name: String,
    /// Its unit.
    pub unit: String,
    /// The point's attributes.
    pub attributes: BTreeMap<String, Value>,
    /// How many measurements it holds (a histogram's count; 1 otherwise).
    pub count: u64,
}

#[derive(Default)]
struct Received {
    spans: Vec<Span>,
    points: Vec<Point>,
    requests: usize,
}

/// The receiver; stops when dropped.
pub struct OtlpReceiver {
    addr: SocketAddr,
    received: Arc<Mutex<Received>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for OtlpReceiver {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl OtlpReceiver {
    /// A receiver that answers every export with success.
    pub async fn start() -> Self {
        Self::serve(false).await
    }

    /// A receiver that reads every request and never answers.
    pub async fn start_hanging() -> Self {
        Self::serve(true).await
    }

    async fn serve(hang: bool) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let received = Arc::new(Mutex::new(Received::default()));
        let r = Arc::clone(&received);
        let task = tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    return;
                };
                let r = Arc::clone(&r);
                tokio::spawn(async move {
                    let service = service_fn(move |req| take(req, Arc::clone(&r), hang));
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                });
            }
        });
        Self {
            addr,
            received,
            task,
        }
    }

    /// `http://127.0.0.1:port`: the value of `OTEL_EXPORTER_OTLP_ENDPOINT`.
    pub fn endpoint(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The spans received so far.
    pub fn spans(&self) -> Vec<Span> {
        self.received.lock().unwrap().spans.clone()
    }

    /// The metric points received so far.
    pub fn points(&self) -> Vec<Point> {
        self.received.lock().unwrap().points.clone()
    }

    /// How many export requests came.
    pub fn requests(&self) -> usize {
        self.received.lock().unwrap().requests
    }

    /// Waits until what was received satisfies `done`; panics with what came after `within`.
    pub async fn wait_until(
        &self,
        within: Duration,
        done: impl Fn(&[Span], &[Point]) -> bool,
    ) -> (Vec<Span>, Vec<Point>) {
        let deadline = tokio::time::Instant::now() + within;
        loop {
            let (spans, points) = (self.spans(), self.points());
            if done(&spans, &points) {
                return (spans, points);
            }
            if tokio::time::Instant::now() >= deadline {
                let names: Vec<_> = spans.iter().map(|s| s.name.as_str()).collect();
                let metrics: Vec<_> = points.iter().map(|p| p.name.as_str()).collect();
                panic!(
                    "the OTLP receiver did not get what was expected: spans {names:?}, metrics {metrics:?}"
                );
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

async fn take(
    req: Request<Incoming>,
    received: Arc<Mutex<Received>>,
    hang: bool,
) -> Result<Response<Full<Bytes>>, Infallible> {
    let path = req.uri().path().to_owned();
    let body = req
        .into_body()
        .collect()
        .await
        .map(|b| b.to_bytes())
        .unwrap_or_default();
    received.lock().unwrap().requests += 1;
    if hang {
        std::future::pending::<()>().await;
    }
    let decoded = match path.as_str() {
        "/v1/traces" => ExportTraceServiceRequest::decode(body)
            .map(|r| received.lock().unwrap().spans.extend(spans(r)))
            .is_ok(),
        "/v1/metrics" => ExportMetricsServiceRequest::decode(body)
            .map(|r| received.lock().unwrap().points.extend(points(r)))
            .is_ok(),
        _ => false,
    };
    let status = if decoded { 200 } else { 400 };
    Ok(Response::builder()
        .status(status)
        .header("content-type", "application/x-protobuf")
        .body(Full::new(Bytes::new()))
        .unwrap())
}

fn spans(request: ExportTraceServiceRequest) -> Vec<Span> {
    let mut out = Vec::new();
    for rs in request.resource_spans {
        let resource = rs
            .resource
            .map(|r| attributes(r.attributes))
            .unwrap_or_default();
        for ss in rs.scope_spans {
            for s in ss.spans {
                out.push(Span {
                    trace_id: hex(&s.trace_id),
                    span_id: hex(&s.span_id),
                    parent_span_id: hex(&s.parent_span_id),
                    name: s.name,
                    kind: s.kind,
                    status: s.status.map_or(0, |st| st.code),
                    attributes: attributes(s.attributes),
                    resource: resource.clone(),
                });
            }
        }
    }
    out
}

fn points(request: ExportMetricsServiceRequest) -> Vec<Point> {
    let mut out = Vec::new();
    for rm in request.resource_metrics {
        for sm in rm.scope_metrics {
            for m in sm.metrics {
                let point = |attrs: Vec<KeyValue>, count: u64| Point {
                    name: m.name.clone(),
                    unit: m.unit.clone(),
                    attributes: attributes(attrs),
                    count,
                };
                match m.data.clone() {
                    Some(Data::Histogram(h)) => out.extend(
                        h.data_points
                            .into_iter()
                            .map(|p| point(p.attributes, p.count)),
                    ),
                    Some(Data::Sum(s)) => {
                        out.extend(s.data_points.into_iter().map(|p| point(p.attributes, 1)));
                    }
                    Some(Data::Gauge(g)) => {
                        out.extend(g.data_points.into_iter().map(|p| point(p.attributes, 1)));
                    }
                    _ => out.push(point(Vec::new(), 0)),
                }
            }
        }
    }
    out
}

fn attributes(kvs: Vec<KeyValue>) -> BTreeMap<String, Value> {
    kvs.into_iter()
        .map(|kv| (kv.key, kv.value.map_or(Value::Null, any)))
        .collect()
}

fn any(v: AnyValue) -> Value {
    match v.value {
        Some(any_value::Value::StringValue(s)) => Value::String(s),
        Some(any_value::Value::BoolValue(b)) => Value::Bool(b),
        Some(any_value::Value::IntValue(i)) => Value::from(i),
        Some(any_value::Value::DoubleValue(d)) => Value::from(d),
        Some(any_value::Value::ArrayValue(a)) => {
            Value::Array(a.values.into_iter().map(any).collect())
        }
        _ => Value::Null,
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
