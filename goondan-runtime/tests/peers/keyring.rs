//! A real Secret Service per test: GNOME Keyring (`gnome-keyring-daemon`, installed by
//! `scripts/keyring-peer` when missing) on a private D-Bus session bus of its own, both in a
//! temporary directory and killed when dropped. The user's own bus and keyrings are never
//! touched: the bus has no service files (nothing is activated), and the daemon's `HOME` and
//! `XDG_*` directories are the temporary one. A peer that cannot be found, installed or started
//! fails the test with the reason; it never skips.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use secret_service::EncryptionType;
use secret_service::blocking::SecretService;

/// The password of the test keyring's `login` collection.
const PASSWORD: &str = "goondan-test-keyring";

/// `gnome-keyring-daemon`: what `scripts/keyring-peer` prints (it installs the Debian package
/// when missing). Panics with the reason when there is none.
pub fn daemon_binary() -> &'static Path {
    static BIN: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    match BIN.get_or_init(find_or_install) {
        Ok(bin) => bin,
        Err(why) => panic!("gnome-keyring-daemon is missing: {why}"),
    }
}

fn find_or_install() -> Result<PathBuf, String> {
    crate::installed_by("keyring-peer")
}

/// A private session bus with GNOME Keyring's Secret Service on it, its `login` collection
/// created and unlocked; both killed on drop.
pub struct Keyring {
    bus: Child,
    daemon: Child,
    address: String,
    /// The bus's socket and configuration, the daemon's home and its log; removed on drop.
    dir: tempfile::TempDir,
}

impl Keyring {
    /// Starts the bus and the daemon, and waits (at most 15 s) until the daemon answers.
    pub fn start() -> Self {
        let daemon_bin = daemon_binary();
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("no temporary directory: {e}"));
        let home = dir.path().join("home");
        let runtime = dir.path().join("run");
        for d in [&home, &runtime] {
            std::fs::create_dir_all(d).unwrap();
        }
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&runtime, std::fs::Permissions::from_mode(0o700)).unwrap();
        }
        let config = dir.path().join("bus.conf");
        std::fs::write(
            &config,
            format!(
                r#"<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>session</type>
  <listen>unix:path={}</listen>
  <policy context="default">
    <allow send_destination="*" eavesdrop="true"/>
    <allow eavesdrop="true"/>
    <allow own="*"/>
  </policy>
</busconfig>
"#,
                dir.path().join("bus").display()
            ),
        )
        .unwrap();
        let mut bus = Command::new(dbus_daemon())
            .arg(format!("--config-file={}", config.display()))
            .args(["--nofork", "--print-address=1"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start dbus-daemon: {e}"));
        let mut address = String::new();
        let read = bus
            .stdout
            .take()
            .map(|out| BufReader::new(out).read_line(&mut address));
        let address = address.trim().to_owned();
        if !matches!(read, Some(Ok(n)) if n > 0) || address.is_empty() {
            let _ = bus.kill();
            let _ = bus.wait();
            panic!("dbus-daemon printed no address ({read:?})");
        }
        let log = dir.path().join("gnome-keyring-daemon.log");
        let log_file = std::fs::File::create(&log).unwrap();
        let mut daemon = Command::new(daemon_bin)
            .args(["--foreground", "--components=secrets", "--unlock"])
            .env("DBUS_SESSION_BUS_ADDRESS", &address)
            .env("HOME", &home)
            .env("XDG_RUNTIME_DIR", &runtime)
            .env("XDG_DATA_HOME", home.join(".local/share"))
            .env("XDG_CONFIG_HOME", home.join(".config"))
            .env("XDG_CACHE_HOME", home.join(".cache"))
            .env_remove("DISPLAY")
            .env_remove("WAYLAND_DISPLAY")
            .env_remove("GNOME_KEYRING_CONTROL")
            .stdin(Stdio::piped())
            .stdout(log_file.try_clone().unwrap())
            .stderr(log_file)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {}: {e}", daemon_bin.display()));
        // `--unlock` reads the login password from stdin, up to its end.
        if let Some(mut stdin) = daemon.stdin.take() {
            let _ = stdin.write_all(PASSWORD.as_bytes());
        }
        let keyring = Self {
            bus,
            daemon,
            address,
            dir,
        };
        let deadline = Instant::now() + Duration::from_secs(15);
        loop {
            match keyring.ready() {
                Ok(()) => return keyring,
                Err(why) if Instant::now() > deadline => panic!(
                    "gnome-keyring-daemon did not serve within 15 s: {why}\n{}",
                    std::fs::read_to_string(&log).unwrap_or_default()
                ),
                Err(_) => std::thread::sleep(Duration::from_millis(50)),
            }
        }
    }

    /// The bus address, for `DBUS_SESSION_BUS_ADDRESS`.
    pub fn address(&self) -> &str {
        &self.address
    }

    /// The daemon's home: where its keyring files are.
    pub fn home(&self) -> PathBuf {
        self.dir.path().join("home")
    }

    fn connect(&self) -> Result<SecretService<'static>, String> {
        let conn = zbus::blocking::connection::Builder::address(self.address.as_str())
            .and_then(|b| b.build())
            .map_err(|e| format!("cannot connect to the bus: {e}"))?;
        SecretService::connect_with_existing(EncryptionType::Plain, conn)
            .map_err(|e| format!("no Secret Service: {e}"))
    }

    fn ready(&self) -> Result<(), String> {
        let ss = self.connect()?;
        let login = ss
            .get_default_collection()
            .map_err(|e| format!("no default collection: {e}"))?;
        match login.is_locked() {
            Ok(false) => Ok(()),
            Ok(true) => Err("the default collection is locked".into()),
            Err(e) => Err(e.to_string()),
        }
    }

    /// The secret kept for `service` and `username` (the attributes the `keyring` crate
    /// gives its entries), read through the Secret Service; `None` when there is none.
    pub fn secret(&self, service: &str, username: &str) -> Option<String> {
        let ss = self.connect().unwrap_or_else(|e| panic!("{e}"));
        let found = ss
            .search_items(HashMap::from([
                ("service", service),
                ("username", username),
            ]))
            .unwrap_or_else(|e| panic!("cannot search the keyring: {e}"));
        assert!(found.locked.is_empty(), "locked items in the test keyring");
        assert!(found.unlocked.len() <= 1, "{} items", found.unlocked.len());
        let item = found.unlocked.first()?;
        let secret = item
            .get_secret()
            .unwrap_or_else(|e| panic!("cannot read the secret: {e}"));
        Some(String::from_utf8(secret).unwrap())
    }
}

fn dbus_daemon() -> PathBuf {
    let bin = PathBuf::from("/usr/bin/dbus-daemon");
    if bin.exists() {
        return bin;
    }
    // What `scripts/keyring-peer` installs when missing is on the PATH.
    PathBuf::from("dbus-daemon")
}

impl Drop for Keyring {
    fn drop(&mut self) {
        for child in [&mut self.daemon, &mut self.bus] {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}
