//! The server-sent events of a streamed answer, parsed by the `sse-stream` crate, each wait for
//! the next one bounded by the timeout.

#[cfg(feature = "providers")]
use std::pin::Pin;

#[cfg(feature = "providers")]
use futures_util::{Stream, StreamExt};

#[cfg(feature = "providers")]
use super::http::Call;
#[cfg(feature = "providers")]
use crate::step::ModelError;

/// One server-sent event of a streamed answer: its `event:` name, when it has one, and its
/// `data:` (comments and keep-alives never reach an [`AnswerStream`](super::AnswerStream)).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SseEvent {
    /// The `event:` field.
    pub name: Option<String>,
    /// The `data:` field (its lines joined).
    pub data: String,
}

#[cfg(feature = "providers")]
type Inner = Pin<Box<dyn Stream<Item = Result<sse_stream::Sse, sse_stream::Error>> + Send>>;

/// The events of one response.
#[cfg(feature = "providers")]
pub(crate) struct Events<'a> {
    inner: Inner,
    call: &'a Call<'a>,
    attempts: u32,
}

#[cfg(feature = "providers")]
impl<'a> Events<'a> {
    /// The events of `response`, the answer to `call` after `attempts` requests.
    pub(crate) fn new(response: reqwest::Response, call: &'a Call<'a>, attempts: u32) -> Self {
        let inner = sse_stream::SseStream::from_bytes_stream(response.bytes_stream());
        Self {
            inner: Box::pin(inner),
            call,
            attempts,
        }
    }

    /// The next event with data (comments and keep-alives are skipped); `None` at the end.
    pub(crate) async fn next(&mut self) -> Result<Option<SseEvent>, ModelError> {
        loop {
            let item = tokio::time::timeout(self.call.timeout, self.inner.next())
                .await
                .map_err(|_| self.call.timed_out(self.attempts))?;
            let sse = match item {
                None => return Ok(None),
                Some(Err(e)) => {
                    return Err(ModelError::Malformed {
                        provider: self.call.provider,
                        message: format!("the event stream broke: {e}"),
                    });
                }
                Some(Ok(sse)) => sse,
            };
            if let Some(data) = sse.data {
                return Ok(Some(SseEvent {
                    name: sse.event,
                    data,
                }));
            }
        }
    }
}
