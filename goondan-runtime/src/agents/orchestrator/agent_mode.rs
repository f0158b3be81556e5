//! The agent process side: an [`AgentWorker`] answers the events routed to its instance.
//!
//! The Orchestrator starts an agent by re-executing the host program with `GOONDAN_AGENT_*`
//! variables set. The host calls [`run_if_requested`] first thing in `main`: in the
//! Orchestrator's own process it returns at once; in an agent process it connects to the
//! Orchestrator, serves the worker until told to shut down (or until the Orchestrator is gone)
//! and exits the process.

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use futures_util::FutureExt;
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio::task::JoinSet;

use super::ipc::{self, Control, DelegatePayload, IpcMessage, MessageType, ORCHESTRATOR};
use super::runtime::{Conn, LinkRuntime};
use super::{address, codes, error, protocol};
use crate::calls::refusal::panic_error;
use crate::lock;
use crate::tools::agent::{AgentEvent, AgentFuture, AgentRuntime};
use crate::tools::context::{ToolContextBuilder, fresh_id};
use crate::tools::error::ToolError;

/// The Orchestrator's Unix socket; its presence puts a host program in agent mode.
pub const ENV_SOCKET: &str = "GOONDAN_AGENT_SOCKET";
/// The token the agent process presents when it connects.
pub const ENV_TOKEN: &str = "GOONDAN_AGENT_TOKEN";
/// The agent's name.
pub const ENV_AGENT: &str = "GOONDAN_AGENT_NAME";
/// The instance key.
pub const ENV_INSTANCE: &str = "GOONDAN_AGENT_INSTANCE";
/// The largest IPC frame, in bytes, both ways.
pub const ENV_MAX_FRAME: &str = "GOONDAN_AGENT_MAX_FRAME";

/// Which instance this process is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentIdentity {
    /// The agent's name.
    pub agent: String,
    /// The instance key.
    pub instance_key: String,
    /// The instance's working directory.
    pub workdir: PathBuf,
}

impl AgentIdentity {
    /// `agent/instanceKey`, the instance's address in IPC messages.
    pub fn address(&self) -> String {
        address(&self.agent, &self.instance_key)
    }
}

/// What a worker knows about the event it handles.
#[derive(Clone)]
pub struct AgentContext {
    identity: Arc<AgentIdentity>,
    from: String,
    correlation_id: Option<String>,
    trace_id: Option<String>,
    turn_id: Option<String>,
    runtime: Arc<dyn AgentRuntime>,
    /// A restart this instance asked for, shared by the contexts of its events.
    restart: Arc<Mutex<Option<String>>>,
}

impl std::fmt::Debug for AgentContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentContext")
            .field("identity", &self.identity)
            .field("from", &self.from)
            .field("correlation_id", &self.correlation_id)
            .finish_non_exhaustive()
    }
}

impl AgentContext {
    /// This instance.
    pub fn identity(&self) -> &AgentIdentity {
        &self.identity
    }

    /// The sender's address (`agent/instanceKey`, or `orchestrator` for the host).
    pub fn from(&self) -> &str {
        &self.from
    }

    /// The request's correlation id (HO-3); `None` for a one-way event.
    pub fn correlation_id(&self) -> Option<&str> {
        self.correlation_id.as_deref()
    }

    /// The caller's trace id, when it sent one.
    pub fn caller_trace_id(&self) -> Option<&str> {
        self.trace_id.as_deref()
    }

    /// The caller's Turn id, when it sent one.
    pub fn caller_turn_id(&self) -> Option<&str> {
        self.turn_id.as_deref()
    }

    /// The agent-to-agent API for calls made while handling this event; requests made through
    /// it carry the call chain, so a cycle back to a waiting caller is refused.
    pub fn runtime(&self) -> &Arc<dyn AgentRuntime> {
        &self.runtime
    }

    /// Asks for this instance's process to be restarted (the base package's `self-restart`
    /// tool asks through its output; see [`RestartSignal`](crate::tools::agent::RestartSignal)).
    ///
    /// Nothing stops at once: the current event's answer goes out as usual. The instance then
    /// tells the Orchestrator, which sends it no new work (it waits for the next process),
    /// lets it finish what it is doing, and starts a new process as soon as it exits, without
    /// counting it as a crash. Asking twice before the restart keeps the last reason.
    pub fn request_restart(&self, reason: impl Into<String>) {
        *lock(&self.restart) = Some(reason.into());
    }

    /// A [`ToolContext`](crate::ToolContext) builder for this instance: its name, key and
    /// workdir, the caller's trace continued (HO-3), and this runtime.
    pub fn tool_context(&self) -> ToolContextBuilder {
        let mut builder = crate::ToolContext::builder(&self.identity.workdir)
            .agent_name(&self.identity.agent)
            .instance_key(&self.identity.instance_key)
            .runtime(Arc::clone(&self.runtime));
        if let Some(trace) = &self.trace_id {
            builder = builder.trace_id(trace);
        }
        builder
    }
}

/// The code that answers an agent's events: a step loop over a model, or a scripted sequence.
pub trait AgentWorker: Send + Sync + 'static {
    /// Handles one event; for a `delegate` the value is the response the caller gets.
    fn handle(&self, event: AgentEvent, ctx: AgentContext) -> AgentFuture<'_, Value>;
}

struct FnWorker<F>(F);

impl<F, Fut> AgentWorker for FnWorker<F>
where
    F: Fn(AgentEvent, AgentContext) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Value, ToolError>> + Send + 'static,
{
    fn handle(&self, event: AgentEvent, ctx: AgentContext) -> AgentFuture<'_, Value> {
        Box::pin((self.0)(event, ctx))
    }
}

/// A worker from an async closure.
///
/// ```
/// use goondan_runtime::agents::orchestrator::worker_fn;
/// let echo = worker_fn(|event, _ctx| async move { Ok(event.input) });
/// # drop(echo);
/// ```
pub fn worker_fn<F, Fut>(f: F) -> impl AgentWorker
where
    F: Fn(AgentEvent, AgentContext) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Value, ToolError>> + Send + 'static,
{
    FnWorker(f)
}

/// In an agent process (the Orchestrator set [`ENV_SOCKET`] and [`ENV_TOKEN`]), serves the worker `build` makes
/// for this instance and exits the process; otherwise returns at once. Call it first thing in
/// `main`, before starting a Tokio runtime. `build` runs inside the process's runtime (not in a
/// task), so it may start what lives on it and wait for it with
/// `tokio::runtime::Handle::current().block_on`.
pub fn run_if_requested<W, F>(build: F)
where
    W: AgentWorker,
    F: FnOnce(&AgentIdentity) -> W,
{
    // Both are needed: a program started by one of the agent's tools inherits the socket
    // variable, but not the token (the `bash` tool strips `*_TOKEN`), and runs normally.
    let Some(socket) = std::env::var_os(ENV_SOCKET) else {
        return;
    };
    if std::env::var_os(ENV_TOKEN).is_none_or(|t| t.is_empty()) {
        return;
    }
    let code = match agent_main(Path::new(&socket), build) {
        Ok(()) => 0,
        Err(err) => {
            tracing::error!(target: "goondan::agent", error = %err, "agent process failed");
            1
        }
    };
    // The spans of the last Turns, sent before the process ends.
    #[cfg(feature = "otel")]
    crate::telemetry::shutdown();
    std::process::exit(code)
}

fn agent_main<W, F>(socket: &Path, build: F) -> std::io::Result<()>
where
    W: AgentWorker,
    F: FnOnce(&AgentIdentity) -> W,
{
    let var = |name: &str| std::env::var(name).unwrap_or_default();
    let identity = AgentIdentity {
        agent: var(ENV_AGENT),
        instance_key: var(ENV_INSTANCE),
        workdir: std::env::current_dir()?,
    };
    let token = var(ENV_TOKEN);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let max = std::env::var(ENV_MAX_FRAME)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(ipc::DEFAULT_MAX_FRAME_BYTES);
    // Hello first (this process is the agent the Orchestrator started): its start deadline
    // covers the process's start, not what its worker then starts (MCP servers, each within
    // its own startup timeout). Requests wait in the socket until the worker serves them.
    let stream = rt.block_on(async {
        let mut stream = tokio::net::UnixStream::connect(socket).await?;
        let hello = Control::Hello {
            token,
            pid: std::process::id(),
        };
        let hello = serde_json::to_value(&hello).map_err(std::io::Error::other)?;
        let hello = IpcMessage::new(
            MessageType::Event,
            identity.address(),
            ORCHESTRATOR,
            hello,
            None,
        );
        ipc::write_frame(&mut stream, &hello, max)
            .await
            .map_err(std::io::Error::other)?;
        Ok::<_, std::io::Error>(stream)
    })?;
    // The worker is built inside the runtime (not in a task): it may start what lives on it,
    // such as the child processes and sessions of MCP servers, with `Handle::current()`.
    let worker: Arc<dyn AgentWorker> = {
        let _inside = rt.enter();
        Arc::new(build(&identity))
    };
    rt.block_on(serve_stream(stream, max, Arc::new(identity), worker))
}

/// Serves a worker over a connected socket, after its hello, until shutdown or EOF.
async fn serve_stream(
    stream: tokio::net::UnixStream,
    max: usize,
    identity: Arc<AgentIdentity>,
    worker: Arc<dyn AgentWorker>,
) -> std::io::Result<()> {
    let (reader, writer) = stream.into_split();
    let (out_tx, out_rx) = mpsc::unbounded_channel::<IpcMessage>();
    let write = tokio::spawn(ipc::pump_out(
        writer,
        out_rx,
        max,
        "agent",
        |msg, len, limit| {
            if msg.kind != MessageType::DelegateResult {
                return ipc::OnOversized::Drop;
            }
            // The caller gets a structured error now rather than a timeout later.
            let err = error(
                codes::PROTOCOL,
                "AgentAnswerTooLargeError",
                format!("the answer of {len} bytes exceeds the IPC frame limit of {limit} bytes"),
                "ask for a shorter answer, or have the agent write it to a file and answer with the path",
            );
            ipc::OnOversized::Replace(IpcMessage {
                payload: ipc::error_payload(&err),
                ..msg
            })
        },
    ));
    let (in_tx, in_rx) = mpsc::unbounded_channel();
    let read = tokio::spawn(ipc::pump_in(ipc::frame_reader(reader, max), in_tx, "agent"));
    // Held past `serve`: the link stays open while the last spans are sent, so the
    // Orchestrator, which waits for the link to close, does not end the run before them.
    let open = out_tx.clone();
    serve(identity, worker, in_rx, out_tx).await;
    #[cfg(feature = "otel")]
    let _ = tokio::task::spawn_blocking(crate::telemetry::shutdown).await;
    drop(open);
    read.abort();
    let _ = write.await;
    Ok(())
}

/// The agent loop over any transport: runs a task per incoming event, answers delegates, hands
/// answers to waiting calls. Returns after a `shutdown` once in-flight work is done, or when
/// the Orchestrator's side closes.
pub(crate) async fn serve(
    identity: Arc<AgentIdentity>,
    worker: Arc<dyn AgentWorker>,
    mut rx: mpsc::UnboundedReceiver<IpcMessage>,
    tx: mpsc::UnboundedSender<IpcMessage>,
) {
    let conn = Arc::new(Conn::new(identity.address(), tx));
    let restart = Arc::new(Mutex::new(None));
    let mut tasks: JoinSet<Done> = JoinSet::new();
    let mut stopping = false;
    let mut restart_asked = false;
    loop {
        if stopping && tasks.is_empty() {
            break;
        }
        let msg = tokio::select! {
            msg = rx.recv() => msg,
            Some(done) = tasks.join_next(), if !tasks.is_empty() => {
                match done {
                    // The Orchestrator holds new work back: finish what runs, then exit.
                    Ok(Done::RestartAccepted) => stopping = true,
                    Ok(Done::Event) if !restart_asked => {
                        if let Some(reason) = lock(&restart).take() {
                            restart_asked = true;
                            tasks.spawn(ask_restart(Arc::clone(&conn), reason));
                        }
                    }
                    _ => {}
                }
                continue;
            }
        };
        let Some(msg) = msg else { break };
        match msg.kind {
            MessageType::DelegateResult => {
                conn.answer(&msg);
            }
            MessageType::Shutdown => stopping = true,
            MessageType::Event if conn.answer(&msg) => {}
            MessageType::Delegate if stopping => {
                let refusal = error(
                    codes::SHUTTING_DOWN,
                    "AgentShuttingDownError",
                    format!("agent `{}` is shutting down", identity.agent),
                    "the swarm is stopping; finish the task without this agent",
                );
                reply(&conn, &msg, Err(refusal));
            }
            MessageType::Delegate | MessageType::Event => {
                let (conn, worker, identity, restart) = (
                    Arc::clone(&conn),
                    Arc::clone(&worker),
                    Arc::clone(&identity),
                    Arc::clone(&restart),
                );
                tasks.spawn(async move {
                    handle(conn, worker, identity, restart, msg).await;
                    Done::Event
                });
            }
        }
    }
    conn.close();
}

/// What a task of the agent loop finished.
enum Done {
    /// An event's work.
    Event,
    /// The Orchestrator accepted a restart: it sends no new work.
    RestartAccepted,
    /// The restart was refused (the swarm is stopping) or could not be asked for.
    RestartRefused,
}

async fn ask_restart(conn: Arc<Conn>, reason: String) -> Done {
    match conn.control(Control::Restart { reason }).await {
        Ok(v) if v.get("restarting") == Some(&Value::Bool(true)) => Done::RestartAccepted,
        Ok(_) => Done::RestartRefused,
        Err(e) => {
            tracing::warn!(target: "goondan::agent", error = %e, "the restart could not be asked for");
            Done::RestartRefused
        }
    }
}

async fn handle(
    conn: Arc<Conn>,
    worker: Arc<dyn AgentWorker>,
    identity: Arc<AgentIdentity>,
    restart: Arc<Mutex<Option<String>>>,
    msg: IpcMessage,
) {
    let delegate = msg.kind == MessageType::Delegate;
    let parsed = if delegate {
        serde_json::from_value::<DelegatePayload>(msg.payload.clone())
            .map_err(|e| protocol(format!("a delegate payload is malformed: {e}")))
    } else {
        ipc::event_of(&msg.payload).map(|event| DelegatePayload {
            event,
            chain: Vec::new(),
            timeout_ms: 0,
            trace_id: None,
            turn_id: None,
            traceparent: ipc::traceparent_of(&msg.payload),
        })
    };
    let payload = match parsed {
        Ok(p) => p,
        Err(e) => {
            tracing::warn!(target: "goondan::agent", error = %e, "event dropped");
            if delegate {
                reply(&conn, &msg, Err(e));
            }
            return;
        }
    };
    let runtime: Arc<dyn AgentRuntime> = Arc::new(LinkRuntime {
        conn: Arc::clone(&conn),
        chain: payload.chain,
    });
    let ctx = AgentContext {
        identity,
        from: msg.from.clone(),
        correlation_id: msg.correlation_id.clone().filter(|_| delegate),
        trace_id: payload.trace_id,
        turn_id: payload.turn_id,
        runtime,
        restart,
    };
    let span = tracing::info_span!(
        "agent_event",
        agent = %ctx.identity.agent,
        instance = %ctx.identity.instance_key,
        from = %msg.from,
        correlation_id = msg.correlation_id.as_deref().unwrap_or(""),
    );
    if let Some(parent) = &payload.traceparent {
        crate::telemetry::continue_trace(&span, parent);
    }
    let work = AssertUnwindSafe(worker.handle(payload.event, ctx)).catch_unwind();
    let result = match tracing::Instrument::instrument(work, span).await {
        Ok(r) => r,
        Err(panic) => Err(panic_error(&*panic)),
    };
    if delegate {
        reply(&conn, &msg, result);
    } else if let Err(e) = result {
        tracing::warn!(target: "goondan::agent", error = %e, "a one-way event failed");
    }
}

fn reply(conn: &Conn, request: &IpcMessage, result: Result<Value, ToolError>) {
    let payload = match result {
        Ok(response) => ipc::ok_payload(json!({
            "eventId": fresh_id("evt"),
            "response": response,
        })),
        Err(e) => ipc::error_payload(&e),
    };
    conn.send(IpcMessage::new(
        MessageType::DelegateResult,
        &conn.me,
        &request.from,
        payload,
        request.correlation_id.clone(),
    ));
}
