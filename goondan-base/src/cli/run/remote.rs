//! `goondan run --nats URL`: the entry side of a swarm whose agents run on `goondan
//! agent-host`s elsewhere. Each input is a request to the target agent over NATS, its answer
//! printed; the Turn's text and tool calls stay on the host that runs it (so do approvals:
//! the host's policy applies), and Ctrl-C abandons the current request, not the session.

use std::io::Write;

use goondan_runtime::agents::orchestrator::nats::NatsSwarm;
use goondan_runtime::bundle::Bundle;
use goondan_runtime::tools::agent::{AgentEvent, AgentRuntime, RequestOptions};
use serde_json::{Value, json};

use super::session::{EXIT_INTERRUPTED, TURN_TIMEOUT_MS, stdin_lines, swarm_of};
use super::{RunArgs, RunError};

/// Runs `goondan run --nats url`.
pub(crate) async fn run(args: &RunArgs, url: &str) -> Result<u8, RunError> {
    let bundle = Bundle::load(&args.bundle)?;
    let swarm = swarm_of(&bundle, args.agent.as_deref())?;
    let target = args
        .agent
        .clone()
        .unwrap_or_else(|| swarm.entry_agent.clone());
    let name = swarm.name.clone();
    let remote = NatsSwarm::connect(&args.nats_connection.options(url), swarm).await?;
    if let Some(input) = &args.input {
        return Ok(match ask(&remote, &target, input).await {
            Answer::Text(text) => {
                let mut out = std::io::stdout().lock();
                let _ = writeln!(out, "{text}");
                let _ = out.flush();
                crate::cli::EXIT_OK
            }
            Answer::Failed(message) => {
                eprintln_line(&format!("error: {message}"));
                crate::cli::EXIT_FAILED
            }
            Answer::Interrupted => {
                eprintln_line("cancelled");
                EXIT_INTERRUPTED
            }
        });
    }
    eprintln_line(&format!(
        "swarm `{name}` on {url}: talking to `{target}` (Ctrl-C abandons an answer, Ctrl-D ends)"
    ));
    let mut lines = stdin_lines();
    loop {
        eprint_prompt();
        let Some(line) = lines.recv().await else {
            return Ok(crate::cli::EXIT_OK);
        };
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        if line == "exit" {
            return Ok(crate::cli::EXIT_OK);
        }
        match ask(&remote, &target, line).await {
            Answer::Text(text) => println_line(&text),
            Answer::Failed(message) => eprintln_line(&format!("error: {message}")),
            Answer::Interrupted => eprintln_line("^C abandoned the answer"),
        }
    }
}

enum Answer {
    Text(String),
    Failed(String),
    Interrupted,
}

/// One request to `target`, until its answer or Ctrl-C.
async fn ask(remote: &NatsSwarm, target: &str, input: &str) -> Answer {
    let event = AgentEvent::new("user.message", json!(input));
    let options = RequestOptions {
        timeout_ms: Some(TURN_TIMEOUT_MS),
        ..RequestOptions::default()
    };
    let result = tokio::select! {
        r = remote.request(target, event, options) => r,
        _ = tokio::signal::ctrl_c() => return Answer::Interrupted,
    };
    match result {
        Ok(answer) => {
            let response = answer.response.unwrap_or(Value::Null);
            match response["answer"].as_str() {
                Some(text) => Answer::Text(text.to_owned()),
                None => Answer::Failed(
                    "the agent stopped (maxStepsPerTurn) without an answer".to_owned(),
                ),
            }
        }
        Err(e) => Answer::Failed(format!("{}: {}", e.code(), e.message())),
    }
}

fn eprintln_line(text: &str) {
    let mut err = std::io::stderr().lock();
    let _ = writeln!(err, "{text}");
}

fn eprint_prompt() {
    let mut err = std::io::stderr().lock();
    let _ = write!(err, "> ");
    let _ = err.flush();
}

fn println_line(text: &str) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{text}");
    let _ = out.flush();
}
