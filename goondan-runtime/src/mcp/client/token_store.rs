//! Where the OAuth tokens of bridged servers are kept: one file per server under a directory
//! of the user's (never the bundle's), readable by the user alone (mode 0600, the directory
//! 0700), written whole or not at all. A token is never logged: rmcp's credentials redact it
//! in `Debug`, and nothing here prints one.

use std::path::{Path, PathBuf};

use rmcp::transport::auth::{AuthError, CredentialStore, StoredCredentials};
use serde::{Deserialize, Serialize};

/// The directory of a user's MCP tokens.
///
/// [`for_user`](Self::for_user) is `$XDG_STATE_HOME/goondan/mcp-tokens`, else
/// `$HOME/.local/state/goondan/mcp-tokens`.
///
/// ```
/// use goondan_runtime::mcp::client::{AuthState, TokenStore};
/// let dir = tempfile::tempdir()?;
/// let store = TokenStore::at(dir.path());
/// assert_eq!(store.state("search", "https://mcp.example.com/mcp"), AuthState::LoggedOut);
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenStore {
    dir: PathBuf,
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
    /// The file is there but cannot be read (the message says why).
    Unreadable(String),
}

/// What one server's file holds: the URL the tokens are for, and rmcp's credentials.
#[derive(Serialize, Deserialize)]
struct Kept {
    url: String,
    credentials: StoredCredentials,
}

impl TokenStore {
    /// Tokens kept under `dir`.
    pub fn at(dir: impl Into<PathBuf>) -> Self {
        Self { dir: dir.into() }
    }

    /// The user's store; `None` when neither `XDG_STATE_HOME` nor `HOME` is set.
    pub fn for_user() -> Option<Self> {
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

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
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
            Err(e) => AuthState::Unreadable(e),
        }
    }

    /// Forgets the tokens of `server`; whether there were any.
    pub fn forget(&self, server: &str) -> std::io::Result<bool> {
        match std::fs::remove_file(self.path(server)) {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
            Err(e) => Err(e),
        }
    }

    fn path(&self, server: &str) -> PathBuf {
        self.dir.join(format!("{server}.json"))
    }

    /// The store of one server's tokens, as rmcp's OAuth client uses it.
    pub(crate) fn server(&self, server: &str, url: &str) -> ServerTokens {
        ServerTokens {
            path: self.path(server),
            url: url.to_owned(),
        }
    }
}

/// One server's tokens: the tokens of another URL are not these.
#[derive(Debug, Clone)]
pub(crate) struct ServerTokens {
    path: PathBuf,
    url: String,
}

/// The most a token file may hold; a larger one is refused unread.
const MAX_FILE: u64 = 1 << 20;

impl ServerTokens {
    fn read(&self) -> Result<Option<StoredCredentials>, String> {
        let file = match std::fs::File::open(&self.path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(format!("{}: {e}", self.path.display())),
        };
        let mut text = String::new();
        use std::io::Read;
        file.take(MAX_FILE + 1)
            .read_to_string(&mut text)
            .map_err(|e| format!("{}: {e}", self.path.display()))?;
        if text.len() as u64 > MAX_FILE {
            return Err(format!("{}: larger than 1 MiB", self.path.display()));
        }
        let kept: Kept = serde_json::from_str(&text)
            .map_err(|e| format!("{}: not a token file: {e}", self.path.display()))?;
        Ok((kept.url == self.url).then_some(kept.credentials))
    }

    fn write(&self, credentials: StoredCredentials) -> std::io::Result<()> {
        let dir = self.path.parent().unwrap_or(Path::new("."));
        create_private_dir(dir)?;
        let text = serde_json::to_vec(&Kept {
            url: self.url.clone(),
            credentials,
        })
        .map_err(std::io::Error::other)?;
        // Written beside, then renamed over: a reader sees the old file or the new one.
        let tmp = self
            .path
            .with_extension(format!("json.{}.tmp", std::process::id()));
        write_private(&tmp, &text)?;
        std::fs::rename(&tmp, &self.path).inspect_err(|_| {
            let _ = std::fs::remove_file(&tmp);
        })
    }
}

#[cfg(unix)]
fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
}

#[cfg(not(unix))]
fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)
}

#[cfg(unix)]
fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)?;
    f.write_all(bytes)?;
    f.sync_all()
}

#[cfg(not(unix))]
fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    std::fs::write(path, bytes)
}

fn store_error(e: impl std::fmt::Display) -> AuthError {
    AuthError::CredentialStoreError(e.to_string())
}

#[async_trait::async_trait]
impl CredentialStore for ServerTokens {
    async fn load(&self) -> Result<Option<StoredCredentials>, AuthError> {
        let me = self.clone();
        tokio::task::spawn_blocking(move || me.read())
            .await
            .map_err(store_error)?
            .map_err(store_error)
    }

    async fn save(&self, credentials: StoredCredentials) -> Result<(), AuthError> {
        let me = self.clone();
        tokio::task::spawn_blocking(move || me.write(credentials))
            .await
            .map_err(store_error)?
            .map_err(store_error)
    }

    async fn clear(&self) -> Result<(), AuthError> {
        match tokio::fs::remove_file(&self.path).await {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(store_error(e)),
        }
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
        std::fs::write(
            dir.path().join("s.json"),
            vec![b' '; (MAX_FILE + 10) as usize],
        )
        .unwrap();
        assert!(matches!(store.state("s", "u"), AuthState::Unreadable(m) if m.contains("1 MiB")));
    }
}
