//! DPoP-bound tokens (RFC 9449, the MCP authorization extension `auth/dpop`): a P-256 key
//! pair made for one server when its link first needs it, and a proof signed with it
//! (`dpop+jwt`, ES256, the public key in the header) on every token request and every
//! request to the server, with the token's hash (`ath`) on the latter.
//!
//! The servers' nonces are followed: a `use_dpop_nonce` refusal with a `DPoP-Nonce` header
//! is retried with a new proof carrying it, at most [`MAX_NONCE_RETRIES`] times per request,
//! and never for a nonce that does not change or is not a nonce at all; past that the
//! request fails with a message that says why. rmcp's Streamable HTTP transport reports a
//! 401 with its `WWW-Authenticate` header only, so the MCP server's nonce is read from a
//! `ping` posted with the same token and proof (the one request without an effect).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use http::{HeaderMap, HeaderName, HeaderValue};
use ring::rand::{SecureRandom, SystemRandom};
use ring::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, KeyPair};
use rmcp::model::ClientJsonRpcMessage;
use rmcp::transport::auth::{
    OAuthHttpClient, OAuthHttpClientError, OAuthHttpClientFuture, OAuthHttpRedirectPolicy,
    OAuthHttpRequest,
};
use rmcp::transport::streamable_http_client::{
    StreamableHttpClient, StreamableHttpError, StreamableHttpPostResponse,
    StreamableHttpResponseLimits,
};

use super::token_endpoint::{MAX_TOKEN_RESPONSE, TOKEN_REQUEST_TIMEOUT, oauth_error, read_bounded};

/// How many times one request is retried with a new nonce.
pub(crate) const MAX_NONCE_RETRIES: usize = 2;

/// The longest nonce taken from a server.
const MAX_NONCE: usize = 512;

/// The header of a DPoP proof, and of a server's nonce.
const DPOP: &str = "dpop";
const DPOP_NONCE: &str = "dpop-nonce";

/// Why a request could not carry its proof, or its nonce could not be agreed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum DpopError {
    /// The key pair could not be made, or could not sign.
    #[error("the DPoP key cannot be made or used")]
    Key,
    /// The request's URL is not an absolute HTTP(S) URL.
    #[error("`{0}` is not a URL a DPoP proof can name")]
    Url(String),
    /// The server kept refusing the proofs' nonces.
    #[error(
        "the server asked for a new DPoP nonce {MAX_NONCE_RETRIES} times in a row; its nonces are not usable"
    )]
    NonceLoop,
}

/// The DPoP key pair of one server, and the nonces its authorization server and it gave.
pub(crate) struct Dpop {
    pair: EcdsaKeyPair,
    /// The public key as a JWK, in the member order of its thumbprint (RFC 7638).
    jwk: String,
    rng: SystemRandom,
    /// The authorization server's nonce.
    token_nonce: Nonce,
    /// The MCP server's nonce.
    server_nonce: Nonce,
}

impl std::fmt::Debug for Dpop {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Dpop(<key>)")
    }
}

/// A server's latest nonce.
#[derive(Default)]
struct Nonce(Mutex<Option<String>>);

impl Nonce {
    fn get(&self) -> Option<String> {
        self.0.lock().ok().and_then(|n| n.clone())
    }

    /// Keeps the `DPoP-Nonce` of `headers` if it is a nonce (visible ASCII, at most
    /// [`MAX_NONCE`] bytes); whether it is new.
    fn learn(&self, headers: &HeaderMap) -> bool {
        let Some(value) = headers.get(DPOP_NONCE).and_then(|v| v.to_str().ok()) else {
            return false;
        };
        let usable = !value.is_empty()
            && value.len() <= MAX_NONCE
            && value
                .bytes()
                .all(|b| b.is_ascii_graphic() && b != b'"' && b != b'\\');
        let Ok(mut slot) = self.0.lock() else {
            return false;
        };
        if !usable || slot.as_deref() == Some(value) {
            return false;
        }
        *slot = Some(value.to_owned());
        true
    }
}

impl Dpop {
    /// A new key pair.
    pub(crate) fn generate() -> Result<Self, DpopError> {
        let rng = SystemRandom::new();
        let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng)
            .map_err(|_| DpopError::Key)?;
        let pair = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8.as_ref(), &rng)
            .map_err(|_| DpopError::Key)?;
        // The uncompressed point: 0x04, then x and y, 32 bytes each.
        let point = pair.public_key().as_ref();
        let (Some(x), Some(y)) = (point.get(1..33), point.get(33..65)) else {
            return Err(DpopError::Key);
        };
        let jwk = format!(
            r#"{{"crv":"P-256","kty":"EC","x":"{}","y":"{}"}}"#,
            URL_SAFE_NO_PAD.encode(x),
            URL_SAFE_NO_PAD.encode(y)
        );
        Ok(Self {
            pair,
            jwk,
            rng,
            token_nonce: Nonce::default(),
            server_nonce: Nonce::default(),
        })
    }

    /// The key's JWK SHA-256 thumbprint (RFC 7638), what a bound token's `cnf.jkt` holds.
    #[cfg(test)]
    pub(crate) fn thumbprint(&self) -> String {
        URL_SAFE_NO_PAD.encode(ring::digest::digest(
            &ring::digest::SHA256,
            self.jwk.as_bytes(),
        ))
    }

    /// A proof for the request `method url`, bound to `token` when there is one, with the
    /// server's `nonce` when there is one.
    pub(crate) fn proof(
        &self,
        method: &str,
        url: &str,
        token: Option<&str>,
        nonce: Option<&str>,
    ) -> Result<String, DpopError> {
        let mut htu = url::Url::parse(url).map_err(|_| DpopError::Url(url.to_owned()))?;
        if !matches!(htu.scheme(), "http" | "https") {
            return Err(DpopError::Url(url.to_owned()));
        }
        htu.set_query(None);
        htu.set_fragment(None);
        let mut jti = [0u8; 16];
        self.rng.fill(&mut jti).map_err(|_| DpopError::Key)?;
        let iat = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or_default();
        let mut claims = serde_json::json!({
            "jti": URL_SAFE_NO_PAD.encode(jti),
            "htm": method,
            "htu": htu.as_str(),
            "iat": iat,
        });
        if let Some(token) = token {
            let hash = ring::digest::digest(&ring::digest::SHA256, token.as_bytes());
            claims["ath"] = URL_SAFE_NO_PAD.encode(hash).into();
        }
        if let Some(nonce) = nonce {
            claims["nonce"] = nonce.into();
        }
        let header = format!(r#"{{"typ":"dpop+jwt","alg":"ES256","jwk":{}}}"#, self.jwk);
        let input = format!(
            "{}.{}",
            URL_SAFE_NO_PAD.encode(header),
            URL_SAFE_NO_PAD.encode(claims.to_string())
        );
        let signature = self
            .pair
            .sign(&self.rng, input.as_bytes())
            .map_err(|_| DpopError::Key)?;
        Ok(format!("{input}.{}", URL_SAFE_NO_PAD.encode(signature)))
    }
}

/// rmcp's OAuth requests, with a proof on each token request (a form posted) and the
/// authorization server's nonce followed. rmcp's own client resolves the hosts of discovered
/// metadata through an address filter it does not export; this one follows at most five
/// redirects where rmcp asks it to, and rmcp still checks the host names it discovers.
pub(crate) struct ProvingOAuthClient {
    dpop: Arc<Dpop>,
    follow: reqwest::Client,
    stop: reqwest::Client,
}

impl ProvingOAuthClient {
    /// Token requests proven with `dpop`'s key.
    pub(crate) fn new(dpop: Arc<Dpop>) -> Result<Self, String> {
        crate::tls::install_crypto_provider();
        let build = |redirect| {
            reqwest::Client::builder()
                .timeout(TOKEN_REQUEST_TIMEOUT)
                .redirect(redirect)
                .build()
                .map_err(|e| e.to_string())
        };
        Ok(Self {
            dpop,
            follow: build(reqwest::redirect::Policy::limited(5))?,
            stop: build(reqwest::redirect::Policy::none())?,
        })
    }
}

impl OAuthHttpClient for ProvingOAuthClient {
    fn execute(&self, request: OAuthHttpRequest) -> OAuthHttpClientFuture<'_> {
        Box::pin(async move {
            let client = match request.redirect_policy {
                OAuthHttpRedirectPolicy::Follow => &self.follow,
                _ => &self.stop,
            };
            let (parts, body) = request.request.into_parts();
            let url = parts.uri.to_string();
            let form = parts
                .headers
                .get(http::header::CONTENT_TYPE)
                .and_then(|v| v.to_str().ok())
                .is_some_and(|v| v.starts_with("application/x-www-form-urlencoded"));
            let token_request = parts.method == http::Method::POST && form;
            let mut retries = 0;
            loop {
                let mut next = client
                    .request(parts.method.clone(), url.as_str())
                    .headers(parts.headers.clone())
                    .body(body.clone());
                if token_request {
                    let nonce = self.dpop.token_nonce.get();
                    let proof = self.dpop.proof("POST", &url, None, nonce.as_deref())?;
                    next = next.header(DPOP, proof);
                }
                let response = next.send().await?;
                let status = response.status();
                let headers = response.headers().clone();
                let fresh = self.dpop.token_nonce.learn(&headers);
                let answer = read_bounded(response, MAX_TOKEN_RESPONSE)
                    .await
                    .map_err(OAuthHttpClientError::from)?;
                // Past the bound (or for a nonce that is not new), the refusal goes to rmcp as
                // the token endpoint's answer, which it reports with its error code.
                if token_request
                    && status == http::StatusCode::BAD_REQUEST
                    && fresh
                    && retries < MAX_NONCE_RETRIES
                    && oauth_error(&answer).0 == "use_dpop_nonce"
                {
                    retries += 1;
                    continue;
                }
                let mut built = http::Response::builder().status(status);
                if let Some(h) = built.headers_mut() {
                    *h = headers;
                }
                return built
                    .body(answer)
                    .map_err(|e| Box::new(e) as OAuthHttpClientError);
            }
        })
    }
}

/// The HTTP client of an authorized connection: plain bearer tokens, or, with a [`Dpop`],
/// the `DPoP` scheme and a proof on every request. rmcp's `AuthClient` wraps it.
#[derive(Clone, Default)]
pub(crate) struct ResourceClient {
    http: reqwest::Client,
    dpop: Option<Arc<Dpop>>,
}

type Headers = HashMap<HeaderName, HeaderValue>;
type HttpError = StreamableHttpError<reqwest::Error>;

impl ResourceClient {
    /// Requests proven with `dpop`'s key, when there is one.
    pub(crate) fn new(dpop: Option<Arc<Dpop>>) -> Self {
        Self {
            http: reqwest::Client::default(),
            dpop,
        }
    }

    /// `call` with the token as `Authorization: DPoP` and a proof for `method uri`, again
    /// with a new nonce when the server asks for one; as is without DPoP or without a token.
    async fn proven<T, F, Fut>(
        &self,
        method: &str,
        uri: &str,
        session: Option<&str>,
        token: Option<String>,
        headers: Headers,
        call: F,
    ) -> Result<T, HttpError>
    where
        F: Fn(Option<String>, Headers) -> Fut,
        Fut: Future<Output = Result<T, HttpError>>,
    {
        let (Some(dpop), Some(token)) = (&self.dpop, token.clone()) else {
            return call(token, headers).await;
        };
        let unusable = |e: DpopError| HttpError::UnexpectedServerResponse(e.to_string().into());
        let mut retries = 0;
        loop {
            let nonce = dpop.server_nonce.get();
            let proven =
                proof_headers(dpop, method, uri, &token, nonce.as_deref()).map_err(unusable)?;
            let mut all = headers.clone();
            all.extend(proven);
            match call(None, all).await {
                Err(HttpError::AuthRequired(e))
                    if e.www_authenticate_header.contains("use_dpop_nonce") =>
                {
                    if retries == MAX_NONCE_RETRIES
                        || !self.learn_nonce(dpop, uri, session, &token, &headers).await
                    {
                        return Err(unusable(DpopError::NonceLoop));
                    }
                    retries += 1;
                }
                other => return other,
            }
        }
    }

    /// Posts a `ping` with `token` and a proof to read the server's `DPoP-Nonce`; whether it
    /// gave a new one.
    async fn learn_nonce(
        &self,
        dpop: &Dpop,
        uri: &str,
        session: Option<&str>,
        token: &str,
        headers: &Headers,
    ) -> bool {
        let nonce = dpop.server_nonce.get();
        let Ok(proven) = proof_headers(dpop, "POST", uri, token, nonce.as_deref()) else {
            return false;
        };
        let mut request = self
            .http
            .post(uri)
            .header(http::header::ACCEPT, "application/json, text/event-stream")
            .json(&serde_json::json!({"jsonrpc": "2.0", "id": "dpop-nonce", "method": "ping"}));
        for (name, value) in headers.iter().chain(proven.iter()) {
            request = request.header(name, value);
        }
        if let Some(session) = session {
            request = request.header("mcp-session-id", session);
        }
        match request.timeout(TOKEN_REQUEST_TIMEOUT).send().await {
            // Only the headers are read; the body is dropped unread.
            Ok(response) => dpop.server_nonce.learn(response.headers()),
            Err(_) => false,
        }
    }
}

/// The `Authorization` and `DPoP` headers of a request `method uri` with `token`.
fn proof_headers(
    dpop: &Dpop,
    method: &str,
    uri: &str,
    token: &str,
    nonce: Option<&str>,
) -> Result<Headers, DpopError> {
    let value = |s: String| HeaderValue::try_from(s).map_err(|_| DpopError::Key);
    let proof = dpop.proof(method, uri, Some(token), nonce)?;
    Ok(HashMap::from([
        (http::header::AUTHORIZATION, value(format!("DPoP {token}"))?),
        (HeaderName::from_static(DPOP), value(proof)?),
    ]))
}

impl StreamableHttpClient for ResourceClient {
    type Error = reqwest::Error;

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_token: Option<String>,
        custom_headers: Headers,
    ) -> Result<StreamableHttpPostResponse, HttpError> {
        self.post_message_with_response_limits(
            uri,
            message,
            session_id,
            auth_token,
            custom_headers,
            StreamableHttpResponseLimits::default(),
        )
        .await
    }

    async fn post_message_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_token: Option<String>,
        custom_headers: Headers,
        max_sse_event_size: usize,
    ) -> Result<StreamableHttpPostResponse, HttpError> {
        let mut limits = StreamableHttpResponseLimits::default();
        limits.max_sse_event_size = max_sse_event_size;
        self.post_message_with_response_limits(
            uri,
            message,
            session_id,
            auth_token,
            custom_headers,
            limits,
        )
        .await
    }

    async fn post_message_with_response_limits(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_token: Option<String>,
        custom_headers: Headers,
        limits: StreamableHttpResponseLimits,
    ) -> Result<StreamableHttpPostResponse, HttpError> {
        self.proven(
            "POST",
            &uri,
            session_id.as_deref(),
            auth_token,
            custom_headers,
            |token, headers| {
                self.http.post_message_with_response_limits(
                    uri.clone(),
                    message.clone(),
                    session_id.clone(),
                    token,
                    headers,
                    limits,
                )
            },
        )
        .await
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth_token: Option<String>,
        custom_headers: Headers,
    ) -> Result<(), HttpError> {
        self.proven(
            "DELETE",
            &uri,
            Some(&*session_id),
            auth_token,
            custom_headers,
            |token, headers| {
                self.http
                    .delete_session(uri.clone(), session_id.clone(), token, headers)
            },
        )
        .await
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_token: Option<String>,
        custom_headers: Headers,
    ) -> Result<rmcp::transport::common::client_side_sse::BoxedSseResponse, HttpError> {
        self.proven(
            "GET",
            &uri,
            session_id.as_deref(),
            auth_token,
            custom_headers,
            |token, headers| {
                self.http.get_stream(
                    uri.clone(),
                    session_id.clone(),
                    last_event_id.clone(),
                    token,
                    headers,
                )
            },
        )
        .await
    }

    async fn get_stream_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_token: Option<String>,
        custom_headers: Headers,
        max_sse_event_size: usize,
    ) -> Result<rmcp::transport::common::client_side_sse::BoxedSseResponse, HttpError> {
        self.proven(
            "GET",
            &uri,
            session_id.as_deref(),
            auth_token,
            custom_headers,
            |token, headers| {
                self.http.get_stream_with_max_sse_event_size(
                    uri.clone(),
                    session_id.clone(),
                    last_event_id.clone(),
                    token,
                    headers,
                    max_sse_event_size,
                )
            },
        )
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::{Dpop, Nonce};
    use base64::Engine as _;
    use base64::engine::general_purpose::URL_SAFE_NO_PAD;
    use http::{HeaderMap, HeaderValue};
    use ring::signature::{ECDSA_P256_SHA256_FIXED, UnparsedPublicKey};

    fn part(s: &str) -> serde_json::Value {
        serde_json::from_slice(&URL_SAFE_NO_PAD.decode(s).unwrap()).unwrap()
    }

    #[test]
    fn a_proof_is_an_es256_dpop_jwt_that_its_own_public_key_verifies() {
        let dpop = Dpop::generate().unwrap();
        let proof = dpop
            .proof(
                "POST",
                "http://127.0.0.1:9/mcp?x=1#f",
                Some("tok"),
                Some("n-1"),
            )
            .unwrap();
        let parts: Vec<_> = proof.split('.').collect();
        let (header, claims) = (part(parts[0]), part(parts[1]));
        assert_eq!(header["typ"], "dpop+jwt");
        assert_eq!(header["alg"], "ES256");
        assert!(
            header["jwk"].get("d").is_none(),
            "no private key in the header"
        );
        assert_eq!(claims["htm"], "POST");
        assert_eq!(claims["htu"], "http://127.0.0.1:9/mcp");
        assert_eq!(claims["nonce"], "n-1");
        let ath = ring::digest::digest(&ring::digest::SHA256, b"tok");
        assert_eq!(claims["ath"], URL_SAFE_NO_PAD.encode(ath));
        // The signature verifies with the key in the header.
        let coordinate = |k: &str| {
            URL_SAFE_NO_PAD
                .decode(header["jwk"][k].as_str().unwrap())
                .unwrap()
        };
        let point = [vec![4u8], coordinate("x"), coordinate("y")].concat();
        let signature = URL_SAFE_NO_PAD.decode(parts[2]).unwrap();
        let input = format!("{}.{}", parts[0], parts[1]);
        UnparsedPublicKey::new(&ECDSA_P256_SHA256_FIXED, point)
            .verify(input.as_bytes(), &signature)
            .unwrap();
        // Each proof is a new one.
        let again = dpop
            .proof("POST", "http://127.0.0.1:9/mcp", None, None)
            .unwrap();
        let again = part(again.split('.').nth(1).unwrap());
        assert_ne!(again["jti"], claims["jti"]);
        assert!(again.get("ath").is_none() && again.get("nonce").is_none());
        assert_eq!(dpop.thumbprint().len(), 43);
        assert!(dpop.proof("GET", "not a url", None, None).is_err());
        assert!(dpop.proof("GET", "file:///etc/passwd", None, None).is_err());
    }

    #[test]
    fn only_a_new_well_formed_nonce_is_taken() {
        let nonce = Nonce::default();
        let with = |v: &str| {
            let mut h = HeaderMap::new();
            h.insert("dpop-nonce", HeaderValue::from_str(v).unwrap());
            h
        };
        assert!(!nonce.learn(&HeaderMap::new()));
        assert!(nonce.learn(&with("abc")));
        assert!(!nonce.learn(&with("abc")), "the same nonce is not new");
        assert!(!nonce.learn(&with("has space")));
        assert!(!nonce.learn(&with(&"x".repeat(600))));
        assert!(!nonce.learn(&with("quo\"te")));
        assert_eq!(nonce.get().as_deref(), Some("abc"));
    }
}
