//! `telegram`: a Telegram Bot API client with upstream's exports.
//!
//! - `telegram__send {chatId, text, parseMode?, disableNotification?, disableWebPagePreview?,
//!   replyToMessageId?, allowSendingWithoutReply?}` -> `{ok, chatId, messageId, date, text}`
//! - `telegram__edit {chatId, messageId, text, parseMode?, disableWebPagePreview?}` ->
//!   `{ok, chatId, messageId, edited}`
//! - `telegram__delete {chatId, messageId}` -> `{ok, chatId, messageId, deleted}`
//! - `telegram__react {chatId, messageId, emoji?, emojis?, clear?, isBig?}` ->
//!   `{ok, chatId, messageId, cleared, emojis, reactionCount}`
//! - `telegram__setChatAction {chatId, action? = "typing"}` -> `{ok, chatId, status, action}`
//! - `telegram__downloadFile {fileId, maxBytes? = 3000000, includeBase64? = true,
//!   includeDataUrl? = true, savePath?}` -> `{ok, fileId, fileUniqueId, filePath, fileSize,
//!   downloadUrl, contentType, sizeBytes, savedPath, base64, dataUrl}`
//!
//! Every export also takes `token?`, `timeoutMs? = 15000` and `apiBaseUrl?`. The token comes
//! from the call, else [`TelegramPolicy::token`], else the first of [`TOKEN_ENV_KEYS`] that is
//! set. It is never logged and never shown: `downloadUrl` carries `<redacted>` in its place.
//! `apiBaseUrl` must name the configured base URL or one of
//! [`TelegramPolicy::allowed_api_base_urls`], so a model cannot send the token elsewhere.
//! A `429 Too Many Requests` answer is retried after its `retry_after`, within
//! [`TelegramPolicy::retry`]. `savePath` is confined to the workdir.

mod api;
mod options;

use std::sync::Arc;
use std::time::Duration;

use goondan_runtime::{ToolContext, ToolError, tool};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use self::api::Session;
pub use self::options::Id;
use self::options::invalid;
use crate::web_api::connection::{Asked, Connection, impl_asked, settings_of};
use crate::web_api::download::{self, Wanted};
use crate::web_api::service::{Service, codes_of};
use crate::web_api::{RetryPolicy, Secret};

/// Error codes of `telegram`.
pub mod codes {
    /// No token in the call, the configuration or the environment.
    pub const TOKEN_MISSING: &str = "E_TELEGRAM_TOKEN_MISSING";
    /// An input value is not accepted.
    pub const INVALID_INPUT: &str = "E_TELEGRAM_INVALID_INPUT";
    /// `apiBaseUrl` is not the configured base URL, or the configured one is invalid.
    pub const BASE_URL: &str = "E_TELEGRAM_BASE_URL";
    /// The Bot API answered with an error.
    pub const API: &str = "E_TELEGRAM_API";
    /// The Bot API is rate limiting and the wait is longer than the policy allows.
    pub const RATE_LIMITED: &str = "E_TELEGRAM_RATE_LIMITED";
    /// The request could not be made (network, DNS, TLS).
    pub const REQUEST: &str = "E_TELEGRAM_REQUEST";
    /// The request took longer than `timeoutMs`.
    pub const TIMEOUT: &str = "E_TELEGRAM_TIMEOUT";
    /// The call was cancelled.
    pub const CANCELLED: &str = "E_TELEGRAM_CANCELLED";
    /// The file is larger than `maxBytes`.
    pub const FILE_TOO_LARGE: &str = "E_TELEGRAM_FILE_TOO_LARGE";
    /// The file could not be downloaded.
    pub const DOWNLOAD: &str = "E_TELEGRAM_DOWNLOAD";
    /// The file could not be saved.
    pub const SAVE: &str = "E_TELEGRAM_SAVE";
}

/// How the shared web API code names `telegram`'s errors.
static SERVICE: Service = Service {
    tag: "telegram",
    title: "Telegram",
    api: "Bot API",
    remote: "the Bot API",
    fewer: "send fewer messages per chat",
    check_token,
    codes: codes_of!(codes),
};

/// The official Bot API base URL.
pub const API_BASE_URL: &str = "https://api.telegram.org";

/// The environment variables read for the token, in order (upstream's list).
pub const TOKEN_ENV_KEYS: &[&str] = &[
    "TELEGRAM_BOT_TOKEN",
    "BOT_TOKEN",
    "TELEGRAM_TOKEN",
    "BRAIN_TELEGRAM_BOT_TOKEN",
];

/// How `telegram` reaches the Bot API.
#[derive(Debug, Clone)]
pub struct TelegramPolicy {
    /// The base URL used when the call gives none (default [`API_BASE_URL`]).
    pub api_base_url: String,
    /// Other base URLs a call may name in `apiBaseUrl` (default none).
    pub allowed_api_base_urls: Vec<String>,
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

impl Default for TelegramPolicy {
    fn default() -> Self {
        Self {
            api_base_url: API_BASE_URL.to_owned(),
            allowed_api_base_urls: Vec::new(),
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

impl TelegramPolicy {
    /// Uses `url` as the base URL (a local Bot API server, or a test server).
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

    /// Retries rate-limited calls as `retry` says.
    #[must_use]
    pub fn retry(mut self, retry: RetryPolicy) -> Self {
        self.retry = retry;
        self
    }
}

/// Input of `telegram__send`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SendInput {
    /// Bot token. Optional when TELEGRAM_BOT_TOKEN/BOT_TOKEN/TELEGRAM_TOKEN is set.
    #[serde(default)]
    pub token: Option<String>,
    /// Target chat id, as a string or an integer.
    pub chat_id: Id,
    /// Message text content to send.
    pub text: String,
    /// Optional parse mode: Markdown, MarkdownV2 or HTML (any case, `markdown-v2` too).
    #[serde(default)]
    pub parse_mode: Option<String>,
    /// Disable Telegram push notification for this message.
    #[serde(default)]
    pub disable_notification: Option<bool>,
    /// Disable link preview generation for message links.
    #[serde(default)]
    pub disable_web_page_preview: Option<bool>,
    /// Reply to an existing message id in the same chat.
    #[serde(default)]
    pub reply_to_message_id: Option<Id>,
    /// Send even when the reply target message no longer exists.
    #[serde(default)]
    pub allow_sending_without_reply: Option<bool>,
    /// Telegram API timeout in milliseconds (default 15000).
    #[serde(default)]
    pub timeout_ms: Option<u64>,
    /// Optional Telegram API base URL override (must be a configured one).
    #[serde(default)]
    pub api_base_url: Option<String>,
}

/// Output of `telegram__send`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SendOutput {
    /// Always `true`.
    pub ok: bool,
    /// The chat id used.
    pub chat_id: String,
    /// The new message's id.
    pub message_id: Option<i64>,
    /// The message's Unix time.
    pub date: Option<i64>,
    /// The message's text as Telegram stored it.
    pub text: Option<String>,
}

/// Input of `telegram__edit`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct EditInput {
    /// Bot token. Optional when TELEGRAM_BOT_TOKEN/BOT_TOKEN/TELEGRAM_TOKEN is set.
    #[serde(default)]
    pub token: Option<String>,
    /// Target chat id, as a string or an integer.
    pub chat_id: Id,
    /// Message id to edit (positive integer).
    pub message_id: Id,
    /// New message text content.
    pub text: String,
    /// Optional parse mode: Markdown, MarkdownV2 or HTML.
    #[serde(default)]
    pub parse_mode: Option<String>,
    /// Disable link preview generation for message links.
    #[serde(default)]
    pub disable_web_page_preview: Option<bool>,
    /// Telegram API timeout in milliseconds (default 15000).
    #[serde(default)]
    pub timeout_ms: Option<u64>,
    /// Optional Telegram API base URL override (must be a configured one).
    #[serde(default)]
    pub api_base_url: Option<String>,
}

/// Output of `telegram__edit`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct EditOutput {
    /// Always `true`.
    pub ok: bool,
    /// The chat id used.
    pub chat_id: String,
    /// The edited message's id.
    pub message_id: i64,
    /// Always `true`.
    pub edited: bool,
}

/// Input of `telegram__delete`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DeleteInput {
    /// Bot token. Optional when TELEGRAM_BOT_TOKEN/BOT_TOKEN/TELEGRAM_TOKEN is set.
    #[serde(default)]
    pub token: Option<String>,
    /// Target chat id, as a string or an integer.
    pub chat_id: Id,
    /// Message id to delete (positive integer).
    pub message_id: Id,
    /// Telegram API timeout in milliseconds (default 15000).
    #[serde(default)]
    pub timeout_ms: Option<u64>,
    /// Optional Telegram API base URL override (must be a configured one).
    #[serde(default)]
    pub api_base_url: Option<String>,
}

/// Output of `telegram__delete`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DeleteOutput {
    /// Always `true`.
    pub ok: bool,
    /// The chat id used.
    pub chat_id: String,
    /// The deleted message's id.
    pub message_id: i64,
    /// Always `true`.
    pub deleted: bool,
}

/// Input of `telegram__react`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ReactInput {
    /// Bot token. Optional when TELEGRAM_BOT_TOKEN/BOT_TOKEN/TELEGRAM_TOKEN is set.
    #[serde(default)]
    pub token: Option<String>,
    /// Target chat id, as a string or an integer.
    pub chat_id: Id,
    /// Message id to react to (positive integer).
    pub message_id: Id,
    /// Single emoji reaction to set (ignored when clear=true).
    #[serde(default)]
    pub emoji: Option<String>,
    /// Multiple emoji reactions to set (ignored when clear=true).
    #[serde(default)]
    pub emojis: Option<Vec<String>>,
    /// When true, clear reactions instead of setting them.
    #[serde(default)]
    pub clear: Option<bool>,
    /// Use the big reaction animation if supported by Telegram clients.
    #[serde(default)]
    pub is_big: Option<bool>,
    /// Telegram API timeout in milliseconds (default 15000).
    #[serde(default)]
    pub timeout_ms: Option<u64>,
    /// Optional Telegram API base URL override (must be a configured one).
    #[serde(default)]
    pub api_base_url: Option<String>,
}

/// Output of `telegram__react`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReactOutput {
    /// Always `true`.
    pub ok: bool,
    /// The chat id used.
    pub chat_id: String,
    /// The message's id.
    pub message_id: i64,
    /// Whether reactions were cleared.
    pub cleared: bool,
    /// The emojis set.
    pub emojis: Vec<String>,
    /// How many reactions were set.
    pub reaction_count: u64,
}

/// Input of `telegram__setChatAction`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SetChatActionInput {
    /// Bot token. Optional when TELEGRAM_BOT_TOKEN/BOT_TOKEN/TELEGRAM_TOKEN is set.
    #[serde(default)]
    pub token: Option<String>,
    /// Target chat id, as a string or an integer.
    pub chat_id: Id,
    /// Chat action to set (default `typing`): typing, upload-photo, record-video,
    /// upload-video, record-voice, upload-voice, upload-document, choose-sticker,
    /// find-location, record-video-note, upload-video-note.
    #[serde(default)]
    pub action: Option<String>,
    /// Telegram API timeout in milliseconds (default 15000).
    #[serde(default)]
    pub timeout_ms: Option<u64>,
    /// Optional Telegram API base URL override (must be a configured one).
    #[serde(default)]
    pub api_base_url: Option<String>,
}

/// Output of `telegram__setChatAction`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SetChatActionOutput {
    /// Always `true`.
    pub ok: bool,
    /// The chat id used.
    pub chat_id: String,
    /// The action sent (same as `action`).
    pub status: String,
    /// The action sent, as the Bot API spells it (`upload_photo`).
    pub action: String,
}

/// Input of `telegram__downloadFile`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DownloadFileInput {
    /// Bot token. Optional when TELEGRAM_BOT_TOKEN/BOT_TOKEN/TELEGRAM_TOKEN is set.
    #[serde(default)]
    pub token: Option<String>,
    /// Telegram file id to download.
    pub file_id: String,
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
    /// Telegram API timeout in milliseconds (default 15000).
    #[serde(default)]
    pub timeout_ms: Option<u64>,
    /// Optional Telegram API base URL override (must be a configured one).
    #[serde(default)]
    pub api_base_url: Option<String>,
}

/// Output of `telegram__downloadFile`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DownloadFileOutput {
    /// Always `true`.
    pub ok: bool,
    /// The file id.
    pub file_id: String,
    /// The file's unique id.
    pub file_unique_id: Option<String>,
    /// The file's path on Telegram's servers.
    pub file_path: String,
    /// The size Telegram reported.
    pub file_size: Option<i64>,
    /// Where it was downloaded from, the token shown as `<redacted>`.
    pub download_url: String,
    /// The `Content-Type` of the download.
    pub content_type: Option<String>,
    /// The bytes downloaded.
    pub size_bytes: u64,
    /// The absolute path written, when `savePath` was given.
    pub saved_path: Option<String>,
    /// The content, base64-encoded, unless `includeBase64` is false.
    pub base64: Option<String>,
    /// `data:{type};base64,...`, unless `includeDataUrl` or `includeBase64` is false.
    pub data_url: Option<String>,
}

impl_asked!(
    SendInput,
    EditInput,
    DeleteInput,
    ReactInput,
    SetChatActionInput,
    DownloadFileInput
);

/// The `telegram` tool. `Telegram::default()` talks to the official Bot API with a token from
/// the environment.
#[derive(Debug, Clone, Default)]
pub struct Telegram {
    policy: Arc<TelegramPolicy>,
}

impl Telegram {
    /// The resource name.
    pub const NAME: &'static str = "telegram";
}

/// Send, edit, delete and react to Telegram messages, show chat actions, download files.
#[tool(name = "telegram", error_message_limit = 1000)]
impl Telegram {
    /// A `telegram` with `policy`.
    pub fn new(policy: TelegramPolicy) -> Self {
        Self {
            policy: Arc::new(policy),
        }
    }

    /// Send a Telegram text message to a chat.
    #[export(open_world)]
    pub async fn send(&self, ctx: &ToolContext, input: SendInput) -> Result<SendOutput, ToolError> {
        let session = self.session(ctx, input.asked())?;
        let chat_id = options::chat_id(&input.chat_id)?;
        require_text(&input.text)?;
        let mut payload = Map::new();
        payload.insert("chat_id".into(), json!(chat_id));
        payload.insert("text".into(), json!(input.text));
        put(
            &mut payload,
            "parse_mode",
            options::parse_mode(input.parse_mode.as_deref())?,
        );
        put(
            &mut payload,
            "disable_notification",
            input.disable_notification,
        );
        put(
            &mut payload,
            "disable_web_page_preview",
            input.disable_web_page_preview,
        );
        let reply_to = input
            .reply_to_message_id
            .as_ref()
            .map(|id| options::message_id(id, "replyToMessageId"))
            .transpose()?;
        put(&mut payload, "reply_to_message_id", reply_to);
        put(
            &mut payload,
            "allow_sending_without_reply",
            input.allow_sending_without_reply,
        );
        let result = session.call("sendMessage", Value::Object(payload)).await?;
        Ok(SendOutput {
            ok: true,
            chat_id,
            message_id: result
                .get("message_id")
                .and_then(Value::as_i64)
                .filter(|n| *n > 0),
            date: result.get("date").and_then(Value::as_i64),
            text: result
                .get("text")
                .and_then(Value::as_str)
                .map(str::trim)
                .filter(|t| !t.is_empty())
                .map(str::to_owned),
        })
    }

    /// Edit the text of an existing Telegram message.
    #[export(destructive, open_world)]
    pub async fn edit(&self, ctx: &ToolContext, input: EditInput) -> Result<EditOutput, ToolError> {
        let session = self.session(ctx, input.asked())?;
        let chat_id = options::chat_id(&input.chat_id)?;
        let message_id = options::message_id(&input.message_id, "messageId")?;
        require_text(&input.text)?;
        let mut payload = Map::new();
        payload.insert("chat_id".into(), json!(chat_id));
        payload.insert("message_id".into(), json!(message_id));
        payload.insert("text".into(), json!(input.text));
        put(
            &mut payload,
            "parse_mode",
            options::parse_mode(input.parse_mode.as_deref())?,
        );
        put(
            &mut payload,
            "disable_web_page_preview",
            input.disable_web_page_preview,
        );
        let result = session
            .call("editMessageText", Value::Object(payload))
            .await?;
        Ok(EditOutput {
            ok: true,
            chat_id,
            message_id: result
                .get("message_id")
                .and_then(Value::as_i64)
                .filter(|n| *n > 0)
                .unwrap_or(message_id),
            edited: true,
        })
    }

    /// Delete a Telegram message from a chat.
    #[export(destructive, open_world)]
    pub async fn delete(
        &self,
        ctx: &ToolContext,
        input: DeleteInput,
    ) -> Result<DeleteOutput, ToolError> {
        let session = self.session(ctx, input.asked())?;
        let chat_id = options::chat_id(&input.chat_id)?;
        let message_id = options::message_id(&input.message_id, "messageId")?;
        session
            .call(
                "deleteMessage",
                json!({"chat_id": chat_id, "message_id": message_id}),
            )
            .await?;
        Ok(DeleteOutput {
            ok: true,
            chat_id,
            message_id,
            deleted: true,
        })
    }

    /// Add, replace, or clear Telegram message reactions.
    #[export(open_world)]
    pub async fn react(
        &self,
        ctx: &ToolContext,
        input: ReactInput,
    ) -> Result<ReactOutput, ToolError> {
        let session = self.session(ctx, input.asked())?;
        let chat_id = options::chat_id(&input.chat_id)?;
        let message_id = options::message_id(&input.message_id, "messageId")?;
        let cleared = input.clear.unwrap_or(false);
        let (reaction, emojis) =
            options::reactions(input.emoji.as_deref(), input.emojis.as_deref(), cleared)?;
        let mut payload = Map::new();
        payload.insert("chat_id".into(), json!(chat_id));
        payload.insert("message_id".into(), json!(message_id));
        let count = reaction.len() as u64;
        payload.insert("reaction".into(), Value::Array(reaction));
        put(&mut payload, "is_big", input.is_big);
        session
            .call("setMessageReaction", Value::Object(payload))
            .await?;
        Ok(ReactOutput {
            ok: true,
            chat_id,
            message_id,
            cleared,
            emojis,
            reaction_count: count,
        })
    }

    /// Set the Telegram bot's chat action (typing, upload-photo, ...).
    #[export(name = "setChatAction", open_world)]
    pub async fn set_chat_action(
        &self,
        ctx: &ToolContext,
        input: SetChatActionInput,
    ) -> Result<SetChatActionOutput, ToolError> {
        let session = self.session(ctx, input.asked())?;
        let chat_id = options::chat_id(&input.chat_id)?;
        let action = options::chat_action(input.action.as_deref())?;
        session
            .call(
                "sendChatAction",
                json!({"chat_id": chat_id, "action": action}),
            )
            .await?;
        Ok(SetChatActionOutput {
            ok: true,
            chat_id,
            status: action.to_owned(),
            action: action.to_owned(),
        })
    }

    /// Resolve and download a Telegram file by file id; optionally save it in the workdir.
    #[export(name = "downloadFile", open_world)]
    pub async fn download_file(
        &self,
        ctx: &ToolContext,
        input: DownloadFileInput,
    ) -> Result<DownloadFileOutput, ToolError> {
        let session = self.session(ctx, input.asked())?;
        let file_id = input.file_id.trim().to_owned();
        if file_id.is_empty() {
            return Err(invalid(
                "'fileId' must be a non-empty string".to_owned(),
                "give the `file_id` of the photo, document or voice message to download",
            ));
        }
        let max_bytes = self.max_bytes(input.max_bytes)?;
        let file = session.call("getFile", json!({"file_id": file_id})).await?;
        let text = |key: &str| {
            file.get(key)
                .and_then(Value::as_str)
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
        };
        let (Some(resolved_id), Some(file_path)) = (text("file_id"), text("file_path")) else {
            return Err(SERVICE.download_failed(
                "[telegram] getFile result missing file_id/file_path".to_owned(),
                "the file may be too big for the Bot API (20 MB) or gone",
            ));
        };
        let reply = session.download(&file_path, max_bytes).await?;
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
            file_unique_id: text("file_unique_id"),
            file_size: file.get("file_size").and_then(Value::as_i64),
            download_url: session.shown_file_url(&file_path),
            file_id: resolved_id,
            file_path,
            content_type: delivered.content_type,
            size_bytes: delivered.size_bytes,
            saved_path: delivered.saved_path,
            base64: delivered.base64,
            data_url: delivered.data_url,
        })
    }
}

impl Telegram {
    fn session<'a>(
        &self,
        ctx: &'a ToolContext,
        asked: Asked<'_>,
    ) -> Result<Session<'a>, ToolError> {
        Connection::open(&SERVICE, ctx, &settings_of!(self.policy), asked).map(Session)
    }

    fn max_bytes(&self, asked: Option<u64>) -> Result<usize, ToolError> {
        let policy = &self.policy;
        SERVICE.max_bytes(asked, policy.default_max_bytes, policy.max_bytes_limit)
    }
}

/// Refuses a token with characters a bot token never has (it goes into the request path).
fn check_token(token: &str) -> Result<(), ToolError> {
    if token.contains(['/', '?', '#', ' ']) {
        return Err(invalid(
            "the Telegram bot token has characters a token never has".to_owned(),
            "a bot token looks like `123456:ABC-DEF...`; check `token` or the environment",
        ));
    }
    Ok(())
}

fn require_text(text: &str) -> Result<(), ToolError> {
    if text.is_empty() {
        return Err(invalid(
            "'text' must be a non-empty string".to_owned(),
            "give the message text in `text`",
        ));
    }
    Ok(())
}

/// Inserts `value` under `key` when it is set.
fn put<T: Serialize>(payload: &mut Map<String, Value>, key: &str, value: Option<T>) {
    if let Some(value) = value
        && let Ok(value) = serde_json::to_value(value)
    {
        payload.insert(key.to_owned(), value);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The errors the shared Web API code raises for `telegram`, word for word: code, name,
    /// message and suggestion.
    #[test]
    fn shared_errors_keep_telegram_wording() {
        let expected = [
            "E_TELEGRAM_BASE_URL | TelegramBaseUrlError | apiBaseUrl `http://127.0.0.1:2/api` is not an allowed Telegram API base URL | leave `apiBaseUrl` out to use the configured Bot API; other base URLs must be allowed in the tool's configuration",
            "E_TELEGRAM_TOKEN_MISSING | TelegramTokenMissingError | Telegram bot token not found | provide `token`, or set GOONDAN_TEST_UNSET_TOKEN in the environment",
            "E_TELEGRAM_INVALID_INPUT | InvalidInputError | bad | fix it",
            "E_TELEGRAM_REQUEST | TelegramRequestError | [telegram] m request failed: refused | check the network and the API base URL; the Bot API may be unreachable",
            "E_TELEGRAM_TIMEOUT | TimeoutError | [telegram] m request failed: the request took longer than 3 ms | retry with a larger `timeoutMs`",
            "E_TELEGRAM_CANCELLED | CancelledError | [telegram] m request failed: the request was cancelled | send it again if it is still needed",
            "E_TELEGRAM_RATE_LIMITED | TelegramRateLimitError | [telegram] m is rate limited: retry after 7 s (2 retries made) | wait 7 seconds (`wait__seconds`) and call again; send fewer messages per chat",
            "E_TELEGRAM_FILE_TOO_LARGE | FileTooLargeError | the Telegram file is larger than maxBytes (5 bytes) | raise `maxBytes` (at most 20000000), or do not download this file",
            "E_TELEGRAM_DOWNLOAD | TelegramDownloadError | [telegram] file download failed: HTTP 404 Not Found | hint",
        ];
        assert_eq!(crate::web_api::service::wording(&SERVICE), expected);
    }

    #[test]
    fn token_with_path_characters_is_refused() {
        let e = SERVICE.token(Some("1:a/b"), None, &[]).unwrap_err();
        assert_eq!(e.code(), codes::INVALID_INPUT);
        assert_eq!(
            e.message(),
            "the Telegram bot token has characters a token never has"
        );
        assert!(SERVICE.token(Some("1:ab"), None, &[]).is_ok());
    }
}
