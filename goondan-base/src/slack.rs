//! `slack`: a Slack Web API client with upstream's exports.
//!
//! - `slack__send {channelId, text, threadTs?, mrkdwn?, unfurlLinks?, unfurlMedia?,
//!   replyBroadcast?}` -> `{ok, channelId, messageTs, text}` (`chat.postMessage`)
//! - `slack__read {channelId, messageTs?, threadTs?, latest?, oldest?, inclusive?, limit?,
//!   cursor?}` -> `{ok, channelId, method, messageTs, threadTs, count, found, messages,
//!   hasMore, nextCursor}` (`conversations.history`, or `conversations.replies` with
//!   `threadTs`)
//! - `slack__edit {channelId, messageTs, text, mrkdwn?}` -> `{ok, channelId, messageTs,
//!   edited}` (`chat.update`)
//! - `slack__delete {channelId, messageTs}` -> `{ok, channelId, messageTs, deleted}`
//!   (`chat.delete`)
//! - `slack__react {channelId, messageTs, emoji?, emojis?}` -> `{ok, channelId, messageTs,
//!   emojis, reactionCount}` (`reactions.add`, once per emoji)
//! - `slack__downloadFile {url, maxBytes? = 3000000, includeBase64? = true, includeDataUrl? =
//!   true, savePath?}` -> `{ok, url, contentType, contentLength, sizeBytes, etag,
//!   contentDisposition, savedPath, base64, dataUrl}`
//!
//! Every export also takes `token?`, `timeoutMs? = 15000` and `apiBaseUrl?`. The token comes
//! from the call, else [`SlackPolicy::token`], else the first of [`TOKEN_ENV_KEYS`] that is
//! set, and is never logged. `apiBaseUrl` must name the configured base URL or one of
//! [`SlackPolicy::allowed_api_base_urls`]; a download URL's host must be one of
//! [`SlackPolicy::download_hosts`] (default `files.slack.com`), so the token never goes to a
//! host the configuration does not name. A `429` answer is retried after its `Retry-After`,
//! within [`SlackPolicy::retry`]. `savePath` is confined to the workdir.

mod api;

use std::sync::Arc;
use std::time::Duration;

use goondan_runtime::{ToolContext, ToolError, tool};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use self::api::{Encoding, Session};
use crate::http_fetch::target::{Host, Target};
use crate::web_api::connection::{Asked, Connection, impl_asked, settings_of};
use crate::web_api::download::{self, Wanted};
use crate::web_api::service::{Service, any_token, codes_of};
use crate::web_api::{RetryPolicy, Secret};

/// Error codes of `slack`.
pub mod codes {
    /// No token in the call, the configuration or the environment.
    pub const TOKEN_MISSING: &str = "E_SLACK_TOKEN_MISSING";
    /// An input value is not accepted.
    pub const INVALID_INPUT: &str = "E_SLACK_INVALID_INPUT";
    /// `apiBaseUrl` is not the configured base URL, or the configured one is invalid.
    pub const BASE_URL: &str = "E_SLACK_BASE_URL";
    /// A download URL names a host the configuration does not allow.
    pub const DOWNLOAD_HOST: &str = "E_SLACK_DOWNLOAD_HOST";
    /// The Web API answered `ok: false`.
    pub const API: &str = "E_SLACK_API";
    /// Slack is rate limiting and the wait is longer than the policy allows.
    pub const RATE_LIMITED: &str = "E_SLACK_RATE_LIMITED";
    /// The request could not be made (network, DNS, TLS).
    pub const REQUEST: &str = "E_SLACK_REQUEST";
    /// The request took longer than `timeoutMs`.
    pub const TIMEOUT: &str = "E_SLACK_TIMEOUT";
    /// The call was cancelled.
    pub const CANCELLED: &str = "E_SLACK_CANCELLED";
    /// The file is larger than `maxBytes`.
    pub const FILE_TOO_LARGE: &str = "E_SLACK_FILE_TOO_LARGE";
    /// The file could not be downloaded.
    pub const DOWNLOAD: &str = "E_SLACK_DOWNLOAD";
    /// The file could not be saved.
    pub const SAVE: &str = "E_SLACK_SAVE";
}

/// How the shared web API code names `slack`'s errors.
static SERVICE: Service = Service {
    tag: "slack",
    title: "Slack",
    api: "Web API",
    remote: "Slack",
    fewer: "make fewer calls",
    check_token: any_token,
    codes: codes_of!(codes),
};

/// The official Web API base URL.
pub const API_BASE_URL: &str = "https://slack.com/api";

/// The environment variables read for the token, in order (upstream's list).
pub const TOKEN_ENV_KEYS: &[&str] = &["SLACK_BOT_TOKEN", "SLACK_TOKEN", "BRAIN_SLACK_BOT_TOKEN"];

/// How `slack` reaches the Web API.
#[derive(Debug, Clone)]
pub struct SlackPolicy {
    /// The base URL used when the call gives none (default [`API_BASE_URL`]).
    pub api_base_url: String,
    /// Other base URLs a call may name in `apiBaseUrl` (default none).
    pub allowed_api_base_urls: Vec<String>,
    /// Hosts `downloadFile` may fetch from with the token (default `files.slack.com`).
    pub download_hosts: Vec<String>,
    /// The token used when the call gives none (default: read the environment).
    pub token: Option<Secret>,
    /// The environment variables read for the token (default [`TOKEN_ENV_KEYS`]).
    pub token_env: Vec<String>,
    /// Retries after rate limits.
    pub retry: RetryPolicy,
    /// Timeout of one request when the call sets none (15 s, as upstream).
    pub default_timeout: Duration,
    /// The largest `timeoutMs` accepted (120 s).
    pub max_timeout: Duration,
    /// `maxBytes` of a download when the call sets none (3000000, as upstream).
    pub default_max_bytes: u64,
    /// The largest `maxBytes` accepted (20000000, as upstream).
    pub max_bytes_limit: u64,
}

impl Default for SlackPolicy {
    fn default() -> Self {
        Self {
            api_base_url: API_BASE_URL.to_owned(),
            allowed_api_base_urls: Vec::new(),
            download_hosts: vec!["files.slack.com".to_owned()],
            token: None,
            token_env: TOKEN_ENV_KEYS.iter().map(|k| (*k).to_owned()).collect(),
            retry: RetryPolicy::default(),
            default_timeout: Duration::from_secs(15),
            max_timeout: Duration::from_secs(120),
            default_max_bytes: 3_000_000,
            max_bytes_limit: 20_000_000,
        }
    }
}

impl SlackPolicy {
    /// Uses `url` as the base URL (a test server, or a proxy).
    #[must_use]
    pub fn api_base_url(mut self, url: impl Into<String>) -> Self {
        self.api_base_url = url.into();
        self
    }

    /// Uses `token` when the call gives none.
    #[must_use]
    pub fn token(mut self, token: impl Into<String>) -> Self {
        self.token = Some(Secret::new(token));
        self
    }

    /// Also lets `downloadFile` fetch from `host`.
    #[must_use]
    pub fn download_host(mut self, host: impl Into<String>) -> Self {
        self.download_hosts.push(host.into().to_ascii_lowercase());
        self
    }

    /// Retries rate-limited calls as `retry` says.
    #[must_use]
    pub fn retry(mut self, retry: RetryPolicy) -> Self {
        self.retry = retry;
        self
    }
}

/// Input of `slack__send`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SendInput {
    /// Slack bot token. Optional when SLACK_BOT_TOKEN/SLACK_TOKEN is set.
    #[serde(default)]
    pub token: Option<String>,
    /// Target channel id to post the message to.
    pub channel_id: String,
    /// Message text content to post.
    pub text: String,
    /// Optional parent thread timestamp for thread replies.
    #[serde(default)]
    pub thread_ts: Option<String>,
    /// Enable Slack mrkdwn parsing for the message text.
    #[serde(default)]
    pub mrkdwn: Option<bool>,
    /// Enable automatic link unfurling.
    #[serde(default)]
    pub unfurl_links: Option<bool>,
    /// Enable automatic media unfurling.
    #[serde(default)]
    pub unfurl_media: Option<bool>,
    /// Broadcast a thread reply to the channel timeline.
    #[serde(default)]
    pub reply_broadcast: Option<bool>,
    /// Slack API timeout in milliseconds (default 15000).
    #[serde(default)]
    pub timeout_ms: Option<u64>,
    /// Optional Slack API base URL override (must be a configured one).
    #[serde(default)]
    pub api_base_url: Option<String>,
}

/// Output of `slack__send`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SendOutput {
    /// Always `true`.
    pub ok: bool,
    /// The channel posted to.
    pub channel_id: String,
    /// The new message's timestamp (its id).
    pub message_ts: Option<String>,
    /// The message's text as Slack stored it.
    pub text: String,
}

/// Input of `slack__read`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ReadInput {
    /// Slack bot token. Optional when SLACK_BOT_TOKEN/SLACK_TOKEN is set.
    #[serde(default)]
    pub token: Option<String>,
    /// Target channel id to read from.
    pub channel_id: String,
    /// Specific message timestamp to find in history.
    #[serde(default)]
    pub message_ts: Option<String>,
    /// Thread root timestamp. When set, reads the thread's replies.
    #[serde(default)]
    pub thread_ts: Option<String>,
    /// Upper time boundary.
    #[serde(default)]
    pub latest: Option<String>,
    /// Lower time boundary.
    #[serde(default)]
    pub oldest: Option<String>,
    /// Include boundary messages when latest/oldest are set.
    #[serde(default)]
    pub inclusive: Option<bool>,
    /// Maximum messages to return (1 to 1000; default 20, or 1 with `messageTs`).
    #[serde(default)]
    pub limit: Option<u64>,
    /// Pagination cursor for the next page.
    #[serde(default)]
    pub cursor: Option<String>,
    /// Slack API timeout in milliseconds (default 15000).
    #[serde(default)]
    pub timeout_ms: Option<u64>,
    /// Optional Slack API base URL override (must be a configured one).
    #[serde(default)]
    pub api_base_url: Option<String>,
}

/// Output of `slack__read`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReadOutput {
    /// Always `true`.
    pub ok: bool,
    /// The channel read.
    pub channel_id: String,
    /// `conversations.history` or `conversations.replies`.
    pub method: String,
    /// The message looked for, if any.
    pub message_ts: Option<String>,
    /// The thread read, if any.
    pub thread_ts: Option<String>,
    /// The number of messages returned.
    pub count: u64,
    /// The message whose `ts` is `messageTs`, when found.
    pub found: Option<Map<String, Value>>,
    /// The messages, as Slack returned them.
    pub messages: Vec<Map<String, Value>>,
    /// Whether more pages exist.
    pub has_more: bool,
    /// The cursor of the next page.
    pub next_cursor: Option<String>,
}

/// Input of `slack__edit`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct EditInput {
    /// Slack bot token. Optional when SLACK_BOT_TOKEN/SLACK_TOKEN is set.
    #[serde(default)]
    pub token: Option<String>,
    /// Target channel id containing the message.
    pub channel_id: String,
    /// Timestamp of the message to edit.
    pub message_ts: String,
    /// New message text content.
    pub text: String,
    /// Enable Slack mrkdwn parsing for the updated text.
    #[serde(default)]
    pub mrkdwn: Option<bool>,
    /// Slack API timeout in milliseconds (default 15000).
    #[serde(default)]
    pub timeout_ms: Option<u64>,
    /// Optional Slack API base URL override (must be a configured one).
    #[serde(default)]
    pub api_base_url: Option<String>,
}

/// Output of `slack__edit`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct EditOutput {
    /// Always `true`.
    pub ok: bool,
    /// The channel.
    pub channel_id: String,
    /// The message's timestamp.
    pub message_ts: String,
    /// Always `true`.
    pub edited: bool,
}

/// Input of `slack__delete`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DeleteInput {
    /// Slack bot token. Optional when SLACK_BOT_TOKEN/SLACK_TOKEN is set.
    #[serde(default)]
    pub token: Option<String>,
    /// Target channel id containing the message.
    pub channel_id: String,
    /// Timestamp of the message to delete.
    pub message_ts: String,
    /// Slack API timeout in milliseconds (default 15000).
    #[serde(default)]
    pub timeout_ms: Option<u64>,
    /// Optional Slack API base URL override (must be a configured one).
    #[serde(default)]
    pub api_base_url: Option<String>,
}

/// Output of `slack__delete`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DeleteOutput {
    /// Always `true`.
    pub ok: bool,
    /// The channel.
    pub channel_id: String,
    /// The deleted message's timestamp.
    pub message_ts: String,
    /// Always `true`.
    pub deleted: bool,
}

/// Input of `slack__react`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ReactInput {
    /// Slack bot token. Optional when SLACK_BOT_TOKEN/SLACK_TOKEN is set.
    #[serde(default)]
    pub token: Option<String>,
    /// Target channel id containing the message.
    pub channel_id: String,
    /// Timestamp of the message to react to.
    pub message_ts: String,
    /// Single emoji name to add, with or without surrounding colons.
    #[serde(default)]
    pub emoji: Option<String>,
    /// Multiple emoji names to add, each with or without surrounding colons.
    #[serde(default)]
    pub emojis: Option<Vec<String>>,
    /// Slack API timeout in milliseconds (default 15000).
    #[serde(default)]
    pub timeout_ms: Option<u64>,
    /// Optional Slack API base URL override (must be a configured one).
    #[serde(default)]
    pub api_base_url: Option<String>,
}

/// Output of `slack__react`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReactOutput {
    /// Always `true`.
    pub ok: bool,
    /// The channel.
    pub channel_id: String,
    /// The message's timestamp.
    pub message_ts: String,
    /// The emoji names added, without colons.
    pub emojis: Vec<String>,
    /// How many reactions were added.
    pub reaction_count: u64,
}

/// Input of `slack__downloadFile`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DownloadFileInput {
    /// Slack bot token. Optional when SLACK_BOT_TOKEN/SLACK_TOKEN is set.
    #[serde(default)]
    pub token: Option<String>,
    /// Download URL to fetch (a file's `url_private_download` or `url_private`).
    pub url: String,
    /// Maximum downloaded bytes allowed (default 3000000, at most 20000000).
    #[serde(default)]
    pub max_bytes: Option<u64>,
    /// Include base64-encoded content in the result (default true).
    #[serde(default)]
    pub include_base64: Option<bool>,
    /// Include a data URL when base64 is included (default true).
    #[serde(default)]
    pub include_data_url: Option<bool>,
    /// Optional path relative to the workdir to save the downloaded file.
    #[serde(default)]
    pub save_path: Option<String>,
    /// Slack API timeout in milliseconds (default 15000).
    #[serde(default)]
    pub timeout_ms: Option<u64>,
    /// Accepted for upstream compatibility; a download goes to `url`.
    #[serde(default)]
    pub api_base_url: Option<String>,
}

/// Output of `slack__downloadFile`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DownloadFileOutput {
    /// Always `true`.
    pub ok: bool,
    /// The URL downloaded.
    pub url: String,
    /// The `Content-Type` of the download.
    pub content_type: Option<String>,
    /// The `Content-Length` the server announced.
    pub content_length: Option<u64>,
    /// The bytes downloaded.
    pub size_bytes: u64,
    /// The `ETag`.
    pub etag: Option<String>,
    /// The `Content-Disposition`.
    pub content_disposition: Option<String>,
    /// The absolute path written, when `savePath` was given.
    pub saved_path: Option<String>,
    /// The content, base64-encoded, unless `includeBase64` is false.
    pub base64: Option<String>,
    /// `data:{type};base64,...`, unless `includeDataUrl` or `includeBase64` is false.
    pub data_url: Option<String>,
}

impl_asked!(
    SendInput,
    ReadInput,
    EditInput,
    DeleteInput,
    ReactInput,
    DownloadFileInput
);

/// The `slack` tool. `Slack::default()` talks to the official Web API with a token from the
/// environment.
#[derive(Debug, Clone, Default)]
pub struct Slack {
    policy: Arc<SlackPolicy>,
}

impl Slack {
    /// The resource name.
    pub const NAME: &'static str = "slack";
}

/// Send, read, edit, delete and react to Slack messages, download Slack files.
#[tool(name = "slack", error_message_limit = 1000)]
impl Slack {
    /// A `slack` with `policy`.
    pub fn new(policy: SlackPolicy) -> Self {
        Self {
            policy: Arc::new(policy),
        }
    }

    /// Send a Slack message to a channel (or a thread with `threadTs`).
    #[export(open_world)]
    pub async fn send(&self, ctx: &ToolContext, input: SendInput) -> Result<SendOutput, ToolError> {
        let session = self.session(ctx, input.asked())?;
        let channel = required("channelId", &input.channel_id)?;
        if input.text.is_empty() {
            return Err(invalid(
                "'text' must be a non-empty string".to_owned(),
                "give the message text in `text`",
            ));
        }
        let mut args = Map::new();
        args.insert("channel".into(), json!(channel));
        args.insert("text".into(), json!(input.text));
        put(
            &mut args,
            "thread_ts",
            non_empty(input.thread_ts.as_deref()),
        );
        put(&mut args, "mrkdwn", input.mrkdwn);
        put(&mut args, "unfurl_links", input.unfurl_links);
        put(&mut args, "unfurl_media", input.unfurl_media);
        put(&mut args, "reply_broadcast", input.reply_broadcast);
        let answer = session
            .call("chat.postMessage", args, Encoding::Json)
            .await?;
        Ok(SendOutput {
            ok: true,
            channel_id: text_field(&answer, "channel").unwrap_or(channel),
            message_ts: text_field(&answer, "ts"),
            text: answer
                .get("message")
                .and_then(|m| m.get("text"))
                .and_then(Value::as_str)
                .map(str::trim)
                .filter(|t| !t.is_empty())
                .map_or(input.text, str::to_owned),
        })
    }

    /// Read Slack channel or thread messages; with `messageTs`, find that message.
    #[export(read_only, open_world)]
    pub async fn read(&self, ctx: &ToolContext, input: ReadInput) -> Result<ReadOutput, ToolError> {
        let session = self.session(ctx, input.asked())?;
        let channel = required("channelId", &input.channel_id)?;
        let message_ts = non_empty(input.message_ts.as_deref());
        let thread_ts = non_empty(input.thread_ts.as_deref());
        let limit = input
            .limit
            .unwrap_or(if message_ts.is_some() { 1 } else { 20 });
        if !(1..=1000).contains(&limit) {
            return Err(invalid(
                "'limit' must be between 1 and 1000".to_owned(),
                "give `limit` between 1 and 1000, and page with `cursor`",
            ));
        }
        let method = if thread_ts.is_some() {
            "conversations.replies"
        } else {
            "conversations.history"
        };
        let mut args = Map::new();
        args.insert("channel".into(), json!(channel));
        put(&mut args, "ts", thread_ts.clone());
        put(
            &mut args,
            "latest",
            non_empty(input.latest.as_deref()).or_else(|| message_ts.clone()),
        );
        put(&mut args, "oldest", non_empty(input.oldest.as_deref()));
        put(
            &mut args,
            "inclusive",
            input.inclusive.or(message_ts.as_ref().map(|_| true)),
        );
        args.insert("limit".into(), json!(limit));
        put(&mut args, "cursor", non_empty(input.cursor.as_deref()));
        let answer = session.call(method, args, Encoding::Form).await?;
        let messages: Vec<Map<String, Value>> = answer
            .get("messages")
            .and_then(Value::as_array)
            .map(|items| {
                items
                    .iter()
                    .filter_map(|m| m.as_object().cloned())
                    .collect()
            })
            .unwrap_or_default();
        let found = message_ts.as_ref().and_then(|ts| {
            messages
                .iter()
                .find(|m| m.get("ts").and_then(Value::as_str).map(str::trim) == Some(ts.as_str()))
                .cloned()
        });
        Ok(ReadOutput {
            ok: true,
            channel_id: channel,
            method: method.to_owned(),
            message_ts,
            thread_ts,
            count: messages.len() as u64,
            found,
            messages,
            has_more: answer
                .get("has_more")
                .and_then(Value::as_bool)
                .unwrap_or(false),
            next_cursor: answer
                .get("response_metadata")
                .and_then(|m| m.get("next_cursor"))
                .and_then(Value::as_str)
                .map(str::trim)
                .filter(|c| !c.is_empty())
                .map(str::to_owned),
        })
    }

    /// Edit the text of a Slack message.
    #[export(destructive, open_world)]
    pub async fn edit(&self, ctx: &ToolContext, input: EditInput) -> Result<EditOutput, ToolError> {
        let session = self.session(ctx, input.asked())?;
        let channel = required("channelId", &input.channel_id)?;
        let ts = required("messageTs", &input.message_ts)?;
        if input.text.is_empty() {
            return Err(invalid(
                "'text' must be a non-empty string".to_owned(),
                "give the new text in `text`",
            ));
        }
        let mut args = Map::new();
        args.insert("channel".into(), json!(channel));
        args.insert("ts".into(), json!(ts));
        args.insert("text".into(), json!(input.text));
        put(&mut args, "mrkdwn", input.mrkdwn);
        let answer = session.call("chat.update", args, Encoding::Json).await?;
        Ok(EditOutput {
            ok: true,
            channel_id: text_field(&answer, "channel").unwrap_or(channel),
            message_ts: text_field(&answer, "ts").unwrap_or(ts),
            edited: true,
        })
    }

    /// Delete a Slack message from a channel.
    #[export(destructive, open_world)]
    pub async fn delete(
        &self,
        ctx: &ToolContext,
        input: DeleteInput,
    ) -> Result<DeleteOutput, ToolError> {
        let session = self.session(ctx, input.asked())?;
        let channel = required("channelId", &input.channel_id)?;
        let ts = required("messageTs", &input.message_ts)?;
        let mut args = Map::new();
        args.insert("channel".into(), json!(channel));
        args.insert("ts".into(), json!(ts));
        session.call("chat.delete", args, Encoding::Json).await?;
        Ok(DeleteOutput {
            ok: true,
            channel_id: channel,
            message_ts: ts,
            deleted: true,
        })
    }

    /// Add one or more Slack reactions to a message.
    #[export(open_world)]
    pub async fn react(
        &self,
        ctx: &ToolContext,
        input: ReactInput,
    ) -> Result<ReactOutput, ToolError> {
        let session = self.session(ctx, input.asked())?;
        let channel = required("channelId", &input.channel_id)?;
        let ts = required("messageTs", &input.message_ts)?;
        let names = emoji_names(input.emoji.as_deref(), input.emojis.as_deref())?;
        for name in &names {
            let mut args = Map::new();
            args.insert("channel".into(), json!(channel));
            args.insert("timestamp".into(), json!(ts));
            args.insert("name".into(), json!(name));
            session.call("reactions.add", args, Encoding::Json).await?;
        }
        Ok(ReactOutput {
            ok: true,
            channel_id: channel,
            message_ts: ts,
            reaction_count: names.len() as u64,
            emojis: names,
        })
    }

    /// Download a Slack file or image with the bot token; optionally save it in the workdir.
    #[export(name = "downloadFile", open_world)]
    pub async fn download_file(
        &self,
        ctx: &ToolContext,
        input: DownloadFileInput,
    ) -> Result<DownloadFileOutput, ToolError> {
        let session = self.session(
            ctx,
            Asked {
                api_base_url: None,
                ..input.asked()
            },
        )?;
        let url = required("url", &input.url)?;
        let target = self.download_target(&url)?;
        let max_bytes = self.max_bytes(input.max_bytes)?;
        let reply = session.download(target, max_bytes).await?;
        let header = |name: &str| reply.header(name).map(str::to_owned);
        let content_length = header("content-length").and_then(|v| v.trim().parse().ok());
        let etag = header("etag");
        let content_disposition = header("content-disposition");
        let delivered = download::deliver(
            ctx,
            &SERVICE,
            reply,
            Wanted {
                include_base64: input.include_base64,
                include_data_url: input.include_data_url,
                save_path: input.save_path.as_deref(),
            },
        )
        .await?;
        Ok(DownloadFileOutput {
            ok: true,
            url,
            content_type: delivered.content_type,
            content_length,
            size_bytes: delivered.size_bytes,
            etag,
            content_disposition,
            saved_path: delivered.saved_path,
            base64: delivered.base64,
            data_url: delivered.data_url,
        })
    }
}

impl Slack {
    fn session<'a>(
        &self,
        ctx: &'a ToolContext,
        asked: Asked<'_>,
    ) -> Result<Session<'a>, ToolError> {
        Connection::open(&SERVICE, ctx, &settings_of!(self.policy), asked).map(Session)
    }

    /// `url`, when its host is one the token may go to.
    fn download_target(&self, url: &str) -> Result<Target, ToolError> {
        let refused = |why: String| {
            ToolError::new(why)
                .with_code(codes::DOWNLOAD_HOST)
                .with_name("SlackDownloadHostError")
                .with_suggestion(format!(
                    "download only Slack file URLs (`url_private_download`) on: {}",
                    self.policy.download_hosts.join(", ")
                ))
        };
        let target = Target::parse(url).map_err(|e| refused(e.message().to_owned()))?;
        let host = match &target.host {
            Host::Name(name) => name.clone(),
            Host::Ip(ip) => ip.to_string(),
        };
        if !self
            .policy
            .download_hosts
            .iter()
            .any(|h| h.eq_ignore_ascii_case(&host))
        {
            return Err(refused(format!(
                "`{host}` is not a Slack file host; the bot token is not sent there"
            )));
        }
        Ok(target)
    }

    fn max_bytes(&self, asked: Option<u64>) -> Result<usize, ToolError> {
        let policy = &self.policy;
        SERVICE.max_bytes(asked, policy.default_max_bytes, policy.max_bytes_limit)
    }
}

/// Emoji names without surrounding colons, unique, in order; none is an error, and so is a
/// name with whitespace.
fn emoji_names(emoji: Option<&str>, emojis: Option<&[String]>) -> Result<Vec<String>, ToolError> {
    let mut names: Vec<String> = Vec::new();
    for raw in emoji
        .into_iter()
        .chain(emojis.unwrap_or_default().iter().map(String::as_str))
    {
        let trimmed = raw.trim();
        let name = match trimmed.strip_prefix(':').and_then(|t| t.strip_suffix(':')) {
            Some(inner) if trimmed.len() >= 3 => inner.trim(),
            _ => trimmed,
        };
        if name.is_empty() || names.iter().any(|n| n == name) {
            continue;
        }
        if name.chars().any(char::is_whitespace) {
            return Err(invalid(
                format!("invalid emoji name '{name}': emoji names must not contain whitespace"),
                "use names such as `thumbsup` or `:white_check_mark:`",
            ));
        }
        names.push(name.to_owned());
    }
    if names.is_empty() {
        return Err(invalid(
            "no emoji given".to_owned(),
            "give `emoji` or `emojis` to add a Slack reaction",
        ));
    }
    Ok(names)
}

pub(crate) fn invalid(message: String, suggestion: &str) -> ToolError {
    SERVICE.invalid(message, suggestion)
}

fn required(key: &str, value: &str) -> Result<String, ToolError> {
    non_empty(Some(value)).ok_or_else(|| {
        invalid(
            format!("'{key}' must be a non-empty string"),
            &format!("give `{key}`"),
        )
    })
}

fn non_empty(value: Option<&str>) -> Option<String> {
    value
        .map(str::trim)
        .filter(|v| !v.is_empty())
        .map(str::to_owned)
}

fn text_field(answer: &Map<String, Value>, key: &str) -> Option<String> {
    non_empty(answer.get(key).and_then(Value::as_str))
}

/// Inserts `value` under `key` when it is set.
fn put<T: Serialize>(args: &mut Map<String, Value>, key: &str, value: Option<T>) {
    if let Some(value) = value
        && let Ok(value) = serde_json::to_value(value)
    {
        args.insert(key.to_owned(), value);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The errors the shared Web API code raises for `slack`, word for word: code, name,
    /// message and suggestion.
    #[test]
    fn shared_errors_keep_slack_wording() {
        let expected = [
            "E_SLACK_BASE_URL | SlackBaseUrlError | apiBaseUrl `http://127.0.0.1:2/api` is not an allowed Slack API base URL | leave `apiBaseUrl` out to use the configured Web API; other base URLs must be allowed in the tool's configuration",
            "E_SLACK_TOKEN_MISSING | SlackTokenMissingError | Slack bot token not found | provide `token`, or set GOONDAN_TEST_UNSET_TOKEN in the environment",
            "E_SLACK_INVALID_INPUT | InvalidInputError | bad | fix it",
            "E_SLACK_REQUEST | SlackRequestError | [slack] m request failed: refused | check the network and the API base URL; Slack may be unreachable",
            "E_SLACK_TIMEOUT | TimeoutError | [slack] m request failed: the request took longer than 3 ms | retry with a larger `timeoutMs`",
            "E_SLACK_CANCELLED | CancelledError | [slack] m request failed: the request was cancelled | send it again if it is still needed",
            "E_SLACK_RATE_LIMITED | SlackRateLimitError | [slack] m is rate limited: retry after 7 s (2 retries made) | wait 7 seconds (`wait__seconds`) and call again; make fewer calls",
            "E_SLACK_FILE_TOO_LARGE | FileTooLargeError | the Slack file is larger than maxBytes (5 bytes) | raise `maxBytes` (at most 20000000), or do not download this file",
            "E_SLACK_DOWNLOAD | SlackDownloadError | [slack] file download failed: HTTP 404 Not Found | hint",
        ];
        assert_eq!(crate::web_api::service::wording(&SERVICE), expected);
    }

    #[test]
    fn emoji_names_like_upstream() {
        let names = emoji_names(
            Some(":thumbsup:"),
            Some(&["fire".to_owned(), "thumbsup".to_owned(), " ".to_owned()]),
        )
        .unwrap();
        assert_eq!(names, ["thumbsup", "fire"]);
        assert!(emoji_names(Some("two words"), None).is_err());
        assert!(emoji_names(None, None).is_err());
        assert_eq!(emoji_names(Some("::"), None).unwrap(), ["::"]);
    }
}
