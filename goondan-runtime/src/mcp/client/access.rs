//! Getting a server's authorization: the tokens kept for it, or a new grant (client
//! credentials, or the authorization-code flow through the extension's [`Authorizer`]), on
//! rmcp's OAuth client. What the link calls when a server answers 401, or 403
//! `insufficient_scope`.

use std::sync::Arc;

use rmcp::transport::auth::{
    AuthorizationCallback, AuthorizationManager, AuthorizationMetadata, AuthorizationRequest,
    AuthorizationSession, CredentialStore, InMemoryCredentialStore, OAuthState,
    WWWAuthenticateParams,
};

use super::auth::{Authorizer, McpAuth};
use super::config::McpServerConfig;
use super::dpop::{Dpop, ProvingOAuthClient, ResourceClient};
use super::token_store::{ServerTokens, TokenStore};

/// What an extension gives its links for authorization.
#[derive(Clone, Default)]
pub(crate) struct Access {
    /// Where tokens are kept; none: in memory, for the life of the link.
    pub(crate) tokens: Option<TokenStore>,
    /// Who opens authorization URLs; none: no flow is started.
    pub(crate) authorizer: Option<Arc<dyn Authorizer>>,
    /// The DPoP key of each server that binds its tokens to one, made when first needed.
    pub(crate) dpop: Arc<std::sync::Mutex<std::collections::HashMap<String, Arc<Dpop>>>>,
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

fn failed(e: impl std::fmt::Display) -> AccessError {
    AccessError::Failed(e.to_string())
}

impl Access {
    /// The DPoP key of `config`'s server, when its tokens are DPoP-bound.
    fn dpop(&self, config: &McpServerConfig) -> Result<Option<Arc<Dpop>>, AccessError> {
        let McpAuth::OAuth(client) = &config.auth else {
            return Ok(None);
        };
        if !client.dpop {
            return Ok(None);
        }
        let mut keys = self
            .dpop
            .lock()
            .map_err(|_| AccessError::Failed("the DPoP keys are poisoned".into()))?;
        if let Some(key) = keys.get(&config.name) {
            return Ok(Some(Arc::clone(key)));
        }
        let key = Arc::new(Dpop::generate().map_err(failed)?);
        keys.insert(config.name.clone(), Arc::clone(&key));
        Ok(Some(key))
    }

    /// The HTTP client of an authorized connection to `config`'s server: DPoP proofs on
    /// every request when its tokens are DPoP-bound.
    pub(crate) fn resource_client(
        &self,
        config: &McpServerConfig,
    ) -> Result<ResourceClient, AccessError> {
        Ok(ResourceClient::new(self.dpop(config)?))
    }

    /// rmcp's OAuth client for `config`'s server at `url`, on the server's tokens in the token
    /// store (or in memory, without one), and that store.
    async fn manager(
        &self,
        config: &McpServerConfig,
        url: &str,
    ) -> Result<(AuthorizationManager, Option<ServerTokens>), AccessError> {
        // rmcp's OAuth client builds reqwest clients of its own.
        crate::tls::install_crypto_provider();
        let mut manager = match self.dpop(config)? {
            Some(dpop) => {
                let proving = ProvingOAuthClient::new(dpop).map_err(AccessError::Failed)?;
                AuthorizationManager::new_with_oauth_http_client(url, Arc::new(proving))
                    .await
                    .map_err(failed)?
            }
            None => AuthorizationManager::new(url).await.map_err(failed)?,
        };
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
        let (mut manager, kept) = self.manager(config, url).await?;
        // Kept tokens go to the token endpoint the server's metadata names now: it is looked
        // at first (rmcp would look it up the same way).
        if let Some(kept) = kept
            && let Ok(Some(credentials)) = kept.load().await
            && credentials.token_response.is_some()
        {
            discover(&mut manager, None).await?;
        }
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
        let (mut manager, kept) = self.manager(config, url).await?;
        // The scopes held are those of this connection and those of the grant kept from an
        // earlier one (a restarted run knows only the kept grant).
        let mut granted = granted.to_vec();
        if let Some(kept) = kept
            && let Ok(Some(credentials)) = kept.load().await
        {
            granted.extend(credentials.granted_scopes);
        }
        let state = match &config.auth {
            McpAuth::None => return Err(AccessError::Failed("no `auth` is configured".into())),
            McpAuth::WorkloadIdentity(identity) => {
                let metadata = discover(&mut manager, challenge).await?;
                let token = super::workload::grant(identity, &metadata.token_endpoint, url)
                    .await
                    .map_err(failed)?;
                authorized(manager, &identity.client_id, token).await?
            }
            McpAuth::Enterprise(grant) => {
                let metadata = discover(&mut manager, challenge).await?;
                let Some(issuer) = metadata.issuer.as_deref() else {
                    return Err(AccessError::Failed(
                        "the authorization server's metadata names no issuer, which an identity assertion grant is bound to".into(),
                    ));
                };
                let token = super::enterprise::grant(grant, issuer, &metadata.token_endpoint, url)
                    .await
                    .map_err(failed)?;
                authorized(manager, &grant.client_id, token).await?
            }
            McpAuth::ClientCredentials(cc) => {
                // rmcp looks the metadata up again for the exchange; this look is ours.
                discover(&mut manager, None).await?;
                let mut state = OAuthState::Unauthorized(manager);
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
                .map_err(failed)?;
                done.map_err(failed)?;
                back
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
                // A grant holding scopes asks for them and the challenged ones; then the
                // configured ones, each once.
                let step_up = (!granted.is_empty()).then(|| {
                    let held = granted.iter().map(String::as_str);
                    held.chain(challenged.split_whitespace())
                });
                let configured = client.scopes.iter().map(String::as_str);
                let mut scopes: Vec<String> = Vec::new();
                for s in step_up.into_iter().flatten().chain(configured) {
                    if !scopes.iter().any(|have| have == s) {
                        scopes.push(s.to_owned());
                    }
                }
                if !scopes.is_empty() {
                    request = request.with_scopes(scopes);
                }
                // Discovery from the challenge, as rmcp's `start_authorization` does it, with
                // the endpoints checked before the person is sent anywhere.
                discover(&mut manager, challenge).await?;
                let session = AuthorizationSession::new(manager, request)
                    .await
                    .map_err(|(_, e)| failed(e))?;
                let mut state = OAuthState::Session(session);
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
                state
            }
        };
        state
            .into_authorization_manager()
            .ok_or_else(|| AccessError::Failed("the authorization did not complete".into()))
    }
}

/// `manager` holding `token`, granted to the client `client_id` outside rmcp's flows.
async fn authorized(
    manager: AuthorizationManager,
    client_id: &str,
    token: rmcp::transport::auth::OAuthTokenResponse,
) -> Result<OAuthState, AccessError> {
    let mut state = OAuthState::Unauthorized(manager);
    state
        .set_credentials(client_id, token)
        .await
        .map_err(failed)?;
    Ok(state)
}

/// Looks up the authorization server's metadata (from the server's `challenge`, when there
/// is one), refuses it unless its endpoints are on one origin, and gives it to `manager`.
async fn discover(
    manager: &mut AuthorizationManager,
    challenge: Option<&str>,
) -> Result<AuthorizationMetadata, AccessError> {
    let metadata = manager
        .resolve_metadata_from_challenge(challenge)
        .await
        .map_err(failed)?
        .metadata;
    one_origin(&metadata)?;
    manager.set_metadata(metadata.clone());
    Ok(metadata)
}

/// Refuses authorization-server metadata whose token endpoint is on another origin than the
/// authorization server it describes (its `issuer`, else its authorization endpoint): the
/// codes, refresh tokens and client secrets sent there would go to someone else.
fn one_origin(metadata: &AuthorizationMetadata) -> Result<(), AccessError> {
    let origin = |u: &str| url::Url::parse(u).ok().map(|u| u.origin());
    let server = metadata
        .issuer
        .as_deref()
        .unwrap_or(&metadata.authorization_endpoint);
    match (origin(server), origin(&metadata.token_endpoint)) {
        (Some(a), Some(t)) if a == t && a.is_tuple() => Ok(()),
        _ => Err(AccessError::Failed(format!(
            "the authorization server `{server}` names a token endpoint on another origin, `{}`; \
             no code or token is sent there",
            metadata.token_endpoint
        ))),
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
    use super::{AuthorizationMetadata, one_origin, same_endpoint};

    #[test]
    fn a_token_endpoint_on_another_origin_than_its_authorization_server_is_refused() {
        let metadata = |issuer: Option<&str>, token: &str| {
            let mut m = AuthorizationMetadata::default();
            m.issuer = issuer.map(str::to_owned);
            m.authorization_endpoint = "https://auth.example.com/authorize".to_owned();
            m.token_endpoint = token.to_owned();
            m
        };
        assert!(
            one_origin(&metadata(
                Some("https://auth.example.com/t1"),
                "https://auth.example.com/t1/token"
            ))
            .is_ok()
        );
        assert!(one_origin(&metadata(None, "https://auth.example.com:443/token")).is_ok());
        for token in [
            "https://evil.example.com/token",
            "http://auth.example.com/token",
            "https://auth.example.com:8443/token",
            "not a url",
        ] {
            let err = one_origin(&metadata(Some("https://auth.example.com"), token)).unwrap_err();
            assert!(err.to_string().contains("another origin"), "{err}");
        }
    }

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
