//! Extensions that ship with the base package: [`ToolSearch`] keeps a large catalog small per
//! Step (the search tool, the pinned tools and the tools found); [`Logging`] logs every tool
//! call through `tracing`.
//!
//! Register them on an instance with
//! [`AgentInstanceBuilder::extension`](goondan_runtime::step::AgentInstanceBuilder::extension).

mod logging;
mod tool_search;

pub use self::logging::Logging;
pub use self::tool_search::{Bm25Ranker, MAX_QUERY_CHARS, Ranker, ToolDoc, ToolDocs, ToolSearch};
