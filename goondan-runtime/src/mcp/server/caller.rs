//! The MCP client as the [`Caller`] of one `tools/call`: questions and log lines.
//!
//! - A 2025-11-25 session (or older) is asked with server-initiated requests
//!   (`elicitation/create`, `sampling/createMessage`, `roots/list`), answered in place.
//! - A 2026-07-28 request cannot be asked anything: a question without an answer stops the
//!   call, and the server answers with an input-required result that carries every question
//!   asked in that round (`inputRequests`, keyed) and a sealed `requestState` holding the
//!   answers so far. The client answers and calls again; the call runs from the start, and a
//!   question whose key has an answer (in `inputResponses` or in the opened state) gets it at
//!   once. A state that fails its seal is refused (`-32602`), so a client cannot forge answers.
//!   A question the client declared no capability for is the protocol's
//!   `MissingRequiredClientCapabilityError` (`-32021`).
//! - Log lines go out as `notifications/message` at the level the request's `_meta` asked for
//!   (2026-07-28), or the session's `logging/setLevel` (older); with neither, none. They go
//!   out as they are written, in the order written, and all of a call's lines before its
//!   result ([`McpCaller::logged`]). At most [`MAX_WAITING_LINES`] wait for a slow client;
//!   lines past them are counted, not kept, and the count goes out as one warning after the
//!   lines kept, so that memory stays bounded however fast a tool writes.

// MCP logging is deprecated by SEP-2577 but still in both revisions we serve.
#![allow(deprecated)]

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, OnceLock};

use rmcp::model::{
    ClientCapabilities, CreateMessageRequest, CreateMessageRequestParams, ElicitRequest,
    ElicitRequestParams, InputRequest, InputRequests, InputRequiredResult, ListRootsRequest,
    LoggingLevel, LoggingMessageNotificationParam, RequestStateCodec, SealOptions,
};
use rmcp::{ErrorData, Peer, RoleServer};
use serde_json::{Value, json};
use tokio::sync::mpsc::error::TrySendError;
use tokio::sync::mpsc::{Sender, channel};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::lock;
use crate::tools::context::{AnswerFuture, AskError, Caller, LogLevel, Question};

/// The most answers a sealed state carries, and the most bytes of them: a client cannot grow
/// the state without bound by answering more than it was asked.
const MAX_ANSWERS: usize = 64;
const MAX_STATE_BYTES: usize = 256 * 1024;

/// The most log lines of one call that wait for the client; the ones past them are counted.
pub(super) const MAX_WAITING_LINES: usize = 1024;

/// How a call's questions are answered.
enum Mode {
    /// Ask the session's client with server-initiated requests.
    Session,
    /// Answer from the answers the client sent; collect the rest for an input-required result.
    Rounds {
        answers: BTreeMap<String, Value>,
        codec: Arc<RequestStateCodec>,
        binding: Vec<u8>,
    },
}

#[derive(Default)]
struct Asked {
    next: usize,
    /// The questions without an answer yet, and who waits for each answer.
    requests: InputRequests,
    waiters: BTreeMap<String, oneshot::Sender<Value>>,
    missing: Option<&'static str>,
    /// The call has become a task: its questions wait for `tasks/update`, nothing stops.
    task: bool,
    /// The call was stopped to ask.
    stopped: bool,
}

/// What the client declared it can answer.
#[derive(Debug, Clone, Copy)]
struct Declared {
    elicitation: bool,
    sampling: bool,
    roots: bool,
}

impl From<Option<&ClientCapabilities>> for Declared {
    /// What `c` declares; nothing when there is nothing.
    fn from(c: Option<&ClientCapabilities>) -> Self {
        Self {
            elicitation: c.is_some_and(|c| c.elicitation.is_some()),
            sampling: c.is_some_and(|c| c.sampling.is_some()),
            roots: c.is_some_and(|c| c.roots.is_some()),
        }
    }
}

/// The client of one `tools/call`, seen by the call's context.
pub(super) struct McpCaller {
    peer: Peer<RoleServer>,
    capabilities: Declared,
    log_level: Option<LogLevel>,
    mode: Mode,
    asked: Mutex<Asked>,
    /// Cancelled when the call must stop for an answer it cannot get in place (a 2026-07-28
    /// call only: a session's client is asked in place).
    /// Made when first asked for: most calls end without anyone looking at it.
    stop: Option<OnceLock<CancellationToken>>,
    /// The lines written and not yet known to be sent: made at the first line.
    logs: Mutex<Option<LogQueue>>,
}

/// A call's log lines on their way to the client, one after another.
struct LogQueue {
    lines: Sender<LoggingMessageNotificationParam>,
    /// Sends them; ends when `lines` is dropped and every line is sent.
    sending: JoinHandle<()>,
    /// Lines not kept because [`MAX_WAITING_LINES`] were waiting.
    dropped: u64,
}

/// How a call ended for its questions.
pub(super) enum Rounds {
    /// Nothing was left unanswered: the call's own result stands.
    Done,
    /// The client must answer these and call again.
    InputRequired(InputRequiredResult),
    /// The call needs a capability the client did not declare.
    Missing(ErrorData),
}

impl McpCaller {
    /// The caller of a call on a session: answered by server-initiated requests.
    pub(super) fn session(
        peer: Peer<RoleServer>,
        capabilities: Option<&ClientCapabilities>,
        log_level: Option<LogLevel>,
    ) -> Self {
        Self {
            peer,
            capabilities: capabilities.into(),
            log_level,
            mode: Mode::Session,
            asked: Mutex::default(),
            stop: None,
            logs: Mutex::default(),
        }
    }

    /// The caller of a 2026-07-28 call: `responses` and the opened `state` answer questions;
    /// `binding` ties the state to this tool and these arguments. A state that fails its seal
    /// or does not parse is the protocol's invalid-params error.
    pub(super) fn rounds(
        peer: Peer<RoleServer>,
        capabilities: Option<&ClientCapabilities>,
        log_level: Option<LogLevel>,
        codec: Arc<RequestStateCodec>,
        binding: Vec<u8>,
        state: Option<&str>,
        responses: Option<BTreeMap<String, Value>>,
    ) -> Result<Self, ErrorData> {
        let mut answers = match state {
            None => BTreeMap::new(),
            Some(sealed) => {
                let opened = codec.open_with(sealed, &binding).map_err(|e| {
                    ErrorData::invalid_params(
                        format!("requestState integrity check failed: {e}"),
                        None,
                    )
                })?;
                serde_json::from_slice::<BTreeMap<String, Value>>(&opened).map_err(|e| {
                    ErrorData::invalid_params(format!("requestState does not parse: {e}"), None)
                })?
            }
        };
        for (key, answer) in responses.unwrap_or_default() {
            if !answer.is_object() {
                return Err(not_a_result(&key));
            }
            answers.insert(key, answer);
        }
        Ok(Self {
            mode: Mode::Rounds {
                answers,
                codec,
                binding,
            },
            stop: Some(OnceLock::new()),
            ..Self::session(peer, capabilities, log_level)
        })
    }

    /// Waits until every line written so far has reached the client's stream, so that a
    /// result sent next comes after them; lines that were not kept are told of last, in one
    /// warning (or at the client's level, if it asked for less than warnings).
    pub(super) async fn logged(&self) {
        let queue = lock(&self.logs).take();
        let Some(LogQueue {
            lines,
            sending,
            dropped,
        }) = queue
        else {
            return;
        };
        if dropped > 0 {
            let level = match self.log_level {
                Some(asked) if asked > LogLevel::Warning => asked,
                _ => LogLevel::Warning,
            };
            let note = LoggingMessageNotificationParam::new(
                logging_level(level),
                json!(format!(
                    "{dropped} log lines of this call were not sent: more than \
                     {MAX_WAITING_LINES} were waiting for the client"
                )),
            );
            // Behind the lines kept; fails only when the sending ended for a gone client.
            let _ = lines.send(note).await;
        }
        drop(lines);
        // A failed send ends the sending too: there is nothing left to wait for.
        let _ = sending.await;
    }

    /// Cancelled when the call must stop to ask; none when it never must.
    pub(super) fn stopped(&self) -> Option<&CancellationToken> {
        self.stop
            .as_ref()
            .map(|stop| stop.get_or_init(CancellationToken::new))
    }

    /// Stops the call to ask its questions.
    fn stop(&self) {
        if let Some(stop) = self.stopped() {
            stop.cancel();
        }
    }

    /// Notes that the call was stopped for its questions.
    pub(super) fn mark_stopped(&self) {
        lock(&self.asked).stopped = true;
    }

    /// The call became a task: from now on its questions wait for `tasks/update`.
    pub(super) fn become_task(&self) {
        lock(&self.asked).task = true;
    }

    /// The questions of a task still waiting for an answer.
    pub(super) fn outstanding(&self) -> InputRequests {
        let asked = lock(&self.asked);
        asked
            .requests
            .iter()
            .filter(|(k, _)| asked.waiters.get(*k).is_some_and(|w| !w.is_closed()))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    }

    /// Answers some of a task's questions (`tasks/update`): every answer must be a result
    /// object; an answer to no waiting question is ignored.
    pub(super) fn answer(&self, responses: BTreeMap<String, Value>) -> Result<(), ErrorData> {
        let mut asked = lock(&self.asked);
        for (key, answer) in &responses {
            if asked.waiters.contains_key(key) && !answer.is_object() {
                return Err(not_a_result(key));
            }
        }
        for (key, answer) in responses {
            asked.requests.remove(&key);
            if let Some(waiter) = asked.waiters.remove(&key) {
                let _ = waiter.send(answer);
            }
        }
        Ok(())
    }

    /// What the call's questions leave to do once the call has ended.
    pub(super) fn finish(&self) -> Rounds {
        let Mode::Rounds {
            answers,
            codec,
            binding,
        } = &self.mode
        else {
            return Rounds::Done;
        };
        let mut guard = lock(&self.asked);
        if !guard.stopped {
            // The call ended on its own (or became a task): its result stands, and any
            // question asked meanwhile belongs to the task.
            return Rounds::Done;
        }
        let asked = std::mem::take(&mut *guard);
        drop(guard);
        if let Some(capability) = asked.missing {
            let mut required = ClientCapabilities::default();
            match capability {
                "sampling" => required.sampling = Some(Default::default()),
                "elicitation" => required.elicitation = Some(Default::default()),
                _ => required.roots = Some(Default::default()),
            }
            return Rounds::Missing(ErrorData::missing_required_client_capability(required));
        }
        if asked.requests.is_empty() {
            return Rounds::Done;
        }
        let mut kept = BTreeMap::new();
        let mut bytes = 0;
        for (key, value) in answers.iter().take(MAX_ANSWERS) {
            bytes += key.len() + value.to_string().len();
            if bytes > MAX_STATE_BYTES {
                break;
            }
            kept.insert(key.clone(), value.clone());
        }
        let payload = serde_json::to_vec(&kept).unwrap_or_default();
        let sealed = codec.seal_with(&payload, &SealOptions::new().associated_data(binding));
        Rounds::InputRequired(InputRequiredResult::new(Some(asked.requests), Some(sealed)))
    }
}

impl Caller for McpCaller {
    fn can_answer(&self, question: &Question) -> bool {
        let c = &self.capabilities;
        match question {
            Question::Elicit { .. } => c.elicitation,
            Question::Sample(_) => c.sampling,
            Question::Roots => c.roots,
            #[allow(unreachable_patterns)]
            _ => false,
        }
    }

    fn ask(&self, key: Option<&str>, question: Question) -> AnswerFuture {
        let key = {
            let mut asked = lock(&self.asked);
            asked.next += 1;
            key.map_or_else(|| format!("input-{}", asked.next), str::to_owned)
        };
        let unsupported = || -> AnswerFuture {
            let capability = question.capability();
            Box::pin(std::future::ready(Err(AskError::Unsupported {
                capability,
            })))
        };
        match &self.mode {
            Mode::Session if !self.can_answer(&question) => unsupported(),
            Mode::Session => Box::pin(ask_session(self.peer.clone(), question)),
            Mode::Rounds { answers, .. } => {
                if let Some(answer) = answers.get(&key) {
                    return Box::pin(std::future::ready(Ok(answer.clone())));
                }
                let mut asked = lock(&self.asked);
                if !self.can_answer(&question) {
                    if asked.task {
                        return unsupported();
                    }
                    asked.missing.get_or_insert(question.capability());
                    drop(asked);
                    self.stop();
                    // The call is stopped for the protocol's error; nothing answers this.
                    return Box::pin(std::future::pending());
                }
                let request = match input_request(&question) {
                    Ok(request) => request,
                    Err(e) => return Box::pin(std::future::ready(Err(e))),
                };
                let (tx, rx) = oneshot::channel();
                asked.requests.insert(key.clone(), request);
                asked.waiters.insert(key, tx);
                let in_task = asked.task;
                drop(asked);
                if !in_task {
                    // The call is stopped and run again with the answer.
                    self.stop();
                }
                Box::pin(async move {
                    rx.await.map_err(|_| AskError::Failed {
                        reason: "the call ended before the answer came".into(),
                    })
                })
            }
        }
    }

    fn log(&self, level: LogLevel, data: Value) {
        let Some(threshold) = self.log_level else {
            return;
        };
        if level < threshold {
            return;
        }
        let param = LoggingMessageNotificationParam::new(logging_level(level), data);
        let mut logs = lock(&self.logs);
        let queue = logs.get_or_insert_with(|| {
            let (lines, mut rx) = channel(MAX_WAITING_LINES);
            let peer = self.peer.clone();
            let sending = tokio::spawn(async move {
                while let Some(param) = rx.recv().await {
                    if peer.notify_logging_message(param).await.is_err() {
                        // The client is gone: the rest would fail alike.
                        break;
                    }
                }
            });
            LogQueue {
                lines,
                sending,
                dropped: 0,
            }
        });
        match queue.lines.try_send(param) {
            Ok(()) => {}
            Err(TrySendError::Full(_)) => queue.dropped += 1,
            // The sending ended for a gone client.
            Err(TrySendError::Closed(_)) => {}
        }
    }
}

/// The protocol's error for an answer (in `inputResponses`) that is not a result object.
fn not_a_result(key: &str) -> ErrorData {
    ErrorData::invalid_params(
        format!("inputResponses.{key} must be the result object of its request"),
        None,
    )
}

/// The failure of a question MCP has no request for.
fn not_over_mcp() -> AskError {
    AskError::Failed {
        reason: "this question cannot be asked over MCP".into(),
    }
}

/// Asks a session's client in place.
async fn ask_session(peer: Peer<RoleServer>, question: Question) -> Result<Value, AskError> {
    let failed = |e: &dyn std::fmt::Display| AskError::Failed {
        reason: e.to_string(),
    };
    let answer = match question {
        Question::Elicit { message, schema } => {
            let params = elicit_params(message, schema)?;
            serde_json::to_value(
                peer.create_elicitation(params)
                    .await
                    .map_err(|e| failed(&e))?,
            )
        }
        Question::Sample(params) => {
            let params: CreateMessageRequestParams =
                serde_json::from_value(params).map_err(|e| failed(&e))?;
            serde_json::to_value(peer.create_message(params).await.map_err(|e| failed(&e))?)
        }
        Question::Roots => serde_json::to_value(peer.list_roots().await.map_err(|e| failed(&e))?),
        #[allow(unreachable_patterns)]
        _ => return Err(not_over_mcp()),
    };
    answer.map_err(|e| failed(&e))
}

fn elicit_params(message: String, schema: Value) -> Result<ElicitRequestParams, AskError> {
    serde_json::from_value(json!({
        "mode": "form",
        "message": message,
        "requestedSchema": schema,
    }))
    .map_err(|e| AskError::Failed {
        reason: format!("the form's schema is not one MCP elicitation takes: {e}"),
    })
}

/// A question as an entry of `inputRequests`.
fn input_request(question: &Question) -> Result<InputRequest, AskError> {
    let failed = |e: serde_json::Error| AskError::Failed {
        reason: format!("the question cannot be sent: {e}"),
    };
    Ok(match question {
        Question::Elicit { message, schema } => InputRequest::Elicitation(ElicitRequest::new(
            elicit_params(message.clone(), schema.clone())?,
        )),
        Question::Sample(params) => InputRequest::CreateMessage(CreateMessageRequest::new(
            serde_json::from_value(params.clone()).map_err(failed)?,
        )),
        Question::Roots => InputRequest::ListRoots(ListRootsRequest::default()),
        #[allow(unreachable_patterns)]
        _ => return Err(not_over_mcp()),
    })
}

/// Our level for MCP's.
pub(super) fn log_level(level: LoggingLevel) -> LogLevel {
    match level {
        LoggingLevel::Debug => LogLevel::Debug,
        LoggingLevel::Info => LogLevel::Info,
        LoggingLevel::Notice => LogLevel::Notice,
        LoggingLevel::Warning => LogLevel::Warning,
        LoggingLevel::Error => LogLevel::Error,
        LoggingLevel::Critical => LogLevel::Critical,
        LoggingLevel::Alert => LogLevel::Alert,
        LoggingLevel::Emergency => LogLevel::Emergency,
    }
}

/// MCP's level for ours.
pub(super) fn logging_level(level: LogLevel) -> LoggingLevel {
    match level {
        LogLevel::Debug => LoggingLevel::Debug,
        LogLevel::Info => LoggingLevel::Info,
        LogLevel::Notice => LoggingLevel::Notice,
        LogLevel::Warning => LoggingLevel::Warning,
        LogLevel::Error => LoggingLevel::Error,
        LogLevel::Critical => LoggingLevel::Critical,
        LogLevel::Alert => LoggingLevel::Alert,
        LogLevel::Emergency => LoggingLevel::Emergency,
    }
}
