//! A real NATS server per test (`nats-server` from the Debian package, installed by
//! `scripts/nats-server` when missing), killed when dropped. A server that cannot be found,
//! installed or started fails the test with the reason; it never skips.
#![allow(dead_code)]

use crate::workspace_root;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// The `nats-server` binary: `GOONDAN_NATS_SERVER`, else what `scripts/nats-server` prints
/// (it installs the Debian package when missing). Panics with the reason when there is none.
pub fn server_binary() -> &'static Path {
    static BIN: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    match BIN.get_or_init(find_or_install) {
        Ok(bin) => bin,
        Err(why) => panic!("nats-server is missing: {why}"),
    }
}

fn find_or_install() -> Result<PathBuf, String> {
    if let Some(bin) = std::env::var_os("GOONDAN_NATS_SERVER") {
        let bin = PathBuf::from(bin);
        return if bin.exists() {
            Ok(bin)
        } else {
            Err(format!(
                "GOONDAN_NATS_SERVER={} does not exist",
                bin.display()
            ))
        };
    }
    let script = workspace_root().join("scripts/nats-server");
    let out = Command::new(&script)
        .stderr(Stdio::inherit())
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

/// A free TCP port on `ip`.
pub fn free_port(ip: &str) -> u16 {
    TcpListener::bind((ip, 0))
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .unwrap_or_else(|e| panic!("no free port on {ip}: {e}"))
}

/// A running `nats-server`, killed on drop.
pub struct NatsServer {
    child: Child,
    /// `nats://ip:port`.
    pub url: String,
}

impl NatsServer {
    /// A server on a free loopback port.
    pub fn start() -> Self {
        Self::start_with("127.0.0.1", &[])
    }

    /// A server listening on `ip` (a free port), with extra arguments (`--user`, `--pass`).
    pub fn start_with(ip: &str, args: &[&str]) -> Self {
        let port = free_port(ip);
        let child = Command::new(server_binary())
            .args(["-a", ip, "-p", &port.to_string()])
            .args(args)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {}: {e}", server_binary().display()));
        let server = Self {
            child,
            url: format!("nats://{ip}:{port}"),
        };
        let addr: SocketAddr = format!("{ip}:{port}")
            .parse()
            .unwrap_or_else(|e| panic!("{ip}:{port}: {e}"));
        let deadline = Instant::now() + Duration::from_secs(10);
        while TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_err() {
            assert!(
                Instant::now() < deadline,
                "nats-server on {addr} did not accept connections within 10 s"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        server
    }
}

impl Drop for NatsServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
