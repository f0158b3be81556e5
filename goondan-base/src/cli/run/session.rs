//! The host side of `goondan run`: starts the swarm's agents as processes under an
//! Orchestrator, listens on the session link, and runs one Turn (`--input`) or a session of
//! Turns read from the terminal.

use std::collections::{HashSet, VecDeque};
use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use goondan_runtime::agents::orchestrator::{
    Orchestrator, OrchestratorConfig, ProcessConfig, SwarmSpec,
};
use goondan_runtime::agents::swarm::{ENV_BUNDLE, SwarmSpecError};
use goondan_runtime::bundle::{Bundle, Kind};
use goondan_runtime::calls::approval::Policy;
use goondan_runtime::tools::agent::{AgentEvent, AgentRuntime, RequestOptions, RestartSignal};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::{UnixListener, UnixStream};
use tokio::signal::unix::{Signal, SignalKind, signal};
use tokio::sync::mpsc;

use goondan_runtime::calls::approval::now_ms;

use super::form::{FORM_PROMPT, Filled, Form, Opening, opening};
use super::link::{
    Answer, ENV_APPROVAL_EXPIRY, ENV_APPROVE, ENV_APPROVE_TOOLS, ENV_SESSION, ENV_STATE,
    FormAnswer, Note, Order, line,
};
use super::render::{Reply, Screen, parse_args, parse_reply};
use super::{RunArgs, RunError, questions, state};

/// How long a Turn may take: a person may think a long time over an approval.
pub(super) const TURN_TIMEOUT_MS: u64 = 24 * 60 * 60 * 1000;

/// Exit status of a session ended by Ctrl-C in `--input` mode.
pub(super) const EXIT_INTERRUPTED: u8 = 130;

/// Runs `goondan run` with the swarm's agents as processes of this machine.
pub(crate) async fn run(
    args: &RunArgs,
    sandbox: Option<crate::sandbox::SandboxMode>,
) -> Result<u8, RunError> {
    let bundle = Bundle::load(&args.bundle)?;
    let file = std::fs::canonicalize(bundle.file()).map_err(|source| RunError::Io {
        path: bundle.file().to_path_buf(),
        source,
    })?;
    let swarm = swarm_of(&bundle, args.agent.as_deref())?;
    let target = args
        .agent
        .clone()
        .unwrap_or_else(|| swarm.entry_agent.clone());
    let state = state::state_dir(&file, args.state.as_deref());
    let workspace = state.join("workspace");
    std::fs::create_dir_all(&workspace).map_err(|source| RunError::Io {
        path: workspace.clone(),
        source,
    })?;
    let state = std::fs::canonicalize(&state).map_err(|source| RunError::Io {
        path: state.clone(),
        source,
    })?;
    let link = Link::listen()?;
    let mut screen = Screen::new(args.input.is_none());
    // The questions go where the journals go: the command line's, else the target agent's.
    let nats = args
        .journal
        .url
        .clone()
        .or_else(|| bundle.journal(&target).and_then(|j| j.nats));
    show_waiting_questions(&mut screen, &state, nats.as_deref()).await;
    let mut process = ProcessConfig::current_exe()
        .map_err(RunError::Program)?
        .env(ENV_BUNDLE, &file)
        .env(ENV_SESSION, &link.path)
        .env(ENV_STATE, &state)
        .env(ENV_APPROVE, args.approve.as_str())
        .env(ENV_APPROVE_TOOLS, tool_policies(&args.approve_tool));
    if let Some(after) = args.approval_expiry {
        process = process.env(ENV_APPROVAL_EXPIRY, after.as_millis().to_string());
    }
    if let Some(mode) = sandbox {
        process = process.env(super::link::ENV_SANDBOX, mode.as_str());
    }
    let process = args.journal.pass_to(process);
    let config = OrchestratorConfig {
        workdir: state.clone(),
        ..OrchestratorConfig::default()
    };
    let orchestrator = Orchestrator::start_with(swarm, process, config).await?;
    let mut session = Session {
        orchestrator: orchestrator.clone(),
        target,
        link,
        lines: stdin_lines(),
        interrupts: signal(SignalKind::interrupt()).map_err(RunError::Signal)?,
        screen,
        seen: HashSet::new(),
        state: state.clone(),
        nats,
        backlog: VecDeque::new(),
    };
    let code = match &args.input {
        Some(input) => session.once(input).await,
        None => session.interactive(&state).await,
    };
    orchestrator.shutdown(Duration::from_secs(3)).await;
    Ok(code)
}

/// Shows the approval questions an earlier session left waiting: the agent asks them again
/// when it resumes their Turn, and `goondan approvals answer` answers them from anywhere.
async fn show_waiting_questions(screen: &mut Screen, state: &Path, nats: Option<&str>) {
    let waiting = questions::waiting_in(state, nats).await;
    if waiting.is_empty() {
        return;
    }
    let now = now_ms();
    screen.err_line(&format!(
        "{} approval question(s) wait from an earlier session (the agent asks again when it \
         goes on with their Turn; `goondan approvals answer ID approve|deny` answers from anywhere):",
        waiting.len()
    ));
    for question in &waiting {
        screen.err_line(&format!("  {}", questions::describe(question, now)));
    }
}

/// `--approve-tool`'s policies for the agent processes: one `PATTERN=POLICY` per line.
fn tool_policies(policies: &[(String, Policy)]) -> String {
    policies
        .iter()
        .map(|(pattern, policy)| format!("{pattern}={policy}"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The bundle's Swarm, or, in a bundle without one, a swarm of all its Agents entered at
/// `agent` (else the first).
pub(super) fn swarm_of(bundle: &Bundle, agent: Option<&str>) -> Result<SwarmSpec, RunError> {
    let swarm = match SwarmSpec::from_bundle(bundle, None) {
        Ok(swarm) => swarm,
        Err(SwarmSpecError::NoSwarm) => {
            let names: Vec<String> = bundle
                .of_kind(&Kind::Agent)
                .map(|a| a.name.clone())
                .collect();
            let Some(entry) = agent.map(str::to_owned).or_else(|| names.first().cloned()) else {
                return Err(RunError::NoAgent);
            };
            names
                .into_iter()
                .fold(SwarmSpec::new("default", entry), SwarmSpec::agent)
        }
        Err(e) => return Err(e.into()),
    };
    if let Some(agent) = agent
        && !swarm.defines(agent)
    {
        return Err(RunError::UnknownAgent {
            agent: agent.to_owned(),
            known: swarm.agent_names(),
        });
    }
    Ok(swarm)
}

/// A note from an agent process and the way back to it.
type Incoming = (Note, mpsc::UnboundedSender<Order>);

/// The terminal's end of the session link.
struct Link {
    path: PathBuf,
    notes: mpsc::UnboundedReceiver<Incoming>,
    agents: Arc<Mutex<Vec<mpsc::UnboundedSender<Order>>>>,
    _dir: tempfile::TempDir,
}

impl Link {
    fn listen() -> Result<Self, RunError> {
        let dir = tempfile::Builder::new()
            .prefix("goondan-run-")
            .tempdir()
            .map_err(RunError::Link)?;
        let path = dir.path().join("session.sock");
        let listener = UnixListener::bind(&path).map_err(RunError::Link)?;
        let (tx, notes) = mpsc::unbounded_channel();
        let agents: Arc<Mutex<Vec<mpsc::UnboundedSender<Order>>>> = Arc::default();
        tokio::spawn(accept(listener, tx, Arc::clone(&agents)));
        Ok(Self {
            path,
            notes,
            agents,
            _dir: dir,
        })
    }

    /// Tells every agent process to cancel its Turn.
    fn cancel_all(&self) {
        let mut agents = self.agents.lock().unwrap_or_else(|e| e.into_inner());
        agents.retain(|a| a.send(Order::Cancel).is_ok());
    }
}

async fn accept(
    listener: UnixListener,
    notes: mpsc::UnboundedSender<Incoming>,
    agents: Arc<Mutex<Vec<mpsc::UnboundedSender<Order>>>>,
) {
    while let Ok((stream, _)) = listener.accept().await {
        let (orders_tx, orders_rx) = mpsc::unbounded_channel();
        agents
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(orders_tx.clone());
        tokio::spawn(connection(stream, notes.clone(), orders_tx, orders_rx));
    }
}

async fn connection(
    stream: UnixStream,
    notes: mpsc::UnboundedSender<Incoming>,
    orders_tx: mpsc::UnboundedSender<Order>,
    mut orders_rx: mpsc::UnboundedReceiver<Order>,
) {
    let (reader, mut writer) = stream.into_split();
    tokio::spawn(async move {
        while let Some(order) = orders_rx.recv().await {
            if writer.write_all(line(&order).as_bytes()).await.is_err() {
                break;
            }
        }
    });
    let mut lines = BufReader::new(reader).lines();
    while let Ok(Some(text)) = lines.next_line().await {
        match serde_json::from_str::<Note>(&text) {
            Ok(note) => {
                if notes.send((note, orders_tx.clone())).is_err() {
                    break;
                }
            }
            Err(e) => {
                tracing::warn!(target: "goondan::run", error = %e, "a note from an agent is malformed")
            }
        }
    }
}

/// Lines typed at the terminal; closed at end of input (Ctrl-D).
pub(super) fn stdin_lines() -> mpsc::UnboundedReceiver<String> {
    let (tx, rx) = mpsc::unbounded_channel();
    let spawned = std::thread::Builder::new()
        .name("goondan-run-stdin".into())
        .spawn(move || {
            for text in std::io::stdin().lock().lines() {
                let Ok(text) = text else { break };
                if tx.send(text).is_err() {
                    break;
                }
            }
        });
    if let Err(e) = spawned {
        tracing::error!(target: "goondan::run", error = %e, "cannot read the terminal");
    }
    rx
}

/// How a Turn ended.
enum Ended {
    /// The agent answered (the text, or `None` when it stopped without one).
    Answered(Option<String>),
    /// The Turn failed.
    Failed(String),
    /// Ctrl-C cancelled it.
    Cancelled,
}

struct Session {
    orchestrator: Orchestrator,
    target: String,
    link: Link,
    lines: mpsc::UnboundedReceiver<String>,
    interrupts: Signal,
    screen: Screen,
    /// Agent instances that said hello: another hello is a restart.
    seen: HashSet<String>,
    /// The state directory (its approval questions).
    state: PathBuf,
    /// The NATS server that keeps the journals and questions, when they are on JetStream.
    nats: Option<String>,
    /// Notes that came while an approval prompt waited, shown after it.
    backlog: VecDeque<Incoming>,
}

impl Session {
    /// `--input`: one Turn, the answer on stdout.
    async fn once(&mut self, input: &str) -> u8 {
        match self.turn(input).await {
            Ended::Answered(Some(answer)) => {
                let mut out = std::io::stdout().lock();
                let _ = writeln!(out, "{answer}");
                let _ = out.flush();
                crate::cli::EXIT_OK
            }
            Ended::Answered(None) => {
                self.screen
                    .err_line("error: the agent stopped (maxStepsPerTurn) without an answer");
                crate::cli::EXIT_FAILED
            }
            Ended::Failed(message) => {
                self.screen.err_line(&format!("error: {message}"));
                crate::cli::EXIT_FAILED
            }
            Ended::Cancelled => {
                self.screen.err_line("cancelled");
                EXIT_INTERRUPTED
            }
        }
    }

    /// A session: a Turn per line until Ctrl-D or `exit`.
    async fn interactive(&mut self, state: &Path) -> u8 {
        self.screen.err_line(&format!(
            "goondan run: talking to `{}` (state in {}). Ctrl-C cancels an answer; Ctrl-D or `exit` ends the session.",
            self.target,
            state.display()
        ));
        loop {
            self.drain_backlog().await;
            self.screen.prompt("> ");
            let text = loop {
                tokio::select! {
                    text = self.lines.recv() => break text,
                    Some((note, reply)) = self.link.notes.recv() => { self.note(note, &reply).await; }
                    _ = self.interrupts.recv() => {
                        self.screen.err_line("");
                        self.screen.prompt("(Ctrl-D or `exit` ends the session)\n> ");
                    }
                }
            };
            let Some(text) = text else {
                self.screen.err_line("");
                return crate::cli::EXIT_OK;
            };
            let text = text.trim();
            if text.is_empty() {
                continue;
            }
            if matches!(text, "exit" | "quit") {
                return crate::cli::EXIT_OK;
            }
            match self.turn(text).await {
                Ended::Answered(answer) => {
                    if !self.screen.streamed() {
                        let mut out = std::io::stdout().lock();
                        let _ = writeln!(
                            out,
                            "{}",
                            answer
                                .as_deref()
                                .unwrap_or("(no answer: maxStepsPerTurn reached)")
                        );
                        let _ = out.flush();
                    }
                }
                Ended::Failed(message) => self.screen.err_line(&format!("error: {message}")),
                Ended::Cancelled => self.screen.err_line("cancelled"),
            }
        }
    }

    /// Runs one Turn of the target agent, showing what happens.
    async fn turn(&mut self, input: &str) -> Ended {
        self.screen.turn_started();
        let orchestrator = self.orchestrator.clone();
        let target = self.target.clone();
        let event = AgentEvent::new("user.message", json!(input));
        let options = RequestOptions {
            timeout_ms: Some(TURN_TIMEOUT_MS),
            ..RequestOptions::default()
        };
        let request =
            tokio::spawn(async move { orchestrator.request(&target, event, options).await });
        tokio::pin!(request);
        let mut ticks = tokio::time::interval(Duration::from_millis(100));
        let mut cancelled = false;
        let mut notes_done = false;
        let result = loop {
            let (ended, interrupted) = self.drain_backlog().await;
            notes_done |= ended;
            cancelled |= interrupted;
            tokio::select! {
                r = &mut request => break r,
                Some((note, reply)) = self.link.notes.recv() => {
                    notes_done |= self.ends_turn(&note);
                    if self.note(note, &reply).await {
                        cancelled = true;
                    }
                }
                _ = self.interrupts.recv() => {
                    cancelled = true;
                    self.screen.err_line("^C cancelling the answer…");
                    self.link.cancel_all();
                }
                _ = ticks.tick() => self.screen.tick(),
            }
        };
        // The answer came on another socket than the Turn's notes: show the notes still on
        // their way (the last deltas, the last call) first, up to the agent's end-of-Turn note.
        let settle = tokio::time::sleep(Duration::from_secs(2));
        tokio::pin!(settle);
        notes_done |= self.drain_backlog().await.0;
        while !notes_done {
            tokio::select! {
                Some((note, reply)) = self.link.notes.recv() => {
                    notes_done = self.ends_turn(&note);
                    self.note(note, &reply).await;
                }
                () = &mut settle => break,
            }
        }
        self.screen.turn_finished();
        let response = match result {
            Ok(Ok(r)) => r.response.unwrap_or(Value::Null),
            Ok(Err(_)) | Err(_) if cancelled => return Ended::Cancelled,
            Ok(Err(e)) => return Ended::Failed(e.message().to_owned()),
            Err(e) => return Ended::Failed(e.to_string()),
        };
        self.restart_notice(&response);
        Ended::Answered(response["answer"].as_str().map(str::to_owned))
    }

    /// Shows the notes that came while an approval prompt waited. Returns whether one ended
    /// the target's Turn, and whether Ctrl-C was pressed at a prompt among them.
    async fn drain_backlog(&mut self) -> (bool, bool) {
        let (mut ended, mut interrupted) = (false, false);
        while let Some((note, reply)) = self.backlog.pop_front() {
            ended |= self.ends_turn(&note);
            interrupted |= self.note(note, &reply).await;
        }
        (ended, interrupted)
    }

    /// Whether `note` says the target's Turn is over.
    fn ends_turn(&self, note: &Note) -> bool {
        matches!(note, Note::TurnEnded { address }
            if address.split('/').next() == Some(self.target.as_str()))
    }

    /// Says so when a tool of the Turn asked for its agent's restart.
    fn restart_notice(&mut self, response: &Value) {
        let results = response["toolResults"].as_array().into_iter().flatten();
        let signal = results
            .filter_map(|r| r.get("output").and_then(RestartSignal::from_output))
            .next_back();
        if let Some(signal) = signal {
            self.screen.err_line(&format!(
                "↻ restarting `{}`: {} (the conversation is kept)",
                self.target, signal.reason
            ));
        }
    }

    /// Shows a note; asks an approval question. True when Ctrl-C was pressed while asking.
    async fn note(&mut self, note: Note, reply: &mpsc::UnboundedSender<Order>) -> bool {
        match note {
            Note::Hello { address, pid } => {
                if !self.seen.insert(address.clone()) {
                    self.screen
                        .err_line(&format!("↻ `{address}` restarted (pid {pid})"));
                }
            }
            Note::ServerLeftOut {
                extension,
                server,
                why,
            } => self.screen.err_line(&format!(
                "! MCP server `{server}` of `{extension}` is left out until it is up: {why}"
            )),
            Note::ToolsLeftOut {
                extension,
                server,
                why,
            } => self.screen.err_line(&format!(
                "! MCP server `{server}` of `{extension}` is up; {why}"
            )),
            Note::Delta { text } => self.screen.delta(&text),
            Note::TurnEnded { .. } => {}
            Note::ToolStarted {
                call_id,
                tool,
                args,
                within,
            } => self
                .screen
                .tool_started(&call_id, &tool, &args, within.is_some()),
            Note::ToolProgress { call_id, message } => self.screen.progress(&call_id, &message),
            Note::ToolFinished {
                call_id,
                tool,
                status,
                summary,
                ms,
            } => self
                .screen
                .tool_finished(&call_id, &tool, &status, &summary, ms),
            Note::Approval {
                id,
                tool,
                args,
                why,
                question,
            } => {
                self.screen.ask(&tool, &args, &why, question.as_deref());
                let Some((decision, interrupted)) = self.read_decision(id).await else {
                    self.settled_elsewhere(question.as_deref()).await;
                    return false;
                };
                let _ = reply.send(Order::Decide { id, decision });
                if interrupted {
                    self.link.cancel_all();
                }
                return interrupted;
            }
            // Its prompt is over already (the answer came first).
            Note::ApprovalSettled { .. } => {}
            Note::Form {
                id,
                message,
                schema,
            } => {
                self.screen
                    .err_line(&format!("? a call asks you: {message}"));
                let (answer, interrupted) = match Form::of(&schema) {
                    Ok(form) => match self.read_form(id, &form).await {
                        Some(read) => read,
                        None => {
                            self.screen.err_line("");
                            self.screen.err_line("↳ no longer asked");
                            return false;
                        }
                    },
                    Err(reason) => {
                        self.screen.err_line(&format!(
                            "  (this form cannot be filled in at the terminal: {reason})"
                        ));
                        (FormAnswer::Unanswerable { reason }, false)
                    }
                };
                let _ = reply.send(Order::Fill { id, answer });
                if interrupted {
                    self.link.cancel_all();
                }
                return interrupted;
            }
        }
        false
    }

    /// The next line typed while question `id` is asked; other notes wait in the backlog.
    async fn typed(&mut self, id: u64) -> Typed {
        loop {
            tokio::select! {
                text = self.lines.recv() => return text.map_or(Typed::Ended, Typed::Line),
                _ = self.interrupts.recv() => {
                    self.screen.err_line("^C");
                    return Typed::Interrupted;
                }
                Some(incoming) = self.link.notes.recv() => {
                    if matches!(incoming.0, Note::ApprovalSettled { id: settled } if settled == id) {
                        return Typed::Settled;
                    }
                    self.backlog.push_back(incoming);
                }
            }
        }
    }

    /// Reads form `id`: fill it in, decline or cancel; then each field, a line each, asked
    /// again until it reads. Ctrl-C cancels (and the Turn, as at an approval prompt); the end
    /// of input cancels. `None` when the form is no longer asked.
    async fn read_form(&mut self, id: u64, form: &Form) -> Option<(FormAnswer, bool)> {
        self.screen.prompt(FORM_PROMPT);
        loop {
            match self.typed(id).await {
                Typed::Line(text) => match opening(&text) {
                    Some(Opening::Fill) => break,
                    Some(Opening::Decline) => return Some((FormAnswer::Decline, false)),
                    Some(Opening::Cancel) => return Some((FormAnswer::Cancel, false)),
                    None => {
                        self.screen.err_line("answer y, n or c");
                        self.screen.prompt(FORM_PROMPT);
                    }
                },
                Typed::Interrupted => return Some((FormAnswer::Cancel, true)),
                Typed::Ended => return Some((FormAnswer::Cancel, false)),
                Typed::Settled => return None,
            }
        }
        let mut content = Filled::new();
        for field in form.fields() {
            self.screen.prompt(&field.prompt());
            loop {
                match self.typed(id).await {
                    Typed::Line(text) => match field.read(&text) {
                        Ok(value) => {
                            if let Some(value) = value {
                                content.insert(field.name().to_owned(), value);
                            }
                            break;
                        }
                        Err(why) => {
                            self.screen.err_line(&format!("  {why}"));
                            self.screen.prompt(&field.prompt());
                        }
                    },
                    Typed::Interrupted => return Some((FormAnswer::Cancel, true)),
                    Typed::Ended => return Some((FormAnswer::Cancel, false)),
                    Typed::Settled => return None,
                }
            }
        }
        Some((FormAnswer::Accept { content }, false))
    }

    /// Says how a question the terminal asked was answered elsewhere.
    async fn settled_elsewhere(&mut self, question: Option<&str>) {
        let answer = match question {
            Some(id) => match questions::kept_in(&self.state, self.nats.as_deref()).await {
                Ok(Some(store)) => store.get(id).await.ok().flatten().and_then(|q| q.answer),
                Ok(None) | Err(_) => None,
            },
            None => None,
        };
        let said = answer
            .as_ref()
            .map_or_else(|| "answered".to_owned(), questions::answered);
        self.screen.err_line("");
        self.screen
            .err_line(&format!("↳ answered elsewhere: {said}"));
    }

    /// Reads the answer to approval prompt `id`. Ctrl-C or the end of input denies. `None`
    /// when the question was answered elsewhere first ([`Note::ApprovalSettled`]).
    async fn read_decision(&mut self, id: u64) -> Option<(Answer, bool)> {
        let mut want_args = false;
        loop {
            let text = match self.typed(id).await {
                Typed::Line(text) => text,
                Typed::Interrupted => {
                    return Some((
                        Answer::Deny("the user cancelled the answer".to_owned()),
                        true,
                    ));
                }
                Typed::Settled => return None,
                Typed::Ended => {
                    self.screen.err_line("");
                    let reason = "nobody is at the terminal to approve this call; it runs only \
                        when approved (or with `goondan run --approve never`)";
                    return Some((Answer::Deny(reason.to_owned()), false));
                }
            };
            let reply = if want_args {
                parse_args(&text)
            } else {
                parse_reply(&text)
            };
            match reply {
                Reply::Decided(answer) => return Some((answer, false)),
                Reply::NeedArgs => {
                    want_args = true;
                    self.screen.prompt("arguments (a JSON object): ");
                }
                Reply::Again(why) => {
                    self.screen.err_line(&why);
                    self.screen.prompt(if want_args {
                        "arguments (a JSON object): "
                    } else {
                        super::render::APPROVAL_PROMPT
                    });
                }
            }
        }
    }
}

/// A line typed at a question's prompt, or why none came.
enum Typed {
    /// The line.
    Line(String),
    /// Ctrl-C.
    Interrupted,
    /// The end of input (Ctrl-D, or nobody at the terminal).
    Ended,
    /// The question was answered elsewhere, or is no longer asked.
    Settled,
}

/// The default approval policy of `goondan run`: ask before destructive tools.
pub(crate) const DEFAULT_POLICY: Policy = Policy::AskWhenDestructive;
