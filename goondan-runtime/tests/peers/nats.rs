//! A real NATS server per test (`nats-server` from the Debian package, installed by
//! `scripts/nats-server` when missing), killed when dropped. A server that cannot be found,
//! installed or started fails the test with the reason; it never skips.
#![allow(dead_code)]

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
    crate::installed_by("nats-server")
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
    /// The server's log and its ports file, removed on drop.
    dir: tempfile::TempDir,
    /// `nats://ip:port`.
    pub url: String,
    /// JetStream's store, removed on drop.
    store: Option<tempfile::TempDir>,
}

impl NatsServer {
    /// A server on a free loopback port.
    pub fn start() -> Self {
        Self::start_with("127.0.0.1", &[])
    }

    /// A server with JetStream (`-js`) on a free loopback port, its store in a temporary
    /// directory.
    pub fn start_jetstream() -> Self {
        let store = tempfile::tempdir().unwrap_or_else(|e| panic!("no temporary directory: {e}"));
        let dir = store.path().to_string_lossy().into_owned();
        let mut server = Self::start_with("127.0.0.1", &["-js", "-sd", &dir]);
        server.store = Some(store);
        server
    }

    /// A server listening on `ip`, with extra arguments (`--user`, `--pass`).
    ///
    /// The server picks its own port (`-p -1`) and says which in its ports file, so two
    /// servers started at once never race for one port: a port chosen here and handed over
    /// could be taken by another server before this one binds it, and this one would then
    /// exit while the other answered the readiness probe.
    pub fn start_with(ip: &str, args: &[&str]) -> Self {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("no temporary directory: {e}"));
        let log = dir.path().join("nats-server.log");
        let child = Command::new(server_binary())
            .args(["-a", ip, "-p", "-1"])
            .arg("--ports_file_dir")
            .arg(dir.path())
            .arg("-l")
            .arg(&log)
            .args(args)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {}: {e}", server_binary().display()));
        let mut server = Self {
            child,
            dir,
            url: String::new(),
            store: None,
        };
        let ports = server
            .dir
            .path()
            .join(format!("nats-server_{}.ports", server.child.id()));
        let deadline = Instant::now() + Duration::from_secs(10);
        let port = loop {
            if let Some(port) = std::fs::read_to_string(&ports)
                .ok()
                .and_then(|p| client_port(&p))
            {
                break port;
            }
            if let Ok(Some(status)) = server.child.try_wait() {
                panic!(
                    "nats-server exited ({status}) before listening:\n{}",
                    std::fs::read_to_string(&log).unwrap_or_default()
                );
            }
            assert!(
                Instant::now() < deadline,
                "nats-server on {ip} wrote no ports file within 10 s:\n{}",
                std::fs::read_to_string(&log).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(20));
        };
        let addr: SocketAddr = format!("{ip}:{port}")
            .parse()
            .unwrap_or_else(|e| panic!("{ip}:{port}: {e}"));
        while TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_err() {
            assert!(
                Instant::now() < deadline,
                "nats-server on {addr} did not accept connections within 10 s"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        server.url = format!("nats://{ip}:{port}");
        server
    }
}

/// The client port in a ports file (`{"nats":["nats://127.0.0.1:43675"], ...}`); `None`
/// while the file is missing or half written.
fn client_port(ports: &str) -> Option<u16> {
    let ports: serde_json::Value = serde_json::from_str(ports).ok()?;
    let url = ports.get("nats")?.get(0)?.as_str()?;
    url.rsplit_once(':')?.1.parse().ok()
}

impl Drop for NatsServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
