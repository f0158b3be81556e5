//! Running calls: the [`ToolExecutor`](executor::ToolExecutor) and its one route (the catalog
//! gate, the `toolCall` [`middleware`] chain, the core, one finish), the refusals it answers
//! with, [approvals](approval) by a person, [guardrails](guardrail) around them, and the
//! [`pending`] results of submitted calls.

pub mod approval;
pub(crate) mod events;
pub mod executor;
pub(crate) mod finish;
pub mod guardrail;
pub mod middleware;
pub mod pending;

pub(crate) mod refusal;
pub mod retry;
