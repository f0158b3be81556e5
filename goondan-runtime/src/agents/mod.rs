//! Agents working together: the [`orchestrator`] that runs one process per agent and carries
//! handoffs between them, locally or over NATS, and the [`swarm`] of agents it serves.

pub mod orchestrator;
pub mod swarm;
