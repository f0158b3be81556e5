//! The real MCP peers the tests talk to (`scripts/mcp-peers`): the folder of their commands,
//! from `GOONDAN_MCP_PEERS`, else `<workspace>/.peers/mcp/node_modules/.bin`, installed by the
//! script when missing. A missing peer fails the test with the reason; it never skips.
#![allow(dead_code)]

use crate::workspace_root;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// The folder holding `node`, `mcp-server-everything`, `mcp-inspector` and `conformance`.
/// Runs `scripts/mcp-peers` once when a peer is missing; panics with the reason when they
/// still are.
pub fn peers_dir() -> &'static Path {
    static DIR: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    match DIR.get_or_init(find_or_install) {
        Ok(dir) => dir,
        Err(why) => panic!("the MCP peers are missing: {why}"),
    }
}

const PEERS: [&str; 4] = [
    "node",
    "mcp-server-everything",
    "mcp-inspector",
    "conformance",
];

fn complete(dir: &Path) -> bool {
    PEERS.iter().all(|p| dir.join(p).exists())
}

fn find_or_install() -> Result<PathBuf, String> {
    if let Some(dir) = std::env::var_os("GOONDAN_MCP_PEERS") {
        let dir = PathBuf::from(dir);
        return if complete(&dir) {
            Ok(dir)
        } else {
            Err(format!(
                "GOONDAN_MCP_PEERS={} lacks one of {PEERS:?}",
                dir.display()
            ))
        };
    }
    let root = workspace_root();
    let dir = root.join(".peers/mcp/node_modules/.bin");
    if complete(&dir) {
        return Ok(dir);
    }
    let script = root.join("scripts/mcp-peers");
    let out = Command::new(&script)
        .output()
        .map_err(|e| format!("cannot run {}: {e}", script.display()))?;
    if !out.status.success() {
        return Err(format!(
            "{} failed ({}): {}",
            script.display(),
            out.status,
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    if complete(&dir) {
        Ok(dir)
    } else {
        Err(format!(
            "{} ran, but {} still lacks one of {PEERS:?}",
            script.display(),
            dir.display()
        ))
    }
}

/// A peer's command in the folder (`node`, `mcp-server-everything`, ...).
pub fn peer(name: &str) -> PathBuf {
    peers_dir().join(name)
}

/// `PATH` with the peers' folder (and its node 22) first.
pub fn path_with_peers() -> String {
    let mut path = peers_dir().display().to_string();
    if let Some(rest) = std::env::var_os("PATH") {
        path.push(':');
        path.push_str(&rest.to_string_lossy());
    }
    path
}

/// A real OAuth-protected MCP server: the conformance suite's server of the client scenario
/// `scenario` (e.g. `auth/metadata-default`), in the suite's interactive mode, with its own
/// authorization server that approves every authorization request at once. Killed when
/// dropped.
pub struct ProtectedServer {
    child: std::process::Child,
    url: String,
}

impl ProtectedServer {
    /// Starts the server of `scenario`; panics with the suite's output when it does not say
    /// its URL.
    pub fn start(scenario: &str) -> Self {
        use std::io::{BufRead, BufReader};
        let mut child = Command::new(peer("conformance"))
            .env("PATH", path_with_peers())
            .args(["client", "--scenario", scenario])
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::inherit())
            .spawn()
            .unwrap_or_else(|e| panic!("the conformance suite does not start: {e}"));
        let stdout = child.stdout.take().expect("piped stdout");
        let mut seen = String::new();
        let mut lines = BufReader::new(stdout).lines();
        let url = loop {
            match lines.next() {
                Some(Ok(line)) => {
                    if let Some(url) = line.strip_prefix("Server URL: ") {
                        break url.trim().to_owned();
                    }
                    seen.push_str(&line);
                    seen.push('\n');
                }
                _ => {
                    let _ = child.kill();
                    panic!("the conformance suite gave no server URL for {scenario}:\n{seen}");
                }
            }
        };
        // The rest of its output is read and dropped, so it never blocks on a full pipe.
        std::thread::spawn(move || lines.for_each(drop));
        Self { child, url }
    }

    /// The MCP endpoint.
    pub fn url(&self) -> &str {
        &self.url
    }
}

impl Drop for ProtectedServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
