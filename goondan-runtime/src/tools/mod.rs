//! What a tool is, what it gets and what it answers: the [`Tool`](tool::Tool) and its exports
//! and handlers, the [`ToolRegistry`](registry::ToolRegistry) of every tool an agent can run,
//! the Step's [`ToolCatalog`](catalog::ToolCatalog), names and schemas, and the types a call
//! carries (its [`ToolContext`](context::ToolContext), its
//! [`ToolCallResult`](result::ToolCallResult), its [`ToolError`](error::ToolError)).
//!
//! Nothing here runs a call: that is `calls`, one layer up, which imports this and never the
//! other way round.

pub mod agent;
pub mod annotations;
pub mod catalog;
pub mod content;
pub mod context;
pub mod error;
pub mod handler;
pub mod help_url;
pub mod name;
pub mod output_schema;
pub mod registry;
pub mod result;
pub mod schema;
pub mod search;
pub mod tool;
pub mod toolset;
pub mod ui;
