//! [`LoopbackAuthorizer`]: the browser step of `goondan mcp login`. It listens on 127.0.0.1,
//! shows the authorization URL, and takes the one redirect that comes back with the same
//! `state`; anything else that knocks is answered 400 and ignored.

use std::convert::Infallible;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::Full;
use hyper::service::service_fn;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;
use tokio::sync::mpsc;

use super::auth::{AuthorizeFuture, Authorizer};
use crate::lock;

/// The path the redirect comes back to.
const CALLBACK_PATH: &str = "/callback";

/// Where the URL is shown: the person's terminal, or a test that reads it.
pub type ShowUrl = Arc<dyn Fn(&str, &str) + Send + Sync>;

/// Listens on `127.0.0.1:{port}` for the authorization server's redirect.
///
/// ```no_run
/// use goondan_runtime::mcp::client::{Authorizer, LoopbackAuthorizer};
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> std::io::Result<()> {
/// let browser = LoopbackAuthorizer::bind(0).await?;
/// assert!(browser.redirect_uri().starts_with("http://127.0.0.1:"));
/// # Ok(())
/// # }
/// ```
pub struct LoopbackAuthorizer {
    listener: Mutex<Option<TcpListener>>,
    port: u16,
    wait: Duration,
    show: ShowUrl,
}

impl std::fmt::Debug for LoopbackAuthorizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LoopbackAuthorizer")
            .field("port", &self.port)
            .finish_non_exhaustive()
    }
}

impl LoopbackAuthorizer {
    /// Listens on `127.0.0.1:port` (`0`: any free port). The URL is printed on stderr; the
    /// person has 5 minutes.
    pub async fn bind(port: u16) -> std::io::Result<Self> {
        let listener = TcpListener::bind(("127.0.0.1", port)).await?;
        let port = listener.local_addr()?.port();
        Ok(Self {
            listener: Mutex::new(Some(listener)),
            port,
            wait: Duration::from_secs(300),
            show: Arc::new(|server, url| {
                eprintln!("To authorize `{server}`, open this URL in your browser:\n\n  {url}\n");
            }),
        })
    }

    /// Shows the URL with `show` instead of printing it.
    #[must_use]
    pub fn show_with(mut self, show: ShowUrl) -> Self {
        self.show = show;
        self
    }

    /// How long to wait for the redirect.
    #[must_use]
    pub fn wait(mut self, wait: Duration) -> Self {
        self.wait = wait;
        self
    }

    async fn receive(&self, state: Option<String>) -> Result<String, String> {
        let listener = lock(&self.listener)
            .take()
            .ok_or("this authorizer was used already")?;
        let (tx, mut rx) = mpsc::channel::<String>(1);
        let port = self.port;
        let serve = async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    continue;
                };
                let tx = tx.clone();
                let state = state.clone();
                let svc = service_fn(move |req: Request<hyper::body::Incoming>| {
                    let tx = tx.clone();
                    let state = state.clone();
                    async move {
                        let path_and_query = req
                            .uri()
                            .path_and_query()
                            .map(|p| p.as_str().to_owned())
                            .unwrap_or_default();
                        let url = format!("http://127.0.0.1:{port}{path_and_query}");
                        let ours = req.uri().path() == CALLBACK_PATH
                            && url::Url::parse(&url)
                                .is_ok_and(|u| state.is_none() || state_of(&u) == state);
                        let (status, text) = if ours {
                            let _ = tx.try_send(url);
                            (
                                StatusCode::OK,
                                "Authorized. You can close this window and go back to the terminal.",
                            )
                        } else {
                            (StatusCode::BAD_REQUEST, "Not an authorization redirect.")
                        };
                        let mut res = Response::new(Full::new(Bytes::from_static(text.as_bytes())));
                        *res.status_mut() = status;
                        Ok::<_, Infallible>(res)
                    }
                });
                tokio::spawn(async move {
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), svc)
                        .await;
                });
            }
        };
        tokio::select! {
            () = serve => Err("the redirect listener stopped".to_owned()),
            got = rx.recv() => got.ok_or_else(|| "the redirect listener stopped".to_owned()),
            () = tokio::time::sleep(self.wait) => Err(format!(
                "no authorization came back within {} s",
                self.wait.as_secs()
            )),
        }
    }
}

impl Authorizer for LoopbackAuthorizer {
    fn redirect_uri(&self) -> String {
        format!("http://127.0.0.1:{}{CALLBACK_PATH}", self.port)
    }

    fn authorize<'a>(&'a self, server: &'a str, url: &'a str) -> AuthorizeFuture<'a> {
        Box::pin(async move {
            let state = url::Url::parse(url).ok().and_then(|u| state_of(&u));
            (self.show)(server, url);
            self.receive(state).await
        })
    }
}

/// The `state` parameter of `url`.
fn state_of(url: &url::Url) -> Option<String> {
    let (_, state) = url.query_pairs().find(|(k, _)| k == "state")?;
    Some(state.into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn only_the_redirect_with_the_flow_s_state_is_taken() {
        let browser = LoopbackAuthorizer::bind(0).await.unwrap();
        let redirect = browser.redirect_uri();
        let shown = Arc::new(Mutex::new(String::new()));
        let seen = Arc::clone(&shown);
        let browser = browser.show_with(Arc::new(move |_, url| {
            *seen.lock().unwrap() = url.to_owned();
        }));
        let knock = {
            let redirect = redirect.clone();
            async move {
                tokio::time::sleep(Duration::from_millis(50)).await;
                crate::tls::install_crypto_provider();
                let http = reqwest::Client::new();
                let wrong = http
                    .get(format!("{redirect}?code=x&state=other"))
                    .send()
                    .await
                    .unwrap();
                assert_eq!(wrong.status(), 400);
                let right = http
                    .get(format!("{redirect}?code=c1&state=s1&iss=https%3A%2F%2Fas"))
                    .send()
                    .await
                    .unwrap();
                assert_eq!(right.status(), 200);
            }
        };
        let (got, ()) = tokio::join!(
            browser.authorize("srv", "https://as.example/authorize?state=s1&x=1"),
            knock
        );
        let got = got.unwrap();
        assert!(
            got.starts_with(&redirect) && got.contains("code=c1"),
            "{got}"
        );
        assert_eq!(
            *shown.lock().unwrap(),
            "https://as.example/authorize?state=s1&x=1"
        );
    }
}
