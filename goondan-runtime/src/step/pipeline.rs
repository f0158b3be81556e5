//! `step` and `turn` middleware: onions around one Step (which may edit the catalog, CAT-3)
//! and around one Turn. They are the one onion of [`crate::calls::middleware`], over the stages
//! [`StepContext`] and [`TurnContext`].

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use serde_json::Value;

use super::StepError;
use crate::calls::middleware::{FnMiddleware, Middleware, Next, Stage};
use crate::extension::PipelineMiddleware;
use crate::tools::catalog::ToolCatalog;
use crate::tools::context::Message;
use crate::tools::result::ToolCallResult;

/// A boxed future of the step loop.
pub type StepFuture<'a, T> = Pin<Box<dyn Future<Output = Result<T, StepError>> + Send + 'a>>;

/// What a step middleware sees: the Step's catalog (editable: add, remove, reorder, CAT-3), the
/// conversation so far, and free metadata.
#[derive(Debug, Clone)]
pub struct StepContext {
    /// The tools the model will be shown, and the allow-list of this Step's calls.
    pub tool_catalog: ToolCatalog,
    /// The system prompt the model is sent in this Step (the agent's, which a middleware may
    /// add to: the base tools' skills extension lists the skills a model can load).
    pub system: Option<String>,
    /// Whether the model must, may or must not call a tool in this Step, or which one; `None`
    /// (the default) leaves it to the Model's configuration. A named tool must stay in
    /// [`StepContext::tool_catalog`].
    pub tool_choice: Option<crate::tools::catalog::ToolChoice>,
    /// Free-form data for the middlewares of this Step.
    pub metadata: serde_json::Map<String, Value>,
    pub(crate) agent_name: String,
    pub(crate) instance_key: String,
    pub(crate) turn_id: String,
    pub(crate) trace_id: String,
    pub(crate) step: usize,
    pub(crate) messages: Arc<Vec<Message>>,
    pub(crate) cancellation: tokio_util::sync::CancellationToken,
}

impl StepContext {
    /// The agent.
    pub fn agent_name(&self) -> &str {
        &self.agent_name
    }

    /// The agent instance.
    pub fn instance_key(&self) -> &str {
        &self.instance_key
    }

    /// The Turn.
    pub fn turn_id(&self) -> &str {
        &self.turn_id
    }

    /// The Turn's trace: every call of the Step runs in it (HO-3).
    pub fn trace_id(&self) -> &str {
        &self.trace_id
    }

    /// The Step's index in its Turn, from 0.
    pub fn step(&self) -> usize {
        self.step
    }

    /// The conversation before this Step.
    pub fn messages(&self) -> &[Message] {
        &self.messages
    }

    /// The Turn's cancellation: cancelled, the model request stops and the Step's tool calls
    /// see it in `ctx.cancellation()`.
    pub fn cancellation(&self) -> &tokio_util::sync::CancellationToken {
        &self.cancellation
    }
}

/// What one Step did: the catalog the model was shown, its message, and the results of its
/// calls in call order.
#[derive(Debug, Clone)]
pub struct StepResult {
    /// The Step's index in its Turn.
    pub step: usize,
    /// The catalog after step middleware: what the model saw and what calls were checked against.
    pub catalog: ToolCatalog,
    /// The assistant message holding the calls (each call's `ctx.message`, CTX-5).
    pub assistant: Message,
    /// One result per call, in call order.
    pub results: Vec<ToolCallResult>,
    /// The tool messages that carry the results into the conversation, in call order.
    pub tool_messages: Vec<Message>,
    /// The tokens the model used for this Step, when its provider reports them.
    pub usage: Option<super::TokenUsage>,
}

impl Stage for StepContext {
    type Output = Result<StepResult, StepError>;
    const NAME: &'static str = "step";
}

/// A `step` middleware: any [`Middleware<StepContext>`]. `next.run(step)` asks the model and
/// runs the calls.
pub trait StepMiddleware: Middleware<StepContext> {}

impl<T: Middleware<StepContext>> StepMiddleware for T {}

/// The rest of a step chain.
pub type StepNext = Next<StepContext>;

/// A step middleware from an async closure.
///
/// ```
/// use goondan_runtime::step::step_fn;
/// // Hide every `admin` tool from the model (CAT-3).
/// let hide_admin = step_fn(|mut step, next| async move {
///     step.tool_catalog.retain(|item| item.name().resource() != "admin");
///     next.run(step).await
/// });
/// # drop(hide_admin);
/// ```
pub fn step_fn<F, Fut>(f: F) -> impl StepMiddleware
where
    F: Fn(StepContext, StepNext) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<StepResult, StepError>> + Send + 'static,
{
    FnMiddleware::new(f)
}

/// What a turn middleware sees: the input message (editable) and free metadata.
#[derive(Debug, Clone)]
pub struct TurnContext {
    /// The message that starts the Turn.
    pub input: Message,
    /// Free-form data for the middlewares of this Turn.
    pub metadata: serde_json::Map<String, Value>,
    pub(crate) agent_name: String,
    pub(crate) turn_id: String,
    pub(crate) trace_id: String,
    pub(crate) cancellation: tokio_util::sync::CancellationToken,
}

impl TurnContext {
    /// The agent.
    pub fn agent_name(&self) -> &str {
        &self.agent_name
    }

    /// The Turn.
    pub fn turn_id(&self) -> &str {
        &self.turn_id
    }

    /// The Turn's trace: the caller's when another agent asked for this Turn (HO-3), else a
    /// fresh one. Every Step and tool call of the Turn carries it.
    pub fn trace_id(&self) -> &str {
        &self.trace_id
    }

    /// The Turn's cancellation ([`AgentInstance::run_turn_cancellable`](super::AgentInstance::run_turn_cancellable)).
    pub fn cancellation(&self) -> &tokio_util::sync::CancellationToken {
        &self.cancellation
    }
}

/// How a Turn ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TurnEnd {
    /// The model answered without tool calls.
    Answered,
    /// `policy.maxStepsPerTurn` Steps ran and the model still made calls.
    MaxSteps,
}

/// The metadata key of an assistant message that no model wrote: its value names what did
/// (`code__run`: a program that gave the Turn's answer with `final_answer`).
pub const ANSWERED_BY: &str = "answeredBy";

/// What one Turn did.
#[derive(Debug, Clone)]
pub struct TurnOutcome {
    /// The Turn's id.
    pub turn_id: String,
    /// The Turn's trace (HO-3): see [`TurnContext::trace_id`].
    pub trace_id: String,
    /// Every Step, in order.
    pub steps: Vec<StepResult>,
    /// Why it ended.
    pub end: TurnEnd,
}

impl TurnOutcome {
    /// The text of the last assistant message.
    pub fn answer(&self) -> Option<&str> {
        self.steps.last()?.assistant.content.as_deref()
    }

    /// How many times the model was asked: every Step but those a program answered
    /// ([`ANSWERED_BY`]).
    pub fn model_requests(&self) -> usize {
        self.steps
            .iter()
            .filter(|s| !s.assistant.metadata.contains_key(ANSWERED_BY))
            .count()
    }

    /// The tokens of every Step added up; `None` when no Step's provider reported any.
    pub fn usage(&self) -> Option<super::TokenUsage> {
        self.steps
            .iter()
            .filter_map(|s| s.usage)
            .reduce(|a, b| super::TokenUsage {
                input_tokens: a.input_tokens.saturating_add(b.input_tokens),
                output_tokens: a.output_tokens.saturating_add(b.output_tokens),
            })
    }
}

impl Stage for TurnContext {
    type Output = Result<TurnOutcome, StepError>;
    const NAME: &'static str = "turn";
}

/// A `turn` middleware: any [`Middleware<TurnContext>`]. `next.run(turn)` runs its Steps.
pub trait TurnMiddleware: Middleware<TurnContext> {}

impl<T: Middleware<TurnContext>> TurnMiddleware for T {}

/// The rest of a turn chain.
pub type TurnNext = Next<TurnContext>;

/// A turn middleware from an async closure.
///
/// ```
/// use goondan_runtime::step::turn_fn;
/// // Every Turn's input, trimmed.
/// let trim = turn_fn(|mut turn, next| async move {
///     if let Some(text) = turn.input.content.as_mut() {
///         *text = text.trim().to_owned();
///     }
///     next.run(turn).await
/// });
/// # drop(trim);
/// ```
pub fn turn_fn<F, Fut>(f: F) -> impl TurnMiddleware
where
    F: Fn(TurnContext, TurnNext) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<TurnOutcome, StepError>> + Send + 'static,
{
    FnMiddleware::new(f)
}

impl PipelineMiddleware {
    /// A `step` middleware: around each Step; may edit the catalog (CAT-3).
    pub fn step(mw: impl StepMiddleware) -> Self {
        Self::of::<StepContext>(mw)
    }

    /// A `turn` middleware: around each Turn.
    pub fn turn(mw: impl TurnMiddleware) -> Self {
        Self::of::<TurnContext>(mw)
    }
}
