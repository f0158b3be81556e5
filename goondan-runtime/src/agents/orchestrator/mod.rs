//! Agents as processes: an [`Orchestrator`] owns one process per agent instance (HO-8), routes
//! IPC messages between them (HO-7), spawns a missing target on first use (HO-6), fails the
//! pending requests of a crashed process with a structured error at once (HO-4) and respawns it
//! with backoff.
//!
//! - [`ipc`]: the messages and their length-delimited JSON frames.
//! - [`Orchestrator`]: routing, instances, crashes, cycles, shutdown. It is also the host's
//!   [`AgentRuntime`](crate::AgentRuntime), so a host can hand the first task to the entry agent.
//! - [`agent_mode`]: the agent process side. A host program calls
//!   [`agent_mode::run_if_requested`] first thing in `main`; when the Orchestrator re-executes
//!   the program as an agent, that call serves the agent's [`AgentWorker`] and exits.
//! - [`ProcessConfig`] starts real processes; [`Orchestrator::in_process`] runs the same routing
//!   with tasks instead, for fast tests.
//!
//! ```no_run
//! use std::sync::Arc;
//! use goondan_runtime::tools::agent::{AgentEvent, AgentRuntime, RequestOptions};
//! use goondan_runtime::agents::orchestrator::{agent_mode, worker_fn, Orchestrator, ProcessConfig, SwarmSpec};
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! // First thing in `main`: in an agent process this serves the worker and never returns.
//! agent_mode::run_if_requested(|_me| {
//!     worker_fn(|event, _ctx| async move { Ok(serde_json::json!({"echo": event.input})) })
//! });
//! let swarm = SwarmSpec::new("demo", "planner").agent("planner").agent("coder");
//! let orchestrator = Orchestrator::start(swarm, ProcessConfig::current_exe()?).await?;
//! let event = AgentEvent::new("agent.request", serde_json::json!("hello"));
//! let answer = orchestrator.request("coder", event, RequestOptions::default()).await?;
//! println!("{answer:?}");
//! orchestrator.shutdown(std::time::Duration::from_secs(5)).await;
//! # Ok(())
//! # }
//! ```

pub mod agent_mode;
mod inproc;
pub mod ipc;
mod link;
#[cfg(feature = "nats")]
pub mod nats;
#[allow(clippy::module_inception)] // the file holds `Orchestrator`, as tokio's runtime/runtime.rs
mod orchestrator;
mod process;
mod router;
mod runtime;

use std::path::PathBuf;
use std::time::Duration;

use crate::tools::agent::AgentInstanceInfo;
use crate::tools::error::ToolError;

pub use self::agent_mode::{AgentContext, AgentIdentity, AgentWorker, worker_fn};
pub use self::orchestrator::{Orchestrator, OrchestratorError};
pub use self::process::ProcessConfig;

/// The instance key used when a call names none.
pub const DEFAULT_INSTANCE_KEY: &str = "default";

/// The request timeout when a call sets none, in milliseconds (AG-1).
pub const DEFAULT_TIMEOUT_MS: u64 = 60_000;

/// The error codes of handoffs (HO-4). Every one comes with a suggestion.
pub mod codes {
    /// The target is not an agent of the swarm.
    pub const UNKNOWN_TARGET: &str = "E_AGENT_UNKNOWN_TARGET";
    /// The caller may not call the target.
    pub const NOT_CALLABLE: &str = "E_AGENT_NOT_CALLABLE";
    /// The target did not answer in time.
    pub const TIMEOUT: &str = "E_AGENT_TIMEOUT";
    /// The target's process ended while the request was pending.
    pub const CRASHED: &str = "E_AGENT_CRASHED";
    /// The request would wait on an agent that is already waiting on the caller.
    pub const CYCLE: &str = "E_AGENT_CYCLE";
    /// The target's process could not be started.
    pub const SPAWN: &str = "E_AGENT_SPAWN";
    /// The Orchestrator is shutting down.
    pub const SHUTTING_DOWN: &str = "E_AGENT_SHUTTING_DOWN";
    /// The Orchestrator is gone.
    pub const DISCONNECTED: &str = "E_AGENT_DISCONNECTED";
    /// A message broke the protocol.
    pub const PROTOCOL: &str = "E_AGENT_PROTOCOL";
    /// The tool runs without an agent runtime.
    pub const NO_RUNTIME: &str = "E_AGENT_NO_RUNTIME";
    /// No host of the swarm serves the target (a swarm across machines).
    pub const NO_HOST: &str = "E_AGENT_NO_HOST";
}

/// How the Orchestrator times, retries and places its instances.
#[derive(Debug, Clone)]
pub struct OrchestratorConfig {
    /// The first wait before a respawn; doubled after each quick failure (default 100 ms).
    pub backoff_initial: Duration,
    /// The longest wait before a respawn (default 5 s).
    pub backoff_max: Duration,
    /// A process that lived this long resets the backoff (default 10 s).
    pub stable_after: Duration,
    /// Consecutive failed starts after which an instance is given up (default 5).
    pub max_spawn_failures: u32,
    /// The directory relative `cwd`s are resolved against (default: the current directory).
    pub workdir: PathBuf,
}

impl Default for OrchestratorConfig {
    fn default() -> Self {
        Self {
            backoff_initial: Duration::from_millis(100),
            backoff_max: Duration::from_secs(5),
            stable_after: Duration::from_secs(10),
            max_spawn_failures: 5,
            workdir: std::env::current_dir().unwrap_or_else(|_| PathBuf::from(".")),
        }
    }
}

/// One agent of a swarm, as the Orchestrator needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentSpec {
    /// The agent's name.
    pub name: String,
    /// The agents it may call; every other agent of the swarm when `None`.
    pub callable: Option<Vec<String>>,
}

/// The agents of a swarm: which exist, which is the entry, who may call whom.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SwarmSpec {
    /// The swarm's name.
    pub name: String,
    /// The agent a user's input goes to.
    pub entry_agent: String,
    /// Every agent, in definition order.
    pub agents: Vec<AgentSpec>,
}

impl SwarmSpec {
    /// A swarm named `name` whose entry agent is `entry_agent` (add it with [`agent`](Self::agent)).
    pub fn new(name: impl Into<String>, entry_agent: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            entry_agent: entry_agent.into(),
            agents: Vec::new(),
        }
    }

    /// Adds an agent that may call every other agent.
    #[must_use]
    pub fn agent(mut self, name: impl Into<String>) -> Self {
        self.agents.push(AgentSpec {
            name: name.into(),
            callable: None,
        });
        self
    }

    /// Adds an agent that may call only `callable`.
    #[must_use]
    pub fn agent_calling<S: Into<String>>(
        mut self,
        name: impl Into<String>,
        callable: impl IntoIterator<Item = S>,
    ) -> Self {
        self.agents.push(AgentSpec {
            name: name.into(),
            callable: Some(callable.into_iter().map(Into::into).collect()),
        });
        self
    }

    /// Whether `name` is defined in the swarm.
    pub fn defines(&self, name: &str) -> bool {
        self.agents.iter().any(|a| a.name == name)
    }

    /// Every agent's name.
    pub fn agent_names(&self) -> Vec<String> {
        self.agents.iter().map(|a| a.name.clone()).collect()
    }

    /// The agents `caller` may call. The host (an unknown caller) may call every agent.
    pub fn callable_from(&self, caller: &str) -> Vec<String> {
        let names = self.agent_names();
        match self.agents.iter().find(|a| a.name == caller) {
            None => names,
            Some(AgentSpec {
                callable: None,
                name,
            }) => names.into_iter().filter(|n| n != name).collect(),
            Some(AgentSpec {
                callable: Some(list),
                ..
            }) => names.into_iter().filter(|n| list.contains(n)).collect(),
        }
    }
}

/// The instance key a call names, else [`DEFAULT_INSTANCE_KEY`].
pub(crate) fn instance_key(named: Option<&str>) -> String {
    named.unwrap_or(DEFAULT_INSTANCE_KEY).to_owned()
}

/// The order of instance listings: by creation, then agent, then instance key.
pub(crate) fn listing_order(i: &AgentInstanceInfo) -> (&str, &str, &str) {
    (&i.created_at, &i.target, &i.instance_key)
}

/// The address of an instance in IPC messages: `agent/instanceKey`.
pub(crate) fn address(agent: &str, instance_key: &str) -> String {
    format!("{agent}/{instance_key}")
}

pub(crate) fn error(
    code: &'static str,
    name: &'static str,
    message: String,
    hint: &str,
) -> ToolError {
    ToolError::new(message)
        .with_code(code)
        .with_name(name)
        .with_suggestion(hint)
}

pub(crate) fn unknown_target(target: &str, swarm: &SwarmSpec) -> ToolError {
    error(
        codes::UNKNOWN_TARGET,
        "AgentNotFoundError",
        format!("agent `{target}` is not defined in swarm `{}`", swarm.name),
        &format!(
            "call one of the swarm's agents: {}; `agents__catalog` lists them",
            swarm.agent_names().join(", ")
        ),
    )
}

pub(crate) fn timed_out(target: &str, ms: u64) -> ToolError {
    error(
        codes::TIMEOUT,
        "AgentTimeoutError",
        format!("agent `{target}` did not answer within {ms} ms"),
        "retry with a larger `timeoutMs`, a smaller task, or `async: true` to get a handle",
    )
    .retryable()
}

pub(crate) fn disconnected() -> ToolError {
    error(
        codes::DISCONNECTED,
        "AgentDisconnectedError",
        "the Orchestrator is gone; no agent can be reached".to_owned(),
        "the swarm is stopping; finish the task without other agents",
    )
}

pub(crate) fn protocol(what: impl std::fmt::Display) -> ToolError {
    error(
        codes::PROTOCOL,
        "AgentProtocolError",
        format!("a handoff message broke the protocol: {what}"),
        "this is a bug in the host; retry once, then report it",
    )
}

/// Public types that cross tasks are `Send + Sync`; this fails to compile otherwise.
const _: () = {
    const fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<Orchestrator>();
    assert_send_sync::<AgentContext>();
    assert_send_sync::<ProcessConfig>();
    assert_send_sync::<SwarmSpec>();
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ag_5_callable_agents_follow_the_swarm_definition() {
        let swarm = SwarmSpec::new("s", "a")
            .agent("a")
            .agent_calling("b", ["c", "ghost"])
            .agent("c");
        assert_eq!(swarm.callable_from("a"), ["b", "c"]);
        // Only defined agents, even when the list names others.
        assert_eq!(swarm.callable_from("b"), ["c"]);
        // The host may call every agent.
        assert_eq!(swarm.callable_from("orchestrator"), ["a", "b", "c"]);
        assert!(swarm.defines("c") && !swarm.defines("ghost"));
    }

    #[tokio::test]
    async fn ho_6_in_process_orchestrator_spawns_on_first_request() {
        use crate::tools::agent::{AgentEvent, AgentRuntime, RequestOptions};
        let swarm = SwarmSpec::new("s", "a").agent("a").agent("b");
        let orch = Orchestrator::in_process(swarm, OrchestratorConfig::default(), |id| {
            let me = id.agent.clone();
            worker_fn(move |event, _ctx| {
                let me = me.clone();
                async move { Ok(serde_json::json!({ "agent": me, "input": event.input })) }
            })
        });
        let Ok(orch) = orch else {
            panic!("the swarm is valid");
        };
        let event = AgentEvent::new("agent.request", serde_json::json!(7));
        let answer = orch.request("b", event, RequestOptions::default()).await;
        let Ok(answer) = answer else {
            panic!("{answer:?}");
        };
        assert_eq!(
            answer.response,
            Some(serde_json::json!({"agent": "b", "input": 7}))
        );
        let listed = orch.list(true).await.unwrap_or_default();
        assert_eq!(listed.len(), 1);
        assert_eq!(listed[0].owner_agent, "orchestrator");
        assert!(
            orch.pid("b", DEFAULT_INSTANCE_KEY).is_none(),
            "a task has no pid"
        );
        orch.shutdown(std::time::Duration::from_secs(1)).await;
    }
}
