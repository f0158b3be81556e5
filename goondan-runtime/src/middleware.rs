//! The `toolCall` pipeline: an onion of [`Middleware`] around the core handler (MW-1, MW-2).
//!
//! Code before [`Next::run`] may check or change the arguments and metadata; `run` executes
//! the rest of the chain and then the handler; code after it may change or log the result.
//! A middleware may also answer without calling `run` (short-circuit). It cannot change which
//! tool is called: the target is fixed before the chain starts.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use serde_json::Value;

use crate::JsonObject;
use crate::annotations::ExportAnnotations;
use crate::context::ToolContext;
use crate::result::ToolCallResult;

/// The future a middleware returns.
pub type MiddlewareFuture<'a> = Pin<Box<dyn Future<Output = ToolCallResult> + Send + 'a>>;

/// What a middleware sees of a call (MW-2): the tool's name and call id (read only), the
/// arguments and metadata (mutable), and the call's [`ToolContext`].
#[derive(Debug, Clone)]
pub struct ToolCallContext {
    tool_name: String,
    tool_call_id: String,
    /// The arguments as the model sent them (or an outer middleware changed them). They are
    /// validated against the export's schema after the chain, just before the handler.
    pub args: JsonObject,
    /// Free-form data for the middlewares of this call.
    pub metadata: serde_json::Map<String, Value>,
    ctx: ToolContext,
    annotations: Arc<ExportAnnotations>,
}

impl ToolCallContext {
    pub(crate) fn new(
        tool_name: &str,
        tool_call_id: &str,
        args: JsonObject,
        ctx: ToolContext,
        annotations: Arc<ExportAnnotations>,
    ) -> Self {
        Self {
            tool_name: tool_name.to_owned(),
            tool_call_id: tool_call_id.to_owned(),
            args,
            metadata: serde_json::Map::new(),
            ctx,
            annotations,
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
        &self.annotations
    }

    pub(crate) fn into_parts(self) -> (JsonObject, ToolContext) {
        (self.args, self.ctx)
    }
}

/// A `toolCall` middleware (MW-1).
///
/// ```
/// use goondan_runtime::{Middleware, Next, ToolCallContext, middleware::MiddlewareFuture};
///
/// struct Audit;
/// impl Middleware for Audit {
///     fn handle<'a>(&'a self, call: ToolCallContext, next: Next) -> MiddlewareFuture<'a> {
///         Box::pin(async move {
///             let name = call.tool_name().to_owned();
///             let result = next.run(call).await;
///             tracing::info!(tool = %name, ok = result.is_ok(), "audited");
///             result
///         })
///     }
/// }
/// ```
pub trait Middleware: Send + Sync + 'static {
    /// Handles one call; `next.run(call)` continues the chain.
    fn handle<'a>(&'a self, call: ToolCallContext, next: Next) -> MiddlewareFuture<'a>;
}

struct FnMiddleware<F>(F);

impl<F, Fut> Middleware for FnMiddleware<F>
where
    F: Fn(ToolCallContext, Next) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = ToolCallResult> + Send + 'static,
{
    fn handle<'a>(&'a self, call: ToolCallContext, next: Next) -> MiddlewareFuture<'a> {
        Box::pin((self.0)(call, next))
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
    F: Fn(ToolCallContext, Next) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = ToolCallResult> + Send + 'static,
{
    FnMiddleware(f)
}

/// The innermost step of the chain: argument validation and the handler.
pub(crate) trait Core: Send + Sync + 'static {
    fn run(&self, call: ToolCallContext) -> MiddlewareFuture<'static>;
}

/// The rest of the chain.
pub struct Next {
    chain: Arc<[Arc<dyn Middleware>]>,
    index: usize,
    core: Arc<dyn Core>,
}

impl Next {
    pub(crate) fn new(chain: Arc<[Arc<dyn Middleware>]>, core: Arc<dyn Core>) -> Self {
        Self {
            chain,
            index: 0,
            core,
        }
    }

    /// Runs the remaining middlewares and then the handler.
    pub fn run(self, call: ToolCallContext) -> MiddlewareFuture<'static> {
        match self.chain.get(self.index) {
            Some(mw) => {
                let mw = Arc::clone(mw);
                let next = Next {
                    chain: self.chain,
                    index: self.index + 1,
                    core: self.core,
                };
                Box::pin(async move { mw.handle(call, next).await })
            }
            None => self.core.run(call),
        }
    }
}

impl std::fmt::Debug for Next {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Next")
            .field("remaining", &(self.chain.len() - self.index))
            .finish()
    }
}

/// Middlewares ordered by priority (lower runs first, i.e. outermost), then by registration
/// (MW-3: the first registered is the outermost).
#[derive(Clone, Default)]
pub(crate) struct MiddlewareList {
    items: Vec<(i32, Arc<dyn Middleware>)>,
}

impl MiddlewareList {
    pub(crate) fn push(&mut self, priority: i32, mw: Arc<dyn Middleware>) {
        // Stable: insert after every item of the same or lower priority.
        let at = self.items.partition_point(|(p, _)| *p <= priority);
        self.items.insert(at, (priority, mw));
    }

    pub(crate) fn to_chain(&self) -> Arc<[Arc<dyn Middleware>]> {
        self.items.iter().map(|(_, m)| Arc::clone(m)).collect()
    }
}
