//! [`Headless`]: the browser of the tests whose authorization servers approve at once (the
//! conformance suite's): it opens the authorization URL and hands back where the
//! authorization server redirected, without following it.

use goondan_runtime::mcp::client::{AuthorizeFuture, Authorizer};

/// Opens the authorization URL; the `Location` of the answer is the redirect a person's
/// browser would bring back. `rewrite` changes it first (a test of a redirect elsewhere).
pub(crate) struct Headless {
    pub(crate) rewrite: fn(String) -> String,
}

impl Headless {
    /// A browser that brings the redirect back unchanged.
    pub(crate) const fn new() -> Self {
        Self { rewrite: |u| u }
    }
}

impl Authorizer for Headless {
    fn redirect_uri(&self) -> String {
        "http://127.0.0.1:3000/callback".to_owned()
    }

    fn authorize<'a>(&'a self, _server: &'a str, url: &'a str) -> AuthorizeFuture<'a> {
        Box::pin(async move {
            goondan_runtime::tls::install_crypto_provider();
            let http = reqwest::Client::builder()
                .redirect(reqwest::redirect::Policy::none())
                .build()
                .map_err(|e| e.to_string())?;
            let answer = http.get(url).send().await.map_err(|e| e.to_string())?;
            answer
                .headers()
                .get(reqwest::header::LOCATION)
                .and_then(|v| v.to_str().ok())
                .map(|l| (self.rewrite)(l.to_owned()))
                .ok_or_else(|| format!("the authorization server answered {}", answer.status()))
        })
    }
}
