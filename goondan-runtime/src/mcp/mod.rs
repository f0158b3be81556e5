//! MCP (the Model Context Protocol) on rmcp, the official Rust SDK (feature `mcp`).
//!
//! - [`server`]: serve a catalog of Goondan tools to MCP clients (Claude Desktop, Claude Code,
//!   editors, agent frameworks) over stdio or Streamable HTTP. Every call goes through the
//!   [`ToolExecutor`](crate::ToolExecutor), so every Goondan rule holds over MCP.

pub mod server;
