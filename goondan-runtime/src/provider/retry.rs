//! [`RetryPolicy`]: how often and how long to wait before asking a provider again.

use std::time::Duration;
#[cfg(feature = "providers")]
use std::time::SystemTime;

/// Retries on 429, 5xx, timeouts and connection failures: at most
/// [`max_retries`](Self::max_retries) after the first attempt, each after the provider's
/// `retry-after` (or `retry-after-ms`) when it sends one, else after an exponential backoff.
///
/// ```
/// use std::time::Duration;
/// use goondan_runtime::provider::RetryPolicy;
/// let policy = RetryPolicy::default();
/// assert_eq!(policy.backoff(0), Duration::from_millis(500));
/// assert_eq!(policy.backoff(1), Duration::from_secs(1));
/// assert_eq!(policy.backoff(20), policy.max_backoff);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Retries after the first attempt (default 3).
    pub max_retries: u32,
    /// The first backoff (default 500 ms); it doubles each retry.
    pub initial_backoff: Duration,
    /// The longest backoff (default 30 s).
    pub max_backoff: Duration,
    /// The longest `retry-after` honoured (default 120 s): a provider that asks for a longer
    /// wait gets an error instead.
    pub max_retry_after: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            max_retries: 3,
            initial_backoff: Duration::from_millis(500),
            max_backoff: Duration::from_secs(30),
            max_retry_after: Duration::from_secs(120),
        }
    }
}

impl RetryPolicy {
    /// No retries.
    pub fn none() -> Self {
        Self {
            max_retries: 0,
            ..Self::default()
        }
    }

    /// The backoff before retry number `retry` (from 0), without the provider's advice.
    pub fn backoff(&self, retry: u32) -> Duration {
        let factor = 2u32.saturating_pow(retry.min(31));
        self.initial_backoff
            .saturating_mul(factor)
            .min(self.max_backoff)
    }

    #[cfg(feature = "providers")]
    /// The wait before retry number `retry`: the provider's advice when it gave one (`None`
    /// when that is longer than [`max_retry_after`](Self::max_retry_after)), else the backoff.
    pub(crate) fn wait(&self, retry: u32, advice: Option<Duration>) -> Option<Duration> {
        match advice {
            Some(d) if d > self.max_retry_after => None,
            Some(d) => Some(d),
            None => Some(self.backoff(retry)),
        }
    }
}

/// The wait a response's headers ask for: `retry-after-ms` (milliseconds), else `retry-after`
/// as seconds or an HTTP date.
#[cfg(feature = "providers")]
pub(crate) fn retry_after(headers: &reqwest::header::HeaderMap) -> Option<Duration> {
    let text = |name: &str| headers.get(name)?.to_str().ok().map(str::trim);
    if let Some(ms) = text("retry-after-ms").and_then(|v| v.parse::<f64>().ok())
        && ms.is_finite()
        && ms >= 0.0
    {
        return Some(Duration::from_secs_f64(ms / 1000.0));
    }
    let value = text("retry-after")?;
    if let Ok(secs) = value.parse::<f64>() {
        return (secs.is_finite() && secs >= 0.0).then(|| Duration::from_secs_f64(secs));
    }
    let at = httpdate::parse_http_date(value).ok()?;
    Some(
        at.duration_since(SystemTime::now())
            .unwrap_or(Duration::ZERO),
    )
}

#[cfg(all(test, feature = "providers"))]
mod tests {
    use super::*;

    #[test]
    fn retry_after_reads_seconds_milliseconds_and_dates() {
        use reqwest::header::{HeaderMap, HeaderValue};
        let mut h = HeaderMap::new();
        h.insert("retry-after", HeaderValue::from_static("2"));
        assert_eq!(retry_after(&h), Some(Duration::from_secs(2)));
        h.insert("retry-after-ms", HeaderValue::from_static("150"));
        assert_eq!(retry_after(&h), Some(Duration::from_millis(150)));
        let mut past = HeaderMap::new();
        let date = HeaderValue::from_static("Sun, 06 Nov 1994 08:49:37 GMT");
        past.insert("retry-after", date);
        assert_eq!(retry_after(&past), Some(Duration::ZERO));
        let soon = httpdate::fmt_http_date(SystemTime::now() + Duration::from_secs(3600));
        let mut future = HeaderMap::new();
        future.insert("retry-after", HeaderValue::from_str(&soon).unwrap());
        let wait = retry_after(&future).unwrap();
        assert!(wait > Duration::from_secs(3590) && wait <= Duration::from_secs(3600));
        past.insert("retry-after", HeaderValue::from_static("yesterday"));
        assert_eq!(retry_after(&past), None);
    }

    #[test]
    fn a_retry_after_beyond_the_limit_is_not_waited_for() {
        let policy = RetryPolicy::default();
        assert_eq!(policy.wait(0, Some(Duration::from_secs(600))), None);
        assert_eq!(
            policy.wait(0, Some(Duration::from_secs(1))),
            Some(Duration::from_secs(1))
        );
    }
}
