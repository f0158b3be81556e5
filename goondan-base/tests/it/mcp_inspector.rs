//! The MCP inspector (a real MCP client, in CLI mode) against
//! `goondan mcp serve` over stdio: it lists our tools, and calls one that succeeds and one
//! that fails with our structured error.

use goondan_test_peers::mcp_peers;

use std::process::Command;

use serde_json::Value;

/// Runs `mcp-inspector --cli goondan mcp serve --tools json-query <args>` and returns its
/// first JSON document and its exit status.
fn inspect(args: &[&str]) -> (Value, bool) {
    let out = Command::new(mcp_peers::peer("mcp-inspector"))
        .env("PATH", mcp_peers::path_with_peers())
        .arg("--cli")
        .arg(env!("CARGO_BIN_EXE_goondan"))
        .args(["mcp", "serve", "--tools", "json-query"])
        .args(args)
        .output()
        .expect("the inspector runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let first = serde_json::Deserializer::from_str(&stdout)
        .into_iter::<Value>()
        .next()
        .and_then(Result::ok)
        .unwrap_or_else(|| {
            panic!(
                "no JSON from the inspector; stdout: {stdout}\nstderr: {}",
                String::from_utf8_lossy(&out.stderr)
            )
        });
    (first, out.status.success())
}

#[test]
fn mcp_inspector_lists_and_calls_goondan_mcp_serve_over_stdio() {
    let (listed, ok) = inspect(&["--method", "tools/list"]);
    assert!(ok, "{listed}");
    let names: Vec<&str> = listed["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    // The served catalog, in order, with the Goondan names unchanged.
    assert_eq!(
        names,
        [
            "json-query__query",
            "json-query__pick",
            "json-query__count",
            "json-query__flatten"
        ]
    );
    assert_eq!(listed["tools"][0]["inputSchema"]["type"], "object");

    let (called, ok) = inspect(&[
        "--method",
        "tools/call",
        "--tool-name",
        "json-query__count",
        "--tool-arg",
        "data=\"[1,2,3]\"",
    ]);
    assert!(ok, "{called}");
    assert_ne!(called["isError"], true, "{called}");
    assert_eq!(called["structuredContent"]["count"], 3, "{called}");

    let (failed, ok) = inspect(&[
        "--method",
        "tools/call",
        "--tool-name",
        "json-query__count",
        "--tool-arg",
        "data=\"not json\"",
    ]);
    // The inspector reports a tool error as a failed command, after printing the result.
    assert!(!ok, "{failed}");
    assert_eq!(failed["isError"], true, "{failed}");
    assert_eq!(failed["structuredContent"]["error"]["code"], "E_JSON_PARSE");
    let text = failed["content"][0]["text"].as_str().expect("text");
    assert!(text.starts_with("error E_JSON_PARSE"), "{text}");
    assert!(text.contains("suggestion: "), "{text}");
}

/// `goondan mcp serve --code-mode` seen by the inspector: the code tool and its search
/// alone; the search (BM25) answers the stub of the function a query needs, and a program
/// calls the served tools as functions.
#[test]
fn mcp_inspector_sees_goondan_mcp_serve_code_mode_as_the_code_tool_and_its_search() {
    let (listed, ok) = inspect(&["--code-mode", "--method", "tools/list"]);
    assert!(ok, "{listed}");
    let names: Vec<&str> = listed["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert_eq!(names, ["code__run", "code__search"]);
    let run = listed["tools"][0]["description"]
        .as_str()
        .expect("description");
    assert!(run.contains("class json_query:"), "{run}");

    let (found, ok) = inspect(&[
        "--code-mode",
        "--method",
        "tools/call",
        "--tool-name",
        "code__search",
        "--tool-arg",
        "query=\"count the elements of an array\"",
        "--tool-arg",
        "limit=1",
    ]);
    assert!(ok, "{found}");
    let stubs = found["content"][0]["text"].as_str().expect("text");
    assert!(
        stubs.contains("class json_query:") && stubs.contains("def count("),
        "{stubs}"
    );
    assert_eq!(stubs.matches("def ").count(), 1, "{stubs}");

    let (ran, ok) = inspect(&[
        "--code-mode",
        "--method",
        "tools/call",
        "--tool-name",
        "code__run",
        "--tool-arg",
        "code=\"json_query.count(data='[1,2,3]')['count'] * 10\"",
    ]);
    assert!(ok, "{ran}");
    let text = ran["content"][0]["text"].as_str().expect("text");
    let output: Value = serde_json::from_str(text).expect("the program's answer is JSON");
    assert_eq!(output["value"], 30, "{output}");
    assert_eq!(output["calls"], 1, "{output}");
}

/// `goondan mcp serve --skills DIR`: the inspector lists the skill's `SKILL.md` among the
/// resources and reads it back as it is on disk.
#[test]
fn mcp_inspector_reads_the_skills_goondan_mcp_serve_serves() {
    let dir = tempfile::tempdir().expect("tempdir");
    let skill = "---\nname: tidy-imports\ndescription: Sorts and groups a file's imports.\n---\n\nSort them.\n";
    std::fs::create_dir_all(dir.path().join("tidy-imports")).expect("folder");
    std::fs::write(dir.path().join("tidy-imports/SKILL.md"), skill).expect("SKILL.md");
    let folder = dir.path().to_str().expect("a UTF-8 path");
    let (listed, ok) = inspect(&["--skills", folder, "--method", "resources/list"]);
    assert!(ok, "{listed}");
    let uris: Vec<&str> = listed["resources"]
        .as_array()
        .expect("resources")
        .iter()
        .filter_map(|r| r["uri"].as_str())
        .collect();
    assert_eq!(uris, ["skill://tidy-imports/SKILL.md"], "{listed}");
    let (read, ok) = inspect(&[
        "--skills",
        folder,
        "--method",
        "resources/read",
        "--uri",
        "skill://tidy-imports/SKILL.md",
    ]);
    assert!(ok, "{read}");
    assert_eq!(read["contents"][0]["text"], skill, "{read}");
    assert_eq!(read["contents"][0]["mimeType"], "text/markdown", "{read}");
}

/// The status line of a raw `initialize` POST to `addr` (no session: it opens one).
fn initialize_status(addr: &str) -> String {
    use std::io::{Read, Write};
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}"#;
    let mut stream = std::net::TcpStream::connect(addr).unwrap();
    write!(
        stream,
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nAccept: application/json, text/event-stream\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    stream
        .set_read_timeout(Some(std::time::Duration::from_secs(5)))
        .unwrap();
    let mut head = [0u8; 64];
    let n = stream.read(&mut head).unwrap_or(0);
    String::from_utf8_lossy(&head[..n])
        .lines()
        .next()
        .unwrap_or_default()
        .to_owned()
}

/// `goondan mcp serve --http` caps its sessions (`--max-sessions`): a
/// client past the cap is refused with 503, and the server goes on.
#[test]
fn goondan_mcp_serve_http_refuses_sessions_past_max_sessions() {
    use std::io::BufRead;
    let mut child = Command::new(env!("CARGO_BIN_EXE_goondan"))
        .args([
            "mcp",
            "serve",
            "--tools",
            "json-query",
            "--http",
            "127.0.0.1:0",
        ])
        .args(["--max-sessions", "2", "--session-idle-secs", "60"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let url = line.trim().trim_start_matches("serving MCP at ").to_owned();
    let addr = url
        .trim_start_matches("http://")
        .trim_end_matches("/mcp")
        .to_owned();
    let statuses: Vec<String> = (0..3).map(|_| initialize_status(&addr)).collect();
    let _ = child.kill();
    let _ = child.wait();
    assert!(statuses[0].contains(" 200 "), "{statuses:?}");
    assert!(statuses[1].contains(" 200 "), "{statuses:?}");
    assert!(statuses[2].contains(" 503 "), "{statuses:?}");
}
