//! [`AgentInstance`]: one agent's conversation, run Turn by Turn, Step by Step.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use futures_util::StreamExt;
use tokio_util::sync::CancellationToken;

use super::StepError;
use super::caller::AgentCaller;
use super::durable::{JournalStarts, Writer, interrupted, rerunnable};
use super::journal::{
    CallProgress, Journal, JournalPoint, OpenStep, Record, Replay, TurnEnding, UnfinishedTurn,
    reached,
};
use super::model::{DeltaSink, Model, ModelRequest};
use super::pipeline::{
    StepContext, StepNext, StepResult, TurnContext, TurnEnd, TurnNext, TurnOutcome,
};
use super::submissions::{Submission, Submissions};
use super::tool_message::{completion_message, tool_message, tool_message_at};
use crate::bundle::{Bundle, BundleError};
use crate::calls::executor::ToolExecutor;
use crate::calls::guardrail::{Guardrail, Guardrails};
use crate::calls::middleware::{BoxFuture, Core, Middleware};
use crate::calls::retry::{Failures, RetryBudget};
use crate::extension::{Extension, ExtensionApi};
use crate::lock;
use crate::tools::agent::AgentRuntime;
use crate::tools::catalog::ToolCatalog;
use crate::tools::context::{
    Caller, Journaled, Message, ProgressSink, ToolContext, fresh_id, now_ms,
};
use crate::tools::registry::ToolRegistry;
use crate::tools::result::ToolCallResult;
use crate::tools::toolset::{self, Toolset};

/// The default of `policy.maxStepsPerTurn`.
pub const DEFAULT_MAX_STEPS_PER_TURN: usize = 16;

struct Shared {
    /// Whoever called, for the calls' questions.
    caller: Arc<dyn Caller>,
    /// Where the calls' progress goes.
    progress: Option<Arc<dyn ProgressSink>>,
    agent_name: String,
    instance_key: String,
    registry: Arc<ToolRegistry>,
    executor: ToolExecutor,
    model: Arc<dyn Model>,
    system: Option<String>,
    deltas: Option<DeltaSink>,
    declared: Vec<String>,
    /// The Agent's toolsets, its declared resources first; empty when none is shaped.
    toolsets: Vec<Toolset>,
    step_chain: Arc<[Arc<dyn Middleware<StepContext>>]>,
    turn_chain: Arc<[Arc<dyn Middleware<TurnContext>>]>,
    max_steps: usize,
    concurrency: usize,
    workdir: PathBuf,
    runtime: Option<Arc<dyn AgentRuntime>>,
    /// How many failures of one tool the model may see in a Turn.
    retry: RetryBudget,
    /// The running Turn's failures, counted against `retry`.
    failures: Failures,
    conversation: Mutex<Vec<Message>>,
    journal: Writer,
    /// Set once the journal was read back (at the first Turn or `resume`).
    restored: tokio::sync::OnceCell<()>,
    /// What reading the journal back found, for the caller to see.
    journal_warnings: Mutex<Vec<String>>,
    /// The Turn a crash left unfinished, until it is resumed.
    unfinished: Mutex<Option<UnfinishedTurn>>,
    /// The resumed Step whose model answer is journaled, for the Step runner to take.
    open_step: Mutex<Option<OpenStep>>,
    /// Calls whose result was `pending`, until their completion is in the conversation.
    submissions: Submissions,
    /// The code tool, when the instance offers code mode.
    #[cfg(feature = "code-mode")]
    code: Option<crate::code::CodeOffer>,
}

impl Shared {
    /// The catalog a Step starts from: the declared resources (and toolsets), then every tool
    /// registered at run time.
    fn catalog(&self) -> Result<ToolCatalog, StepError> {
        if self.toolsets.is_empty() {
            let declared = self.declared.iter().map(String::as_str);
            return Ok(ToolCatalog::build(&self.registry, declared)?);
        }
        Ok(toolset::catalog(&self.registry, &self.toolsets)?)
    }

    fn conversation(&self) -> std::sync::MutexGuard<'_, Vec<Message>> {
        lock(&self.conversation)
    }

    /// Reads the journal back once: the conversation it holds replaces the one the instance
    /// was built with (which is written into an empty journal instead), and a Turn it left
    /// unfinished waits for [`AgentInstance::resume`].
    async fn restore(&self) -> Result<(), StepError> {
        let Some(journal) = self.journal.journal() else {
            return Ok(());
        };
        self.restored
            .get_or_try_init(|| async {
                let replay = Replay::from_recovered(journal.read().await?);
                let warnings = replay.warnings;
                if replay.records == 0 {
                    let history = self.conversation().clone();
                    if !history.is_empty() {
                        journal
                            .append(&[Record::Imported { messages: history }])
                            .await?;
                    }
                } else {
                    *self.conversation() = replay.conversation;
                    *lock(&self.unfinished) = replay.unfinished;
                    self.submissions.restore(replay.submitted);
                }
                for w in &warnings {
                    tracing::warn!(target: "goondan::journal", agent = %self.agent_name, "{w}");
                }
                *lock(&self.journal_warnings) = warnings;
                Ok::<(), StepError>(())
            })
            .await?;
        Ok(())
    }
}

/// One instance of an Agent: its conversation, its registry and model, its extensions, and
/// its workdir (`{state}/workspace`, CTX-2). [`run_turn`](Self::run_turn) runs one Turn.
///
/// Every Step builds its catalog from the Agent's `spec.tools` plus the tools registered at
/// run time (CAT-1, CAT-2, CAT-5), lets step middleware edit it (CAT-3), asks the model, runs
/// the calls against that catalog (PERM-1) with the assistant message as `ctx.message`
/// (CTX-5), and appends one tool message per call, in call order (MW-4).
///
/// ```
/// use std::sync::Arc;
/// use goondan_runtime::prelude::*;
/// use goondan_runtime::step::{AgentInstance, ModelResponse, ScriptedModel, TurnEnd};
///
/// /// Adds.
/// #[tool(name = "calc")]
/// pub fn add(a: i64, b: i64) -> i64 { a + b }
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let registry = Arc::new(ToolRegistry::builder().tool(add::TOOL).build()?);
/// let model = Arc::new(ScriptedModel::new([
///     ModelResponse::calls([ToolCall::new("c1", "calc__add", serde_json::json!({"a": 2, "b": 3}))]),
///     ModelResponse::text("5"),
/// ]));
/// let state = tempfile::tempdir()?;
/// let agent = AgentInstance::builder("helper", registry, model)
///     .tools(["calc"])
///     .state_dir(state.path())
///     .build()?;
/// let turn = agent.run_turn("what is 2 + 3?").await?;
/// assert_eq!(turn.end, TurnEnd::Answered);
/// assert_eq!(turn.steps[0].results[0].output, Some(serde_json::json!(5)));
/// assert_eq!(turn.answer(), Some("5"));
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct AgentInstance {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for AgentInstance {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentInstance")
            .field("agent_name", &self.shared.agent_name)
            .field("instance_key", &self.shared.instance_key)
            .field("tools", &self.shared.declared)
            .field("workdir", &self.shared.workdir)
            .finish_non_exhaustive()
    }
}

impl AgentInstance {
    /// Starts an instance of `agent_name` with `registry` and `model`.
    pub fn builder(
        agent_name: impl Into<String>,
        registry: Arc<ToolRegistry>,
        model: Arc<dyn Model>,
    ) -> AgentInstanceBuilder {
        AgentInstanceBuilder {
            agent_name: agent_name.into(),
            instance_key: "default".to_owned(),
            registry,
            model,
            system: None,
            deltas: None,
            declared: Vec::new(),
            extensions: Vec::new(),
            max_steps: DEFAULT_MAX_STEPS_PER_TURN,
            concurrency: 1,
            state_dir: None,
            runtime: None,
            history: Vec::new(),
            journal: None,
            retry: RetryBudget::default(),
            guardrails: Guardrails::new(),
            toolsets: Vec::new(),
            person: None,
            progress: None,
            #[cfg(feature = "code-mode")]
            code_mode: None,
        }
    }

    /// Starts an instance of the bundle's Agent `agent`: its `spec.tools` (shaped into
    /// [toolsets](crate::tools::toolset) where an entry says so), its system prompt
    /// ([`Bundle::system_prompt`]) and `policy.maxStepsPerTurn`.
    pub fn from_bundle(
        bundle: &Bundle,
        agent: &str,
        registry: Arc<ToolRegistry>,
        model: Arc<dyn Model>,
    ) -> Result<AgentInstanceBuilder, BundleError> {
        let sets = bundle.agent_toolsets(agent)?;
        let mut builder = Self::builder(agent, registry, model);
        if sets.iter().all(Toolset::is_plain) {
            builder = builder.tools(bundle.agent_tools(agent)?);
        } else {
            for set in sets {
                builder = builder.toolset(set);
            }
        }
        if let Some(system) = bundle.system_prompt(agent)? {
            builder = builder.system_prompt(system);
        }
        if let Some(n) = bundle.max_steps_per_turn(agent) {
            builder = builder.max_steps_per_turn(n);
        }
        if let Some(budget) = bundle.retry_budget(agent) {
            builder = builder.retry_budget(budget);
        }
        if let Some(guardrails) = bundle.guardrails(agent) {
            builder = builder.guardrails(guardrails);
        }
        Ok(builder)
    }

    /// The agent's name.
    pub fn agent_name(&self) -> &str {
        &self.shared.agent_name
    }

    /// The instance's workdir, `{state}/workspace`.
    pub fn workdir(&self) -> &std::path::Path {
        &self.shared.workdir
    }

    /// The registry (extensions add to it).
    pub fn registry(&self) -> &Arc<ToolRegistry> {
        &self.shared.registry
    }

    /// The conversation so far. With a journal, the journal's conversation once it was read
    /// back (by [`resume`](Self::resume) or the first Turn).
    pub fn conversation(&self) -> Vec<Message> {
        self.shared.conversation().clone()
    }

    /// Finishes the Turn a crash left unfinished in the instance's journal, if there is one,
    /// and returns what it did; `None` when there is nothing to finish (or no journal).
    ///
    /// A model answer already written is not asked for again, and a call whose result is
    /// written is not run again. A call whose handler had started and has no result runs
    /// again only when its export is marked idempotent or read-only; otherwise it answers
    /// `E_TOOL_INTERRUPTED` and the model decides. Call it before the first
    /// [`run_turn`](Self::run_turn), which refuses to start while a Turn is unfinished.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use goondan_runtime::prelude::*;
    /// use goondan_runtime::Message;
    /// use goondan_runtime::step::journal::{Journal, MemoryJournal, Record};
    /// use goondan_runtime::step::{AgentInstance, ModelResponse, ScriptedModel, TurnEnd};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// // A journal whose Turn started and never ended: its process was killed.
    /// let journal = MemoryJournal::new();
    /// let mut input = Message::assistant("m1", Some("hello".into()), Vec::new());
    /// input.role = "user".into();
    /// journal
    ///     .append(&[Record::TurnStarted { turn_id: "t1".into(), trace_id: "tr".into(), input }])
    ///     .await?;
    ///
    /// let registry = Arc::new(ToolRegistry::builder().build()?);
    /// let model = Arc::new(ScriptedModel::new([ModelResponse::text("hi again")]));
    /// let state = tempfile::tempdir()?;
    /// let agent = AgentInstance::builder("helper", registry, model)
    ///     .state_dir(state.path())
    ///     .journal(Arc::new(journal))
    ///     .build()?;
    /// let turn = agent.resume().await?.ok_or("the turn is unfinished")?;
    /// assert_eq!((turn.turn_id.as_str(), turn.end), ("t1", TurnEnd::Answered));
    /// assert_eq!(turn.answer(), Some("hi again"));
    /// assert!(agent.resume().await?.is_none(), "finished once");
    /// # Ok(())
    /// # }
    /// ```
    pub async fn resume(&self) -> Result<Option<TurnOutcome>, StepError> {
        self.shared.restore().await?;
        let Some((turn_id, trace_id, input)) = lock(&self.shared.unfinished)
            .as_ref()
            .map(|t| (t.turn_id.clone(), t.trace_id.clone(), t.input.clone()))
        else {
            return Ok(None);
        };
        self.run_turn_of(input, turn_id, trace_id, CancellationToken::new())
            .await
            .map(Some)
    }

    /// What reading the journal back found and left out (a torn last write, a record for a
    /// call that does not exist), once it was read.
    pub fn journal_warnings(&self) -> Vec<String> {
        lock(&self.shared.journal_warnings).clone()
    }

    /// The catalog a Step would start from now, before step middleware (CAT-1, CAT-2, CAT-5).
    pub fn base_catalog(&self) -> Result<ToolCatalog, StepError> {
        self.shared.catalog()
    }

    /// Runs one Turn for the user message `input`: Steps until the model answers without
    /// calls or `policy.maxStepsPerTurn` Steps have run. Run the Turns of one instance one at
    /// a time: they share its conversation.
    pub async fn run_turn(&self, input: impl Into<String>) -> Result<TurnOutcome, StepError> {
        self.run_turn_in_trace(input, fresh_id("trace")).await
    }

    /// Runs one Turn, like [`run_turn`](Self::run_turn), inside the trace `trace_id`: every
    /// Step and every tool call of the Turn carries it (`ctx.trace_id()`), so a Turn another
    /// agent asked for continues that agent's trace (HO-3).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use goondan_runtime::prelude::*;
    /// use goondan_runtime::step::{AgentInstance, ModelResponse, ScriptedModel};
    ///
    /// /// Tells the trace it runs in.
    /// #[tool(name = "probe")]
    /// pub fn trace(ctx: &ToolContext) -> String { ctx.trace_id().to_owned() }
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let registry = Arc::new(ToolRegistry::builder().tool(trace::TOOL).build()?);
    /// let model = Arc::new(ScriptedModel::new([
    ///     ModelResponse::calls([ToolCall::new("c1", "probe__trace", serde_json::json!({}))]),
    ///     ModelResponse::text("done"),
    /// ]));
    /// let state = tempfile::tempdir()?;
    /// let agent = AgentInstance::builder("helper", registry, model)
    ///     .tools(["probe"])
    ///     .state_dir(state.path())
    ///     .build()?;
    /// let turn = agent.run_turn_in_trace("which trace?", "trace-of-the-caller").await?;
    /// assert_eq!(turn.trace_id, "trace-of-the-caller");
    /// assert_eq!(turn.steps[0].results[0].output, Some(serde_json::json!("trace-of-the-caller")));
    /// # Ok(())
    /// # }
    /// ```
    pub async fn run_turn_in_trace(
        &self,
        input: impl Into<String>,
        trace_id: impl Into<String>,
    ) -> Result<TurnOutcome, StepError> {
        self.run_turn_with(input, trace_id.into(), CancellationToken::new())
            .await
    }

    /// Runs one Turn, like [`run_turn`](Self::run_turn), that stops when `cancellation` is
    /// cancelled: the model request in flight ends at once with [`ModelError::Cancelled`]
    /// (a [`StepError::Model`]), the Step's tool calls see it in `ctx.cancellation()`, and no
    /// further Step starts. The instance stays usable for the next Turn (a person pressing
    /// Ctrl-C cancels one answer, not the session).
    ///
    /// [`ModelError::Cancelled`]: super::ModelError::Cancelled
    pub async fn run_turn_cancellable(
        &self,
        input: impl Into<String>,
        cancellation: CancellationToken,
    ) -> Result<TurnOutcome, StepError> {
        self.run_turn_with(input, fresh_id("trace"), cancellation)
            .await
    }

    pub(crate) async fn run_turn_with(
        &self,
        input: impl Into<String>,
        trace_id: String,
        cancellation: CancellationToken,
    ) -> Result<TurnOutcome, StepError> {
        self.shared.restore().await?;
        if let Some(turn) = lock(&self.shared.unfinished).as_ref() {
            return Err(StepError::Unfinished {
                turn_id: turn.turn_id.clone(),
            });
        }
        let turn_id = fresh_id("turn");
        let input = Message {
            id: fresh_id("msg"),
            role: "user".to_owned(),
            content: Some(input.into()),
            tool_calls: Vec::new(),
            metadata: serde_json::Map::new(),
            created_at: now_ms(),
        };
        self.run_turn_of(input, turn_id, trace_id, cancellation)
            .await
    }

    /// Runs the Turn `turn_id` of `input` through the turn middleware and the Steps.
    async fn run_turn_of(
        &self,
        input: Message,
        turn_id: String,
        trace_id: String,
        cancellation: CancellationToken,
    ) -> Result<TurnOutcome, StepError> {
        let turn = TurnContext {
            input,
            metadata: serde_json::Map::new(),
            agent_name: self.shared.agent_name.clone(),
            turn_id,
            trace_id,
            cancellation,
        };
        // `gen_ai.*` and `otel.name`: the GenAI conventions' `invoke_agent` span.
        let span = tracing::info_span!(
            "turn",
            agent = %self.shared.agent_name,
            instance = %self.shared.instance_key,
            turn_id = %turn.turn_id,
            trace_id = %turn.trace_id,
            otel.name = %format_args!("invoke_agent {}", self.shared.agent_name),
            gen_ai.operation.name = "invoke_agent",
            gen_ai.agent.name = %self.shared.agent_name,
        );
        let core = Arc::new(TurnRunner(Arc::clone(&self.shared)));
        let run = TurnNext::new(Arc::clone(&self.shared.turn_chain), core).run(turn);
        tracing::Instrument::instrument(run, span).await
    }
}

/// Builds an [`AgentInstance`].
#[must_use]
pub struct AgentInstanceBuilder {
    agent_name: String,
    instance_key: String,
    registry: Arc<ToolRegistry>,
    model: Arc<dyn Model>,
    system: Option<String>,
    deltas: Option<DeltaSink>,
    declared: Vec<String>,
    extensions: Vec<Arc<dyn Extension>>,
    max_steps: usize,
    concurrency: usize,
    state_dir: Option<PathBuf>,
    runtime: Option<Arc<dyn AgentRuntime>>,
    history: Vec<Message>,
    journal: Option<Arc<dyn Journal>>,
    retry: RetryBudget,
    guardrails: Guardrails,
    toolsets: Vec<Toolset>,
    person: Option<Arc<dyn Caller>>,
    progress: Option<Arc<dyn ProgressSink>>,
    #[cfg(feature = "code-mode")]
    code_mode: Option<crate::code::CodeMode>,
}

impl AgentInstanceBuilder {
    /// Where the calls' progress reports go ([`ToolContext::progress`]), each with its call's
    /// id: `goondan run` shows them under the running call, and a code call reports each
    /// line its program prints as it prints it. Default: nowhere.
    pub fn progress(mut self, sink: Arc<dyn ProgressSink>) -> Self {
        self.progress = Some(sink);
        self
    }

    /// The person a tool's form goes to (MCP elicitation, asked by a tool or by a bridged
    /// server mid-call): `goondan run` gives its terminal. Sampling requests go to the agent's
    /// own model and the roots are its working directory, with or without a person.
    pub fn person(mut self, person: Arc<dyn Caller>) -> Self {
        self.person = Some(person);
        self
    }

    /// The conversation so far, oldest first: the instance goes on from it (a session read
    /// back from disk, a process restarted).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use goondan_runtime::prelude::*;
    /// use goondan_runtime::step::{AgentInstance, ModelResponse, ScriptedModel};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let registry = Arc::new(ToolRegistry::builder().build()?);
    /// let state = tempfile::tempdir()?;
    /// let model = |text: &str| Arc::new(ScriptedModel::new([ModelResponse::text(text)]));
    /// let first = AgentInstance::builder("helper", Arc::clone(&registry), model("hi"))
    ///     .state_dir(state.path())
    ///     .build()?;
    /// first.run_turn("hello").await?;
    /// let kept = first.conversation(); // the user's message and the answer
    ///
    /// let again = AgentInstance::builder("helper", registry, model("welcome back"))
    ///     .state_dir(state.path())
    ///     .conversation(kept.clone())
    ///     .build()?;
    /// again.run_turn("still there?").await?;
    /// let now = again.conversation();
    /// assert_eq!(now.len(), kept.len() + 2);
    /// assert_eq!(now[..kept.len()], kept[..]);
    /// # Ok(())
    /// # }
    /// ```
    pub fn conversation(mut self, messages: Vec<Message>) -> Self {
        self.history = messages;
        self
    }

    /// The Agent's `spec.tools`: resource names, in order (CAT-2).
    pub fn tools<S: Into<String>>(mut self, resources: impl IntoIterator<Item = S>) -> Self {
        self.declared = resources.into_iter().map(Into::into).collect();
        self
    }

    /// Adds a [`Toolset`] to the Agent's tools, after the resources of
    /// [`tools`](Self::tools): its tools under the names it gives them, which the model, the
    /// executor and approvals all use. The catalog is checked when the instance is built: a
    /// clash, an invalid name or an empty set is [`StepError::Toolset`].
    ///
    /// ```
    /// use std::sync::Arc;
    /// use goondan_runtime::prelude::*;
    /// use goondan_runtime::step::{AgentInstance, ModelResponse, ScriptedModel};
    /// use goondan_runtime::tools::toolset::Toolset;
    ///
    /// /// Adds.
    /// #[tool(name = "calc")]
    /// pub fn add(a: i64, b: i64) -> i64 { a + b }
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let model = ScriptedModel::new([
    ///     ModelResponse::calls([ToolCall::new("c1", "math__plus", serde_json::json!({"a": 2, "b": 3}))]),
    ///     ModelResponse::text("5"),
    /// ]);
    /// let registry = Arc::new(ToolRegistry::builder().tool(add::TOOL).build()?);
    /// let state = tempfile::tempdir()?;
    /// let agent = AgentInstance::builder("a", registry, Arc::new(model))
    ///     .toolset(Toolset::of("calc").prefix("math").rename("add", "plus"))
    ///     .state_dir(state.path())
    ///     .build()?;
    /// let turn = agent.run_turn("2 + 3?").await?;
    /// let result = &turn.steps[0].results[0];
    /// assert_eq!((&*result.tool_name, &result.output), ("math__plus", &Some(serde_json::json!(5))));
    /// # Ok(())
    /// # }
    /// ```
    pub fn toolset(mut self, toolset: Toolset) -> Self {
        self.toolsets.push(toolset);
        self
    }

    /// The system prompt every Step sends the model.
    pub fn system_prompt(mut self, text: impl Into<String>) -> Self {
        self.system = Some(text.into());
        self
    }

    /// Where a streaming model sends the answer's text while it is written
    /// ([`ModelRequest::deltas`]): a terminal shows it as it comes.
    pub fn deltas(mut self, sink: DeltaSink) -> Self {
        self.deltas = Some(sink);
        self
    }

    /// The instance key (default `default`).
    pub fn instance_key(mut self, key: impl Into<String>) -> Self {
        self.instance_key = key.into();
        self
    }

    /// Adds an extension; extensions register in the order added.
    pub fn extension(mut self, extension: impl Extension) -> Self {
        self.extensions.push(Arc::new(extension));
        self
    }

    /// Adds a shared extension.
    pub fn extension_arc(mut self, extension: Arc<dyn Extension>) -> Self {
        self.extensions.push(extension);
        self
    }

    /// `policy.maxStepsPerTurn` (default 16; at least 1).
    pub fn max_steps_per_turn(mut self, n: usize) -> Self {
        self.max_steps = n.max(1);
        self
    }

    /// Runs up to `n` calls of one Step at once (default 1: one after another). Results are
    /// kept in call order whatever the order they finish in.
    pub fn concurrency(mut self, n: usize) -> Self {
        self.concurrency = n.max(1);
        self
    }

    /// The instance's state directory; the workdir is `{state}/workspace` (default: a
    /// directory under the system's temporary directory).
    pub fn state_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.state_dir = Some(dir.into());
        self
    }

    /// The run journal: every Turn is written to it as it runs, and
    /// [`AgentInstance::resume`] finishes the one a crash left ([`super::journal`]). Its
    /// conversation replaces the one given to [`conversation`](Self::conversation), which is
    /// written into the journal when the journal is empty.
    pub fn journal(mut self, journal: Arc<dyn Journal>) -> Self {
        self.journal = Some(journal);
        self
    }

    /// How many failures of one tool (invalid arguments, errors marked retryable) the model may
    /// see in a Turn; one more stops the Turn with [`StepError::RetryBudget`] instead of
    /// letting the model loop until `maxStepsPerTurn` (default: no budget). A bundle's
    /// `policy.toolRetries` sets it ([`AgentInstance::from_bundle`]).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use goondan_runtime::calls::retry::RetryBudget;
    /// use goondan_runtime::prelude::*;
    /// use goondan_runtime::step::{AgentInstance, ModelResponse, ScriptedModel, StepError};
    ///
    /// /// Adds.
    /// #[tool(name = "calc")]
    /// pub fn add(a: i64, b: i64) -> i64 { a + b }
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// // A model that keeps sending text where numbers belong.
    /// let wrong = || ModelResponse::calls([ToolCall::new("c", "calc__add", serde_json::json!({"a": "2", "b": 3}))]);
    /// let registry = Arc::new(ToolRegistry::builder().tool(add::TOOL).build()?);
    /// let state = tempfile::tempdir()?;
    /// let agent = AgentInstance::builder("helper", registry, Arc::new(ScriptedModel::new([wrong(), wrong(), wrong()])))
    ///     .tools(["calc"])
    ///     .retry_budget(RetryBudget::per_tool(1))
    ///     .state_dir(state.path())
    ///     .build()?;
    /// let stopped = agent.run_turn("add 2 and 3").await;
    /// assert!(matches!(stopped, Err(StepError::RetryBudget { ref tool, failures: 2, .. }) if tool == "calc__add"));
    /// # Ok(())
    /// # }
    /// ```
    pub fn retry_budget(mut self, budget: RetryBudget) -> Self {
        self.retry = budget;
        self
    }

    /// Adds a guardrail to every call of the instance: its input checks run before approvals,
    /// its output checks before the model reads the result, a late completion's included
    /// ([guardrails](crate::calls::guardrail)). A bundle's `policy.guardrails` adds the
    /// runtime's own ([`AgentInstance::from_bundle`]).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use goondan_runtime::calls::guardrail::AllowList;
    /// use goondan_runtime::prelude::*;
    /// use goondan_runtime::step::{AgentInstance, ModelResponse, ScriptedModel};
    ///
    /// /// Reads files.
    /// #[tool(name = "files")]
    /// pub fn read(path: String) -> String { format!("contents of {path}") }
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let model = ScriptedModel::new([
    ///     ModelResponse::calls([ToolCall::new("c1", "files__read", serde_json::json!({"path": "/etc/shadow"}))]),
    ///     ModelResponse::text("I may not read that file."),
    /// ]);
    /// let registry = Arc::new(ToolRegistry::builder().tool(read::TOOL).build()?);
    /// let state = tempfile::tempdir()?;
    /// let agent = AgentInstance::builder("reader", registry, Arc::new(model))
    ///     .tools(["files"])
    ///     .guardrail(AllowList::new().path("."))
    ///     .state_dir(state.path())
    ///     .build()?;
    /// let outcome = agent.run_turn("read /etc/shadow").await?;
    /// assert_eq!(outcome.steps[0].results[0].error_code(), Some("E_TOOL_GUARDRAIL"));
    /// # Ok(())
    /// # }
    /// ```
    pub fn guardrail(mut self, guardrail: impl Guardrail) -> Self {
        self.guardrails = self.guardrails.with(guardrail);
        self
    }

    /// Adds every guardrail of `guardrails` (see [`guardrail`](Self::guardrail)).
    pub fn guardrails(mut self, guardrails: Guardrails) -> Self {
        self.guardrails = self.guardrails.extend(guardrails);
        self
    }

    /// Offers code mode ([`crate::code`]): every Step shows the code tool, whose program calls
    /// the Step's tools as functions, each call through the executor like the model's own.
    /// Whether the tools also stay callable directly is [`CodeMode`](crate::code::CodeMode)'s
    /// choice.
    #[cfg(feature = "code-mode")]
    pub fn code_mode(mut self, mode: crate::code::CodeMode) -> Self {
        self.code_mode = Some(mode);
        self
    }

    /// The agent-to-agent API every call of this instance gets as `ctx.runtime()`.
    pub fn agent_runtime(mut self, runtime: Arc<dyn AgentRuntime>) -> Self {
        self.runtime = Some(runtime);
        self
    }

    /// Registers the extensions, creates the workdir and finishes the instance.
    pub fn build(self) -> Result<AgentInstance, StepError> {
        let mut api = ExtensionApi::new(Arc::clone(&self.registry));
        for ext in &self.extensions {
            api.for_extension(ext.name());
            ext.register(&mut api)?;
        }
        let state = self.state_dir.unwrap_or_else(|| {
            std::env::temp_dir()
                .join("goondan")
                .join(&self.agent_name)
                .join(&self.instance_key)
        });
        let workdir = state.join("workspace");
        std::fs::create_dir_all(&workdir).map_err(|source| StepError::Workdir {
            path: workdir.clone(),
            source,
        })?;
        let toolsets = if self.toolsets.is_empty() {
            Vec::new()
        } else {
            let mut all: Vec<Toolset> = self.declared.iter().map(Toolset::of).collect();
            all.extend(self.toolsets);
            // Checked now: a wrong set fails the build, not the first Step.
            toolset::catalog(&self.registry, &all)?;
            all
        };
        let mut executor = ToolExecutor::builder(Arc::clone(&self.registry));
        for (priority, mw) in api.pipeline.take().into_items() {
            executor = executor.middleware_arc(priority, mw);
        }
        // Outermost: before the approvals an extension registers; completions too.
        executor = executor.guardrails(self.guardrails);
        let writer = Writer::new(self.journal.clone());
        if self.journal.is_some() {
            // Added last at the highest priority: the innermost, after approvals.
            executor = executor.middleware_arc(i32::MAX, Arc::new(JournalStarts(writer.clone())));
        }
        #[cfg(feature = "code-mode")]
        let code = self
            .code_mode
            .as_ref()
            .map(|mode| crate::code::CodeOffer::new(mode, true))
            .transpose()
            .map_err(|e| crate::extension::ExtensionError::Failed {
                extension: "code-mode".into(),
                message: e.to_string(),
            })?;
        let caller: Arc<dyn Caller> = Arc::new(AgentCaller {
            agent: self.agent_name.clone(),
            model: Arc::clone(&self.model),
            workdir: workdir.clone(),
            person: self.person,
        });
        Ok(AgentInstance {
            shared: Arc::new(Shared {
                caller,
                progress: self.progress,
                agent_name: self.agent_name,
                instance_key: self.instance_key,
                registry: self.registry,
                executor: executor.build(),
                model: self.model,
                system: self.system,
                deltas: self.deltas,
                declared: self.declared,
                toolsets,
                step_chain: api.pipeline.take::<StepContext>().to_chain(),
                turn_chain: api.pipeline.take::<TurnContext>().to_chain(),
                max_steps: self.max_steps,
                concurrency: self.concurrency,
                workdir,
                runtime: self.runtime,
                retry: self.retry,
                failures: Failures::default(),
                conversation: Mutex::new(self.history),
                journal: writer,
                restored: tokio::sync::OnceCell::new(),
                journal_warnings: Mutex::new(Vec::new()),
                unfinished: Mutex::new(None),
                open_step: Mutex::new(None),
                submissions: Submissions::default(),
                #[cfg(feature = "code-mode")]
                code,
            }),
        })
    }
}

struct TurnRunner(Arc<Shared>);

impl Core<TurnContext> for TurnRunner {
    fn run(
        self: Arc<Self>,
        turn: TurnContext,
    ) -> BoxFuture<'static, Result<TurnOutcome, StepError>> {
        let shared = Arc::clone(&self.0);
        Box::pin(async move {
            let resumed = lock(&shared.unfinished).take_if(|t| t.turn_id == turn.turn_id);
            let turn_id = turn.turn_id.clone();
            let outcome = run_steps(&shared, turn, resumed).await;
            let end = match &outcome {
                Ok(o) if o.end == TurnEnd::Answered => TurnEnding::Answered,
                Ok(_) => TurnEnding::MaxSteps,
                // The journal itself failed: nothing more can be written.
                Err(StepError::Journal(_)) => return outcome,
                Err(e) => TurnEnding::Failed {
                    message: e.to_string(),
                },
            };
            *lock(&shared.open_step) = None;
            shared
                .journal
                .write(&[JournalPoint::AfterTurnEnd], || {
                    vec![Record::TurnEnded { turn_id, end }]
                })
                .await?;
            outcome
        })
    }
}

/// The Steps of one Turn: from the first, or, for a Turn a crash left unfinished, from the
/// first Step whose results are not all journaled.
async fn run_steps(
    shared: &Arc<Shared>,
    turn: TurnContext,
    resumed: Option<UnfinishedTurn>,
) -> Result<TurnOutcome, StepError> {
    let mut steps = Vec::new();
    // A resumed Turn counts the failures it already had against the retry budget.
    let earlier = match &resumed {
        Some(resumed) => earlier_results(shared, &turn.input.id, resumed.open.as_ref()),
        None => Vec::new(),
    };
    shared.failures.start(&earlier);
    // The model answered without calls while submitted calls run: wait for a completion.
    let (first, mut waiting) = match resumed {
        Some(resumed) => {
            if resumed.answered && shared.submissions.is_empty() {
                // The model's final answer is journaled; only the Turn's end was not.
                return Ok(ended(turn, steps, TurnEnd::Answered));
            }
            *lock(&shared.open_step) = resumed.open;
            (resumed.steps_done, resumed.answered)
        }
        None => {
            shared
                .journal
                .write(&[JournalPoint::AfterInput], || {
                    vec![Record::TurnStarted {
                        turn_id: turn.turn_id.clone(),
                        trace_id: turn.trace_id.clone(),
                        input: turn.input.clone(),
                    }]
                })
                .await?;
            shared.conversation().push(turn.input.clone());
            (0, false)
        }
    };
    for index in first..shared.max_steps {
        if turn.cancellation.is_cancelled() {
            return Err(StepError::Model(super::ModelError::Cancelled));
        }
        // Completions join the conversation between Steps, never inside a resumed one.
        if !shared.submissions.is_empty() && lock(&shared.open_step).is_none() {
            deliver(shared, &turn, waiting).await?;
        }
        let catalog = shared.catalog()?;
        let step = StepContext {
            tool_catalog: catalog,
            system: shared.system.clone(),
            tool_choice: None,
            metadata: serde_json::Map::new(),
            agent_name: shared.agent_name.clone(),
            instance_key: shared.instance_key.clone(),
            turn_id: turn.turn_id.clone(),
            trace_id: turn.trace_id.clone(),
            step: index,
            messages: Arc::new(shared.conversation().clone()),
            cancellation: turn.cancellation.clone(),
        };
        let core = Arc::new(StepRunner(Arc::clone(shared)));
        let result = StepNext::new(Arc::clone(&shared.step_chain), core)
            .run(step)
            .await?;
        // The assistant message, then one tool message per result in call order (MW-4).
        let mut conversation = shared.conversation();
        conversation.push(result.assistant.clone());
        conversation.extend(result.tool_messages.iter().cloned());
        drop(conversation);
        if let Some(spent) = shared.failures.spent() {
            return Err(StepError::RetryBudget {
                tool: spent.tool,
                failures: spent.failures,
                error: spent.error,
            });
        }
        let answered = result.assistant.tool_calls.is_empty();
        steps.push(result);
        if answered && shared.submissions.is_empty() {
            return Ok(ended(turn, steps, TurnEnd::Answered));
        }
        waiting = answered;
    }
    // Out of Steps: a completion still to come joins the next Turn's conversation.
    let end = if waiting {
        TurnEnd::Answered
    } else {
        TurnEnd::MaxSteps
    };
    Ok(ended(turn, steps, end))
}

/// What `turn` did: its `steps`, ended by `end`.
fn ended(turn: TurnContext, steps: Vec<StepResult>, end: TurnEnd) -> TurnOutcome {
    TurnOutcome {
        turn_id: turn.turn_id,
        trace_id: turn.trace_id,
        steps,
        end,
    }
}

/// Brings the completions of submitted calls into the conversation, each written to the
/// journal first, oldest submission first. A call that a process which stopped had submitted
/// runs again when its export is idempotent or read-only, and otherwise completes with
/// `E_TOOL_INTERRUPTED`. With `wait` (the model answered without calls), first waits for one
/// completion, or for the Turn's cancellation.
async fn deliver(shared: &Shared, turn: &TurnContext, wait: bool) -> Result<(), StepError> {
    let pending = shared.executor.pending();
    let mut done: Vec<(Submission, ToolCallResult)> = Vec::new();
    for orphan in shared.submissions.take_orphans() {
        let message = shared
            .conversation()
            .iter()
            .rev()
            .find(|m| m.id == orphan.message_id)
            .cloned()
            .unwrap_or_else(|| {
                Message::assistant(orphan.message_id.clone(), None, vec![orphan.call.clone()])
            });
        let ctx = call_context(
            shared,
            (&turn.turn_id, &turn.trace_id),
            &turn.cancellation,
            message,
        )
        .build();
        let result = if rerunnable(&shared.registry, &orphan.call.name) {
            let catalog = shared.catalog()?;
            shared
                .executor
                .execute(orphan.call.clone(), &ctx, &catalog)
                .await
        } else {
            interrupted(&orphan.call, &ctx, &shared.registry)
        };
        match result.handle.as_deref() {
            Some(handle) if result.is_pending() => {
                shared
                    .submissions
                    .track(&orphan.message_id, &orphan.call, handle);
            }
            _ => done.push((orphan, result)),
        }
    }
    if wait && done.is_empty() {
        reached(JournalPoint::WhilePending);
        tokio::select! {
            () = shared.submissions.one_finished(pending) => {}
            () = turn.cancellation.cancelled() => {
                return Err(StepError::Model(super::ModelError::Cancelled));
            }
        }
    }
    done.extend(shared.submissions.take_ready(pending));
    if done.is_empty() {
        return Ok(());
    }
    let messages: Vec<Message> = done.iter().map(|(_, r)| completion_message(r)).collect();
    shared
        .journal
        .write(&[], || {
            done.iter()
                .zip(&messages)
                .map(|((submission, _), message)| Record::SubmissionCompleted {
                    turn_id: turn.turn_id.clone(),
                    message_id: submission.message_id.clone(),
                    call_id: submission.call.id.to_string(),
                    message: message.clone(),
                })
                .collect()
        })
        .await?;
    shared.conversation().extend(messages);
    Ok(())
}

/// The context of the calls of the assistant message `message` (CTX-5), before it is built.
fn call_context(
    shared: &Shared,
    (turn_id, trace_id): (&str, &str),
    cancellation: &CancellationToken,
    message: Message,
) -> crate::tools::context::ToolContextBuilder {
    let mut ctx = ToolContext::builder(shared.workdir.clone())
        .agent_name(shared.agent_name.clone())
        .instance_key(shared.instance_key.clone())
        .turn_id(turn_id.to_owned())
        .trace_id(trace_id.to_owned())
        .cancellation(cancellation.clone())
        .caller(Arc::clone(&shared.caller))
        .message(message);
    if let Some(runtime) = &shared.runtime {
        ctx = ctx.runtime(Arc::clone(runtime));
    }
    if let Some(sink) = &shared.progress {
        ctx = ctx.progress(Arc::clone(sink));
    }
    ctx
}

/// The results a resumed Turn already has: those in the conversation after its input, and
/// those journaled for its open Step.
fn earlier_results(
    shared: &Shared,
    input_id: &str,
    open: Option<&OpenStep>,
) -> Vec<ToolCallResult> {
    let conversation = shared.conversation();
    let after = conversation
        .iter()
        .rposition(|m| m.id == input_id)
        .map_or(&conversation[..0], |i| &conversation[i + 1..]);
    let mut results: Vec<ToolCallResult> = after
        .iter()
        .filter(|m| m.role == "tool")
        .filter_map(|m| serde_json::from_str(m.content.as_deref()?).ok())
        .collect();
    if let Some(open) = open {
        results.extend(open.calls.iter().filter_map(|c| match c {
            CallProgress::Finished(f) => Some(f.result.clone()),
            _ => None,
        }));
        // The journaled results of the calls the Step's programs made count too: a resumed
        // program is answered them again, not counted again.
        let inner = open.programs.iter().flatten();
        results.extend(inner.filter_map(|c| c.result.clone()));
    }
    results
}

struct StepRunner(Arc<Shared>);

impl Core<StepContext> for StepRunner {
    fn run(
        self: Arc<Self>,
        step: StepContext,
    ) -> BoxFuture<'static, Result<StepResult, StepError>> {
        let shared = Arc::clone(&self.0);
        Box::pin(async move {
            // Code mode: the model is shown the code tool; the program's calls are checked
            // against the Step's catalog.
            #[cfg(feature = "code-mode")]
            let (step, inner) = match &shared.code {
                Some(code) => {
                    let mut step = step;
                    let offered = code.offer(std::mem::take(&mut step.tool_catalog));
                    step.tool_catalog = offered.shown;
                    (step, Some(offered.inner))
                }
                None => (step, None),
            };
            let resumed = lock(&shared.open_step).take_if(|o| o.step == step.step);
            // What the programs of the resumed Step's started code calls did before.
            #[cfg(feature = "code-mode")]
            let programs = Arc::new(
                resumed
                    .as_ref()
                    .map(super::resumed::Programs::of)
                    .unwrap_or_default(),
            );
            let catalog;
            let (assistant, usage, progress, answered_now) = match resumed {
                Some(open) => {
                    catalog = step.tool_catalog;
                    (open.assistant, open.usage, open.calls, false)
                }
                None => {
                    let request = ModelRequest {
                        system: step.system,
                        agent_name: step.agent_name.clone(),
                        turn_id: step.turn_id.clone(),
                        step: step.step,
                        messages: step.messages.as_ref().clone(),
                        catalog: step.tool_catalog,
                        tool_choice: step.tool_choice,
                        max_tokens: None,
                        deltas: shared.deltas.clone(),
                        cancellation: step.cancellation.clone(),
                    };
                    // A program that gave the Turn's answer (`final_answer`) answers this Step
                    // in the model's place.
                    #[cfg(feature = "code-mode")]
                    let given = shared
                        .code
                        .as_ref()
                        .and_then(|_| crate::code::given_answer(&request.messages))
                        .map(|answer| {
                            let mut response = super::ModelResponse::text(answer);
                            response
                                .metadata
                                .insert(super::ANSWERED_BY.into(), crate::code::TOOL_NAME.into());
                            response
                        });
                    #[cfg(not(feature = "code-mode"))]
                    let given: Option<super::ModelResponse> = None;
                    let response = match given {
                        Some(response) => response,
                        None => shared.model.respond(&request).await?,
                    };
                    catalog = request.catalog;
                    let mut assistant =
                        Message::assistant(fresh_id("msg"), response.content, response.tool_calls);
                    assistant.metadata = response.metadata;
                    let waiting = vec![CallProgress::Waiting; assistant.tool_calls.len()];
                    (assistant, response.usage, waiting, true)
                }
            };
            // One write: the model's answer (unless it was read back) and the admission of
            // every call of the Step not admitted yet.
            let points: &[JournalPoint] = if answered_now {
                &[JournalPoint::AfterModelAnswer, JournalPoint::AfterAdmission]
            } else {
                &[JournalPoint::AfterAdmission]
            };
            shared
                .journal
                .write(points, || {
                    let answer = answered_now.then(|| Record::ModelAnswered {
                        turn_id: step.turn_id.clone(),
                        step: step.step,
                        assistant: assistant.clone(),
                        usage,
                    });
                    let admitted = assistant
                        .tool_calls
                        .iter()
                        .zip(&progress)
                        .filter(|(_, p)| matches!(p, CallProgress::Waiting))
                        .map(|(call, _)| Record::CallAdmitted {
                            turn_id: step.turn_id.clone(),
                            message_id: assistant.id.clone(),
                            call_id: call.id.to_string(),
                        });
                    answer.into_iter().chain(admitted).collect()
                })
                .await?;
            // CTX-5: every call of this Step sees the assistant message that holds it.
            let ctx = call_context(
                &shared,
                (&step.turn_id, &step.trace_id),
                &step.cancellation,
                assistant.clone(),
            );
            #[cfg(feature = "code-mode")]
            let ctx = match inner {
                Some(catalog) => ctx.step_calls(Arc::new(StepRoute {
                    shared: Arc::downgrade(&shared),
                    catalog,
                    programs,
                })),
                None => ctx,
            };
            let ctx = ctx.build();
            let calls = assistant.tool_calls.clone().into_iter().zip(progress);
            let run = |(call, progress)| run_call(&shared, &ctx, &catalog, call, progress);
            // At most `concurrency` calls at once (one: one after another), in call order.
            let finished: Vec<Result<(ToolCallResult, Message), StepError>> =
                futures_util::stream::iter(calls)
                    .map(run)
                    .buffered(shared.concurrency)
                    .collect()
                    .await;
            let finished = finished.into_iter().collect::<Result<Vec<_>, _>>()?;
            let (results, tool_messages) = finished.into_iter().unzip();
            // The results not yet written go before the model sees them.
            shared.journal.flush().await?;
            Ok(StepResult {
                step: step.step,
                catalog,
                assistant,
                results,
                tool_messages,
                usage,
            })
        })
    }
}

/// The route of the calls a code call's program makes: each is a call of the Step through the
/// instance's executor, checked against the Step's catalog and counted against the retry
/// budget like the model's own, and journaled as the program's; or, for a program that a
/// resumed Step runs again, answered from the journal ([`super::resumed`]).
#[cfg(feature = "code-mode")]
struct StepRoute {
    /// Weak: a call's context can outlive the Step in a pending result the executor keeps.
    shared: std::sync::Weak<Shared>,
    catalog: Arc<ToolCatalog>,
    programs: Arc<super::resumed::Programs>,
}

#[cfg(feature = "code-mode")]
impl crate::tools::context::StepCalls for StepRoute {
    fn catalog(&self) -> &ToolCatalog {
        &self.catalog
    }

    fn call(
        &self,
        call: crate::tools::result::ToolCall,
        index: usize,
        parent: &ToolContext,
    ) -> crate::tools::context::CallFuture {
        use super::resumed::Replayed;
        use crate::tools::context::{InnerOf, Journaled};

        let shared = self.shared.upgrade();
        let catalog = Arc::clone(&self.catalog);
        let programs = Arc::clone(&self.programs);
        let parent = parent.clone();
        Box::pin(async move {
            let Some(shared) = shared else {
                let gone = crate::tools::error::ToolError::new("the agent instance has stopped")
                    .with_code(crate::tools::error::codes::CANCELLED);
                return Ok(ToolCallResult::error(call.id, call.name, gone));
            };
            let outer = parent.tool_call_id().to_owned();
            let started = match programs.replay(&outer, index, &call.name, &call.args)? {
                Replayed::Finished(result) => return Ok(result),
                Replayed::Started => true,
                Replayed::New => false,
            };
            let result = if started && !rerunnable(&shared.registry, &call.name) {
                interrupted(&call, &parent, &shared.registry)
            } else {
                let journaled = shared.journal.journal().is_some().then(|| Journaled {
                    started,
                    inner: Some(InnerOf {
                        index,
                        args: call.args.clone(),
                    }),
                });
                let ctx = parent.with_journaled(journaled);
                let mut result = shared.executor.execute(call, &ctx, &catalog).await;
                shared.failures.count(&shared.retry, &mut result);
                result
            };
            // Written with the next write: the program's next call's start, or the Step's end.
            shared.journal.defer(JournalPoint::AfterInnerResult, || {
                let record = Record::InnerCallFinished {
                    turn_id: parent.turn_id().to_owned(),
                    message_id: parent.message().id.clone(),
                    call_id: outer,
                    index,
                    result: result.clone(),
                };
                (record, rerunnable(&shared.registry, &result.tool_name))
            });
            Ok(result)
        })
    }

    fn ended(
        &self,
        parent: &ToolContext,
        made: usize,
    ) -> Result<(), crate::tools::error::ToolError> {
        self.programs.ended(parent.tool_call_id(), made)
    }
}

/// Runs one call of a Step, or takes its journaled result, and writes the result.
async fn run_call(
    shared: &Shared,
    ctx: &ToolContext,
    catalog: &ToolCatalog,
    call: crate::tools::result::ToolCall,
    progress: CallProgress,
) -> Result<(ToolCallResult, Message), StepError> {
    let started = match progress {
        CallProgress::Finished(f) => {
            let message = tool_message_at(&f.result, f.tool_message_id, f.at);
            return Ok((f.result, message));
        }
        CallProgress::Started => true,
        CallProgress::Admitted | CallProgress::Waiting => false,
    };
    let result = if started && !rerunnable(&shared.registry, &call.name) && !resumes(shared, &call)
    {
        interrupted(&call, ctx, &shared.registry)
    } else {
        // A call that runs again after a crash has its start journaled already.
        let resumed = started.then(|| {
            ctx.with_journaled(Some(Journaled {
                started: true,
                inner: None,
            }))
        });
        let ctx = resumed.as_ref().unwrap_or(ctx);
        let mut result = shared.executor.execute(call.clone(), ctx, catalog).await;
        shared.failures.count(&shared.retry, &mut result);
        if let Some(handle) = result.handle.as_deref().filter(|_| result.is_pending()) {
            shared.submissions.track(&ctx.message().id, &call, handle);
        }
        result
    };
    let message = tool_message(&result);
    // Written with the next write: the next call's start, or the end of the Step.
    shared.journal.defer(JournalPoint::AfterResult, || {
        let record = Record::CallFinished {
            turn_id: ctx.turn_id().to_owned(),
            message_id: ctx.message().id.clone(),
            tool_message_id: message.id.clone(),
            at: message.created_at,
            result: result.clone(),
        };
        (record, rerunnable(&shared.registry, &result.tool_name))
    });
    Ok((result, message))
}

/// Whether `call`, started when the process stopped, resumes rather than being interrupted:
/// a code call runs its program again, answered from the journal ([`super::resumed`]).
fn resumes(shared: &Shared, call: &crate::tools::result::ToolCall) -> bool {
    #[cfg(feature = "code-mode")]
    if shared.code.is_some() && call.name == crate::code::TOOL_NAME {
        return true;
    }
    let _ = (shared, call);
    false
}
