//! One request to an OAuth token endpoint for the grants rmcp's OAuth client does not make
//! itself (the workload identity federation's JWT bearer grant): a form posted once, with a
//! deadline, and an answer read within a bound, as a token response or the endpoint's
//! refusal.

use std::time::Duration;

use rmcp::transport::auth::OAuthTokenResponse;

/// The largest token endpoint answer read.
pub(crate) const MAX_TOKEN_RESPONSE: usize = 1024 * 1024;

/// How long one token request may take.
pub(crate) const TOKEN_REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// Why a token endpoint gave no token.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum TokenEndpointError {
    /// The request did not get an answer.
    #[error("the token endpoint `{endpoint}` did not answer: {reason}")]
    Unreachable { endpoint: String, reason: String },
    /// The endpoint refused, with its OAuth error code.
    #[error("the token endpoint refused the grant ({status}): {code}{description}")]
    Refused {
        status: u16,
        code: String,
        description: String,
    },
    /// The answer is not a token response.
    #[error("the token endpoint's answer is not a token response: {0}")]
    Unusable(String),
}

/// Reads `response`'s body, refusing one larger than `limit` bytes.
pub(crate) async fn read_bounded(
    mut response: reqwest::Response,
    limit: usize,
) -> Result<Vec<u8>, String> {
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(|e| e.to_string())? {
        if chunk.len() > limit - body.len() {
            return Err(format!("the answer is larger than {limit} bytes"));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// The OAuth error of a refusal's body (`error`, `error_description`), each cut short.
pub(crate) fn oauth_error(body: &[u8]) -> (String, String) {
    #[derive(serde::Deserialize)]
    struct OAuthError {
        error: Option<String>,
        error_description: Option<String>,
    }
    let short = |s: String| s.chars().take(200).collect::<String>();
    match serde_json::from_slice::<OAuthError>(body) {
        Ok(e) => (
            e.error.map(short).unwrap_or_else(|| "no error code".into()),
            e.error_description
                .map(|d| format!(" ({})", short(d)))
                .unwrap_or_default(),
        ),
        Err(_) => ("no OAuth error in the answer".into(), String::new()),
    }
}

/// Posts `form` to `endpoint` once and reads the token response.
pub(crate) async fn request_token(
    endpoint: &str,
    form: &[(&str, &str)],
) -> Result<OAuthTokenResponse, TokenEndpointError> {
    crate::tls::install_crypto_provider();
    let unreachable = |reason: String| TokenEndpointError::Unreachable {
        endpoint: endpoint.to_owned(),
        reason,
    };
    let client = reqwest::Client::builder()
        .timeout(TOKEN_REQUEST_TIMEOUT)
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .map_err(|e| unreachable(e.to_string()))?;
    let body = url::form_urlencoded::Serializer::new(String::new())
        .extend_pairs(form.iter().copied())
        .finish();
    let response = client
        .post(endpoint)
        .header(http::header::ACCEPT, "application/json")
        .header(
            http::header::CONTENT_TYPE,
            "application/x-www-form-urlencoded",
        )
        .body(body)
        .send()
        .await
        .map_err(|e| unreachable(e.to_string()))?;
    let status = response.status();
    let body = read_bounded(response, MAX_TOKEN_RESPONSE)
        .await
        .map_err(TokenEndpointError::Unusable)?;
    if !status.is_success() {
        let (code, description) = oauth_error(&body);
        return Err(TokenEndpointError::Refused {
            status: status.as_u16(),
            code,
            description,
        });
    }
    serde_json::from_slice(&body).map_err(|e| TokenEndpointError::Unusable(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::oauth_error;

    #[test]
    fn a_refusal_s_oauth_error_is_read_and_garbage_is_named_as_such() {
        let (code, description) =
            oauth_error(br#"{"error":"invalid_grant","error_description":"expired"}"#);
        assert_eq!(
            (code.as_str(), description.as_str()),
            ("invalid_grant", " (expired)")
        );
        let (code, _) = oauth_error(b"\xff\xfe<html>");
        assert_eq!(code, "no OAuth error in the answer");
        let long = format!(r#"{{"error":"{}"}}"#, "x".repeat(10_000));
        assert_eq!(oauth_error(long.as_bytes()).0.len(), 200);
    }
}
