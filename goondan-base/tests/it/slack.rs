//! `slack` against a Web API stand-in on 127.0.0.1 that answers as Slack documents:
//! `{ok: true, ...}`, `{ok: false, error}`, and `429` with a `Retry-After` header.

use std::convert::Infallible;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use goondan_base::web_api::RetryPolicy;
use goondan_base::{Slack, SlackPolicy};
use goondan_runtime::IntoTool;
use goondan_runtime::testing::{ResultAssertions, TestKit};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};

const TOKEN: &str = "xoxb-SECRET-slack";

/// One request as the server saw it.
#[derive(Debug, Clone)]
struct Seen {
    path: String,
    auth: String,
    content_type: String,
    body: String,
}

type Log = Arc<Mutex<Vec<Seen>>>;

fn reply(status: u16, body: &Value) -> Response<Full<Bytes>> {
    Response::builder()
        .status(status)
        .header("content-type", "application/json; charset=utf-8")
        .body(Full::new(Bytes::from(serde_json::to_vec(body).unwrap())))
        .unwrap()
}

fn form(body: &str) -> Vec<(String, String)> {
    body.split('&')
        .filter_map(|pair| pair.split_once('='))
        .map(|(k, v)| (k.to_owned(), v.replace('+', " ").replace("%2C", ",")))
        .collect()
}

async fn route(req: Request<Incoming>, log: Log) -> Result<Response<Full<Bytes>>, Infallible> {
    let header = |name: &str| {
        req.headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_owned()
    };
    let seen = Seen {
        path: req.uri().path().to_owned(),
        auth: header("authorization"),
        content_type: header("content-type"),
        body: String::new(),
    };
    let body = req.into_body().collect().await.unwrap().to_bytes();
    let seen = Seen {
        body: String::from_utf8_lossy(&body).into_owned(),
        ..seen
    };
    let repeats = {
        let mut log = log.lock().unwrap();
        log.push(seen.clone());
        log.iter()
            .filter(|s| s.path == seen.path && s.body == seen.body)
            .count()
    };
    if seen.path.starts_with("/files/") {
        if seen.auth != format!("Bearer {TOKEN}") {
            return Ok(Response::builder()
                .status(302)
                .header("location", "/login")
                .body(Full::new(Bytes::new()))
                .unwrap());
        }
        let data: &[u8] = if seen.path == "/files/big.png" {
            &[1u8; 50_000]
        } else {
            b"PNGDATA"
        };
        return Ok(Response::builder()
            .header("content-type", "image/png")
            .header("etag", "\"abc\"")
            .header("content-disposition", "attachment; filename=\"cat.png\"")
            .body(Full::new(Bytes::from_static(data)))
            .unwrap());
    }
    if seen.auth != format!("Bearer {TOKEN}") {
        return Ok(reply(200, &json!({"ok": false, "error": "invalid_auth"})));
    }
    let json: Value = serde_json::from_str(&seen.body).unwrap_or(Value::Null);
    let channel = json["channel"].as_str().unwrap_or_default();
    let response = match (seen.path.as_str(), channel) {
        (_, "C404") => reply(200, &json!({"ok": false, "error": "channel_not_found"})),
        (_, "CLIMIT") if repeats == 1 => Response::builder()
            .status(429)
            .header("retry-after", "1")
            .body(Full::new(Bytes::from_static(
                b"{\"ok\":false,\"error\":\"ratelimited\"}",
            )))
            .unwrap(),
        (_, "CSLOW") => Response::builder()
            .status(429)
            .header("retry-after", "90")
            .body(Full::new(Bytes::new()))
            .unwrap(),
        ("/api/chat.postMessage", _) => reply(
            200,
            &json!({"ok": true, "channel": channel, "ts": "1700000000.000100",
                    "message": {"type": "message", "text": json["text"], "ts": "1700000000.000100"}}),
        ),
        ("/api/chat.update", _) => reply(
            200,
            &json!({"ok": true, "channel": channel, "ts": json["ts"], "text": json["text"]}),
        ),
        ("/api/chat.delete", _) => reply(
            200,
            &json!({"ok": true, "channel": channel, "ts": json["ts"]}),
        ),
        ("/api/reactions.add", _) if json["name"] == "repeat" => {
            reply(200, &json!({"ok": false, "error": "already_reacted"}))
        }
        ("/api/reactions.add", _) => reply(200, &json!({"ok": true})),
        ("/api/conversations.history" | "/api/conversations.replies", _) => {
            let args = form(&seen.body);
            let get = |k: &str| {
                args.iter()
                    .find(|(key, _)| key == k)
                    .map(|(_, v)| v.clone())
            };
            if get("channel").as_deref() == Some("C404") {
                reply(200, &json!({"ok": false, "error": "channel_not_found"}))
            } else {
                reply(
                    200,
                    &json!({"ok": true,
                            "messages": [
                                {"type": "message", "ts": "1.000100", "text": "first"},
                                {"type": "message", "ts": "2.000200", "text": "second"},
                                "not an object",
                            ],
                            "has_more": true,
                            "response_metadata": {"next_cursor": "bmV4dA=="}}),
                )
            }
        }
        _ => reply(404, &json!({"ok": false, "error": "unknown_method"})),
    };
    Ok(response)
}

struct Server {
    base: String,
    log: Log,
}

impl Server {
    async fn start() -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let log: Log = Arc::default();
        let shared = Arc::clone(&log);
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let log = Arc::clone(&shared);
                tokio::spawn(async move {
                    let service = service_fn(move |req| route(req, Arc::clone(&log)));
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                });
            }
        });
        Self {
            base: format!("http://127.0.0.1:{port}"),
            log,
        }
    }

    fn requests(&self) -> Vec<Seen> {
        self.log.lock().unwrap().clone()
    }

    fn policy(&self) -> SlackPolicy {
        let mut policy = SlackPolicy::default()
            .api_base_url(format!("{}/api", self.base))
            .token(TOKEN)
            .download_host("127.0.0.1")
            .retry(RetryPolicy {
                max_retries: 2,
                max_wait: Duration::from_secs(5),
            });
        policy.token_env = vec!["GOONDAN_TEST_SLACK_TOKEN_NEVER_SET".into()];
        policy
    }

    fn kit(&self) -> TestKit {
        TestKit::with_tools([Slack::new(self.policy()).into_tool()]).unwrap()
    }
}

#[track_caller]
fn assert_no_token(result: &impl serde::Serialize) {
    let text = serde_json::to_string(result).unwrap();
    assert!(!text.contains("SECRET"), "the token leaked: {text}");
}

#[tokio::test]
async fn send_edit_delete_with_bearer_json() {
    let server = Server::start().await;
    let kit = server.kit();
    kit.call(
        "slack__send",
        json!({"channelId": "C1", "text": "hello", "threadTs": "1.0001", "unfurlLinks": false}),
    )
    .await
    .assert_output(
        json!({"ok": true, "channelId": "C1", "messageTs": "1700000000.000100",
                          "text": "hello"}),
    );
    kit.call(
        "slack__edit",
        json!({"channelId": "C1", "messageTs": "1700000000.000100", "text": "edited", "mrkdwn": true}),
    )
    .await
    .assert_output(
        json!({"ok": true, "channelId": "C1", "messageTs": "1700000000.000100",
                          "edited": true}),
    );
    kit.call(
        "slack__delete",
        json!({"channelId": "C1", "messageTs": "1700000000.000100"}),
    )
    .await
    .assert_output(
        json!({"ok": true, "channelId": "C1", "messageTs": "1700000000.000100",
                              "deleted": true}),
    );
    let seen = server.requests();
    let paths: Vec<&str> = seen.iter().map(|s| s.path.as_str()).collect();
    assert_eq!(
        paths,
        [
            "/api/chat.postMessage",
            "/api/chat.update",
            "/api/chat.delete"
        ]
    );
    for s in &seen {
        assert_eq!(s.auth, format!("Bearer {TOKEN}"));
        assert_eq!(s.content_type, "application/json; charset=utf-8");
    }
    let first: Value = serde_json::from_str(&seen[0].body).unwrap();
    assert_eq!(
        first,
        json!({"channel": "C1", "text": "hello", "thread_ts": "1.0001", "unfurl_links": false})
    );
    let second: Value = serde_json::from_str(&seen[1].body).unwrap();
    assert_eq!(
        second,
        json!({"channel": "C1", "ts": "1700000000.000100", "text": "edited", "mrkdwn": true})
    );
}

#[tokio::test]
async fn read_history_thread_and_find() {
    let server = Server::start().await;
    let kit = server.kit();
    let out = kit
        .call(
            "slack__read",
            json!({"channelId": "C1", "messageTs": "2.000200"}),
        )
        .await;
    let out = out.assert_ok();
    assert_eq!(out["method"], "conversations.history");
    assert_eq!(out["count"], 2);
    assert_eq!(out["found"]["text"], "second");
    assert_eq!(out["hasMore"], true);
    assert_eq!(out["nextCursor"], "bmV4dA==");
    assert_eq!(out["threadTs"], Value::Null);
    let thread = kit
        .call(
            "slack__read",
            json!({"channelId": "C1", "threadTs": "1.000100", "limit": 50}),
        )
        .await;
    let thread = thread.assert_ok();
    assert_eq!(thread["method"], "conversations.replies");
    assert_eq!(thread["found"], Value::Null);
    let seen = server.requests();
    assert_eq!(seen[0].content_type, "application/x-www-form-urlencoded");
    assert_eq!(
        form(&seen[0].body),
        [
            ("channel".to_owned(), "C1".to_owned()),
            ("latest".to_owned(), "2.000200".to_owned()),
            ("inclusive".to_owned(), "true".to_owned()),
            ("limit".to_owned(), "1".to_owned()),
        ]
    );
    assert_eq!(
        form(&seen[1].body),
        [
            ("channel".to_owned(), "C1".to_owned()),
            ("ts".to_owned(), "1.000100".to_owned()),
            ("limit".to_owned(), "50".to_owned()),
        ]
    );
    let bad = kit
        .call("slack__read", json!({"channelId": "C1", "limit": 1001}))
        .await;
    bad.assert_error("E_SLACK_INVALID_INPUT");
}

#[tokio::test]
async fn react_adds_each_emoji() {
    let server = Server::start().await;
    let kit = server.kit();
    kit.call(
        "slack__react",
        json!({"channelId": "C1", "messageTs": "1.0", "emoji": ":eyes:", "emojis": ["rocket", "eyes"]}),
    )
    .await
    .assert_output(json!({"ok": true, "channelId": "C1", "messageTs": "1.0",
                          "emojis": ["eyes", "rocket"], "reactionCount": 2}));
    let names: Vec<Value> = server
        .requests()
        .iter()
        .map(|s| serde_json::from_str::<Value>(&s.body).unwrap())
        .collect();
    assert_eq!(
        names,
        [
            json!({"channel": "C1", "timestamp": "1.0", "name": "eyes"}),
            json!({"channel": "C1", "timestamp": "1.0", "name": "rocket"}),
        ]
    );
    let err = kit
        .call(
            "slack__react",
            json!({"channelId": "C1", "messageTs": "1.0", "emoji": "repeat"}),
        )
        .await;
    let err = err.assert_error("E_SLACK_API");
    assert_eq!(
        err.message(),
        "[slack] reactions.add failed: already_reacted"
    );
}

#[tokio::test]
async fn api_errors_are_structured_and_hide_the_token() {
    let server = Server::start().await;
    let kit = server.kit();
    let out = kit
        .call("slack__send", json!({"channelId": "C404", "text": "x"}))
        .await;
    let err = out.assert_error("E_SLACK_API");
    assert_eq!(
        err.message(),
        "[slack] chat.postMessage failed: channel_not_found"
    );
    assert!(err.suggestion().unwrap().contains("channelId"));
    assert_eq!(
        err.help_url(),
        Some("https://api.slack.com/methods/chat.postMessage")
    );
    assert_no_token(&out);
    let wrong = kit
        .call(
            "slack__send",
            json!({"channelId": "C1", "text": "x", "token": "xoxb-wrong"}),
        )
        .await;
    let err = wrong.assert_error("E_SLACK_API");
    assert!(err.message().ends_with("invalid_auth"));
    assert!(err.suggestion().unwrap().contains("SLACK_BOT_TOKEN"));
}

#[tokio::test]
async fn rate_limit_is_retried_after_retry_after() {
    let server = Server::start().await;
    let kit = server.kit();
    let started = Instant::now();
    let out = kit
        .call("slack__send", json!({"channelId": "CLIMIT", "text": "x"}))
        .await;
    out.assert_ok();
    assert!(
        started.elapsed() >= Duration::from_millis(950),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(server.requests().len(), 2);

    let started = Instant::now();
    let slow = kit
        .call("slack__send", json!({"channelId": "CSLOW", "text": "x"}))
        .await;
    let err = slow.assert_error("E_SLACK_RATE_LIMITED");
    assert!(
        err.message().contains("retry after 90 s"),
        "{}",
        err.message()
    );
    assert!(started.elapsed() < Duration::from_secs(2));
    assert_eq!(server.requests().len(), 3);
}

#[tokio::test]
async fn download_file_with_token_into_the_workdir() {
    let server = Server::start().await;
    let kit = server.kit();
    let url = format!("{}/files/T1/cat.png", server.base);
    let out = kit
        .call(
            "slack__downloadFile",
            json!({"url": url, "savePath": "in/cat.png"}),
        )
        .await;
    let saved = kit.workdir().join("in/cat.png");
    out.assert_output(json!({
        "ok": true, "url": url, "contentType": "image/png", "contentLength": 7, "sizeBytes": 7,
        "etag": "\"abc\"", "contentDisposition": "attachment; filename=\"cat.png\"",
        "savedPath": saved.to_string_lossy(),
        "base64": "UE5HREFUQQ==", "dataUrl": "data:image/png;base64,UE5HREFUQQ==",
    }));
    assert_eq!(std::fs::read(&saved).unwrap(), b"PNGDATA");
    assert_eq!(server.requests()[0].auth, format!("Bearer {TOKEN}"));

    let escape = kit
        .call(
            "slack__downloadFile",
            json!({"url": url, "savePath": "../cat.png"}),
        )
        .await;
    escape.assert_error("E_PATH_OUTSIDE_WORKDIR");
    let big = kit
        .call(
            "slack__downloadFile",
            json!({"url": format!("{}/files/big.png", server.base), "maxBytes": 1000}),
        )
        .await;
    big.assert_error("E_SLACK_FILE_TOO_LARGE");
    let redirected = kit
        .call(
            "slack__downloadFile",
            json!({"url": url, "token": "xoxb-other"}),
        )
        .await;
    let err = redirected.assert_error("E_SLACK_DOWNLOAD");
    assert!(err.suggestion().unwrap().contains("files:read"));
}

#[tokio::test]
async fn the_token_goes_only_where_configured() {
    let server = Server::start().await;
    let kit = server.kit();
    let before = server.requests().len();
    let foreign = kit
        .call(
            "slack__downloadFile",
            json!({"url": "http://localhost:9/files/x.png"}),
        )
        .await;
    foreign.assert_error("E_SLACK_DOWNLOAD_HOST");
    let base = kit
        .call(
            "slack__send",
            json!({"channelId": "C1", "text": "x", "apiBaseUrl": "http://127.0.0.1:9/api"}),
        )
        .await;
    base.assert_error("E_SLACK_BASE_URL");
    assert_eq!(server.requests().len(), before);

    let mut policy = server.policy();
    policy.token = None;
    let no_token = TestKit::with_tools([Slack::new(policy).into_tool()]).unwrap();
    let out = no_token
        .call("slack__send", json!({"channelId": "C1", "text": "x"}))
        .await;
    let err = out.assert_error("E_SLACK_TOKEN_MISSING");
    assert!(
        err.suggestion()
            .unwrap()
            .contains("GOONDAN_TEST_SLACK_TOKEN_NEVER_SET")
    );
    assert!(!format!("{:?}", SlackPolicy::default().token(TOKEN)).contains("SECRET"));
}

/// The model is shown `channelId` and `messageTs`; Slack's own spellings are unknown keys,
/// refused before any request (SPEC-6: arguments are checked against the schema shown).
#[tokio::test]
async fn spec_6_slack_spellings_outside_the_schema_are_refused_not_aliased() {
    let server = Server::start().await;
    let kit = server.kit();
    for args in [
        json!({"channel": "C1", "text": "x"}),
        json!({"channelId": "C1", "ts": "1.0", "text": "x"}),
    ] {
        kit.call("slack__send", args)
            .await
            .assert_error("E_TOOL_INVALID_ARGS");
    }
    assert!(server.requests().is_empty());
}
