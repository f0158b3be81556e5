//! One Slack Web API session: `POST {base}/{method}` with `Authorization: Bearer {token}`,
//! a JSON body for write methods and a form body for the `conversations.*` read methods
//! (which do not take JSON), the documented answer `{ok, ...}` or `{ok: false, error}`, and
//! retries after `429` as its `Retry-After` header says, within the [`RetryPolicy`](crate::web_api::RetryPolicy).

use std::time::Duration;

use bytes::Bytes;
use goondan_runtime::ToolError;
use http::Method;
use http::header::{self, HeaderMap, HeaderValue};
use serde_json::{Map, Value};

use super::codes;
use crate::http_fetch::target::Target;
use crate::web_api::connection::Connection;
use crate::web_api::{Outgoing, Reply, form_encode};

/// The most bytes of a method's JSON answer that are read.
const ANSWER_CAP: usize = 8 * 1024 * 1024;

/// How a method's arguments are sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Encoding {
    /// `application/json; charset=utf-8` (write methods).
    Json,
    /// `application/x-www-form-urlencoded` (read methods).
    Form,
}

/// What a call needs to reach the API.
pub(super) struct Session<'a>(pub(super) Connection<'a>);

impl Session<'_> {
    fn auth(&self) -> Result<HeaderMap, ToolError> {
        let mut headers = HeaderMap::new();
        let mut value =
            HeaderValue::from_str(&format!("Bearer {}", self.0.token)).map_err(|_| {
                super::invalid(
                    "the Slack token has characters a token never has".to_owned(),
                    "a bot token looks like `xoxb-...`; check `token` or the environment",
                )
            })?;
        value.set_sensitive(true);
        headers.insert(header::AUTHORIZATION, value);
        Ok(headers)
    }

    /// Calls `method` with `args` and returns the whole answer object.
    pub(super) async fn call(
        &self,
        method: &str,
        args: Map<String, Value>,
        encoding: Encoding,
    ) -> Result<Map<String, Value>, ToolError> {
        let body = match encoding {
            Encoding::Json => (
                Bytes::from(serde_json::to_vec(&args)?),
                "application/json; charset=utf-8",
            ),
            Encoding::Form => {
                let pairs: Vec<(&str, String)> = args
                    .iter()
                    .map(|(k, v)| {
                        let text = match v {
                            Value::String(s) => s.clone(),
                            other => other.to_string(),
                        };
                        (k.as_str(), text)
                    })
                    .collect();
                (
                    Bytes::from(form_encode(&pairs)),
                    "application/x-www-form-urlencoded",
                )
            }
        };
        let out = Outgoing {
            method: Method::POST,
            target: self.0.base.join(method),
            headers: self.auth()?,
            body: Some(body),
            cap: ANSWER_CAP,
        };
        let (reply, answer) = self
            .0
            .call(method, &out, |reply| {
                let answer = match reply.json() {
                    Some(Value::Object(map)) => map,
                    _ => Map::new(),
                };
                let limited = reply.status == 429
                    || answer.get("error").and_then(Value::as_str) == Some("ratelimited");
                let after = limited.then(|| reply.retry_after().unwrap_or(Duration::from_secs(1)));
                (answer, after)
            })
            .await?;
        if (200..300).contains(&reply.status) && answer.get("ok") == Some(&Value::Bool(true)) {
            return Ok(answer);
        }
        Err(api_error(method, &reply, &answer))
    }

    /// `GET target` with the token, at most `cap` bytes; redirects are not followed.
    pub(super) async fn download(&self, target: Target, cap: usize) -> Result<Reply, ToolError> {
        let out = Outgoing {
            method: Method::GET,
            target,
            headers: self.auth()?,
            body: None,
            cap,
        };
        self.0
            .download(&out, |status| {
                if (300..400).contains(&status) {
                    "Slack redirects file downloads it does not authorise: the token needs the \
                     `files:read` scope and access to the file"
                } else {
                    "use the file's `url_private_download` (or `url_private`) from the message"
                }
            })
            .await
    }
}

fn api_error(method: &str, reply: &Reply, answer: &Map<String, Value>) -> ToolError {
    let reason = answer
        .get("error")
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|e| !e.is_empty())
        .map_or_else(|| reply.describe(), str::to_owned);
    let suggestion = match reason.as_str() {
        "channel_not_found" => {
            "check `channelId` (an id like `C0123456789`, not a name); the bot must see the channel"
                .to_owned()
        }
        "not_in_channel" => "invite the bot to the channel first (`/invite @bot`)".to_owned(),
        "invalid_auth" | "not_authed" | "account_inactive" | "token_revoked" => {
            "the token is not accepted: check `token` or SLACK_BOT_TOKEN".to_owned()
        }
        "missing_scope" => format!(
            "the token lacks a scope{}; add it to the Slack app and reinstall it",
            answer
                .get("needed")
                .and_then(Value::as_str)
                .map(|n| format!(" (`{n}`)"))
                .unwrap_or_default()
        ),
        "message_not_found" | "thread_not_found" => {
            "check `messageTs`/`threadTs`: use the `ts` Slack returned, e.g. `1700000000.000100`"
                .to_owned()
        }
        "cant_update_message" | "cant_delete_message" => {
            "a bot can only edit or delete its own messages".to_owned()
        }
        "already_reacted" => "the reaction is already there; nothing to do".to_owned(),
        "invalid_name" => "use an emoji name such as `thumbsup`, without spaces".to_owned(),
        _ => "read the Slack error code above; retry later if it is temporary".to_owned(),
    };
    let error = ToolError::new(format!("[slack] {method} failed: {reason}"))
        .with_code(codes::API)
        .with_name("SlackApiError")
        .with_suggestion(suggestion)
        .with_help_url(format!("https://api.slack.com/methods/{method}"));
    // Slack's own errors that pass, and server errors.
    let passing = matches!(
        reason.as_str(),
        "ratelimited"
            | "internal_error"
            | "fatal_error"
            | "service_unavailable"
            | "request_timeout"
    ) || reply.status == 429
        || reply.status >= 500;
    if passing { error.retryable() } else { error }
}
