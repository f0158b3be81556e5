//! goondan-runtime's integration tests: one test binary, a module per area, so the crate and
//! its dependencies are linked once rather than once per file.
//!
//! Four files stay binaries of their own, because they see the whole process:
//! - `events.rs` and `approvals.rs` install a global `tracing` subscriber and read every
//!   event the binary emits;
//! - `registry.rs` and `macro_expand.rs` read every tool linked into the binary (`linked()`),
//!   so the tools of the other modules would change what they see.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../common/mod.rs"]
mod common;
#[path = "../corpus/mod.rs"]
mod corpus;
#[path = "../kit/mod.rs"]
mod kit;
#[path = "../support/mcp_bridge.rs"]
mod mcp_bridge;
#[path = "../support/orchestrator.rs"]
mod orchestration;

mod bundle;
mod bundle_model;
mod dialect_anthropic;
mod dialect_cache;
mod dialect_gemini;
mod dialect_mcp;
mod dialect_openai;
mod differential;
mod errors_doc;
mod executor;
mod fuzz_regressions;
mod macro_tool_input;
mod macro_ui;
mod mcp_approvals;
mod mcp_client;
mod mcp_conformance;
mod mcp_name_report;
mod mcp_server;
mod middleware;
mod orchestrator;
mod orchestrator_nats;
mod providers;
mod schema_corpus;
mod step_loop;
