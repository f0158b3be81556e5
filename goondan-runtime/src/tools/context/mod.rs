//! [`ToolContext`]: what a handler knows about the call it serves (CTX-1..5).
//!
//! - [`Message`] (in `message`): a conversation message; the context holds the one with the call.
//! - [`Progress`] and [`ProgressSink`] (in `progress`): a call's progress reports.
//! - [`Caller`] (in `caller`): whoever called, asked mid-call and told the call's log lines.
//! - `id`: process-unique ids and the clock.

mod caller;
#[cfg(feature = "code-mode")]
mod calls;
mod id;
#[cfg(feature = "host")]
mod journaled;
mod message;
mod progress;

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use arcstr::ArcStr;

use tokio_util::sync::CancellationToken;

pub use self::caller::{
    AnswerFuture, AskError, Caller, ElicitAction, Elicitation, LogLevel, Question,
};
#[cfg(feature = "code-mode")]
pub(crate) use self::calls::{CallFuture, StepCalls};
pub(crate) use self::id::fresh_id;
#[cfg(feature = "host")]
pub(crate) use self::id::now_ms;
#[cfg(feature = "code-mode")]
pub(crate) use self::journaled::InnerOf;
#[cfg(feature = "host")]
pub(crate) use self::journaled::Journaled;
pub use self::message::Message;
pub use self::progress::{Progress, ProgressSink};
use crate::tools::agent::AgentRuntime;

struct Scope {
    agent_name: ArcStr,
    instance_key: ArcStr,
    // Ids left unset are made the first time they are read: most calls never read them.
    turn_id: OnceLock<String>,
    trace_id: OnceLock<String>,
    message: OnceLock<Message>,
    workdir: Arc<Path>,
    runtime: Option<Arc<dyn AgentRuntime>>,
    // Made when first asked for, like the ids: most calls end without anyone looking at it.
    cancel: OnceLock<CancellationToken>,
    progress: Option<Arc<dyn ProgressSink>>,
    caller: Option<Arc<dyn Caller>>,
    /// The route of the calls a call makes within its Step (code mode).
    #[cfg(feature = "code-mode")]
    step_calls: Option<Arc<dyn StepCalls>>,
}

/// What a handler gets besides its arguments (CTX-1): who is calling, from which Turn and
/// Trace, in which message, in which working directory, with a logger and a cancellation token.
/// Nothing else (CTX-4). Cheap to clone.
///
/// Build one per Step with [`ToolContext::builder`]; the executor derives one per call from it,
/// setting the call's id and a `tracing` span that carries every id.
///
/// ```
/// use goondan_runtime::ToolContext;
/// let ctx = ToolContext::builder("/tmp/ws").agent_name("coder").turn_id("turn-1").build();
/// assert_eq!(ctx.agent_name(), "coder");
/// assert_eq!(ctx.workdir(), std::path::Path::new("/tmp/ws"));
/// ```
#[derive(Clone)]
pub struct ToolContext {
    scope: Arc<Scope>,
    tool_call_id: ArcStr,
    /// The id of the call this call is made in (a code mode program's code call); empty for
    /// a call of its own.
    within: ArcStr,
    span: tracing::Span,
    /// A person approved this very call (its arguments as they run), through the agent's
    /// approvals middleware.
    approved: bool,
    /// What the run journal already holds of this call (the step loop's; `None` outside it).
    #[cfg(feature = "host")]
    journaled: Option<Arc<Journaled>>,
}

impl ToolContext {
    /// Starts a context whose working directory is `workdir` (CTX-2).
    pub fn builder(workdir: impl Into<PathBuf>) -> ToolContextBuilder {
        Self::builder_in(Arc::from(workdir.into()))
    }

    /// [`builder`](Self::builder) for a working directory already shared: a host that makes a
    /// context for every call (the MCP server) shares its directory instead of copying it.
    pub(crate) fn builder_in(workdir: Arc<Path>) -> ToolContextBuilder {
        ToolContextBuilder(Scope {
            workdir,
            agent_name: arcstr::literal!("agent"),
            instance_key: arcstr::literal!("default"),
            turn_id: OnceLock::new(),
            trace_id: OnceLock::new(),
            message: OnceLock::new(),
            runtime: None,
            cancel: OnceLock::new(),
            progress: None,
            caller: None,
            #[cfg(feature = "code-mode")]
            step_calls: None,
        })
    }

    /// The agent this call runs for.
    pub fn agent_name(&self) -> &str {
        &self.scope.agent_name
    }

    /// The agent instance.
    pub fn instance_key(&self) -> &str {
        &self.scope.instance_key
    }

    /// The current Turn.
    pub fn turn_id(&self) -> &str {
        self.scope.turn_id.get_or_init(|| fresh_id("turn"))
    }

    /// The trace this call belongs to.
    pub fn trace_id(&self) -> &str {
        self.scope.trace_id.get_or_init(|| fresh_id("trace"))
    }

    /// The id of this tool call.
    pub fn tool_call_id(&self) -> &str {
        &self.tool_call_id
    }

    /// The id of the call this call is made in, when it is made in one: each call a code mode
    /// program makes is made in the program's code call. `None` for the model's own calls.
    ///
    /// ```
    /// use goondan_runtime::ToolContext;
    /// let step = ToolContext::builder("/tmp").build();
    /// let code = step.for_call("c1", "code__run");
    /// assert_eq!(code.within(), None);
    /// assert_eq!(code.for_call("c1.1", "weather__celsius").within(), Some("c1"));
    /// ```
    pub fn within(&self) -> Option<&str> {
        Some(self.within.as_str()).filter(|id| !id.is_empty())
    }

    /// Whether a person approved this call, with the arguments it runs with, through the
    /// agent's approvals (the `Approvals` middleware). Nothing but that middleware
    /// sets it, so a tool can let an approved call do what it refuses otherwise (`bash` running
    /// outside its sandbox when a call carries the `escalate` argument).
    ///
    /// ```
    /// use goondan_runtime::ToolContext;
    /// let ctx = ToolContext::builder("/tmp").build().for_call("c1", "a__b");
    /// assert!(!ctx.approved_by_person());
    /// ```
    pub fn approved_by_person(&self) -> bool {
        self.approved
    }

    /// Marks the call approved by a person (the approvals middleware, nothing else).
    pub(crate) fn mark_approved(&mut self) {
        self.approved = true;
    }

    /// What the run journal already holds of this call, when the step loop said.
    #[cfg(feature = "host")]
    pub(crate) fn journaled(&self) -> Option<&Journaled> {
        self.journaled.as_deref()
    }

    /// This context, for running a call of which the run journal holds `journaled`: the
    /// executor's context of the call keeps it ([`for_call`](Self::for_call)).
    #[cfg(feature = "host")]
    pub(crate) fn with_journaled(&self, journaled: Option<Journaled>) -> Self {
        Self {
            journaled: journaled.map(Arc::new),
            ..self.clone()
        }
    }

    /// The assistant message that contains this call (CTX-5).
    pub fn message(&self) -> &Message {
        self.scope
            .message
            .get_or_init(|| Message::assistant(fresh_id("msg"), None, Vec::new()))
    }

    /// The instance's workspace: tools that touch files resolve paths against it (CTX-2, CTX-3).
    pub fn workdir(&self) -> &Path {
        &self.scope.workdir
    }

    /// The call's logger: a `tracing` span carrying agent, instance, turn, trace and call ids.
    /// Handlers already run inside it; enter it in tasks you spawn yourself.
    pub fn logger(&self) -> &tracing::Span {
        &self.span
    }

    /// The agent-to-agent API, when the host provides one.
    pub fn runtime(&self) -> Option<&Arc<dyn AgentRuntime>> {
        self.scope.runtime.as_ref()
    }

    /// The token that is cancelled when the call should stop.
    pub fn cancellation(&self) -> &CancellationToken {
        self.scope.cancel.get_or_init(CancellationToken::new)
    }

    /// Whether the call has been cancelled.
    pub fn is_cancelled(&self) -> bool {
        // A token nobody has asked for yet cannot have been cancelled.
        self.scope
            .cancel
            .get()
            .is_some_and(CancellationToken::is_cancelled)
    }

    /// Reports progress: `done` out of `total` (when known), with an optional message. The
    /// host decides where it goes (an MCP client that sent a `progressToken` receives
    /// `notifications/progress`); with nowhere to go, it is dropped. Report increasing
    /// `done` values.
    ///
    /// ```
    /// use std::sync::{Arc, Mutex};
    /// use goondan_runtime::ToolContext;
    /// use goondan_runtime::tools::context::{Progress, ProgressSink};
    ///
    /// #[derive(Default)]
    /// struct Log(Mutex<Vec<f64>>);
    /// impl ProgressSink for Log {
    ///     fn report(&self, _call: &str, p: Progress) {
    ///         self.0.lock().map(|mut v| v.push(p.done)).ok();
    ///     }
    /// }
    /// let log = Arc::new(Log::default());
    /// let ctx = ToolContext::builder("/tmp").progress(log.clone()).build().for_call("c1", "a__b");
    /// ctx.progress(1.0, Some(2.0), Some("halfway"));
    /// ctx.progress(2.0, Some(2.0), None);
    /// assert_eq!(*log.0.lock().map_err(|_| "poisoned")?, vec![1.0, 2.0]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn progress(&self, done: f64, total: Option<f64>, message: Option<&str>) {
        if let Some(sink) = &self.scope.progress {
            sink.report(
                &self.tool_call_id,
                Progress {
                    done,
                    total,
                    message: message.map(str::to_owned),
                },
            );
        }
    }

    /// Writes a log line: a `tracing` event in the call's span, and, when the host has a
    /// caller that takes log lines (an MCP client that asked for this level), a
    /// `notifications/message` to it.
    ///
    /// ```
    /// use goondan_runtime::ToolContext;
    /// use goondan_runtime::tools::context::LogLevel;
    /// let ctx = ToolContext::builder("/tmp").build().for_call("c1", "a__b");
    /// ctx.log(LogLevel::Info, "starting"); // no caller: only the tracing event
    /// ```
    pub fn log(&self, level: LogLevel, message: impl Into<String>) {
        let message = message.into();
        self.span.in_scope(|| match level {
            LogLevel::Debug => tracing::debug!(target: "goondan::tool", "{message}"),
            LogLevel::Info | LogLevel::Notice => {
                tracing::info!(target: "goondan::tool", "{message}");
            }
            LogLevel::Warning => tracing::warn!(target: "goondan::tool", "{message}"),
            _ => tracing::error!(target: "goondan::tool", "{message}"),
        });
        if let Some(caller) = &self.scope.caller {
            caller.log(level, serde_json::Value::String(message));
        }
    }

    /// Whether the caller can answer `question` now. A tool that can do without an answer
    /// checks first.
    pub fn can_ask(&self, question: &Question) -> bool {
        self.scope
            .caller
            .as_ref()
            .is_some_and(|c| c.can_answer(question))
    }

    /// Asks the caller `question` and waits for the answer (the JSON result of the MCP
    /// request). See [`Caller`] for how a 2026-07-28 MCP client answers: the call may run
    /// again from the start.
    ///
    /// ```
    /// use goondan_runtime::ToolContext;
    /// use goondan_runtime::tools::context::{AskError, Question};
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let ctx = ToolContext::builder("/tmp").build().for_call("c1", "a__b");
    /// let answer = ctx.ask(Question::Roots).await;
    /// assert_eq!(answer, Err(AskError::NoCaller));
    /// # }
    /// ```
    pub async fn ask(&self, question: Question) -> Result<serde_json::Value, AskError> {
        self.ask_keyed(None, question).await
    }

    /// Like [`ask`](Self::ask), naming the question `key` among the call's questions (a
    /// client sees the key; the conformance suite expects fixed ones).
    pub async fn ask_as(
        &self,
        key: &str,
        question: Question,
    ) -> Result<serde_json::Value, AskError> {
        self.ask_keyed(Some(key), question).await
    }

    async fn ask_keyed(
        &self,
        key: Option<&str>,
        question: Question,
    ) -> Result<serde_json::Value, AskError> {
        let Some(caller) = &self.scope.caller else {
            return Err(AskError::NoCaller);
        };
        caller.ask(key, question).await
    }

    /// Asks the user to fill a form: `schema` is the JSON Schema of a flat object.
    ///
    /// ```no_run
    /// use goondan_runtime::prelude::*;
    /// use goondan_runtime::tools::context::ElicitAction;
    ///
    /// /// Greets the user by name.
    /// #[tool(name = "greeter")]
    /// pub async fn greet(ctx: &ToolContext) -> Result<String, ToolError> {
    ///     let schema = serde_json::json!({
    ///         "type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]
    ///     });
    ///     let answer = ctx.elicit("What is your name?", schema).await?;
    ///     match (answer.action, answer.field("name").and_then(|v| v.as_str())) {
    ///         (ElicitAction::Accept, Some(name)) => Ok(format!("Hello, {name}!")),
    ///         _ => Ok("Hello, stranger!".to_owned()),
    ///     }
    /// }
    /// ```
    pub async fn elicit(
        &self,
        message: impl Into<String>,
        schema: serde_json::Value,
    ) -> Result<Elicitation, AskError> {
        let answer = self.ask(Question::elicit(message, schema)).await?;
        Elicitation::from_answer(&answer)
    }

    /// Asks the caller's model for a completion: `params` are those of MCP's
    /// `sampling/createMessage`; the answer is its `CreateMessageResult`
    /// (`{role, content, model, stopReason?}`).
    pub async fn sample(&self, params: serde_json::Value) -> Result<serde_json::Value, AskError> {
        self.ask(Question::Sample(params)).await
    }

    /// The caller's roots: `[{uri, name?}]`.
    pub async fn roots(&self) -> Result<Vec<serde_json::Value>, AskError> {
        let answer = self.ask(Question::Roots).await?;
        match answer.get("roots") {
            Some(serde_json::Value::Array(roots)) => Ok(roots.clone()),
            _ => Err(AskError::Failed {
                reason: "a roots answer needs a `roots` array".into(),
            }),
        }
    }

    /// The route of the calls this call may make within its Step, when the Step offers code
    /// mode.
    #[cfg(feature = "code-mode")]
    pub(crate) fn step_calls(&self) -> Option<&Arc<dyn StepCalls>> {
        self.scope.step_calls.as_ref()
    }

    /// The context of one call: same scope and cancellation token, this call's id, and a span
    /// for it.
    pub fn for_call(&self, tool_call_id: impl Into<ArcStr>, tool_name: &str) -> ToolContext {
        let tool_call_id = tool_call_id.into();
        // The `gen_ai.*`, `error.type` and `otel.*` fields are the OpenTelemetry GenAI
        // conventions' `execute_tool` span (`crate::telemetry`); the executor records the
        // error's code when the call fails.
        let span = tracing::info_span!(
            "tool_call",
            tool = tool_name,
            tool_call_id = tool_call_id.as_str(),
            agent = %self.scope.agent_name,
            instance = %self.scope.instance_key,
            turn_id = self.turn_id(),
            trace_id = self.trace_id(),
            otel.name = %format_args!("execute_tool {tool_name}"),
            gen_ai.operation.name = "execute_tool",
            gen_ai.tool.name = tool_name,
            gen_ai.tool.call.id = tool_call_id.as_str(),
            gen_ai.tool.type = "function",
            "error.type" = tracing::field::Empty,
            otel.status_code = tracing::field::Empty,
        );
        ToolContext {
            scope: Arc::clone(&self.scope),
            tool_call_id,
            within: self.tool_call_id.clone(),
            span,
            approved: false,
            #[cfg(feature = "host")]
            journaled: self.journaled.clone(),
        }
    }
}

impl fmt::Debug for ToolContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolContext")
            .field("agent_name", &self.scope.agent_name)
            .field("instance_key", &self.scope.instance_key)
            .field("turn_id", &self.turn_id())
            .field("trace_id", &self.trace_id())
            .field("tool_call_id", &self.tool_call_id)
            .field("workdir", &self.scope.workdir)
            .field("runtime", &self.scope.runtime.is_some())
            .finish_non_exhaustive()
    }
}

/// Builds a [`ToolContext`]. Ids left unset are generated.
#[must_use]
pub struct ToolContextBuilder(Scope);

impl ToolContextBuilder {
    /// The agent's name (default `agent`). An [`ArcStr`] is shared, not copied.
    pub fn agent_name(mut self, name: impl Into<ArcStr>) -> Self {
        self.0.agent_name = name.into();
        self
    }

    /// The instance key (default `default`). An [`ArcStr`] is shared, not copied.
    pub fn instance_key(mut self, key: impl Into<ArcStr>) -> Self {
        self.0.instance_key = key.into();
        self
    }

    /// The Turn id (generated when unset).
    pub fn turn_id(mut self, id: impl Into<String>) -> Self {
        self.0.turn_id = OnceLock::from(id.into());
        self
    }

    /// The trace id (generated when unset).
    pub fn trace_id(mut self, id: impl Into<String>) -> Self {
        self.0.trace_id = OnceLock::from(id.into());
        self
    }

    /// The assistant message that holds the calls (an empty one when unset).
    pub fn message(mut self, message: Message) -> Self {
        self.0.message = OnceLock::from(message);
        self
    }

    /// The agent-to-agent API.
    pub fn runtime(mut self, runtime: Arc<dyn AgentRuntime>) -> Self {
        self.0.runtime = Some(runtime);
        self
    }

    /// The token whose cancellation stops the calls made with this context.
    pub fn cancellation(mut self, token: CancellationToken) -> Self {
        self.0.cancel = OnceLock::from(token);
        self
    }

    /// Where the calls' progress reports go.
    pub fn progress(mut self, sink: Arc<dyn ProgressSink>) -> Self {
        self.0.progress = Some(sink);
        self
    }

    /// Whoever called: it answers the calls' questions and receives their log lines.
    pub fn caller(mut self, caller: Arc<dyn Caller>) -> Self {
        self.0.caller = Some(caller);
        self
    }

    /// The route of the calls a call may make within its Step (code mode).
    #[cfg(feature = "code-mode")]
    pub(crate) fn step_calls(mut self, calls: Arc<dyn StepCalls>) -> Self {
        self.0.step_calls = Some(calls);
        self
    }

    /// Finishes the context. Its call id is empty until the executor derives a call's context.
    pub fn build(self) -> ToolContext {
        ToolContext {
            scope: Arc::new(self.0),
            tool_call_id: ArcStr::new(),
            within: ArcStr::new(),
            span: tracing::Span::none(),
            approved: false,
            #[cfg(feature = "host")]
            journaled: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::Value;

    use super::*;
    use crate::tools::result::ToolCall;

    #[test]
    fn ctx_1_context_carries_every_id_and_the_workdir() {
        let msg = Message::assistant("m1", None, vec![ToolCall::new("c1", "a__b", Value::Null)]);
        let base = ToolContext::builder("/w")
            .agent_name("coder")
            .instance_key("i1")
            .turn_id("t1")
            .trace_id("tr1")
            .message(msg.clone())
            .build();
        let ctx = base.for_call("c1", "a__b");
        assert_eq!(ctx.agent_name(), "coder");
        assert_eq!(ctx.instance_key(), "i1");
        assert_eq!(ctx.turn_id(), "t1");
        assert_eq!(ctx.trace_id(), "tr1");
        assert_eq!(ctx.tool_call_id(), "c1");
        assert_eq!(ctx.message(), &msg);
        assert_eq!(ctx.workdir(), Path::new("/w"));
        assert!(ctx.runtime().is_none());
        // The logger is a span; without a subscriber it is disabled but present.
        let _ = ctx.logger();
    }

    #[test]
    fn ctx_1_unset_ids_are_generated_and_distinct() {
        let a = ToolContext::builder("/w").build();
        let b = ToolContext::builder("/w").build();
        assert!(a.turn_id().starts_with("turn-"));
        assert_ne!(a.turn_id(), b.turn_id());
        assert_ne!(a.trace_id(), b.trace_id());
    }

    #[test]
    fn ctx_5_message_is_the_assistant_message_holding_the_call() {
        let call = ToolCall::new("c9", "x__y", serde_json::json!({}));
        let msg = Message::assistant("m9", Some("let me check".into()), vec![call.clone()]);
        let ctx = ToolContext::builder("/w")
            .message(msg)
            .build()
            .for_call("c9", "x__y");
        assert_eq!(ctx.message().role, "assistant");
        assert!(
            ctx.message()
                .tool_calls
                .iter()
                .any(|c| c.id == ctx.tool_call_id())
        );
    }

    /// CTX-4: the context holds exactly the CTX-1 parts and a cancellation token. The patterns
    /// below name every field, with no `..`, and pin each field's type: a new field (a
    /// registry, a bundle, credentials) or a wider type stops this test from compiling, so
    /// whoever adds one must come here and answer to CTX-4.
    #[test]
    fn ctx_4_the_context_holds_only_the_call_s_own_parts() {
        let ctx = ToolContext::builder("/w")
            .agent_name("coder")
            .instance_key("i1")
            .turn_id("t1")
            .trace_id("tr1")
            .build()
            .for_call("c1", "a__b");
        let ToolContext {
            scope,
            tool_call_id,
            within,
            span,
            approved,
            #[cfg(feature = "host")]
            journaled,
        } = &ctx;
        // Whether a person approved this call: a fact about the call, no interface.
        let _: &bool = approved;
        // What the run journal holds of this call: facts about the call (started already,
        // which program made it), private to the crate; no interface.
        #[cfg(feature = "host")]
        let _: &Option<Arc<Journaled>> = journaled;
        let Scope {
            agent_name,
            instance_key,
            turn_id,
            trace_id,
            message,
            workdir,
            runtime,
            cancel,
            progress,
            caller,
            #[cfg(feature = "code-mode")]
            step_calls,
        } = scope.as_ref();
        // The call's id, and the id of the call it is made in.
        let _: (&str, &str, &str, &str) = (agent_name, instance_key, tool_call_id, within);
        // Ids given, or made when first read.
        let _: (&OnceLock<String>, &OnceLock<String>, &OnceLock<Message>) =
            (turn_id, trace_id, message);
        let _: (&Arc<Path>, &tracing::Span, &OnceLock<CancellationToken>) = (workdir, span, cancel);
        // The one interface a tool may reach: the agent-to-agent API (CTX-1 `runtime`).
        let _: &Option<Arc<dyn AgentRuntime>> = runtime;
        // Where the call's progress reports go: a write-only sink the host
        // provides; the tool cannot read anything through it.
        let _: &Option<Arc<dyn ProgressSink>> = progress;
        // Whoever called: the tool may ask it questions (the user, its model, its
        // roots) and write log lines to it; it holds nothing of the host's.
        let _: &Option<Arc<dyn Caller>> = caller;
        // The route of the calls a call makes within its Step: private to the crate, used by
        // the code tool alone; every such call is checked against the Step's catalog.
        #[cfg(feature = "code-mode")]
        let _: &Option<Arc<dyn StepCalls>> = step_calls;
        assert_eq!(
            [
                &**agent_name,
                &**instance_key,
                ctx.turn_id(),
                ctx.trace_id(),
                &**tool_call_id
            ],
            ["coder", "i1", "t1", "tr1", "c1"]
        );

        // The builder can set nothing else either: it holds only the `Scope` pinned above.
        let ToolContextBuilder(_): ToolContextBuilder = ToolContext::builder("/w");
    }

    /// The token is made when first asked for, by the Step's context or by any call's: they
    /// all get the same one, whichever asks first.
    #[test]
    fn a_token_made_late_is_the_scope_s_one_token() {
        let base = ToolContext::builder("/w").build();
        let a = base.for_call("a", "x__y");
        let b = base.for_call("b", "x__y");
        assert!(!a.is_cancelled() && !b.is_cancelled() && !base.is_cancelled());
        let token = b.cancellation().clone();
        a.cancellation().cancel();
        assert!(token.is_cancelled());
        assert!(base.is_cancelled() && b.is_cancelled());
        assert!(base.for_call("c", "x__y").is_cancelled());
        // A token given to the builder is the one handed out.
        let given = CancellationToken::new();
        let ctx = ToolContext::builder("/w")
            .cancellation(given.clone())
            .build()
            .for_call("d", "x__y");
        given.cancel();
        assert!(ctx.is_cancelled() && ctx.cancellation().is_cancelled());
    }

    #[test]
    fn cancelling_the_step_cancels_its_calls() {
        let base = ToolContext::builder("/w").build();
        let a = base.for_call("a", "x__y");
        assert!(!a.is_cancelled());
        base.cancellation().cancel();
        assert!(a.is_cancelled());
        assert!(base.for_call("b", "x__y").is_cancelled());
    }
}
