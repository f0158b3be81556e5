//! `goondan run` driven by a real language model: llama-cpp-python's OpenAI-compatible server
//! with SmolLM2-135M (`scripts/llm-peer`), one for this test binary, on 127.0.0.1 (and one
//! more for the test that kills it).
//!
//! The assertions are about the protocol and our behaviour: the call was streamed or read,
//! parsed, validated, run (or refused with a structured error), its result went back in the
//! provider's shape, and the model's next answer was printed. Never about the model's wisdom.
//! The model runs at temperature 0, so its answers repeat on a machine; where they could
//! differ (a path the model invents), the test reads what it asked for from the conversation.
//!
//! Known limits of this server (llama-cpp-python 0.3.36, `chatml-function-calling`), around
//! which the bundles are built: it cannot stream an `auto` tool choice (it answers an empty
//! stream) nor take `required` (HTTP 500); it forces one named tool well. So the first Step
//! names the tool and the next ones say `none`.

use goondan_test_peers::llm;
use goondan_test_peers::mcp_peers;

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use goondan_runtime::step::journal::{Durability, SqliteJournal};
use llm::LlmServer;
use serde_json::Value;

fn goondan() -> &'static str {
    env!("CARGO_BIN_EXE_goondan")
}

/// A Model resource `name` at `server`, at temperature 0, with `options` added.
fn model(server: &LlmServer, name: &str, options: &str) -> String {
    format!(
        r#"apiVersion: goondan.ai/v1
kind: Model
metadata: {{name: {name}}}
spec:
  provider: openai
  model: local
  endpoint: "{}"
  options: {{temperature: 0, maxRetries: 0, timeoutSeconds: 120, {options}}}
"#,
        server.endpoint()
    )
}

/// A bundle whose agent `assistant` has the base `file-system` tools and extra `tools`; its
/// model must call `first` in each Turn's first Step and no tool after.
fn bundle(dir: &Path, server: &LlmServer, first: &str, stream: bool, extra: &str) -> PathBuf {
    let yaml = format!(
        r#"{}---
apiVersion: goondan.ai/v1
kind: Agent
metadata: {{name: assistant}}
spec:
  modelConfig: {{modelRef: "Model/local"}}
  systemPrompt: "You are a careful assistant. You use the tools you are given."
  tools:
    - ref: {{kind: Tool, name: file-system, package: "@goondan/base"}}
{extra}"#,
        model(
            server,
            "local",
            &format!(
                "maxTokens: 100, stream: {stream}, firstStepToolChoice: {first}, toolChoice: none"
            )
        )
    );
    let file = dir.join("goondan.yaml");
    std::fs::write(&file, yaml).unwrap();
    file
}

/// Runs `goondan run BUNDLE --input INPUT --approve never --state DIR/state`.
async fn run_input(bundle: &Path, input: &str, dir: &Path) -> std::process::Output {
    let child = tokio::process::Command::new(goondan())
        .arg("run")
        .arg(bundle)
        .args(["--input", input, "--approve", "never", "--state"])
        .arg(dir.join("state"))
        .current_dir(dir)
        .stdin(Stdio::null())
        .kill_on_drop(true)
        .output();
    tokio::time::timeout(Duration::from_secs(300), child)
        .await
        .expect("goondan run did not finish in 300 s")
        .unwrap()
}

/// The messages of an agent's conversation, read from its run journal in the state directory.
fn conversation(dir: &Path, agent: &str) -> Vec<Value> {
    journal_conversation(&dir.join("state"), agent)
}

/// The conversation in the run journal of `agent`'s default instance under `state`.
fn journal_conversation(state: &Path, agent: &str) -> Vec<Value> {
    let file = SqliteJournal::file_in(state, agent, "default");
    // `goondan run` has returned, but its agent process may still be exiting: wait for it to
    // let go of the journal, as a restarted agent process does.
    let journal = SqliteJournal::open_waiting(&file, Durability::Normal, Duration::from_secs(10))
        .unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    let replay = journal.replay().unwrap();
    assert!(replay.warnings.is_empty(), "{:?}", replay.warnings);
    assert!(replay.unfinished.is_none(), "a turn was left unfinished");
    replay
        .conversation
        .iter()
        .map(|m| serde_json::to_value(m).unwrap())
        .collect()
}

/// The first tool call of a conversation and its result's JSON.
fn first_call(messages: &[Value]) -> (Value, Value) {
    let call = messages
        .iter()
        .find_map(|m| m["toolCalls"].get(0))
        .unwrap_or_else(|| panic!("no tool call in {messages:#?}"))
        .clone();
    let result = messages
        .iter()
        .find(|m| m["role"] == "tool" && m["metadata"]["toolCallId"] == call["id"])
        .unwrap_or_else(|| panic!("no result for {call} in {messages:#?}"));
    let result = serde_json::from_str(result["content"].as_str().unwrap()).unwrap();
    (call, result)
}

/// The model was made to call `file-system__write`; the file holds what it asked for, the result
/// went back, and its answer after it was printed.
async fn writes_a_file(stream: bool) {
    let server = LlmServer::shared();
    let dir = tempfile::tempdir().unwrap();
    let file = bundle(dir.path(), server, "file-system__write", stream, "");
    let out = run_input(
        &file,
        "Write the word hello into the file notes.txt",
        dir.path(),
    )
    .await;
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(
        out.status.success(),
        "{stdout}\n{stderr}\n{}",
        server.log_text()
    );
    let messages = conversation(dir.path(), "assistant");
    let (call, result) = first_call(&messages);
    assert_eq!(call["name"], "file-system__write", "{call}");
    assert!(
        call["id"].as_str().is_some_and(|id| !id.is_empty()),
        "{call}"
    );
    assert_eq!(result["status"], "ok", "{result}");
    let path = call["args"]["path"].as_str().unwrap();
    let content = call["args"]["content"].as_str().unwrap();
    assert_eq!(
        std::fs::read_to_string(dir.path().join("state/workspace").join(path)).unwrap(),
        content,
        "the file holds what the model asked for"
    );
    assert_eq!(result["output"]["written"], true, "{result}");
    assert!(stderr.contains("✓ file-system__write"), "{stderr}");
    // The Step after the result: the model's text, printed and kept.
    let answer = messages.last().unwrap();
    assert_eq!(answer["role"], "assistant", "{answer}");
    let text = answer["content"].as_str().unwrap_or_default();
    assert!(!text.trim().is_empty(), "{messages:#?}");
    assert_eq!(stdout.trim_end(), text.trim_end());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_real_model_streams_a_forced_tool_call_that_writes_a_file_and_answers_after_it() {
    writes_a_file(true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_real_model_answers_a_forced_tool_call_unstreamed_and_reads_its_result() {
    writes_a_file(false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_real_model_in_a_terminal_session_waits_for_a_person_to_approve_or_deny() {
    use expectrl::{ControlCode, Session};

    let server = LlmServer::shared();
    let dir = tempfile::tempdir().unwrap();
    let file = bundle(dir.path(), server, "file-system__write", true, "");
    let workspace = dir.path().join("state/workspace");
    tokio::task::block_in_place(|| {
        let mut command = std::process::Command::new(goondan());
        command
            .arg("run")
            .arg(&file)
            .arg("--state")
            .arg(dir.path().join("state"))
            .current_dir(dir.path());
        let mut p = Session::spawn(command).unwrap();
        p.set_expect_timeout(Some(Duration::from_secs(120)));
        p.expect("> ").unwrap();
        // file-system__write is destructive: the default policy asks the person.
        p.send_line("Write the word hello into the file notes.txt")
            .unwrap();
        p.expect("? file-system__write").unwrap();
        p.expect("approve [y] / deny [n] (reason) / edit [e] (JSON arguments): ")
            .unwrap();
        p.send_line("y").unwrap();
        p.expect("✓ file-system__write").unwrap();
        p.expect("> ").unwrap();
        // Denied with a reason: the model reads the refusal and the Turn goes on.
        p.send_line("Write the word bye into the file bye.txt")
            .unwrap();
        p.expect("approve [y]").unwrap();
        p.send_line("n not today").unwrap();
        p.expect("E_TOOL_DENIED").unwrap();
        p.expect("> ").unwrap();
        p.send(ControlCode::EndOfTransmission).unwrap();
        let status = p.get_process_mut().wait().unwrap();
        assert_eq!(
            status,
            expectrl::WaitStatus::Exited(p.get_process().pid(), 0)
        );
    });
    let messages = conversation(dir.path(), "assistant");
    let (call, result) = first_call(&messages);
    assert_eq!(result["status"], "ok", "{result}");
    let path = call["args"]["path"].as_str().unwrap();
    assert_eq!(
        std::fs::read_to_string(workspace.join(path)).unwrap(),
        call["args"]["content"].as_str().unwrap()
    );
    let denied: Vec<&Value> = messages
        .iter()
        .filter(|m| m["role"] == "tool" && m["metadata"]["status"] == "error")
        .collect();
    assert_eq!(denied.len(), 1, "{messages:#?}");
    let denial: Value = serde_json::from_str(denied[0]["content"].as_str().unwrap()).unwrap();
    assert_eq!(denial["error"]["code"], "E_TOOL_DENIED", "{denial}");
    assert_eq!(denial["error"]["suggestion"], "not today", "{denial}");
    // Each denied or approved call was followed by the model's own answer.
    let answers = messages
        .iter()
        .filter(|m| m["role"] == "assistant" && m["toolCalls"].is_null())
        .count();
    assert_eq!(answers, 2, "{messages:#?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_real_model_calls_a_tool_bridged_from_a_real_mcp_server() {
    let server = LlmServer::shared();
    let dir = tempfile::tempdir().unwrap();
    let extension = format!(
        r#"  extensions: ["Extension/mcp"]
---
apiVersion: goondan.ai/v1
kind: Extension
metadata: {{name: mcp}}
spec:
  mcp:
    servers:
      - name: everything
        command: "{node}"
        args: ["{everything}", "stdio"]
        include: [echo]
        # In the sandbox, as every bridged server by default; it reads its own files.
        sandbox: {{read: ["{peers}"]}}
"#,
        node = mcp_peers::peer("node").display(),
        everything = mcp_peers::peer("mcp-server-everything").display(),
        peers = mcp_peers::peers_dir()
            .join("../..")
            .canonicalize()
            .unwrap()
            .display(),
    );
    let file = bundle(dir.path(), server, "everything__echo", true, &extension);
    let out = run_input(&file, "Echo the words good morning", dir.path()).await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}\n{}", server.log_text());
    let messages = conversation(dir.path(), "assistant");
    let (call, result) = first_call(&messages);
    assert_eq!(call["name"], "everything__echo", "{call}");
    // server-everything's echo answers `Echo: {message}`: the bridge ran it.
    assert_eq!(result["status"], "ok", "{result}");
    let message = call["args"]["message"].as_str().unwrap();
    assert!(
        result.to_string().contains(&format!("Echo: {message}")),
        "{result}"
    );
    assert!(stderr.contains("✓ everything__echo"), "{stderr}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_agents_with_real_models_hand_work_over_through_the_orchestrator() {
    let server = LlmServer::shared();
    let dir = tempfile::tempdir().unwrap();
    // `planner` must hand the work over (`agents__request`, whose `target` the model is shown
    // as the one agent it may call); `coder` answers with its own model, in its own process.
    let yaml = format!(
        r#"{}---
{}---
apiVersion: goondan.ai/v1
kind: Agent
metadata: {{name: planner}}
spec:
  modelConfig: {{modelRef: "Model/planner-model"}}
  systemPrompt: "You are the planner. You hand tasks to other agents."
  tools:
    - ref: {{kind: Tool, name: agents, package: "@goondan/base"}}
---
apiVersion: goondan.ai/v1
kind: Agent
metadata: {{name: coder}}
spec:
  modelConfig: {{modelRef: "Model/coder-model"}}
  systemPrompt: "You are the coder. Answer in one short sentence."
---
apiVersion: goondan.ai/v1
kind: Swarm
metadata: {{name: pair}}
spec:
  entryAgent: "Agent/planner"
  agents: ["Agent/planner", "Agent/coder"]
"#,
        model(
            server,
            "planner-model",
            "maxTokens: 100, firstStepToolChoice: agents__request, toolChoice: none"
        ),
        model(server, "coder-model", "maxTokens: 60"),
    );
    let file = dir.path().join("goondan.yaml");
    std::fs::write(&file, yaml).unwrap();
    let out = run_input(&file, "Ask the coder agent to say hello", dir.path()).await;
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(out.status.success(), "{stderr}\n{}", server.log_text());
    let planner = conversation(dir.path(), "planner");
    let (call, result) = first_call(&planner);
    assert_eq!(call["name"], "agents__request", "{call}");
    assert_eq!(call["args"]["target"], "coder", "{call}");
    assert_eq!(result["status"], "ok", "{result}");
    // `coder` ran a Turn of its own, in its process, and its answer came back as the result.
    let coder = conversation(dir.path(), "coder");
    assert_eq!(coder[0]["role"], "user", "{coder:#?}");
    let answer = coder.last().unwrap();
    assert_eq!(answer["role"], "assistant", "{coder:#?}");
    let answer = answer["content"].as_str().unwrap();
    assert!(!answer.trim().is_empty(), "{coder:#?}");
    assert_eq!(result["output"]["response"]["answer"], answer, "{result}");
    // And `planner` answered after it.
    let last = planner.last().unwrap();
    assert_eq!(last["role"], "assistant");
    assert_eq!(
        stdout.trim_end(),
        last["content"].as_str().unwrap().trim_end()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scripts_tool_eval_measures_a_real_server_and_accounts_for_every_prompt() {
    let server = LlmServer::shared();
    let dir = tempfile::tempdir().unwrap();
    let prompts = dir.path().join("prompts.json");
    std::fs::write(
        &prompts,
        serde_json::json!([
            {"prompt": "Show me what is in notes.txt", "expect": "file-system__read"},
            {"prompt": "List the files in this folder", "expect": "file-system__list"},
            {"prompt": "Run the command uname -a", "expect": "bash__exec"},
        ])
        .to_string(),
    )
    .unwrap();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/tool-eval");
    let run = tokio::process::Command::new(script)
        .args([
            "--endpoint",
            &server.endpoint(),
            "--goondan",
            goondan(),
            "--json",
        ])
        .arg("--prompts")
        .arg(&prompts)
        .args(["--timeout", "120"])
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(Duration::from_secs(600), run)
        .await
        .unwrap()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let total = &report["total"];
    assert_eq!(total["prompts"], 3, "{report:#}");
    let outcomes = ["rightTool", "noCall", "wrongTool", "unknownTool", "error"];
    let counted: u64 = outcomes.iter().map(|k| total[k].as_u64().unwrap()).sum();
    assert_eq!(counted, 3, "every prompt has one outcome: {report:#}");
    assert_eq!(total["error"], 0, "every run got an answer: {report:#}");
    for r in report["results"].as_array().unwrap() {
        let seconds = r["seconds"].as_f64().unwrap();
        assert!(seconds > 0.0, "{r}");
    }
    assert_eq!(report["byTool"].as_object().unwrap().len(), 3, "{report:#}");
}

/// The README's "Running an agent": `scripts/llm-serve &`, then `goondan run examples/local/goondan.yaml`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_local_example_runs_with_no_key_against_the_served_model() {
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/local/goondan.yaml");
    let check = std::process::Command::new(goondan())
        .arg("validate")
        .arg(&example)
        .output()
        .unwrap();
    let report = String::from_utf8_lossy(&check.stdout);
    assert!(
        check.status.success() && report.contains("0 warning(s)"),
        "{report}"
    );
    // The example names scripts/llm-serve's address; this test's server has its own port.
    let server = LlmServer::shared();
    let dir = tempfile::tempdir().unwrap();
    let yaml = std::fs::read_to_string(&example).unwrap();
    assert!(yaml.contains("http://127.0.0.1:8090/v1"));
    let file = dir.path().join("goondan.yaml");
    std::fs::write(
        &file,
        yaml.replace("http://127.0.0.1:8090/v1", &server.endpoint()),
    )
    .unwrap();
    let child = tokio::process::Command::new(goondan())
        .arg("run")
        .arg(&file)
        .args([
            "--input",
            "Write a shopping list into list.txt",
            "--approve",
            "never",
        ])
        .env_remove("OPENAI_API_KEY")
        .current_dir(dir.path())
        .stdin(Stdio::null())
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(Duration::from_secs(300), child)
        .await
        .unwrap()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}\n{}", server.log_text());
    // The state is kept next to the bundle. Whatever the model did, each call it made has a
    // result in the conversation, and its last message is an answer in words.
    let messages = journal_conversation(&dir.path().join(".goondan"), "assistant");
    let calls = messages
        .iter()
        .filter_map(|m| m["toolCalls"].as_array())
        .flatten()
        .count();
    let results = messages.iter().filter(|m| m["role"] == "tool").count();
    assert_eq!(calls, results, "{messages:#?}");
    let last = messages.last().unwrap();
    assert_eq!(last["role"], "assistant", "{messages:#?}");
    assert!(last["toolCalls"].is_null(), "{messages:#?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_real_server_that_dies_mid_answer_is_one_line_of_error_and_exit_status_1() {
    let mut server = LlmServer::start();
    let dir = tempfile::tempdir().unwrap();
    // No tool: a long streamed answer, cut by killing the server once it has begun.
    let yaml = format!(
        "{}---\napiVersion: goondan.ai/v1\nkind: Agent\nmetadata: {{name: assistant}}\nspec:\n  modelConfig: {{modelRef: \"Model/local\"}}\n",
        model(&server, "local", "stream: true, maxTokens: 2000")
    );
    let file = dir.path().join("goondan.yaml");
    std::fs::write(&file, yaml).unwrap();
    let run = tokio::spawn({
        let (file, dir) = (file.clone(), dir.path().to_path_buf());
        async move { run_input(&file, "Tell me a very long story about a ship.", &dir).await }
    });
    // The server logs the request when its streamed answer begins.
    let start = std::time::Instant::now();
    while !server.log_text().contains("POST /v1/chat/completions") {
        assert!(
            !run.is_finished(),
            "goondan run ended before its request was answered"
        );
        assert!(
            start.elapsed() < Duration::from_secs(120),
            "{}",
            server.log_text()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    server.kill();
    let out = run.await.unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), 1, "{stderr}");
    assert!(lines[0].starts_with("error: "), "{stderr}");
}
