//! The inputs upstream accepts loosely, read strictly: chat and message ids as strings or
//! integers, parse mode and chat action aliases, and reaction lists.

use goondan_runtime::ToolError;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

/// A chat or message id: an integer, or a string (`"@channel"`, `"-100123"`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum Id {
    /// An integer id.
    Int(i64),
    /// A string id.
    Text(String),
}

/// Upstream's parse mode aliases, by normalised spelling.
const PARSE_MODES: &[(&str, &str)] = &[
    ("markdown", "Markdown"),
    ("markdownv2", "MarkdownV2"),
    ("markdown-v2", "MarkdownV2"),
    ("html", "HTML"),
];

/// Upstream's chat actions, by normalised spelling.
const CHAT_ACTIONS: &[(&str, &str)] = &[
    ("typing", "typing"),
    ("upload-photo", "upload_photo"),
    ("record-video", "record_video"),
    ("upload-video", "upload_video"),
    ("record-voice", "record_voice"),
    ("upload-voice", "upload_voice"),
    ("upload-document", "upload_document"),
    ("choose-sticker", "choose_sticker"),
    ("find-location", "find_location"),
    ("record-video-note", "record_video_note"),
    ("upload-video-note", "upload_video_note"),
];

pub(super) fn invalid(message: String, suggestion: &str) -> ToolError {
    super::SERVICE.invalid(message, suggestion)
}

/// A chat id as Telegram takes it: a non-empty string, or an integer written as a string.
pub(super) fn chat_id(id: &Id) -> Result<String, ToolError> {
    match id {
        Id::Int(n) => Ok(n.to_string()),
        Id::Text(text) if !text.trim().is_empty() => Ok(text.trim().to_owned()),
        Id::Text(_) => Err(invalid(
            "'chatId' must be a non-empty string or integer".to_owned(),
            "give the chat id from the incoming message, e.g. `123456789` or `@channelname`",
        )),
    }
}

/// A positive message id, given as an integer or a decimal string.
pub(super) fn message_id(id: &Id, key: &str) -> Result<i64, ToolError> {
    let n = match id {
        Id::Int(n) => Some(*n),
        Id::Text(text) => text.trim().parse::<i64>().ok(),
    };
    match n {
        Some(n) if n > 0 => Ok(n),
        _ => Err(invalid(
            format!("'{key}' must be a positive integer"),
            "give the `message_id` Telegram returned, e.g. `42`",
        )),
    }
}

/// Lowercase, runs of whitespace and `_` as one `-` (upstream's normalisation).
fn normalise(raw: &str) -> String {
    let mut out = String::new();
    let mut gap = false;
    for c in raw.trim().chars() {
        if c.is_whitespace() || c == '_' {
            gap = true;
            continue;
        }
        if gap {
            out.push('-');
            gap = false;
        }
        out.extend(c.to_lowercase());
    }
    out
}

fn lookup(table: &[(&str, &'static str)], raw: &str) -> Option<&'static str> {
    let key = normalise(raw);
    table.iter().find(|(k, _)| *k == key).map(|(_, v)| *v)
}

fn allowed(table: &[(&str, &str)]) -> String {
    table.iter().map(|(k, _)| *k).collect::<Vec<_>>().join(", ")
}

/// The Bot API `parse_mode` for an alias; `None` for no or an empty value.
pub(super) fn parse_mode(raw: Option<&str>) -> Result<Option<&'static str>, ToolError> {
    let Some(raw) = raw.filter(|r| !r.trim().is_empty()) else {
        return Ok(None);
    };
    lookup(PARSE_MODES, raw).map(Some).ok_or_else(|| {
        invalid(
            format!("unsupported parseMode '{raw}'"),
            &format!("use one of: {}", allowed(PARSE_MODES)),
        )
    })
}

/// The Bot API chat action for an alias (default `typing`).
pub(super) fn chat_action(raw: Option<&str>) -> Result<&'static str, ToolError> {
    let raw = raw.unwrap_or("typing");
    lookup(CHAT_ACTIONS, raw).ok_or_else(|| {
        invalid(
            format!("unsupported chat action '{raw}'"),
            &format!("use one of: {}", allowed(CHAT_ACTIONS)),
        )
    })
}

/// The reaction list to set, and the emojis in it: none when `clear`, else the unique
/// non-empty emojis of `emoji` and `emojis`, in order.
pub(super) fn reactions(
    emoji: Option<&str>,
    emojis: Option<&[String]>,
    clear: bool,
) -> Result<(Vec<Value>, Vec<String>), ToolError> {
    if clear {
        return Ok((Vec::new(), Vec::new()));
    }
    let mut unique: Vec<String> = Vec::new();
    for e in emoji
        .into_iter()
        .chain(emojis.unwrap_or_default().iter().map(String::as_str))
    {
        let e = e.trim();
        if !e.is_empty() && !unique.iter().any(|u| u == e) {
            unique.push(e.to_owned());
        }
    }
    if unique.is_empty() {
        return Err(invalid(
            "no reaction given".to_owned(),
            "give `emoji` or `emojis` to set a reaction, or `clear: true` to remove reactions",
        ));
    }
    let list = unique
        .iter()
        .map(|e| json!({"type": "emoji", "emoji": e}))
        .collect();
    Ok((list, unique))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aliases_normalise_like_upstream() {
        assert_eq!(parse_mode(Some("MarkdownV2")).unwrap(), Some("MarkdownV2"));
        assert_eq!(parse_mode(Some("markdown_v2")).unwrap(), Some("MarkdownV2"));
        assert_eq!(parse_mode(Some(" html ")).unwrap(), Some("HTML"));
        assert_eq!(parse_mode(Some("")).unwrap(), None);
        assert!(parse_mode(Some("rtf")).is_err());
        assert_eq!(chat_action(None).unwrap(), "typing");
        assert_eq!(chat_action(Some("upload_photo")).unwrap(), "upload_photo");
        assert_eq!(
            chat_action(Some("Record Video Note")).unwrap(),
            "record_video_note"
        );
        assert!(chat_action(Some("dancing")).is_err());
    }

    #[test]
    fn ids_and_reactions() {
        assert_eq!(chat_id(&Id::Int(-100)).unwrap(), "-100");
        assert_eq!(chat_id(&Id::Text(" @chan ".into())).unwrap(), "@chan");
        assert!(chat_id(&Id::Text(" ".into())).is_err());
        assert_eq!(message_id(&Id::Text("42".into()), "messageId").unwrap(), 42);
        assert!(message_id(&Id::Int(0), "messageId").is_err());
        assert!(message_id(&Id::Text("4x".into()), "messageId").is_err());
        let (list, emojis) = reactions(
            Some("👍"),
            Some(&["🔥".to_owned(), "👍".to_owned(), " ".to_owned()]),
            false,
        )
        .unwrap();
        assert_eq!(emojis, ["👍", "🔥"]);
        assert_eq!(list.len(), 2);
        assert!(reactions(None, None, true).unwrap().0.is_empty());
        assert!(reactions(None, None, false).is_err());
    }
}
