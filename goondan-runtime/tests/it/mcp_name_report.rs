//! The MCP client reports each remote name it had to map once, across list changes and
//! restarts. Alone in its test binary: it installs the process-wide tracing subscriber, which
//! tracing's callsite cache needs to see every event reliably (a thread-local one raced the
//! other tests of `mcp_client.rs`).
#![cfg(feature = "mcp")]

use crate::mcp_bridge;

use std::sync::Arc;

use goondan_runtime::mcp::client::{McpExtension, McpExtensionConfig, ServerStatus};
use mcp_bridge::{Bridged, eventually, pid, test_server};
use serde_json::json;

/// Collects what a `fmt` subscriber writes.
#[derive(Clone, Default)]
struct Captured(Arc<std::sync::Mutex<Vec<u8>>>);

impl std::io::Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

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
        String::from_utf8_lossy(&captured.0.lock().unwrap())
            .lines()
            .filter(|l| l.contains("MCP tool name mapped") && l.contains("fs.read__all"))
            .count()
    };

    let mcp = McpExtension::connect(McpExtensionConfig::new("t").server(test_server("srv")))
        .await
        .unwrap();
    let bridged = Bridged::new(&mcp);
    assert_eq!(reports(), 1);
    for name in ["one", "two"] {
        let added = bridged.call("srv__add-tool", json!({"name": name})).await;
        assert!(added.is_ok(), "{added:?}");
    }
    eventually("both list changes", || {
        bridged.agent.registry().contains("srv__two")
    })
    .await;
    let first = pid(&mcp, "srv");
    std::process::Command::new("kill")
        .args(["-9", &first.to_string()])
        .status()
        .unwrap();
    eventually(
        "the restart",
        || matches!(mcp.status("srv"), Some(ServerStatus::Up { pid: Some(p) }) if p != first),
    )
    .await;
    assert_eq!(
        reports(),
        1,
        "{}",
        String::from_utf8_lossy(&captured.0.lock().unwrap())
    );
    mcp.shutdown();
}
