//! What a remote answer becomes here: a result's content and structured content become the
//! output; a remote `isError`, a protocol error or a stopped server become [`ToolError`]s with
//! the MCP codes.

use rmcp::model::{CallToolResult, ContentBlock};
use serde_json::Value;

use crate::tools::content::{Content, ToolReturn};
use crate::tools::error::ToolError;
use crate::tools::handler::Outcome;

/// The remote tool answered with `isError: true`; the message is its text.
pub const E_MCP_TOOL_ERROR: &str = "E_MCP_TOOL_ERROR";

/// The server answered the call with a protocol error (an unknown tool, arguments it refused,
/// a request it does not support).
pub const E_MCP_REMOTE: &str = "E_MCP_REMOTE";

/// The server is not running: it could not start, or it stopped and is being restarted.
pub const E_MCP_UNAVAILABLE: &str = "E_MCP_UNAVAILABLE";

/// The server wants an authorization the bridge does not hold: no tokens were kept for it,
/// the refresh token was refused or expired, or the authorization flow failed.
pub const E_MCP_AUTH: &str = "E_MCP_AUTH";

/// The outcome of a completed call: an error when the server says `isError`; a rich result
/// when it answered with images, audio or resources (the parts unchanged, the output its
/// `structuredContent` or its text); else the output (see [`value_of`]).
pub(crate) fn from_result(
    server: &str,
    remote: &str,
    result: CallToolResult,
) -> Result<Outcome, ToolError> {
    let parts: Vec<Content> = result
        .content
        .iter()
        .filter(|b| b.as_text().is_none())
        .filter_map(|b| {
            let json = serde_json::to_value(b).ok()?;
            Content::from_json(&json).ok()
        })
        .collect();
    if parts.is_empty() || result.is_error == Some(true) {
        return value_of(server, remote, result).map(Outcome::Output);
    }
    let texts = texts_of(&result.content);
    let output = match result.structured_content {
        Some(structured) => structured,
        None if texts.is_empty() => Value::Null,
        None => Value::String(texts.join("\n")),
    };
    Ok(Outcome::Rich(Box::new(ToolReturn {
        output,
        content: parts,
    })))
}

/// The output of a completed call, or its error (see [`from_result`]).
pub(crate) fn value_of(
    server: &str,
    remote: &str,
    result: CallToolResult,
) -> Result<Value, ToolError> {
    if result.is_error == Some(true) {
        let text = text_of(&result.content);
        return Err(ToolError::new(text)
            .with_code(E_MCP_TOOL_ERROR)
            .with_name("McpToolError")
            .with_suggestion(format!(
                "the tool `{remote}` of the MCP server `{server}` reported this error; fix the arguments it names and call it again"
            )));
    }
    if let Some(structured) = result.structured_content {
        return Ok(structured);
    }
    let output = match result.content.as_slice() {
        [] => Value::Null,
        [ContentBlock::Text(t)] => Value::String(t.text.clone()),
        blocks => serde_json::to_value(blocks).unwrap_or(Value::Null),
    };
    Ok(output)
}

/// The text blocks of `content`, one per line; the whole content as JSON when it has none.
fn text_of(content: &[ContentBlock]) -> String {
    let texts = texts_of(content);
    if texts.is_empty() {
        serde_json::to_string(content).unwrap_or_default()
    } else {
        texts.join("\n")
    }
}

/// The text blocks of `content`, in order.
fn texts_of(content: &[ContentBlock]) -> Vec<&str> {
    content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.as_str()))
        .collect()
}

/// The server answered with a protocol error.
pub(crate) fn remote_error(server: &str, remote: &str, message: &str) -> ToolError {
    ToolError::new(format!(
        "the MCP server `{server}` refused `{remote}`: {message}"
    ))
    .with_code(E_MCP_REMOTE)
    .with_name("McpRemoteError")
    .with_suggestion("check the arguments against the tool's schema; if they are right, the server cannot run this call")
}

/// The server is not running.
pub(crate) fn unavailable(server: &str, what: &str) -> ToolError {
    ToolError::new(format!("the MCP server `{server}` {what}"))
        .with_code(E_MCP_UNAVAILABLE)
        .with_name("McpUnavailableError")
        .with_suggestion(format!(
            "the server `{server}` is restarted automatically; call the tool again in a moment, and if it keeps failing, tell the user that `{server}` is down"
        ))
}

/// The server is not authorized (see [`E_MCP_AUTH`]).
pub(crate) fn not_authorized(server: &str, why: &str) -> ToolError {
    ToolError::new(format!(
        "the MCP server `{server}` is not authorized: {why}"
    ))
    .with_code(E_MCP_AUTH)
    .with_name("McpAuthError")
    .with_suggestion(format!(
        "tell the user to log in with `goondan mcp login {server}`, then call the tool again"
    ))
}
