//! One Telegram Bot API session: `POST {base}/bot{token}/{method}` with a JSON payload, the
//! documented answer `{ok, result}` or `{ok: false, error_code, description, parameters}`,
//! and retries after `429 Too Many Requests` as `parameters.retry_after` (or `Retry-After`)
//! says, within the [`RetryPolicy`].

use std::time::Duration;

use bytes::Bytes;
use goondan_runtime::ToolError;
use http::{HeaderMap, Method};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::codes;
use crate::web_api::{ApiBase, Outgoing, Reply, RetryPolicy, WebError, exchange, pause};

/// The most bytes of a method's JSON answer that are read.
const ANSWER_CAP: usize = 4 * 1024 * 1024;

/// What a call needs to reach the API.
pub(super) struct Session<'a> {
    pub(super) base: ApiBase,
    pub(super) token: String,
    pub(super) timeout: Duration,
    pub(super) retry: RetryPolicy,
    pub(super) cancel: &'a CancellationToken,
}

impl Session<'_> {
    /// Calls `method` with `payload` and returns its `result`.
    pub(super) async fn call(&self, method: &str, payload: Value) -> Result<Value, ToolError> {
        let body = Bytes::from(serde_json::to_vec(&payload)?);
        let out = Outgoing {
            method: Method::POST,
            target: self.base.join(&format!("bot{}/{method}", self.token)),
            headers: HeaderMap::new(),
            body: Some((body, "application/json")),
            cap: ANSWER_CAP,
        };
        let mut retries = 0;
        loop {
            let reply = exchange(&out, self.timeout, self.cancel)
                .await
                .map_err(|e| request_error(method, &e))?;
            let answer = Answer::read(&reply);
            if let Some(after) = answer.retry_after {
                if self.retry.allows(retries, after) {
                    pause(after, self.cancel)
                        .await
                        .map_err(|e| request_error(method, &e))?;
                    retries += 1;
                    continue;
                }
                return Err(rate_limited(method, after, retries));
            }
            if (200..300).contains(&reply.status) && answer.ok {
                return Ok(answer.result);
            }
            return Err(api_error(method, &reply, &answer));
        }
    }

    /// Downloads `file_path` from `{base}/file/bot{token}/{file_path}`, at most `cap` bytes.
    pub(super) async fn download(&self, file_path: &str, cap: usize) -> Result<Reply, ToolError> {
        let out = Outgoing {
            method: Method::GET,
            target: self.base.join(&format!(
                "file/bot{}/{}",
                self.token,
                file_path.trim_start_matches('/')
            )),
            headers: HeaderMap::new(),
            body: None,
            cap,
        };
        let reply = exchange(&out, self.timeout, self.cancel)
            .await
            .map_err(|e| match e {
                WebError::TooLarge { cap } => ToolError::new(format!(
                    "the Telegram file is larger than maxBytes ({cap} bytes)"
                ))
                .with_code(codes::FILE_TOO_LARGE)
                .with_name("FileTooLargeError")
                .with_suggestion(
                    "raise `maxBytes` (at most 20000000), or do not download this file",
                ),
                other => request_error("file download", &other),
            })?;
        if !(200..300).contains(&reply.status) {
            return Err(ToolError::new(format!(
                "[telegram] file download failed: {}",
                reply.describe()
            ))
            .with_code(codes::DOWNLOAD)
            .with_name("TelegramDownloadError")
            .with_suggestion(
                "file ids expire; get a fresh `fileId` from a new message and retry",
            ));
        }
        Ok(reply)
    }

    /// The download URL as the model may see it: the token replaced by `<redacted>`.
    pub(super) fn shown_file_url(&self, file_path: &str) -> String {
        format!(
            "{}/file/bot<redacted>/{}",
            self.base.as_str(),
            file_path.trim_start_matches('/')
        )
    }
}

/// The fields of a Bot API answer that matter here.
struct Answer {
    ok: bool,
    result: Value,
    description: Option<String>,
    error_code: Option<i64>,
    retry_after: Option<Duration>,
}

impl Answer {
    fn read(reply: &Reply) -> Self {
        let body = reply.json().unwrap_or(Value::Null);
        let error_code = body.get("error_code").and_then(Value::as_i64);
        let limited = reply.status == 429 || error_code == Some(429);
        let retry_after = limited.then(|| {
            body.pointer("/parameters/retry_after")
                .and_then(Value::as_u64)
                .map(Duration::from_secs)
                .or_else(|| reply.retry_after())
                .unwrap_or(Duration::from_secs(1))
        });
        Self {
            ok: body.get("ok") == Some(&Value::Bool(true)),
            description: body
                .get("description")
                .and_then(Value::as_str)
                .map(str::trim)
                .filter(|d| !d.is_empty())
                .map(str::to_owned),
            result: body.get("result").cloned().unwrap_or(Value::Null),
            error_code,
            retry_after,
        }
    }
}

fn api_error(method: &str, reply: &Reply, answer: &Answer) -> ToolError {
    let description = answer
        .description
        .clone()
        .unwrap_or_else(|| reply.describe());
    let code_suffix = answer
        .error_code
        .map(|c| format!(" (code {c})"))
        .unwrap_or_default();
    let status = answer
        .error_code
        .and_then(|c| u16::try_from(c).ok())
        .unwrap_or(reply.status);
    let suggestion = match status {
        401 | 404 => {
            "the bot token is not accepted: check `token` or TELEGRAM_BOT_TOKEN (the token \
             @BotFather gave)"
        }
        403 => "the bot cannot act in this chat: it was blocked, removed, or lacks the right",
        400 => {
            "check `chatId`, `messageId` and the text (formatting entities must match \
             `parseMode`); the description says which"
        }
        _ => "retry later; if it persists, read the description above",
    };
    ToolError::new(format!(
        "[telegram] {method} failed{code_suffix}: {description}"
    ))
    .with_code(codes::API)
    .with_name("TelegramApiError")
    .with_suggestion(suggestion)
    .with_help_url("https://core.telegram.org/bots/api#making-requests")
}

fn rate_limited(method: &str, after: Duration, retries: u32) -> ToolError {
    ToolError::new(format!(
        "[telegram] {method} is rate limited: retry after {} s ({retries} retries made)",
        after.as_secs()
    ))
    .with_code(codes::RATE_LIMITED)
    .with_name("TelegramRateLimitError")
    .with_suggestion(format!(
        "wait {} seconds (`wait__seconds`) and call again; send fewer messages per chat",
        after.as_secs()
    ))
}

pub(super) fn request_error(method: &str, err: &WebError) -> ToolError {
    let (code, name, suggestion) = match err {
        WebError::Timeout { .. } => (
            codes::TIMEOUT,
            "TimeoutError",
            "retry with a larger `timeoutMs`",
        ),
        WebError::Cancelled => (
            codes::CANCELLED,
            "CancelledError",
            "send it again if it is still needed",
        ),
        _ => (
            codes::REQUEST,
            "TelegramRequestError",
            "check the network and the API base URL; the Bot API may be unreachable",
        ),
    };
    ToolError::new(format!("[telegram] {method} request failed: {err}"))
        .with_code(code)
        .with_name(name)
        .with_suggestion(suggestion)
}
