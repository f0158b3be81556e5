//! goondan-base's integration tests: one test binary, a module per area, so the crate and its
//! dependencies are linked once rather than once per file. Modules are named after what they
//! test (a base tool, the `goondan` program's commands, agents in real processes).
//!
//! None needs a process of its own: no test sets the environment of this process, changes its
//! directory or installs a global subscriber (the programs they start get their own).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod agent_host;
mod agents;
mod approvals;
mod bash;
mod bundle_agents;
mod catalog_json;
mod cli;
mod extensions;
mod file_system;
mod http_fetch;
mod json_query;
mod mcp_inspector;
mod package;
mod real_model;
mod run;
mod run_support;
mod self_restart;
mod slack;
mod telegram;
mod text_transform;
mod upstream;
mod wait;
