//! What the tests of `goondan run` share: a bundle whose one agent talks to the replay server
//! (OpenAI Chat Completions), and the recorded answers of that API.
#![allow(dead_code, unreachable_pub)]

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use goondan_test_peers::replay::{ReplayServer, Reply, data};

/// The `goondan` program.
pub fn goondan() -> &'static str {
    env!("CARGO_BIN_EXE_goondan")
}

/// The bundle document of `Model/replayed`, an OpenAI model at `server` whose key is
/// [`KEY`] (from `GOONDAN_TEST_KEY`), followed by `---`.
pub fn replayed_model(server: &ReplayServer) -> String {
    format!(
        r#"apiVersion: goondan.ai/v1
kind: Model
metadata: {{name: replayed}}
spec:
  provider: openai
  model: gpt-test
  endpoint: "{}"
  apiKey: {{valueFrom: {{env: GOONDAN_TEST_KEY}}}}
---
"#,
        server.url("/v1")
    )
}

/// A bundle with one agent, `assistant`, that has the base `file-system` and `self-restart`
/// tools and thinks with an OpenAI model at `server`; written into `dir`.
pub fn bundle(dir: &Path, server: &ReplayServer) -> PathBuf {
    bundle_with(dir, server, &["file-system", "self-restart"], None)
}

/// A bundle with one agent, `assistant`, that has the base tools `tools` and thinks with an
/// OpenAI model at `server`, in a Swarm named `swarm` when given; written into `dir`.
pub fn bundle_with(
    dir: &Path,
    server: &ReplayServer,
    tools: &[&str],
    swarm: Option<&str>,
) -> PathBuf {
    let mut yaml = replayed_model(server);
    yaml.push_str(
        r#"apiVersion: goondan.ai/v1
kind: Agent
metadata: {name: assistant}
spec:
  modelConfig: {modelRef: "Model/replayed"}
  systemPrompt: "You are a careful assistant."
  tools:
"#,
    );
    for tool in tools {
        yaml.push_str(&format!(
            "    - ref: {{kind: Tool, name: {tool}, package: \"@goondan/base\"}}\n"
        ));
    }
    if let Some(swarm) = swarm {
        yaml.push_str(&format!(
            "---\napiVersion: goondan.ai/v1\nkind: Swarm\nmetadata: {{name: {swarm}}}\nspec: {{entryAgent: \"Agent/assistant\", agents: [\"Agent/assistant\"]}}\n"
        ));
    }
    let file = dir.join("goondan.yaml");
    std::fs::write(&file, yaml).unwrap();
    file
}

/// The key the tests pass to the agents (the replay server records it).
pub const KEY: &str = "sk-test-never-printed";

fn chunk(delta: &Value, finish: Option<&str>) -> String {
    data(
        &json!({"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1,
        "model": "gpt-test", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}),
    )
}

/// A streamed answer asking for one tool call.
pub fn call(id: &str, name: &str, args: &Value) -> Reply {
    Reply::sse(&call_events(id, name, args, None))
}

/// [`call`], ending with the chunk that says how many tokens it took (prompt, completion).
pub fn call_counted(id: &str, name: &str, args: &Value, tokens: (u64, u64)) -> Reply {
    Reply::sse(&call_events(id, name, args, Some(tokens)))
}

fn call_events(id: &str, name: &str, args: &Value, tokens: Option<(u64, u64)>) -> Vec<String> {
    let mut events = vec![
        chunk(
            &json!({"role": "assistant", "content": null, "tool_calls": [{"index": 0, "id": id,
                "type": "function", "function": {"name": name, "arguments": args.to_string()}}]}),
            None,
        ),
        chunk(&json!({}), Some("tool_calls")),
    ];
    events.extend(tokens.map(usage));
    events.push("data: [DONE]".to_owned());
    events
}

/// A streamed text answer, in pieces.
pub fn text(pieces: &[&str]) -> Reply {
    Reply::sse(&text_events(pieces, None))
}

/// [`text`], ending with the chunk that says how many tokens it took (prompt, completion).
pub fn text_counted(pieces: &[&str], tokens: (u64, u64)) -> Reply {
    Reply::sse(&text_events(pieces, Some(tokens)))
}

fn text_events(pieces: &[&str], tokens: Option<(u64, u64)>) -> Vec<String> {
    let mut events = vec![chunk(&json!({"role": "assistant", "content": ""}), None)];
    events.extend(pieces.iter().map(|p| chunk(&json!({"content": p}), None)));
    events.push(chunk(&json!({}), Some("stop")));
    events.extend(tokens.map(usage));
    events.push("data: [DONE]".to_owned());
    events
}

/// The last chunk of a stream asked for `stream_options.include_usage`.
fn usage((prompt, completion): (u64, u64)) -> String {
    data(
        &json!({"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1,
        "model": "gpt-test", "choices": [],
        "usage": {"prompt_tokens": prompt, "completion_tokens": completion,
            "total_tokens": prompt + completion}}),
    )
}

/// The contents of the tool messages of a recorded Chat Completions request.
pub fn tool_results(body: &Value) -> Vec<String> {
    body["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap_or_default().to_owned())
        .collect()
}

/// The texts of the user messages of a recorded Chat Completions request.
pub fn users(body: &Value) -> Vec<String> {
    body["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|m| m["role"] == "user")
        .filter_map(|m| m["content"].as_str().map(str::to_owned))
        .collect()
}

/// The folder a `scripts/` peer installer prints (`scripts/python-peers`, `scripts/bfcl-data`),
/// run on first use, or the folder the environment variable `env` names. A failure fails the
/// test, never skips it.
pub fn peer_folder(script: &str, env: &str) -> PathBuf {
    if let Some(dir) = std::env::var_os(env) {
        return PathBuf::from(dir);
    }
    let script = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../scripts")
        .join(script);
    let o = std::process::Command::new(&script).output().unwrap();
    assert!(
        o.status.success(),
        "{} failed: {}",
        script.display(),
        String::from_utf8_lossy(&o.stderr)
    );
    PathBuf::from(String::from_utf8_lossy(&o.stdout).trim())
}

/// The entry of `spec.mcp.servers` for server-everything over stdio, named `everything`, with
/// `include` as its tool list and `more` (lines indented like its keys) after it: run in the
/// sandbox, as every bridged server by default, reading its own files. Indented for
/// `servers:` at four spaces.
pub fn everything_server(include: &str, more: &str) -> String {
    use goondan_test_peers::mcp_peers;
    let peers = mcp_peers::peers_dir()
        .join("../..")
        .canonicalize()
        .unwrap_or_else(|e| panic!("the peers' directory: {e}"));
    format!(
        r#"      - name: everything
        command: "{node}"
        args: ["{everything}", "stdio"]
        include: [{include}]
        sandbox: {{read: ["{peers}"]}}
{more}"#,
        node = mcp_peers::peer("node").display(),
        everything = mcp_peers::peer("mcp-server-everything").display(),
        peers = peers.display(),
    )
}

/// A stdio MCP server in Python listing `fine` and `deep`, whose schema nests 5,000 levels;
/// `fine` answers `fine`.
const DEEP_SCHEMA_SERVER: &str = r#"
import json, sys
for line in sys.stdin:
    msg = json.loads(line)
    if "id" not in msg:
        continue
    rid = json.dumps(msg["id"])
    if msg.get("method") == "initialize":
        result = json.dumps({"protocolVersion": msg["params"]["protocolVersion"],
                             "capabilities": {"tools": {}},
                             "serverInfo": {"name": "deep", "version": "1"}})
    elif msg.get("method") == "tools/list":
        deep = "[" * 4999 + "{}" + "]" * 4999
        result = '{"tools":[{"name":"fine","inputSchema":{"type":"object"}},' \
                 '{"name":"deep","inputSchema":{"type":"object","properties":{"x":%s}}}]}' % deep
    elif msg.get("method") == "tools/call":
        result = '{"content":[{"type":"text","text":"fine"}]}'
    else:
        result = "{}"
    sys.stdout.write('{"jsonrpc":"2.0","id":%s,"result":%s}\n' % (rid, result))
    sys.stdout.flush()
"#;

/// The bundle lines of a server `deep` running [`DEEP_SCHEMA_SERVER`].
pub fn deep_schema_server() -> String {
    format!(
        r#"      - name: deep
        command: python3
        args: ["-c", {script}]
        startupTimeoutMs: 15000
"#,
        script = serde_json::to_string(DEEP_SCHEMA_SERVER).unwrap_or_default(),
    )
}
