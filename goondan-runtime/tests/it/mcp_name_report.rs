//! The MCP client reports each remote name it had to map once, across list changes and
//! restarts. It installs the process-wide tracing subscriber (the reports come from the
//! links' tasks on the runtime's threads, which a thread-local one does not see), and counts
//! the reports of its own server only: the other tests of the binary map names too.
#![cfg(feature = "mcp")]

use crate::mcp_bridge;

use goondan_runtime::mcp::client::{McpExtension, McpExtensionConfig, ServerStatus};
use mcp_bridge::{Bridged, Captured, eventually, pid, test_server};
use serde_json::json;

#[tokio::test(flavor = "current_thread")]
async fn mcp_name_mapping_is_reported_once_across_list_changes_and_restarts() {
    let captured = Captured::default();
    let writer = captured.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_env_filter("goondan::mcp=info")
        .with_writer(move || writer.clone())
        .with_ansi(false)
        .finish();
    tracing::subscriber::set_global_default(subscriber).unwrap();
    let reports = || {
        captured
            .text()
            .lines()
            .filter(|l| {
                // This test's server only: the other tests of the binary map names too.
                l.contains("MCP tool name mapped") && l.contains("is `reported__fs_read_all")
            })
            .count()
    };

    let mcp = McpExtension::connect(McpExtensionConfig::new("t").server(test_server("reported")))
        .await
        .unwrap();
    let bridged = Bridged::new(&mcp);
    assert_eq!(reports(), 1);
    for name in ["one", "two"] {
        let added = bridged
            .call("reported__add-tool", json!({"name": name}))
            .await;
        assert!(added.is_ok(), "{added:?}");
    }
    eventually("both list changes", || {
        bridged.agent.registry().contains("reported__two")
    })
    .await;
    let first = pid(&mcp, "reported");
    std::process::Command::new("kill")
        .args(["-9", &first.to_string()])
        .status()
        .unwrap();
    eventually(
        "the restart",
        || matches!(mcp.status("reported"), Some(ServerStatus::Up { pid: Some(p) }) if p != first),
    )
    .await;
    assert_eq!(reports(), 1, "{}", captured.text());
    mcp.shutdown();
}
