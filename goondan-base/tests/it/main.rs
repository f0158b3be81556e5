//! goondan-base's integration tests: one test binary, a module per area, so the crate and its
//! dependencies are linked once rather than once per file. Modules are named after what they
//! test (a base tool, the `goondan` program's commands, agents in real processes).
//!
//! None needs a process of its own: no test sets the environment of this process, changes its
//! directory or installs a global subscriber (the programs they start get their own).
#![allow(clippy::unwrap_used, clippy::expect_used)]

// Public, as each file was a crate root of its own: the tools and inputs a test declares
// are reachable, not dead code.
pub mod agent_host;
pub mod agents;
pub mod approvals;
pub mod bash;
pub mod bundle_agents;
pub mod catalog_json;
pub mod cli;
pub mod code_worker;
pub mod extensions;
pub mod file_system;
pub mod handoff_crash;
pub mod http_fetch;
pub mod json_query;
pub mod leftovers;
pub mod mcp_apps;
pub mod mcp_inspector;
pub mod mcp_login;
pub mod package;
pub mod real_model;
pub mod run;
pub mod run_support;
pub mod sandbox;
pub mod self_restart;
pub mod slack;
pub mod telegram;
pub mod telemetry;
pub mod text_transform;
pub mod tool_search_bfcl;
pub mod upstream;
pub mod wait;
pub mod waiting_approvals;
