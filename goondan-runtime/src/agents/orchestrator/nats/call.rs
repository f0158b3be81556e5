//! One request over NATS: HO-7's `delegate` published with a reply inbox, the serving host's
//! acknowledgement, pings of that host while the request waits, and the `delegate_result`.

use std::collections::BTreeSet;
use std::time::Duration;

use futures_util::StreamExt;
use serde_json::Value;
use tokio::sync::oneshot;
use tokio_util::task::AbortOnDropHandle;

use super::subjects::Subjects;
use crate::agents::orchestrator::ipc::{self, IpcMessage, MessageType};
use crate::agents::orchestrator::link::{Remote, RemoteFuture};
use crate::agents::orchestrator::{
    DEFAULT_TIMEOUT_MS, codes, disconnected, error, protocol, timed_out,
};

/// The header of a host's acknowledgement: its host id.
pub(super) const HOST_HEADER: &str = "Goondan-Host";
/// The header carrying the caller's trace id (HO-3); also in the payload.
pub(super) const TRACE_HEADER: &str = "Goondan-Trace-Id";
/// The header carrying the caller's W3C trace context ([`crate::telemetry`]); also in the
/// payload, which a host reads it from when the header is missing.
pub(super) const TRACEPARENT_HEADER: &str = "traceparent";

/// What a request needs: the connection, the swarm's subjects and the heartbeat.
#[derive(Clone)]
pub(super) struct Calls {
    pub(super) client: async_nats::Client,
    pub(super) subjects: Subjects,
    pub(super) heartbeat: Duration,
}

fn agent_of(address: &str) -> &str {
    address.split_once('/').map_or(address, |(a, _)| a)
}

fn no_host(agent: &str) -> Value {
    ipc::error_payload(&error(
        codes::NO_HOST,
        "AgentNoHostError",
        format!("no host of the swarm serves agent `{agent}`"),
        "start a host serving it (`goondan agent-host --agents ...`), or call another agent",
    ))
}

fn host_lost(agent: &str, host: &str) -> Value {
    ipc::error_payload(&error(
        codes::CRASHED,
        "AgentCrashedError",
        format!("host `{host}` serving agent `{agent}` is gone; the request was lost"),
        "retry the request: another host serving the agent takes it, if there is one",
    ))
}

impl Calls {
    /// Pings `host` every heartbeat; resolves when it stops answering. The pings stop when the
    /// handle is dropped.
    fn watch(&self, host: String, lost: oneshot::Sender<()>) -> AbortOnDropHandle<()> {
        let calls = self.clone();
        AbortOnDropHandle::new(tokio::spawn(async move {
            let Ok(subject) = calls.subjects.host_ping(&host) else {
                let _ = lost.send(());
                return;
            };
            let mut tick = tokio::time::interval(calls.heartbeat);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tick.tick().await;
                let ping = calls.client.request(subject.clone(), "".into());
                let answered = tokio::time::timeout(calls.heartbeat * 2, ping).await;
                if !matches!(answered, Ok(Ok(_))) {
                    let _ = lost.send(());
                    return;
                }
            }
        }))
    }

    /// Sends the `delegate` `msg` to a host serving its target and waits for the answer
    /// payload: the target's, or an error payload (no host, host lost, timeout, protocol).
    pub(super) async fn request(&self, msg: IpcMessage) -> Value {
        let agent = agent_of(&msg.to).to_owned();
        let timeout_ms = msg
            .payload
            .get("timeoutMs")
            .and_then(Value::as_u64)
            .unwrap_or(DEFAULT_TIMEOUT_MS);
        let subject = match self.subjects.agent(&agent) {
            Ok(s) => s,
            Err(e) => return ipc::error_payload(&protocol(e)),
        };
        let body = match serde_json::to_vec(&msg) {
            Ok(b) => b,
            Err(e) => return ipc::error_payload(&protocol(e)),
        };
        let limit = self.client.server_info().max_payload;
        if limit > 0 && body.len() > limit {
            return ipc::error_payload(&protocol(format!(
                "the request of {} bytes for `{agent}` exceeds the NATS server's max_payload of {limit} bytes",
                body.len()
            )));
        }
        let mut headers = async_nats::HeaderMap::new();
        if let Some(trace) = msg.payload.get("traceId").and_then(Value::as_str) {
            headers.insert(TRACE_HEADER, trace);
        }
        if let Some(parent) = msg.payload.get("traceparent").and_then(Value::as_str) {
            headers.insert(TRACEPARENT_HEADER, parent);
        }
        let inbox = self.client.new_inbox();
        let Ok(mut replies) = self.client.subscribe(inbox.clone()).await else {
            return ipc::error_payload(&disconnected());
        };
        let sent = self
            .client
            .publish_with_reply_and_headers(subject, inbox, headers, body.into())
            .await;
        if sent.is_err() {
            return ipc::error_payload(&disconnected());
        }
        let deadline = tokio::time::sleep(Duration::from_millis(timeout_ms));
        tokio::pin!(deadline);
        let (lost_tx, mut lost) = oneshot::channel::<()>();
        let mut lost_tx = Some(lost_tx);
        let mut watching: Option<(String, AbortOnDropHandle<()>)> = None;
        loop {
            tokio::select! {
                reply = replies.next() => {
                    let Some(reply) = reply else {
                        return ipc::error_payload(&disconnected());
                    };
                    if reply.status == Some(async_nats::StatusCode::NO_RESPONDERS) {
                        return no_host(&agent);
                    }
                    let ack = reply
                        .headers
                        .as_ref()
                        .and_then(|h| h.get(HOST_HEADER))
                        .map(|v| v.as_str().to_owned());
                    if let Some(host) = ack {
                        if let Some(tx) = lost_tx.take() {
                            let watch = self.watch(host.clone(), tx);
                            watching = Some((host, watch));
                        }
                        continue;
                    }
                    return match ipc::decode(&reply.payload) {
                        Ok(m) if m.kind == MessageType::DelegateResult => m.payload,
                        Ok(m) => ipc::error_payload(&protocol(format!(
                            "a `{:?}` came where a `delegate_result` was expected",
                            m.kind
                        ))),
                        Err(e) => ipc::error_payload(&protocol(e)),
                    };
                }
                _ = &mut lost, if watching.is_some() => {
                    let host = watching.as_ref().map(|(h, _)| h.clone()).unwrap_or_default();
                    tracing::warn!(target: "goondan::orchestrator", %agent, %host, "host lost mid-request");
                    return host_lost(&agent, &host);
                }
                () = &mut deadline => return ipc::error_payload(&timed_out(&agent, timeout_ms)),
            }
        }
    }

    /// Publishes the one-way `event` `msg` for one host serving its target.
    pub(super) async fn send(&self, msg: IpcMessage) -> bool {
        let Ok(subject) = self.subjects.agent(agent_of(&msg.to)) else {
            return false;
        };
        let Ok(body) = serde_json::to_vec(&msg) else {
            return false;
        };
        let mut headers = async_nats::HeaderMap::new();
        if let Some(parent) = msg.payload.get("traceparent").and_then(Value::as_str) {
            headers.insert(TRACEPARENT_HEADER, parent);
        }
        self.client
            .publish_with_headers(subject, headers, body.into())
            .await
            .is_ok()
    }
}

/// The [`Remote`] of a host's Orchestrator: every agent not placed on the host is reached
/// over NATS.
pub(super) struct Forwarder {
    pub(super) calls: Calls,
    pub(super) local: BTreeSet<String>,
}

impl Remote for Forwarder {
    fn serves_locally(&self, agent: &str) -> bool {
        self.local.contains(agent)
    }

    fn delegate(&self, msg: IpcMessage) -> RemoteFuture {
        let calls = self.calls.clone();
        Box::pin(async move { calls.request(msg).await })
    }

    fn send(&self, msg: IpcMessage) -> bool {
        let calls = self.calls.clone();
        tokio::spawn(async move { calls.send(msg).await });
        true
    }
}
