//! Middleware: one onion for every [`Stage`] of the agent loop (MW-1, MW-2). A `toolCall`
//! middleware wraps one tool call ([`CallContext`]), a `step` middleware one Step
//! (`step::StepContext`), a `turn` middleware one Turn (`step::TurnContext`); all three are [`Middleware<C>`] for their
//! context `C`, chained by the same [`Next`] in the same order: lower priority outermost,
//! then the first registered outermost (MW-3).
//!
//! Code before [`Next::run`] may check or change the context (a call's arguments and
//! metadata, a Step's catalog, a Turn's input); `run` executes the rest of the chain and then
//! the core (the handler, the model and calls, the Steps); code after it may change or log the
//! outcome. A middleware may also answer without calling `run` (short-circuit). A `toolCall`
//! middleware cannot change which tool is called: the target is fixed before the chain starts.

use std::future::Future;
use std::marker::PhantomData;
use std::pin::Pin;
use std::sync::Arc;

use serde_json::Value;

use crate::tools::annotations::ExportAnnotations;
use crate::tools::catalog::ShownParameters;
use crate::tools::context::ToolContext;
use crate::tools::registry::RegisteredExport;
use crate::tools::result::ToolCallResult;
use crate::tools::result::{ArcStr, JsonObject};

/// A boxed, sendable future.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// The future a middleware of stage `C` returns: the stage's outcome.
pub type MiddlewareFuture<C = CallContext> = BoxFuture<'static, <C as Stage>::Output>;

/// A stage of the agent loop that middleware wraps: its context type (`Self`, passed inwards
/// and editable) and its outcome (passed outwards).
pub trait Stage: Send + 'static {
    /// What the stage's core answers, and every middleware of it.
    type Output: Send + 'static;
    /// The stage's name in bundles and traces: `toolCall`, `step`, `turn`.
    const NAME: &'static str;
}

impl Stage for CallContext {
    type Output = ToolCallResult;
    const NAME: &'static str = "toolCall";
}

/// What a `toolCall` middleware sees of a call (MW-2): the tool's name and call id (read
/// only), the arguments and metadata (mutable), and the call's [`ToolContext`]. The `turn` and
/// `step` middlewares see a `step::TurnContext` and a `step::StepContext`; a handler sees only
/// the [`ToolContext`].
#[derive(Debug, Clone)]
pub struct CallContext {
    tool_name: ArcStr,
    tool_call_id: ArcStr,
    /// The arguments as the model sent them (or an outer middleware changed them). They are
    /// validated against the schema the model was shown (and the export's own, when the Step
    /// showed another) after the chain, just before the handler.
    pub args: JsonObject,
    /// Free-form data for the middlewares of this call.
    pub metadata: serde_json::Map<String, Value>,
    ctx: ToolContext,
    /// The called export: fixed before the chain starts, so no middleware can retarget the call.
    target: Arc<RegisteredExport>,
    /// The parameter schema the Step showed in place of the export's, if it did.
    shown: Option<ShownParameters>,
}

impl CallContext {
    /// A call of `target`: the name and id are the model's own strings, moved in, not copied.
    pub(crate) fn new(
        tool_name: ArcStr,
        tool_call_id: ArcStr,
        args: JsonObject,
        ctx: ToolContext,
        target: Arc<RegisteredExport>,
        shown: Option<ShownParameters>,
    ) -> Self {
        Self {
            tool_name,
            tool_call_id,
            args,
            metadata: serde_json::Map::new(),
            ctx,
            target,
            shown,
        }
    }

    /// The full tool name.
    pub fn tool_name(&self) -> &str {
        &self.tool_name
    }

    /// The call's id.
    pub fn tool_call_id(&self) -> &str {
        &self.tool_call_id
    }

    /// The call's context.
    pub fn context(&self) -> &ToolContext {
        &self.ctx
    }

    /// The call's context, to mark it approved (the approvals middleware).
    pub(crate) fn context_mut(&mut self) -> &mut ToolContext {
        &mut self.ctx
    }

    /// The called export's title and effect hints (read-only, destructive, idempotent,
    /// open-world): what an approval middleware asks before letting a call through.
    ///
    /// ```
    /// use goondan_runtime::{ToolCallResult, ToolError, from_fn};
    /// let approvals = from_fn(|call, next| async move {
    ///     if call.annotations().destructive == Some(true) {
    ///         let err = ToolError::new("destructive calls need approval").with_code("E_DENIED");
    ///         return ToolCallResult::error(call.tool_call_id(), call.tool_name(), err);
    ///     }
    ///     next.run(call).await
    /// });
    /// # drop(approvals);
    /// ```
    pub fn annotations(&self) -> &ExportAnnotations {
        self.target.export().annotations()
    }

    /// The parts the core needs: name, id, arguments, context, target and the parameter
    /// schema shown.
    pub(crate) fn into_parts(
        self,
    ) -> (
        ArcStr,
        ArcStr,
        JsonObject,
        ToolContext,
        Arc<RegisteredExport>,
        Option<ShownParameters>,
    ) {
        (
            self.tool_name,
            self.tool_call_id,
            self.args,
            self.ctx,
            self.target,
            self.shown,
        )
    }
}

/// A middleware of stage `C`; without a parameter, a `toolCall` middleware (MW-1).
///
/// ```
/// use std::sync::Arc;
/// use goondan_runtime::{Middleware, Next, CallContext, calls::middleware::MiddlewareFuture};
///
/// struct Audit;
/// impl Middleware for Audit {
///     fn handle(self: Arc<Self>, call: CallContext, next: Next) -> MiddlewareFuture {
///         Box::pin(async move {
///             let name = call.tool_name().to_owned();
///             let result = next.run(call).await;
///             tracing::info!(tool = %name, ok = result.is_ok(), "audited");
///             result
///         })
///     }
/// }
/// ```
///
/// `handle` owns a reference to the middleware (`self: Arc<Self>`), so its future can use
/// `self` for as long as it runs and the chain hands it over without boxing it again.
pub trait Middleware<C: Stage = CallContext>: Send + Sync + 'static {
    /// Handles one call (Step, Turn); `next.run(cx)` continues the chain.
    fn handle(self: Arc<Self>, cx: C, next: Next<C>) -> MiddlewareFuture<C>;
}

/// A middleware of stage `C` from a closure: [`from_fn`], `step::step_fn`, `step::turn_fn`.
pub(crate) struct FnMiddleware<C, F> {
    f: F,
    stage: PhantomData<fn(C)>,
}

impl<C, F> FnMiddleware<C, F> {
    pub(crate) fn new(f: F) -> Self {
        Self {
            f,
            stage: PhantomData,
        }
    }
}

impl<C, F, Fut> Middleware<C> for FnMiddleware<C, F>
where
    C: Stage,
    F: Fn(C, Next<C>) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = C::Output> + Send + 'static,
{
    fn handle(self: Arc<Self>, cx: C, next: Next<C>) -> MiddlewareFuture<C> {
        Box::pin((self.f)(cx, next))
    }
}

/// A middleware from an async closure.
///
/// ```
/// use goondan_runtime::from_fn;
/// let add_default = from_fn(|mut call, next| async move {
///     call.args.entry("lang").or_insert_with(|| "en".into());
///     next.run(call).await
/// });
/// # drop(add_default);
/// ```
pub fn from_fn<F, Fut>(f: F) -> impl Middleware
where
    F: Fn(CallContext, Next) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = ToolCallResult> + Send + 'static,
{
    FnMiddleware::new(f)
}

/// The core of a stage, inside every middleware: for a call, argument validation and the
/// handler; for a Step, the model and the calls; for a Turn, its Steps.
pub(crate) trait Core<C: Stage = CallContext>: Send + Sync + 'static {
    /// Runs the core.
    fn run(self: Arc<Self>, cx: C) -> BoxFuture<'static, C::Output>;
}

/// The rest of a chain: the middlewares inside this one, then the core.
pub struct Next<C: Stage = CallContext> {
    chain: Arc<[Arc<dyn Middleware<C>>]>,
    index: usize,
    core: Arc<dyn Core<C>>,
}

impl<C: Stage> Next<C> {
    pub(crate) fn new(chain: Arc<[Arc<dyn Middleware<C>>]>, core: Arc<dyn Core<C>>) -> Self {
        Self {
            chain,
            index: 0,
            core,
        }
    }

    /// Runs the remaining middlewares and then the core.
    pub fn run(self, cx: C) -> MiddlewareFuture<C> {
        match self.chain.get(self.index) {
            Some(mw) => {
                let mw = Arc::clone(mw);
                let next = Next {
                    chain: self.chain,
                    index: self.index + 1,
                    core: self.core,
                };
                mw.handle(cx, next)
            }
            None => self.core.run(cx),
        }
    }
}

impl<C: Stage> std::fmt::Debug for Next<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Next")
            .field("stage", &C::NAME)
            .field("remaining", &(self.chain.len() - self.index))
            .finish()
    }
}

/// Middlewares of one stage ordered by priority (lower runs first, i.e. outermost), then by
/// registration (MW-3: the first registered is the outermost).
pub(crate) struct MiddlewareList<C: Stage = CallContext> {
    items: Vec<(i32, Arc<dyn Middleware<C>>)>,
}

impl<C: Stage> Default for MiddlewareList<C> {
    fn default() -> Self {
        Self { items: Vec::new() }
    }
}

impl<C: Stage> Clone for MiddlewareList<C> {
    fn clone(&self) -> Self {
        Self {
            items: self.items.clone(),
        }
    }
}

impl<C: Stage> MiddlewareList<C> {
    pub(crate) fn push(&mut self, priority: i32, mw: Arc<dyn Middleware<C>>) {
        // Stable: insert after every item of the same or lower priority.
        let at = self.items.partition_point(|(p, _)| *p <= priority);
        self.items.insert(at, (priority, mw));
    }

    #[cfg(feature = "host")]
    pub(crate) fn len(&self) -> usize {
        self.items.len()
    }

    #[cfg(feature = "host")]
    pub(crate) fn into_items(self) -> Vec<(i32, Arc<dyn Middleware<C>>)> {
        self.items
    }

    pub(crate) fn to_chain(&self) -> Arc<[Arc<dyn Middleware<C>>]> {
        self.items.iter().map(|(_, m)| Arc::clone(m)).collect()
    }
}
