//! The [`AgentRuntime`] of an agent process: every call is an IPC message to the Orchestrator,
//! answered by a message with the same `correlationId`.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use tokio::sync::{mpsc, oneshot};

use super::ipc::{self, Control, DelegatePayload, IpcMessage, MessageType, ORCHESTRATOR};
use super::{disconnected, protocol, timed_out};
use crate::lock;
use crate::tools::agent::{
    AgentCatalog, AgentEvent, AgentFuture, AgentInstanceInfo, AgentRuntime, RequestOptions,
    RequestResult, SendResult, SpawnOptions, SpawnResult,
};
use crate::tools::error::ToolError;

/// How long a control call (send, spawn, list, catalog) waits for the Orchestrator.
const CONTROL_TIMEOUT: Duration = Duration::from_secs(30);

/// How much longer than the Orchestrator's own timer a caller waits, so that the Orchestrator's
/// answer (which names the cause) usually wins.
const TIMEOUT_MARGIN: Duration = Duration::from_millis(500);

/// An agent process's side of its link: outgoing messages and the calls waiting for answers.
pub(crate) struct Conn {
    pub(crate) me: String,
    tx: mpsc::UnboundedSender<IpcMessage>,
    waiting: Mutex<HashMap<String, oneshot::Sender<Value>>>,
}

/// Process-wide, so that an instance restarted in the same process (in-process mode) never
/// reuses an id its previous run may still be waiting on.
static NEXT_ID: AtomicU64 = AtomicU64::new(1);

impl Conn {
    pub(crate) fn new(me: String, tx: mpsc::UnboundedSender<IpcMessage>) -> Self {
        Self {
            me,
            tx,
            waiting: Mutex::new(HashMap::new()),
        }
    }

    /// A correlation id unique across the swarm: address, process id, counter.
    pub(crate) fn fresh_id(&self) -> String {
        let n = NEXT_ID.fetch_add(1, Ordering::Relaxed);
        format!("{}#{}-{n}", self.me, std::process::id())
    }

    pub(crate) fn send(&self, msg: IpcMessage) -> bool {
        self.tx.send(msg).is_ok()
    }

    /// Sends a message and waits for the answer with the same correlation id.
    async fn call(
        &self,
        kind: MessageType,
        to: &str,
        payload: Value,
        id: &str,
        wait: Duration,
    ) -> Result<Option<Value>, ToolError> {
        let (tx, rx) = oneshot::channel();
        lock(&self.waiting).insert(id.to_owned(), tx);
        let msg = IpcMessage::new(kind, &self.me, to, payload, Some(id.to_owned()));
        if !self.send(msg) {
            lock(&self.waiting).remove(id);
            return Err(disconnected());
        }
        match tokio::time::timeout(wait, rx).await {
            Ok(Ok(answer)) => ipc::read_answer(answer).map(Some),
            Ok(Err(_)) => Err(disconnected()),
            Err(_) => {
                lock(&self.waiting).remove(id);
                Ok(None)
            }
        }
    }

    /// Hands an answer to the call waiting for it; `false` when none waits.
    pub(crate) fn answer(&self, msg: &IpcMessage) -> bool {
        let Some(id) = msg.correlation_id.as_deref() else {
            return false;
        };
        let Some(tx) = lock(&self.waiting).remove(id) else {
            return false;
        };
        let _ = tx.send(msg.payload.clone());
        true
    }

    /// A control call to the Orchestrator; its `ok` value.
    pub(crate) async fn control(&self, op: Control) -> Result<Value, ToolError> {
        let payload = serde_json::to_value(&op).map_err(protocol)?;
        self.event(ORCHESTRATOR, payload).await
    }

    /// Sends the `event` `payload` to `to` and waits, at most [`CONTROL_TIMEOUT`], for the
    /// answer; its `ok` value.
    async fn event(&self, to: &str, payload: Value) -> Result<Value, ToolError> {
        let id = self.fresh_id();
        let answer = self
            .call(MessageType::Event, to, payload, &id, CONTROL_TIMEOUT)
            .await?;
        answer.ok_or_else(|| timed_out(ORCHESTRATOR, CONTROL_TIMEOUT.as_millis() as u64))
    }

    /// Fails every waiting call: the Orchestrator is gone.
    pub(crate) fn close(&self) {
        lock(&self.waiting).clear();
    }
}

/// The runtime a worker gets for one event: the link, and the instances waiting up the chain.
pub(crate) struct LinkRuntime {
    pub(crate) conn: Arc<Conn>,
    pub(crate) chain: Vec<String>,
}

fn parse<T: DeserializeOwned>(value: Value) -> Result<T, ToolError> {
    serde_json::from_value(value).map_err(|e| protocol(format!("an answer is malformed: {e}")))
}

impl LinkRuntime {
    async fn control<T: DeserializeOwned>(&self, op: Control) -> Result<T, ToolError> {
        parse(self.conn.control(op).await?)
    }
}

impl AgentRuntime for LinkRuntime {
    fn request<'a>(
        &'a self,
        target: &'a str,
        event: AgentEvent,
        options: RequestOptions,
    ) -> AgentFuture<'a, RequestResult> {
        Box::pin(async move {
            let payload = DelegatePayload::new(event, self.chain.clone(), options);
            let timeout_ms = payload.timeout_ms;
            let payload = serde_json::to_value(&payload).map_err(protocol)?;
            let id = self.conn.fresh_id();
            let wait = Duration::from_millis(timeout_ms) + TIMEOUT_MARGIN;
            let answer = self
                .conn
                .call(MessageType::Delegate, target, payload, &id, wait)
                .await?;
            let Some(answer) = answer else {
                return Err(timed_out(target, timeout_ms));
            };
            Ok(request_result(target, answer, id))
        })
    }

    fn send<'a>(&'a self, target: &'a str, event: AgentEvent) -> AgentFuture<'a, SendResult> {
        Box::pin(async move {
            let mut payload = json!({ "event": event });
            if let Some(parent) = crate::telemetry::traceparent() {
                payload["traceparent"] = parent.into();
            }
            parse(self.conn.event(target, payload).await?)
        })
    }

    fn spawn<'a>(&'a self, target: &'a str, options: SpawnOptions) -> AgentFuture<'a, SpawnResult> {
        Box::pin(self.control(Control::Spawn {
            target: target.to_owned(),
            options,
        }))
    }

    fn list(&self, include_all: bool) -> AgentFuture<'_, Vec<AgentInstanceInfo>> {
        Box::pin(async move {
            let listed: Value = self.control(Control::List { include_all }).await?;
            parse(listed.get("agents").cloned().unwrap_or(Value::Null))
        })
    }

    fn catalog(&self) -> AgentFuture<'_, AgentCatalog> {
        Box::pin(self.control(Control::Catalog))
    }
}

/// The [`RequestResult`] from a target's `{eventId, response}` answer.
pub(crate) fn request_result(target: &str, answer: Value, correlation_id: String) -> RequestResult {
    let event_id = answer
        .get("eventId")
        .and_then(Value::as_str)
        .map_or_else(|| correlation_id.clone(), str::to_owned);
    RequestResult {
        event_id,
        target: target.to_owned(),
        response: answer.get("response").cloned(),
        correlation_id,
    }
}
