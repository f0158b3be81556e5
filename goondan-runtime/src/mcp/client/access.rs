//! Getting a server's authorization: the tokens kept for it, or a new grant (client
//! credentials, or the authorization-code flow through the extension's [`Authorizer`]), on
//! rmcp's OAuth client. What the link calls when a server answers 401, or 403
//! `insufficient_scope`.

use std::sync::Arc;

use rmcp::transport::auth::{
    AuthError, AuthorizationCallback, AuthorizationManager, AuthorizationRequest, CredentialStore,
    InMemoryCredentialStore, OAuthState, WWWAuthenticateParams,
};

use super::auth::{Authorizer, McpAuth};
use super::config::McpServerConfig;
use super::token_store::{ServerTokens, TokenStore};

/// What an extension gives its links for authorization.
#[derive(Clone, Default)]
pub(crate) struct Access {
    /// Where tokens are kept; none: in memory, for the life of the link.
    pub(crate) tokens: Option<TokenStore>,
    /// Who opens authorization URLs; none: no flow is started.
    pub(crate) authorizer: Option<Arc<dyn Authorizer>>,
}

/// Why a server is not authorized.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum AccessError {
    /// The server needs a person's authorization and none is kept.
    #[error("no tokens are kept for it; log in with `goondan mcp login {0}`")]
    LoggedOut(String),
    /// The flow or the token endpoint failed.
    #[error("{0}")]
    Failed(String),
}

fn failed(e: AuthError) -> AccessError {
    AccessError::Failed(e.to_string())
}

impl Access {
    /// rmcp's OAuth client for `config`'s server at `url`, on the server's tokens in the token
    /// store (or in memory, without one), and that store.
    async fn manager(
        &self,
        config: &McpServerConfig,
        url: &str,
    ) -> Result<(AuthorizationManager, Option<ServerTokens>), AccessError> {
        let mut manager = AuthorizationManager::new(url).await.map_err(failed)?;
        let kept = self.tokens.as_ref().map(|s| s.server(&config.name, url));
        match &kept {
            Some(tokens) => manager.set_credential_store(tokens.clone()),
            None => manager.set_credential_store(InMemoryCredentialStore::new()),
        }
        Ok((manager, kept))
    }

    /// A manager for `config`'s server at `url` that uses the tokens kept for it, if any.
    pub(crate) async fn kept(
        &self,
        config: &McpServerConfig,
        url: &str,
    ) -> Result<AuthorizationManager, AccessError> {
        let (mut manager, _) = self.manager(config, url).await?;
        // Tokens that cannot be used (the metadata moved, the issuer changed) are dropped by
        // rmcp; the server's challenge then asks for new ones.
        if let Err(e) = manager.initialize_from_store().await {
            tracing::debug!(target: "goondan::mcp", server = %config.name, "kept tokens not used: {e}");
        }
        Ok(manager)
    }

    /// A new grant for `config`'s server at `url`, after its `challenge` (the
    /// `WWW-Authenticate` header of a 401 or 403). `granted` are the scopes held so far: a
    /// step-up asks for them and the challenged ones together (SEP-2350). Kept in the token
    /// store on success.
    pub(crate) async fn grant(
        &self,
        config: &McpServerConfig,
        url: &str,
        challenge: Option<&str>,
        granted: &[String],
    ) -> Result<AuthorizationManager, AccessError> {
        let server = config.name.as_str();
        let (manager, kept) = self.manager(config, url).await?;
        // The scopes held are those of this connection and those of the grant kept from an
        // earlier one (a restarted run knows only the kept grant).
        let mut held = granted.to_vec();
        if let Some(kept) = kept
            && let Ok(Some(credentials)) = kept.load().await
        {
            held.extend(credentials.granted_scopes);
        }
        let granted = held;
        let mut state = OAuthState::Unauthorized(manager);
        match &config.auth {
            McpAuth::None => return Err(AccessError::Failed("no `auth` is configured".into())),
            McpAuth::ClientCredentials(cc) => {
                // rmcp's client-credentials exchange is a future that is not `Send` (it keeps
                // a form serializer across an await), so it runs to completion on a blocking
                // thread of this runtime instead of on a worker.
                let grant = cc.to_rmcp(url).map_err(AccessError::Failed)?;
                let handle = tokio::runtime::Handle::current();
                let (back, done) = tokio::task::spawn_blocking(move || {
                    handle.block_on(async move {
                        let done = state.authenticate_client_credentials(grant).await;
                        (state, done)
                    })
                })
                .await
                .map_err(|e| AccessError::Failed(e.to_string()))?;
                done.map_err(failed)?;
                state = back;
            }
            McpAuth::OAuth(client) => {
                let Some(authorizer) = &self.authorizer else {
                    return Err(AccessError::LoggedOut(server.to_owned()));
                };
                let mut request = AuthorizationRequest::new(authorizer.redirect_uri())
                    .with_client_name("goondan");
                if let Some(id) = &client.client_id {
                    request = request.with_preregistered_client(id.clone());
                    if let Some(secret) = &client.client_secret {
                        request = request
                            .with_client_secret(secret.reveal().map_err(AccessError::Failed)?);
                    }
                }
                if let Some(metadata) = &client.client_metadata_url {
                    request = request.with_client_metadata_url(metadata.clone());
                }
                let challenged = challenge
                    .zip(url::Url::parse(url).ok())
                    .and_then(|(c, base)| WWWAuthenticateParams::parse(c, &base).scope)
                    .unwrap_or_default();
                let mut scopes: Vec<String> = Vec::new();
                if !granted.is_empty() {
                    for s in granted
                        .iter()
                        .map(String::as_str)
                        .chain(challenged.split_whitespace())
                    {
                        if !scopes.iter().any(|have| have == s) {
                            scopes.push(s.to_owned());
                        }
                    }
                }
                for s in &client.scopes {
                    if !scopes.contains(s) {
                        scopes.push(s.clone());
                    }
                }
                if !scopes.is_empty() {
                    request = request.with_scopes(scopes);
                }
                if let Some(challenge) = challenge {
                    request = request.with_challenge(challenge.to_owned());
                }
                state.start_authorization(request).await.map_err(failed)?;
                let auth_url = state.get_authorization_url().await.map_err(failed)?;
                let expected = authorizer.redirect_uri();
                let redirect = authorizer
                    .authorize(server, &auth_url)
                    .await
                    .map_err(AccessError::Failed)?;
                if !same_endpoint(&redirect, &expected) {
                    return Err(AccessError::Failed(format!(
                        "the authorization server sent the browser to `{}`, not to this client's redirect URI `{expected}`",
                        redirect.split('?').next().unwrap_or_default()
                    )));
                }
                let callback =
                    AuthorizationCallback::from_redirect_url(&redirect).map_err(failed)?;
                state
                    .handle_callback_with_issuer(
                        &callback.code,
                        &callback.csrf_token,
                        callback.issuer.as_deref(),
                    )
                    .await
                    .map_err(failed)?;
            }
        }
        state
            .into_authorization_manager()
            .ok_or_else(|| AccessError::Failed("the authorization did not complete".into()))
    }
}

/// Whether `got` is the redirect URI `expected` (scheme, host, port and path; the query is
/// the authorization server's).
fn same_endpoint(got: &str, expected: &str) -> bool {
    match (url::Url::parse(got), url::Url::parse(expected)) {
        (Ok(g), Ok(e)) => {
            g.scheme() == e.scheme()
                && g.host_str() == e.host_str()
                && g.port_or_known_default() == e.port_or_known_default()
                && g.path() == e.path()
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::same_endpoint;

    #[test]
    fn only_a_redirect_to_this_client_s_redirect_uri_is_taken() {
        let ours = "http://127.0.0.1:4000/callback";
        assert!(same_endpoint(
            "http://127.0.0.1:4000/callback?code=a&state=b",
            ours
        ));
        assert!(!same_endpoint(
            "http://203.0.113.9:4000/callback?code=a",
            ours
        ));
        assert!(!same_endpoint(
            "http://127.0.0.1:4001/callback?code=a",
            ours
        ));
        assert!(!same_endpoint(
            "https://127.0.0.1:4000/callback?code=a",
            ours
        ));
        assert!(!same_endpoint("http://127.0.0.1:4000/other?code=a", ours));
        assert!(!same_endpoint("not a url", ours));
    }
}
