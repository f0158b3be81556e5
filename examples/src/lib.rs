//! The examples of goondan-rs, as a library so that they can be tested.
//!
//! - [`tools`]: the quickstart's tools (`text-utils`, `notes`, `admin`).
//! - [`quickstart`]: `cargo run --example quickstart`.
//! - [`base_demo`]: the quickstart's part with the base tools.
//! - [`quickstart_bundle`]: the quickstart's part with `goondan.yaml` and the step loop.
//!
//! The examples that speak MCP (`mcp`: the quickstart's tools over MCP on stdio) are the
//! package `goondan-examples-mcp` (`examples/mcp`), so that the quickstart does not build MCP.

pub mod base_demo;
pub mod quickstart;
pub mod quickstart_bundle;
pub mod tools;

pub use tools::quickstart_tools;
