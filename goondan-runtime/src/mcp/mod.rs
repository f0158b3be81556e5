//! MCP (the Model Context Protocol) both ways, on rmcp, the official Rust SDK (feature `mcp`).
//!
//! - [`server`]: serve a catalog of Goondan tools to MCP clients (Claude Desktop, Claude Code,
//!   editors, agent frameworks) over stdio or Streamable HTTP. Every call goes through the
//!   [`ToolExecutor`](crate::ToolExecutor), so every Goondan rule holds over MCP.
//! - [`client`]: tools from MCP servers, bridged into an agent's registry by an extension.

pub mod client;
pub mod server;

/// The value behind `m`, even when a thread panicked holding it: a panicking tool leaves the
/// server's and the bridge's state usable.
fn lock<T>(m: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}
