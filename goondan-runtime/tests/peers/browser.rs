//! A real browser hosting MCP Apps (`scripts/browser-peers`): Debian's Chromium, driven by
//! Playwright, runs a host page built on the official host bridge (`AppBridge` of
//! `@modelcontextprotocol/ext-apps`) and the MCP TypeScript SDK's client, against an MCP
//! server's Streamable HTTP endpoint. The host page, its sandbox proxy and the driver are in
//! `browser-host/` beside this file (the driver's header says what it does and what it
//! answers).
//!
//! The folder comes from `GOONDAN_BROWSER_PEERS`, else from running the script (it installs
//! what is missing, rebuilds the host page when its sources changed, and prints the folder).
//! Anything missing fails the test with the reason; it never skips.
#![allow(dead_code)]

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// The installed host: the folder holding `driver.mjs` and the host page, and the `node` and
/// the browser it runs with.
#[derive(Debug)]
pub struct BrowserHost {
    dir: PathBuf,
    node: PathBuf,
    chromium: PathBuf,
}

/// The host, installed on first use; panics with the reason when it cannot be.
pub fn browser_host() -> &'static BrowserHost {
    static HOST: OnceLock<Result<BrowserHost, String>> = OnceLock::new();
    match HOST.get_or_init(find_or_install) {
        Ok(host) => host,
        Err(why) => panic!("the MCP Apps browser host is missing: {why}"),
    }
}

fn find_or_install() -> Result<BrowserHost, String> {
    let dir = match std::env::var_os("GOONDAN_BROWSER_PEERS") {
        Some(dir) => PathBuf::from(dir),
        None => crate::installed_by("browser-peers")?,
    };
    BrowserHost::at(&dir)
}

impl BrowserHost {
    fn at(dir: &Path) -> Result<Self, String> {
        for needed in [
            "driver.mjs",
            "node_modules/playwright-core",
            "site/host.html",
            "site/host.js",
            "site/sandbox.html",
            "node",
            "chromium",
        ] {
            if !dir.join(needed).exists() {
                return Err(format!(
                    "{} lacks {needed}; run scripts/browser-peers",
                    dir.display()
                ));
            }
        }
        let path_in = |file: &str| -> Result<PathBuf, String> {
            let path = std::fs::read_to_string(dir.join(file))
                .map_err(|e| format!("cannot read {}/{file}: {e}", dir.display()))?;
            let path = PathBuf::from(path.trim());
            if path.exists() {
                Ok(path)
            } else {
                Err(format!(
                    "{} (from {}/{file}) is gone; run scripts/browser-peers",
                    path.display(),
                    dir.display()
                ))
            }
        };
        Ok(Self {
            dir: dir.to_path_buf(),
            node: path_in("node")?,
            chromium: path_in("chromium")?,
        })
    }

    /// The browser the driver starts.
    pub fn chromium(&self) -> &Path {
        &self.chromium
    }

    /// [`run`](Self::run) from async code (the driver's run blocks on its child, so it runs
    /// on Tokio's blocking pool), within 180 s, and checked to have run clean: no error of the
    /// driver, none of the host, nothing on the page's console. The verdict.
    pub async fn run_clean(&'static self, config: Value) -> Value {
        let verdict =
            tokio::task::spawn_blocking(move || self.run(&config, Duration::from_secs(180)))
                .await
                .unwrap_or_else(|e| panic!("the browser driver's thread failed: {e}"));
        assert!(verdict["error"].is_null(), "{verdict:#}");
        assert_eq!(verdict["host"]["errors"], json!([]), "{verdict:#}");
        assert_eq!(verdict["console"], json!([]), "{verdict:#}");
        verdict
    }

    /// Runs the driver with `config` (the driver's header lists its fields; `chromium` is
    /// filled in) and returns its verdict. Panics when the driver does not answer a JSON
    /// object within `limit`, with its error output.
    pub fn run(&self, config: &Value, limit: Duration) -> Value {
        let mut config = config.clone();
        if let Some(object) = config.as_object_mut() {
            object.insert(
                "chromium".into(),
                Value::String(self.chromium.display().to_string()),
            );
        }
        let mut child = Command::new(&self.node)
            .arg(self.dir.join("driver.mjs"))
            .arg(config.to_string())
            .current_dir(&self.dir)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("the browser driver does not start: {e}"));
        let mut stdout = child.stdout.take().expect("piped stdout");
        let mut stderr = child.stderr.take().expect("piped stderr");
        let out = std::thread::spawn(move || {
            let mut s = String::new();
            let _ = stdout.read_to_string(&mut s);
            s
        });
        let err = std::thread::spawn(move || {
            let mut s = String::new();
            let _ = stderr.read_to_string(&mut s);
            s
        });
        let deadline = Instant::now() + limit;
        let status = loop {
            match child.try_wait() {
                Ok(Some(status)) => break Some(status),
                Ok(None) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(50));
                }
                _ => {
                    let _ = child.kill();
                    let _ = child.wait();
                    break None;
                }
            }
        };
        let out = out.join().unwrap_or_default();
        let err = err.join().unwrap_or_default();
        let Some(status) = status else {
            panic!("the browser driver did not finish within {limit:?}; its stderr:\n{err}");
        };
        match serde_json::from_str::<Value>(out.trim()) {
            Ok(verdict) if verdict.is_object() => verdict,
            _ => panic!(
                "the browser driver ({status}) answered no verdict; stdout:\n{out}\nstderr:\n{err}"
            ),
        }
    }
}

/// The tool `name` as the host listed it in a verdict; panics, with the verdict, when it did not.
pub fn listed_tool<'a>(verdict: &'a Value, name: &str) -> &'a Value {
    verdict["host"]["tools"]
        .as_array()
        .and_then(|tools| tools.iter().find(|t| t["name"] == name))
        .unwrap_or_else(|| panic!("the host saw no tool {name}: {verdict:#}"))
}
