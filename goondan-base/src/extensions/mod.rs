//! Extensions that ship with the base package: [`ToolSearch`] narrows each Step's catalog to
//! the tools the model searched for; [`Logging`] logs every tool call through `tracing`.
//!
//! Register them on an instance with
//! [`AgentInstanceBuilder::extension`](goondan_runtime::step::AgentInstanceBuilder::extension).

mod logging;
mod tool_search;

pub use self::logging::Logging;
pub use self::tool_search::ToolSearch;
