//! A host of a swarm across machines: the agents placed on it as local processes under a local
//! Orchestrator, their requests served from NATS (a queue group per agent, shared with every
//! other host serving the same agent), and its pings answered.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt;

use super::call::{Calls, Forwarder, HOST_HEADER, TRACEPARENT_HEADER};
use super::options::{NatsError, NatsOptions};
use super::subjects::{Subjects, token};
use crate::agents::orchestrator::ipc::{self, IpcMessage, MessageType};
use crate::agents::orchestrator::{
    Orchestrator, OrchestratorConfig, ProcessConfig, SwarmSpec, protocol,
};
use crate::tools::agent::AgentRuntime;
use crate::tools::context::fresh_id;

/// The error of a subscription to `subject` that NATS refused.
fn refused(subject: String) -> impl FnOnce(async_nats::SubscribeError) -> NatsError {
    move |source| NatsError::Subscribe { subject, source }
}

/// A host of a swarm on NATS: serves the agents placed on it until
/// [`shutdown`](Self::shutdown) (or until dropped, when its tasks end with the runtime).
#[derive(Debug)]
pub struct AgentHost {
    orchestrator: Orchestrator,
    host_id: String,
    client: async_nats::Client,
    /// The task answering pings, kept until the in-flight work is answered.
    pings: tokio::task::AbortHandle,
    /// The tasks taking requests from NATS, one per agent.
    takers: Vec<tokio::task::AbortHandle>,
    /// The requests being served.
    serving: tokio_util::task::TaskTracker,
}

impl AgentHost {
    /// Connects to NATS, starts a local Orchestrator for the agents `placed` on this host
    /// (processes of `process`), and serves their requests. Requests its agents make for agents
    /// placed elsewhere go over NATS.
    pub async fn start(
        nats: &NatsOptions,
        swarm: SwarmSpec,
        placed: &[String],
        process: ProcessConfig,
        config: OrchestratorConfig,
    ) -> Result<Self, NatsError> {
        let subjects = Subjects::new(&swarm.name)?;
        for agent in placed {
            if !swarm.defines(agent) {
                return Err(NatsError::UnknownAgent {
                    swarm: swarm.name.clone(),
                    agent: agent.clone(),
                });
            }
            token("agent", agent)?;
        }
        let host_id = fresh_id("host").replace('-', "_");
        let client = nats
            .connect(&format!("goondan-host {} {host_id}", swarm.name))
            .await?;
        let calls = Calls {
            client: client.clone(),
            subjects: subjects.clone(),
            heartbeat: nats.heartbeat,
        };
        let forwarder = Forwarder {
            calls,
            local: placed.iter().cloned().collect::<BTreeSet<_>>(),
        };
        let orchestrator =
            Orchestrator::start_with_remote(swarm, process, config, Some(Arc::new(forwarder)))?;
        let ping = subjects.host_ping(&host_id)?;
        let mut pings = client
            .subscribe(ping.clone())
            .await
            .map_err(refused(ping))?;
        let pong = client.clone();
        let pings = tokio::spawn(async move {
            while let Some(m) = pings.next().await {
                if let Some(reply) = m.reply {
                    let _ = pong.publish(reply, "".into()).await;
                }
            }
        })
        .abort_handle();
        let instances = subjects.instances();
        let mut asked = client
            .subscribe(instances.clone())
            .await
            .map_err(refused(instances))?;
        let (lister, answerer) = (orchestrator.clone(), client.clone());
        let listing = tokio::spawn(async move {
            while let Some(m) = asked.next().await {
                let Some(reply) = m.reply else { continue };
                let mine = lister.list(true).await.unwrap_or_default();
                if let Ok(body) = serde_json::to_vec(&mine) {
                    let _ = answerer.publish(reply, body.into()).await;
                }
            }
        })
        .abort_handle();
        let tracker = tokio_util::task::TaskTracker::new();
        let mut takers = vec![listing];
        for agent in placed {
            let subject = subjects.agent(agent)?;
            let mut requests = client
                .queue_subscribe(subject.clone(), subject.clone())
                .await
                .map_err(refused(subject))?;
            let serving = Serving {
                orchestrator: orchestrator.clone(),
                client: client.clone(),
                host_id: host_id.clone(),
            };
            let tracker = tracker.clone();
            takers.push(
                tokio::spawn(async move {
                    while let Some(m) = requests.next().await {
                        let serving = serving.clone();
                        tracker.spawn(async move { serving.serve(m).await });
                    }
                })
                .abort_handle(),
            );
        }
        client.flush().await.map_err(NatsError::Flush)?;
        tracing::info!(target: "goondan::orchestrator", host = %host_id, agents = ?placed, "host serving");
        Ok(Self {
            orchestrator,
            host_id,
            client,
            pings,
            takers,
            serving: tracker,
        })
    }

    /// The local Orchestrator running this host's agents.
    pub fn orchestrator(&self) -> &Orchestrator {
        &self.orchestrator
    }

    /// This host's id, unique in the swarm.
    pub fn host_id(&self) -> &str {
        &self.host_id
    }

    /// Stops taking requests (the next ones go to the other hosts serving its agents, or
    /// fail at once with `E_AGENT_NO_HOST`), shuts the local Orchestrator down, draining the
    /// work in flight within `grace` (see [`Orchestrator::shutdown`]), sends the answers, and
    /// disconnects. Its callers' pings are answered until then, so drained work is not
    /// mistaken for a lost host.
    pub async fn shutdown(self, grace: Duration) {
        for t in &self.takers {
            t.abort();
        }
        let _ = self.client.flush().await;
        self.orchestrator.shutdown(grace).await;
        self.serving.close();
        let _ = tokio::time::timeout(grace, self.serving.wait()).await;
        self.pings.abort();
        let _ = self.client.drain().await;
    }
}

#[derive(Clone)]
struct Serving {
    orchestrator: Orchestrator,
    client: async_nats::Client,
    host_id: String,
}

impl Serving {
    /// Serves one message from NATS: a `delegate` (acknowledged, then answered on its reply
    /// subject) or a one-way `event`.
    async fn serve(&self, m: async_nats::Message) {
        let mut msg = match ipc::decode(&m.payload) {
            Ok(msg) => msg,
            Err(e) => {
                tracing::warn!(target: "goondan::orchestrator", error = %e, "malformed message from NATS refused");
                // A caller waiting on a reply gets a structured error instead of a timeout.
                if let Some(reply) = m.reply {
                    let refusal = IpcMessage::new(
                        MessageType::DelegateResult,
                        ipc::ORCHESTRATOR,
                        ipc::ORCHESTRATOR,
                        ipc::error_payload(&protocol(format!(
                            "a message of {} bytes from NATS is not an HO-7 message: {e}",
                            m.payload.len()
                        ))),
                        None,
                    );
                    if let Ok(body) = serde_json::to_vec(&refusal) {
                        let _ = self.client.publish(reply, body.into()).await;
                    }
                }
                return;
            }
        };
        follow_header(&mut msg, m.headers.as_ref());
        match (msg.kind, m.reply) {
            (MessageType::Delegate, Some(reply)) => {
                let mut ack = async_nats::HeaderMap::new();
                ack.insert(HOST_HEADER, self.host_id.as_str());
                let _ = self
                    .client
                    .publish_with_headers(reply.clone(), ack, "".into())
                    .await;
                let (from, to, id) = (msg.from.clone(), msg.to.clone(), msg.correlation_id.clone());
                let payload = self.orchestrator.serve_delegate(msg).await;
                let answer =
                    IpcMessage::new(MessageType::DelegateResult, &to, &from, payload, id.clone());
                let body = serde_json::to_vec(&answer).map_err(protocol).and_then(|body| {
                    let limit = self.client.server_info().max_payload;
                    if limit > 0 && body.len() > limit {
                        Err(protocol(format!(
                            "the answer of {} bytes from `{to}` exceeds the NATS server's max_payload of {limit} bytes",
                            body.len()
                        )))
                    } else {
                        Ok(body)
                    }
                });
                let body = body.or_else(|e| {
                    let refusal = IpcMessage::new(
                        MessageType::DelegateResult,
                        &to,
                        &from,
                        ipc::error_payload(&e),
                        id,
                    );
                    serde_json::to_vec(&refusal)
                });
                match body {
                    Ok(body) => {
                        let _ = self.client.publish(reply, body.into()).await;
                    }
                    Err(e) => {
                        tracing::warn!(target: "goondan::orchestrator", error = %e, "answer not serialisable")
                    }
                }
            }
            (MessageType::Event, None) => {
                if let Err(e) = self.orchestrator.serve_event(msg) {
                    tracing::warn!(target: "goondan::orchestrator", error = %e, "event from NATS refused");
                }
            }
            (kind, _) => {
                tracing::warn!(target: "goondan::orchestrator", ?kind, "unexpected message from NATS dropped");
            }
        }
    }
}

/// A delegate whose payload carries no trace context takes the one of its NATS header.
fn follow_header(msg: &mut IpcMessage, headers: Option<&async_nats::HeaderMap>) {
    let Some(parent) = headers.and_then(|h| h.get(TRACEPARENT_HEADER)) else {
        return;
    };
    if let Some(payload) = msg.payload.as_object_mut() {
        payload
            .entry("traceparent")
            .or_insert_with(|| parent.as_str().into());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn delegate(payload: serde_json::Value) -> IpcMessage {
        IpcMessage::new(
            MessageType::Delegate,
            "a/default",
            "b/default",
            payload,
            None,
        )
    }

    #[test]
    fn a_delegate_takes_the_trace_context_of_its_header_when_its_payload_has_none() {
        let mut headers = async_nats::HeaderMap::new();
        headers.insert(
            TRACEPARENT_HEADER,
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
        );
        let mut bare = delegate(serde_json::json!({"timeoutMs": 5}));
        follow_header(&mut bare, Some(&headers));
        assert_eq!(
            bare.payload["traceparent"],
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
        );
        // The payload's own context wins; no header, or a payload that is not an object,
        // changes nothing.
        let mut own = delegate(serde_json::json!({"traceparent": "mine"}));
        follow_header(&mut own, Some(&headers));
        assert_eq!(own.payload["traceparent"], "mine");
        let mut none = delegate(serde_json::json!({}));
        follow_header(&mut none, None);
        assert_eq!(none.payload, serde_json::json!({}));
        let mut odd = delegate(serde_json::json!([1, 2]));
        follow_header(&mut odd, Some(&headers));
        assert_eq!(odd.payload, serde_json::json!([1, 2]));
    }
}
