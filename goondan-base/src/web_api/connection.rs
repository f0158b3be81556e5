//! One call's way to a chat service's API: the base URL, token and timeout the call uses, and
//! its exchanges, retried after rate limits within the [`RetryPolicy`].

use std::time::Duration;

use goondan_runtime::{ToolContext, ToolError};
use tokio_util::sync::CancellationToken;

use super::service::Service;
use super::{ApiBase, Outgoing, Reply, RetryPolicy, Secret, exchange, pause};

/// The configuration a connection is opened with (the shared part of each tool's policy).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Settings<'p> {
    /// The base URL used when the call gives none.
    pub(crate) api_base_url: &'p str,
    /// Other base URLs a call may name.
    pub(crate) allowed_api_base_urls: &'p [String],
    /// The token used when the call gives none.
    pub(crate) token: Option<&'p Secret>,
    /// The environment variables read for the token, in order.
    pub(crate) token_env: &'p [String],
    /// Retries after rate limits.
    pub(crate) retry: RetryPolicy,
    /// Timeout of one request when the call sets none.
    pub(crate) default_timeout: Duration,
    /// The largest timeout accepted.
    pub(crate) max_timeout: Duration,
}

/// The [`Settings`] of a tool policy that has the fields of the same names.
macro_rules! settings_of {
    ($policy:expr) => {{
        let policy = &$policy;
        $crate::web_api::connection::Settings {
            api_base_url: &policy.api_base_url,
            allowed_api_base_urls: &policy.allowed_api_base_urls,
            token: policy.token.as_ref(),
            token_env: &policy.token_env,
            retry: policy.retry,
            default_timeout: policy.default_timeout,
            max_timeout: policy.max_timeout,
        }
    }};
}
pub(crate) use settings_of;

/// What a call's `token`, `timeoutMs` and `apiBaseUrl` ask for.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Asked<'c> {
    /// The call's token.
    pub(crate) token: Option<&'c str>,
    /// The call's timeout in milliseconds.
    pub(crate) timeout_ms: Option<u64>,
    /// The call's base URL.
    pub(crate) api_base_url: Option<&'c str>,
}

/// Gives each named tool input, which has the fields `token`, `timeout_ms` and
/// `api_base_url`, a method `asked` that returns them as an [`Asked`].
macro_rules! impl_asked {
    ($($input:ty),+ $(,)?) => {$(
        impl $input {
            /// The call's `token`, `timeoutMs` and `apiBaseUrl`.
            pub(crate) fn asked(&self) -> $crate::web_api::connection::Asked<'_> {
                $crate::web_api::connection::Asked {
                    token: self.token.as_deref(),
                    timeout_ms: self.timeout_ms,
                    api_base_url: self.api_base_url.as_deref(),
                }
            }
        }
    )+};
}
pub(crate) use impl_asked;

/// What a call needs to reach the API.
pub(crate) struct Connection<'a> {
    /// Whose API it is, for errors.
    pub(crate) service: &'static Service,
    /// The base URL.
    pub(crate) base: ApiBase,
    /// The token; never put in a message.
    pub(crate) token: String,
    timeout: Duration,
    retry: RetryPolicy,
    cancel: &'a CancellationToken,
}

impl<'a> Connection<'a> {
    /// Checks what the call asks against `settings`, in this order: the base URL, the token,
    /// the timeout.
    pub(crate) fn open(
        service: &'static Service,
        ctx: &'a ToolContext,
        settings: &Settings<'_>,
        asked: Asked<'_>,
    ) -> Result<Self, ToolError> {
        let base = service.api_base(
            settings.api_base_url,
            settings.allowed_api_base_urls,
            asked.api_base_url,
        )?;
        let token = service.token(asked.token, settings.token, settings.token_env)?;
        let timeout = service.timeout(
            asked.timeout_ms,
            settings.default_timeout,
            settings.max_timeout,
        )?;
        Ok(Self {
            service,
            base,
            token,
            timeout,
            retry: settings.retry,
            cancel: ctx.cancellation(),
        })
    }

    /// Sends `out` for `method` and reads the answer with `read`, which also says whether the
    /// answer is a rate limit and how long to wait; a rate-limited request is sent again
    /// while the policy allows.
    pub(crate) async fn call<T>(
        &self,
        method: &str,
        out: &Outgoing,
        read: impl Fn(&Reply) -> (T, Option<Duration>),
    ) -> Result<(Reply, T), ToolError> {
        let mut retries = 0;
        loop {
            let reply = exchange(out, self.timeout, self.cancel)
                .await
                .map_err(|e| self.service.request_error(method, &e))?;
            let (answer, limited) = read(&reply);
            let Some(after) = limited else {
                return Ok((reply, answer));
            };
            if !self.retry.allows(retries, after) {
                return Err(self.service.rate_limited(method, after, retries));
            }
            pause(after, self.cancel)
                .await
                .map_err(|e| self.service.request_error(method, &e))?;
            retries += 1;
        }
    }

    /// Sends the download request `out`; an answer other than 2xx is an error whose
    /// suggestion `hint` gives for its status.
    pub(crate) async fn download(
        &self,
        out: &Outgoing,
        hint: impl Fn(u16) -> &'static str,
    ) -> Result<Reply, ToolError> {
        let reply = exchange(out, self.timeout, self.cancel)
            .await
            .map_err(|e| self.service.download_error(e))?;
        if !(200..300).contains(&reply.status) {
            return Err(self.service.download_refused(&reply, hint(reply.status)));
        }
        Ok(reply)
    }
}
