//! How to reach the NATS server: its address, credentials and TLS, passed through to
//! `async-nats`'s `ConnectOptions`.

use std::path::PathBuf;
use std::time::Duration;

use crate::agents::orchestrator::OrchestratorError;

/// How a connection authenticates.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum NatsAuth {
    /// No credentials.
    #[default]
    None,
    /// A user and a password (`nats-server --user U --pass P`).
    UserPassword {
        /// The user.
        user: String,
        /// The password.
        password: String,
    },
    /// A token (`nats-server --auth T`).
    Token(String),
    /// A `.creds` file (a JWT and an NKey seed).
    CredsFile(PathBuf),
    /// An NKey seed.
    NKey(String),
}

/// Where the NATS server is and how to connect to it.
///
/// ```
/// use std::time::Duration;
/// use goondan_runtime::agents::orchestrator::nats::{NatsAuth, NatsOptions};
///
/// let o = NatsOptions::new("nats://10.0.0.1:4222")
///     .auth(NatsAuth::UserPassword { user: "a".into(), password: "b".into() })
///     .heartbeat(Duration::from_millis(200));
/// assert_eq!(o.url, "nats://10.0.0.1:4222");
/// ```
#[derive(Debug, Clone)]
pub struct NatsOptions {
    /// The server, `nats://host:port` (`tls://` for TLS).
    pub url: String,
    /// The credentials.
    pub auth: NatsAuth,
    /// Extra root certificates (PEM files) to trust.
    pub root_certificates: Vec<PathBuf>,
    /// A client certificate and its key (PEM files), for mutual TLS.
    pub client_certificate: Option<(PathBuf, PathBuf)>,
    /// Refuse a connection without TLS.
    pub require_tls: bool,
    /// How often a caller checks that the host serving its request is alive (default 250 ms);
    /// a host silent for two of these fails the request.
    pub heartbeat: Duration,
}

impl NatsOptions {
    /// The server at `url`, without credentials or TLS.
    pub fn new(url: impl Into<String>) -> Self {
        Self {
            url: url.into(),
            auth: NatsAuth::None,
            root_certificates: Vec::new(),
            client_certificate: None,
            require_tls: false,
            heartbeat: Duration::from_millis(250),
        }
    }

    /// With credentials.
    #[must_use]
    pub fn auth(mut self, auth: NatsAuth) -> Self {
        self.auth = auth;
        self
    }

    /// Also trusting the root certificate (a PEM file) `ca`, for a server whose certificate
    /// no public authority signed; implies TLS.
    #[must_use]
    pub fn root_certificate(mut self, ca: impl Into<PathBuf>) -> Self {
        self.root_certificates.push(ca.into());
        self.require_tls = true;
        self
    }

    /// Refusing (`true`) or allowing a connection without TLS.
    #[must_use]
    pub fn require_tls(mut self, required: bool) -> Self {
        self.require_tls = required;
        self
    }

    /// With the heartbeat interval.
    #[must_use]
    pub fn heartbeat(mut self, every: Duration) -> Self {
        self.heartbeat = every;
        self
    }

    /// Connects, naming the connection `name` (seen in the server's monitoring): for a
    /// [`NatsJournal`](crate::step::journal::NatsJournal) on the swarm's server, say.
    pub async fn connect(&self, name: &str) -> Result<async_nats::Client, NatsError> {
        // async-nats asks rustls for the process's provider: ring, unless the program chose one
        // (a program may link another provider beside ring, and then rustls cannot pick).
        crate::tls::install_crypto_provider();
        let mut o = match &self.auth {
            NatsAuth::None => async_nats::ConnectOptions::new(),
            NatsAuth::UserPassword { user, password } => {
                async_nats::ConnectOptions::with_user_and_password(user.clone(), password.clone())
            }
            NatsAuth::Token(t) => async_nats::ConnectOptions::with_token(t.clone()),
            NatsAuth::NKey(seed) => async_nats::ConnectOptions::with_nkey(seed.clone()),
            NatsAuth::CredsFile(path) => async_nats::ConnectOptions::with_credentials_file(path)
                .await
                .map_err(|source| NatsError::Credentials {
                    path: path.clone(),
                    source,
                })?,
        };
        for cert in &self.root_certificates {
            o = o.add_root_certificates(cert.clone());
        }
        if let Some((cert, key)) = &self.client_certificate {
            o = o.add_client_certificate(cert.clone(), key.clone());
        }
        o = o
            .require_tls(self.require_tls)
            .name(name)
            .connection_timeout(Duration::from_secs(5));
        o.connect(self.url.as_str())
            .await
            .map_err(|source| NatsError::Connect {
                url: self.url.clone(),
                hint: hint(&source),
                source,
            })
    }
}

fn hint(error: &async_nats::ConnectError) -> &'static str {
    use async_nats::ConnectErrorKind as K;
    // rustls' refusals of the server's certificate come as I/O errors.
    let text = error.to_string().to_ascii_lowercase();
    if text.contains("certificate") || text.contains("tls") {
        return "check the TLS options: root certificates, client certificate, `tls://` URL";
    }
    match error.kind() {
        K::AuthorizationViolation | K::Authentication => {
            "the server refused the credentials: check the user and password, token, creds file or nkey"
        }
        K::Tls => "check the TLS options: root certificates, client certificate, `tls://` URL",
        K::ServerParse | K::Dns => "check the URL: `nats://host:port`",
        _ => {
            "is nats-server running and reachable at that address? (`scripts/nats-server` installs it)"
        }
    }
}

/// Why a NATS host or entry side could not start or serve.
#[derive(Debug, thiserror::Error)]
pub enum NatsError {
    /// The connection failed.
    #[error("cannot connect to NATS at {url}: {source}; {hint}")]
    Connect {
        /// The server.
        url: String,
        /// What to check.
        hint: &'static str,
        /// The client's error.
        #[source]
        source: async_nats::ConnectError,
    },
    /// The creds file could not be read.
    #[error("cannot read the NATS creds file {}: {source}", path.display())]
    Credentials {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A subscription failed.
    #[error("cannot subscribe to {subject}: {source}")]
    Subscribe {
        /// The subject.
        subject: String,
        /// The client's error.
        #[source]
        source: async_nats::SubscribeError,
    },
    /// The subscriptions could not be confirmed with the server.
    #[error("cannot reach NATS: {0}")]
    Flush(#[source] async_nats::client::FlushError),
    /// A name cannot be a NATS subject token.
    #[error(
        "the {what} name `{name}` cannot be part of a NATS subject (no `.`, `*`, `>` or spaces)"
    )]
    Name {
        /// Swarm, agent or host.
        what: &'static str,
        /// The name.
        name: String,
    },
    /// An agent placed on the host is not in the swarm.
    #[error("agent `{agent}` is not defined in swarm `{swarm}`")]
    UnknownAgent {
        /// The swarm.
        swarm: String,
        /// The agent.
        agent: String,
    },
    /// The local Orchestrator could not start.
    #[error(transparent)]
    Orchestrator(#[from] OrchestratorError),
}
