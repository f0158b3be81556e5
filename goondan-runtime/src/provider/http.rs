//! One provider request over HTTP: sent, retried by the [`RetryPolicy`], bounded by the
//! timeout, stopped by the cancellation token. Nothing here logs a header: the key stays out
//! of every trace.

use std::time::Duration;

use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::retry::{RetryPolicy, retry_after};
use crate::step::ModelError;

/// The most of an error body kept in a message.
const MAX_ERROR_TEXT: usize = 2_000;

/// A request to send.
pub(crate) struct Call<'a> {
    pub(crate) client: &'a reqwest::Client,
    pub(crate) provider: &'static str,
    pub(crate) url: String,
    pub(crate) headers: Vec<(&'static str, String)>,
    pub(crate) body: Value,
    /// The `tools` field's JSON text, written into `body` as it is sent.
    pub(crate) tools: Option<String>,
    pub(crate) timeout: Duration,
    pub(crate) retry: &'a RetryPolicy,
    pub(crate) cancel: &'a CancellationToken,
}

/// The request's bytes: `body` (an object) with the field `tools` appended as the JSON text
/// it already is, so a large catalog is copied, not parsed and written again.
fn encode(body: &Value, tools: Option<&str>) -> Result<Vec<u8>, serde_json::Error> {
    let Value::Object(fields) = body else {
        return Err(serde::ser::Error::custom(
            "the request body is not an object",
        ));
    };
    let mut bytes = serde_json::to_vec(fields)?;
    if let Some(tools) = tools {
        // `to_vec` of a map ends with its closing brace: reopen it.
        bytes.pop();
        if !fields.is_empty() {
            bytes.push(b',');
        }
        bytes.extend_from_slice(br#""tools":"#);
        bytes.extend_from_slice(tools.as_bytes());
        bytes.push(b'}');
    }
    Ok(bytes)
}

/// Why one attempt failed, and whether to try again.
enum Failure {
    Retry {
        error: ModelError,
        advice: Option<Duration>,
    },
    Final(ModelError),
}

impl Call<'_> {
    /// Sends until a 2xx answer's head arrives; returns it with the number of attempts.
    pub(crate) async fn send(&self) -> Result<(reqwest::Response, u32), ModelError> {
        let body = encode(&self.body, self.tools.as_deref()).map_err(|e| ModelError::Config {
            message: format!("cannot encode the request: {e}"),
        })?;
        let mut attempt = 0u32;
        loop {
            attempt += 1;
            let (error, advice) = match self.attempt(&body, attempt).await {
                Ok(response) => return Ok((response, attempt)),
                Err(Failure::Final(e)) => return Err(e),
                Err(Failure::Retry { error, advice }) => (error, advice),
            };
            let retry = attempt - 1;
            if retry >= self.retry.max_retries {
                return Err(error);
            }
            let Some(wait) = self.retry.wait(retry, advice) else {
                return Err(error);
            };
            tracing::warn!(
                target: "goondan::provider",
                provider = self.provider,
                attempt,
                wait_ms = u64::try_from(wait.as_millis()).unwrap_or(u64::MAX),
                error = %error,
                "provider.retry"
            );
            tokio::select! {
                () = self.cancel.cancelled() => return Err(ModelError::Cancelled),
                () = tokio::time::sleep(wait) => {}
            }
        }
    }

    async fn attempt(&self, body: &[u8], attempt: u32) -> Result<reqwest::Response, Failure> {
        let mut request = self
            .client
            .post(&self.url)
            .header("content-type", "application/json")
            .body(body.to_vec());
        for (name, value) in &self.headers {
            request = request.header(*name, value);
        }
        let sent = tokio::time::timeout(self.timeout, request.send()).await;
        let response = match sent {
            Err(_) => {
                return Err(Failure::Retry {
                    error: self.timed_out(attempt),
                    advice: None,
                });
            }
            Ok(Err(e)) => {
                let error = ModelError::Transport {
                    provider: self.provider,
                    message: describe(&e),
                    attempts: attempt,
                };
                return Err(if e.is_connect() || e.is_timeout() || e.is_request() {
                    Failure::Retry {
                        error,
                        advice: None,
                    }
                } else {
                    Failure::Final(error)
                });
            }
            Ok(Ok(r)) => r,
        };
        let status = response.status();
        if status.is_success() {
            return Ok(response);
        }
        let advice = retry_after(response.headers());
        let text = tokio::time::timeout(self.timeout, response.text())
            .await
            .ok()
            .and_then(Result::ok)
            .unwrap_or_default();
        let error = ModelError::Status {
            provider: self.provider,
            status: status.as_u16(),
            message: error_message(&text),
            attempts: attempt,
        };
        if matches!(status.as_u16(), 408 | 409 | 429) || status.is_server_error() {
            Err(Failure::Retry { error, advice })
        } else {
            Err(Failure::Final(error))
        }
    }

    /// The whole body of an unstreamed answer, as JSON.
    pub(crate) async fn read_json(
        &self,
        response: reqwest::Response,
        attempts: u32,
    ) -> Result<Value, ModelError> {
        let bytes = tokio::time::timeout(self.timeout, response.bytes())
            .await
            .map_err(|_| self.timed_out(attempts))?
            .map_err(|e| ModelError::Transport {
                provider: self.provider,
                message: describe(&e),
                attempts,
            })?;
        serde_json::from_slice(&bytes).map_err(|e| ModelError::Malformed {
            provider: self.provider,
            message: format!("the answer is not JSON: {e}"),
        })
    }

    pub(crate) fn timed_out(&self, attempts: u32) -> ModelError {
        ModelError::Timeout {
            provider: self.provider,
            after: self.timeout,
            attempts,
        }
    }
}

/// A reqwest error with its causes (keys travel in headers, never in the URL).
pub(crate) fn describe(e: &reqwest::Error) -> String {
    let chain = std::iter::successors(Some(e as &dyn std::error::Error), |e| e.source());
    chain
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(": ")
}

/// The provider's message from an error body: `error.message` (OpenAI, Anthropic, Gemini all
/// use it), else the body's start.
pub(crate) fn error_message(text: &str) -> String {
    let parsed: Option<Value> = serde_json::from_str(text).ok();
    if let Some(m) = parsed
        .as_ref()
        .and_then(|v| v.pointer("/error/message"))
        .and_then(Value::as_str)
    {
        return m.to_owned();
    }
    let trimmed = text.trim();
    if trimmed.is_empty() {
        return "no error message".to_owned();
    }
    trimmed.chars().take(MAX_ERROR_TEXT).collect()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn the_tools_text_is_written_in_as_the_tools_field() {
        let tools = r#"[{"name":"calc__add","input_schema":{"type":"object"}}]"#;
        let body = json!({"model": "m", "messages": [{"role": "user", "content": "hi"}]});
        let bytes = encode(&body, Some(tools)).unwrap_or_default();
        let sent: Value = serde_json::from_slice(&bytes).unwrap_or_default();
        let mut want = body.clone();
        want["tools"] = serde_json::from_str(tools).unwrap_or_default();
        assert_eq!(sent, want);
        // No catalog: the body alone, as serde writes it.
        assert_eq!(encode(&body, None).ok(), serde_json::to_vec(&body).ok());
        // An empty body still makes one object.
        let bytes = encode(&json!({}), Some("[]")).unwrap_or_default();
        assert_eq!(bytes, br#"{"tools":[]}"#);
        assert!(encode(&json!([1]), None).is_err());
    }
}
