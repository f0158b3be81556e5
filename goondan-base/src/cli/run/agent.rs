//! The agent-process side of `goondan run`. The `goondan` program is its own agent host: the
//! Orchestrator re-executes it for each agent instance, and [`serve_if_requested`] (called
//! first thing by [`crate::cli::run_with`]) serves the bundle's Agent there with a
//! [`StepWorker`], plus, under `goondan run`:
//!
//! - a [`Reporter`] `toolCall` middleware telling the terminal each call's start and end, and
//!   a delta sink streaming the answer's text (both over the [session link](super::link));
//! - the [`Approvals`] middleware, asking the terminal's person ([`LinkApprover`]) and keeping
//!   each question in the state directory (`approvals.sqlite3`, a [`WaitingApprover`]) until
//!   it is answered there or with `goondan approvals answer`, across restarts and crashes;
//! - the terminal's person as the one who fills the forms a call asks for ([`LinkPerson`]:
//!   a tool's `elicit`, a bridged MCP server's elicitation);
//! - the run journal in the state directory (`journal/{agent}.{instanceKey}.sqlite3`): every
//!   Turn is written as it runs, so that a restarted process (`self-restart__request`, a
//!   crash, the next run) goes on with the conversation and finishes a Turn a crash left; a
//!   conversation file of an earlier version (`conversations/*.jsonl`) is moved into it once;
//!   what a `bash` call of a killed predecessor left running is ended first
//!   ([`crate::bash::end_stale_calls`]);
//! - Turns the terminal can cancel (Ctrl-C).

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

use goondan_runtime::agents::orchestrator::SwarmSpec;
use goondan_runtime::agents::orchestrator::agent_mode::{
    self, AgentContext, AgentIdentity, AgentWorker,
};
use goondan_runtime::agents::swarm::{ENV_BUNDLE, StepWorker};
use goondan_runtime::bundle::{Bundle, Kind, ToolLibrary};
use goondan_runtime::calls::approval::{
    ApprovalRequest, Approvals, Approver, Decision, DecisionFuture, Policy, Question,
    QuestionStore, WaitingApprover,
};
use goondan_runtime::calls::middleware::MiddlewareFuture;
use goondan_runtime::extension::{ExtensionError, PipelineMiddleware};
use goondan_runtime::mcp::client::SkillsShown;
use goondan_runtime::mcp::client::{LeftOutTool, McpExtension, ServerStatus};
use goondan_runtime::step::{DeltaSink, ModelDelta};
use goondan_runtime::tools::agent::{AgentEvent, AgentFuture};
use goondan_runtime::tools::context::{
    AnswerFuture, AskError, Caller, LogLevel, Progress, ProgressSink,
};
use goondan_runtime::{CallContext, Extension, ExtensionApi, Middleware, Next};
use serde_json::Value;
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use super::link::{
    Answer, ENV_APPROVAL_EXPIRY, ENV_APPROVE, ENV_APPROVE_TOOLS, ENV_SESSION, ENV_STATE,
    FormAnswer, Note, Order, line, short,
};
use super::{journal, model, questions, state};

/// In an agent process started by an Orchestrator, serves the bundle's Agent and exits;
/// otherwise returns at once.
pub(crate) fn serve_if_requested(library: &ToolLibrary) {
    agent_mode::run_if_requested(|me| {
        // A predecessor killed mid-call left its command running: it ends before this agent
        // resumes the Turn and tells the model that call was interrupted.
        crate::bash::end_stale_calls();
        set_sandbox(me);
        RunWorker::new(me, library)
    });
}

/// Sets the sandbox of this agent's base tools: its `policy.sandbox` in the bundle, the mode
/// replaced by `goondan run --sandbox`, the bundle and the state directory denied. A policy
/// that cannot be used is logged, and the tools run read-only rather than with less
/// confinement than the bundle asked.
fn set_sandbox(me: &AgentIdentity) {
    let bundle = std::env::var_os(ENV_BUNDLE).map(PathBuf::from);
    let state = std::env::var_os(ENV_STATE).map(PathBuf::from);
    let policy =
        super::sandbox::bundle_sandbox(bundle.as_deref(), Some(&me.agent), state.as_deref());
    let mut policy = match policy {
        Ok(policy) => policy,
        Err(e) => {
            tracing::error!(target: "goondan::run", error = %e, "policy.sandbox cannot be used; commands run read-only");
            let _ = crate::sandbox::set_host_policy(crate::sandbox::SandboxPolicy::new(
                crate::sandbox::SandboxMode::ReadOnly,
            ));
            return;
        }
    };
    let flag = std::env::var(super::link::ENV_SANDBOX).ok();
    if let Some(mode) = flag.and_then(|m| m.parse().ok()) {
        policy.mode = mode;
    }
    let _ = crate::sandbox::set_host_policy(policy);
}

/// A [`StepWorker`] that keeps its conversation in the state directory.
struct RunWorker {
    inner: StepWorker,
    conversation: Option<PathBuf>,
    /// Whether the instance keeps its Turns in the run journal (then the conversation file
    /// is only read, once).
    journaled: bool,
    link: Option<Arc<AgentLink>>,
    address: String,
}

impl RunWorker {
    fn new(me: &AgentIdentity, library: &ToolLibrary) -> Self {
        let link = AgentLink::from_env(me);
        // The bundle the Orchestrator passed; when it cannot be read, the worker says why.
        let bundle = std::env::var_os(ENV_BUNDLE).and_then(|p| Bundle::load(p).ok());
        let models = model::factory(
            bundle
                .clone()
                .unwrap_or_else(|| Bundle::from_yaml("", "goondan.yaml")),
        );
        let state = std::env::var_os(ENV_STATE).map(PathBuf::from);
        let conversation = state
            .as_deref()
            .map(|s| state::conversation_file(s, &me.agent, &me.instance_key));
        let history = conversation
            .as_deref()
            .map(state::load)
            .transpose()
            .unwrap_or_else(|e| {
                tracing::error!(target: "goondan::run", error = %e, "the conversation cannot be read; starting a new one");
                None
            })
            .unwrap_or_default();
        let policy = std::env::var(ENV_APPROVE)
            .ok()
            .and_then(|p| p.parse().ok())
            .unwrap_or(Policy::AskWhenDestructive);
        let tool_policies: Vec<(String, Policy)> = std::env::var(ENV_APPROVE_TOOLS)
            .unwrap_or_default()
            .lines()
            .filter_map(|line| {
                let (pattern, policy) = line.split_once('=')?;
                Some((pattern.to_owned(), policy.parse().ok()?))
            })
            .collect();
        let setting = bundle.as_ref().and_then(|b| b.journal(&me.agent));
        let journal = journal::open_from_env(&me.agent, &me.instance_key, setting.as_ref());
        // The questions go where the journal goes: on JetStream, any host finds them.
        let nats = journal::nats_url(setting.as_ref());
        let questions = questions::open_for_agent(state.as_deref(), nats.as_deref());
        let expiry = std::env::var(ENV_APPROVAL_EXPIRY)
            .ok()
            .and_then(|ms| ms.parse().ok())
            .map(std::time::Duration::from_millis);
        let customize = |mut builder: goondan_runtime::step::AgentInstanceBuilder| {
            builder = builder.conversation(history.clone());
            if let Some(journal) = &journal {
                builder = builder.journal(Arc::clone(journal));
            }
            if let Some(state) = &state {
                builder = builder.state_dir(state);
            }
            if let Some(link) = &link {
                let sink = Arc::clone(link);
                builder = builder
                    .person(Arc::new(LinkPerson(Arc::clone(link))))
                    .progress(Arc::new(LinkProgress(Arc::clone(link))))
                    .deltas(DeltaSink::new(move |d| {
                        if let ModelDelta::Text(text) = d {
                            sink.send(&Note::Delta { text: text.clone() });
                        }
                    }))
                    .extension(Terminal {
                        link: Arc::clone(link),
                        policy,
                        tool_policies: tool_policies.clone(),
                        questions: questions.clone(),
                        expiry,
                    });
            }
            builder
        };
        let mcp = bundle
            .as_ref()
            .map(|b| mcp_extensions(b, &me.agent, link.as_deref()))
            .unwrap_or_default();
        let callable = bundle
            .as_ref()
            .map(|b| callable_agents(b, &me.agent))
            .unwrap_or_default();
        let code_mode = bundle
            .as_ref()
            .and_then(|b| b.code_mode(&me.agent))
            .map(crate::code_worker::as_this_host_runs_it);
        let customize = |mut builder: goondan_runtime::step::AgentInstanceBuilder| {
            for extension in &mcp {
                builder = builder.extension_arc(Arc::clone(extension));
            }
            builder = builder.extension(crate::agents::targets(callable.clone()));
            if let Some(mode) = &code_mode {
                builder = builder.code_mode(mode.clone());
            }
            customize(builder)
        };
        let mut inner = StepWorker::from_env_with(me, library, &models, &customize);
        if let Some(link) = link.clone() {
            inner = inner.turn_cancellation(move || link.new_turn());
        }
        Self {
            inner,
            conversation,
            journaled: journal.is_some(),
            link,
            address: me.address(),
        }
    }
}

/// The MCP Extensions the agent lists in `spec.extensions`, connected: their servers started
/// and their tools listed before the first Step. A server that is not up is left out (its
/// tools come when it is), and the terminal is told which and why. One that cannot be read,
/// or whose required server is not up, becomes an extension that fails to register, so the
/// agent's load fails with the reason (`E_AGENT_LOAD`) instead of running without the tools
/// it was given.
fn mcp_extensions(
    bundle: &Bundle,
    agent: &str,
    link: Option<&AgentLink>,
) -> Vec<Arc<dyn Extension>> {
    let configs = match bundle.agent_mcp_extensions(agent) {
        Ok(configs) => configs,
        Err(e) => return vec![Arc::new(Unavailable(e.to_string()))],
    };
    let Ok(runtime) = tokio::runtime::Handle::try_current() else {
        return vec![Arc::new(Unavailable(
            "MCP servers are connected inside the agent process's runtime".to_owned(),
        ))];
    };
    let bundle_path = std::env::var_os(ENV_BUNDLE).map(PathBuf::from);
    let state = std::env::var_os(ENV_STATE).map(PathBuf::from);
    let flag = std::env::var(super::link::ENV_SANDBOX)
        .ok()
        .and_then(|mode| mode.parse().ok());
    let mut showing = Vec::new();
    let mut extensions = configs
        .into_iter()
        .map(|config| {
            let config = super::sandbox::sandboxed_servers(
                config,
                bundle_path.as_deref(),
                state.as_deref(),
                flag,
            );
            let name = config.name().to_owned();
            let skills = config.skills_shown();
            match runtime.block_on(McpExtension::connect(config)) {
                Ok(mcp) => {
                    for (server, status) in mcp.statuses() {
                        let why = match status {
                            ServerStatus::Up { .. } => {
                                let left = LeftOutTool::summary(&mcp.left_out(&server));
                                if let (Some(link), Some(why)) = (link, left) {
                                    link.send(&Note::ToolsLeftOut {
                                        extension: name.clone(),
                                        server,
                                        why,
                                    });
                                }
                                continue;
                            }
                            ServerStatus::Starting => "it is still starting".to_owned(),
                            ServerStatus::Down { reason } => reason,
                            ServerStatus::Unauthorized { reason } => {
                                format!("it is not authorized: {reason}")
                            }
                        };
                        if let Some(link) = link {
                            link.send(&Note::ServerLeftOut {
                                extension: name.clone(),
                                server,
                                why,
                            });
                        }
                    }
                    if let Some(shown) = skills {
                        showing.push((mcp.clone(), shown));
                    }
                    Arc::new(mcp) as Arc<dyn Extension>
                }
                Err(e) => Arc::new(Unavailable(format!("MCP extension `{name}`: {e}"))),
            }
        })
        .collect::<Vec<_>>();
    // One extension shows the skills of every MCP extension that asks (`spec.mcp.skills`): in
    // the system prompt when one asks for it, else by a tool.
    let mut showing = showing.into_iter();
    if let Some((first, shown)) = showing.next() {
        let mut skills = crate::extensions::Skills::new(first).shown(shown);
        for (mcp, also) in showing {
            skills = skills.and(mcp);
            if also == SkillsShown::Prompt {
                skills = skills.shown(SkillsShown::Prompt);
            }
        }
        extensions.push(Arc::new(skills));
    }
    extensions
}

/// An extension that could not be had: registering it fails with the reason.
#[derive(Debug)]
struct Unavailable(String);

impl Extension for Unavailable {
    fn name(&self) -> &str {
        "mcp"
    }

    fn register(&self, _api: &mut ExtensionApi) -> Result<(), ExtensionError> {
        Err(ExtensionError::Failed {
            extension: "mcp".to_owned(),
            message: self.0.clone(),
        })
    }
}

/// The agents `agent` may call in the bundle's Swarm that has it (none outside a Swarm).
fn callable_agents(bundle: &Bundle, agent: &str) -> Vec<String> {
    bundle
        .of_kind(&Kind::Swarm)
        .find_map(|swarm| {
            let spec = SwarmSpec::from_bundle(bundle, Some(&swarm.name)).ok()?;
            spec.agents
                .iter()
                .any(|a| a.name == agent)
                .then(|| spec.callable_from(agent))
        })
        .unwrap_or_default()
}

impl AgentWorker for RunWorker {
    fn handle(&self, event: AgentEvent, ctx: AgentContext) -> AgentFuture<'_, Value> {
        Box::pin(async move {
            let answer = self.inner.handle(event, ctx).await;
            if let (Some(file), Some(instance)) = (&self.conversation, self.inner.instance()) {
                let kept = if self.journaled {
                    state::retire(file)
                } else {
                    state::save(file, &instance.conversation())
                };
                if let Err(e) = kept {
                    tracing::error!(target: "goondan::run", error = %e, "the conversation cannot be saved");
                }
            }
            if let Some(link) = &self.link {
                link.send(&Note::TurnEnded {
                    address: self.address.clone(),
                });
            }
            answer
        })
    }
}

/// The extension that shows calls on the terminal and asks it for approvals.
struct Terminal {
    link: Arc<AgentLink>,
    policy: Policy,
    /// `--approve-tool`'s policies, first match first.
    tool_policies: Vec<(String, Policy)>,
    /// Where the questions are kept until answered (none: asked at the terminal only).
    questions: Option<Arc<dyn QuestionStore>>,
    /// `--approval-expiry`.
    expiry: Option<std::time::Duration>,
}

impl Extension for Terminal {
    fn name(&self) -> &str {
        "goondan-run"
    }

    fn register(&self, api: &mut ExtensionApi) -> Result<(), ExtensionError> {
        // Outermost: the call is shown while it waits for approval too.
        let reporter = Reporter(Arc::clone(&self.link));
        api.pipeline
            .register(PipelineMiddleware::tool_call(reporter), i32::MIN);
        let live = LinkApprover {
            link: Arc::clone(&self.link),
            keeps_questions: self.questions.is_some(),
        };
        let mut approvals = match &self.questions {
            Some(store) => {
                let mut waiting = WaitingApprover::new(Arc::clone(store)).live(live);
                if let Some(after) = self.expiry {
                    waiting = waiting.expires_after(after);
                }
                Approvals::new(waiting)
            }
            None => Approvals::new(live),
        }
        .default_policy(self.policy);
        for (pattern, policy) in &self.tool_policies {
            approvals = approvals.policy(pattern, *policy);
        }
        api.pipeline
            .register(PipelineMiddleware::tool_call(approvals), i32::MIN + 1);
        Ok(())
    }
}

/// Tells the terminal what a running call reports (a code call: each line its program prints).
struct LinkProgress(Arc<AgentLink>);

impl ProgressSink for LinkProgress {
    fn report(&self, call: &str, progress: Progress) {
        if let Some(message) = progress.message {
            self.0.send(&Note::ToolProgress {
                call_id: call.to_owned(),
                message,
            });
        }
    }
}

/// Tells the terminal when a call starts and how it ended.
struct Reporter(Arc<AgentLink>);

impl Middleware for Reporter {
    fn handle(self: Arc<Self>, call: CallContext, next: Next) -> MiddlewareFuture {
        let link = Arc::clone(&self.0);
        Box::pin(async move {
            let (call_id, tool) = (call.tool_call_id().to_owned(), call.tool_name().to_owned());
            link.send(&Note::ToolStarted {
                call_id: call_id.clone(),
                tool: tool.clone(),
                args: call.args.clone(),
                within: call.context().within().map(str::to_owned),
            });
            let started = Instant::now();
            let result = next.run(call).await;
            let summary = match (&result.error, &result.output) {
                (Some(e), _) => format!("{}: {}", e.code(), e.message()),
                // A program's answer: what it printed was shown as it printed it (its
                // progress), its value goes on the line.
                (None, Some(output)) if tool == goondan_runtime::code::TOOL_NAME => {
                    short(output.get("value").unwrap_or(&Value::Null), 120)
                }
                (None, Some(output)) => short(output, 120),
                (None, None) => result.handle.clone().unwrap_or_default(),
            };
            let status = serde_json::to_value(result.status)
                .ok()
                .and_then(|v| v.as_str().map(str::to_owned))
                .unwrap_or_default();
            link.send(&Note::ToolFinished {
                call_id,
                tool,
                status,
                summary,
                ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
            });
            result
        })
    }
}

/// Asks the terminal's person (see [`Order::Decide`]).
struct LinkApprover {
    link: Arc<AgentLink>,
    /// Whether the question is kept in the state directory too (its id is then shown).
    keeps_questions: bool,
}

impl Approver for LinkApprover {
    fn decide<'a>(&'a self, request: &'a ApprovalRequest) -> DecisionFuture<'a> {
        let question = self.keeps_questions.then(|| Question::id_of(request));
        let keeps = self.keeps_questions;
        Box::pin(async move {
            match self.link.ask(request, question).await {
                Some(decision) => decision,
                // A kept question waits for another answer (or its expiry) instead.
                None if keeps => std::future::pending().await,
                None => Decision::Deny {
                    reason: "the terminal is gone; nobody can approve this call".to_owned(),
                },
            }
        })
    }
}

/// The terminal's person, who fills the forms a call asks for.
struct LinkPerson(Arc<AgentLink>);

impl Caller for LinkPerson {
    fn can_answer(&self, question: &goondan_runtime::tools::context::Question) -> bool {
        question.capability() == "elicitation"
    }

    fn ask(
        &self,
        _key: Option<&str>,
        question: goondan_runtime::tools::context::Question,
    ) -> AnswerFuture {
        let link = Arc::clone(&self.0);
        Box::pin(async move {
            let goondan_runtime::tools::context::Question::Elicit { message, schema } = question
            else {
                return Err(AskError::Unsupported {
                    capability: question.capability(),
                });
            };
            match link.fill(message, schema).await {
                Some(FormAnswer::Unanswerable { reason }) => Err(AskError::Failed { reason }),
                Some(answer) => serde_json::to_value(answer).map_err(|e| AskError::Failed {
                    reason: e.to_string(),
                }),
                None => Err(AskError::Failed {
                    reason: "the terminal is gone; nobody can fill the form".to_owned(),
                }),
            }
        })
    }

    fn log(&self, level: LogLevel, data: Value) {
        tracing::debug!(target: "goondan::run", ?level, %data, "a call's log line");
    }
}

/// What the terminal answered a question with.
enum Reply {
    Decision(Answer),
    Form(FormAnswer),
}

/// An asked question the terminal still shows: when the ask ends without the terminal's
/// answer (answered elsewhere, expired), the terminal is told to stop asking.
struct Asking<'a> {
    link: &'a AgentLink,
    id: u64,
    answered: bool,
}

impl Drop for Asking<'_> {
    fn drop(&mut self) {
        if !self.answered {
            lock(&self.link.pending).remove(&self.id);
            self.link.send(&Note::ApprovalSettled { id: self.id });
        }
    }
}

/// This process's end of the session link.
struct AgentLink {
    writer: Mutex<UnixStream>,
    pending: Arc<Mutex<HashMap<u64, oneshot::Sender<Reply>>>>,
    next_id: AtomicU64,
    turn: Arc<Mutex<CancellationToken>>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl AgentLink {
    /// Connects to the terminal when `goondan run` started this process ([`ENV_SESSION`]).
    fn from_env(me: &AgentIdentity) -> Option<Arc<Self>> {
        let path = std::env::var_os(ENV_SESSION)?;
        match Self::connect(Path::new(&path), me) {
            Ok(link) => Some(link),
            Err(e) => {
                tracing::warn!(target: "goondan::run", error = %e, "cannot reach the terminal; running without it");
                None
            }
        }
    }

    fn connect(path: &Path, me: &AgentIdentity) -> std::io::Result<Arc<Self>> {
        let stream = UnixStream::connect(path)?;
        let reader = BufReader::new(stream.try_clone()?);
        let link = Arc::new(Self {
            writer: Mutex::new(stream),
            pending: Arc::default(),
            next_id: AtomicU64::new(1),
            turn: Arc::default(),
        });
        let (pending, turn) = (Arc::clone(&link.pending), Arc::clone(&link.turn));
        std::thread::Builder::new()
            .name("goondan-run-link".into())
            .spawn(move || read_orders(reader, &pending, &turn))?;
        ignore_interrupts(Arc::clone(&link.turn))?;
        link.send(&Note::Hello {
            address: me.address(),
            pid: std::process::id(),
        });
        Ok(link)
    }

    fn send(&self, note: &Note) {
        let text = line(note);
        if let Err(e) = lock(&self.writer).write_all(text.as_bytes()) {
            tracing::debug!(target: "goondan::run", error = %e, "the terminal is gone");
        }
    }

    /// A fresh token for the Turn that starts now; [`Order::Cancel`] cancels it.
    fn new_turn(&self) -> CancellationToken {
        let token = CancellationToken::new();
        *lock(&self.turn) = token.clone();
        token
    }

    /// Sends the question `note(id)` and waits for the terminal's reply; `None` when the
    /// terminal is gone before it replied. Dropped before the reply, the terminal is told to
    /// stop asking.
    async fn question(&self, note: impl FnOnce(u64) -> Note) -> Option<Reply> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        lock(&self.pending).insert(id, tx);
        let mut asking = Asking {
            link: self,
            id,
            answered: false,
        };
        self.send(&note(id));
        let reply = rx.await;
        asking.answered = true;
        reply.ok()
    }

    /// Asks the terminal to approve a call; `None` when the terminal is gone before it
    /// answered.
    async fn ask(&self, request: &ApprovalRequest, question: Option<String>) -> Option<Decision> {
        let reply = self
            .question(|id| Note::Approval {
                id,
                tool: request.tool_name().to_owned(),
                args: request.args().clone(),
                why: request.why().to_owned(),
                question,
            })
            .await;
        match reply? {
            Reply::Decision(Answer::Approve) => Some(Decision::Approve),
            Reply::Decision(Answer::Edit(args)) => Some(Decision::ApproveWith(args)),
            Reply::Decision(Answer::Deny(reason)) => Some(Decision::Deny { reason }),
            Reply::Form(_) => Some(Decision::Deny {
                reason: "the terminal answered a form where a decision was asked".to_owned(),
            }),
        }
    }

    /// Asks the terminal's person to fill a form; `None` when the terminal is gone before it
    /// answered.
    async fn fill(&self, message: String, schema: Value) -> Option<FormAnswer> {
        match self
            .question(|id| Note::Form {
                id,
                message,
                schema,
            })
            .await?
        {
            Reply::Form(answer) => Some(answer),
            Reply::Decision(_) => Some(FormAnswer::Unanswerable {
                reason: "the terminal answered a decision where a form was asked".to_owned(),
            }),
        }
    }
}

/// Reads the terminal's orders until it closes the link; then every open question is denied
/// (its sender dropped).
fn read_orders(
    reader: BufReader<UnixStream>,
    pending: &Mutex<HashMap<u64, oneshot::Sender<Reply>>>,
    turn: &Mutex<CancellationToken>,
) {
    for text in reader.lines() {
        let Ok(text) = text else { break };
        match serde_json::from_str::<Order>(&text) {
            Ok(Order::Decide { id, decision }) => {
                if let Some(tx) = lock(pending).remove(&id) {
                    let _ = tx.send(Reply::Decision(decision));
                }
            }
            Ok(Order::Fill { id, answer }) => {
                if let Some(tx) = lock(pending).remove(&id) {
                    let _ = tx.send(Reply::Form(answer));
                }
            }
            Ok(Order::Cancel) => lock(turn).cancel(),
            Err(e) => {
                tracing::warn!(target: "goondan::run", error = %e, "an order from the terminal is malformed")
            }
        }
    }
    lock(pending).clear();
}

/// Ctrl-C reaches the whole foreground process group, agents included: here it cancels the
/// current Turn (as the terminal's [`Order::Cancel`] does) instead of killing the process.
/// Returns once the handler is installed.
fn ignore_interrupts(turn: Arc<Mutex<CancellationToken>>) -> std::io::Result<()> {
    let (ready_tx, ready_rx) = std::sync::mpsc::channel();
    std::thread::Builder::new()
        .name("goondan-run-sigint".into())
        .spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build();
            let Ok(rt) = rt else {
                let _ = ready_tx.send(false);
                return;
            };
            rt.block_on(async move {
                use tokio::signal::unix::{SignalKind, signal};
                let Ok(mut interrupts) = signal(SignalKind::interrupt()) else {
                    let _ = ready_tx.send(false);
                    return;
                };
                let _ = ready_tx.send(true);
                while interrupts.recv().await.is_some() {
                    lock(&turn).cancel();
                }
            });
        })?;
    match ready_rx.recv() {
        Ok(true) => Ok(()),
        _ => Err(std::io::Error::other("cannot handle Ctrl-C")),
    }
}
