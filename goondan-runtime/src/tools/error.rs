//! The error a model sees: [`ToolError`], its codes, and the message limit (RES-3..10).
//!
//! Errors the *host* sees (a duplicate registration, a bad definition) are separate `thiserror`
//! enums next to the code that raises them. The two meet in one place: the executor.

use std::borrow::Cow;

use serde::{Deserialize, Serialize};

use crate::tools::help_url;

/// The error codes the runtime itself produces, each explained under its own heading in
/// `docs/errors.md` ([`crate::tools::help_url`]). Handlers may use any code of their own.
pub mod codes {
    /// A handler failed and said nothing more specific (RES-10).
    pub const TOOL: &str = "E_TOOL";
    /// The tool is not in the current Step's Catalog (PERM-4).
    pub const NOT_IN_CATALOG: &str = "E_TOOL_NOT_IN_CATALOG";
    /// The tool is in the Catalog but nothing in the Registry executes it.
    pub const NOT_FOUND: &str = "E_TOOL_NOT_FOUND";
    /// The name is not of the form `{resource}__{export}`.
    pub const INVALID_NAME: &str = "E_TOOL_INVALID_NAME";
    /// The arguments do not match the export's schema.
    pub const INVALID_ARGS: &str = "E_TOOL_INVALID_ARGS";
    /// The handler panicked.
    pub const PANIC: &str = "E_TOOL_PANIC";
    /// The handler ran past its timeout.
    pub const TIMEOUT: &str = "E_TOOL_TIMEOUT";
    /// The call was cancelled through its context.
    pub const CANCELLED: &str = "E_TOOL_CANCELLED";
    /// The handler's output could not be turned into JSON.
    pub const OUTPUT: &str = "E_TOOL_OUTPUT";
    /// A pending handle that the runtime does not know.
    pub const UNKNOWN_HANDLE: &str = "E_TOOL_UNKNOWN_HANDLE";
    /// A result's content parts (images, audio, resources) are larger than the executor allows.
    pub const CONTENT_TOO_LARGE: &str = "E_TOOL_CONTENT_TOO_LARGE";
    /// A question to the caller (the user, its model, its roots) got no answer.
    pub const ASK_FAILED: &str = "E_TOOL_ASK_FAILED";
}

/// The error message limit when a resource sets none, in characters (SPEC-4, RES-5).
pub const DEFAULT_ERROR_MESSAGE_LIMIT: usize = 1000;

/// What a cut message ends with (RES-8).
pub const TRUNCATION_SUFFIX: &str = "... (truncated)";

/// A tool failure, as data the model can read and recover from (RES-3, RES-9).
///
/// Serialises as `{code, name, message, suggestion?, helpUrl?}`.
///
/// ```
/// use goondan_runtime::ToolError;
/// let err = ToolError::new("city not found")
///     .with_code("E_WEATHER_CITY")
///     .with_suggestion("use an English city name, e.g. `Seoul`");
/// assert_eq!(err.code(), "E_WEATHER_CITY");
/// assert_eq!(err.name(), "Error");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[serde(transparent)]
#[error("{}: {}", .0.code, .0.message)]
pub struct ToolError(Box<Fields>);

/// The fields of a [`ToolError`], boxed: errors are rare, and a small `ToolError` keeps the
/// results and futures that may hold one small.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Fields {
    code: Cow<'static, str>,
    name: Cow<'static, str>,
    message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    suggestion: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    help_url: Option<String>,
    /// Whether calling again may succeed (a timeout, a server busy for now): such failures
    /// count against a retry budget.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    retryable: bool,
}

impl ToolError {
    /// A failure with code `E_TOOL` and name `Error` (RES-10).
    pub fn new(message: impl Into<String>) -> Self {
        Self(Box::new(Fields {
            code: Cow::Borrowed(codes::TOOL),
            name: Cow::Borrowed("Error"),
            message: message.into(),
            suggestion: None,
            help_url: None,
            retryable: false,
        }))
    }

    /// Sets the code (by convention `E_SOMETHING`).
    pub fn with_code(mut self, code: impl Into<Cow<'static, str>>) -> Self {
        self.0.code = code.into();
        self
    }

    /// Sets the name (by convention `SomethingError`).
    pub fn with_name(mut self, name: impl Into<Cow<'static, str>>) -> Self {
        self.0.name = name.into();
        self
    }

    /// Sets the hint that helps the model recover (RES-6).
    pub fn with_suggestion(mut self, suggestion: impl Into<String>) -> Self {
        self.0.suggestion = Some(suggestion.into());
        self
    }

    /// Sets the documentation link (RES-7).
    pub fn with_help_url(mut self, url: impl Into<String>) -> Self {
        self.0.help_url = Some(url.into());
        self
    }

    /// Marks the failure as one that calling again may fix: a timeout, a rate limit, a server
    /// that failed for now. The model sees it; a retry budget counts it
    /// (`calls::retry::RetryBudget`).
    ///
    /// ```
    /// use goondan_runtime::ToolError;
    /// let busy = ToolError::new("the server is busy").with_code("E_API").retryable();
    /// assert!(busy.is_retryable());
    /// assert_eq!(serde_json::to_value(&busy)?["retryable"], true);
    /// assert!(!ToolError::new("no such file").is_retryable());
    /// # Ok::<(), serde_json::Error>(())
    /// ```
    pub fn retryable(mut self) -> Self {
        self.0.retryable = true;
        self
    }

    /// Whether calling again may succeed ([`retryable`](Self::retryable)).
    pub fn is_retryable(&self) -> bool {
        self.0.retryable
    }

    /// The code, e.g. `E_TOOL`.
    pub fn code(&self) -> &str {
        &self.0.code
    }

    /// The name, e.g. `ToolNotInCatalogError`.
    pub fn name(&self) -> &str {
        &self.0.name
    }

    /// The message.
    pub fn message(&self) -> &str {
        &self.0.message
    }

    /// The recovery hint, if any.
    pub fn suggestion(&self) -> Option<&str> {
        self.0.suggestion.as_deref()
    }

    /// The documentation link, if any.
    pub fn help_url(&self) -> Option<&str> {
        self.0.help_url.as_deref()
    }

    /// Prepares the error for the model: cuts the message to `limit` characters (RES-4, RES-8)
    /// and, when it has no `helpUrl` and its code is one of the runtime's (documented in
    /// `docs/errors.md`), points it to that code's heading under `help_base` (RES-7). Any other
    /// code keeps the `helpUrl` it has, or none.
    ///
    /// ```
    /// use goondan_runtime::ToolError;
    /// let base = "https://github.com/goondan/goondan-rs/blob/main/docs/errors.md";
    /// let runtime = ToolError::new("boom").finish(100, base);
    /// assert_eq!(runtime.help_url(), Some(format!("{base}#e_tool").as_str()));
    /// let own = ToolError::new("no such city").with_code("E_WEATHER_CITY").finish(100, base);
    /// assert_eq!(own.help_url(), None);
    /// ```
    pub fn finish(mut self, limit: usize, help_base: &str) -> Self {
        if let Cow::Owned(cut) = truncate_message(&self.0.message, limit) {
            self.0.message = cut;
        }
        if self.0.help_url.is_none() {
            self.0.help_url = help_url::runtime_help_url(help_base, &self.0.code);
        }
        self
    }

    /// Applies `redact` to the message and the suggestion; how many it changed (a guardrail
    /// redacting secrets).
    pub(crate) fn redact_texts(&mut self, mut redact: impl FnMut(&mut String) -> bool) -> usize {
        let mut changed = usize::from(redact(&mut self.0.message));
        if let Some(suggestion) = &mut self.0.suggestion {
            changed += usize::from(redact(suggestion));
        }
        changed
    }

    /// Gives an author's code without a `helpUrl` one under its resource's `base`
    /// ([`help_url::resource_help_url`]). Runtime codes are left to [`finish`](Self::finish).
    pub(crate) fn with_resource_help(mut self, base: Option<&str>) -> Self {
        if let Some(base) = base
            && self.0.help_url.is_none()
            && !help_url::is_documented(&self.0.code)
        {
            self.0.help_url = Some(help_url::resource_help_url(base, &self.0.code));
        }
        self
    }
}

impl From<String> for ToolError {
    fn from(message: String) -> Self {
        Self::new(message)
    }
}

impl From<&str> for ToolError {
    fn from(message: &str) -> Self {
        Self::new(message)
    }
}

impl From<std::io::Error> for ToolError {
    fn from(err: std::io::Error) -> Self {
        Self::new(err.to_string())
            .with_code("E_IO")
            .with_name(format!("IoError.{:?}", err.kind()))
    }
}

impl From<serde_json::Error> for ToolError {
    fn from(err: serde_json::Error) -> Self {
        Self::new(err.to_string())
            .with_code("E_JSON")
            .with_name("JsonError")
    }
}

impl From<std::convert::Infallible> for ToolError {
    fn from(never: std::convert::Infallible) -> Self {
        match never {}
    }
}

/// Cuts `message` to at most `limit` characters (not bytes), ending with
/// [`TRUNCATION_SUFFIX`] when cut (RES-4, RES-8). A limit shorter than the suffix keeps the
/// first `limit` characters, since both rules cannot hold.
///
/// ```
/// use goondan_runtime::tools::error::truncate_message;
/// assert_eq!(truncate_message("short", 100), "short");
/// let long = "x".repeat(50);
/// let cut = truncate_message(&long, 20);
/// assert_eq!(cut, "xxxxx... (truncated)");
/// assert_eq!(cut.chars().count(), 20);
/// ```
pub fn truncate_message(message: &str, limit: usize) -> Cow<'_, str> {
    // Fast path: byte length bounds character count.
    if message.len() <= limit {
        return Cow::Borrowed(message);
    }
    let Some((cut_at, _)) = message.char_indices().nth(limit) else {
        return Cow::Borrowed(message);
    };
    let suffix_len = TRUNCATION_SUFFIX.chars().count();
    if limit < suffix_len {
        return Cow::Owned(message[..cut_at].to_owned());
    }
    let keep = message
        .char_indices()
        .nth(limit - suffix_len)
        .map_or(message.len(), |(i, _)| i);
    Cow::Owned(format!("{}{TRUNCATION_SUFFIX}", &message[..keep]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn res_8_cut_message_ends_with_suffix_and_fits_limit() {
        for limit in [15usize, 16, 20, 100, 1000] {
            let msg = "가".repeat(limit + 1);
            let cut = truncate_message(&msg, limit);
            assert_eq!(cut.chars().count(), limit, "limit {limit}");
            assert!(cut.ends_with(TRUNCATION_SUFFIX));
        }
        // Exactly at the limit: untouched.
        let msg = "가".repeat(30);
        assert_eq!(truncate_message(&msg, 30), msg.as_str());
        // Multi-byte text whose byte length exceeds the limit but char count does not.
        let msg = "한국어".repeat(5);
        assert_eq!(truncate_message(&msg, 15), msg.as_str());
        // A limit shorter than the suffix keeps the head only.
        assert_eq!(truncate_message("abcdefghijklmnopqrstuvwxyz", 3), "abc");
        assert_eq!(truncate_message("abc", 0), "");
    }

    #[test]
    fn res_10_default_code_is_e_tool() {
        let err = ToolError::new("boom");
        assert_eq!(err.code(), "E_TOOL");
        assert_eq!(err.name(), "Error");
    }

    #[test]
    fn res_7_finish_fills_help_url_from_code() {
        let base = "https://h.example/docs/errors.md";
        // A runtime code points to its heading in docs/errors.md.
        let err = ToolError::new("x")
            .with_code(codes::TIMEOUT)
            .finish(100, base);
        assert_eq!(
            err.help_url(),
            Some("https://h.example/docs/errors.md#e_tool_timeout")
        );
        // An author's code without a help URL gets none.
        let err = ToolError::new("x").with_code("E_X").finish(100, base);
        assert_eq!(err.help_url(), None);
        // A help URL given by the author is kept, for any code.
        for code in ["E_X", codes::TIMEOUT] {
            let err = ToolError::new("x")
                .with_code(code)
                .with_help_url("https://e.x/y")
                .finish(100, base);
            assert_eq!(err.help_url(), Some("https://e.x/y"));
        }
    }

    #[test]
    fn res_7_resource_help_fills_only_authors_codes() {
        let own = ToolError::new("x")
            .with_code("E_X")
            .with_resource_help(Some("https://w.example/errors/"))
            .finish(100, "https://h/errors.md");
        assert_eq!(own.help_url(), Some("https://w.example/errors/E_X"));
        let runtime = ToolError::new("x")
            .with_resource_help(Some("https://w.example/errors/"))
            .finish(100, "https://h/errors.md");
        assert_eq!(runtime.help_url(), Some("https://h/errors.md#e_tool"));
        let given = ToolError::new("x")
            .with_code("E_X")
            .with_help_url("https://given")
            .with_resource_help(Some("https://w.example/errors/"));
        assert_eq!(given.help_url(), Some("https://given"));
    }

    #[test]
    fn res_9_error_serialises_in_camel_case() {
        let err = ToolError::new("m")
            .with_suggestion("s")
            .with_help_url("u")
            .with_name("N");
        assert_eq!(
            serde_json::to_value(&err).unwrap(),
            serde_json::json!({"code": "E_TOOL", "name": "N", "message": "m", "suggestion": "s", "helpUrl": "u"})
        );
        let bare = serde_json::to_value(ToolError::new("m")).unwrap();
        assert_eq!(
            bare,
            serde_json::json!({"code": "E_TOOL", "name": "Error", "message": "m"})
        );
    }
}
