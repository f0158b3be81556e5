//! BFCL's multi-turn base tasks, run two ways: the classic loop (one model round trip per
//! ground-truth call, then the answer) and code mode (the turn's calls as one program that
//! ends with the answer, `final_answer`). The APIs are BFCL's own Python classes behind a stdio MCP server
//! (`bfcl_peer.py`) that the agent bridges, so every call of either way goes through the
//! executor and reaches the same code; each run records its calls and the APIs' final state,
//! which the two ways must share. Included with `#[path]` by `tests/it/code_mode_bfcl.rs` and
//! `benches/code_mode.rs`; the data comes from `scripts/bfcl-data`.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use goondan_runtime::ToolRegistry;
use goondan_runtime::code::CodeMode;
use goondan_runtime::mcp::client::{McpExtension, McpExtensionConfig, McpServerConfig};
use goondan_runtime::step::{AgentInstance, Model, ModelResponse};
use serde::Deserialize;
use serde_json::Value;

/// The MCP server's name: the tools are `bfcl__{function}`, and `bfcl.{function}` in a program.
pub(crate) const SERVER: &str = "bfcl";

/// One ground-truth call: a function of the task's APIs and its keyword arguments.
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct Call {
    pub(crate) name: String,
    pub(crate) arguments: Value,
}

/// One turn: what the user says, and the calls that answer it.
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct Turn {
    pub(crate) user: String,
    pub(crate) calls: Vec<Call>,
}

/// A task whose every turn has at least one ground-truth call.
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct Task {
    pub(crate) id: String,
    pub(crate) turns: Vec<Turn>,
}

impl Task {
    /// The fewest calls of any of its turns.
    pub(crate) fn min_calls(&self) -> usize {
        self.turns.iter().map(|t| t.calls.len()).min().unwrap_or(0)
    }
}

#[path = "scripted_turns.rs"]
mod scripted;

pub(crate) use scripted::{Outcome, Way};

/// The peer script, beside this file.
pub(crate) fn peer_script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/support/bfcl_peer.py")
}

/// The data's folder: `GOONDAN_BFCL_DATA`, else what `scripts/bfcl-data` fetches and prints.
/// Panics with the reason when it cannot be had.
pub(crate) fn data_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("GOONDAN_BFCL_DATA") {
        return PathBuf::from(dir);
    }
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/bfcl-data");
    let out = Command::new(&script)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", script.display()));
    assert!(
        out.status.success(),
        "{} failed: {}",
        script.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    PathBuf::from(String::from_utf8_lossy(&out.stdout).trim())
}

/// Every multi-turn base task whose every turn has a ground-truth call, in BFCL's order.
pub(crate) fn tasks(data: &Path) -> Vec<Task> {
    let out = Command::new("python3")
        .arg(peer_script())
        .arg("tasks")
        .arg(data)
        .output()
        .unwrap_or_else(|e| panic!("cannot run python3: {e}"));
    assert!(
        out.status.success(),
        "bfcl_peer.py tasks failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|line| {
            serde_json::from_str(line).unwrap_or_else(|e| panic!("a task line: {e}: {line}"))
        })
        .collect()
}

/// What the model answers to every request of the task, in order (`scripted_turns.rs`): the
/// functions are `bfcl__{function}`, and `bfcl.{function}` in a program.
pub(crate) fn script(task: &Task, way: Way) -> Vec<ModelResponse> {
    let turns = task.turns.iter().map(|turn| {
        turn.calls
            .iter()
            .map(|call| scripted::Known {
                name: format!("{SERVER}__{}", call.name),
                function: format!("{SERVER}.{}", call.name),
                arguments: &call.arguments,
            })
            .collect()
    });
    scripted::script(turns, way)
}

/// Runs every turn of `task` the `way` given, with `model` answering (it must answer as
/// [`script`] does), against a fresh peer loaded with the task's initial state.
pub(crate) async fn run(data: &Path, task: &Task, way: Way, model: Arc<dyn Model>) -> Outcome {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("a temporary folder: {e}"));
    let record = dir.path().join("record.json");
    let server = McpServerConfig::stdio(SERVER, "python3")
        .args([
            peer_script().display().to_string(),
            "serve".to_owned(),
            data.display().to_string(),
            task.id.clone(),
            record.display().to_string(),
        ])
        .startup_timeout(Duration::from_secs(30));
    let mcp = McpExtension::connect(McpExtensionConfig::new("bfcl").server(server))
        .await
        .unwrap_or_else(|e| panic!("the BFCL peer of {}: {e}", task.id));
    let mut builder = AgentInstance::builder("bfcl", Arc::new(ToolRegistry::new()), model)
        .state_dir(dir.path())
        .extension(mcp.clone());
    if way == Way::Code {
        builder = builder.code_mode(CodeMode::new().tools_callable_directly(false));
    }
    let agent = builder
        .build()
        .unwrap_or_else(|e| panic!("the agent of {}: {e}", task.id));
    let label = format!("{} ({way:?})", task.id);
    let played = scripted::play(&agent, task.turns.iter().map(|t| t.user.as_str()), &label).await;
    mcp.shutdown();
    let text = std::fs::read_to_string(&record)
        .unwrap_or_else(|e| panic!("the record of {} ({way:?}): {e}", task.id));
    let record = serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("the record of {} ({way:?}): {e}", task.id));
    played.outcome(record)
}
