//! The IPC messages between the Orchestrator and its agent processes (HO-7), and their framing:
//! a 4-byte big-endian length, then that many bytes of JSON.
//!
//! Frames are read by [`FrameCodec`], a `tokio_util::codec` decoder: a frame longer than the
//! limit is skipped (its bytes are dropped as they arrive, never buffered) and a frame that is
//! not a valid message is reported; neither ends the stream. Only a broken stream (EOF in the
//! middle of a frame, an I/O error) ends it.

use futures_util::StreamExt;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio_util::bytes::{Buf, BytesMut};
use tokio_util::codec::{Decoder, Encoder, FramedRead};

use crate::tools::agent::{AgentEvent, RequestOptions, SpawnOptions};
use crate::tools::error::ToolError;

/// The protocol version every message carries; a message of another version is rejected.
pub const PROTOCOL_VERSION: u32 = 1;

/// The largest frame accepted by default, in bytes (4 MiB).
pub const DEFAULT_MAX_FRAME_BYTES: usize = 4 * 1024 * 1024;

/// The address of the Orchestrator itself, for control messages.
pub const ORCHESTRATOR: &str = "orchestrator";

/// The kind of an IPC message (HO-7).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MessageType {
    /// A request that waits for a `delegate_result` with the same `correlationId`.
    Delegate,
    /// The answer to a `delegate`.
    DelegateResult,
    /// A one-way event, or a control message to and from the Orchestrator.
    Event,
    /// Asks an agent process to finish its work and exit.
    Shutdown,
}

/// One IPC message: `{v, type, from, to, payload, correlationId?}` (HO-7).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct IpcMessage {
    /// The protocol version, [`PROTOCOL_VERSION`].
    pub v: u32,
    /// The kind of message.
    #[serde(rename = "type")]
    pub kind: MessageType,
    /// The sender, `agent/instanceKey` or [`ORCHESTRATOR`].
    pub from: String,
    /// The receiver, `agent/instanceKey` or [`ORCHESTRATOR`].
    pub to: String,
    /// The content.
    #[serde(default)]
    pub payload: Value,
    /// Links a `delegate` to its `delegate_result`, and the callee's work to the caller's Turn
    /// and Trace (HO-3).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub correlation_id: Option<String>,
}

impl IpcMessage {
    /// A message of the current version.
    pub fn new(
        kind: MessageType,
        from: impl Into<String>,
        to: impl Into<String>,
        payload: Value,
        correlation_id: Option<String>,
    ) -> Self {
        Self {
            v: PROTOCOL_VERSION,
            kind,
            from: from.into(),
            to: to.into(),
            payload,
            correlation_id,
        }
    }
}

/// The payload of a `delegate`: the event, the agents already waiting up the call chain (for
/// cycle detection), the timeout, and the caller's Turn and Trace (HO-3).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DelegatePayload {
    /// What the target gets (HO-1).
    pub event: AgentEvent,
    /// Addresses of the instances waiting on this request, outermost first.
    #[serde(default)]
    pub chain: Vec<String>,
    /// How long the caller waits.
    pub timeout_ms: u64,
    /// The caller's trace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace_id: Option<String>,
    /// The caller's Turn.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn_id: Option<String>,
    /// The W3C trace context of the caller's span, when its spans are exported: the target's
    /// spans join that trace ([`crate::telemetry`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub traceparent: Option<String>,
}

impl DelegatePayload {
    /// The payload of a request the instances of `chain` make with `options`: their timeout
    /// (else [`DEFAULT_TIMEOUT_MS`](super::DEFAULT_TIMEOUT_MS)), the caller's Turn and Trace,
    /// and the current span's trace context.
    pub(crate) fn new(event: AgentEvent, chain: Vec<String>, options: RequestOptions) -> Self {
        Self {
            event,
            chain,
            timeout_ms: options.timeout_ms.unwrap_or(super::DEFAULT_TIMEOUT_MS),
            trace_id: options.trace_id,
            turn_id: options.turn_id,
            traceparent: crate::telemetry::traceparent(),
        }
    }
}

/// The payload of a one-way `event`: the event, its id, and the sender's W3C trace context
/// when its spans are exported ([`crate::telemetry`]).
pub(crate) fn event_payload(
    event: &AgentEvent,
    event_id: &str,
    traceparent: Option<&str>,
) -> Value {
    let mut body = serde_json::json!({ "event": event, "eventId": event_id });
    if let Some(parent) = traceparent {
        body["traceparent"] = parent.into();
    }
    body
}

/// The event of a one-way `event`'s payload ([`event_payload`]).
pub(crate) fn event_of(payload: &Value) -> Result<AgentEvent, ToolError> {
    let event = payload.get("event").cloned();
    let event = event.ok_or_else(|| super::protocol("an event has no `event`"))?;
    serde_json::from_value(event).map_err(super::protocol)
}

/// The `traceparent` a payload carries, if any (text only; what it says is checked where a
/// span continues it).
pub(crate) fn traceparent_of(payload: &Value) -> Option<String> {
    payload
        .get("traceparent")
        .and_then(Value::as_str)
        .map(str::to_owned)
}

/// A control message to the Orchestrator (an `event` addressed to [`ORCHESTRATOR`] with a
/// `correlationId`); the answer is an `event` with the same `correlationId` whose payload is
/// `{ok: ...}` or `{error: ...}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "camelCase")]
pub enum Control {
    /// The first message of an agent process: the token it was started with.
    #[serde(rename_all = "camelCase")]
    Hello {
        /// The spawn token from the environment.
        token: String,
        /// The process id.
        pid: u32,
    },
    /// [`AgentRuntime::spawn`](crate::AgentRuntime::spawn).
    #[serde(rename_all = "camelCase")]
    Spawn {
        /// The agent.
        target: String,
        /// The options.
        #[serde(flatten)]
        options: SpawnOptions,
    },
    /// [`AgentRuntime::list`](crate::AgentRuntime::list).
    #[serde(rename_all = "camelCase")]
    List {
        /// Every instance, not only the caller's.
        #[serde(default)]
        include_all: bool,
    },
    /// [`AgentRuntime::catalog`](crate::AgentRuntime::catalog).
    Catalog,
    /// The instance asks to be restarted once its in-flight work is done (see
    /// [`AgentContext::request_restart`](super::AgentContext::request_restart)). After the
    /// answer, the Orchestrator sends it no new work: it queues it for the next process.
    #[serde(rename_all = "camelCase")]
    Restart {
        /// Why.
        reason: String,
    },
}

/// The payload of a successful answer.
pub fn ok_payload(value: impl Serialize) -> Value {
    serde_json::json!({ "ok": value })
}

/// The payload of a failed answer.
pub fn error_payload(error: &ToolError) -> Value {
    serde_json::json!({ "error": error })
}

/// Reads an answer payload: `{ok: value}` or `{error: ToolError}`.
pub fn read_answer(payload: Value) -> Result<Value, ToolError> {
    let Value::Object(mut map) = payload else {
        return Err(super::protocol("an answer is not an object"));
    };
    if let Some(err) = map.remove("error") {
        return Err(serde_json::from_value::<ToolError>(err)
            .unwrap_or_else(|e| super::protocol(format!("an error answer is malformed: {e}"))));
    }
    Ok(map.remove("ok").unwrap_or(Value::Null))
}

/// Why a frame could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum FrameError {
    /// The stream ended or failed; nothing more can be read from it.
    #[error("the IPC stream is closed: {0}")]
    Closed(#[from] std::io::Error),
    /// A frame was longer than the limit; it was skipped.
    #[error("an IPC frame of {len} bytes exceeds the limit of {limit} bytes")]
    Oversized {
        /// The frame's declared length.
        len: usize,
        /// The limit.
        limit: usize,
    },
    /// A frame was not a valid message; it was skipped.
    #[error("a malformed IPC frame was skipped: {0}")]
    Malformed(String),
}

impl FrameError {
    /// Whether the stream can still be read after this error.
    pub fn is_recoverable(&self) -> bool {
        !matches!(self, FrameError::Closed(_))
    }
}

/// The length prefix of a frame.
const PREFIX: usize = 4;

/// Reads and writes IPC frames (`tokio_util::codec`). Decoding yields one
/// `Result<IpcMessage, FrameError>` per frame, so an oversized or malformed frame is an item the
/// reader can log and pass over, while an I/O error or an EOF inside a frame ends the stream.
///
/// ```
/// use futures_util::StreamExt;
/// use goondan_runtime::agents::orchestrator::ipc::{self, FrameCodec, FrameError, IpcMessage, MessageType};
/// use tokio_util::codec::FramedRead;
///
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let msg = IpcMessage::new(MessageType::Event, "a/default", "b/default", serde_json::json!({}), None);
/// let mut bytes = Vec::new();
/// bytes.extend_from_slice(&100u32.to_be_bytes()); // a frame over the limit of 50 bytes ...
/// bytes.extend_from_slice(&[b'x'; 100]);
/// bytes.extend_from_slice(&ipc::encode(&msg).unwrap()); // ... then a good one
/// let mut frames = FramedRead::new(&bytes[..], FrameCodec::new(50.max(bytes.len() - 104)));
/// assert!(matches!(frames.next().await, Some(Ok(Err(FrameError::Oversized { len: 100, .. })))));
/// assert!(matches!(frames.next().await, Some(Ok(Ok(m))) if m == msg));
/// assert!(frames.next().await.is_none());
/// # });
/// ```
#[derive(Debug, Clone)]
pub struct FrameCodec {
    max_bytes: usize,
    /// Bytes of an oversized frame still to drop.
    skipping: usize,
}

impl FrameCodec {
    /// A codec accepting frame bodies of at most `max_bytes` bytes.
    pub fn new(max_bytes: usize) -> Self {
        Self {
            max_bytes,
            skipping: 0,
        }
    }
}

impl Decoder for FrameCodec {
    type Item = Result<IpcMessage, FrameError>;
    type Error = std::io::Error;

    fn decode(&mut self, src: &mut BytesMut) -> Result<Option<Self::Item>, Self::Error> {
        if self.skipping > 0 {
            let n = self.skipping.min(src.len());
            src.advance(n);
            self.skipping -= n;
            if self.skipping > 0 {
                return Ok(None);
            }
        }
        let Some(prefix) = src.get(..PREFIX) else {
            src.reserve(PREFIX - src.len());
            return Ok(None);
        };
        let len = u32::from_be_bytes([prefix[0], prefix[1], prefix[2], prefix[3]]);
        let len = usize::try_from(len).unwrap_or(usize::MAX);
        if len > self.max_bytes {
            src.advance(PREFIX);
            let n = len.min(src.len());
            src.advance(n);
            self.skipping = len - n;
            return Ok(Some(Err(FrameError::Oversized {
                len,
                limit: self.max_bytes,
            })));
        }
        if src.len() < PREFIX + len {
            src.reserve(PREFIX + len - src.len());
            return Ok(None);
        }
        src.advance(PREFIX);
        let body = src.split_to(len);
        Ok(Some(decode(&body)))
    }

    fn decode_eof(&mut self, src: &mut BytesMut) -> Result<Option<Self::Item>, Self::Error> {
        match self.decode(src)? {
            Some(item) => Ok(Some(item)),
            None if src.is_empty() && self.skipping == 0 => Ok(None),
            None => Err(std::io::ErrorKind::UnexpectedEof.into()),
        }
    }
}

impl Encoder<&IpcMessage> for FrameCodec {
    type Error = FrameError;

    fn encode(&mut self, msg: &IpcMessage, dst: &mut BytesMut) -> Result<(), Self::Error> {
        let frame = encode(msg)?;
        if frame.len() - PREFIX > self.max_bytes {
            return Err(FrameError::Oversized {
                len: frame.len() - PREFIX,
                limit: self.max_bytes,
            });
        }
        dst.extend_from_slice(&frame);
        Ok(())
    }
}

/// The frames of a stream, read by [`FrameCodec`].
pub type FrameReader<R> = FramedRead<R, FrameCodec>;

/// Reads frames from `reader`, accepting bodies of at most `max_bytes` bytes.
pub fn frame_reader<R: AsyncRead>(reader: R, max_bytes: usize) -> FrameReader<R> {
    FramedRead::new(reader, FrameCodec::new(max_bytes))
}

/// Reads the next message. Oversized and malformed frames are consumed and reported as
/// recoverable errors; the end of the stream is [`FrameError::Closed`].
pub async fn read_frame<R: AsyncRead + Unpin>(
    frames: &mut FrameReader<R>,
) -> Result<IpcMessage, FrameError> {
    match frames.next().await {
        Some(Ok(item)) => item,
        Some(Err(err)) => Err(FrameError::Closed(err)),
        None => Err(FrameError::Closed(std::io::ErrorKind::UnexpectedEof.into())),
    }
}

/// Parses one frame's body.
pub fn decode(body: &[u8]) -> Result<IpcMessage, FrameError> {
    let msg: IpcMessage =
        serde_json::from_slice(body).map_err(|e| FrameError::Malformed(e.to_string()))?;
    if msg.v != PROTOCOL_VERSION {
        return Err(FrameError::Malformed(format!(
            "protocol version {} is not {PROTOCOL_VERSION}",
            msg.v
        )));
    }
    Ok(msg)
}

/// Serialises `msg` as one frame (length prefix included).
pub fn encode(msg: &IpcMessage) -> Result<Vec<u8>, FrameError> {
    let body = serde_json::to_vec(msg).map_err(|e| FrameError::Malformed(e.to_string()))?;
    let len = u32::try_from(body.len()).map_err(|_| FrameError::Oversized {
        len: body.len(),
        limit: u32::MAX as usize,
    })?;
    Ok([&len.to_be_bytes()[..], &body].concat())
}

/// Writes `msg` as one frame and flushes it.
pub async fn write_frame<W: AsyncWrite + Unpin>(
    writer: &mut W,
    msg: &IpcMessage,
    max_bytes: usize,
) -> Result<(), FrameError> {
    let mut frame = BytesMut::new();
    FrameCodec::new(max_bytes).encode(msg, &mut frame)?;
    writer.write_all(&frame).await.map_err(FrameError::Closed)?;
    writer.flush().await.map_err(FrameError::Closed)
}

/// What to do with a message too large for a frame, decided by the end that sent it.
pub(crate) enum OnOversized {
    /// Write this message instead (an error answer in the original's place).
    Replace(IpcMessage),
    /// The end answered it some other way.
    Handled,
    /// Log it as not sent.
    Drop,
}

/// Writes every message of `outgoing` as a frame until the channel closes or the stream breaks.
/// A message too large for a frame goes to `oversized`; other recoverable errors are logged and
/// the message skipped. `side` names the end in log lines.
pub(crate) async fn pump_out<W: AsyncWrite + Unpin>(
    mut writer: W,
    mut outgoing: tokio::sync::mpsc::UnboundedReceiver<IpcMessage>,
    max_bytes: usize,
    side: &'static str,
    mut oversized: impl FnMut(IpcMessage, usize, usize) -> OnOversized,
) {
    while let Some(msg) = outgoing.recv().await {
        let err = match write_frame(&mut writer, &msg, max_bytes).await {
            Ok(()) => continue,
            Err(FrameError::Oversized { len, limit }) => match oversized(msg, len, limit) {
                OnOversized::Replace(answer) => {
                    if write_frame(&mut writer, &answer, max_bytes).await.is_err() {
                        break;
                    }
                    continue;
                }
                OnOversized::Handled => continue,
                OnOversized::Drop => FrameError::Oversized { len, limit },
            },
            Err(e) => e,
        };
        if !err.is_recoverable() {
            break;
        }
        tracing::warn!(target: "goondan::ipc", side, error = %err, "message not sent");
    }
}

/// Reads frames into `incoming` until the stream or the channel closes; rejected frames are
/// logged and skipped. `side` names the end in log lines.
pub(crate) async fn pump_in<R: AsyncRead + Unpin>(
    mut frames: FrameReader<R>,
    incoming: tokio::sync::mpsc::UnboundedSender<IpcMessage>,
    side: &'static str,
) {
    loop {
        match read_frame(&mut frames).await {
            Ok(msg) => {
                if incoming.send(msg).is_err() {
                    break;
                }
            }
            Err(e) if e.is_recoverable() => {
                tracing::warn!(target: "goondan::ipc", side, error = %e, "frame rejected");
            }
            Err(_) => break,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn msg() -> IpcMessage {
        IpcMessage::new(
            MessageType::Delegate,
            "a/default",
            "b/default",
            json!({"x": 1}),
            Some("corr-1".into()),
        )
    }

    #[tokio::test]
    async fn ho_7_messages_round_trip_with_type_and_correlation_id() {
        let frame = encode(&msg()).map_err(|e| e.to_string());
        let frame = frame.unwrap_or_default();
        let body: Value = serde_json::from_slice(&frame[4..]).unwrap_or_default();
        assert_eq!(body["type"], "delegate");
        assert_eq!(body["correlationId"], "corr-1");
        assert_eq!(body["v"], PROTOCOL_VERSION);
        let mut frames = frame_reader(&frame[..], DEFAULT_MAX_FRAME_BYTES);
        let back = read_frame(&mut frames).await;
        assert!(matches!(back, Ok(m) if m == msg()));
    }

    #[tokio::test]
    async fn ho_7_oversized_and_malformed_frames_are_skipped_not_fatal() {
        let mut stream = Vec::new();
        stream.extend_from_slice(&100u32.to_be_bytes());
        stream.extend_from_slice(&[b'x'; 100]);
        stream.extend_from_slice(&5u32.to_be_bytes());
        stream.extend_from_slice(b"nope!");
        let wrong_version = br#"{"v":9,"type":"event","from":"a","to":"b"}"#;
        stream.extend_from_slice(&(wrong_version.len() as u32).to_be_bytes());
        stream.extend_from_slice(wrong_version);
        stream.extend_from_slice(&encode(&msg()).unwrap_or_default());
        let mut frames = frame_reader(&stream[..], 50);
        let first = read_frame(&mut frames).await;
        assert!(matches!(first, Err(FrameError::Oversized { len: 100, .. })));
        let second = read_frame(&mut frames).await;
        assert!(matches!(&second, Err(e @ FrameError::Malformed(_)) if e.is_recoverable()));
        let third = read_frame(&mut frames).await;
        assert!(matches!(third, Err(FrameError::Malformed(_))));
        frames.decoder_mut().max_bytes = 1000;
        let fourth = read_frame(&mut frames).await;
        assert!(matches!(fourth, Ok(m) if m == msg()));
        let end = read_frame(&mut frames).await;
        assert!(matches!(end, Err(FrameError::Closed(_))));
    }

    /// The reader the agent processes use: bytes arrive a few at a time, an oversized frame is
    /// dropped as it streams in (never buffered whole), and a frame cut by EOF ends the stream.
    #[tokio::test]
    async fn ho_7_an_oversized_frame_streaming_in_is_dropped_without_buffering_it() {
        let (mut tx, rx) = tokio::io::duplex(64);
        let writer = tokio::spawn(async move {
            let mut bytes = Vec::new();
            bytes.extend_from_slice(&(1_000_000u32).to_be_bytes());
            bytes.extend_from_slice(&vec![b'x'; 1_000_000]);
            bytes.extend_from_slice(&encode(&msg()).unwrap_or_default());
            bytes.extend_from_slice(&10u32.to_be_bytes());
            bytes.extend_from_slice(b"cut");
            tx.write_all(&bytes).await
        });
        let mut frames = frame_reader(rx, 1024);
        let first = read_frame(&mut frames).await;
        assert!(matches!(
            first,
            Err(FrameError::Oversized {
                len: 1_000_000,
                limit: 1024
            })
        ));
        assert!(
            frames.read_buffer().capacity() < 64 * 1024,
            "the oversized frame was buffered"
        );
        let second = read_frame(&mut frames).await;
        assert!(matches!(second, Ok(m) if m == msg()));
        assert!(matches!(writer.await, Ok(Ok(()))));
        let cut = read_frame(&mut frames).await;
        assert!(
            matches!(cut, Err(FrameError::Closed(e)) if e.kind() == std::io::ErrorKind::UnexpectedEof)
        );
    }
}
