//! A real language-model server (`scripts/llm-peer`): llama-cpp-python's OpenAI-compatible
//! `llama_cpp.server` with a small GGUF model, on a free port of 127.0.0.1: one per test binary
//! ([`LlmServer::shared`]), or one for a test ([`LlmServer::start`]), killed when dropped. Both
//! exit with the test process (the server watches its stdin, a pipe from us).
//! A peer that cannot be found, installed or started fails the test with the reason; it never
//! skips.
//!
//! The python and the model come from `GOONDAN_LLM_PYTHON` and `GOONDAN_LLM_MODEL` (set by
//! `.ci/run`), else from what `scripts/llm-peer` prints (it installs them when missing).
#![allow(dead_code)]

use crate::workspace_root;
use std::io::Read;
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// The installed peer: the venv's python and the GGUF model.
#[derive(Debug, Clone)]
pub struct Peer {
    /// The venv's python, with `llama_cpp.server` installed.
    pub python: PathBuf,
    /// The GGUF model file.
    pub model: PathBuf,
}

/// The peer; panics with the reason when it cannot be had.
pub fn peer() -> &'static Peer {
    static PEER: OnceLock<Result<Peer, String>> = OnceLock::new();
    match PEER.get_or_init(find_or_install) {
        Ok(p) => p,
        Err(why) => panic!("the language-model peer is missing: {why}"),
    }
}

fn find_or_install() -> Result<Peer, String> {
    if let (Some(python), Some(model)) = (
        std::env::var_os("GOONDAN_LLM_PYTHON"),
        std::env::var_os("GOONDAN_LLM_MODEL"),
    ) {
        let peer = Peer {
            python: python.into(),
            model: model.into(),
        };
        return if peer.python.exists() && peer.model.exists() {
            Ok(peer)
        } else {
            Err(format!(
                "GOONDAN_LLM_PYTHON={} or GOONDAN_LLM_MODEL={} does not exist",
                peer.python.display(),
                peer.model.display()
            ))
        };
    }
    let script = workspace_root().join("scripts/llm-peer");
    let out = Command::new(&script)
        .stderr(Stdio::inherit())
        .output()
        .map_err(|e| format!("cannot run {}: {e}", script.display()))?;
    if !out.status.success() {
        return Err(format!("{} failed ({})", script.display(), out.status));
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let field = |name: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(name))
            .map(PathBuf::from)
            .filter(|p| p.exists())
            .ok_or_else(|| format!("{} printed no existing `{name}`: {text}", script.display()))
    };
    Ok(Peer {
        python: field("PYTHON=")?,
        model: field("MODEL=")?,
    })
}

/// Runs `llama_cpp.server` as `__main__`, and exits when stdin closes (the test is gone).
const LAUNCH: &str = "import os, runpy, sys, threading\n\
threading.Thread(target=lambda: (sys.stdin.read(), os._exit(0)), daemon=True).start()\n\
sys.argv = ['llama_cpp.server'] + sys.argv[1:]\n\
runpy.run_module('llama_cpp.server', run_name='__main__')\n";

/// A running server, killed on drop.
pub struct LlmServer {
    child: Child,
    port: u16,
    log: PathBuf,
    _dir: tempfile::TempDir,
}

impl LlmServer {
    /// The server of this test binary, started by the first test that asks (the tests share
    /// it; it answers one request at a time). It exits with the test process: it watches its
    /// stdin, a pipe from us.
    pub fn shared() -> &'static LlmServer {
        static SERVER: OnceLock<LlmServer> = OnceLock::new();
        SERVER.get_or_init(LlmServer::start)
    }

    /// A server on a free port of 127.0.0.1 with the chat format `chatml-function-calling`,
    /// answering once it lists its model. Panics with the server's log when it does not start.
    pub fn start() -> LlmServer {
        let peer = peer();
        let mut last = String::new();
        for _ in 0..3 {
            match Self::try_start(peer) {
                Ok(server) => return server,
                Err(why) => last = why,
            }
        }
        panic!("the language-model server did not start: {last}");
    }

    fn try_start(peer: &Peer) -> Result<LlmServer, String> {
        let port = TcpListener::bind(("127.0.0.1", 0))
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .map_err(|e| format!("no free port: {e}"))?;
        let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
        let log = dir.path().join("server.log");
        let file = std::fs::File::create(&log).map_err(|e| e.to_string())?;
        let err = file.try_clone().map_err(|e| e.to_string())?;
        let child = Command::new(&peer.python)
            .arg("-c")
            .arg(LAUNCH)
            .arg("--model")
            .arg(&peer.model)
            .args(["--model_alias", "local"])
            .args(["--chat_format", "chatml-function-calling"])
            .args(["--host", "127.0.0.1", "--port", &port.to_string()])
            .args(["--n_ctx", "8192", "--n_threads", "2", "--verbose", "false"])
            // The state after each answer is kept (in memory), and a request that starts like an
            // earlier one resumes from it: the tests share the server, so without it every
            // request after another test's re-reads its whole prompt (the tool declarations are
            // about 1,900 tokens, 7 s on 2 cores).
            .args(["--cache", "true", "--cache_type", "ram"])
            // Tests share the server: a request waits for the one before, never cuts it.
            .args(["--interrupt_requests", "false"])
            .stdin(Stdio::piped())
            .stdout(file)
            .stderr(err)
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", peer.python.display()))?;
        let mut server = LlmServer {
            child,
            port,
            log,
            _dir: dir,
        };
        let start = Instant::now();
        while start.elapsed() < Duration::from_secs(120) {
            if let Ok(Some(status)) = server.child.try_wait() {
                return Err(format!("it exited ({status}): {}", server.log_text()));
            }
            if server.lists_models() {
                return Ok(server);
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        Err(format!("no answer in 120 s: {}", server.log_text()))
    }

    /// Whether `GET /v1/models` answers 200.
    fn lists_models(&self) -> bool {
        use std::io::Write;
        let Ok(mut s) = TcpStream::connect(("127.0.0.1", self.port)) else {
            return false;
        };
        let _ = s.set_read_timeout(Some(Duration::from_secs(5)));
        let request = "GET /v1/models HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
        if s.write_all(request.as_bytes()).is_err() {
            return false;
        }
        let mut answer = String::new();
        let _ = s.read_to_string(&mut answer);
        answer.starts_with("HTTP/1.1 200")
    }

    /// `http://127.0.0.1:PORT/v1`, the Model's `endpoint`.
    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}/v1", self.port)
    }

    /// The port.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// What the server logged so far (its last 4 KB).
    pub fn log_text(&self) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let cut = text.len().saturating_sub(4096);
        let cut = (cut..text.len())
            .find(|i| text.is_char_boundary(*i))
            .unwrap_or(text.len());
        text[cut..].to_owned()
    }

    /// Kills the server now (a test of a server that dies mid-answer).
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for LlmServer {
    fn drop(&mut self) {
        self.kill();
    }
}
