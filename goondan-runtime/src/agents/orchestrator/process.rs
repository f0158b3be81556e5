//! Instances as OS processes (HO-8): the host program re-executed in agent mode, connected back
//! to the Orchestrator over a Unix socket in a private temporary directory.

use std::collections::HashMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::net::unix::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{UnixListener, UnixStream};
use tokio::process::Command;
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use super::agent_mode::{ENV_AGENT, ENV_INSTANCE, ENV_MAX_FRAME, ENV_SOCKET, ENV_TOKEN};
use super::ipc::{self, Control, IpcMessage, MessageType};
use super::link::{LaunchFuture, Launcher, Link, LinkControl};
use super::{AgentIdentity, codes, error};
use crate::lock;
use crate::tools::context::fresh_id;

/// How agent processes are started: the program (the host, re-executed), its arguments and
/// environment.
#[derive(Debug, Clone)]
pub struct ProcessConfig {
    program: PathBuf,
    args: Vec<OsString>,
    env: Vec<(OsString, OsString)>,
    connect_timeout: Duration,
    max_frame_bytes: usize,
}

impl ProcessConfig {
    /// Agents run `program`, which must call
    /// [`agent_mode::run_if_requested`](super::agent_mode::run_if_requested) first thing.
    pub fn new(program: impl Into<PathBuf>) -> Self {
        Self {
            program: program.into(),
            args: Vec::new(),
            env: Vec::new(),
            connect_timeout: Duration::from_secs(10),
            max_frame_bytes: ipc::DEFAULT_MAX_FRAME_BYTES,
        }
    }

    /// Agents run the current executable: the usual choice for a host program.
    pub fn current_exe() -> std::io::Result<Self> {
        Ok(Self::new(std::env::current_exe()?))
    }

    /// Adds an argument.
    #[must_use]
    pub fn arg(mut self, arg: impl Into<OsString>) -> Self {
        self.args.push(arg.into());
        self
    }

    /// Sets an environment variable of agent processes.
    #[must_use]
    pub fn env(mut self, name: impl Into<OsString>, value: impl Into<OsString>) -> Self {
        self.env.push((name.into(), value.into()));
        self
    }

    /// How long a started process has to connect back (default 10 s).
    #[must_use]
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }

    /// The largest IPC frame accepted from agents (default 4 MiB).
    #[must_use]
    pub fn max_frame_bytes(mut self, bytes: usize) -> Self {
        self.max_frame_bytes = bytes;
        self
    }
}

type Halves = (ipc::FrameReader<OwnedReadHalf>, OwnedWriteHalf, u32);
type Hellos = Arc<Mutex<HashMap<String, oneshot::Sender<Halves>>>>;

pub(crate) struct ProcessLauncher {
    config: ProcessConfig,
    path: PathBuf,
    hellos: Hellos,
    accept: tokio::task::JoinHandle<()>,
    _dir: tempfile::TempDir,
}

impl Drop for ProcessLauncher {
    fn drop(&mut self) {
        self.accept.abort();
    }
}

impl ProcessLauncher {
    /// Binds the socket and starts accepting agent connections. Needs a Tokio runtime.
    pub(crate) fn bind(config: ProcessConfig) -> std::io::Result<Self> {
        let dir = tempfile::Builder::new().prefix("goondan-orch-").tempdir()?;
        let path = dir.path().join("orchestrator.sock");
        let listener = UnixListener::bind(&path)?;
        let hellos: Hellos = Arc::default();
        let accept = tokio::spawn(accept_loop(
            listener,
            Arc::clone(&hellos),
            config.max_frame_bytes,
        ));
        Ok(Self {
            config,
            path,
            hellos,
            accept,
            _dir: dir,
        })
    }
}

/// Accepts connections; each must open with a `hello` carrying a token the Orchestrator issued.
/// Anything else is logged and dropped: a stray client cannot take the Orchestrator down.
async fn accept_loop(listener: UnixListener, hellos: Hellos, max_frame_bytes: usize) {
    loop {
        let stream = match listener.accept().await {
            Ok((stream, _)) => stream,
            Err(e) => {
                tracing::warn!(target: "goondan::orchestrator", error = %e, "accept failed");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        tokio::spawn(handshake(stream, Arc::clone(&hellos), max_frame_bytes));
    }
}

async fn handshake(stream: UnixStream, hellos: Hellos, max_frame_bytes: usize) {
    let (reader, writer) = stream.into_split();
    // The frame reader goes on to the link with whatever it read past the hello.
    let mut reader = ipc::frame_reader(reader, max_frame_bytes);
    let first = tokio::time::timeout(Duration::from_secs(5), ipc::read_frame(&mut reader)).await;
    let hello = match first {
        Ok(Ok(msg)) if msg.kind == MessageType::Event => {
            serde_json::from_value::<Control>(msg.payload).ok()
        }
        Ok(Ok(_)) => None,
        Ok(Err(e)) => {
            tracing::warn!(target: "goondan::orchestrator", error = %e, "a connection sent a bad first frame; dropped");
            return;
        }
        Err(_) => None,
    };
    let Some(Control::Hello { token, pid }) = hello else {
        tracing::warn!(target: "goondan::orchestrator", "a connection did not say hello; dropped");
        return;
    };
    let waiting = lock(&hellos).remove(&token);
    if let Some(tx) = waiting {
        let _ = tx.send((reader, writer, pid));
    } else {
        tracing::warn!(target: "goondan::orchestrator", "a connection presented an unknown token; dropped");
    }
}

struct ProcessControl {
    pid: Option<u32>,
    /// Sent, or dropped with the control, to kill the process.
    kill: Mutex<Option<oneshot::Sender<()>>>,
    ended: CancellationToken,
}

impl LinkControl for ProcessControl {
    fn pid(&self) -> Option<u32> {
        self.pid
    }

    fn kill(&self) {
        let tx = lock(&self.kill).take();
        if let Some(tx) = tx {
            let _ = tx.send(());
        }
    }

    fn ended(&self) -> &CancellationToken {
        &self.ended
    }
}

impl Launcher for ProcessLauncher {
    fn socket_path(&self) -> Option<&Path> {
        Some(&self.path)
    }

    fn launch(&self, id: AgentIdentity) -> LaunchFuture<'_> {
        Box::pin(async move {
            let token = format!("{}-{}", fresh_id("spawn"), std::process::id());
            let (hello_tx, hello_rx) = oneshot::channel();
            lock(&self.hellos).insert(token.clone(), hello_tx);
            let forget = || lock(&self.hellos).remove(&token);
            if let Err(e) = std::fs::create_dir_all(&id.workdir) {
                forget();
                return Err(format!("cannot create `{}`: {e}", id.workdir.display()));
            }
            let mut command = Command::new(&self.config.program);
            command
                .args(&self.config.args)
                .envs(self.config.env.iter().map(|(k, v)| (k, v)))
                .env(ENV_SOCKET, &self.path)
                .env(ENV_TOKEN, &token)
                .env(ENV_AGENT, &id.agent)
                .env(ENV_INSTANCE, &id.instance_key)
                .env(ENV_MAX_FRAME, self.config.max_frame_bytes.to_string())
                .current_dir(&id.workdir)
                .stdin(Stdio::null())
                .kill_on_drop(true);
            let mut child = match command.spawn() {
                Ok(c) => c,
                Err(e) => {
                    forget();
                    return Err(format!(
                        "cannot run `{}`: {e}",
                        self.config.program.display()
                    ));
                }
            };
            let connected = tokio::select! {
                r = tokio::time::timeout(self.config.connect_timeout, hello_rx) => match r {
                    Ok(Ok(halves)) => Ok(halves),
                    _ => Err(format!("the agent process did not connect within {} ms", self.config.connect_timeout.as_millis())),
                },
                status = child.wait() => Err(format!("the agent process exited before connecting ({})",
                    status.map_or_else(|e| e.to_string(), |s| s.to_string()))),
            };
            let (reader, writer, pid) = match connected {
                Ok(h) => h,
                Err(e) => {
                    forget();
                    return Err(e);
                }
            };
            let max = self.config.max_frame_bytes;
            let (in_tx, from_agent) = mpsc::unbounded_channel();
            // Weak, so that the link still ends when the reader does.
            let loopback = in_tx.downgrade();
            let (to_agent, out_rx) = mpsc::unbounded_channel::<IpcMessage>();
            tokio::spawn(ipc::pump_out(
                writer,
                out_rx,
                max,
                "orchestrator",
                move |msg, len, limit| {
                    if msg.kind != MessageType::Delegate {
                        return ipc::OnOversized::Drop;
                    }
                    // Answer the caller now, as if from the agent, instead of a timeout.
                    let err = error(
                        codes::PROTOCOL,
                        "AgentRequestTooLargeError",
                        format!(
                            "the request of {len} bytes exceeds the IPC frame limit of {limit} bytes"
                        ),
                        "send a shorter input, or write it to a file and send the path",
                    );
                    let answer = IpcMessage::new(
                        MessageType::DelegateResult,
                        msg.to,
                        msg.from,
                        ipc::error_payload(&err),
                        msg.correlation_id,
                    );
                    if let Some(tx) = loopback.upgrade() {
                        let _ = tx.send(answer);
                    }
                    ipc::OnOversized::Handled
                },
            ));
            let read = tokio::spawn(ipc::pump_in(reader, in_tx, "orchestrator"));
            let (kill_tx, kill_rx) = oneshot::channel::<()>();
            let ended = CancellationToken::new();
            let exited = ended.clone();
            tokio::spawn(async move {
                tokio::select! {
                    _ = child.wait() => {}
                    _ = kill_rx => {
                        let _ = child.start_kill();
                        let _ = child.wait().await;
                    }
                }
                // Reaped: its pid is gone.
                exited.cancel();
                // The socket closes with the process; this only covers a descendant that kept it.
                tokio::time::sleep(Duration::from_secs(1)).await;
                read.abort();
            });
            Ok(Link {
                tx: to_agent,
                rx: from_agent,
                control: Box::new(ProcessControl {
                    pid: Some(pid),
                    kill: Mutex::new(Some(kill_tx)),
                    ended,
                }),
            })
        })
    }
}
