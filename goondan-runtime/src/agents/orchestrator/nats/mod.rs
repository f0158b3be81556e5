//! The Orchestrator across machines, on NATS (feature `nats`).
//!
//! A swarm's agents run on several hosts. Each host is an [`AgentHost`]: a local
//! [`Orchestrator`](super::Orchestrator) running the agents placed on it as processes, which
//! serves their requests from NATS and hands requests for every other agent to NATS. The entry
//! side, a [`NatsSwarm`], is an [`AgentRuntime`](crate::tools::agent::AgentRuntime) that only talks
//! to NATS.
//!
//! - [`subjects`]: where messages go. A request for agent `b` of swarm `s` is published on
//!   `goondan.s.agent.b`; every host serving `b` listens there in the queue group of that
//!   subject, so each request reaches one of them. Two swarms never share a subject.
//! - [`options`]: the server's address, credentials and TLS, handed to `async-nats`.
//! - `call` (private): one request. The message is HO-7's `delegate`, unchanged, published with
//!   a reply inbox; its trace id also goes in the `Goondan-Trace-Id` header. The serving host
//!   first acknowledges with its host id, then pings that host every heartbeat while the
//!   request is pending: a host that is gone (no responders) or silent fails the request at
//!   once with [`codes::CRASHED`](super::codes::CRASHED), well before its timeout. A request
//!   no host takes fails with [`codes::NO_HOST`](super::codes::NO_HOST).
//! - [`AgentHost`] and [`NatsSwarm`]: the two sides.
//!
//! Spawn on first delegate, callable lists, cycles (the chain travels in the message), timeouts
//! and respawn with backoff are the local Orchestrator's, on the host that serves the agent.
//! An agent's `agents__spawn`, `agents__list` and `agents__catalog` go to its own host's
//! Orchestrator: it spawns and lists the agents placed on that host, and refuses, with
//! [`codes::SPAWN`](super::codes::SPAWN), to spawn one placed elsewhere (a request starts it
//! there). The entry side's `list(true)` gathers the instances of every host of the swarm
//! (`goondan.s.instances`). A message on an agent's subject that is not HO-7's (garbage, a
//! wrong version) is answered with [`codes::PROTOCOL`](super::codes::PROTOCOL), as is a
//! request or an answer over the server's `max_payload`; the host keeps serving.
//!
//! ```no_run
//! use goondan_runtime::tools::agent::{AgentEvent, AgentRuntime, RequestOptions};
//! use goondan_runtime::agents::orchestrator::nats::{AgentHost, NatsOptions, NatsSwarm};
//! use goondan_runtime::agents::orchestrator::{OrchestratorConfig, ProcessConfig, SwarmSpec};
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let swarm = SwarmSpec::new("demo", "planner").agent("planner").agent("coder");
//! let nats = NatsOptions::new("nats://127.0.0.1:4222");
//! // On each machine: the agents placed there.
//! let host = AgentHost::start(
//!     &nats,
//!     swarm.clone(),
//!     &["coder".to_owned()],
//!     ProcessConfig::current_exe()?,
//!     OrchestratorConfig::default(),
//! )
//! .await?;
//! // Anywhere: the entry side.
//! let entry = NatsSwarm::connect(&nats, swarm).await?;
//! let event = AgentEvent::new("agent.request", serde_json::json!("hello"));
//! let answer = entry.request("coder", event, RequestOptions::default()).await?;
//! println!("{answer:?}");
//! host.shutdown(std::time::Duration::from_secs(5)).await;
//! # Ok(())
//! # }
//! ```

mod call;
mod host;
pub mod options;
pub mod subjects;
mod swarm;

pub use self::host::AgentHost;
pub use self::options::{NatsAuth, NatsError, NatsOptions};
pub use self::subjects::Subjects;
pub use self::swarm::NatsSwarm;
