//! Workload identity federation (the MCP authorization extension's JWT bearer grant, RFC
//! 7523): the JWT a workload's platform issues, read where the configuration says at each
//! grant, looked at before it is sent (a missing, malformed or expired one is refused here,
//! without a request), and traded once at the token endpoint. A refusal is not retried
//! and no other grant is tried in its place.

use std::time::{SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use rmcp::transport::auth::OAuthTokenResponse;

use super::auth::WorkloadIdentity;
use super::token_endpoint::{TokenEndpointError, request_token};

/// The JWT bearer grant type.
const JWT_BEARER: &str = "urn:ietf:params:oauth:grant-type:jwt-bearer";

/// The largest workload JWT sent.
const MAX_ASSERTION: usize = 64 * 1024;

/// Why a workload identity grant gave no token.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum WorkloadError {
    /// The JWT could not be read.
    #[error("the workload identity token cannot be read: {0}")]
    Missing(String),
    /// What was read is not a JWT.
    #[error("the workload identity token is not a JWT: {0}")]
    Malformed(&'static str),
    /// The JWT has expired.
    #[error(
        "the workload identity token expired {ago} s ago; the platform that issues it should have replaced it"
    )]
    Expired { ago: u64 },
    /// The token endpoint gave no token.
    #[error(transparent)]
    Endpoint(#[from] TokenEndpointError),
}

/// The workload JWT of `identity`, checked: three base64url parts, claims that are JSON, and
/// an `exp` (when there is one) after `now` (seconds since the epoch).
fn assertion(identity: &WorkloadIdentity, now: u64) -> Result<String, WorkloadError> {
    let text = identity
        .assertion
        .reveal()
        .map_err(WorkloadError::Missing)?;
    let jwt = text.trim();
    if jwt.is_empty() {
        return Err(WorkloadError::Missing("it is empty".into()));
    }
    if jwt.len() > MAX_ASSERTION {
        return Err(WorkloadError::Malformed("it is larger than 64 KiB"));
    }
    let mut parts = jwt.split('.');
    let (Some(_), Some(claims), Some(_), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(WorkloadError::Malformed("a JWT has three parts"));
    };
    let claims = URL_SAFE_NO_PAD
        .decode(claims)
        .map_err(|_| WorkloadError::Malformed("its claims are not base64url"))?;
    let claims: serde_json::Value = serde_json::from_slice(&claims)
        .map_err(|_| WorkloadError::Malformed("its claims are not JSON"))?;
    match claims.get("exp").map(serde_json::Value::as_u64) {
        None => {}
        Some(None) => return Err(WorkloadError::Malformed("its `exp` is not a number")),
        Some(Some(exp)) if exp <= now => return Err(WorkloadError::Expired { ago: now - exp }),
        Some(Some(_)) => {}
    }
    Ok(jwt.to_owned())
}

/// Trades `identity`'s JWT at `token_endpoint` for a token for the server `resource`.
pub(crate) async fn grant(
    identity: &WorkloadIdentity,
    token_endpoint: &str,
    resource: &str,
) -> Result<OAuthTokenResponse, WorkloadError> {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or_default();
    let jwt = assertion(identity, now)?;
    let scope = identity.scopes.join(" ");
    let mut form = vec![
        ("grant_type", JWT_BEARER),
        ("assertion", jwt.as_str()),
        ("client_id", identity.client_id.as_str()),
        ("resource", resource),
    ];
    if !scope.is_empty() {
        form.push(("scope", &scope));
    }
    Ok(request_token(token_endpoint, &form).await?)
}

#[cfg(test)]
mod tests {
    use super::{WorkloadError, assertion};
    use crate::mcp::client::{Secret, WorkloadIdentity};
    use base64::Engine as _;
    use base64::engine::general_purpose::URL_SAFE_NO_PAD;

    fn jwt(claims: &str) -> String {
        let part = |s: &str| URL_SAFE_NO_PAD.encode(s);
        format!("{}.{}.c2ln", part(r#"{"alg":"ES256"}"#), part(claims))
    }

    #[test]
    fn a_workload_jwt_that_is_missing_malformed_or_expired_is_refused_before_any_request() {
        let of = |s: &str| WorkloadIdentity::new("w", Secret::new(s));
        let now = 1_000_000;
        let good = jwt(r#"{"exp":1000600,"sub":"w"}"#);
        assert_eq!(assertion(&of(&format!("{good}\n")), now), Ok(good));
        assert_eq!(
            assertion(&of(&jwt(r#"{"exp":999940}"#)), now),
            Err(WorkloadError::Expired { ago: 60 })
        );
        assert!(matches!(
            assertion(&of("  "), now),
            Err(WorkloadError::Missing(_))
        ));
        for bad in [
            "a.b",
            "a.b.c.d",
            "a.!!!.c",
            &jwt("not json"),
            &jwt(r#"{"exp":"soon"}"#),
        ] {
            assert!(
                matches!(assertion(&of(bad), now), Err(WorkloadError::Malformed(_))),
                "{bad}"
            );
        }
        let unset = WorkloadIdentity::new("w", Secret::from_env("GOONDAN_TEST_NO_SUCH_JWT"));
        let err = assertion(&unset, now).unwrap_err();
        assert!(
            err.to_string().contains("GOONDAN_TEST_NO_SUCH_JWT"),
            "{err}"
        );
        let huge = WorkloadIdentity::new("w", Secret::new("a".repeat(70_000)));
        assert!(matches!(
            assertion(&huge, now),
            Err(WorkloadError::Malformed(_))
        ));
    }
}
