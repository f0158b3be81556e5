//! What tells one chat-service tool from another: its error codes and the words of its
//! messages. The shared code raises every error through a [`Service`], so `slack` and
//! `telegram` keep their own codes, names and advice while they share the logic.

use std::time::Duration;

use goondan_runtime::ToolError;

use super::{ApiBase, Reply, Secret, WebError, resolve_token};

/// The error codes a chat-service tool raises from the shared code.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Codes {
    /// No token in the call, the configuration or the environment.
    pub(crate) token_missing: &'static str,
    /// An input value is not accepted.
    pub(crate) invalid_input: &'static str,
    /// `apiBaseUrl` is not the configured base URL, or the configured one is invalid.
    pub(crate) base_url: &'static str,
    /// The wait after a rate limit is longer than the policy allows.
    pub(crate) rate_limited: &'static str,
    /// The request could not be made.
    pub(crate) request: &'static str,
    /// The request took longer than `timeoutMs`.
    pub(crate) timeout: &'static str,
    /// The call was cancelled.
    pub(crate) cancelled: &'static str,
    /// The file is larger than `maxBytes`.
    pub(crate) file_too_large: &'static str,
    /// The file could not be downloaded.
    pub(crate) download: &'static str,
    /// The file could not be saved.
    pub(crate) save: &'static str,
}

/// The [`Codes`] of a tool whose `codes` module names them `TOKEN_MISSING`, `INVALID_INPUT`,
/// `BASE_URL`, `RATE_LIMITED`, `REQUEST`, `TIMEOUT`, `CANCELLED`, `FILE_TOO_LARGE`,
/// `DOWNLOAD` and `SAVE`.
macro_rules! codes_of {
    ($codes:path) => {{
        use $codes as c;
        $crate::web_api::service::Codes {
            token_missing: c::TOKEN_MISSING,
            invalid_input: c::INVALID_INPUT,
            base_url: c::BASE_URL,
            rate_limited: c::RATE_LIMITED,
            request: c::REQUEST,
            timeout: c::TIMEOUT,
            cancelled: c::CANCELLED,
            file_too_large: c::FILE_TOO_LARGE,
            download: c::DOWNLOAD,
            save: c::SAVE,
        }
    }};
}
pub(crate) use codes_of;

/// One chat service, as its tool's messages name it.
#[derive(Debug)]
pub(crate) struct Service {
    /// The tag that opens messages, `slack` for `[slack] ...`.
    pub(crate) tag: &'static str,
    /// The service's name in messages and the prefix of error names (`Slack`, `SlackApiError`).
    pub(crate) title: &'static str,
    /// What the configured base URL serves (`Web API`).
    pub(crate) api: &'static str,
    /// What may be unreachable when a request fails (`Slack`, `the Bot API`).
    pub(crate) remote: &'static str,
    /// The advice after a rate limit, following "call again; " (`make fewer calls`).
    pub(crate) fewer: &'static str,
    /// Refuses a resolved token the service could never accept (`Ok` when any will do).
    pub(crate) check_token: fn(&str) -> Result<(), ToolError>,
    /// The error codes.
    pub(crate) codes: Codes,
}

impl Service {
    /// An input value is not accepted.
    pub(crate) fn invalid(&self, message: String, suggestion: &str) -> ToolError {
        ToolError::new(message)
            .with_code(self.codes.invalid_input)
            .with_name("InvalidInputError")
            .with_suggestion(suggestion)
    }

    /// The base URL a call uses: the configured one, unless `asked` names it or one of
    /// `allowed`.
    pub(crate) fn api_base(
        &self,
        configured: &str,
        allowed: &[String],
        asked: Option<&str>,
    ) -> Result<ApiBase, ToolError> {
        let base_error = |why: String| {
            ToolError::new(why)
                .with_code(self.codes.base_url)
                .with_name(format!("{}BaseUrlError", self.title))
                .with_suggestion(format!(
                    "leave `apiBaseUrl` out to use the configured {}; other base URLs must be \
                     allowed in the tool's configuration",
                    self.api
                ))
        };
        let configured = ApiBase::parse(configured).map_err(|e| base_error(e.to_string()))?;
        match asked.map(str::trim).filter(|u| !u.is_empty()) {
            None => Ok(configured),
            Some(url) if configured.same_as(url) => Ok(configured),
            Some(url)
                if allowed
                    .iter()
                    .any(|a| ApiBase::parse(a).is_ok_and(|a| a.same_as(url))) =>
            {
                ApiBase::parse(url).map_err(|e| base_error(e.to_string()))
            }
            Some(url) => Err(base_error(format!(
                "apiBaseUrl `{url}` is not an allowed {} API base URL",
                self.title
            ))),
        }
    }

    /// The token of a call: see [`resolve_token`]; the process environment is read.
    pub(crate) fn token(
        &self,
        given: Option<&str>,
        configured: Option<&Secret>,
        env: &[String],
    ) -> Result<String, ToolError> {
        let env_keys: Vec<&str> = env.iter().map(String::as_str).collect();
        let token = resolve_token(given, configured, &env_keys, |k| std::env::var(k).ok())
            .ok_or_else(|| {
                ToolError::new(format!("{} bot token not found", self.title))
                    .with_code(self.codes.token_missing)
                    .with_name(format!("{}TokenMissingError", self.title))
                    .with_suggestion(format!(
                        "provide `token`, or set {} in the environment",
                        env_keys.join("/")
                    ))
            })?;
        (self.check_token)(&token)?;
        Ok(token)
    }

    /// The timeout of a call: `timeoutMs` capped at `max`, `default` without one.
    pub(crate) fn timeout(
        &self,
        timeout_ms: Option<u64>,
        default: Duration,
        max: Duration,
    ) -> Result<Duration, ToolError> {
        match timeout_ms {
            Some(0) => Err(self.invalid(
                "'timeoutMs' must be a positive number".to_owned(),
                "give `timeoutMs` in milliseconds, e.g. 15000",
            )),
            Some(ms) => Ok(Duration::from_millis(ms).min(max)),
            None => Ok(default),
        }
    }

    /// The byte cap of a download: `maxBytes`, `default` without one, at most `limit`.
    pub(crate) fn max_bytes(
        &self,
        asked: Option<u64>,
        default: u64,
        limit: u64,
    ) -> Result<usize, ToolError> {
        let n = asked.unwrap_or(default);
        if n == 0 || n > limit {
            return Err(self.invalid(
                format!("'maxBytes' must be between 1 and {limit}"),
                &format!("give `maxBytes` between 1 and {limit}, or leave it out"),
            ));
        }
        Ok(usize::try_from(n).unwrap_or(usize::MAX))
    }

    /// A request of `method` failed before an answer came.
    pub(crate) fn request_error(&self, method: &str, err: &WebError) -> ToolError {
        let (code, name, suggestion) = match err {
            WebError::Timeout { .. } => (
                self.codes.timeout,
                "TimeoutError".to_owned(),
                "retry with a larger `timeoutMs`".to_owned(),
            ),
            WebError::Cancelled => (
                self.codes.cancelled,
                "CancelledError".to_owned(),
                "send it again if it is still needed".to_owned(),
            ),
            _ => (
                self.codes.request,
                format!("{}RequestError", self.title),
                format!(
                    "check the network and the API base URL; {} may be unreachable",
                    self.remote
                ),
            ),
        };
        ToolError::new(format!("[{}] {method} request failed: {err}", self.tag))
            .with_code(code)
            .with_name(name)
            .with_suggestion(suggestion)
    }

    /// `method` is still rate limited after `retries` retries, and asks to wait `after`.
    pub(crate) fn rate_limited(&self, method: &str, after: Duration, retries: u32) -> ToolError {
        ToolError::new(format!(
            "[{}] {method} is rate limited: retry after {} s ({retries} retries made)",
            self.tag,
            after.as_secs()
        ))
        .with_code(self.codes.rate_limited)
        .with_name(format!("{}RateLimitError", self.title))
        .with_suggestion(format!(
            "wait {} seconds (`wait__seconds`) and call again; {}",
            after.as_secs(),
            self.fewer
        ))
        .retryable()
    }

    /// A download failed: `err` from the exchange.
    pub(crate) fn download_error(&self, err: WebError) -> ToolError {
        match err {
            WebError::TooLarge { cap } => ToolError::new(format!(
                "the {} file is larger than maxBytes ({cap} bytes)",
                self.title
            ))
            .with_code(self.codes.file_too_large)
            .with_name("FileTooLargeError")
            .with_suggestion("raise `maxBytes` (at most 20000000), or do not download this file"),
            other => self.request_error("file download", &other),
        }
    }

    /// A download was answered with a status other than 2xx.
    pub(crate) fn download_refused(&self, reply: &Reply, hint: &str) -> ToolError {
        self.download_failed(
            format!("[{}] file download failed: {}", self.tag, reply.describe()),
            hint,
        )
    }

    /// A download failed as `message` says.
    pub(crate) fn download_failed(&self, message: String, hint: &str) -> ToolError {
        ToolError::new(message)
            .with_code(self.codes.download)
            .with_name(format!("{}DownloadError", self.title))
            .with_suggestion(hint)
    }
}

/// For a service that accepts any token.
pub(crate) fn any_token(_: &str) -> Result<(), ToolError> {
    Ok(())
}

/// Every error the shared code raises for `service` from fixed inputs, one line each as
/// `code | name | message | suggestion`, for the tools' tests to pin their wording.
#[cfg(test)]
pub(crate) fn wording(service: &Service) -> Vec<String> {
    let reply = Reply {
        status: 404,
        headers: http::HeaderMap::new(),
        body: Vec::new(),
    };
    let mut errors: Vec<ToolError> = Vec::new();
    errors.extend(
        service
            .api_base(
                "http://127.0.0.1:1/api",
                &[],
                Some("http://127.0.0.1:2/api"),
            )
            .err(),
    );
    let env = ["GOONDAN_TEST_UNSET_TOKEN".to_owned()];
    errors.extend(service.token(None, None, &env).err());
    errors.extend([
        service.invalid("bad".to_owned(), "fix it"),
        service.request_error("m", &WebError::Connect("refused".into())),
        service.request_error("m", &WebError::Timeout { ms: 3 }),
        service.request_error("m", &WebError::Cancelled),
        service.rate_limited("m", Duration::from_secs(7), 2),
        service.download_error(WebError::TooLarge { cap: 5 }),
        service.download_refused(&reply, "hint"),
    ]);
    errors
        .iter()
        .map(|e| {
            format!(
                "{} | {} | {} | {}",
                e.code(),
                e.name(),
                e.message(),
                e.suggestion().unwrap_or_default()
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const CODES: Codes = Codes {
        token_missing: "E_T_TOKEN",
        invalid_input: "E_T_INPUT",
        base_url: "E_T_BASE",
        rate_limited: "E_T_RATE",
        request: "E_T_REQUEST",
        timeout: "E_T_TIMEOUT",
        cancelled: "E_T_CANCELLED",
        file_too_large: "E_T_LARGE",
        download: "E_T_DOWNLOAD",
        save: "E_T_SAVE",
    };

    const TEST: Service = Service {
        tag: "test",
        title: "Test",
        api: "Test API",
        remote: "Test",
        fewer: "make fewer calls",
        check_token: any_token,
        codes: CODES,
    };

    #[test]
    fn api_base_accepts_only_configured_urls() {
        let allowed = ["http://127.0.0.1:9/other".to_owned()];
        let configured = "http://127.0.0.1:9/api";
        let base = TEST.api_base(configured, &allowed, None).unwrap();
        assert_eq!(base.as_str(), "http://127.0.0.1:9/api");
        let other = TEST
            .api_base(configured, &allowed, Some("http://127.0.0.1:9/other/"))
            .unwrap();
        assert_eq!(other.as_str(), "http://127.0.0.1:9/other");
        let refused = TEST
            .api_base(configured, &allowed, Some("http://evil.test/api"))
            .unwrap_err();
        assert_eq!(refused.code(), "E_T_BASE");
        assert_eq!(refused.name(), "TestBaseUrlError");
    }

    #[test]
    fn timeout_and_max_bytes_bounds() {
        let (d, max) = (Duration::from_secs(15), Duration::from_secs(120));
        assert_eq!(TEST.timeout(None, d, max).unwrap(), d);
        assert_eq!(TEST.timeout(Some(999_999), d, max).unwrap(), max);
        assert_eq!(
            TEST.timeout(Some(0), d, max).unwrap_err().code(),
            "E_T_INPUT"
        );
        assert_eq!(TEST.max_bytes(None, 3, 20).unwrap(), 3);
        assert!(TEST.max_bytes(Some(21), 3, 20).is_err());
        assert!(TEST.max_bytes(Some(0), 3, 20).is_err());
    }
}
