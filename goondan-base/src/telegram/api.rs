//! One Telegram Bot API session: `POST {base}/bot{token}/{method}` with a JSON payload, the
//! documented answer `{ok, result}` or `{ok: false, error_code, description, parameters}`,
//! and retries after `429 Too Many Requests` as `parameters.retry_after` (or `Retry-After`)
//! says, within the [`RetryPolicy`](crate::web_api::RetryPolicy).

use std::time::Duration;

use bytes::Bytes;
use goondan_runtime::ToolError;
use http::{HeaderMap, Method};
use serde_json::Value;

use super::codes;
use crate::web_api::connection::Connection;
use crate::web_api::{Outgoing, Reply};

/// The most bytes of a method's JSON answer that are read.
const ANSWER_CAP: usize = 4 * 1024 * 1024;

/// What a call needs to reach the API.
pub(super) struct Session<'a>(pub(super) Connection<'a>);

impl Session<'_> {
    /// Calls `method` with `payload` and returns its `result`.
    pub(super) async fn call(&self, method: &str, payload: Value) -> Result<Value, ToolError> {
        let body = Bytes::from(serde_json::to_vec(&payload)?);
        let out = Outgoing {
            method: Method::POST,
            target: self.0.base.join(&format!("bot{}/{method}", self.0.token)),
            headers: HeaderMap::new(),
            body: Some((body, "application/json")),
            cap: ANSWER_CAP,
        };
        let (reply, answer) = self
            .0
            .call(method, &out, |reply| {
                let answer = Answer::read(reply);
                let after = answer.retry_after;
                (answer, after)
            })
            .await?;
        if (200..300).contains(&reply.status) && answer.ok {
            return Ok(answer.result);
        }
        Err(api_error(method, &reply, &answer))
    }

    /// Downloads `file_path` from `{base}/file/bot{token}/{file_path}`, at most `cap` bytes.
    pub(super) async fn download(&self, file_path: &str, cap: usize) -> Result<Reply, ToolError> {
        let out = Outgoing {
            method: Method::GET,
            target: self.0.base.join(&format!(
                "file/bot{}/{}",
                self.0.token,
                file_path.trim_start_matches('/')
            )),
            headers: HeaderMap::new(),
            body: None,
            cap,
        };
        self.0
            .download(
                &out,
                |_| "file ids expire; get a fresh `fileId` from a new message and retry",
            )
            .await
    }

    /// The download URL as the model may see it: the token replaced by `<redacted>`.
    pub(super) fn shown_file_url(&self, file_path: &str) -> String {
        format!(
            "{}/file/bot<redacted>/{}",
            self.0.base.as_str(),
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
    let error = ToolError::new(format!(
        "[telegram] {method} failed{code_suffix}: {description}"
    ))
    .with_code(codes::API)
    .with_name("TelegramApiError")
    .with_suggestion(suggestion)
    .with_help_url("https://core.telegram.org/bots/api#making-requests");
    // A server error or a rate limit may pass; the other answers will not change.
    if status == 429 || status >= 500 {
        error.retryable()
    } else {
        error
    }
}
