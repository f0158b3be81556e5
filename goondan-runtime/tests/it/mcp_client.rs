//! The MCP client bridge against real servers: `@modelcontextprotocol/server-everything` (from
//! `scripts/mcp-peers`) declared in a bundle, and `goondan-test-mcp-server` (this package's
//! test server on rmcp) for errors, cancellation, list changes, odd names and restarts.
#![cfg(feature = "mcp")]

use goondan_test_peers::mcp_peers;

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use goondan_runtime::bundle::Bundle;
use goondan_runtime::mcp::client::{
    McpExtension, McpExtensionConfig, McpServerConfig, ServerStatus, local_name,
};
use goondan_runtime::step::{AgentInstance, ModelResponse, ScriptedModel, TurnEnd};
use goondan_runtime::{ToolCall, ToolContext, ToolExecutor, ToolRegistry};
use serde_json::{Value, json};

/// A bundle whose Extension `mcp` declares server-everything over stdio, its environment
/// tool excluded, and whose Agent `helper` uses it.
fn everything_bundle(dir: &Path) -> Bundle {
    let yaml = format!(
        r#"
apiVersion: goondan.ai/v1
kind: Extension
metadata: {{name: mcp}}
spec:
  mcp:
    servers:
      - name: everything
        command: "{node}"
        args: ["{server}", "stdio"]
        exclude: [get-env]
        callTimeoutMs: 60000
---
apiVersion: goondan.ai/v1
kind: Agent
metadata: {{name: helper}}
spec:
  tools: []
  extensions: ["Extension/mcp"]
"#,
        node = mcp_peers::peer("node").display(),
        server = mcp_peers::peer("mcp-server-everything").display(),
    );
    let file = dir.join("goondan.yaml");
    std::fs::write(&file, yaml).unwrap();
    let bundle = Bundle::load(&file).unwrap();
    assert!(
        bundle.diagnostics().is_empty(),
        "{:?}",
        bundle.diagnostics()
    );
    bundle
}

async fn everything(dir: &Path) -> (Bundle, McpExtension) {
    let bundle = everything_bundle(dir);
    let mut configs = bundle.agent_mcp_extensions("helper").unwrap();
    assert_eq!(configs.len(), 1);
    let mcp = McpExtension::connect(configs.remove(0)).await.unwrap();
    (bundle, mcp)
}

use crate::mcp_bridge;

use mcp_bridge::{Bridged, Captured, eventually, pid, test_server};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cat_6_mcp_bundle_bridges_server_everything_echo_and_sum_through_the_catalog_and_refuses_the_excluded_env_tool()
 {
    let dir = tempfile::tempdir().unwrap();
    let (bundle, mcp) = everything(dir.path()).await;
    let names = mcp.tool_names("everything");
    assert!(names.contains(&"everything__echo".to_owned()), "{names:?}");
    assert!(
        names.contains(&"everything__get-sum".to_owned()),
        "{names:?}"
    );
    assert!(!names.iter().any(|n| n.contains("get-env")), "{names:?}");

    let model = Arc::new(ScriptedModel::new([
        ModelResponse::calls([
            ToolCall::new("c1", "everything__echo", json!({"message": "hello bridge"})),
            ToolCall::new("c2", "everything__get-sum", json!({"a": 2, "b": 40})),
            ToolCall::new("c3", "everything__get-env", json!({})),
        ]),
        ModelResponse::text("done"),
    ]));
    let registry = Arc::new(ToolRegistry::new());
    let state = tempfile::tempdir().unwrap();
    let agent = AgentInstance::from_bundle(&bundle, "helper", registry, model)
        .unwrap()
        .state_dir(state.path())
        .extension(mcp.clone())
        .build()
        .unwrap();

    // The tools are in the registry and the first Step's catalog, with the seeds' source.
    let catalog = agent.base_catalog().unwrap();
    for name in &names {
        assert!(
            catalog.contains(name),
            "{name} is listed but not in the catalog"
        );
    }
    let echo = catalog
        .get("everything__echo")
        .expect("echo in the catalog");
    assert_eq!(
        serde_json::to_value(echo.source().unwrap()).unwrap(),
        json!({"type": "mcp", "name": "mcp", "mcp": {"extensionName": "mcp", "serverName": "everything"}})
    );
    assert_eq!(echo.parameters().unwrap()["required"], json!(["message"]));
    assert!(!catalog.contains("everything__get-env"));

    let turn = agent.run_turn("use the tools").await.unwrap();
    assert_eq!(turn.end, TurnEnd::Answered);
    let results = &turn.steps[0].results;
    let echoed = results[0]
        .output
        .as_ref()
        .and_then(Value::as_str)
        .unwrap_or_default();
    assert!(
        results[0].is_ok() && echoed.contains("hello bridge"),
        "{:?}",
        results[0]
    );
    let sum = results[1]
        .output
        .as_ref()
        .and_then(Value::as_str)
        .unwrap_or_default();
    assert!(results[1].is_ok() && sum.contains("42"), "{:?}", results[1]);
    assert_eq!(
        results[2].error_code(),
        Some("E_TOOL_NOT_IN_CATALOG"),
        "{:?}",
        results[2]
    );
    mcp.shutdown();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_server_everything_killed_mid_call_gives_e_mcp_unavailable_and_the_next_call_restarts_it()
 {
    let dir = tempfile::tempdir().unwrap();
    let (_bundle, mcp) = everything(dir.path()).await;
    let bridged = Arc::new(Bridged::new(&mcp));
    let first = pid(&mcp, "everything");

    let slow = {
        let bridged = Arc::clone(&bridged);
        tokio::spawn(async move {
            bridged
                .call(
                    "everything__trigger-long-running-operation",
                    json!({"duration": 30, "steps": 30}),
                )
                .await
        })
    };
    tokio::time::sleep(Duration::from_millis(700)).await;
    assert!(!slow.is_finished(), "the slow call should still run");
    let killed = std::process::Command::new("kill")
        .args(["-9", &first.to_string()])
        .status()
        .unwrap();
    assert!(killed.success());

    let started = Instant::now();
    let failed = tokio::time::timeout(Duration::from_secs(10), slow)
        .await
        .expect("the call ends when its server dies")
        .unwrap();
    assert!(started.elapsed() < Duration::from_secs(5));
    assert_eq!(failed.error_code(), Some("E_MCP_UNAVAILABLE"), "{failed:?}");
    let error = failed.error.as_ref().unwrap();
    assert!(error.message().contains("everything"), "{error:?}");
    assert!(
        error.suggestion().is_some_and(|s| s.contains("again")),
        "{error:?}"
    );

    let again = bridged
        .call("everything__echo", json!({"message": "back"}))
        .await;
    assert!(again.is_ok(), "{again:?}");
    assert!(
        again
            .output
            .as_ref()
            .and_then(Value::as_str)
            .unwrap_or_default()
            .contains("back")
    );
    assert_ne!(
        pid(&mcp, "everything"),
        first,
        "a new process serves the tools"
    );
    mcp.shutdown();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_remote_is_error_is_a_goondan_error_result_with_the_remote_text() {
    let mcp = McpExtension::connect(McpExtensionConfig::new("t").server(test_server("srv")))
        .await
        .unwrap();
    let bridged = Bridged::new(&mcp);
    let failed = bridged
        .call("srv__fail", json!({"message": "the disk is full"}))
        .await;
    assert_eq!(failed.error_code(), Some("E_MCP_TOOL_ERROR"), "{failed:?}");
    let error = failed.error.as_ref().unwrap();
    assert_eq!(error.message(), "the disk is full");
    assert!(error.suggestion().is_some());
    assert!(
        error
            .help_url()
            .is_some_and(|u| u.ends_with("#e_mcp_tool_error")),
        "{error:?}"
    );

    // The executor still validates arguments against the remote schema before the call.
    let refused = bridged.call("srv__fail", json!({"message": 5})).await;
    assert_eq!(refused.error_code(), Some("E_TOOL_INVALID_ARGS"));
    mcp.shutdown();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_call_timeout_and_context_cancellation_send_notifications_cancelled_to_the_server() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("server.log");
    let server = test_server("srv")
        .env("MCP_TEST_LOG", log.display().to_string())
        .call_timeout(Duration::from_millis(300));
    let mcp = McpExtension::connect(McpExtensionConfig::new("t").server(server))
        .await
        .unwrap();
    let bridged = Bridged::new(&mcp);
    let cancelled_lines = || {
        std::fs::read_to_string(&log)
            .unwrap_or_default()
            .lines()
            .filter(|l| *l == "cancelled wait")
            .count()
    };

    let started = Instant::now();
    let timed_out = bridged.call("srv__wait", json!({"ms": 20_000})).await;
    assert_eq!(
        timed_out.error_code(),
        Some("E_TOOL_TIMEOUT"),
        "{timed_out:?}"
    );
    assert!(started.elapsed() < Duration::from_secs(5));
    eventually("the server to see the first cancellation", || {
        cancelled_lines() == 1
    })
    .await;

    let token = tokio_util::sync::CancellationToken::new();
    let ctx = ToolContext::builder(bridged.agent.workdir())
        .cancellation(token.clone())
        .build();
    let catalog = bridged.agent.base_catalog().unwrap();
    let canceller = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(100)).await;
        token.cancel();
    });
    let cancelled = bridged
        .call_in(&catalog, "srv__wait", json!({"ms": 250}), &ctx)
        .await;
    canceller.await.unwrap();
    assert_eq!(
        cancelled.error_code(),
        Some("E_TOOL_CANCELLED"),
        "{cancelled:?}"
    );
    eventually("the server to see the second cancellation", || {
        cancelled_lines() == 2
    })
    .await;
    mcp.shutdown();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_list_changed_registers_new_tools_and_withdraws_removed_ones_for_the_next_step() {
    let mcp = McpExtension::connect(McpExtensionConfig::new("t").server(test_server("srv")))
        .await
        .unwrap();
    let bridged = Bridged::new(&mcp);
    assert!(!bridged.agent.registry().contains("srv__later"));

    let added = bridged
        .call("srv__add-tool", json!({"name": "later"}))
        .await;
    assert!(added.is_ok(), "{added:?}");
    eventually("`srv__later` to be registered", || {
        bridged.agent.registry().contains("srv__later")
    })
    .await;
    let later = bridged.call("srv__later", json!({})).await;
    assert_eq!(later.output, Some(json!("later")), "{later:?}");

    // Removed: the next Step's catalog leaves it out, so the executor refuses it.
    let removed = bridged
        .call("srv__remove-tool", json!({"name": "later"}))
        .await;
    assert!(removed.is_ok(), "{removed:?}");
    eventually("`srv__later` to be withdrawn", || {
        !mcp.tool_names("srv").contains(&"srv__later".to_owned())
    })
    .await;
    let model = Arc::new(ScriptedModel::new([
        ModelResponse::calls([ToolCall::new("c1", "srv__later", json!({}))]),
        ModelResponse::text("done"),
    ]));
    let state = tempfile::tempdir().unwrap();
    let agent = AgentInstance::builder("helper", Arc::clone(bridged.agent.registry()), model)
        .state_dir(state.path())
        .extension(mcp.clone())
        .build()
        .unwrap();
    let turn = agent.run_turn("call it").await.unwrap();
    assert!(!turn.steps[0].catalog.contains("srv__later"));
    assert_eq!(
        turn.steps[0].results[0].error_code(),
        Some("E_TOOL_NOT_IN_CATALOG")
    );
    mcp.shutdown();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_remote_names_with_double_underscores_or_dots_are_mapped_and_callable() {
    let mcp = McpExtension::connect(McpExtensionConfig::new("t").server(test_server("srv")))
        .await
        .unwrap();
    let bridged = Bridged::new(&mcp);
    let mapped = local_name("srv", "fs.read__all");
    assert!(mapped.mapped);
    assert!(
        mcp.tool_names("srv").contains(&mapped.full),
        "{:?}",
        mcp.tool_names("srv")
    );
    let result = bridged.call(&mapped.full, json!({})).await;
    assert_eq!(result.output, Some(json!("mapped")), "{result:?}");
    mcp.shutdown();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_stdio_server_gets_its_env_and_cwd_and_include_limits_its_tools() {
    let dir = tempfile::tempdir().unwrap();
    let server = test_server("srv")
        .env("MCP_TEST_GREETING", "hi from the config")
        .cwd(dir.path())
        .include(["where", "fail"]);
    let mcp = McpExtension::connect(McpExtensionConfig::new("t").server(server))
        .await
        .unwrap();
    assert_eq!(mcp.tool_names("srv"), ["srv__fail", "srv__where"]);
    let bridged = Bridged::new(&mcp);
    let result = bridged.call("srv__where", json!({})).await;
    let output = result.output.unwrap();
    assert_eq!(output["greeting"], "hi from the config");
    assert_eq!(
        Path::new(output["cwd"].as_str().unwrap())
            .canonicalize()
            .unwrap(),
        dir.path().canonicalize().unwrap()
    );
    mcp.shutdown();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_a_required_server_that_cannot_start_fails_connect_with_its_name_and_reason_without_hanging()
 {
    let started = Instant::now();
    let config = McpExtensionConfig::new("t").server(
        McpServerConfig::stdio("ghost", "/nonexistent/mcp-server")
            .startup_timeout(Duration::from_secs(5))
            .required(true),
    );
    let err = McpExtension::connect(config).await.unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains("ghost") && text.contains("/nonexistent/mcp-server"),
        "{text}"
    );
    assert!(started.elapsed() < Duration::from_secs(5));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_extension_yaml_problems_are_bundle_diagnostics_with_lines() {
    let yaml = r#"
apiVersion: goondan.ai/v1
kind: Extension
metadata: {name: mcp}
spec:
  mcp:
    servers:
      - name: a__b
        command: x
      - name: both
        command: x
        url: http://127.0.0.1:1/mcp
      - name: web
        url: http://127.0.0.1:1/mcp
        env: {A: b}
      - name: strict
        url: http://127.0.0.1:1/mcp
        required: yes please
"#;
    let bundle = Bundle::from_yaml(yaml, "goondan.yaml");
    let errors: Vec<_> = bundle
        .diagnostics()
        .iter()
        .map(|d| (d.line, d.message.clone()))
        .collect();
    assert!(
        errors
            .iter()
            .any(|(l, m)| *l == 10 && m.contains("not both")),
        "{errors:?}"
    );
    assert!(
        errors
            .iter()
            .any(|(l, m)| *l == 15 && m.contains("`env` is for `command`")),
        "{errors:?}"
    );
    assert!(errors.iter().any(|(_, m)| m.contains("a__b")), "{errors:?}");
    assert!(
        errors
            .iter()
            .any(|(l, m)| *l == 18 && m.contains("`required` is `true` or `false`")),
        "{errors:?}"
    );
    assert!(bundle.mcp_extension("mcp").is_err());
    assert!(bundle.mcp_extension("other").is_err());
}

/// A bundle's `required: true` server that cannot be reached fails the start, naming it; the
/// same server not required is left out and the extension starts.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_a_bundle_s_required_server_fails_the_start_and_one_not_required_is_left_out() {
    let yaml = |required: bool| {
        format!(
            r#"
apiVersion: goondan.ai/v1
kind: Extension
metadata: {{name: mcp}}
spec:
  mcp:
    servers:
      - name: srv
        url: http://127.0.0.1:1/mcp
        startupTimeoutMs: 5000
        required: {required}
"#
        )
    };
    let strict = Bundle::from_yaml(&yaml(true), "goondan.yaml");
    assert!(
        strict.diagnostics().is_empty(),
        "{:?}",
        strict.diagnostics()
    );
    let err = McpExtension::connect(strict.mcp_extension("mcp").unwrap())
        .await
        .unwrap_err();
    assert!(err.to_string().contains("`srv`"), "{err}");
    let lenient = Bundle::from_yaml(&yaml(false), "goondan.yaml");
    let mcp = McpExtension::connect(lenient.mcp_extension("mcp").unwrap())
        .await
        .unwrap();
    assert!(matches!(mcp.status("srv"), Some(ServerStatus::Down { .. })));
    mcp.shutdown();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_remote_task_becomes_a_pending_handle_whose_completion_is_the_task_result() {
    let mcp = McpExtension::connect(McpExtensionConfig::new("t").server(test_server("srv")))
        .await
        .unwrap();
    let bridged = Bridged::new(&mcp);
    let submitted = bridged.call("srv__slow-task", json!({"ms": 150})).await;
    assert!(submitted.is_pending(), "{submitted:?}");
    let handle = submitted.handle.clone().unwrap();
    let done = tokio::time::timeout(
        Duration::from_secs(10),
        bridged.executor.pending().wait(&handle),
    )
    .await
    .unwrap()
    .unwrap();
    assert!(done.is_ok(), "{done:?}");
    assert_eq!(done.output, Some(json!({"done": 150})));
    mcp.shutdown();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_cancelling_the_context_of_a_remote_task_sends_tasks_cancel() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("server.log");
    let server = test_server("srv").env("MCP_TEST_LOG", log.display().to_string());
    let mcp = McpExtension::connect(McpExtensionConfig::new("t").server(server))
        .await
        .unwrap();
    let bridged = Bridged::new(&mcp);
    let token = tokio_util::sync::CancellationToken::new();
    let ctx = ToolContext::builder(bridged.agent.workdir())
        .cancellation(token.clone())
        .build();
    let catalog = bridged.agent.base_catalog().unwrap();
    let submitted = bridged
        .call_in(&catalog, "srv__slow-task", json!({"ms": 60_000}), &ctx)
        .await;
    assert!(submitted.is_pending(), "{submitted:?}");
    token.cancel();
    let done = tokio::time::timeout(
        Duration::from_secs(10),
        bridged
            .executor
            .pending()
            .wait(submitted.handle.as_deref().unwrap()),
    )
    .await
    .unwrap()
    .unwrap();
    assert_eq!(done.error_code(), Some("E_TOOL_CANCELLED"), "{done:?}");
    eventually("the server to see `tasks/cancel`", || {
        std::fs::read_to_string(&log)
            .unwrap_or_default()
            .contains("cancelled task")
    })
    .await;
    mcp.shutdown();
}

/// server-everything over Streamable HTTP on a free loopback port, and that port.
///
/// It takes its port from `PORT` and cannot report one it picked itself, so the test picks a
/// free one, and another test of this binary may bind it first. A probe cannot tell (that
/// test's listener would answer it), and neither can the line saying it listens: Express calls
/// the callback that prints it even when the port is taken, and the error line follows at once.
/// So it is ready when it said it listens and then neither reported the port taken nor exited
/// for half a second; a port found taken is given up for another, a few times.
async fn server_everything_over_http() -> (tokio::process::Child, u16) {
    for _ in 0..5 {
        let port = goondan_test_peers::nats::free_port("127.0.0.1");
        if let Some(child) = server_everything_on(port).await {
            return (child, port);
        }
    }
    panic!("server-everything found its port taken five times")
}

/// server-everything over Streamable HTTP on `port` of 127.0.0.1, once it listens; `None` when
/// the port was taken.
async fn server_everything_on(port: u16) -> Option<tokio::process::Child> {
    use tokio::io::AsyncBufReadExt;
    let mut child = tokio::process::Command::new(mcp_peers::peer("node"))
        .arg(mcp_peers::peer("mcp-server-everything"))
        .arg("streamableHttp")
        .env("PORT", port.to_string())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = tokio::io::BufReader::new(child.stderr.take().unwrap()).lines();
    let listening = format!("listening on port {port}");
    let said = tokio::time::timeout(Duration::from_secs(30), async {
        loop {
            match lines.next_line().await {
                Ok(Some(line)) if line.contains(&listening) => return true,
                Ok(Some(_)) => {}
                _ => return false,
            }
        }
    })
    .await
    .expect("server-everything said nothing within 30 s");
    let taken = !said
        || tokio::time::timeout(Duration::from_millis(500), async {
            loop {
                match lines.next_line().await {
                    Ok(Some(line)) if line.contains("already in use") => return true,
                    Ok(Some(_)) => {}
                    _ => return true,
                }
            }
        })
        .await
        .unwrap_or(false);
    if taken {
        let _ = child.kill().await;
        return None;
    }
    // Keep reading its stderr, so that it never blocks on a full pipe.
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    Some(child)
}

/// A server that is not required and cannot be reached at start is left out: the extension
/// starts with the others, the server's status says why, and once it answers (the supervisor
/// tries again with backoff) its tools are registered and callable, with no restart of the
/// agent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_a_server_that_cannot_start_leaves_the_others_serving_and_its_tools_come_when_it_is_up()
{
    let port = goondan_test_peers::nats::free_port("127.0.0.1");
    let config = McpExtensionConfig::new("t")
        .server(test_server("srv"))
        .server(
            McpServerConfig::http("web", format!("http://127.0.0.1:{port}/mcp"))
                .include(["echo"])
                .startup_timeout(Duration::from_secs(5)),
        )
        .server(
            McpServerConfig::stdio("ghost", "/nonexistent/mcp-server")
                .startup_timeout(Duration::from_secs(5)),
        );
    let mcp = McpExtension::connect(config).await.unwrap();
    assert!(!mcp.tool_names("srv").is_empty());
    for server in ["web", "ghost"] {
        let Some(ServerStatus::Down { reason }) = mcp.status(server) else {
            panic!("{server}: {:?}", mcp.status(server));
        };
        assert!(
            !reason.is_empty() && (server != "ghost" || reason.contains("/nonexistent/mcp-server")),
            "{server}: {reason}"
        );
        assert!(mcp.tool_names(server).is_empty(), "{server}");
    }
    let bridged = Bridged::new(&mcp);
    let catalog = bridged.agent.base_catalog().unwrap();
    assert!(catalog.get("web__echo").is_none());
    let refused = bridged.call("web__echo", json!({"message": "hi"})).await;
    assert_eq!(
        refused.error_code(),
        Some("E_TOOL_NOT_IN_CATALOG"),
        "{refused:?}"
    );

    let Some(mut server) = server_everything_on(port).await else {
        panic!("port {port} was taken meanwhile");
    };
    let waited = Instant::now();
    while !bridged.agent.registry().contains("web__echo") {
        assert!(
            waited.elapsed() < Duration::from_secs(60),
            "web's tools did not come: {:?}",
            mcp.status("web")
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(matches!(mcp.status("web"), Some(ServerStatus::Up { .. })));
    let echoed = bridged.call("web__echo", json!({"message": "late"})).await;
    assert!(echoed.is_ok(), "{echoed:?}");
    assert!(matches!(
        mcp.status("ghost"),
        Some(ServerStatus::Down { .. })
    ));
    mcp.shutdown();
    server.kill().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_streamable_http_server_everything_is_bridged_by_url() {
    let (mut child, port) = server_everything_over_http().await;
    let server = McpServerConfig::http("web", format!("http://127.0.0.1:{port}/mcp"))
        .header("X-Goondan-Test", "yes")
        .include(["echo"]);
    let mcp = McpExtension::connect(McpExtensionConfig::new("t").server(server))
        .await
        .unwrap();
    assert_eq!(mcp.tool_names("web"), ["web__echo"]);
    let bridged = Bridged::new(&mcp);
    let echoed = bridged
        .call("web__echo", json!({"message": "over http"}))
        .await;
    assert!(echoed.is_ok(), "{echoed:?}");
    assert!(
        echoed
            .output
            .as_ref()
            .and_then(Value::as_str)
            .unwrap_or_default()
            .contains("over http")
    );
    mcp.shutdown();
    child.kill().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_streamable_http_headers_go_with_the_requests_and_a_refusing_required_server_fails_connect()
 {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let seen = tokio::spawn(async move {
        let (mut socket, _) = listener.accept().await.unwrap();
        let mut request = Vec::new();
        let mut buf = [0u8; 4096];
        while !request.windows(4).any(|w| w == b"\r\n\r\n") {
            let n = socket.read(&mut buf).await.unwrap();
            if n == 0 {
                break;
            }
            request.extend_from_slice(&buf[..n]);
        }
        let _ = socket
            .write_all(b"HTTP/1.1 403 Forbidden\r\ncontent-length: 0\r\nconnection: close\r\n\r\n")
            .await;
        String::from_utf8_lossy(&request).to_lowercase()
    });
    let server = McpServerConfig::http("web", format!("http://127.0.0.1:{port}/mcp"))
        .header("Authorization", "Bearer sesame")
        .header("X-Goondan-Test", "yes")
        .startup_timeout(Duration::from_secs(5))
        .required(true);
    let started = Instant::now();
    let err = McpExtension::connect(McpExtensionConfig::new("t").server(server))
        .await
        .unwrap_err();
    assert!(started.elapsed() < Duration::from_secs(6));
    assert!(err.to_string().contains("`web`"), "{err}");
    let request = seen.await.unwrap();
    assert!(
        request.contains("authorization: bearer sesame"),
        "{request}"
    );
    assert!(request.contains("x-goondan-test: yes"), "{request}");
}

/// Checks the `calc` tool of `goondan-test-mcp-server goondan` (our server) through our client,
/// where the server is called `server`.
async fn check_our_calc(mcp: &McpExtension, server: &str) {
    let bridged = Bridged::new(mcp);
    let add = local_name(server, "calc__add");
    let div = local_name(server, "calc__div");
    let later = local_name(server, "calc__later");
    assert!(add.mapped, "a Goondan name holds `__`, so it is mapped");
    let mut names = mcp.tool_names(server);
    names.sort();
    let mut expected = vec![add.full.clone(), div.full.clone(), later.full.clone()];
    expected.sort();
    assert_eq!(names, expected);
    // The schema travels: the executor validates against it before the call.
    let catalog = bridged.agent.base_catalog().unwrap();
    assert_eq!(
        catalog.get(&add.full).unwrap().parameters().unwrap()["required"],
        json!(["a", "b"])
    );
    let refused = bridged.call(&add.full, json!({"a": "two", "b": 3})).await;
    assert_eq!(
        refused.error_code(),
        Some("E_TOOL_INVALID_ARGS"),
        "{refused:?}"
    );

    let sum = bridged.call(&add.full, json!({"a": 2, "b": 3})).await;
    assert!(sum.is_ok(), "{sum:?}");
    assert_eq!(sum.output, Some(json!({"result": 5})));

    let failed = bridged.call(&div.full, json!({"a": 1, "b": 0})).await;
    assert_eq!(failed.error_code(), Some("E_MCP_TOOL_ERROR"), "{failed:?}");
    let message = failed.error.as_ref().unwrap().message();
    assert!(
        message.contains("E_CALC_DIV_ZERO") && message.contains("cannot divide 1 by zero"),
        "{message}"
    );

    // A pending result there is an MCP task on the wire and a pending handle here.
    let submitted = bridged.call(&later.full, json!({"ms": 100})).await;
    assert!(submitted.is_pending(), "{submitted:?}");
    let done = tokio::time::timeout(
        Duration::from_secs(10),
        bridged
            .executor
            .pending()
            .wait(submitted.handle.as_deref().unwrap()),
    )
    .await
    .unwrap()
    .unwrap();
    assert_eq!(done.output, Some(json!({"result": 100})), "{done:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_our_server_over_stdio_bridged_by_our_client_end_to_end() {
    let server = test_server("ours").arg("goondan");
    let mcp = McpExtension::connect(McpExtensionConfig::new("t").server(server))
        .await
        .unwrap();
    check_our_calc(&mcp, "ours").await;
    mcp.shutdown();
}

/// Adds two numbers (served over Streamable HTTP by our server).
#[goondan_runtime::tool(name = "calc")]
pub fn add(a: i64, b: i64) -> i64 {
    a + b
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_our_server_over_streamable_http_bridged_by_our_client_end_to_end() {
    let registry = Arc::new(ToolRegistry::builder().tool(add::TOOL).build().unwrap());
    let http = goondan_runtime::mcp::server::McpServer::builder(registry)
        .build()
        .unwrap()
        .serve_http("127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    let mcp = McpExtension::connect(
        McpExtensionConfig::new("t").server(McpServerConfig::http("ours", http.url())),
    )
    .await
    .unwrap();
    let bridged = Bridged::new(&mcp);
    let add = local_name("ours", "calc__add");
    let sum = bridged.call(&add.full, json!({"a": 20, "b": 22})).await;
    assert_eq!(sum.output, Some(json!({"result": 42})), "{sum:?}");
    mcp.shutdown();
    http.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_server_that_will_not_restart_gives_e_mcp_unavailable_within_its_startup_timeout_then_comes_back()
 {
    let dir = tempfile::tempdir().unwrap();
    let refuse = dir.path().join("refuse");
    let server = test_server("srv")
        .env("MCP_TEST_REFUSE_FILE", refuse.display().to_string())
        .startup_timeout(Duration::from_millis(1500));
    let mcp = McpExtension::connect(McpExtensionConfig::new("t").server(server))
        .await
        .unwrap();
    let bridged = Bridged::new(&mcp);
    let first = pid(&mcp, "srv");
    std::fs::write(&refuse, "").unwrap();
    std::process::Command::new("kill")
        .args(["-9", &first.to_string()])
        .status()
        .unwrap();
    eventually("the failed restart", || {
        matches!(mcp.status("srv"), Some(ServerStatus::Down { reason }) if reason.contains("handshake"))
    })
    .await;

    let started = Instant::now();
    let failed = bridged.call("srv__fail", json!({"message": "x"})).await;
    assert!(
        started.elapsed() < Duration::from_secs(4),
        "bounded by the startup timeout"
    );
    assert_eq!(failed.error_code(), Some("E_MCP_UNAVAILABLE"), "{failed:?}");
    let error = failed.error.as_ref().unwrap();
    assert!(
        error.message().contains("`srv` is not running"),
        "{error:?}"
    );
    assert!(error.suggestion().is_some());

    // Restarts go on with backoff; once the server can start, it is back.
    std::fs::remove_file(&refuse).unwrap();
    eventually(
        "the restart",
        || matches!(mcp.status("srv"), Some(ServerStatus::Up { pid: Some(p) }) if p != first),
    )
    .await;
    let back = bridged.call("srv__fail", json!({"message": "back"})).await;
    assert_eq!(back.error_code(), Some("E_MCP_TOOL_ERROR"), "{back:?}");
    mcp.shutdown();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_bridged_calls_pass_the_executors_middleware_and_long_remote_errors_are_truncated() {
    let mcp = McpExtension::connect(McpExtensionConfig::new("t").server(test_server("srv")))
        .await
        .unwrap();
    let bridged = Bridged::new(&mcp);
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let record = Arc::clone(&seen);
    let executor = ToolExecutor::builder(Arc::clone(bridged.agent.registry()))
        .middleware(goondan_runtime::from_fn(move |call, next| {
            record.lock().unwrap().push(call.tool_name().to_owned());
            next.run(call)
        }))
        .build();
    let catalog = bridged.agent.base_catalog().unwrap();
    let ctx = ToolContext::builder(bridged.agent.workdir()).build();
    let long = "x".repeat(3000);
    let failed = executor
        .execute(
            ToolCall::new("c1", "srv__fail", json!({"message": long})),
            &ctx,
            &catalog,
        )
        .await;
    assert_eq!(failed.error_code(), Some("E_MCP_TOOL_ERROR"));
    let message = failed.error.as_ref().unwrap().message();
    assert!(message.ends_with("... (truncated)"), "{message}");
    assert!(
        message.chars().count() <= 1000,
        "{}",
        message.chars().count()
    );
    assert_eq!(*seen.lock().unwrap(), ["srv__fail"]);
    mcp.shutdown();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_server_stops_when_the_extension_and_the_agents_using_it_are_dropped() {
    let mcp = McpExtension::connect(McpExtensionConfig::new("t").server(test_server("srv")))
        .await
        .unwrap();
    let bridged = Bridged::new(&mcp);
    let sum = bridged.call("srv__where", json!({})).await;
    assert!(sum.is_ok(), "{sum:?}");
    let server = pid(&mcp, "srv");
    drop(bridged);
    drop(mcp);
    eventually("the server process to end", || {
        !Path::new(&format!("/proc/{server}")).exists()
            || std::fs::read_to_string(format!("/proc/{server}/stat"))
                .is_ok_and(|s| s.split_whitespace().nth(2) == Some("Z"))
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_bundle_resolves_a_relative_command_and_cwd_against_the_bundles_directory() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("bin")).unwrap();
    std::fs::create_dir(dir.path().join("work")).unwrap();
    std::os::unix::fs::symlink(
        env!("CARGO_BIN_EXE_goondan-test-mcp-server"),
        dir.path().join("bin/server"),
    )
    .unwrap();
    let yaml = r#"
apiVersion: goondan.ai/v1
kind: Extension
metadata: {name: local}
spec:
  mcp:
    servers:
      - name: srv
        command: ./bin/server
        cwd: work
        env: {MCP_TEST_GREETING: from the bundle}
        include: [where]
"#;
    std::fs::write(dir.path().join("goondan.yaml"), yaml).unwrap();
    let bundle = Bundle::load(dir.path()).unwrap();
    let config = bundle.mcp_extension("local").unwrap();
    let mcp = McpExtension::connect(config).await.unwrap();
    let bridged = Bridged::new(&mcp);
    let output = bridged.call("srv__where", json!({})).await.output.unwrap();
    assert_eq!(output["greeting"], "from the bundle");
    assert_eq!(
        Path::new(output["cwd"].as_str().unwrap())
            .canonicalize()
            .unwrap(),
        dir.path().join("work").canonicalize().unwrap()
    );
    mcp.shutdown();
}

/// The image a bridged server answers with comes through unchanged, as a
/// content part of the result (server-everything's `get-tiny-image`), with its text as the
/// output; and the model's provider gets it in its own shape.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_bridged_images_come_through_unchanged_as_content_parts() {
    use base64::Engine as _;
    use goondan_runtime::tools::content::Content;
    let dir = tempfile::tempdir().unwrap();
    let (bundle, mcp) = everything(dir.path()).await;
    let model = Arc::new(ScriptedModel::new([
        ModelResponse::calls([ToolCall::new("c1", "everything__get-tiny-image", json!({}))]),
        ModelResponse::text("done"),
    ]));
    let state = tempfile::tempdir().unwrap();
    let agent = AgentInstance::from_bundle(&bundle, "helper", Arc::new(ToolRegistry::new()), model)
        .unwrap()
        .state_dir(state.path())
        .extension(mcp.clone())
        .build()
        .unwrap();
    let turn = agent.run_turn("show me").await.unwrap();
    let result = &turn.steps[0].results[0];
    assert!(result.is_ok(), "{result:?}");
    // The bytes the server sent, read from its own source.
    let source = std::fs::read_to_string(
        mcp_peers::peer("mcp-server-everything")
            .canonicalize()
            .unwrap()
            .parent()
            .unwrap()
            .join("tools/get-tiny-image.js"),
    )
    .unwrap();
    let sent = source
        .split("MCP_TINY_IMAGE = \"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .unwrap();
    let images: Vec<&Content> = result
        .content
        .iter()
        .filter(|c| matches!(c, Content::Image(_)))
        .collect();
    assert_eq!(images.len(), 1, "{:?}", result.content);
    let Content::Image(image) = images[0] else {
        unreachable!()
    };
    assert_eq!(image.mime_type, "image/png");
    assert_eq!(
        base64::engine::general_purpose::STANDARD.encode(&image.data),
        sent
    );
    assert!(
        result
            .output
            .as_ref()
            .and_then(Value::as_str)
            .is_some_and(|t| t.contains("Here's the image you requested")),
        "{:?}",
        result.output
    );
    mcp.shutdown();
}

/// A bridged server whose tools' names are the agent's own (the server's
/// name is the resource of one of its tools). The registry keeps a resource to one source:
/// each of that server's tools is refused with a warning naming the server and both sources,
/// the names keep meaning the agent's own tools, and the extension's other server is bridged.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_a_bridged_name_that_collides_with_our_own_tool_is_refused_naming_the_server_and_ours_stays()
 {
    use goondan_runtime::tools::tool::{SourceKind, ToolSource};
    let mcp = McpExtension::connect(
        McpExtensionConfig::new("t")
            .server(test_server("local"))
            .server(test_server("other")),
    )
    .await
    .unwrap();
    let registry = Arc::new(ToolRegistry::new());
    registry
        .register_item(
            "local__where",
            Some("Ours.".into()),
            json!({"type": "object"}),
            goondan_runtime::handler_fn(|_ctx, _args| async {
                Ok::<_, goondan_runtime::ToolError>("our own")
            }),
            ToolSource::config("local"),
        )
        .unwrap();
    let state = tempfile::tempdir().unwrap();
    let log = Captured::default();
    let writer = log.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(move || writer.clone())
        .with_ansi(false)
        .finish();
    let agent = tracing::subscriber::with_default(subscriber, || {
        AgentInstance::builder(
            "helper",
            Arc::clone(&registry),
            Arc::new(ScriptedModel::new([])),
        )
        .state_dir(state.path())
        .extension(mcp.clone())
        .build()
        .unwrap()
    });
    let log = log.text();
    let refused = log
        .lines()
        .filter(|l| {
            l.contains("WARN")
                && l.contains("server=\"local\"")
                && l.contains("defined twice: by tool `local` and by MCP bridge `t`")
        })
        .count();
    assert_eq!(refused, mcp.tool_names("local").len(), "{log}");
    let ours = registry.get("local__where").unwrap();
    assert_eq!(ours.resource().source().kind, SourceKind::Config);
    assert!(registry.get("local__wait").is_none());
    let theirs = registry.get("other__wait").unwrap();
    assert_eq!(theirs.resource().source().kind, SourceKind::Mcp);
    let executor = ToolExecutor::new(Arc::clone(&registry));
    let catalog = agent.base_catalog().unwrap();
    let ctx = ToolContext::builder(agent.workdir()).build();
    let result = executor
        .execute(
            ToolCall::new("c1", "local__where", json!({})),
            &ctx,
            &catalog,
        )
        .await;
    assert_eq!(result.output, Some(json!("our own")), "{result:?}");
    let result = executor
        .execute(
            ToolCall::new("c2", "other__wait", json!({"ms": 1})),
            &ctx,
            &catalog,
        )
        .await;
    assert!(result.is_ok(), "{result:?}");
    mcp.shutdown();
}

/// The audio a bridged server answers with (our test server's `audio`)
/// comes through the bridge unchanged, as a content part beside its text; Gemini's dialect
/// gives the model the sound itself (inline data of the `functionResponse`), and the dialects
/// of the providers that take no audio in a tool result tell the model what was there.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_bridged_audio_comes_through_unchanged_and_every_provider_s_dialect_carries_or_names_it()
 {
    use base64::Engine as _;
    use goondan_runtime::dialect::Dialect;
    use goondan_runtime::tools::content::Content;
    let sent = "UklGRiwAAABXQVZFZm10IBAAAAABAAEAQB8AAIA+AAACABAAZGF0YQgAAAAAAP9/AID/fw==";
    let mcp = McpExtension::connect(McpExtensionConfig::new("t").server(test_server("local")))
        .await
        .unwrap();
    let result = Bridged::new(&mcp).call("local__audio", json!({})).await;
    assert!(result.is_ok(), "{result:?}");
    let Some(Content::Audio(audio)) = result
        .content
        .iter()
        .find(|c| matches!(c, Content::Audio(_)))
    else {
        panic!("an audio part: {:?}", result.content);
    };
    assert_eq!(audio.mime_type, "audio/wav");
    assert_eq!(
        base64::engine::general_purpose::STANDARD.encode(&audio.data),
        sent
    );
    let gemini = Dialect::GEMINI.render_result(&result);
    let parts = gemini["functionResponse"]["parts"].as_array().unwrap();
    assert_eq!(
        parts[0]["inlineData"],
        json!({"mimeType": "audio/wav", "data": sent})
    );
    for dialect in [
        Dialect::OPENAI_CHAT,
        Dialect::OPENAI_RESPONSES,
        Dialect::ANTHROPIC,
    ] {
        let shown = dialect.render_result(&result).to_string();
        assert!(
            shown.contains("a short beep") && shown.contains("[audio audio/wav"),
            "{dialect:?}: {shown}"
        );
        assert!(
            !shown.contains(sent),
            "{dialect:?} sends audio it takes none of"
        );
    }
    mcp.shutdown();
}

/// The resources a bridged server answers with, embedded and linked
/// (server-everything's `get-resource-reference` and `get-resource-links`), are content parts
/// of the result, and every provider's dialect shows them to the model.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_bridged_resources_and_links_are_content_parts_every_provider_shows_the_model() {
    use goondan_runtime::dialect::Dialect;
    use goondan_runtime::tools::content::Content;
    let dir = tempfile::tempdir().unwrap();
    let (_bundle, mcp) = everything(dir.path()).await;
    let bridged = Bridged::new(&mcp);
    let embedded = bridged
        .call(
            "everything__get-resource-reference",
            json!({"resourceType": "Text", "resourceId": 2}),
        )
        .await;
    assert!(embedded.is_ok(), "{embedded:?}");
    let Some(Content::Resource(resource)) = embedded
        .content
        .iter()
        .find(|c| matches!(c, Content::Resource(_)))
    else {
        panic!("an embedded resource part: {:?}", embedded.content);
    };
    let uri = resource.uri.clone();
    assert!(uri.ends_with("/2"), "{uri}");
    let linked = bridged
        .call("everything__get-resource-links", json!({"count": 2}))
        .await;
    assert!(linked.is_ok(), "{linked:?}");
    let links: Vec<String> = linked
        .content
        .iter()
        .filter_map(|c| match c {
            Content::Link(l) => Some(l.uri.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(links.len(), 2, "{:?}", linked.content);
    for dialect in [
        Dialect::OPENAI_CHAT,
        Dialect::OPENAI_RESPONSES,
        Dialect::ANTHROPIC,
        Dialect::GEMINI,
    ] {
        let shown = dialect.render_result(&embedded).to_string();
        assert!(
            shown.contains(&uri),
            "{dialect:?} hides the resource: {shown}"
        );
        let shown = dialect.render_result(&linked).to_string();
        for link in &links {
            assert!(
                shown.contains(link.as_str()),
                "{dialect:?} hides {link}: {shown}"
            );
        }
    }
    mcp.shutdown();
}

/// A person who fills every form with the name "Ada" and the schema's defaults.
struct Ada;

impl goondan_runtime::tools::context::Caller for Ada {
    fn can_answer(&self, question: &goondan_runtime::tools::context::Question) -> bool {
        question.capability() == "elicitation"
    }

    fn ask(
        &self,
        _key: Option<&str>,
        question: goondan_runtime::tools::context::Question,
    ) -> goondan_runtime::tools::context::AnswerFuture {
        let goondan_runtime::tools::context::Question::Elicit { schema, .. } = question else {
            return Box::pin(async {
                Err(goondan_runtime::tools::context::AskError::Unsupported {
                    capability: "sampling",
                })
            });
        };
        let mut content = serde_json::Map::new();
        for (name, property) in schema["properties"]
            .as_object()
            .cloned()
            .unwrap_or_default()
        {
            if let Some(default) = property.get("default") {
                content.insert(name, default.clone());
            }
        }
        content.insert("name".into(), json!("Ada"));
        Box::pin(async move { Ok(json!({"action": "accept", "content": content})) })
    }

    fn log(&self, _level: goondan_runtime::tools::context::LogLevel, _data: Value) {}
}

/// A bridged server that asks mid-call (server-everything's
/// `trigger-sampling-request` and `trigger-elicitation-request`) is answered as our own tools'
/// questions are: sampling by the agent's own model, within the request's `maxTokens`; the
/// form by the person the host gave. A server the bundle does not let sample is not told it
/// may (server-everything then offers no sampling tool).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_a_bridged_server_s_sampling_goes_to_the_agent_s_model_and_its_form_to_the_person() {
    let dir = tempfile::tempdir().unwrap();
    let (bundle, mcp) = everything(dir.path()).await;
    assert!(
        mcp.tool_names("everything")
            .contains(&"everything__trigger-sampling-request".to_owned())
    );
    let model = Arc::new(ScriptedModel::new([
        ModelResponse::calls([ToolCall::new(
            "c1",
            "everything__trigger-sampling-request",
            json!({"prompt": "name a colour", "maxTokens": 12}),
        )]),
        // The server's sampling request, answered by the agent's own model.
        ModelResponse::text("vermilion"),
        ModelResponse::calls([ToolCall::new(
            "c2",
            "everything__trigger-elicitation-request",
            json!({}),
        )]),
        ModelResponse::text("done"),
    ]));
    let state = tempfile::tempdir().unwrap();
    let agent = AgentInstance::from_bundle(
        &bundle,
        "helper",
        Arc::new(ToolRegistry::new()),
        Arc::clone(&model) as _,
    )
    .unwrap()
    .state_dir(state.path())
    .extension(mcp.clone())
    .person(Arc::new(Ada))
    .build()
    .unwrap();
    let turn = agent.run_turn("go").await.unwrap();
    let sampled = &turn.steps[0].results[0];
    assert!(sampled.is_ok(), "{sampled:?}");
    let text = sampled
        .output
        .as_ref()
        .and_then(Value::as_str)
        .unwrap_or_default();
    assert!(text.contains("vermilion"), "{text}");
    let asked = &model.requests()[1];
    assert_eq!(asked.max_tokens, Some(12));
    assert!(
        asked.messages[0]
            .content
            .as_deref()
            .is_some_and(|t| t.contains("name a colour")),
        "{asked:?}"
    );
    let filled = &turn.steps[1].results[0];
    assert!(filled.is_ok(), "{filled:?}");
    // Several text blocks: the output is the blocks as MCP wrote them.
    let text = filled
        .output
        .as_ref()
        .map(Value::to_string)
        .unwrap_or_default();
    assert!(
        text.contains("User provided the requested information") && text.contains("Ada"),
        "{text}"
    );
    mcp.shutdown();

    // `sampling: false`: the server is not told it may sample, so it offers no such tool.
    let yaml = std::fs::read_to_string(dir.path().join("goondan.yaml"))
        .unwrap()
        .replace(
            "callTimeoutMs: 60000",
            "callTimeoutMs: 60000\n        sampling: false",
        );
    std::fs::write(dir.path().join("goondan.yaml"), yaml).unwrap();
    let bundle = Bundle::load(dir.path().join("goondan.yaml")).unwrap();
    let mcp = McpExtension::connect(bundle.mcp_extension("mcp").unwrap())
        .await
        .unwrap();
    let names = mcp.tool_names("everything");
    assert!(names.contains(&"everything__echo".to_owned()), "{names:?}");
    assert!(!names.iter().any(|n| n.contains("sampling")), "{names:?}");
    mcp.shutdown();
}

/// A server whose `tools/list` never ends is refused with an error that
/// names it, quickly, instead of filling memory; a result past the transport's 16 MiB bound
/// is dropped by the transport, the call ends as data within its timeout, and the server
/// keeps serving.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_an_endless_tool_list_is_refused_and_an_oversized_result_is_bounded() {
    let endless = test_server("srv")
        .env("MCP_TEST_ENDLESS_LIST", "1")
        .required(true);
    let started = Instant::now();
    let err = McpExtension::connect(McpExtensionConfig::new("t").server(endless))
        .await
        .unwrap_err();
    let message = err.to_string();
    assert!(
        message.contains("`srv`") && message.contains("more than 64 pages"),
        "{message}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "{:?}",
        started.elapsed()
    );

    let server = test_server("srv").call_timeout(Duration::from_secs(3));
    let mcp = McpExtension::connect(McpExtensionConfig::new("t").server(server))
        .await
        .unwrap();
    let bridged = Bridged::new(&mcp);
    let fits = bridged.call("srv__huge", json!({"mib": 2})).await;
    assert!(fits.is_ok(), "{:?}", fits.error);
    let oversized = bridged.call("srv__huge", json!({"mib": 20})).await;
    assert_eq!(
        oversized.error_code(),
        Some("E_TOOL_TIMEOUT"),
        "{:?}",
        oversized.error
    );
    let after = bridged.call("srv__where", json!({})).await;
    assert!(after.is_ok(), "{after:?}");
    mcp.shutdown();
}

/// Multiplies two numbers (registered on our server while it serves).
#[goondan_runtime::tool(name = "times")]
pub fn mul(a: i64, b: i64) -> i64 {
    a * b
}

/// One extension bridges a 2025-11-25 server (server-everything over stdio,
/// the `initialize` handshake) and a 2026-07-28 stateless server (ours over Streamable HTTP,
/// `server/discover` and metadata in every request); on the new revision, the tools our
/// server registers while it serves arrive through `subscriptions/listen`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_one_extension_speaks_2025_11_25_and_2026_07_28_and_hears_list_changes_through_subscriptions_listen()
 {
    let registry = Arc::new(ToolRegistry::builder().tool(add::TOOL).build().unwrap());
    let http = goondan_runtime::mcp::server::McpServer::builder(Arc::clone(&registry))
        .build()
        .unwrap()
        .serve_http("127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    let everything = McpServerConfig::stdio("everything", mcp_peers::peer("node"))
        .arg(
            mcp_peers::peer("mcp-server-everything")
                .display()
                .to_string(),
        )
        .arg("stdio")
        .protocol_version("2025-11-25");
    let ours = McpServerConfig::http("ours", http.url()).protocol_version("2026-07-28");
    let mcp = McpExtension::connect(McpExtensionConfig::new("t").server(everything).server(ours))
        .await
        .unwrap();
    let bridged = Bridged::new(&mcp);
    let echo = bridged
        .call("everything__echo", json!({"message": "old revision"}))
        .await;
    assert!(echo.is_ok(), "{echo:?}");
    let add = local_name("ours", "calc__add");
    let sum = bridged.call(&add.full, json!({"a": 20, "b": 22})).await;
    assert_eq!(sum.output, Some(json!({"result": 42})), "{sum:?}");

    // A tool registered while our server serves: a notification on the listen stream, a new
    // listing, a new bridged tool.
    registry.register(mul::TOOL).unwrap();
    let times = local_name("ours", "times__mul");
    eventually("the new tool is bridged", || {
        mcp.tool_names("ours").contains(&times.full)
    })
    .await;
    let bridged = Bridged::new(&mcp);
    let product = bridged.call(&times.full, json!({"a": 6, "b": 7})).await;
    assert_eq!(product.output, Some(json!({"result": 42})), "{product:?}");
    mcp.shutdown();
    http.shutdown().await.unwrap();
}

/// On 2026-07-28 a listing is used for its `ttlMs` (a change the server
/// does not announce is not seen, and the server is not asked again), then listed again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_a_2026_07_28_listing_is_reused_within_its_ttl_and_listed_again_after_it() {
    let dir = tempfile::tempdir().unwrap();
    let listings = |log: &Path| {
        std::fs::read_to_string(log)
            .unwrap_or_default()
            .lines()
            .filter(|l| *l == "listed")
            .count()
    };
    let server = |ttl: &str, log: &Path| {
        test_server("srv")
            .protocol_version("2026-07-28")
            .env("MCP_TEST_TTL_MS", ttl)
            .env("MCP_TEST_LOG", log.display().to_string())
    };
    let quiet = json!({"name": "quiet-one", "quiet": true});
    let added = local_name("srv", "quiet-one").full;

    // Fresh for a minute: the quiet change stays unseen, and nothing is listed again.
    let long = dir.path().join("long.log");
    let mcp = McpExtension::connect(McpExtensionConfig::new("t").server(server("60000", &long)))
        .await
        .unwrap();
    let changed = Bridged::new(&mcp)
        .call("srv__add-tool", quiet.clone())
        .await;
    assert!(changed.is_ok(), "{changed:?}");
    tokio::time::sleep(Duration::from_millis(2500)).await;
    assert!(!mcp.tool_names("srv").contains(&added));
    assert_eq!(listings(&long), 1);
    mcp.shutdown();

    // Fresh for 300 ms: listed again (at most once a second), and the change arrives.
    let short = dir.path().join("short.log");
    let mcp = McpExtension::connect(McpExtensionConfig::new("t").server(server("300", &short)))
        .await
        .unwrap();
    let changed = Bridged::new(&mcp).call("srv__add-tool", quiet).await;
    assert!(changed.is_ok(), "{changed:?}");
    eventually("the quietly added tool is listed", || {
        mcp.tool_names("srv").contains(&added)
    })
    .await;
    assert!(listings(&short) >= 2);
    mcp.shutdown();
}

/// A raw stdio MCP server in Python that answers `initialize` well and then `tools/list` with
/// something an agent cannot take whole. `deep`: the tools `fine`, `deep` (whose schema nests
/// 5,000 levels) and `answers-deep` (whose answer nests 1,000,000 levels). `many`: 100,000
/// tools in one page. `clash`: `a.b`, `a_b-` and the hash `a.b` is mapped with (so both would
/// be `{server}__a_b-…`), and `other`. Any other call answers `served {name}`.
const HOSTILE_SERVER: &str = r#"
import json, sys
mode = sys.argv[1]
def fnv1a(s):
    h = 0x811c9dc5
    for b in s.encode():
        h = ((h ^ b) * 0x01000193) & 0xffffffff
    return "%08x" % h
def nested(levels):
    return "[" * (levels - 1) + "{}" + "]" * (levels - 1)
def send(text):
    sys.stdout.write(text + "\n")
    sys.stdout.flush()
plain = {"type": "object"}
for line in sys.stdin:
    msg = json.loads(line)
    if "id" not in msg:
        continue
    method = msg.get("method")
    rid = json.dumps(msg["id"])
    if method == "initialize":
        result = {"protocolVersion": msg["params"]["protocolVersion"],
                  "capabilities": {"tools": {}},
                  "serverInfo": {"name": "hostile", "version": "1"}}
    elif method == "tools/list" and mode == "deep":
        tools = [json.dumps({"name": "fine", "inputSchema": plain}),
                 '{"name":"deep","inputSchema":{"type":"object","properties":{"x":%s}}}' % nested(5000),
                 json.dumps({"name": "answers-deep", "inputSchema": plain})]
        send('{"jsonrpc":"2.0","id":%s,"result":{"tools":[%s]}}' % (rid, ",".join(tools)))
        continue
    elif method == "tools/call" and msg["params"]["name"] == "answers-deep":
        send('{"jsonrpc":"2.0","id":%s,"result":{"content":[],"structuredContent":{"x":%s}}}'
             % (rid, nested(1000000)))
        continue
    elif method == "tools/list" and mode == "many":
        result = {"tools": [{"name": "t%d" % i, "inputSchema": plain} for i in range(100000)]}
    elif method == "tools/list":
        names = ("a.b", "a_b-" + fnv1a("a.b"), "other")
        result = {"tools": [{"name": n, "inputSchema": plain} for n in names]}
    elif method == "tools/call":
        result = {"content": [{"type": "text", "text": "served " + msg["params"]["name"]}]}
    else:
        result = {}
    send(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result}))
"#;

/// The stdio server `name` running [`HOSTILE_SERVER`] in `mode`, the script written in `dir`.
fn hostile(dir: &Path, name: &str, mode: &str) -> McpServerConfig {
    let script = dir.join("hostile.py");
    std::fs::write(&script, HOSTILE_SERVER).unwrap();
    McpServerConfig::stdio(name, "python3")
        .args([script.display().to_string(), mode.to_owned()])
        .startup_timeout(Duration::from_secs(10))
}

/// A tool whose schema nests 5,000 levels is left out, named with why (by
/// [`McpExtension::left_out`] and a warning), and its server's other tools serve on the same
/// connection; an answer nested 1,000,000 levels ends its call at once with a structured error,
/// and the server stays up in the same process.
#[tokio::test]
async fn mcp_a_tool_whose_schema_nests_5000_deep_is_left_out_named_and_its_server_s_other_tools_serve()
 {
    let dir = tempfile::tempdir().unwrap();
    let log = Captured::default();
    // The runtime is this thread alone, so the warnings of every task go to `log`.
    let _logging = tracing::subscriber::set_default(log.subscriber());
    let config = McpExtensionConfig::new("t")
        .server(hostile(dir.path(), "deep", "deep").call_timeout(Duration::from_secs(30)));
    let mcp = McpExtension::connect(config).await.unwrap();
    let first = pid(&mcp, "deep");
    assert_eq!(mcp.tool_names("deep"), ["deep__answers-deep", "deep__fine"]);
    let left_out = mcp.left_out("deep");
    assert_eq!(left_out.len(), 1, "{left_out:?}");
    assert_eq!(left_out[0].name, "deep");
    assert!(
        left_out[0].reason.contains("nests 5003 levels deep"),
        "{left_out:?}"
    );
    let warned = log.text();
    assert!(
        warned
            .lines()
            .any(|l| l.contains("WARN") && l.contains("`deep` is left out")),
        "{warned}"
    );

    let bridged = Bridged::new(&mcp);
    let catalog = bridged.agent.base_catalog().unwrap();
    assert!(catalog.get("deep__deep").is_none());
    let fine = bridged.call("deep__fine", json!({})).await;
    assert_eq!(fine.output, Some(json!("served fine")), "{fine:?}");
    let started = Instant::now();
    let deep = bridged.call("deep__answers-deep", json!({})).await;
    assert!(started.elapsed() < Duration::from_secs(10));
    assert_eq!(deep.error_code(), Some("E_MCP_REMOTE"), "{deep:?}");
    let message = deep.error.as_ref().unwrap().message();
    assert!(message.contains("1000003 levels deep"), "{message}");
    assert_eq!(pid(&mcp, "deep"), first, "the connection survived");
    let again = bridged.call("deep__fine", json!({})).await;
    assert!(again.is_ok(), "{again:?}");
    mcp.shutdown();
}

/// A Streamable HTTP MCP server in Python that streams each answer as one server-sent event:
/// the tools `fine`, `deep` (its schema nests 5,000 levels) and `answers-deep` (its answer
/// nests 1,000,000 levels). It writes its port on its first line. With the argument `json`, it
/// answers with JSON bodies instead.
const HOSTILE_HTTP_SERVER: &str = r#"
import json, sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
def nested(levels):
    return "[" * (levels - 1) + "{}" + "]" * (levels - 1)
class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *args):
        pass
    def empty(self, status):
        self.send_response(status)
        self.send_header("Content-Length", "0")
        self.end_headers()
    def do_GET(self):
        self.empty(405)
    def do_DELETE(self):
        self.empty(200)
    def do_POST(self):
        msg = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
        if "id" not in msg:
            return self.empty(202)
        method = msg.get("method")
        if method == "initialize":
            result = json.dumps({"protocolVersion": msg["params"]["protocolVersion"],
                                 "capabilities": {"tools": {}},
                                 "serverInfo": {"name": "hostile", "version": "1"}})
        elif method == "tools/list":
            result = ('{"tools":[{"name":"fine","inputSchema":{"type":"object"}},'
                      '{"name":"deep","inputSchema":{"type":"object","properties":{"x":%s}}},'
                      '{"name":"answers-deep","inputSchema":{"type":"object"}}]}' % nested(5000))
        elif method == "tools/call" and msg["params"]["name"] == "answers-deep":
            result = '{"content":[],"structuredContent":{"x":%s}}' % nested(1000000)
        elif method == "tools/call":
            result = '{"content":[{"type":"text","text":"served %s"}]}' % msg["params"]["name"]
        else:
            result = "{}"
        reply = '{"jsonrpc":"2.0","id":%s,"result":%s}' % (json.dumps(msg["id"]), result)
        json_bodies = sys.argv[1:] == ["json"]
        data = (reply if json_bodies else "event: message\ndata: %s\n\n" % reply).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json" if json_bodies else "text/event-stream")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
print(server.server_address[1], flush=True)
server.serve_forever()
"#;

/// [`HOSTILE_HTTP_SERVER`] started with `args`, and its port.
async fn hostile_http(args: &[&str]) -> (tokio::process::Child, String) {
    use tokio::io::AsyncBufReadExt;
    let mut server = tokio::process::Command::new("python3")
        .args(["-c", HOSTILE_HTTP_SERVER])
        .args(args)
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = tokio::io::BufReader::new(server.stdout.take().unwrap()).lines();
    let port = lines.next_line().await.unwrap().unwrap();
    (server, port)
}

/// A Streamable HTTP server answering with JSON bodies is read inside rmcp's client, before
/// any screen: a listing nested too deep fails at once, so that server is left out with why
/// (not after its startup timeout) and the others serve.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_a_streamable_http_server_whose_json_listing_nests_too_deep_is_left_out_at_once_with_why()
 {
    let (mut server, port) = hostile_http(&["json"]).await;
    let config = McpExtensionConfig::new("t")
        .server(
            McpServerConfig::http("web", format!("http://127.0.0.1:{port}/mcp"))
                .startup_timeout(Duration::from_secs(20)),
        )
        .server(test_server("srv"));
    let started = Instant::now();
    let mcp = McpExtension::connect(config).await.unwrap();
    assert!(started.elapsed() < Duration::from_secs(10));
    let Some(ServerStatus::Down { reason }) = mcp.status("web") else {
        panic!("{:?}", mcp.status("web"));
    };
    assert!(reason.contains("tools/list"), "{reason}");
    let bridged = Bridged::new(&mcp);
    let served = bridged.call("srv__where", json!({})).await;
    assert!(served.is_ok(), "{served:?}");
    mcp.shutdown();
    server.kill().await.unwrap();
}

/// Over Streamable HTTP too, the events a server streams are screened before rmcp reads
/// them: the tool nested 5,000 levels is left out and named, the server's other tools serve,
/// and an answer nested 1,000,000 levels ends its call at once with a structured error.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_over_streamable_http_a_tool_nested_5000_deep_is_left_out_named_and_the_others_serve() {
    let (mut server, port) = hostile_http(&[]).await;
    let config = McpExtensionConfig::new("t").server(
        McpServerConfig::http("web", format!("http://127.0.0.1:{port}/mcp"))
            .startup_timeout(Duration::from_secs(10))
            .call_timeout(Duration::from_secs(30)),
    );
    let mcp = McpExtension::connect(config).await.unwrap();
    assert!(
        matches!(mcp.status("web"), Some(ServerStatus::Up { .. })),
        "{:?}",
        mcp.status("web")
    );
    assert_eq!(mcp.tool_names("web"), ["web__answers-deep", "web__fine"]);
    let left_out = mcp.left_out("web");
    assert_eq!(left_out.len(), 1, "{left_out:?}");
    assert_eq!(left_out[0].name, "deep");
    assert!(
        left_out[0].reason.contains("nests 5003 levels deep"),
        "{left_out:?}"
    );
    let bridged = Bridged::new(&mcp);
    let fine = bridged.call("web__fine", json!({})).await;
    assert_eq!(fine.output, Some(json!("served fine")), "{fine:?}");
    let started = Instant::now();
    let deep = bridged.call("web__answers-deep", json!({})).await;
    assert!(started.elapsed() < Duration::from_secs(10));
    assert_eq!(deep.error_code(), Some("E_MCP_REMOTE"), "{deep:?}");
    let message = deep.error.as_ref().unwrap().message();
    assert!(message.contains("1000003 levels deep"), "{message}");
    mcp.shutdown();
    server.kill().await.unwrap();
}

/// A server listing 100,000 tools is left out with why, and the extension starts with the
/// other server, whose tools work.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_a_server_listing_100_000_tools_is_left_out_with_why_and_the_others_serve() {
    let dir = tempfile::tempdir().unwrap();
    let config = McpExtensionConfig::new("t")
        .server(hostile(dir.path(), "many", "many"))
        .server(test_server("srv"));
    let mcp = McpExtension::connect(config).await.unwrap();
    let Some(ServerStatus::Down { reason }) = mcp.status("many") else {
        panic!("{:?}", mcp.status("many"));
    };
    assert!(reason.contains("more than 4096 tools"), "{reason}");
    assert!(mcp.tool_names("many").is_empty());
    let bridged = Bridged::new(&mcp);
    let names = mcp.tool_names("srv");
    let catalog = bridged.agent.base_catalog().unwrap();
    assert!(names.iter().all(|n| catalog.get(n).is_some()), "{names:?}");
    assert!(catalog.names().all(|n| n.starts_with("srv__")));
    let served = bridged.call("srv__where", json!({})).await;
    assert!(served.is_ok(), "{served:?}");
    mcp.shutdown();
}

/// A server listing `a.b` and the very name `a.b` is mapped to: neither may stand for the
/// other, so both are left out and named, whichever comes first, and its other tool serves.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_two_remote_tools_that_would_share_one_local_name_are_both_left_out_and_named() {
    let dir = tempfile::tempdir().unwrap();
    let mcp = McpExtension::connect(McpExtensionConfig::new("t").server(hostile(
        dir.path(),
        "clash",
        "clash",
    )))
    .await
    .unwrap();
    let mapped = local_name("clash", "a.b").full;
    assert!(mapped.starts_with("clash__a_b-"));
    assert_eq!(mcp.tool_names("clash"), ["clash__other"]);
    let left_out = mcp.left_out("clash");
    let mut names: Vec<_> = left_out.iter().map(|t| t.name.as_str()).collect();
    names.sort_unstable();
    assert_eq!(names, ["a.b", &mapped["clash__".len()..]], "{left_out:?}");
    assert!(
        left_out
            .iter()
            .all(|t| t.reason.contains(&format!("would all be `{mapped}`"))),
        "{left_out:?}"
    );
    let bridged = Bridged::new(&mcp);
    let refused = bridged.call(&mapped, json!({})).await;
    assert_eq!(
        refused.error_code(),
        Some("E_TOOL_NOT_IN_CATALOG"),
        "{refused:?}"
    );
    let other = bridged.call("clash__other", json!({})).await;
    assert_eq!(other.output, Some(json!("served other")), "{other:?}");
    mcp.shutdown();
}

/// Two servers with the same tools keep their own prefixes through a restart: after one is
/// killed and comes back in a new process, the names are still distinct, each is registered
/// to its own server, and each answers from its own server.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_two_servers_keep_their_own_names_across_a_restart_and_each_name_reaches_its_own_server()
 {
    use goondan_runtime::tools::tool::SourceKind;
    let config = McpExtensionConfig::new("t")
        .server(test_server("one").env("MCP_TEST_GREETING", "from one"))
        .server(test_server("two").env("MCP_TEST_GREETING", "from two"));
    let mcp = McpExtension::connect(config).await.unwrap();
    let bridged = Bridged::new(&mcp);
    let first = pid(&mcp, "one");
    let killed = std::process::Command::new("kill")
        .args(["-9", &first.to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    eventually(
        "`one` comes back in a new process",
        || matches!(mcp.status("one"), Some(ServerStatus::Up { pid: Some(p) }) if p != first),
    )
    .await;
    let one = mcp.tool_names("one");
    let two = mcp.tool_names("two");
    assert!(!one.is_empty());
    assert_eq!(
        one.iter().map(|n| &n["one__".len()..]).collect::<Vec<_>>(),
        two.iter().map(|n| &n["two__".len()..]).collect::<Vec<_>>()
    );
    assert!(one.iter().all(|n| !two.contains(n)));
    for (server, names) in [("one", &one), ("two", &two)] {
        for name in names {
            let entry = bridged.agent.registry().get(name).unwrap();
            let source = entry.resource().source();
            assert_eq!(source.kind, SourceKind::Mcp);
            assert_eq!(
                source.mcp.as_ref().and_then(|m| m.server_name.as_deref()),
                Some(server),
                "{name}"
            );
        }
        let answer = bridged.call(&format!("{server}__where"), json!({})).await;
        let output = answer.output.clone().unwrap_or_default();
        assert_eq!(output["greeting"], format!("from {server}"), "{answer:?}");
    }
    mcp.shutdown();
}

/// Two extensions bridging servers of one name: the one that comes up only after a
/// reconnection finds its names taken. Its tools are refused, each named with the registry's
/// error (by [`McpExtension::left_out`]), and every name keeps reaching the server that had it
/// first.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_names_that_collide_only_after_a_reconnection_are_refused_named_and_never_shadow_the_first()
 {
    use goondan_runtime::tools::tool::SourceKind;
    let dir = tempfile::tempdir().unwrap();
    let refuse = dir.path().join("refuse");
    std::fs::write(&refuse, "").unwrap();
    let late = McpExtension::connect(
        McpExtensionConfig::new("late").server(
            test_server("srv")
                .env("MCP_TEST_REFUSE_FILE", refuse.display().to_string())
                .env("MCP_TEST_GREETING", "from late"),
        ),
    )
    .await
    .unwrap();
    assert!(matches!(
        late.status("srv"),
        Some(ServerStatus::Down { .. })
    ));
    let first = McpExtension::connect(
        McpExtensionConfig::new("first")
            .server(test_server("srv").env("MCP_TEST_GREETING", "from first")),
    )
    .await
    .unwrap();
    let bridged = Bridged::of(&[&late, &first]);
    let registry = bridged.agent.registry();
    std::fs::remove_file(&refuse).unwrap();
    eventually("`late`'s server comes back", || {
        matches!(late.status("srv"), Some(ServerStatus::Up { .. }))
    })
    .await;
    eventually("`late`'s tools are refused", || {
        late.left_out("srv").len() == late.tool_names("srv").len()
    })
    .await;
    let names = late.tool_names("srv");
    assert_eq!(names, first.tool_names("srv"));
    for refused in late.left_out("srv") {
        assert!(
            refused.reason.contains("is refused")
                && refused.reason.contains("`first`")
                && refused.reason.contains("`late`"),
            "{refused:?}"
        );
    }
    for name in &names {
        let source = registry.get(name).unwrap().resource().source().clone();
        assert_eq!(source.kind, SourceKind::Mcp);
        assert_eq!(source.mcp.unwrap().extension_name, "first", "{name}");
    }
    let answer = bridged.call("srv__where", json!({})).await;
    let output = answer.output.clone().unwrap_or_default();
    assert_eq!(output["greeting"], "from first", "{answer:?}");
    late.shutdown();
    first.shutdown();
}

/// A stdio server that answers until it is asked `hang`; then it stops reading and answering
/// (a ping included), as a server stuck in a loop does.
const HANGING_SERVER: &str = r#"
import json, sys, time
for line in sys.stdin:
    msg = json.loads(line)
    if "id" not in msg:
        continue
    method = msg.get("method")
    if method == "initialize":
        result = {"protocolVersion": msg["params"]["protocolVersion"],
                  "capabilities": {"tools": {}},
                  "serverInfo": {"name": "hanging", "version": "1"}}
    elif method == "tools/list":
        result = {"tools": [{"name": n, "inputSchema": {"type": "object"}} for n in ("hang", "echo")]}
    elif method == "tools/call" and msg["params"]["name"] == "hang":
        time.sleep(3600)
    elif method == "tools/call":
        result = {"content": [{"type": "text", "text": "still here"}]}
    else:
        result = {}
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result}) + "\n")
    sys.stdout.flush()
"#;

/// A server that hangs during a run: the call in flight ends at its timeout, the server, which
/// no longer answers a ping, is restarted (another process), and its tools work again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_a_server_that_hangs_during_a_run_is_restarted_and_its_tools_come_back() {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("hanging.py");
    std::fs::write(&script, HANGING_SERVER).unwrap();
    let server = McpServerConfig::stdio("stuck", "python3")
        .args([script.display().to_string()])
        .call_timeout(Duration::from_secs(1));
    let mcp = McpExtension::connect(McpExtensionConfig::new("t").server(server))
        .await
        .unwrap();
    let Some(ServerStatus::Up { pid: Some(first) }) = mcp.status("stuck") else {
        panic!("{:?}", mcp.status("stuck"));
    };
    let bridged = Bridged::new(&mcp);
    let hung = bridged.call("stuck__hang", json!({})).await;
    assert_eq!(hung.error_code(), Some("E_TOOL_TIMEOUT"), "{hung:?}");
    // The ping goes unanswered (5 s), then the server is started again.
    let deadline = Instant::now() + Duration::from_secs(30);
    let second = loop {
        if let Some(ServerStatus::Up { pid: Some(pid) }) = mcp.status("stuck")
            && pid != first
        {
            break pid;
        }
        assert!(Instant::now() < deadline, "{:?}", mcp.status("stuck"));
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_ne!(second, first);
    let echoed = bridged.call("stuck__echo", json!({})).await;
    assert_eq!(echoed.output, Some(json!("still here")), "{echoed:?}");
    mcp.shutdown();
}
