//! The `goondan` command, run as a process: stdout and exit status of every subcommand.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::{Value, json};

fn goondan(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_goondan"))
        .args(args)
        .output()
        .unwrap()
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn quickstart() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../examples/quickstart/goondan.yaml")
        .display()
        .to_string()
}

fn write_bundle(dir: &Path, text: &str) -> PathBuf {
    let p = dir.join("goondan.yaml");
    std::fs::write(&p, text).unwrap();
    p
}

#[test]
fn validate_accepts_the_quickstart_bundle() {
    let o = goondan(&["validate", &quickstart()]);
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
    assert!(stdout(&o).starts_with("ok: "), "{}", stdout(&o));
    let o = goondan(&["validate", &quickstart(), "--json"]);
    let report: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(report["ok"], true);
    assert_eq!(report["tools"], 6);
}

#[test]
fn validate_reports_every_error_with_file_and_line_and_exits_1() {
    let dir = tempfile::tempdir().unwrap();
    let bundle = write_bundle(
        dir.path(),
        "apiVersion: goondan.ai/v1\nkind: Tool\nmetadata:\n  name: bash\nspec:\n  exports:\n    - name: exec\n    - name: run\n---\napiVersion: goondan.ai/v1\nkind: Agent\nmetadata: {name: a}\nspec:\n  tools: [\"Tool/ghost\"]\n",
    );
    let o = goondan(&["validate", bundle.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    let text = stdout(&o);
    let file = bundle.display().to_string();
    assert!(
        text.contains(&format!(
            "{file}:8: error: Tool/bash: export `run` has no handler"
        )),
        "{text}"
    );
    assert!(
        text.contains("`bash__script` that the bundle does not declare"),
        "{text}"
    );
    assert!(
        text.contains(&format!("{file}:14: error: Agent/a:")),
        "{text}"
    );
    assert!(text.contains("has 3 error(s)"), "{text}");
}

/// Every base tool can be sent to every provider: strict where the provider's strict form can
/// express it, the looser form (OpenAI `strict: false`, Gemini `parametersJsonSchema`) for the
/// few that it cannot (free-form maps, `agents__request`'s free-form `input`).
#[test]
fn every_base_tool_can_be_sent_to_every_provider() {
    let all = stdout(&goondan(&["tools", "list"])).lines().count();
    assert!(all > 30, "{all}");
    for format in ["openai", "openai-responses", "anthropic", "gemini", "mcp"] {
        let o = goondan(&["tools", "list", "--format", format]);
        assert_eq!(
            o.status.code(),
            Some(0),
            "{format}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        let tools: Value = serde_json::from_slice(&o.stdout).unwrap();
        let listed = match format {
            "gemini" => tools[0]["functionDeclarations"].as_array().unwrap().len(),
            "mcp" => tools["tools"].as_array().unwrap().len(),
            _ => tools.as_array().unwrap().len(),
        };
        assert_eq!(listed, all, "{format}");
    }
    let o = goondan(&["tools", "list", "--format", "gemini"]);
    let tools: Value = serde_json::from_slice(&o.stdout).unwrap();
    let decls = tools[0]["functionDeclarations"].as_array().unwrap();
    let request = decls
        .iter()
        .find(|d| d["name"] == "agents__request")
        .unwrap();
    assert!(request.get("parameters").is_none());
    assert_eq!(request["parametersJsonSchema"]["type"], "object");
    let read = decls
        .iter()
        .find(|d| d["name"] == "file-system__read")
        .unwrap();
    assert!(read.get("parametersJsonSchema").is_none());
    assert_eq!(read["parameters"]["type"], "OBJECT");
}

/// Toolsets: two `spec.tools` entries that give one name to two tools are
/// an error on the line of the second.
#[test]
fn validate_reports_a_toolset_clash_on_the_line_of_its_entry() {
    let dir = tempfile::tempdir().unwrap();
    let bundle = write_bundle(
        dir.path(),
        "apiVersion: goondan.ai/v1\nkind: Tool\nmetadata:\n  name: bash\nspec:\n  exports:\n    - name: exec\n    - name: script\n---\napiVersion: goondan.ai/v1\nkind: Agent\nmetadata: {name: a}\nspec:\n  tools:\n    - {ref: Tool/bash, prefix: sh, rename: {exec: run}}\n    - {ref: Tool/bash, prefix: sh, rename: {script: run}}\n",
    );
    let o = goondan(&["validate", bundle.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    let text = stdout(&o);
    let file = bundle.display().to_string();
    assert!(
        text.contains(&format!(
            "{file}:16: error: Agent/a: `sh__run` is given to both `bash__exec` and `bash__script`"
        )),
        "{text}"
    );
}

#[test]
fn validate_of_a_missing_file_exits_2() {
    let o = goondan(&["validate", "/nonexistent/goondan.yaml"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("cannot read"));
}

#[test]
fn tools_list_shows_compiled_tools_and_agent_catalogs_in_every_format() {
    let o = goondan(&["tools", "list"]);
    assert_eq!(o.status.code(), Some(0));
    let names: Vec<String> = stdout(&o)
        .lines()
        .map(|l| l.split_whitespace().next().unwrap().to_owned())
        .collect();
    assert!(names.contains(&"bash__exec".to_owned()), "{names:?}");
    assert!(names.contains(&"http-fetch__post".to_owned()), "{names:?}");

    let q = quickstart();
    let o = goondan(&["tools", "list", "--bundle", &q, "--format", "json"]);
    let catalog: Value = serde_json::from_slice(&o.stdout).unwrap();
    let read = catalog
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["name"] == "file-system__read")
        .unwrap();
    // The bundle's description wins over the compiled one.
    assert_eq!(read["description"], "Read a text file of the workspace");

    // OpenAI strict mode cannot express `bash__exec`'s free-form `env` map: that tool alone is
    // sent with `strict: false` and its full schema; the others stay strict.
    let o = goondan(&["tools", "list", "--bundle", &q, "--format", "openai"]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let tools: Value = serde_json::from_slice(&o.stdout).unwrap();
    let strict_of = |name: &str| {
        tools
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["function"]["name"] == name)
            .map(|t| t["function"]["strict"].clone())
    };
    assert_eq!(strict_of("bash__exec"), Some(json!(false)));
    assert_eq!(strict_of("file-system__read"), Some(json!(true)));

    let dir = tempfile::tempdir().unwrap();
    let fs_only = write_bundle(
        dir.path(),
        "apiVersion: goondan.ai/v1\nkind: Agent\nmetadata: {name: a}\nspec:\n  tools:\n    - ref: {kind: Tool, name: file-system, package: \"@goondan/base\"}\n",
    );
    let b = fs_only.to_str().unwrap();
    let o = goondan(&["tools", "list", "--bundle", b, "--format", "openai"]);
    let tools: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(tools[0]["type"], "function");
    assert_eq!(tools[0]["function"]["name"], "file-system__read");
    for format in ["anthropic", "gemini", "mcp", "openai-responses"] {
        let o = goondan(&["tools", "list", "--bundle", b, "--format", format]);
        assert_eq!(o.status.code(), Some(0), "{format}");
        assert!(
            serde_json::from_slice::<Value>(&o.stdout).is_ok(),
            "{format}"
        );
    }
    let o = goondan(&["tools", "list", "--bundle", &q, "--agent", "nobody"]);
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn tools_call_prints_the_result_and_exits_by_its_status() {
    let dir = tempfile::tempdir().unwrap();
    let wd = dir.path().to_str().unwrap();
    let o = goondan(&[
        "tools",
        "call",
        "file-system__write",
        r#"{"path": "a.txt", "content": "hello"}"#,
        "--workdir",
        wd,
        "--json",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
    let result: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(result["status"], "ok");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("a.txt")).unwrap(),
        "hello"
    );

    let o = goondan(&[
        "tools",
        "call",
        "bash__exec",
        r#"{"command": "cat a.txt"}"#,
        "--workdir",
        wd,
    ]);
    assert_eq!(o.status.code(), Some(0));
    assert!(stdout(&o).starts_with("ok bash__exec"), "{}", stdout(&o));
    assert!(
        stdout(&o).contains(r#""stdout": "hello""#),
        "{}",
        stdout(&o)
    );

    let o = goondan(&[
        "tools",
        "call",
        "file-system__read",
        r#"{"path": "missing"}"#,
        "--workdir",
        wd,
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stdout(&o).starts_with("error file-system__read [E_FS_NOT_FOUND]"),
        "{}",
        stdout(&o)
    );

    let o = goondan(&["tools", "call", "nope__x", "{}", "--workdir", wd, "--json"]);
    assert_eq!(o.status.code(), Some(1));
    let result: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(result["error"]["code"], "E_TOOL_NOT_IN_CATALOG");

    let o = goondan(&["tools", "call", "bash__exec", "{not json", "--workdir", wd]);
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn tools_call_with_a_bundle_is_checked_against_the_agent_catalog() {
    let dir = tempfile::tempdir().unwrap();
    let bundle = write_bundle(
        dir.path(),
        "apiVersion: goondan.ai/v1\nkind: Agent\nmetadata: {name: a}\nspec:\n  tools:\n    - ref: {kind: Tool, name: file-system, package: \"@goondan/base\"}\n",
    );
    let b = bundle.to_str().unwrap();
    let wd = dir.path().to_str().unwrap();
    let o = goondan(&[
        "tools",
        "call",
        "bash__exec",
        r#"{"command": "true"}"#,
        "--bundle",
        b,
        "--workdir",
        wd,
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stdout(&o).contains("E_TOOL_NOT_IN_CATALOG"),
        "{}",
        stdout(&o)
    );
    let o = goondan(&[
        "tools",
        "call",
        "file-system__list",
        "{}",
        "--bundle",
        b,
        "--workdir",
        wd,
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
}

#[test]
fn tools_export_writes_tool_resources_that_validate() {
    let o = goondan(&["tools", "export"]);
    assert_eq!(o.status.code(), Some(0));
    let yaml = stdout(&o);
    assert!(yaml.contains("kind: Tool"));
    assert!(yaml.contains("name: bash"));
    let dir = tempfile::tempdir().unwrap();
    let bundle = write_bundle(dir.path(), &yaml);
    let o = goondan(&["validate", bundle.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
    let o = goondan(&["tools", "export", "--tool", "bash"]);
    assert!(!stdout(&o).contains("name: file-system"));
}

#[test]
fn help_documents_the_exit_codes() {
    let o = goondan(&["--help"]);
    assert_eq!(o.status.code(), Some(0));
    assert!(stdout(&o).contains("Exit status:"));
    let o = goondan(&["tools", "call", "--help"]);
    assert!(
        stdout(&o).contains("1  the bundle has errors, or the tool call's result has status error")
    );
    let o = goondan(&["frobnicate"]);
    assert_eq!(o.status.code(), Some(2));
}

/// Google's own SDK (`google-genai`, whose models forbid unknown fields) accepts the Gemini
/// declaration of every base tool: `parameters` where Gemini's `Schema` can express the tool,
/// `parametersJsonSchema` where it cannot.
#[test]
fn google_genai_accepts_the_gemini_declarations_of_every_base_tool() {
    let o = goondan(&["tools", "list", "--format", "gemini"]);
    assert_eq!(o.status.code(), Some(0));
    let dir = tempfile::tempdir().unwrap();
    let tools = dir.path().join("tools.json");
    std::fs::write(&tools, &o.stdout).unwrap();
    let check = r#"
import json, sys
from google.genai import types
tools = json.load(open(sys.argv[1]))
assert len(tools) == 1, tools
tool = types.Tool.model_validate(tools[0])
names = []
for raw in tools[0]["functionDeclarations"]:
    decl = types.FunctionDeclaration.model_validate(raw)
    assert decl.name == raw["name"]
    assert (decl.parameters is None) or (decl.parameters_json_schema is None), decl.name
    names.append(decl.name)
assert len(tool.function_declarations) == len(names)
print(len(names), sum(1 for raw in tools[0]["functionDeclarations"] if "parametersJsonSchema" in raw))
"#;
    let o = Command::new("python3")
        .arg("-c")
        .arg(check)
        .arg(&tools)
        .env(
            "PYTHONPATH",
            crate::run_support::peer_folder("python-peers", "GOONDAN_PYTHON_PEERS"),
        )
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "google-genai refused a declaration: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let counts: Vec<usize> = stdout(&o)
        .split_whitespace()
        .map(|n| n.parse().unwrap())
        .collect();
    let all = stdout(&goondan(&["tools", "list"])).lines().count();
    assert_eq!(counts[0], all);
    assert!(counts[1] >= 1, "agents__request takes the JSON Schema form");
}
