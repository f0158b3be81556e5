//! How the bridge authorizes with a Streamable HTTP server that asks for OAuth 2.1: the
//! choice a server's configuration makes ([`McpAuth`]) and the one step a person takes in the
//! authorization-code flow, opening the URL ([`Authorizer`]).
//!
//! The flow itself is rmcp's (`rmcp::transport::auth`): protected-resource and
//! authorization-server metadata discovery, the scope of a `WWW-Authenticate` challenge,
//! client registration (pre-registered, a client ID metadata document, or dynamic
//! registration), PKCE, resource indicators, `iss` checks, refresh.

use std::fmt;
use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;

/// A secret of a configuration (a client secret, a private key): given as is, or read when it
/// is used from an environment variable or a file, so that a bundle names it without holding
/// it. `Debug` never shows it.
///
/// ```
/// use goondan_runtime::mcp::client::Secret;
/// let s = Secret::new("hunter2");
/// assert_eq!(format!("{s:?}"), "Secret(<redacted>)");
/// assert_eq!(s.reveal().as_deref(), Ok("hunter2"));
/// let missing = Secret::from_env("GOONDAN_DOC_NO_SUCH_VARIABLE");
/// assert!(missing.reveal().unwrap_err().contains("GOONDAN_DOC_NO_SUCH_VARIABLE"));
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(SecretSource);

#[derive(Clone, PartialEq, Eq)]
enum SecretSource {
    Value(String),
    Env(String),
    File(PathBuf),
}

/// The largest secret file read.
const MAX_SECRET_FILE: u64 = 64 * 1024;

impl Secret {
    /// The secret `value`.
    pub fn new(value: impl Into<String>) -> Self {
        Self(SecretSource::Value(value.into()))
    }

    /// The value of the environment variable `name` when the secret is used.
    pub fn from_env(name: impl Into<String>) -> Self {
        Self(SecretSource::Env(name.into()))
    }

    /// The contents of the file `path` (at most 64 KiB) when the secret is used.
    pub fn from_file(path: impl Into<PathBuf>) -> Self {
        Self(SecretSource::File(path.into()))
    }

    /// The secret itself, for the one place that sends it; why there is none.
    pub fn reveal(&self) -> Result<String, String> {
        match &self.0 {
            SecretSource::Value(v) => Ok(v.clone()),
            SecretSource::Env(name) => std::env::var(name)
                .map_err(|_| format!("the environment variable `{name}` is not set")),
            SecretSource::File(path) => {
                use std::io::Read;
                let mut text = String::new();
                std::fs::File::open(path)
                    .and_then(|f| f.take(MAX_SECRET_FILE + 1).read_to_string(&mut text))
                    .map_err(|e| format!("cannot read `{}`: {e}", path.display()))?;
                if text.len() as u64 > MAX_SECRET_FILE {
                    return Err(format!("`{}` is larger than 64 KiB", path.display()));
                }
                Ok(text)
            }
        }
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(<redacted>)")
    }
}

/// How the bridge authorizes with an HTTP server.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum McpAuth {
    /// No authorization beyond the configured headers.
    #[default]
    None,
    /// OAuth 2.1 authorization code with PKCE, for a person's account. The tokens come from
    /// `goondan mcp login SERVER` (or an [`Authorizer`] given to the extension) and are kept
    /// in the [`TokenStore`](super::TokenStore).
    OAuth(OAuthClient),
    /// OAuth client credentials, for a service account: no person involved.
    ClientCredentials(ClientCredentials),
    /// Workload identity federation: a JWT the workload's platform issues (a Kubernetes
    /// service account token, a cloud identity token) traded for an access token with the
    /// JWT bearer grant (RFC 7523).
    WorkloadIdentity(WorkloadIdentity),
    /// Enterprise-managed authorization: the person's ID token from their company's identity
    /// provider traded there for an identity assertion grant (ID-JAG, RFC 8693 token
    /// exchange), which the server's authorization server trades for an access token (RFC
    /// 7523 JWT bearer grant). No browser involved.
    Enterprise(EnterpriseGrant),
}

/// The OAuth client the bridge is for an authorization-code server. Every field is optional:
/// with none, the client registers itself where the authorization server allows it (a client
/// ID metadata document, else dynamic registration).
///
/// ```
/// use goondan_runtime::mcp::client::{McpAuth, OAuthClient};
/// let auth = McpAuth::OAuth(OAuthClient::new().client_id("goondan").scopes(["files:read"]));
/// assert!(matches!(auth, McpAuth::OAuth(_)));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct OAuthClient {
    pub(crate) client_id: Option<String>,
    pub(crate) client_secret: Option<Secret>,
    pub(crate) client_metadata_url: Option<String>,
    pub(crate) scopes: Vec<String>,
    pub(crate) dpop: bool,
}

impl OAuthClient {
    /// A client that registers itself.
    pub fn new() -> Self {
        Self::default()
    }

    /// A client registered beforehand with the authorization server.
    #[must_use]
    pub fn client_id(mut self, id: impl Into<String>) -> Self {
        self.client_id = Some(id.into());
        self
    }

    /// The secret of a pre-registered confidential client.
    #[must_use]
    pub fn client_secret(mut self, secret: Secret) -> Self {
        self.client_secret = Some(secret);
        self
    }

    /// The HTTPS URL of this client's metadata document (used as its client ID where the
    /// authorization server supports client ID metadata documents).
    #[must_use]
    pub fn client_metadata_url(mut self, url: impl Into<String>) -> Self {
        self.client_metadata_url = Some(url.into());
        self
    }

    /// The scopes to ask for; by default those of the server's challenge, else those its
    /// metadata supports.
    #[must_use]
    pub fn scopes<S: Into<String>>(mut self, scopes: impl IntoIterator<Item = S>) -> Self {
        self.scopes = scopes.into_iter().map(Into::into).collect();
        self
    }

    /// Binds the tokens to a key pair this client makes (DPoP, RFC 9449): every token request
    /// and every request to the server carries a proof signed with it (ES256), so a token
    /// that leaks is of no use without the key. The server's nonces (`DPoP-Nonce`) are
    /// followed, a bounded number of times per request. The key lives as long as the
    /// process: tokens kept from an earlier run are refused by the server and granted anew.
    #[must_use]
    pub fn dpop(mut self, on: bool) -> Self {
        self.dpop = on;
        self
    }

    /// Whether tokens are DPoP-bound.
    pub fn uses_dpop(&self) -> bool {
        self.dpop
    }
}

/// A workload's identity (workload identity federation): its client ID at the server's
/// authorization server and where the JWT its platform issues is read, at each grant (a
/// platform rotates it; a file is read anew each time).
///
/// ```
/// use goondan_runtime::mcp::client::{McpAuth, Secret, WorkloadIdentity};
/// let auth = McpAuth::WorkloadIdentity(
///     WorkloadIdentity::new("ci-agent", Secret::from_file("/var/run/secrets/tokens/mcp"))
///         .scopes(["builds:read"]),
/// );
/// assert!(matches!(auth, McpAuth::WorkloadIdentity(_)));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkloadIdentity {
    pub(crate) client_id: String,
    pub(crate) assertion: Secret,
    pub(crate) scopes: Vec<String>,
}

impl WorkloadIdentity {
    /// The client `client_id`, whose JWT is `assertion`.
    pub fn new(client_id: impl Into<String>, assertion: Secret) -> Self {
        Self {
            client_id: client_id.into(),
            assertion,
            scopes: Vec::new(),
        }
    }

    /// The scopes to ask for (default: none named).
    #[must_use]
    pub fn scopes<S: Into<String>>(mut self, scopes: impl IntoIterator<Item = S>) -> Self {
        self.scopes = scopes.into_iter().map(Into::into).collect();
        self
    }
}

/// An enterprise-managed grant: the identity provider (its issuer, token endpoint and this
/// client's registration there), the person's ID token from it, and this client's
/// registration at the server's authorization server.
///
/// ```
/// use goondan_runtime::mcp::client::{EnterpriseGrant, IdentityProvider, McpAuth, Secret};
/// let idp = IdentityProvider::new(
///     "https://login.corp.example",
///     "https://login.corp.example/oauth2/token",
///     "goondan-idp-client",
/// );
/// let grant = EnterpriseGrant::new(idp, Secret::from_env("CORP_ID_TOKEN"), "goondan")
///     .client_secret(Secret::from_env("TRACKER_CLIENT_SECRET"));
/// assert!(matches!(McpAuth::Enterprise(grant), McpAuth::Enterprise(_)));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EnterpriseGrant {
    pub(crate) idp: IdentityProvider,
    pub(crate) id_token: Secret,
    pub(crate) client_id: String,
    pub(crate) client_secret: Option<Secret>,
    pub(crate) scopes: Vec<String>,
}

impl EnterpriseGrant {
    /// The ID token `id_token` of `idp`, traded for the client `client_id` of the server's
    /// authorization server (a public client until [`EnterpriseGrant::client_secret`]).
    pub fn new(idp: IdentityProvider, id_token: Secret, client_id: impl Into<String>) -> Self {
        Self {
            idp,
            id_token,
            client_id: client_id.into(),
            client_secret: None,
            scopes: Vec::new(),
        }
    }

    /// The client's secret at the server's authorization server (`client_secret_basic`).
    #[must_use]
    pub fn client_secret(mut self, secret: Secret) -> Self {
        self.client_secret = Some(secret);
        self
    }

    /// The scopes to ask for (default: none named).
    #[must_use]
    pub fn scopes<S: Into<String>>(mut self, scopes: impl IntoIterator<Item = S>) -> Self {
        self.scopes = scopes.into_iter().map(Into::into).collect();
        self
    }
}

/// A company's identity provider, as an [`EnterpriseGrant`] names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdentityProvider {
    pub(crate) issuer: String,
    pub(crate) token_endpoint: String,
    pub(crate) client_id: String,
    pub(crate) client_secret: Option<Secret>,
}

impl IdentityProvider {
    /// The provider `issuer`, its `token_endpoint`, and this client's ID there (a public
    /// client until [`IdentityProvider::client_secret`]).
    pub fn new(
        issuer: impl Into<String>,
        token_endpoint: impl Into<String>,
        client_id: impl Into<String>,
    ) -> Self {
        Self {
            issuer: issuer.into(),
            token_endpoint: token_endpoint.into(),
            client_id: client_id.into(),
            client_secret: None,
        }
    }

    /// The client's secret at the provider (`client_secret_basic`).
    #[must_use]
    pub fn client_secret(mut self, secret: Secret) -> Self {
        self.client_secret = Some(secret);
        self
    }
}

/// The signing algorithm of a `private_key_jwt` client assertion.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum JwtAlgorithm {
    /// RSASSA-PKCS1-v1_5 with SHA-256.
    Rs256,
    /// RSASSA-PKCS1-v1_5 with SHA-384.
    Rs384,
    /// RSASSA-PKCS1-v1_5 with SHA-512.
    Rs512,
    /// ECDSA P-256 with SHA-256.
    Es256,
    /// ECDSA P-384 with SHA-384.
    Es384,
}

impl JwtAlgorithm {
    /// The algorithm named `name` (`RS256`, `ES256`, ...).
    pub fn from_name(name: &str) -> Option<Self> {
        Some(match name {
            "RS256" => Self::Rs256,
            "RS384" => Self::Rs384,
            "RS512" => Self::Rs512,
            "ES256" => Self::Es256,
            "ES384" => Self::Es384,
            _ => return None,
        })
    }

    #[cfg(feature = "private-key-jwt")]
    pub(crate) fn to_rmcp(self) -> rmcp::transport::auth::JwtSigningAlgorithm {
        use rmcp::transport::auth::JwtSigningAlgorithm as A;
        match self {
            Self::Rs256 => A::RS256,
            Self::Rs384 => A::RS384,
            Self::Rs512 => A::RS512,
            Self::Es256 => A::ES256,
            Self::Es384 => A::ES384,
        }
    }
}

/// A service account's client credentials.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ClientCredentials {
    /// A client ID and secret.
    Secret {
        /// The client ID.
        client_id: String,
        /// The secret.
        client_secret: Secret,
        /// The scopes to ask for.
        scopes: Vec<String>,
    },
    /// A client ID and a private key that signs a JWT assertion (RFC 7523). Signing needs the
    /// `private-key-jwt` feature; without it, the grant fails with a message that says so.
    PrivateKeyJwt {
        /// The client ID.
        client_id: String,
        /// The private key, PEM.
        private_key_pem: Secret,
        /// Its algorithm.
        algorithm: JwtAlgorithm,
        /// The scopes to ask for.
        scopes: Vec<String>,
    },
}

impl ClientCredentials {
    /// A client ID and secret.
    pub fn secret(client_id: impl Into<String>, client_secret: Secret) -> Self {
        Self::Secret {
            client_id: client_id.into(),
            client_secret,
            scopes: Vec::new(),
        }
    }

    /// A client ID and a PEM private key signing with `algorithm`.
    pub fn private_key_jwt(
        client_id: impl Into<String>,
        private_key_pem: Secret,
        algorithm: JwtAlgorithm,
    ) -> Self {
        Self::PrivateKeyJwt {
            client_id: client_id.into(),
            private_key_pem,
            algorithm,
            scopes: Vec::new(),
        }
    }

    pub(crate) fn to_rmcp(
        &self,
        resource: &str,
    ) -> Result<rmcp::transport::auth::ClientCredentialsConfig, String> {
        use rmcp::transport::auth::ClientCredentialsConfig as C;
        Ok(match self {
            Self::Secret {
                client_id,
                client_secret,
                scopes,
            } => C::ClientSecret {
                client_id: client_id.clone(),
                client_secret: client_secret.reveal()?,
                scopes: scopes.clone(),
                resource: Some(resource.to_owned()),
            },
            #[cfg(feature = "private-key-jwt")]
            Self::PrivateKeyJwt {
                client_id,
                private_key_pem,
                algorithm,
                scopes,
            } => C::PrivateKeyJwt {
                client_id: client_id.clone(),
                signing_key: private_key_pem.reveal()?.into_bytes(),
                signing_algorithm: algorithm.to_rmcp(),
                token_endpoint_audience: None,
                scopes: scopes.clone(),
                resource: Some(resource.to_owned()),
            },
            #[cfg(not(feature = "private-key-jwt"))]
            Self::PrivateKeyJwt { .. } => {
                return Err(
                    "a `private_key_jwt` client assertion needs goondan-runtime's \
                            `private-key-jwt` feature"
                        .to_owned(),
                );
            }
        })
    }

    /// Asks for `scopes`.
    #[must_use]
    pub fn scopes<S: Into<String>>(mut self, more: impl IntoIterator<Item = S>) -> Self {
        let list = match &mut self {
            Self::Secret { scopes, .. } | Self::PrivateKeyJwt { scopes, .. } => scopes,
        };
        *list = more.into_iter().map(Into::into).collect();
        self
    }
}

/// What [`Authorizer::authorize`] returns.
pub type AuthorizeFuture<'a> = Pin<Box<dyn Future<Output = Result<String, String>> + Send + 'a>>;

/// The person's part of the authorization-code flow: show them the authorization URL and
/// hand back the URL the authorization server redirected their browser to.
///
/// `goondan mcp login` uses [`LoopbackAuthorizer`](super::LoopbackAuthorizer). An extension
/// without an authorizer never starts a flow: a server that needs one the token store cannot
/// satisfy is `E_MCP_AUTH`, with the suggestion to log in.
pub trait Authorizer: Send + Sync + 'static {
    /// The redirect URI registered for this client (a loopback URL).
    fn redirect_uri(&self) -> String;

    /// Has the person open `url` for the server `server`; answers the redirect URL (with its
    /// `code`, `state` and `iss`) or why there is none.
    fn authorize<'a>(&'a self, server: &'a str, url: &'a str) -> AuthorizeFuture<'a>;
}
