//! The agent-process program of `tests/agents.rs`: the Orchestrator of
//! `base_4_ho_8_handoff_between_real_agent_processes` runs it as every agent, and it serves the
//! scripted agent of `scripted.rs`. Built only for the tests (`required-features`).

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod scripted;

use goondan_runtime::agents::orchestrator::agent_mode;

fn main() {
    agent_mode::run_if_requested(|_me| scripted::scripted());
    eprintln!("goondan-base-agents-host: run by the Orchestrator of the tests only");
    std::process::exit(2);
}
