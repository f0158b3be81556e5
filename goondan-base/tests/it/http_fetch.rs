//! `http-fetch`: SSRF refusals, and a real server on 127.0.0.1, through the executor (BASE-3).
//!
//! Every refused URL is refused before any connection; the only address ever connected to is
//! 127.0.0.1.

use std::convert::Infallible;
use std::fmt;
use std::io::Write;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use bytes::Bytes;
use goondan_base::http_fetch::{ResolveFuture, Resolver, StaticResolver};
use goondan_base::{HttpFetch, HttpPolicy};
use goondan_runtime::testing::{ResultAssertions, TestKit};
use goondan_runtime::{IntoTool, ToolContext};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};

const LOCAL: IpAddr = IpAddr::V4(Ipv4Addr::LOCALHOST);

fn gzip(data: &[u8]) -> Vec<u8> {
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    enc.write_all(data).unwrap();
    enc.finish().unwrap()
}

async fn route(req: Request<Incoming>) -> Result<Response<Full<Bytes>>, Infallible> {
    let path = req.uri().path().to_owned();
    let query = req.uri().query().unwrap_or_default().to_owned();
    let reply = |status: u16, body: Vec<u8>| {
        Response::builder()
            .status(status)
            .body(Full::new(Bytes::from(body)))
            .unwrap()
    };
    let redirect = |status: u16, to: &str| {
        Response::builder()
            .status(status)
            .header("location", to)
            .body(Full::new(Bytes::new()))
            .unwrap()
    };
    let response = match path.as_str() {
        "/hello" => Response::builder()
            .header("x-test", "yes")
            .header("x-multi", "a")
            .header("x-multi", "b")
            .body(Full::new(Bytes::from_static(b"hello")))
            .unwrap(),
        "/echo" => {
            let method = req.method().to_string();
            let headers: serde_json::Map<String, Value> = req
                .headers()
                .iter()
                .map(|(k, v)| (k.to_string(), json!(v.to_str().unwrap_or_default())))
                .collect();
            let body = req.into_body().collect().await.unwrap().to_bytes();
            let echoed = json!({
                "method": method,
                "headers": headers,
                "body": String::from_utf8_lossy(&body),
            });
            reply(200, serde_json::to_vec(&echoed).unwrap())
        }
        "/status/404" => reply(404, b"not here".to_vec()),
        "/big" => reply(200, vec![b'a'; 5_000_000]),
        "/utf8" => reply(200, "가나다".as_bytes().to_vec()),
        "/gzip-big" => Response::builder()
            .header("content-encoding", "gzip")
            .body(Full::new(Bytes::from(gzip(&vec![b'z'; 2_000_000]))))
            .unwrap(),
        "/gzip-small" => Response::builder()
            .header("content-encoding", "gzip")
            .body(Full::new(Bytes::from(gzip(b"hello gzip"))))
            .unwrap(),
        "/slow" => {
            tokio::time::sleep(Duration::from_secs(5)).await;
            reply(200, b"late".to_vec())
        }
        "/redirect" => redirect(302, query.strip_prefix("to=").unwrap_or("/hello")),
        "/see-other" => redirect(303, "/echo"),
        "/temporary" => redirect(307, "/echo"),
        "/rel" => redirect(301, "hello"),
        "/loop" => redirect(302, "/loop"),
        p if p.starts_with("/chain/") => {
            let n: u32 = p.trim_start_matches("/chain/").parse().unwrap_or(0);
            if n == 0 {
                reply(200, b"end".to_vec())
            } else {
                redirect(302, &format!("/chain/{}", n - 1))
            }
        }
        _ => reply(500, b"no route".to_vec()),
    };
    Ok(response)
}

/// A server on 127.0.0.1; returns its port.
async fn serve() -> u16 {
    let listener = tokio::net::TcpListener::bind((LOCAL, 0)).await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            tokio::spawn(async move {
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service_fn(route))
                    .await;
            });
        }
    });
    port
}

/// Counts lookups, then answers from a table.
#[derive(Debug, Default)]
struct Counting {
    table: StaticResolver,
    calls: Arc<AtomicUsize>,
}

impl Resolver for Counting {
    fn resolve<'a>(&'a self, host: &'a str) -> ResolveFuture<'a> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        self.table.resolve(host)
    }
}

fn names() -> StaticResolver {
    StaticResolver::new()
        .with("api.test", [LOCAL])
        .with("localhost", [LOCAL])
        .with("evil.test", [LOCAL])
        .with("private.test", ["10.0.0.5".parse().unwrap()])
        .with(
            "mixed.test",
            [
                "93.184.216.34".parse().unwrap(),
                "10.0.0.1".parse().unwrap(),
            ],
        )
        .with("meta.test", ["169.254.169.254".parse().unwrap()])
        .with("v6.test", ["::1".parse().unwrap()])
}

/// The default policy, with a table resolver so that no test asks real DNS.
fn strict_kit() -> TestKit {
    let policy = HttpPolicy::default().resolver(names());
    TestKit::with_tools([HttpFetch::new(policy).into_tool()]).unwrap()
}

/// Loopback allowed, for the server on 127.0.0.1.
fn local_kit() -> TestKit {
    let policy = HttpPolicy::default().allow_loopback().resolver(names());
    TestKit::with_tools([HttpFetch::new(policy).into_tool()]).unwrap()
}

struct Refusal<'a>(&'a str, &'a str);

impl fmt::Display for Refusal<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} -> {}", self.0, self.1)
    }
}

#[tokio::test]
async fn base_3_ssrf_attempts_are_refused() {
    let kit = strict_kit();
    let forbidden = "E_HTTP_FORBIDDEN_ADDRESS";
    let cases = [
        Refusal("http://127.0.0.1/", forbidden),
        Refusal("http://127.0.0.1:22/", forbidden),
        Refusal("https://127.0.0.1/", forbidden),
        Refusal("http://127.0.0.1.:80/", forbidden),
        Refusal("http://localhost/", forbidden),
        Refusal("http://2130706433/", forbidden),
        Refusal("http://0x7f000001/", forbidden),
        Refusal("http://0177.0.0.1/", forbidden),
        Refusal("http://017700000001/", forbidden),
        Refusal("http://127.1/", forbidden),
        Refusal("http://0x7f.1/", forbidden),
        Refusal("http://0x7F.0.0.1/", forbidden),
        Refusal("http://[::1]/", forbidden),
        Refusal("http://[::ffff:127.0.0.1]/", forbidden),
        Refusal("http://[::ffff:7f00:1]/", forbidden),
        Refusal("http://[0:0:0:0:0:ffff:169.254.169.254]/", forbidden),
        Refusal("http://[::127.0.0.1]/", forbidden),
        Refusal("http://[64:ff9b::7f00:1]/", forbidden),
        Refusal("http://[2002:7f00:1::]/", forbidden),
        Refusal("http://[2001::1]/", forbidden),
        Refusal("http://0.0.0.0/", forbidden),
        Refusal("http://0/", forbidden),
        Refusal("http://[::]/", forbidden),
        Refusal("http://169.254.169.254/latest/meta-data/", forbidden),
        Refusal("http://[fd00:ec2::254]/", forbidden),
        Refusal("http://100.100.100.200/", forbidden),
        Refusal("http://10.0.0.1/", forbidden),
        Refusal("http://172.16.0.1/", forbidden),
        Refusal("http://192.168.1.1/", forbidden),
        Refusal("http://100.64.0.1/", forbidden),
        Refusal("http://224.0.0.1/", forbidden),
        Refusal("http://255.255.255.255/", forbidden),
        Refusal("http://192.0.2.1/", forbidden),
        Refusal("http://[fe80::1]/", forbidden),
        Refusal("http://[fc00::1]/", forbidden),
        Refusal("http://[ff02::1]/", forbidden),
        Refusal("http://evil.test/", forbidden),
        Refusal("http://EVIL.test./", forbidden),
        Refusal("http://private.test/", forbidden),
        Refusal("http://mixed.test/", forbidden),
        Refusal("http://meta.test/", forbidden),
        Refusal("http://v6.test/", forbidden),
        Refusal("http://user:pass@127.0.0.1/", "E_HTTP_USERINFO"),
        Refusal("http://example.com@127.0.0.1/", "E_HTTP_USERINFO"),
        Refusal("http://127.0.0.1@example.com/", "E_HTTP_USERINFO"),
        Refusal("http://api.test:80@evil.test/", "E_HTTP_USERINFO"),
        Refusal("file:///etc/passwd", "E_HTTP_SCHEME"),
        Refusal("ftp://example.com/", "E_HTTP_SCHEME"),
        Refusal("gopher://127.0.0.1:6379/_", "E_HTTP_SCHEME"),
        Refusal("dict://127.0.0.1:11211/", "E_HTTP_SCHEME"),
        Refusal("data:text/plain,hi", "E_HTTP_SCHEME"),
        Refusal("javascript:alert(1)", "E_HTTP_SCHEME"),
        Refusal("//127.0.0.1/", "E_HTTP_URL_INVALID"),
        Refusal("http://1.2.3.4.5/", "E_HTTP_URL_INVALID"),
        // WHATWG percent-decodes the host, so this is 127.0.0.1, and refused as loopback.
        Refusal("http://%31%32%37.0.0.1/", "E_HTTP_FORBIDDEN_ADDRESS"),
        Refusal("http://[::ffff:7f00:1]/", "E_HTTP_FORBIDDEN_ADDRESS"),
        Refusal("http://LOCALHOST./", "E_HTTP_FORBIDDEN_ADDRESS"),
    ];
    assert!(cases.len() >= 30);
    for case in &cases {
        let r = kit.call("http-fetch__get", json!({"url": case.0})).await;
        let err = r
            .error
            .as_ref()
            .unwrap_or_else(|| panic!("{case}: not refused: {r:?}"));
        assert_eq!(err.code(), case.1, "{case}: {err:?}");
        assert!(err.suggestion().is_some(), "{case}: a suggestion");
        assert!(err.message().chars().count() <= 1000);
    }
    // POST is checked the same way.
    kit.call(
        "http-fetch__post",
        json!({"url": "http://169.254.169.254/", "bodyString": "x"}),
    )
    .await
    .assert_error(forbidden);
}

#[tokio::test]
async fn base_3_get_answers_status_headers_and_body() {
    let port = serve().await;
    let kit = local_kit();
    let url = format!("http://127.0.0.1:{port}/hello");
    let r = kit.call("http-fetch__get", json!({"url": url})).await;
    let out = r.assert_ok();
    assert_eq!(out["status"], 200);
    assert_eq!(out["url"], url);
    assert_eq!(out["body"], "hello");
    assert_eq!(out["truncated"], false);
    assert_eq!(out["headers"]["x-test"], "yes");
    assert_eq!(out["headers"]["x-multi"], "a, b");
    assert!(out["durationMs"].is_u64());
    assert_eq!(out["redirects"], json!([]));

    let r = kit
        .call(
            "http-fetch__get",
            json!({"url": format!("http://127.0.0.1:{port}/status/404")}),
        )
        .await;
    let out = r.assert_ok();
    assert_eq!(out["status"], 404, "a non-2xx status is data");
    assert_eq!(out["body"], "not here");
}

#[tokio::test]
async fn base_3_a_resolved_name_is_connected_to_at_the_checked_address() {
    let port = serve().await;
    let calls = Arc::new(AtomicUsize::new(0));
    let resolver = Counting {
        table: names(),
        calls: Arc::clone(&calls),
    };
    let policy = HttpPolicy::default().allow_loopback().resolver(resolver);
    let kit = TestKit::with_tools([HttpFetch::new(policy).into_tool()]).unwrap();
    // `api.test` exists only in the table: a second, system lookup would fail.
    let r = kit
        .call(
            "http-fetch__get",
            json!({"url": format!("http://api.test:{port}/echo")}),
        )
        .await;
    let out = r.assert_ok();
    let echoed: Value = serde_json::from_str(out["body"].as_str().unwrap()).unwrap();
    assert_eq!(echoed["headers"]["host"], format!("api.test:{port}"));
    assert_eq!(calls.load(Ordering::SeqCst), 1, "one lookup per hop");
}

#[tokio::test]
async fn base_3_post_sends_json_or_text_with_headers() {
    let port = serve().await;
    let kit = local_kit();
    let url = format!("http://127.0.0.1:{port}/echo");
    let r = kit
        .call(
            "http-fetch__post",
            json!({"url": url, "body": {"a": [1, 2]}, "headers": {"X-Custom": "v1"}}),
        )
        .await;
    let echoed: Value = serde_json::from_str(r.assert_ok()["body"].as_str().unwrap()).unwrap();
    assert_eq!(echoed["method"], "POST");
    assert_eq!(echoed["body"], r#"{"a":[1,2]}"#);
    assert_eq!(echoed["headers"]["content-type"], "application/json");
    assert_eq!(echoed["headers"]["x-custom"], "v1");
    assert!(
        echoed["headers"]["user-agent"]
            .as_str()
            .unwrap()
            .starts_with("goondan-http-fetch/")
    );

    let r = kit
        .call(
            "http-fetch__post",
            json!({"url": url, "bodyString": "plain words", "headers": {"content-type": "text/x-test"}}),
        )
        .await;
    let echoed: Value = serde_json::from_str(r.assert_ok()["body"].as_str().unwrap()).unwrap();
    assert_eq!(echoed["body"], "plain words");
    assert_eq!(echoed["headers"]["content-type"], "text/x-test");

    kit.call(
        "http-fetch__post",
        json!({"url": url, "body": 1, "bodyString": "x"}),
    )
    .await
    .assert_error("E_HTTP_BODY_CONFLICT");
    for headers in [
        json!({"Host": "evil.test"}),
        json!({"Transfer-Encoding": "chunked"}),
        json!({"X-Bad": "a\r\nInjected: 1"}),
        json!({"bad name": "x"}),
    ] {
        kit.call("http-fetch__get", json!({"url": url, "headers": headers}))
            .await
            .assert_error("E_HTTP_HEADER");
    }
}

#[tokio::test]
async fn base_3_bodies_are_capped_on_a_utf8_boundary() {
    let port = serve().await;
    let kit = local_kit();
    let r = kit
        .call(
            "http-fetch__get",
            json!({"url": format!("http://127.0.0.1:{port}/big"), "maxBytes": 1000}),
        )
        .await;
    let out = r.assert_ok();
    assert_eq!(out["truncated"], true);
    assert_eq!(out["body"].as_str().unwrap().len(), 1000);

    let r = kit
        .call(
            "http-fetch__get",
            json!({"url": format!("http://127.0.0.1:{port}/big")}),
        )
        .await;
    assert_eq!(
        r.assert_ok()["body"].as_str().unwrap().len(),
        100_000,
        "default cap"
    );

    let r = kit
        .call(
            "http-fetch__get",
            json!({"url": format!("http://127.0.0.1:{port}/utf8"), "maxBytes": 4}),
        )
        .await;
    let out = r.assert_ok();
    assert_eq!(out["body"], "가");
    assert_eq!(out["truncated"], true);
}

#[tokio::test]
async fn base_3_compressed_bodies_are_capped_after_decompression() {
    let port = serve().await;
    let kit = local_kit();
    let r = kit
        .call(
            "http-fetch__get",
            json!({"url": format!("http://127.0.0.1:{port}/gzip-big"), "maxBytes": 5000}),
        )
        .await;
    let out = r.assert_ok();
    assert_eq!(out["truncated"], true);
    assert_eq!(out["body"].as_str().unwrap(), "z".repeat(5000));

    let r = kit
        .call(
            "http-fetch__get",
            json!({"url": format!("http://127.0.0.1:{port}/gzip-small")}),
        )
        .await;
    let out = r.assert_ok();
    assert_eq!(out["body"], "hello gzip");
    assert_eq!(out["truncated"], false);
}

#[tokio::test]
async fn base_3_timeouts_and_cancellation() {
    let port = serve().await;
    let kit = local_kit();
    let started = Instant::now();
    kit.call(
        "http-fetch__get",
        json!({"url": format!("http://127.0.0.1:{port}/slow"), "timeoutMs": 300}),
    )
    .await
    .assert_error("E_HTTP_TIMEOUT");
    assert!(started.elapsed() < Duration::from_secs(3));
    // A timeout may pass on a later call: a retry budget counts it.
    assert!(
        kit.call(
            "http-fetch__get",
            json!({"url": format!("http://127.0.0.1:{port}/slow"), "timeoutMs": 100}),
        )
        .await
        .assert_error("E_HTTP_TIMEOUT")
        .is_retryable()
    );

    let token = tokio_util::sync::CancellationToken::new();
    let ctx = ToolContext::builder(kit.workdir())
        .cancellation(token.clone())
        .build();
    let fetch = HttpFetch::new(HttpPolicy::default().allow_loopback());
    let canceller = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(200)).await;
        token.cancel();
    });
    let input =
        serde_json::from_value(json!({"url": format!("http://127.0.0.1:{port}/slow")})).unwrap();
    let err = fetch.get(&ctx, input).await.unwrap_err();
    assert_eq!(err.code(), "E_HTTP_CANCELLED");
    canceller.await.unwrap();
}

#[tokio::test]
async fn base_3_redirects_are_followed_by_hand_and_each_hop_checked() {
    let port = serve().await;
    let kit = local_kit();
    let base = format!("http://127.0.0.1:{port}");

    let r = kit
        .call("http-fetch__get", json!({"url": format!("{base}/rel")}))
        .await;
    let out = r.assert_ok();
    assert_eq!(out["body"], "hello");
    assert_eq!(out["url"], format!("{base}/hello"));
    assert_eq!(out["redirects"], json!([format!("{base}/hello")]));

    let r = kit
        .call("http-fetch__get", json!({"url": format!("{base}/chain/5")}))
        .await;
    assert_eq!(r.assert_ok()["body"], "end");
    kit.call("http-fetch__get", json!({"url": format!("{base}/loop")}))
        .await
        .assert_error("E_HTTP_TOO_MANY_REDIRECTS");

    // 303 turns a POST into a GET; 307 keeps it.
    let r = kit
        .call(
            "http-fetch__post",
            json!({"url": format!("{base}/see-other"), "bodyString": "x"}),
        )
        .await;
    let echoed: Value = serde_json::from_str(r.assert_ok()["body"].as_str().unwrap()).unwrap();
    assert_eq!(echoed["method"], "GET");
    let r = kit
        .call(
            "http-fetch__post",
            json!({"url": format!("{base}/temporary"), "bodyString": "kept"}),
        )
        .await;
    let echoed: Value = serde_json::from_str(r.assert_ok()["body"].as_str().unwrap()).unwrap();
    assert_eq!(
        (echoed["method"].as_str(), echoed["body"].as_str()),
        (Some("POST"), Some("kept"))
    );

    // From an allowed host to forbidden ones.
    for (to, code) in [
        (
            "http://169.254.169.254/latest/meta-data/",
            "E_HTTP_FORBIDDEN_ADDRESS",
        ),
        ("http://private.test/", "E_HTTP_FORBIDDEN_ADDRESS"),
        ("http://[fd00:ec2::254]/", "E_HTTP_FORBIDDEN_ADDRESS"),
        ("http://0x0a000001/", "E_HTTP_FORBIDDEN_ADDRESS"),
        ("file:///etc/passwd", "E_HTTP_SCHEME"),
        ("http://u:p@127.0.0.1/", "E_HTTP_USERINFO"),
    ] {
        let r = kit
            .call(
                "http-fetch__get",
                json!({"url": format!("{base}/redirect?to={to}")}),
            )
            .await;
        r.assert_error(code);
    }

    // Credentials do not follow a redirect to another origin.
    let r = kit
        .call(
            "http-fetch__get",
            json!({
                "url": format!("{base}/redirect?to=http://api.test:{port}/echo"),
                "headers": {"Authorization": "Bearer s3cret", "X-Other": "kept"}
            }),
        )
        .await;
    let echoed: Value = serde_json::from_str(r.assert_ok()["body"].as_str().unwrap()).unwrap();
    assert!(echoed["headers"].get("authorization").is_none());
    assert_eq!(echoed["headers"]["x-other"], "kept");
}

#[tokio::test]
async fn base_3_allowed_hosts_are_exempt_but_their_redirects_are_not() {
    let port = serve().await;
    let policy = HttpPolicy::default()
        .allow_host("api.test")
        .resolver(names());
    let kit = TestKit::with_tools([HttpFetch::new(policy).into_tool()]).unwrap();
    let r = kit
        .call(
            "http-fetch__get",
            json!({"url": format!("http://api.test:{port}/hello")}),
        )
        .await;
    assert_eq!(r.assert_ok()["body"], "hello");
    kit.call(
        "http-fetch__get",
        json!({"url": format!("http://api.test:{port}/redirect?to=http://127.0.0.1:{port}/hello")}),
    )
    .await
    .assert_error("E_HTTP_FORBIDDEN_ADDRESS");
    kit.call(
        "http-fetch__get",
        json!({"url": format!("http://127.0.0.1:{port}/hello")}),
    )
    .await
    .assert_error("E_HTTP_FORBIDDEN_ADDRESS");
}

#[tokio::test]
async fn base_3_unknown_names_and_closed_ports_are_errors() {
    let kit = local_kit();
    kit.call("http-fetch__get", json!({"url": "http://unknown.test/"}))
        .await
        .assert_error("E_HTTP_DNS");
    let closed = {
        let listener = std::net::TcpListener::bind(SocketAddr::new(LOCAL, 0)).unwrap();
        listener.local_addr().unwrap().port()
    };
    kit.call(
        "http-fetch__get",
        json!({"url": format!("http://127.0.0.1:{closed}/")}),
    )
    .await
    .assert_error("E_HTTP_CONNECT");
    // A refused connection may be accepted later; a name that does not resolve will not be.
    assert!(
        kit.call(
            "http-fetch__get",
            json!({"url": format!("http://127.0.0.1:{closed}/")}),
        )
        .await
        .assert_error("E_HTTP_CONNECT")
        .is_retryable()
    );
    kit.call(
        "http-fetch__get",
        json!({"url": "http://127.0.0.1/", "unknown": 1}),
    )
    .await
    .assert_error("E_TOOL_INVALID_ARGS");
}
