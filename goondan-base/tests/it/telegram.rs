//! `telegram` against a Bot API stand-in on 127.0.0.1 that answers as the Bot API documents:
//! `{ok: true, result}`, `{ok: false, error_code, description}`, and `429` with
//! `parameters.retry_after`.

use std::convert::Infallible;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use goondan_base::web_api::RetryPolicy;
use goondan_base::{Telegram, TelegramPolicy};
use goondan_runtime::IntoTool;
use goondan_runtime::testing::{ResultAssertions, TestKit};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};

const TOKEN: &str = "123456:SECRET-token_abc";

/// What the server saw: `(path, JSON body)` per request.
type Log = Arc<Mutex<Vec<(String, Value)>>>;

fn reply(status: u16, body: &Value) -> Response<Full<Bytes>> {
    Response::builder()
        .status(status)
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from(serde_json::to_vec(body).unwrap())))
        .unwrap()
}

async fn route(req: Request<Incoming>, log: Log) -> Result<Response<Full<Bytes>>, Infallible> {
    let path = req.uri().path().to_owned();
    let body = req.into_body().collect().await.unwrap().to_bytes();
    let json: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let seen = {
        let mut log = log.lock().unwrap();
        log.push((path.clone(), json.clone()));
        log.iter().filter(|(p, b)| *p == path && *b == json).count()
    };
    let Some(rest) = path.strip_prefix(&format!("/bot{TOKEN}/")) else {
        if let Some(file) = path.strip_prefix(&format!("/file/bot{TOKEN}/")) {
            return Ok(match file {
                "photos/file_1.jpg" => Response::builder()
                    .header("content-type", "image/jpeg")
                    .body(Full::new(Bytes::from_static(b"hello")))
                    .unwrap(),
                "photos/big.jpg" => Response::builder()
                    .header("content-type", "image/jpeg")
                    .body(Full::new(Bytes::from(vec![7u8; 100_000])))
                    .unwrap(),
                _ => reply(
                    404,
                    &json!({"ok": false, "error_code": 404, "description": "Not Found"}),
                ),
            });
        }
        return Ok(reply(
            401,
            &json!({"ok": false, "error_code": 401, "description": "Unauthorized"}),
        ));
    };
    let chat = json["chat_id"].as_str().unwrap_or_default();
    let limited = |after: u64| {
        reply(
            429,
            &json!({"ok": false, "error_code": 429,
                    "description": format!("Too Many Requests: retry after {after}"),
                    "parameters": {"retry_after": after}}),
        )
    };
    let response = match (rest, chat) {
        (_, "404") => reply(
            400,
            &json!({"ok": false, "error_code": 400, "description": "Bad Request: chat not found"}),
        ),
        (_, "limited-once") if seen == 1 => limited(1),
        (_, "limited-long") => limited(120),
        ("sendMessage" | "editMessageText", _) => reply(
            200,
            &json!({"ok": true, "result": {
                "message_id": json["message_id"].as_i64().unwrap_or(42),
                "date": 1_700_000_000,
                "chat": {"id": 123, "type": "private"},
                "text": json["text"],
            }}),
        ),
        ("deleteMessage" | "setMessageReaction" | "sendChatAction", _) => {
            reply(200, &json!({"ok": true, "result": true}))
        }
        ("getFile", _) => {
            let path = if json["file_id"] == "BIG" {
                "photos/big.jpg"
            } else {
                "photos/file_1.jpg"
            };
            reply(
                200,
                &json!({"ok": true, "result": {"file_id": json["file_id"], "file_unique_id": "U1",
                        "file_size": 5, "file_path": path}}),
            )
        }
        _ => reply(
            404,
            &json!({"ok": false, "error_code": 404, "description": "Not Found: method not found"}),
        ),
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

    fn requests(&self) -> Vec<(String, Value)> {
        self.log.lock().unwrap().clone()
    }

    fn policy(&self) -> TelegramPolicy {
        let mut policy = TelegramPolicy::default()
            .api_base_url(&self.base)
            .token(TOKEN)
            .retry(RetryPolicy {
                max_retries: 2,
                max_wait: Duration::from_secs(5),
            });
        policy.token_env = vec!["GOONDAN_TEST_TELEGRAM_TOKEN_NEVER_SET".into()];
        policy
    }

    fn kit(&self) -> TestKit {
        TestKit::with_tools([Telegram::new(self.policy()).into_tool()]).unwrap()
    }
}

#[track_caller]
fn assert_no_token(result: &impl serde::Serialize) {
    let text = serde_json::to_string(result).unwrap();
    assert!(!text.contains("SECRET"), "the token leaked: {text}");
}

#[tokio::test]
async fn send_posts_the_documented_payload() {
    let server = Server::start().await;
    let kit = server.kit();
    let out = kit
        .call(
            "telegram__send",
            json!({"chatId": 123, "text": "hi *there*", "parseMode": "markdown-v2",
                   "replyToMessageId": "7", "disableNotification": true}),
        )
        .await;
    out.assert_output(json!({"ok": true, "chatId": "123", "messageId": 42,
                             "date": 1_700_000_000, "text": "hi *there*"}));
    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0].0, format!("/bot{TOKEN}/sendMessage"));
    assert_eq!(
        requests[0].1,
        json!({"chat_id": "123", "text": "hi *there*", "parse_mode": "MarkdownV2",
               "disable_notification": true, "reply_to_message_id": 7})
    );
}

#[tokio::test]
async fn edit_delete_react_and_chat_action() {
    let server = Server::start().await;
    let kit = server.kit();
    kit.call(
        "telegram__edit",
        json!({"chatId": "@chan", "messageId": 9, "text": "new", "parseMode": "HTML"}),
    )
    .await
    .assert_output(json!({"ok": true, "chatId": "@chan", "messageId": 9, "edited": true}));
    kit.call("telegram__delete", json!({"chatId": 5, "messageId": "9"}))
        .await
        .assert_output(json!({"ok": true, "chatId": "5", "messageId": 9, "deleted": true}));
    kit.call(
        "telegram__react",
        json!({"chatId": 5, "messageId": 9, "emoji": "👍", "emojis": ["🔥", "👍"], "isBig": true}),
    )
    .await
    .assert_output(
        json!({"ok": true, "chatId": "5", "messageId": 9, "cleared": false,
                          "emojis": ["👍", "🔥"], "reactionCount": 2}),
    );
    kit.call(
        "telegram__react",
        json!({"chatId": 5, "messageId": 9, "clear": true}),
    )
    .await
    .assert_output(
        json!({"ok": true, "chatId": "5", "messageId": 9, "cleared": true,
                              "emojis": [], "reactionCount": 0}),
    );
    kit.call(
        "telegram__setChatAction",
        json!({"chatId": 5, "action": "upload-photo"}),
    )
    .await
    .assert_output(json!({"ok": true, "chatId": "5", "status": "upload_photo",
                              "action": "upload_photo"}));
    let bodies: Vec<(String, Value)> = server
        .requests()
        .into_iter()
        .map(|(p, b)| (p.rsplit('/').next().unwrap().to_owned(), b))
        .collect();
    assert_eq!(
        bodies,
        [
            (
                "editMessageText".to_owned(),
                json!({"chat_id": "@chan", "message_id": 9, "text": "new", "parse_mode": "HTML"})
            ),
            (
                "deleteMessage".to_owned(),
                json!({"chat_id": "5", "message_id": 9})
            ),
            (
                "setMessageReaction".to_owned(),
                json!({"chat_id": "5", "message_id": 9, "is_big": true, "reaction": [
                 {"type": "emoji", "emoji": "👍"}, {"type": "emoji", "emoji": "🔥"}]})
            ),
            (
                "setMessageReaction".to_owned(),
                json!({"chat_id": "5", "message_id": 9, "reaction": []})
            ),
            (
                "sendChatAction".to_owned(),
                json!({"chat_id": "5", "action": "upload_photo"})
            ),
        ]
    );
}

#[tokio::test]
async fn api_errors_are_structured_and_hide_the_token() {
    let server = Server::start().await;
    let kit = server.kit();
    let out = kit
        .call("telegram__send", json!({"chatId": "404", "text": "x"}))
        .await;
    let err = out.assert_error("E_TELEGRAM_API");
    assert_eq!(
        err.message(),
        "[telegram] sendMessage failed (code 400): Bad Request: chat not found"
    );
    assert!(err.suggestion().unwrap().contains("chatId"));
    assert_no_token(&out);

    let out = kit
        .call(
            "telegram__send",
            json!({"chatId": 1, "text": "x", "token": "999:WRONG"}),
        )
        .await;
    let err = out.assert_error("E_TELEGRAM_API");
    assert!(
        err.message().contains("(code 401): Unauthorized"),
        "{}",
        err.message()
    );
    assert!(err.suggestion().unwrap().contains("TELEGRAM_BOT_TOKEN"));
    assert_eq!(server.requests()[1].0, "/bot999:WRONG/sendMessage");
}

#[tokio::test]
async fn rate_limit_is_retried_after_retry_after() {
    let server = Server::start().await;
    let kit = server.kit();
    let started = Instant::now();
    let out = kit
        .call("telegram__setChatAction", json!({"chatId": "limited-once"}))
        .await;
    assert_eq!(out.assert_ok()["action"], "typing");
    assert!(
        started.elapsed() >= Duration::from_millis(950),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn rate_limit_longer_than_the_policy_fails_at_once() {
    let server = Server::start().await;
    let kit = server.kit();
    let started = Instant::now();
    let out = kit
        .call(
            "telegram__send",
            json!({"chatId": "limited-long", "text": "x"}),
        )
        .await;
    let err = out.assert_error("E_TELEGRAM_RATE_LIMITED");
    assert!(
        err.message().contains("retry after 120 s"),
        "{}",
        err.message()
    );
    assert!(err.suggestion().unwrap().contains("120"));
    assert!(started.elapsed() < Duration::from_secs(2));
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn download_file_saves_inside_the_workdir() {
    let server = Server::start().await;
    let kit = server.kit();
    let out = kit
        .call(
            "telegram__downloadFile",
            json!({"fileId": "F1", "savePath": "inbox/photo.jpg"}),
        )
        .await;
    let saved = kit.workdir().join("inbox/photo.jpg");
    out.assert_output(json!({
        "ok": true, "fileId": "F1", "fileUniqueId": "U1", "filePath": "photos/file_1.jpg",
        "fileSize": 5,
        "downloadUrl": format!("{}/file/bot<redacted>/photos/file_1.jpg", server.base),
        "contentType": "image/jpeg", "sizeBytes": 5,
        "savedPath": saved.to_string_lossy(),
        "base64": "aGVsbG8=", "dataUrl": "data:image/jpeg;base64,aGVsbG8=",
    }));
    assert_eq!(std::fs::read(&saved).unwrap(), b"hello");
    assert_no_token(&out);

    let bare = kit
        .call(
            "telegram__downloadFile",
            json!({"fileId": "F1", "includeBase64": false}),
        )
        .await;
    let bare = bare.assert_ok();
    assert_eq!(bare["base64"], Value::Null);
    assert_eq!(bare["dataUrl"], Value::Null);
    assert_eq!(bare["savedPath"], Value::Null);
}

#[tokio::test]
async fn download_file_is_confined_and_capped() {
    let server = Server::start().await;
    let kit = server.kit();
    for path in ["../escape.jpg", "/tmp/goondan-escape.jpg"] {
        let out = kit
            .call(
                "telegram__downloadFile",
                json!({"fileId": "F1", "savePath": path}),
            )
            .await;
        out.assert_error("E_PATH_OUTSIDE_WORKDIR");
    }
    assert!(!kit.workdir().parent().unwrap().join("escape.jpg").exists());
    let big = kit
        .call(
            "telegram__downloadFile",
            json!({"fileId": "BIG", "maxBytes": 1000}),
        )
        .await;
    big.assert_error("E_TELEGRAM_FILE_TOO_LARGE");
    let over = kit
        .call(
            "telegram__downloadFile",
            json!({"fileId": "F1", "maxBytes": 20_000_001}),
        )
        .await;
    over.assert_error("E_TELEGRAM_INVALID_INPUT");
}

#[tokio::test]
async fn token_and_base_url_come_from_configuration() {
    let server = Server::start().await;
    let kit = server.kit();
    let out = kit
        .call(
            "telegram__send",
            json!({"chatId": 1, "text": "x", "apiBaseUrl": "http://127.0.0.2:9"}),
        )
        .await;
    out.assert_error("E_TELEGRAM_BASE_URL");
    let same = kit
        .call(
            "telegram__send",
            json!({"chatId": 1, "text": "x", "apiBaseUrl": format!("{}/", server.base)}),
        )
        .await;
    same.assert_ok();
    assert_eq!(server.requests().len(), 1);

    let mut policy = server.policy();
    policy.token = None;
    let no_token = TestKit::with_tools([Telegram::new(policy).into_tool()]).unwrap();
    let out = no_token
        .call("telegram__send", json!({"chatId": 1, "text": "x"}))
        .await;
    let err = out.assert_error("E_TELEGRAM_TOKEN_MISSING");
    assert!(
        err.suggestion()
            .unwrap()
            .contains("GOONDAN_TEST_TELEGRAM_TOKEN_NEVER_SET")
    );
    assert_eq!(server.requests().len(), 1);
}

#[test]
fn policy_debug_hides_the_token() {
    let policy = TelegramPolicy::default().token(TOKEN);
    assert!(!format!("{policy:?}").contains("SECRET"));
}
