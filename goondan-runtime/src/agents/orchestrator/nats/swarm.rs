//! The entry side of a swarm across machines: an [`AgentRuntime`] that reaches every agent
//! through NATS.

use std::time::Duration;

use futures_util::StreamExt;

use super::call::Calls;
use super::options::{NatsError, NatsOptions};
use super::subjects::Subjects;
use crate::agents::orchestrator::ipc::{
    self, DelegatePayload, IpcMessage, MessageType, ORCHESTRATOR,
};
use crate::agents::orchestrator::runtime::request_result;
use crate::agents::orchestrator::{
    SwarmSpec, address, codes, disconnected, error, instance_key, listing_order, unknown_target,
};
use crate::tools::agent::{
    AgentCatalog, AgentEvent, AgentFuture, AgentInstanceInfo, AgentRuntime, RequestOptions,
    RequestResult, SendResult, SpawnOptions, SpawnResult,
};
use crate::tools::context::fresh_id;

/// A swarm whose agents run on [`AgentHost`](super::AgentHost)s, seen from the entry side: a
/// host program hands it the user's task as it would to a local
/// [`Orchestrator`](crate::agents::orchestrator::Orchestrator). Calls come from `orchestrator`.
#[derive(Clone)]
pub struct NatsSwarm {
    calls: Calls,
    swarm: SwarmSpec,
}

impl std::fmt::Debug for NatsSwarm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NatsSwarm")
            .field("swarm", &self.swarm.name)
            .finish_non_exhaustive()
    }
}

impl NatsSwarm {
    /// Connects to the NATS server of `nats` as the entry side of `swarm`.
    pub async fn connect(nats: &NatsOptions, swarm: SwarmSpec) -> Result<Self, NatsError> {
        let subjects = Subjects::new(&swarm.name)?;
        let client = nats
            .connect(&format!("goondan-entry {}", swarm.name))
            .await?;
        Ok(Self {
            calls: Calls {
                client,
                subjects,
                heartbeat: nats.heartbeat,
            },
            swarm,
        })
    }

    /// The swarm.
    pub fn swarm(&self) -> &SwarmSpec {
        &self.swarm
    }

    /// How long [`list`](AgentRuntime::list) waits for one more host after the last answer.
    pub const LIST_QUIET: Duration = Duration::from_millis(150);

    /// Asks every host for its instances and merges the answers, oldest first.
    async fn gather_instances(
        &self,
    ) -> Result<Vec<AgentInstanceInfo>, crate::tools::error::ToolError> {
        let client = &self.calls.client;
        let inbox = client.new_inbox();
        let mut answers = client
            .subscribe(inbox.clone())
            .await
            .map_err(|_| disconnected())?;
        client
            .publish_with_reply(self.calls.subjects.instances(), inbox, "".into())
            .await
            .map_err(|_| disconnected())?;
        let mut all: Vec<AgentInstanceInfo> = Vec::new();
        let end = tokio::time::Instant::now() + Duration::from_secs(1);
        loop {
            let wait =
                Self::LIST_QUIET.min(end.saturating_duration_since(tokio::time::Instant::now()));
            match tokio::time::timeout(wait, answers.next()).await {
                Ok(Some(m)) => {
                    let mine: Vec<AgentInstanceInfo> = serde_json::from_slice(&m.payload)
                        .map_err(crate::agents::orchestrator::protocol)?;
                    all.extend(mine);
                }
                Ok(None) => return Err(disconnected()),
                Err(_) => break,
            }
        }
        all.sort_by(|a, b| listing_order(a).cmp(&listing_order(b)));
        Ok(all)
    }

    /// Waits until every message published so far reached the server.
    pub async fn flush(&self, within: Duration) -> bool {
        matches!(
            tokio::time::timeout(within, self.calls.client.flush()).await,
            Ok(Ok(()))
        )
    }
}

impl AgentRuntime for NatsSwarm {
    fn request<'a>(
        &'a self,
        target: &'a str,
        event: AgentEvent,
        options: RequestOptions,
    ) -> AgentFuture<'a, RequestResult> {
        Box::pin(async move {
            if !self.swarm.defines(target) {
                return Err(unknown_target(target, &self.swarm));
            }
            let key = instance_key(event.instance_key.as_deref());
            let id = fresh_id(ORCHESTRATOR);
            let payload = DelegatePayload::new(event, Vec::new(), options);
            let body =
                serde_json::to_value(&payload).map_err(crate::agents::orchestrator::protocol)?;
            let to = address(target, &key);
            let msg = IpcMessage::new(
                MessageType::Delegate,
                ORCHESTRATOR,
                &to,
                body,
                Some(id.clone()),
            );
            let answer = self.calls.request(msg).await;
            Ok(request_result(target, ipc::read_answer(answer)?, id))
        })
    }

    fn send<'a>(&'a self, target: &'a str, event: AgentEvent) -> AgentFuture<'a, SendResult> {
        Box::pin(async move {
            if !self.swarm.defines(target) {
                return Err(unknown_target(target, &self.swarm));
            }
            let key = instance_key(event.instance_key.as_deref());
            let event_id = fresh_id("evt");
            let parent = crate::telemetry::traceparent();
            let body = ipc::event_payload(&event, &event_id, parent.as_deref());
            let msg = IpcMessage::new(
                MessageType::Event,
                ORCHESTRATOR,
                address(target, &key),
                body,
                None,
            );
            let accepted = self.calls.send(msg).await;
            Ok(SendResult {
                event_id,
                target: target.to_owned(),
                accepted,
            })
        })
    }

    fn spawn<'a>(
        &'a self,
        target: &'a str,
        _options: SpawnOptions,
    ) -> AgentFuture<'a, SpawnResult> {
        Box::pin(async move {
            if !self.swarm.defines(target) {
                return Err(unknown_target(target, &self.swarm));
            }
            Err(error(
                codes::SPAWN,
                "AgentSpawnError",
                format!(
                    "agent `{target}` runs on a host of swarm `{}`, not here",
                    self.swarm.name
                ),
                "just send it a request: the host serving it starts its instance on first use",
            ))
        })
    }

    /// The entry side spawns nothing itself, so its own instances are none; with
    /// `include_all`, the instances every host of the swarm runs, gathered from the hosts that
    /// answer within [`NatsSwarm::LIST_QUIET`] of the last answer (at most a second in all).
    fn list(&self, include_all: bool) -> AgentFuture<'_, Vec<AgentInstanceInfo>> {
        Box::pin(async move {
            if !include_all {
                return Ok(Vec::new());
            }
            self.gather_instances().await
        })
    }

    fn catalog(&self) -> AgentFuture<'_, AgentCatalog> {
        Box::pin(async move {
            Ok(AgentCatalog {
                swarm_name: self.swarm.name.clone(),
                entry_agent: self.swarm.entry_agent.clone(),
                self_agent: ORCHESTRATOR.to_owned(),
                available_agents: self.swarm.agent_names(),
                callable_agents: self.swarm.callable_from(ORCHESTRATOR),
            })
        })
    }
}
