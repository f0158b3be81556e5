//! OpenTelemetry end to end: the `goondan` program exports spans and metrics
//! in the GenAI semantic conventions over OTLP to a real receiver on 127.0.0.1 (decoding what it
//! is sent with opentelemetry-proto), and one trace spans the processes of a run: two agents
//! under the Orchestrator and an MCP server one of them bridges.

use std::collections::BTreeSet;
use std::process::Stdio;
use std::time::Duration;

use goondan_runtime::mcp::client::local_name;
use goondan_test_peers::otlp::{OtlpReceiver, Point, Span};
use goondan_test_peers::replay::ReplayServer;
use serde_json::json;

use crate::run_support::{KEY, call_counted, goondan, replayed_model, text_counted};

/// Two agents: `planner` asks `coder`, whose only tools are those of an MCP server it bridges,
/// `goondan mcp serve --tools text-transform`, another `goondan` process.
fn bundle(dir: &std::path::Path, server: &ReplayServer) -> std::path::PathBuf {
    let yaml = format!(
        r#"{model}apiVersion: goondan.ai/v1
kind: Extension
metadata: {{name: mcp}}
spec:
  mcp:
    servers:
      - name: texts
        command: "{goondan}"
        args: [mcp, serve, --tools, text-transform]
        # Its spans go to the collector on the host's loopback, which a sandboxed server
        # cannot reach.
        sandbox: off
---
apiVersion: goondan.ai/v1
kind: Agent
metadata: {{name: planner}}
spec:
  modelConfig: {{modelRef: "Model/replayed"}}
  tools:
    - ref: {{kind: Tool, name: agents, package: "@goondan/base"}}
---
apiVersion: goondan.ai/v1
kind: Agent
metadata: {{name: coder}}
spec:
  modelConfig: {{modelRef: "Model/replayed"}}
  extensions: ["Extension/mcp"]
---
apiVersion: goondan.ai/v1
kind: Swarm
metadata: {{name: traced}}
spec: {{entryAgent: "Agent/planner", agents: ["Agent/planner", "Agent/coder"]}}
"#,
        model = replayed_model(server),
        goondan = goondan(),
    );
    let file = dir.join("goondan.yaml");
    std::fs::write(&file, yaml).unwrap();
    file
}

/// `goondan` with `args`, exporting to `endpoint` (batches sent every 100 ms).
async fn goondan_exporting(
    args: &[&str],
    cwd: &std::path::Path,
    endpoint: &str,
) -> std::process::Output {
    let child = tokio::process::Command::new(goondan())
        .args(args)
        .env("GOONDAN_TEST_KEY", KEY)
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint)
        .env("OTEL_EXPORTER_OTLP_TIMEOUT", "1000")
        .env("OTEL_BSP_SCHEDULE_DELAY", "100")
        .env("OTEL_METRIC_EXPORT_INTERVAL", "300")
        .env_remove("OTEL_SERVICE_NAME")
        .env_remove("OTEL_SDK_DISABLED")
        .env_remove("RUST_LOG")
        .current_dir(cwd)
        .stdin(Stdio::null())
        .kill_on_drop(true)
        .output();
    tokio::time::timeout(Duration::from_secs(90), child)
        .await
        .expect("goondan did not finish in time")
        .unwrap()
}

fn named<'a>(spans: &'a [Span], name: &str) -> Vec<&'a Span> {
    spans.iter().filter(|s| s.name == name).collect()
}

fn one<'a>(spans: &'a [Span], name: &str) -> &'a Span {
    let found = named(spans, name);
    assert_eq!(found.len(), 1, "one `{name}` span: {spans:#?}");
    found[0]
}

fn has_point(points: &[Point], metric: &str, key: &str, value: &str) -> bool {
    points
        .iter()
        .any(|p| p.name == metric && p.attributes.get(key).and_then(|v| v.as_str()) == Some(value))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_trace_spans_two_agent_processes_and_a_bridged_mcp_server_in_the_gen_ai_conventions() {
    let receiver = OtlpReceiver::start().await;
    let bridged = local_name("texts", "text-transform__case").full;
    let server = ReplayServer::start([
        call_counted(
            "call_ask",
            "agents__request",
            &json!({"target": "coder", "input": "shout hello"}),
            (20, 7),
        ),
        call_counted(
            "call_case",
            &bridged,
            &json!({"text": "hello", "to": "upper"}),
            (15, 5),
        ),
        text_counted(&["HELLO"], (25, 3)),
        text_counted(&["coder says HELLO"], (30, 4)),
    ])
    .await;
    let dir = tempfile::tempdir().unwrap();
    let file = bundle(dir.path(), &server);
    let out = goondan_exporting(
        &[
            "run",
            file.to_str().unwrap(),
            "--input",
            "ask coder",
            "--approve",
            "never",
        ],
        dir.path(),
        &receiver.endpoint(),
    )
    .await;
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert_eq!(stdout, "coder says HELLO\n", "{stderr}");

    let server_call = "tools/call text-transform__case";
    let wanted = [
        "invoke_agent planner",
        "invoke_agent coder",
        "execute_tool agents__request",
        server_call,
        "execute_tool text-transform__case",
    ];
    let (spans, points) = receiver
        .wait_until(Duration::from_secs(30), |spans, points| {
            wanted.iter().all(|w| spans.iter().any(|s| s.name == *w))
                && spans
                    .iter()
                    .any(|s| s.name == format!("execute_tool {bridged}"))
                && spans.iter().filter(|s| s.name == "chat gpt-test").count() == 4
                && has_point(
                    points,
                    "gen_ai.client.operation.duration",
                    "gen_ai.operation.name",
                    "chat",
                )
                && has_point(
                    points,
                    "gen_ai.client.operation.duration",
                    "gen_ai.operation.name",
                    "execute_tool",
                )
                && has_point(
                    points,
                    "gen_ai.client.token.usage",
                    "gen_ai.token.type",
                    "output",
                )
        })
        .await;

    // One trace: every span of the run's work (not the server loops of the libraries under
    // it, such as rmcp's), from three processes.
    let ours: Vec<&Span> = spans
        .iter()
        .filter(|s| {
            s.name == "agent_event"
                || s.attributes.contains_key("gen_ai.operation.name")
                || s.attributes.contains_key("mcp.method.name")
        })
        .collect();
    let traces: BTreeSet<_> = ours.iter().map(|s| s.trace_id.as_str()).collect();
    assert_eq!(traces.len(), 1, "{ours:#?}");
    let pids: BTreeSet<_> = ours
        .iter()
        .map(|s| {
            s.resource
                .get("process.pid")
                .cloned()
                .unwrap_or_default()
                .to_string()
        })
        .collect();
    assert_eq!(pids.len(), 3, "planner, coder and the MCP server: {pids:?}");
    assert!(
        ours.iter()
            .all(|s| s.resource.get("service.name") == Some(&json!("goondan")))
    );

    // The handoff: coder's event is a child of planner's `agents__request` call, in another
    // process (the IPC frame carried the context).
    let ask = one(&spans, "execute_tool agents__request");
    assert_eq!(ask.attr("gen_ai.operation.name"), Some("execute_tool"));
    assert_eq!(ask.attr("gen_ai.tool.name"), Some("agents__request"));
    assert_eq!(ask.attr("gen_ai.tool.call.id"), Some("call_ask"));
    assert_eq!(ask.attr("gen_ai.tool.type"), Some("function"));
    let planner = one(&spans, "invoke_agent planner");
    let coder = one(&spans, "invoke_agent coder");
    assert_eq!(coder.attr("gen_ai.agent.name"), Some("coder"));
    assert_eq!(planner.attr("gen_ai.operation.name"), Some("invoke_agent"));
    assert_ne!(
        planner.resource.get("process.pid"),
        coder.resource.get("process.pid")
    );
    let event = spans
        .iter()
        .find(|s| {
            s.name == "agent_event"
                && s.resource.get("process.pid") == coder.resource.get("process.pid")
        })
        .expect("coder's event span");
    assert_eq!(event.parent_span_id, ask.span_id, "{spans:#?}");
    assert_eq!(coder.parent_span_id, event.span_id);

    // The MCP hop: the server's `tools/call` span continues the client's call (`_meta`), and
    // the server's own `execute_tool` span is its child.
    let client_call = one(&spans, &format!("execute_tool {bridged}"));
    assert_eq!(client_call.attr("gen_ai.tool.call.id"), Some("call_case"));
    assert_eq!(
        client_call.resource.get("process.pid"),
        coder.resource.get("process.pid")
    );
    let served = one(&spans, server_call);
    assert_eq!(served.kind, 2, "a server span");
    assert_eq!(served.attr("mcp.method.name"), Some("tools/call"));
    assert_eq!(
        served.attr("gen_ai.tool.name"),
        Some("text-transform__case")
    );
    assert_eq!(served.parent_span_id, client_call.span_id);
    assert_ne!(
        served.resource.get("process.pid"),
        coder.resource.get("process.pid")
    );
    let executed = one(&spans, "execute_tool text-transform__case");
    assert_eq!(executed.parent_span_id, served.span_id);
    assert_eq!(executed.status, 0, "a call that worked has no error status");
    assert!(!executed.attributes.contains_key("error.type"));

    // The model requests: `chat` client spans with the model, the provider and the tokens.
    let chats = named(&spans, "chat gpt-test");
    let mut inputs: Vec<i64> = chats
        .iter()
        .map(|c| {
            assert_eq!(c.kind, 3, "a client span");
            assert_eq!(c.attr("gen_ai.operation.name"), Some("chat"));
            assert_eq!(c.attr("gen_ai.provider.name"), Some("openai"));
            assert_eq!(c.attr("gen_ai.request.model"), Some("gpt-test"));
            assert!(
                c.attributes.contains_key("gen_ai.usage.output_tokens"),
                "{c:?}"
            );
            c.attributes["gen_ai.usage.input_tokens"].as_i64().unwrap()
        })
        .collect();
    inputs.sort_unstable();
    assert_eq!(inputs, [15, 20, 25, 30]);

    // The metrics: operation durations in seconds, and the tokens by type.
    let duration = points
        .iter()
        .find(|p| p.name == "gen_ai.client.operation.duration")
        .unwrap();
    assert_eq!(duration.unit, "s");
    assert!(has_point(
        &points,
        "gen_ai.client.token.usage",
        "gen_ai.token.type",
        "input"
    ));
    assert!(
        points
            .iter()
            .any(|p| p.name == "gen_ai.client.operation.duration"
                && p.attributes.get("gen_ai.request.model") == Some(&json!("gpt-test"))
                && p.attributes.get("gen_ai.provider.name") == Some(&json!("openai")))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_call_s_span_names_its_error_code_as_error_type() {
    let receiver = OtlpReceiver::start().await;
    let dir = tempfile::tempdir().unwrap();
    let out = goondan_exporting(
        &[
            "tools",
            "call",
            "text-transform__case",
            r#"{"text": "", "to": "upper"}"#,
        ],
        dir.path(),
        &receiver.endpoint(),
    )
    .await;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let (spans, _) = receiver
        .wait_until(Duration::from_secs(30), |spans, _| {
            spans
                .iter()
                .any(|s| s.name == "execute_tool text-transform__case")
        })
        .await;
    let call = one(&spans, "execute_tool text-transform__case");
    assert_eq!(call.status, 2, "an error status: {call:?}");
    let code = call.attr("error.type").expect("error.type");
    assert!(code.starts_with("E_"), "{code}");
    assert!(
        stdout.contains(code),
        "the span names the code the caller got: {stdout}"
    );
}

/// An endpoint that refuses connections and one that never answers: the call is answered all
/// the same, and stderr has one warning per signal, not one per batch (the call waits two
/// seconds, in which the metrics alone are exported every 300 ms).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_otlp_endpoint_that_is_down_or_slow_costs_one_warning_and_never_the_call() {
    let closed = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://{}", l.local_addr().unwrap())
    };
    let hanging = OtlpReceiver::start_hanging().await;
    for endpoint in [closed, hanging.endpoint()] {
        let dir = tempfile::tempdir().unwrap();
        let out = goondan_exporting(
            &["tools", "call", "wait__seconds", r#"{"seconds": 2}"#],
            dir.path(),
            &endpoint,
        )
        .await;
        let (stdout, stderr) = (
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr),
        );
        assert!(out.status.success(), "{endpoint}: {stdout}\n{stderr}");
        assert!(stdout.contains("wait__seconds"), "{endpoint}: {stdout}");
        let warnings: Vec<_> = stderr
            .lines()
            .filter(|l| l.contains("OTLP endpoint"))
            .collect();
        assert!(
            !warnings.is_empty() && warnings.len() <= 2,
            "{endpoint}: at most one warning per signal (spans, metrics): {stderr}"
        );
        assert!(warnings.iter().all(|w| w.contains("WARN")), "{stderr}");
    }
}

/// A bad configuration is told once and leaves the program working.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_otlp_configuration_is_one_warning_and_the_export_stays_off() {
    let dir = tempfile::tempdir().unwrap();
    let out = goondan_exporting(
        &[
            "tools",
            "call",
            "text-transform__case",
            r#"{"text": "on", "to": "upper"}"#,
        ],
        dir.path(),
        "ftp://127.0.0.1:1/",
    )
    .await;
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains("ON"), "{stdout}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("OpenTelemetry export is off") && stderr.contains("ftp"),
        "{stderr}"
    );
}
