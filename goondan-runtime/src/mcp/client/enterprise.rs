//! Enterprise-managed authorization (the MCP extension, on rmcp's
//! `transport::auth::enterprise`): the person's ID token from the company's identity
//! provider traded there for an identity assertion grant (ID-JAG), which rmcp checks (type,
//! issuer, audience, client, resource, scopes, lifetime) before it is traded once at the
//! server's authorization server for an access token. No redirect, no retry.

use std::sync::Arc;

use oauth2::ClientSecret;
use rmcp::transport::auth::OAuthTokenResponse;
use rmcp::transport::auth::enterprise::{
    EmaAuthorizationServer, EmaClientAuthentication, EmaExchangeRequest,
};

use super::auth::{EnterpriseGrant, Secret};

/// Why an enterprise-managed grant gave no token.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum EnterpriseError {
    /// A secret of the configuration could not be read.
    #[error("{0}")]
    Secret(String),
    /// The identity provider or the authorization server refused, or answered something
    /// unusable.
    #[error("the enterprise-managed grant failed: {0}")]
    Exchange(String),
}

/// How the client authenticates with a server: with its secret (`client_secret_basic`), or
/// as a public client.
fn authentication(secret: Option<&Secret>) -> Result<EmaClientAuthentication, EnterpriseError> {
    Ok(match secret {
        Some(s) => EmaClientAuthentication::ClientSecretBasic(ClientSecret::new(
            s.reveal()
                .map_err(EnterpriseError::Secret)?
                .trim()
                .to_owned(),
        )),
        None => EmaClientAuthentication::None,
    })
}

/// Trades `grant`'s ID token for a token for the server `resource`, whose authorization
/// server is `issuer` with its `token_endpoint`.
pub(crate) async fn grant(
    grant: &EnterpriseGrant,
    issuer: &str,
    token_endpoint: &str,
    resource: &str,
) -> Result<OAuthTokenResponse, EnterpriseError> {
    let exchange = |e: &dyn std::fmt::Display| EnterpriseError::Exchange(e.to_string());
    let id_token = grant.id_token.reveal().map_err(EnterpriseError::Secret)?;
    let idp = EmaAuthorizationServer::new(
        grant.idp.issuer.as_str(),
        grant.idp.token_endpoint.as_str(),
        grant.idp.client_id.as_str(),
    )
    .with_client_authentication(authentication(grant.idp.client_secret.as_ref())?);
    let server = EmaAuthorizationServer::new(issuer, token_endpoint, grant.client_id.as_str())
        .with_client_authentication(authentication(grant.client_secret.as_ref())?);
    crate::tls::install_crypto_provider();
    let http: Arc<dyn rmcp::transport::auth::OAuthHttpClient> =
        Arc::new(rmcp::transport::auth::default_oauth_http_client().map_err(|e| exchange(&e))?);
    let token = EmaExchangeRequest::new_with_id_token(idp, server, resource, id_token.trim())
        .with_scopes(grant.scopes.iter().cloned())
        .exchange(http.as_ref(), http.as_ref())
        .await
        .map_err(|e| exchange(&e))?;
    let mut response = serde_json::json!({
        "access_token": token.access_token.secret(),
        "token_type": "bearer",
    });
    if let Some(lifetime) = token.expires_in {
        response["expires_in"] = lifetime.as_secs().into();
    }
    if !token.scopes.is_empty() {
        let mut scopes: Vec<_> = token.scopes.iter().map(String::as_str).collect();
        scopes.sort_unstable();
        response["scope"] = scopes.join(" ").into();
    }
    serde_json::from_value(response).map_err(|e| exchange(&e))
}
