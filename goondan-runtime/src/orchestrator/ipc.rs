//! The IPC messages between the Orchestrator and its agent processes (HO-7), and their framing:
//! a 4-byte big-endian length, then that many bytes of JSON.
//!
//! A frame longer than the limit is skipped (its bytes are read and dropped) and a frame that is
//! not a valid message is reported; neither ends the stream. Only a broken stream (EOF in the
//! middle of a frame, an I/O error) ends it.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

use crate::agent::{AgentEvent, SpawnOptions};
use crate::error::ToolError;

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
    Closed(#[source] std::io::Error),
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

/// Reads the next message. Oversized and malformed frames are consumed and reported as
/// recoverable errors.
pub async fn read_frame<R: AsyncRead + Unpin>(
    reader: &mut R,
    max_bytes: usize,
) -> Result<IpcMessage, FrameError> {
    let len = reader.read_u32().await.map_err(FrameError::Closed)?;
    let len = usize::try_from(len).unwrap_or(usize::MAX);
    if len > max_bytes {
        let mut rest = u64::try_from(len).unwrap_or(u64::MAX);
        let mut sink = [0u8; 8192];
        while rest > 0 {
            let want = usize::try_from(rest.min(sink.len() as u64)).unwrap_or(sink.len());
            let n = reader
                .read(&mut sink[..want])
                .await
                .map_err(FrameError::Closed)?;
            if n == 0 {
                return Err(FrameError::Closed(std::io::ErrorKind::UnexpectedEof.into()));
            }
            rest -= n as u64;
        }
        return Err(FrameError::Oversized {
            len,
            limit: max_bytes,
        });
    }
    let mut buf = vec![0u8; len];
    reader
        .read_exact(&mut buf)
        .await
        .map_err(FrameError::Closed)?;
    decode(&buf)
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
    let mut frame = Vec::with_capacity(body.len() + 4);
    frame.extend_from_slice(&len.to_be_bytes());
    frame.extend_from_slice(&body);
    Ok(frame)
}

/// Writes `msg` as one frame and flushes it.
pub async fn write_frame<W: AsyncWrite + Unpin>(
    writer: &mut W,
    msg: &IpcMessage,
    max_bytes: usize,
) -> Result<(), FrameError> {
    let frame = encode(msg)?;
    if frame.len() - 4 > max_bytes {
        return Err(FrameError::Oversized {
            len: frame.len() - 4,
            limit: max_bytes,
        });
    }
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
    mut reader: R,
    incoming: tokio::sync::mpsc::UnboundedSender<IpcMessage>,
    max_bytes: usize,
    side: &'static str,
) {
    loop {
        match read_frame(&mut reader, max_bytes).await {
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
        let mut reader = &frame[..];
        let back = read_frame(&mut reader, DEFAULT_MAX_FRAME_BYTES).await;
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
        let mut reader = &stream[..];
        let first = read_frame(&mut reader, 50).await;
        assert!(matches!(first, Err(FrameError::Oversized { len: 100, .. })));
        let second = read_frame(&mut reader, 50).await;
        assert!(matches!(&second, Err(e @ FrameError::Malformed(_)) if e.is_recoverable()));
        let third = read_frame(&mut reader, 50).await;
        assert!(matches!(third, Err(FrameError::Malformed(_))));
        let fourth = read_frame(&mut reader, 1000).await;
        assert!(matches!(fourth, Ok(m) if m == msg()));
        let end = read_frame(&mut reader, 1000).await;
        assert!(matches!(end, Err(FrameError::Closed(_))));
    }
}
