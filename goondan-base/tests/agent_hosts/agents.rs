//! The agent-process program of `tests/agents.rs`: the Orchestrator of
//! `base_4_ho_8_handoff_between_real_agent_processes` runs it as every agent, and it serves the
//! scripted agent of `scripted.rs`. Built only for the tests (`required-features`).

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod scripted;

use goondan_runtime::agents::orchestrator::agent_mode;

fn main() {
    // The tests read `$PPID` to see which agent process ran a command, and the sandbox's PID
    // namespace hides the parent by design: these agents run commands unsandboxed (the
    // sandbox has its own tests, tests/it/sandbox.rs).
    let _ = goondan_base::sandbox::set_host_policy(goondan_base::sandbox::SandboxPolicy::off());
    agent_mode::run_if_requested(|_me| scripted::scripted());
    eprintln!("goondan-base-agents-host: run by the Orchestrator of the tests only");
    std::process::exit(2);
}
