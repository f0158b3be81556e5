//! Routing: every message an instance sends, requests (with their cycle checks and timeouts)
//! and one-way events (HO-1, HO-6, HO-7, AG-1, AG-2).

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use serde_json::json;

use super::{Caller, Core, Waiting, split};
use crate::agents::orchestrator::ipc::{
    self, DelegatePayload, IpcMessage, MessageType, ORCHESTRATOR,
};
use crate::agents::orchestrator::{
    address, codes, error, instance_key, protocol, timed_out, unknown_target,
};
use crate::tools::agent::{AgentEvent, SendResult};
use crate::tools::context::fresh_id;
use crate::tools::error::ToolError;

impl Core {
    /// Everything an instance sends comes through here (HO-7).
    pub(super) fn route(self: &Arc<Self>, from: &str, msg: IpcMessage) {
        let id = msg.correlation_id.clone();
        match (msg.kind, id) {
            (MessageType::Delegate, Some(id)) => {
                let payload = serde_json::from_value::<DelegatePayload>(msg.payload)
                    .map_err(|e| protocol(format!("a delegate payload is malformed: {e}")));
                let caller = Caller::Agent(from.to_owned());
                match payload {
                    Ok(p) => self.delegate(caller, from, &msg.to, p, id),
                    Err(e) => self.reply(caller, ORCHESTRATOR, &id, ipc::error_payload(&e)),
                }
            }
            (MessageType::DelegateResult, Some(id)) => {
                let mut st = self.lock();
                match st.waiting.get(&id) {
                    Some(w) if w.target == from => {
                        let w = st.waiting.remove(&id);
                        drop(st);
                        if let Some(w) = w {
                            self.answer(w, from, &id, msg.payload);
                        }
                    }
                    _ => {
                        tracing::debug!(target: "goondan::orchestrator", %from, %id, "late or stray answer dropped")
                    }
                }
            }
            (MessageType::Event, Some(id)) => {
                let answer = if msg.to == ORCHESTRATOR {
                    self.control(from, msg.payload)
                } else {
                    let event = ipc::event_of(&msg.payload);
                    let parent = ipc::traceparent_of(&msg.payload);
                    event.and_then(|e| self.send_event(from, &msg.to, e, parent).map(|r| json!(r)))
                };
                let payload = match answer {
                    Ok(v) => ipc::ok_payload(v),
                    Err(e) => ipc::error_payload(&e),
                };
                let reply =
                    IpcMessage::new(MessageType::Event, ORCHESTRATOR, from, payload, Some(id));
                Self::deliver(&mut self.lock(), from, reply);
            }
            (kind, _) => {
                tracing::warn!(target: "goondan::orchestrator", %from, ?kind, "message without a correlation id dropped");
            }
        }
    }

    /// Checks that `caller` may reach `target` at all (defined, callable).
    fn check_target(&self, caller_agent: &str, target: &str) -> Result<(), ToolError> {
        if !self.swarm.defines(target) {
            return Err(unknown_target(target, &self.swarm));
        }
        if !self
            .swarm
            .callable_from(caller_agent)
            .iter()
            .any(|a| a == target)
        {
            return Err(error(
                codes::NOT_CALLABLE,
                "AgentNotCallableError",
                format!("agent `{caller_agent}` may not call agent `{target}`"),
                &format!(
                    "call one of: {}",
                    self.swarm.callable_from(caller_agent).join(", ")
                ),
            ));
        }
        Ok(())
    }

    /// Routes a request from `from` to `target` (HO-1, HO-6); the answer goes to `caller`.
    pub(in crate::agents::orchestrator) fn delegate(
        self: &Arc<Self>,
        caller: Caller,
        from: &str,
        target: &str,
        payload: DelegatePayload,
        id: String,
    ) {
        let (from_agent, _) = split(from);
        let key = instance_key(payload.event.instance_key.as_deref());
        let to = address(target, &key);
        let timeout_ms = payload.timeout_ms;
        // Checked, then forwarded with the sender added to its chain.
        let forwarded = (|| {
            if from == ORCHESTRATOR && self.stopping.load(Ordering::SeqCst) {
                return Err(error(
                    codes::SHUTTING_DOWN,
                    "AgentShuttingDownError",
                    "the swarm is shutting down".to_owned(),
                    "do not retry; the swarm is stopping",
                ));
            }
            if to == from || payload.chain.contains(&to) {
                let mut path = payload.chain.clone();
                path.push(from.to_owned());
                path.push(to.clone());
                return Err(error(
                    codes::CYCLE,
                    "AgentCycleError",
                    format!(
                        "the request would wait in a cycle: {}; `{to}` is already waiting on this request",
                        path.join(" -> ")
                    ),
                    "answer with what you have instead of calling back an agent that is waiting on you, or use `agents__send`, which does not wait",
                ));
            }
            self.check_target(from_agent, target)?;
            let mut forwarded = payload;
            forwarded.chain.push(from.to_owned());
            serde_json::to_value(&forwarded).map_err(protocol)
        })();
        let body = match forwarded {
            Ok(body) => body,
            Err(e) => return self.reply(caller, ORCHESTRATOR, &id, ipc::error_payload(&e)),
        };
        if let Some(remote) = self.remote_for(target) {
            let msg = IpcMessage::new(MessageType::Delegate, from, &to, body, Some(id.clone()));
            let answer = remote.delegate(msg);
            let core = Arc::clone(self);
            tokio::spawn(async move {
                let payload = answer.await;
                core.reply(caller, &to, &id, payload);
            });
            return;
        }
        let mut st = self.lock();
        let started = if st.waiting.contains_key(&id) {
            Err(protocol(format!("correlation id `{id}` is already in use")))
        } else {
            self.ensure(&mut st, target, &key, from, None)
        };
        if let Err(e) = started {
            drop(st);
            return self.reply(caller, ORCHESTRATOR, &id, ipc::error_payload(&e));
        }
        st.waiting.insert(
            id.clone(),
            Waiting {
                caller,
                target: to.clone(),
                timer: None,
            },
        );
        let msg = IpcMessage::new(MessageType::Delegate, from, &to, body, Some(id.clone()));
        Self::deliver(&mut st, &to, msg);
        drop(st);
        let core = Arc::clone(self);
        let key = id.clone();
        let timer = tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(timeout_ms)).await;
            let w = core.lock().waiting.remove(&key);
            if let Some(w) = w {
                let err = timed_out(split(&w.target).0, timeout_ms);
                core.reply(w.caller, ORCHESTRATOR, &key, ipc::error_payload(&err));
            }
        });
        match self.lock().waiting.get_mut(&id) {
            Some(w) => w.timer = Some(timer.abort_handle()),
            None => timer.abort(),
        }
    }

    /// Delivers a one-way event (AG-2), spawning the target when missing; the sender's trace
    /// context (`traceparent`, [`crate::telemetry`]) goes with it.
    pub(in crate::agents::orchestrator) fn send_event(
        self: &Arc<Self>,
        from: &str,
        target: &str,
        event: AgentEvent,
        traceparent: Option<String>,
    ) -> Result<SendResult, ToolError> {
        self.check_target(split(from).0, target)?;
        let key = instance_key(event.instance_key.as_deref());
        let event_id = fresh_id("evt");
        let body = ipc::event_payload(&event, &event_id, traceparent.as_deref());
        let accepted = if let Some(remote) = self.remote_for(target) {
            let to = address(target, &key);
            remote.send(IpcMessage::new(MessageType::Event, from, &to, body, None))
        } else {
            let mut st = self.lock();
            let (to, _) = self.ensure(&mut st, target, &key, from, None)?;
            let msg = IpcMessage::new(MessageType::Event, from, &to, body, None);
            Self::deliver(&mut st, &to, msg)
        };
        Ok(SendResult {
            event_id,
            target: target.to_owned(),
            accepted,
        })
    }
}
