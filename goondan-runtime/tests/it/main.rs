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
// The fuzz targets' entry points; they carry the typed corpus, which the tests share.
#[allow(dead_code, unreachable_pub, missing_docs)]
#[path = "../../fuzz/src/lib.rs"]
mod fuzz_entry;
use fuzz_entry::corpus;
#[cfg(feature = "code-mode")]
#[path = "../support/bfcl_tasks.rs"]
mod bfcl;
#[path = "../support/headless.rs"]
mod headless;
#[path = "../kit/mod.rs"]
mod kit;
#[path = "../support/mcp_bridge.rs"]
mod mcp_bridge;
#[path = "../support/oauth_server.rs"]
mod oauth_server;
#[path = "../support/orchestrator.rs"]
mod orchestration;

// Public, as each file was a crate root of its own: the tools and inputs a test declares
// are reachable, not dead code.
pub mod bundle;
pub mod bundle_model;
#[cfg(feature = "code-mode")]
pub mod code_mode;
#[cfg(feature = "code-mode")]
pub mod code_mode_bfcl;
#[cfg(feature = "code-mode")]
pub mod code_mode_server;
pub mod dialect_anthropic;
pub mod dialect_catalog;
pub mod dialect_gemini;
pub mod dialect_mcp;
pub mod dialect_openai;
pub mod differential;
pub mod errors_doc;
pub mod executor;
pub mod fuzz_regressions;
pub mod guardrails;
pub mod guide;
pub mod journal;
pub mod journal_jetstream;
pub mod macro_tool_input;
pub mod mcp_approvals;
pub mod mcp_apps;
pub mod mcp_apps_browser;
pub mod mcp_auth;
pub mod mcp_client;
pub mod mcp_conformance;
pub mod mcp_conformance_client;
pub mod mcp_name_report;
pub mod mcp_server;
#[cfg(feature = "skills")]
pub mod mcp_skills;
pub mod middleware;
pub mod orchestrator;
pub mod orchestrator_nats;
pub mod params;
pub mod providers;
pub mod schema_corpus;
pub mod step_loop;
pub mod telemetry;
pub mod toolsets;
