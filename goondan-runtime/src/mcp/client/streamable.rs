//! The Streamable HTTP client of the bridge: rmcp's, with the events a server streams
//! [screened](super::screen) before rmcp reads them, as a stdio server's lines are. rmcp skips
//! an event it cannot read, so one tool nested too deep would leave a whole `tools/list`
//! unanswered until its timeout. A reply sent as one JSON body is read inside rmcp's client
//! before any layer of ours sees it: one too deep fails its request at once with rmcp's error.

use std::collections::HashMap;
use std::sync::Arc;

use futures_util::StreamExt;
use futures_util::stream::BoxStream;
use http::{HeaderName, HeaderValue};
use rmcp::model::ClientJsonRpcMessage;
use rmcp::transport::streamable_http_client::{
    SseError, StreamableHttpClient, StreamableHttpError, StreamableHttpPostResponse,
    StreamableHttpResponseLimits,
};
use sse_stream::Sse;

use super::screen::{LeftOutSink, Passed, screen};

type Events = BoxStream<'static, Result<Sse, SseError>>;

/// A Streamable HTTP client whose streamed events are screened; the tools the screen leaves
/// out go to `left_out`.
#[derive(Clone)]
pub(crate) struct Screening<C> {
    inner: C,
    server: Arc<str>,
    left_out: LeftOutSink,
}

impl<C> Screening<C> {
    pub(crate) fn new(inner: C, server: &str, left_out: LeftOutSink) -> Self {
        Self {
            inner,
            server: server.into(),
            left_out,
        }
    }

    fn screened(&self, events: Events) -> Events {
        let server = Arc::clone(&self.server);
        let left_out = Arc::clone(&self.left_out);
        events
            .filter_map(move |event| {
                let kept = match event {
                    Ok(event) => screen_event(event, &server, &left_out).map(Ok),
                    Err(e) => Some(Err(e)),
                };
                std::future::ready(kept)
            })
            .boxed()
    }

    fn screened_reply(&self, reply: StreamableHttpPostResponse) -> StreamableHttpPostResponse {
        match reply {
            StreamableHttpPostResponse::Sse(events, session) => {
                StreamableHttpPostResponse::Sse(self.screened(events), session)
            }
            other => other,
        }
    }
}

/// `event` with its data screened; `None` when it is not passed on.
fn screen_event(mut event: Sse, server: &str, left_out: &LeftOutSink) -> Option<Sse> {
    let data = event.data.as_deref()?;
    match screen(data.as_bytes()).passed(server, left_out) {
        Passed::AsIs => {}
        // What the screen writes is cut from the event's own text, or ASCII.
        Passed::Instead(instead) => event.data = Some(String::from_utf8(instead).ok()?),
        Passed::Dropped => return None,
    }
    Some(event)
}

impl<C: StreamableHttpClient + Sync> StreamableHttpClient for Screening<C> {
    type Error = C::Error;

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<StreamableHttpPostResponse, StreamableHttpError<Self::Error>> {
        let reply = self
            .inner
            .post_message(uri, message, session_id, auth_header, custom_headers)
            .await?;
        Ok(self.screened_reply(reply))
    }

    async fn post_message_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<StreamableHttpPostResponse, StreamableHttpError<Self::Error>> {
        let reply = self
            .inner
            .post_message_with_max_sse_event_size(
                uri,
                message,
                session_id,
                auth_header,
                custom_headers,
                max_sse_event_size,
            )
            .await?;
        Ok(self.screened_reply(reply))
    }

    async fn post_message_with_response_limits(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        limits: StreamableHttpResponseLimits,
    ) -> Result<StreamableHttpPostResponse, StreamableHttpError<Self::Error>> {
        let reply = self
            .inner
            .post_message_with_response_limits(
                uri,
                message,
                session_id,
                auth_header,
                custom_headers,
                limits,
            )
            .await?;
        Ok(self.screened_reply(reply))
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<(), StreamableHttpError<Self::Error>> {
        self.inner
            .delete_session(uri, session_id, auth_header, custom_headers)
            .await
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<Events, StreamableHttpError<Self::Error>> {
        let events = self
            .inner
            .get_stream(uri, session_id, last_event_id, auth_header, custom_headers)
            .await?;
        Ok(self.screened(events))
    }

    async fn get_stream_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<Events, StreamableHttpError<Self::Error>> {
        let events = self
            .inner
            .get_stream_with_max_sse_event_size(
                uri,
                session_id,
                last_event_id,
                auth_header,
                custom_headers,
                max_sse_event_size,
            )
            .await?;
        Ok(self.screened(events))
    }
}

/// The plain HTTP client of a server without OAuth, made as rmcp makes its own: no idle
/// connections kept, and only same-origin 307 and 308 redirects followed (they keep the
/// message; another origin would be given the session and the configured headers).
pub(crate) fn plain_client() -> Result<reqwest::Client, String> {
    const MAX_REDIRECTS: usize = 10;
    let policy = reqwest::redirect::Policy::custom(|attempt| {
        let keeps_body = matches!(
            attempt.status(),
            reqwest::StatusCode::TEMPORARY_REDIRECT | reqwest::StatusCode::PERMANENT_REDIRECT
        );
        let same_origin = attempt
            .previous()
            .first()
            .is_some_and(|first| first.origin() == attempt.url().origin());
        if !keeps_body || !same_origin {
            attempt.stop()
        } else if attempt.previous().len() > MAX_REDIRECTS {
            attempt.error(format!("more than {MAX_REDIRECTS} redirects"))
        } else {
            attempt.follow()
        }
    });
    reqwest::Client::builder()
        .pool_max_idle_per_host(0)
        .redirect(policy)
        .build()
        .map_err(|e| format!("cannot make the HTTP client: {e}"))
}
