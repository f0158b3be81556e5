//! The real peers goondan's tests talk to, and the replay server of the provider tests.
//!
//! - [`browser`]: Chromium with an MCP Apps host page (`scripts/browser-peers`), driven by
//!   Playwright, for the tests of a tool's page in a real browser.
//! - [`mcp_peers`]: the pinned npm MCP peers (`scripts/mcp-peers`): server-everything, the
//!   inspector and the conformance suite.
//! - [`nats`]: a real `nats-server` (`scripts/nats-server`) on a free port of 127.0.0.1.
//! - [`keyring`]: a real Secret Service (GNOME Keyring, `scripts/keyring-peer`) on a private
//!   session bus (Linux).
//! - [`llm`]: a real local model server (`scripts/llm-peer`).
//! - [`replay`]: a scripted HTTP server on 127.0.0.1 that records what it was sent.
//! - [`otlp`]: an OTLP/HTTP receiver on 127.0.0.1 that decodes the spans and metrics it is
//!   sent (with opentelemetry-proto's messages).
//!
//! A peer that cannot be found, installed or started fails the test with the reason; it never
//! skips. A crate of its own (`publish = false`) so that the tests of goondan-runtime and
//! goondan-base share it without any file of a published crate reaching outside that crate.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};

pub mod browser;
#[cfg(target_os = "linux")]
pub mod keyring;
pub mod llm;
pub mod mcp_peers;
pub mod nats;
pub mod otlp;
pub mod replay;

/// The workspace root: this crate lives in `goondan-runtime/tests/peers`.
pub fn workspace_root() -> PathBuf {
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    here.ancestors()
        .nth(3)
        .map_or_else(|| here.to_path_buf(), Path::to_path_buf)
}

/// Runs the installer `scripts/{name}` (it installs its peer when missing and prints the
/// path of its binary) and returns that path; why not, when it fails or prints a path that
/// does not exist.
pub fn installed_by(name: &str) -> Result<PathBuf, String> {
    let script = workspace_root().join("scripts").join(name);
    let out = std::process::Command::new(&script)
        .stderr(std::process::Stdio::inherit())
        .output()
        .map_err(|e| format!("cannot run {}: {e}", script.display()))?;
    if !out.status.success() {
        return Err(format!("{} failed ({})", script.display(), out.status));
    }
    let bin = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
    if bin.exists() {
        Ok(bin)
    } else {
        Err(format!(
            "{} printed `{}`, which does not exist",
            script.display(),
            bin.display()
        ))
    }
}
