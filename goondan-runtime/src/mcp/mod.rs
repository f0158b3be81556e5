//! MCP both ways, on rmcp (feature `mcp`).
//!
//! - [`client`]: tools from MCP servers, bridged into an agent's registry by an extension.

pub mod client;
