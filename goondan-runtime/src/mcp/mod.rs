//! MCP (the Model Context Protocol) both ways, on rmcp, the official Rust SDK (feature `mcp`).
//!
//! - [`server`]: serve a catalog of Goondan tools to MCP clients (Claude Desktop, Claude Code,
//!   editors, agent frameworks) over stdio or Streamable HTTP. Every call goes through the
//!   [`ToolExecutor`](crate::ToolExecutor), so every Goondan rule holds over MCP.
//! - [`client`]: tools from MCP servers, bridged into an agent's registry by an extension.

pub mod client;
pub mod server;
