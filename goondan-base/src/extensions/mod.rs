//! Extensions that ship with the base package: [`ToolSearch`] keeps a large catalog small per
//! Step (the search tool, the pinned tools and the tools found); [`Logging`] logs every tool
//! call through `tracing`; [`Skills`] (feature `mcp`) shows the skills of the agent's bridged
//! MCP servers to its model, as tools or in its system prompt.
//!
//! Register them on an instance with
//! [`AgentInstanceBuilder::extension`](goondan_runtime::step::AgentInstanceBuilder::extension).

mod logging;
#[cfg(feature = "mcp")]
mod skills;
mod tool_search;

pub use self::logging::Logging;
#[cfg(feature = "mcp")]
pub use self::skills::{Skills, SkillsShown};
pub use self::tool_search::{Bm25Ranker, MAX_QUERY_CHARS, Ranker, ToolDoc, ToolDocs, ToolSearch};
