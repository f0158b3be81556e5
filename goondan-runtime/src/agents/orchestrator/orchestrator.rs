//! The [`Orchestrator`]: the host's handle on a swarm of agent processes.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use tokio::sync::oneshot;

use super::inproc::InProcess;
#[cfg(feature = "nats")]
use super::ipc::IpcMessage;
use super::ipc::{self, DelegatePayload, ORCHESTRATOR};
use super::link::{Launcher, Remote};
use super::process::{ProcessConfig, ProcessLauncher};
#[cfg(feature = "nats")]
use super::protocol;
use super::router::{Caller, Core};
use super::runtime::request_result;
use super::{
    AgentIdentity, AgentWorker, OrchestratorConfig, SwarmSpec, address, disconnected, timed_out,
};
use crate::tools::agent::{
    AgentCatalog, AgentEvent, AgentFuture, AgentInstanceInfo, AgentRuntime, RequestOptions,
    RequestResult, SendResult, SpawnOptions, SpawnResult,
};
use crate::tools::error::ToolError;

/// Why an Orchestrator could not start.
#[derive(Debug, thiserror::Error)]
pub enum OrchestratorError {
    /// The swarm's entry agent is not one of its agents.
    #[error("the entry agent `{entry}` is not defined in swarm `{swarm}`")]
    UnknownEntry {
        /// The swarm.
        swarm: String,
        /// The entry agent.
        entry: String,
    },
    /// The IPC socket could not be set up.
    #[error("cannot set up the IPC socket: {0}")]
    Socket(#[source] std::io::Error),
}

/// Owns one process per agent instance and routes handoffs between them (HO-6..8). Cheap to
/// clone. It is the host's [`AgentRuntime`]: calls made through it come from `orchestrator`.
#[derive(Clone)]
pub struct Orchestrator {
    core: Arc<Core>,
}

impl std::fmt::Debug for Orchestrator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Orchestrator")
            .field("swarm", &self.core.swarm.name)
            .field("instances", &self.core.instance_count())
            .finish_non_exhaustive()
    }
}

impl Orchestrator {
    /// Starts an Orchestrator whose agents are processes of `process` (HO-8).
    pub async fn start(
        swarm: SwarmSpec,
        process: ProcessConfig,
    ) -> Result<Self, OrchestratorError> {
        Self::start_with(swarm, process, OrchestratorConfig::default()).await
    }

    /// [`start`](Self::start) with a configuration.
    pub async fn start_with(
        swarm: SwarmSpec,
        process: ProcessConfig,
        config: OrchestratorConfig,
    ) -> Result<Self, OrchestratorError> {
        Self::start_with_remote(swarm, process, config, None)
    }

    /// An Orchestrator whose local agents are processes of `process` and whose other agents
    /// `remote`, when there is one, reaches (a host of a swarm across machines).
    pub(crate) fn start_with_remote(
        swarm: SwarmSpec,
        process: ProcessConfig,
        config: OrchestratorConfig,
        remote: Option<Arc<dyn Remote>>,
    ) -> Result<Self, OrchestratorError> {
        check(&swarm)?;
        let launcher = ProcessLauncher::bind(process).map_err(OrchestratorError::Socket)?;
        Ok(Self::with_launcher(
            swarm,
            config,
            Box::new(launcher),
            remote,
        ))
    }

    /// An Orchestrator whose agents are tasks of this process running the workers `build`
    /// makes: the same routing, for fast tests. Must be called inside a Tokio runtime.
    pub fn in_process<W, F>(
        swarm: SwarmSpec,
        config: OrchestratorConfig,
        build: F,
    ) -> Result<Self, OrchestratorError>
    where
        W: AgentWorker,
        F: Fn(&AgentIdentity) -> W + Send + Sync + 'static,
    {
        check(&swarm)?;
        let launcher =
            InProcess::new(move |id: &AgentIdentity| Arc::new(build(id)) as Arc<dyn AgentWorker>);
        Ok(Self::with_launcher(swarm, config, Box::new(launcher), None))
    }

    fn with_launcher(
        swarm: SwarmSpec,
        config: OrchestratorConfig,
        launcher: Box<dyn Launcher>,
        remote: Option<Arc<dyn Remote>>,
    ) -> Self {
        Self {
            core: Arc::new(Core::new(swarm, config, launcher, remote)),
        }
    }

    #[cfg(feature = "nats")]
    /// Serves a `delegate` that came from another machine: routes it as if `msg.from` had
    /// sent it here (its chain, callable list and cycles checked as usual) and resolves to the
    /// `delegate_result` payload.
    pub(crate) async fn serve_delegate(&self, msg: IpcMessage) -> Value {
        let payload = match serde_json::from_value::<DelegatePayload>(msg.payload) {
            Ok(p) => p,
            Err(e) => {
                let e = protocol(format!("a delegate payload is malformed: {e}"));
                return ipc::error_payload(&e);
            }
        };
        let mut payload = payload;
        if payload.chain.last() == Some(&msg.from) {
            payload.chain.pop();
        }
        let (target, _) = msg.to.split_once('/').unwrap_or((msg.to.as_str(), ""));
        // The caller's correlation id, so both sides see the same one (HO-3); a fresh one if
        // another caller's id happens to equal it here.
        let id = match msg.correlation_id {
            Some(id) if !self.core.is_waiting(&id) => id,
            _ => self.core.fresh(&msg.from),
        };
        self.delegate(&msg.from, target, payload, id)
            .await
            .unwrap_or_else(|e| ipc::error_payload(&e))
    }

    /// Routes the request `id` of `from` to `target` and waits for its answer payload, at
    /// most the request's timeout and a margin.
    async fn delegate(
        &self,
        from: &str,
        target: &str,
        payload: DelegatePayload,
        id: String,
    ) -> Result<Value, ToolError> {
        let timeout_ms = payload.timeout_ms;
        let (tx, rx) = oneshot::channel();
        self.core
            .delegate(Caller::Host(tx), from, target, payload, id);
        let wait = Duration::from_millis(timeout_ms) + Duration::from_millis(500);
        match tokio::time::timeout(wait, rx).await {
            Ok(Ok(answer)) => Ok(answer),
            Ok(Err(_)) => Err(disconnected()),
            Err(_) => Err(timed_out(target, timeout_ms)),
        }
    }

    #[cfg(feature = "nats")]
    /// Serves a one-way `event` that came from another machine.
    pub(crate) fn serve_event(&self, msg: IpcMessage) -> Result<SendResult, ToolError> {
        let event = ipc::event_of(&msg.payload)?;
        let (target, _) = msg.to.split_once('/').unwrap_or((msg.to.as_str(), ""));
        let parent = ipc::traceparent_of(&msg.payload);
        self.core.send_event(&msg.from, target, event, parent)
    }

    /// The swarm.
    pub fn swarm(&self) -> &SwarmSpec {
        &self.core.swarm
    }

    /// The Unix socket agent processes connect to (process mode only).
    pub fn socket_path(&self) -> Option<&Path> {
        self.core.launcher.socket_path()
    }

    /// The process id of a running instance.
    pub fn pid(&self, agent: &str, instance_key: &str) -> Option<u32> {
        self.core.pid(&address(agent, instance_key))
    }

    /// How many times an instance's process ended and was started again.
    pub fn restarts(&self, agent: &str, instance_key: &str) -> Option<u64> {
        self.core.restarts(&address(agent, instance_key))
    }

    /// How many requests are waiting for an answer.
    pub fn in_flight(&self) -> usize {
        self.core.in_flight()
    }

    /// Refuses new requests from the host, waits (up to `grace`) for in-flight requests, asks
    /// every agent process to shut down and waits for them to exit (within what is left of
    /// `grace`), then kills what is left and waits (up to `grace` again) for it to exit. When
    /// it returns, the agent processes are gone (their files, such as a journal, are closed).
    pub async fn shutdown(&self, grace: Duration) {
        self.core.shutdown(grace).await;
    }
}

fn check(swarm: &SwarmSpec) -> Result<(), OrchestratorError> {
    if swarm.defines(&swarm.entry_agent) {
        Ok(())
    } else {
        Err(OrchestratorError::UnknownEntry {
            swarm: swarm.name.clone(),
            entry: swarm.entry_agent.clone(),
        })
    }
}

impl AgentRuntime for Orchestrator {
    fn request<'a>(
        &'a self,
        target: &'a str,
        event: AgentEvent,
        options: RequestOptions,
    ) -> AgentFuture<'a, RequestResult> {
        Box::pin(async move {
            let payload = DelegatePayload::new(event, Vec::new(), options);
            let id = self.core.fresh(ORCHESTRATOR);
            let answer = self
                .delegate(ORCHESTRATOR, target, payload, id.clone())
                .await?;
            Ok(request_result(target, ipc::read_answer(answer)?, id))
        })
    }

    fn send<'a>(&'a self, target: &'a str, event: AgentEvent) -> AgentFuture<'a, SendResult> {
        Box::pin(async move {
            let parent = crate::telemetry::traceparent();
            self.core.send_event(ORCHESTRATOR, target, event, parent)
        })
    }

    fn spawn<'a>(&'a self, target: &'a str, options: SpawnOptions) -> AgentFuture<'a, SpawnResult> {
        Box::pin(async move { self.core.spawn(ORCHESTRATOR, target, options) })
    }

    fn list(&self, include_all: bool) -> AgentFuture<'_, Vec<AgentInstanceInfo>> {
        Box::pin(async move { Ok(self.core.list(ORCHESTRATOR, include_all)) })
    }

    fn catalog(&self) -> AgentFuture<'_, AgentCatalog> {
        Box::pin(async move { Ok(self.core.catalog(ORCHESTRATOR)) })
    }
}
