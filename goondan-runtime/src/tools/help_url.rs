//! Where an error's `helpUrl` points (RES-7): only where something is written about its code.
//!
//! - The codes the runtime and `goondan-base` raise ([`DOCUMENTED_CODES`]) are explained in
//!   `docs/errors.md`, one heading per code. Their `helpUrl` is `{base}#{anchor}`: the base is
//!   that file's address, [`DEFAULT_HELP_URL_BASE`] unless the host sets another (per executor
//!   with [`ToolExecutor::builder`](crate::ToolExecutor::builder)`.help_url_base(..)`,
//!   per process with [`set_help_url_base`] or the [`HELP_URL_BASE_ENV`] variable); the anchor
//!   is the heading's GitHub anchor, the code in lower case ([`anchor`]).
//! - A tool author's own codes get a `helpUrl` only when the author gives one: per error with
//!   [`ToolError::with_help_url`](crate::ToolError::with_help_url), or per resource with
//!   [`ToolBuilder::help_url_base`](crate::tools::tool::ToolBuilder::help_url_base)
//!   ([`resource_help_url`]).
//!
//! ```
//! use goondan_runtime::tools::help_url::{DEFAULT_HELP_URL_BASE, runtime_help_url};
//! assert_eq!(
//!     runtime_help_url(DEFAULT_HELP_URL_BASE, "E_TOOL_TIMEOUT").as_deref(),
//!     Some("https://github.com/goondan/goondan-rs/blob/main/docs/errors.md#e_tool_timeout")
//! );
//! // A code nobody documented has no help URL.
//! assert_eq!(runtime_help_url(DEFAULT_HELP_URL_BASE, "E_WEATHER_CITY"), None);
//! ```

use std::sync::{Arc, OnceLock, PoisonError, RwLock};

/// Where `docs/errors.md` lives when the host says nothing.
pub const DEFAULT_HELP_URL_BASE: &str =
    "https://github.com/goondan/goondan-rs/blob/main/docs/errors.md";

/// The environment variable that sets the process-wide base (read once, at the first error
/// that needs it). Agent processes inherit it from the process that starts them.
pub const HELP_URL_BASE_ENV: &str = "GOONDAN_HELP_URL_BASE";

/// Every code with a heading in `docs/errors.md`: the codes the runtime and `goondan-base`
/// raise. Sorted. A test keeps this list, the headings and the codes in the sources equal.
pub const DOCUMENTED_CODES: &[&str] = &[
    "E_AGENT_CRASHED",
    "E_AGENT_CYCLE",
    "E_AGENT_DISCONNECTED",
    "E_AGENT_LOAD",
    "E_AGENT_NOT_CALLABLE",
    "E_AGENT_NO_HOST",
    "E_AGENT_NO_RUNTIME",
    "E_AGENT_PROTOCOL",
    "E_AGENT_SHUTTING_DOWN",
    "E_AGENT_SPAWN",
    "E_AGENT_TIMEOUT",
    "E_AGENT_TURN",
    "E_AGENT_UNKNOWN_TARGET",
    "E_BASH_CANCELLED",
    "E_BASH_CWD",
    "E_BASH_ENV",
    "E_BASH_LIMITS",
    "E_BASH_SCRIPT",
    "E_BASH_SPAWN",
    "E_CODE_ERROR",
    "E_CODE_LIMIT",
    "E_CODE_SYNTAX",
    "E_CONFIG_REF_NOT_FOUND",
    "E_CONFIG_UNKNOWN_KIND",
    "E_FS_CHANGED",
    "E_FS_IO",
    "E_FS_NOT_A_DIRECTORY",
    "E_FS_NOT_A_FILE",
    "E_FS_NOT_FOUND",
    "E_HTTP_BODY",
    "E_HTTP_BODY_CONFLICT",
    "E_HTTP_CANCELLED",
    "E_HTTP_CONNECT",
    "E_HTTP_DNS",
    "E_HTTP_FORBIDDEN_ADDRESS",
    "E_HTTP_HEADER",
    "E_HTTP_SCHEME",
    "E_HTTP_TIMEOUT",
    "E_HTTP_TOO_MANY_REDIRECTS",
    "E_HTTP_URL_INVALID",
    "E_HTTP_USERINFO",
    "E_IO",
    "E_JSON",
    "E_JSON_PARSE",
    "E_JSON_SHAPE",
    "E_MCP_AUTH",
    "E_MCP_REMOTE",
    "E_MCP_SKILL_MISMATCH",
    "E_MCP_TOOL_ERROR",
    "E_MCP_UNAVAILABLE",
    "E_PATH_HARDLINK",
    "E_PATH_INVALID",
    "E_PATH_OUTSIDE_WORKDIR",
    "E_SANDBOX_ESCALATION_FORBIDDEN",
    "E_SANDBOX_ESCALATION_NOT_APPROVED",
    "E_SANDBOX_LIMIT",
    "E_SANDBOX_POLICY",
    "E_SANDBOX_UNAVAILABLE",
    "E_SLACK_API",
    "E_SLACK_BASE_URL",
    "E_SLACK_CANCELLED",
    "E_SLACK_DOWNLOAD",
    "E_SLACK_DOWNLOAD_HOST",
    "E_SLACK_FILE_TOO_LARGE",
    "E_SLACK_INVALID_INPUT",
    "E_SLACK_RATE_LIMITED",
    "E_SLACK_REQUEST",
    "E_SLACK_SAVE",
    "E_SLACK_TIMEOUT",
    "E_SLACK_TOKEN_MISSING",
    "E_TELEGRAM_API",
    "E_TELEGRAM_BASE_URL",
    "E_TELEGRAM_CANCELLED",
    "E_TELEGRAM_DOWNLOAD",
    "E_TELEGRAM_FILE_TOO_LARGE",
    "E_TELEGRAM_INVALID_INPUT",
    "E_TELEGRAM_RATE_LIMITED",
    "E_TELEGRAM_REQUEST",
    "E_TELEGRAM_SAVE",
    "E_TELEGRAM_TIMEOUT",
    "E_TELEGRAM_TOKEN_MISSING",
    "E_TEXT_INVALID_INPUT",
    "E_TOOL",
    "E_TOOL_ASK_FAILED",
    "E_TOOL_CANCELLED",
    "E_TOOL_CONTENT_TOO_LARGE",
    "E_TOOL_DENIED",
    "E_TOOL_GUARDRAIL",
    "E_TOOL_INTERNAL",
    "E_TOOL_INTERRUPTED",
    "E_TOOL_INVALID_ARGS",
    "E_TOOL_INVALID_NAME",
    "E_TOOL_NOT_FOUND",
    "E_TOOL_NOT_IN_CATALOG",
    "E_TOOL_OUTPUT",
    "E_TOOL_PANIC",
    "E_TOOL_TIMEOUT",
    "E_TOOL_UNKNOWN_HANDLE",
    "E_WAIT_CANCELLED",
    "E_WAIT_OUT_OF_RANGE",
    "E_WORKDIR_UNAVAILABLE",
];

/// Whether `docs/errors.md` has a heading for `code`.
///
/// ```
/// use goondan_runtime::tools::help_url::is_documented;
/// assert!(is_documented("E_TOOL_INVALID_ARGS"));
/// assert!(!is_documented("E_MY_OWN_CODE"));
/// ```
pub fn is_documented(code: &str) -> bool {
    DOCUMENTED_CODES.binary_search(&code).is_ok()
}

/// The GitHub anchor of the heading `## {code}`: the code in lower case (letters, digits and
/// `_` are kept as they are).
///
/// ```
/// assert_eq!(goondan_runtime::tools::help_url::anchor("E_TOOL_TIMEOUT"), "e_tool_timeout");
/// ```
pub fn anchor(code: &str) -> String {
    code.to_ascii_lowercase()
}

/// `{base}#{anchor}` for a documented code, `None` for any other.
pub fn runtime_help_url(base: &str, code: &str) -> Option<String> {
    is_documented(code).then(|| format!("{base}#{}", anchor(code)))
}

/// The `helpUrl` of an author's code under the resource's `base`: `{base}{code}`, or
/// `{base}{anchor}` when the base ends with `#` (a Markdown file with one heading per code).
///
/// ```
/// use goondan_runtime::tools::help_url::resource_help_url;
/// assert_eq!(
///     resource_help_url("https://weather.example/errors/", "E_WEATHER_CITY"),
///     "https://weather.example/errors/E_WEATHER_CITY"
/// );
/// assert_eq!(
///     resource_help_url("https://github.com/me/weather/blob/main/ERRORS.md#", "E_WEATHER_CITY"),
///     "https://github.com/me/weather/blob/main/ERRORS.md#e_weather_city"
/// );
/// ```
pub fn resource_help_url(base: &str, code: &str) -> String {
    if base.ends_with('#') {
        format!("{base}{}", anchor(code))
    } else {
        format!("{base}{code}")
    }
}

fn configured() -> &'static RwLock<Option<Arc<str>>> {
    static BASE: OnceLock<RwLock<Option<Arc<str>>>> = OnceLock::new();
    BASE.get_or_init(|| {
        let from_env = std::env::var(HELP_URL_BASE_ENV)
            .ok()
            .filter(|v| !v.trim().is_empty());
        RwLock::new(from_env.map(Arc::from))
    })
}

/// Sets the process-wide base of runtime codes' help URLs: the address of this process's copy
/// of `docs/errors.md`. Executors built with
/// [`ToolExecutor::builder`](crate::ToolExecutor::builder)`.help_url_base(..)` keep their own.
///
/// ```
/// use goondan_runtime::tools::help_url::{help_url_base, set_help_url_base};
/// set_help_url_base("https://docs.example.com/goondan/errors.html");
/// assert_eq!(&*help_url_base(), "https://docs.example.com/goondan/errors.html");
/// ```
pub fn set_help_url_base(base: impl Into<String>) {
    let base: Arc<str> = Arc::from(base.into());
    *configured().write().unwrap_or_else(PoisonError::into_inner) = Some(base);
}

/// The process-wide base: the last [`set_help_url_base`], else [`HELP_URL_BASE_ENV`], else
/// [`DEFAULT_HELP_URL_BASE`].
pub fn help_url_base() -> Arc<str> {
    configured()
        .read()
        .unwrap_or_else(PoisonError::into_inner)
        .clone()
        .unwrap_or_else(|| Arc::from(DEFAULT_HELP_URL_BASE))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn res_7_documented_codes_are_sorted_and_unique() {
        assert!(DOCUMENTED_CODES.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn res_7_only_documented_codes_get_a_runtime_url() {
        assert_eq!(
            runtime_help_url("https://h/errors.md", "E_TOOL").as_deref(),
            Some("https://h/errors.md#e_tool")
        );
        assert_eq!(runtime_help_url("https://h/errors.md", "E_X"), None);
        assert_eq!(runtime_help_url("https://h/errors.md", "e_tool"), None);
    }
}
