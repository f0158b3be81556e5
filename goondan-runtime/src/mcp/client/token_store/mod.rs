//! Where the OAuth tokens of bridged servers are kept, per user and never in the bundle: the
//! OS keyring where one answers (feature `keyring`), else one file per server under the
//! user's state directory, readable by the user alone (mode 0600, the directory 0700), written
//! whole or not at all. Either way a server's secret is the JSON `{url, credentials}`: the
//! tokens are bound to the server's URL, and at most 1 MiB of it is read.
//!
//! A token is never logged: rmcp's credentials redact it in `Debug`, nothing here prints one,
//! and the errors name the place and the fault (a JSON error gives its line and column, never
//! the text it quotes).

mod file;
#[cfg(feature = "keyring")]
mod os_keyring;

use std::fmt;
use std::path::{Path, PathBuf};

use rmcp::transport::auth::{AuthError, CredentialStore, StoredCredentials};
use serde::{Deserialize, Serialize};

#[cfg(feature = "keyring")]
pub use self::os_keyring::KeyringUnavailable;

/// The environment variable that, set to `file`, keeps tokens in the file store even where
/// an OS keyring answers.
pub const TOKEN_STORE_ENV: &str = "GOONDAN_MCP_TOKEN_STORE";

/// Where a user's MCP tokens are kept.
///
/// [`for_user`](Self::for_user) is the OS keyring when the `keyring` feature is on and a
/// keyring answers (asked once per process), else the directory
/// `$XDG_STATE_HOME/goondan/mcp-tokens`, or `$HOME/.local/state/goondan/mcp-tokens`.
/// [`at`](Self::at) is a directory of your choice.
///
/// ```
/// use goondan_runtime::mcp::client::{AuthState, TokenStore};
/// let dir = tempfile::tempdir()?;
/// let store = TokenStore::at(dir.path());
/// assert_eq!(store.state("search", "https://mcp.example.com/mcp"), AuthState::LoggedOut);
/// assert_eq!(store.location().to_string(), dir.path().display().to_string());
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenStore {
    place: Place,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Place {
    Dir(PathBuf),
    #[cfg(feature = "keyring")]
    Keyring,
}

/// Where a [`TokenStore`] keeps tokens, for people: the directory, or the OS keyring by name
/// (`the OS keyring (Secret Service)`).
#[derive(Debug, Clone, Copy)]
pub struct TokenLocation<'a>(&'a Place);

impl fmt::Display for TokenLocation<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Place::Dir(dir) => dir.display().fmt(f),
            #[cfg(feature = "keyring")]
            Place::Keyring => f.write_str(os_keyring::NAME),
        }
    }
}

/// Whether a server has tokens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AuthState {
    /// No tokens for this server at this URL.
    LoggedOut,
    /// Tokens are kept; `refreshable` when a refresh token came with them.
    LoggedIn {
        /// Whether the access token can be renewed without the person.
        refreshable: bool,
        /// The scopes granted.
        scopes: Vec<String>,
    },
    /// Something is kept but cannot be read (the message says why, never what).
    Unreadable(String),
}

/// Why tokens could not be read, kept or forgotten.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TokenStoreError {
    /// The file store's file or directory.
    #[error("{}: {source}", path.display())]
    File {
        /// The file or directory.
        path: PathBuf,
        /// What the system said.
        #[source]
        source: std::io::Error,
    },
    /// The OS keyring refused or failed (locked, no bus, no access).
    #[cfg(feature = "keyring")]
    #[error("{}: {source}", os_keyring::place(server))]
    Keyring {
        /// The server whose entry it is.
        server: String,
        /// What the keyring said.
        #[source]
        source: keyring::Error,
    },
    /// More than 1 MiB is kept; it is not read.
    #[error("{place}: larger than 1 MiB")]
    TooLarge {
        /// Where.
        place: String,
    },
    /// What is kept is not a server's tokens.
    #[error("{place}: not tokens kept by goondan ({why})")]
    NotTokens {
        /// Where.
        place: String,
        /// Why, without the text.
        why: String,
    },
}

/// The most a server's secret may hold; a larger one is refused unread.
const MAX_KEPT: usize = 1 << 20;

/// What one server's secret holds: the URL the tokens are for, and rmcp's credentials.
#[derive(Serialize, Deserialize)]
struct Kept {
    url: String,
    credentials: StoredCredentials,
}

impl TokenStore {
    /// Tokens kept in files under `dir`.
    pub fn at(dir: impl Into<PathBuf>) -> Self {
        Self {
            place: Place::Dir(dir.into()),
        }
    }

    /// The user's store: the OS keyring when one answers (feature `keyring`; not when
    /// [`TOKEN_STORE_ENV`] is `file`), else the directory under the user's state directory;
    /// `None` when there is no keyring and neither `XDG_STATE_HOME` nor `HOME` is set.
    pub fn for_user() -> Option<Self> {
        #[cfg(feature = "keyring")]
        if std::env::var_os(TOKEN_STORE_ENV).is_none_or(|v| v != "file") {
            match Self::keyring() {
                Ok(store) => return Some(store),
                Err(e) => tracing::debug!(target: "goondan::mcp", "tokens are kept in files: {e}"),
            }
        }
        let base = std::env::var_os("XDG_STATE_HOME")
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
            .or_else(|| {
                std::env::var_os("HOME")
                    .filter(|v| !v.is_empty())
                    .map(|h| PathBuf::from(h).join(".local/state"))
            })?;
        Some(Self::at(base.join("goondan").join("mcp-tokens")))
    }

    /// The OS keyring, when it answers: on Linux, a Secret Service (GNOME Keyring, KWallet,
    /// KeePassXC) on the session bus of `DBUS_SESSION_BUS_ADDRESS`. Asked once per process,
    /// waiting at most a few seconds.
    #[cfg(feature = "keyring")]
    pub fn keyring() -> Result<Self, KeyringUnavailable> {
        os_keyring::answers()?;
        Ok(Self {
            place: Place::Keyring,
        })
    }

    /// The directory of the file store; `None` for the OS keyring.
    pub fn dir(&self) -> Option<&Path> {
        match &self.place {
            Place::Dir(dir) => Some(dir),
            #[cfg(feature = "keyring")]
            Place::Keyring => None,
        }
    }

    /// Where the tokens are, for messages.
    pub fn location(&self) -> TokenLocation<'_> {
        TokenLocation(&self.place)
    }

    /// Whether `server` at `url` has tokens.
    pub fn state(&self, server: &str, url: &str) -> AuthState {
        match self.server(server, url).read() {
            Ok(Some(c)) => AuthState::LoggedIn {
                refreshable: c
                    .token_response
                    .as_ref()
                    .is_some_and(|t| oauth2::TokenResponse::refresh_token(t).is_some()),
                scopes: c.granted_scopes,
            },
            Ok(None) => AuthState::LoggedOut,
            Err(e) => AuthState::Unreadable(e.to_string()),
        }
    }

    /// Forgets the tokens of `server`; whether there were any.
    pub fn forget(&self, server: &str) -> Result<bool, TokenStoreError> {
        self.server(server, "").remove()
    }

    /// The store of one server's tokens, as rmcp's OAuth client uses it.
    pub(crate) fn server(&self, server: &str, url: &str) -> ServerTokens {
        let slot = match &self.place {
            Place::Dir(dir) => Slot::File(dir.join(format!("{server}.json"))),
            #[cfg(feature = "keyring")]
            Place::Keyring => Slot::Keyring(server.to_owned()),
        };
        ServerTokens {
            slot,
            url: url.to_owned(),
        }
    }
}

/// One server's tokens: the tokens of another URL are not these.
#[derive(Debug, Clone)]
pub(crate) struct ServerTokens {
    slot: Slot,
    url: String,
}

#[derive(Debug, Clone)]
enum Slot {
    File(PathBuf),
    #[cfg(feature = "keyring")]
    Keyring(String),
}

impl ServerTokens {
    fn place(&self) -> String {
        match &self.slot {
            Slot::File(path) => path.display().to_string(),
            #[cfg(feature = "keyring")]
            Slot::Keyring(server) => os_keyring::place(server),
        }
    }

    fn read(&self) -> Result<Option<StoredCredentials>, TokenStoreError> {
        let text = match &self.slot {
            Slot::File(path) => file::read(path)?,
            #[cfg(feature = "keyring")]
            Slot::Keyring(server) => os_keyring::read(server)?,
        };
        match text {
            Some(text) => decode(&text, &self.url, || self.place()),
            None => Ok(None),
        }
    }

    fn write(&self, credentials: StoredCredentials) -> Result<(), TokenStoreError> {
        let text = serde_json::to_string(&Kept {
            url: self.url.clone(),
            credentials,
        })
        .map_err(|e| TokenStoreError::NotTokens {
            place: self.place(),
            why: format!("cannot be written: {}", json_fault(&e)),
        })?;
        match &self.slot {
            Slot::File(path) => file::write(path, text.as_bytes()),
            #[cfg(feature = "keyring")]
            Slot::Keyring(server) => os_keyring::write(server, &text),
        }
    }

    fn remove(&self) -> Result<bool, TokenStoreError> {
        match &self.slot {
            Slot::File(path) => file::remove(path),
            #[cfg(feature = "keyring")]
            Slot::Keyring(server) => os_keyring::remove(server),
        }
    }
}

/// The credentials in a server's secret, when they are for `url`.
fn decode(
    text: &str,
    url: &str,
    place: impl Fn() -> String,
) -> Result<Option<StoredCredentials>, TokenStoreError> {
    if text.len() > MAX_KEPT {
        return Err(TokenStoreError::TooLarge { place: place() });
    }
    let kept: Kept = serde_json::from_str(text).map_err(|e| TokenStoreError::NotTokens {
        place: place(),
        why: json_fault(&e),
    })?;
    Ok((kept.url == url).then_some(kept.credentials))
}

/// What is wrong with the JSON, and where; not serde_json's message, which may quote a token.
fn json_fault(e: &serde_json::Error) -> String {
    use serde_json::error::Category;
    let what = match e.classify() {
        Category::Io => "unreadable",
        Category::Syntax => "not JSON",
        Category::Data => "not the fields of tokens",
        Category::Eof => "cut short",
    };
    format!("{what} at line {} column {}", e.line(), e.column())
}

fn store_error(e: impl fmt::Display) -> AuthError {
    AuthError::CredentialStoreError(e.to_string())
}

/// Runs `op` on one of tokio's blocking threads: files and the keyring block.
async fn blocking<T: Send + 'static>(
    op: impl FnOnce() -> Result<T, TokenStoreError> + Send + 'static,
) -> Result<T, AuthError> {
    tokio::task::spawn_blocking(op)
        .await
        .map_err(store_error)?
        .map_err(store_error)
}

#[async_trait::async_trait]
impl CredentialStore for ServerTokens {
    async fn load(&self) -> Result<Option<StoredCredentials>, AuthError> {
        let me = self.clone();
        blocking(move || me.read()).await
    }

    async fn save(&self, credentials: StoredCredentials) -> Result<(), AuthError> {
        let me = self.clone();
        blocking(move || me.write(credentials)).await
    }

    async fn clear(&self) -> Result<(), AuthError> {
        let me = self.clone();
        blocking(move || me.remove()).await.map(drop)
    }

    async fn on_refresh_token_rejected(
        &self,
        _credentials: &StoredCredentials,
    ) -> Result<(), AuthError> {
        // A refresh token the server refuses is of no further use: the next start asks the
        // person to log in again instead of failing the same way.
        self.clear().await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_file_is_the_user_s_alone_and_another_url_s_tokens_are_not_used() {
        let dir = tempfile::tempdir().unwrap();
        let store = TokenStore::at(dir.path().join("tokens"));
        let tokens = store.server("search", "https://a.example/mcp");
        tokens
            .write(StoredCredentials::new(
                "cid".into(),
                None,
                vec!["read".into()],
                Some(1),
            ))
            .unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode(&dir.path().join("tokens/search.json")), 0o600);
            assert_eq!(mode(&dir.path().join("tokens")), 0o700);
        }
        assert_eq!(
            store.state("search", "https://a.example/mcp"),
            AuthState::LoggedIn {
                refreshable: false,
                scopes: vec!["read".into()]
            }
        );
        assert_eq!(
            store.state("search", "https://b.example/mcp"),
            AuthState::LoggedOut
        );
        assert!(store.forget("search").unwrap());
        assert!(!store.forget("search").unwrap());
        assert_eq!(
            store.state("search", "https://a.example/mcp"),
            AuthState::LoggedOut
        );
    }

    #[test]
    fn a_damaged_or_huge_token_file_is_unreadable_not_a_crash() {
        let dir = tempfile::tempdir().unwrap();
        let store = TokenStore::at(dir.path());
        std::fs::write(dir.path().join("s.json"), "{not json").unwrap();
        assert!(matches!(store.state("s", "u"), AuthState::Unreadable(_)));
        std::fs::write(dir.path().join("s.json"), vec![b' '; MAX_KEPT + 10]).unwrap();
        assert!(matches!(store.state("s", "u"), AuthState::Unreadable(m) if m.contains("1 MiB")));
    }

    #[test]
    fn what_is_kept_is_bound_to_its_url_bounded_and_never_quoted_in_an_error() {
        let kept = serde_json::to_string(&Kept {
            url: "https://a.example/mcp".into(),
            credentials: StoredCredentials::new("cid".into(), None, vec![], None),
        })
        .unwrap();
        let place = || "there".to_owned();
        assert!(
            matches!(decode(&kept, "https://a.example/mcp", place), Ok(Some(c)) if c.client_id == "cid")
        );
        assert!(matches!(
            decode(&kept, "https://b.example/mcp", place),
            Ok(None)
        ));
        let huge = format!("{kept}{}", " ".repeat(MAX_KEPT));
        assert!(matches!(
            decode(&huge, "https://a.example/mcp", place),
            Err(TokenStoreError::TooLarge { .. })
        ));
        // serde_json's own message would quote the string it did not expect.
        let odd = r#"{"url":"u","credentials":{"client_id":"c","token_response":"tok-SECRET-123","granted_scopes":[]}}"#;
        let quoted = serde_json::from_str::<Kept>(odd)
            .err()
            .map(|e| e.to_string());
        assert!(quoted.is_some_and(|m| m.contains("tok-SECRET-123")));
        let e = decode(odd, "u", place).unwrap_err().to_string();
        assert!(!e.contains("tok-SECRET"), "{e}");
        assert!(
            e.starts_with("there: not tokens kept by goondan (not the fields of tokens at line 1"),
            "{e}"
        );
    }
}
