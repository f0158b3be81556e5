//! The OS keyring backend (feature `keyring`): one entry per server, service `goondan-mcp`,
//! user the server's name, through the `keyring` crate (the Secret Service on Linux and the
//! BSDs, the Keychain on macOS, the Credential Manager on Windows). Its calls block: the async
//! callers run them on tokio's blocking threads.

use std::sync::OnceLock;
use std::time::Duration;

use super::{MAX_KEPT, TokenStoreError};

/// The keyring's service of goondan's MCP tokens; the user is the server's name.
pub(super) const SERVICE: &str = "goondan-mcp";

/// What this OS's keyring is called in messages.
pub(super) const NAME: &str = if cfg!(target_os = "macos") {
    "the OS keyring (macOS Keychain)"
} else if cfg!(windows) {
    "the OS keyring (Windows Credential Manager)"
} else {
    "the OS keyring (Secret Service)"
};

/// The user of the probe's read: no server is called that (names are identifiers).
const PROBE_USER: &str = "(probe)";

/// How long the probe waits for the keyring's answer.
const PROBE_WAIT: Duration = Duration::from_secs(5);

/// Why there is no OS keyring to keep tokens in.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("no OS keyring answers: {reason}")]
pub struct KeyringUnavailable {
    reason: String,
}

/// Whether the OS keyring answers; asked once per process.
pub(super) fn answers() -> Result<(), KeyringUnavailable> {
    static PROBE: OnceLock<Result<(), String>> = OnceLock::new();
    PROBE
        .get_or_init(probe)
        .clone()
        .map_err(|reason| KeyringUnavailable { reason })
}

fn probe() -> Result<(), String> {
    // A bus that takes the connection but whose keyring never answers would hold the caller
    // forever: the probe runs on a thread of its own, awaited a while, then left behind (the
    // keyring is not used after a probe that did not answer).
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::Builder::new()
        .name("goondan-keyring-probe".into())
        .spawn(move || {
            let _ = tx.send(ask());
        })
        .map_err(|e| format!("cannot start its probe: {e}"))?;
    rx.recv_timeout(PROBE_WAIT).unwrap_or_else(|_| {
        Err(format!(
            "it did not answer within {} s",
            PROBE_WAIT.as_secs()
        ))
    })
}

/// The store opens (on Linux: a session with the Secret Service on the session bus), and a
/// read of an entry that is not there says so.
fn ask() -> Result<(), String> {
    if let Err(e) = keyring::Entry::store_status() {
        return Err(e.to_string());
    }
    match keyring::Entry::new(SERVICE, PROBE_USER).and_then(|e| e.get_secret()) {
        Ok(_) | Err(keyring::Error::NoEntry) => Ok(()),
        Err(e) => Err(e.to_string()),
    }
}

/// Where `server`'s tokens are, for messages.
pub(super) fn place(server: &str) -> String {
    format!("{NAME}, entry `{SERVICE}`/`{server}`")
}

fn failed(server: &str) -> impl FnOnce(keyring::Error) -> TokenStoreError + '_ {
    move |source| TokenStoreError::Keyring {
        server: server.to_owned(),
        source,
    }
}

fn entry(server: &str) -> Result<keyring::Entry, TokenStoreError> {
    keyring::Entry::new(SERVICE, server).map_err(failed(server))
}

/// The secret of `server`; `None` when there is none. A secret over [`MAX_KEPT`] bytes is
/// refused before it is decoded.
pub(super) fn read(server: &str) -> Result<Option<String>, TokenStoreError> {
    match entry(server)?.get_secret() {
        Ok(bytes) if bytes.len() > MAX_KEPT => Err(TokenStoreError::TooLarge {
            place: place(server),
        }),
        Ok(bytes) => String::from_utf8(bytes)
            .map(Some)
            .map_err(|_| TokenStoreError::NotTokens {
                place: place(server),
                why: "not UTF-8".into(),
            }),
        Err(keyring::Error::NoEntry) => Ok(None),
        Err(e) => Err(failed(server)(e)),
    }
}

/// Keeps `text` as the secret of `server`, in place of any before.
pub(super) fn write(server: &str, text: &str) -> Result<(), TokenStoreError> {
    entry(server)?.set_password(text).map_err(failed(server))
}

/// Removes the secret of `server`; whether there was one.
pub(super) fn remove(server: &str) -> Result<bool, TokenStoreError> {
    match entry(server)?.delete_credential() {
        Ok(()) => Ok(true),
        Err(keyring::Error::NoEntry) => Ok(false),
        Err(e) => Err(failed(server)(e)),
    }
}
