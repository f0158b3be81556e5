//! [`ToolExecutor`]: runs one model tool call under the Goondan rules and always answers with a
//! [`ToolCallResult`] (RES-3).
//!
//! Order: name check, catalog gate (PERM-1..4), registry lookup, `toolCall` middleware (MW-1),
//! argument validation, the handler (panics caught, timeout, cancellation), then the error
//! message cut to the resource's limit (RES-4).

use std::any::Any;
use std::borrow::Cow;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;

use futures_util::FutureExt;
use serde_json::Value;
use tracing::Instrument;

use crate::catalog::{Lookup, ToolCatalog};
use crate::context::ToolContext;
use crate::error::{DEFAULT_ERROR_MESSAGE_LIMIT, ToolError};
use crate::events::{emit_called, emit_finished};
use crate::handler::{HandlerCall, HandlerError, Outcome};
use crate::help_url;
use crate::middleware::{
    Core, Middleware, MiddlewareFuture, MiddlewareList, Next, ToolCallContext,
};
use crate::name;
use crate::pending::PendingResults;
use crate::refusal::{
    args_not_object, cancelled, invalid_args, invalid_name, middleware_panic_error, not_found,
    not_in_catalog, panic_error, timed_out,
};
use crate::registry::{RegisteredExport, ToolRegistry};
use crate::result::JsonObject;
use crate::result::{ToolCall, ToolCallResult};
use crate::schema::ArgProblem;

pub use crate::refusal::MAX_LISTED_PROBLEMS;

/// Which calls are allowed (PERM-1..3).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum CallPolicy {
    /// Only tools in the Step's catalog (PERM-1, PERM-2). The default.
    #[default]
    CatalogOnly,
    /// Any tool of the registry, in the catalog or not: an explicit security decision (PERM-3).
    AllowRegistry,
}

struct Shared {
    registry: Arc<ToolRegistry>,
    chain: Arc<[Arc<dyn Middleware>]>,
    policy: CallPolicy,
    core: Arc<CallCore>,
}

/// The core of every call, inside the middleware chain: validation, the handler, the reply.
/// One per executor, shared by every call's chain.
struct CallCore {
    default_timeout: Option<Duration>,
    /// How many bytes of content parts one result may carry.
    max_content_bytes: usize,
    pending: PendingResults,
    help_url_base: Option<Arc<str>>,
}

impl CallCore {
    /// Where runtime codes' help URLs point: this executor's base, else the process's (RES-7).
    fn help_url_base(&self) -> Arc<str> {
        self.help_url_base
            .clone()
            .unwrap_or_else(help_url::help_url_base)
    }
}

/// Runs tool calls. Cheap to clone; clones share middleware and pending results.
///
/// ```
/// use std::sync::Arc;
/// use goondan_runtime::prelude::*;
/// use goondan_runtime::{ToolCatalog, ToolExecutor};
///
/// /// Adds two numbers.
/// #[tool(name = "calc")]
/// pub fn add(a: i64, b: i64) -> i64 { a + b }
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let registry = Arc::new(ToolRegistry::builder().tool(add::TOOL).build()?);
/// let executor = ToolExecutor::new(Arc::clone(&registry));
/// let catalog = ToolCatalog::build(&registry, ["calc"])?;
/// let ctx = ToolContext::builder(std::env::temp_dir()).build();
///
/// let call = ToolCall::new("c1", "calc__add", serde_json::json!({"a": 2, "b": 3}));
/// let result = executor.execute(call, &ctx, &catalog).await;
/// assert_eq!(result.output, Some(serde_json::json!(5)));
///
/// let call = ToolCall::new("c2", "calc__mul", serde_json::json!({}));
/// let result = executor.execute(call, &ctx, &catalog).await;
/// assert_eq!(result.error_code(), Some("E_TOOL_NOT_IN_CATALOG"));
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct ToolExecutor {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for ToolExecutor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolExecutor")
            .field("middlewares", &self.shared.chain.len())
            .field("policy", &self.shared.policy)
            .field("default_timeout", &self.shared.core.default_timeout)
            .finish_non_exhaustive()
    }
}

impl ToolExecutor {
    /// An executor with no middleware, the catalog-only policy and no default timeout.
    pub fn new(registry: Arc<ToolRegistry>) -> Self {
        Self::builder(registry).build()
    }

    /// Starts an executor.
    pub fn builder(registry: Arc<ToolRegistry>) -> ExecutorBuilder {
        ExecutorBuilder {
            registry,
            middlewares: MiddlewareList::default(),
            policy: CallPolicy::default(),
            default_timeout: None,
            max_content_bytes: crate::content::DEFAULT_MAX_CONTENT_BYTES,
            pending: None,
            help_url_base: None,
        }
    }

    /// The registry.
    pub fn registry(&self) -> &Arc<ToolRegistry> {
        &self.shared.registry
    }

    /// The submitted calls (RES-2).
    pub fn pending(&self) -> &PendingResults {
        &self.shared.core.pending
    }

    /// Runs `call` for the Step whose context is `ctx` and whose catalog is `catalog`.
    ///
    /// Never panics and never fails: whatever the model sent, the answer is a
    /// [`ToolCallResult`]. Must run inside a Tokio runtime (timeouts and pending work use it).
    pub async fn execute(
        &self,
        call: ToolCall,
        ctx: &ToolContext,
        catalog: &ToolCatalog,
    ) -> ToolCallResult {
        match self.begin(call, ctx, catalog) {
            Ready::Done(result) => result,
            Ready::Wait(waiting) => waiting.await,
        }
    }

    /// Everything up to the first wait, synchronously: a synchronous handler's call completes
    /// here, so `execute`'s future stays small and is polled once. A call through middleware
    /// is one boxed future from here to its result.
    fn begin(
        &self,
        call: ToolCall,
        step: &ToolContext,
        catalog: &ToolCatalog,
    ) -> Ready<ToolCallResult> {
        let ToolCall { id, name, args } = call;
        let ctx = step.for_call(&id, &name);
        let span = ctx.logger().clone();
        let prepared = span.in_scope(|| {
            emit_called(&ctx);
            self.prepare(&name, args, catalog)
        });
        let (limit, reply) = match prepared {
            Err((limit, err)) => (limit, Reply::Error(err)),
            Ok((entry, args)) => {
                let limit = entry.resource().error_message_limit();
                if !self.shared.chain.is_empty() {
                    return Ready::Wait(self.run_chain(
                        id,
                        name,
                        entry.into_owned(),
                        args,
                        ctx,
                        limit,
                    ));
                }
                let core = &self.shared.core;
                match span.in_scope(|| start_core(core, &entry, args, &ctx)) {
                    Ready::Done(reply) => (limit, reply),
                    Ready::Wait(fut) => {
                        let core = Arc::clone(core);
                        return Ready::Wait(Box::pin(async move {
                            let reply = fut.await;
                            finish(&core, id, name, limit, reply, &span, &ctx)
                        }));
                    }
                }
            }
        };
        Ready::Done(finish(
            &self.shared.core,
            id,
            name,
            limit,
            reply,
            &span,
            step,
        ))
    }

    /// Everything before middleware: the catalog gate, the registry lookup, the arguments'
    /// shape. A name in the catalog is valid and resolved: that is the common path. Anything
    /// else is explained in the order name, catalog, registry.
    fn prepare<'c>(
        &self,
        name: &str,
        args: Value,
        catalog: &'c ToolCatalog,
    ) -> Result<(Cow<'c, Arc<RegisteredExport>>, JsonObject), Refusal> {
        let entry = match catalog.lookup(name) {
            Lookup::Resolved(entry) => Cow::Borrowed(entry),
            lookup => {
                if let Err(err) = name::validate_tool_name(name) {
                    let err = invalid_name(name, &err, catalog);
                    return Err((DEFAULT_ERROR_MESSAGE_LIMIT, err));
                }
                let entry = self.shared.registry.get(name);
                let limit = entry.as_ref().map_or(DEFAULT_ERROR_MESSAGE_LIMIT, |e| {
                    e.resource().error_message_limit()
                });
                let listed = matches!(lookup, Lookup::Listed);
                if !listed && self.shared.policy == CallPolicy::CatalogOnly {
                    return Err((limit, not_in_catalog(name, catalog)));
                }
                Cow::Owned(entry.ok_or_else(|| (limit, not_found(name, catalog)))?)
            }
        };
        match args {
            Value::Object(map) => Ok((entry, map)),
            Value::Null => Ok((entry, JsonObject::new())),
            other => {
                let limit = entry.resource().error_message_limit();
                let err = args_not_object(&other, entry.export().parameters());
                Err((limit, err))
            }
        }
    }

    /// The `toolCall` middleware chain around the core (MW-1), as one future. The call's name
    /// and id move into the chain; the result keeps them unless a middleware changed them, in
    /// which case the originals are put back (a middleware cannot retarget a call).
    fn run_chain(
        &self,
        id: String,
        name: String,
        entry: Arc<RegisteredExport>,
        args: JsonObject,
        ctx: ToolContext,
        limit: usize,
    ) -> Pin<Box<dyn Future<Output = ToolCallResult> + Send>> {
        let span = ctx.logger().clone();
        let call_ctx = ctx.clone();
        let core = Arc::clone(&self.shared.core);
        let chain = Next::new(
            Arc::clone(&self.shared.chain),
            Arc::clone(&core) as Arc<dyn Core>,
        );
        let call = ToolCallContext::new(name, id, args, ctx, Arc::clone(&entry));
        // A middleware that panics, before or after `next`, answers like a panicking handler
        // (RES-3): the chain's synchronous start is caught here, the rest below.
        let started =
            span.in_scope(|| std::panic::catch_unwind(AssertUnwindSafe(|| chain.run(call))));
        Box::pin(async move {
            let run = async move {
                match started {
                    Ok(fut) => AssertUnwindSafe(fut).catch_unwind().await,
                    Err(panic) => Err(panic),
                }
            };
            let result = match run.instrument(span.clone()).await {
                Ok(mut r) => {
                    if r.tool_call_id != call_ctx.tool_call_id() {
                        call_ctx.tool_call_id().clone_into(&mut r.tool_call_id);
                    }
                    if r.tool_name != entry.name().as_str() {
                        entry.name().as_str().clone_into(&mut r.tool_name);
                    }
                    if let Some(err) = r.error.take() {
                        r.error = Some(err.finish(limit, &core.help_url_base()));
                    }
                    r
                }
                Err(panic) => {
                    let err = middleware_panic_error(&*panic).finish(limit, &core.help_url_base());
                    ToolCallResult::error(call_ctx.tool_call_id(), entry.name().as_str(), err)
                }
            };
            span.in_scope(|| emit_finished(&result, None, || call_ctx.trace_id()));
            result
        })
    }
}

/// The call's result, with the `finished` event in the call's span.
fn finish(
    core: &CallCore,
    id: String,
    name: String,
    limit: usize,
    reply: Reply,
    span: &tracing::Span,
    ctx: &ToolContext,
) -> ToolCallResult {
    let result = reply.into_result(id, name, limit, core);
    span.in_scope(|| emit_finished(&result, None, || ctx.trace_id()));
    result
}

/// A call refused before its handler: the error message limit that applies, and the error.
type Refusal = (usize, ToolError);

/// What the core produced, before the call's id and name are attached.
enum Reply {
    Output(Value),
    Rich(Box<crate::content::ToolReturn>),
    Pending(String),
    Error(ToolError),
}

impl Reply {
    /// The result for the model: the call's own id and name (a middleware cannot retarget a
    /// call), the error cut to the resource's limit and given a help URL (RES-4, RES-7).
    fn into_result(
        self,
        id: String,
        name: String,
        limit: usize,
        core: &CallCore,
    ) -> ToolCallResult {
        match self {
            Reply::Output(v) => ToolCallResult::ok(id, name, v),
            Reply::Rich(r) => {
                let r = *r;
                ToolCallResult::ok(id, name, r.output).with_content(r.content)
            }
            Reply::Pending(h) => ToolCallResult::pending(id, name, h),
            Reply::Error(e) => {
                ToolCallResult::error(id, name, e.finish(limit, &core.help_url_base()))
            }
        }
    }
}

/// Builds a [`ToolExecutor`].
#[must_use]
pub struct ExecutorBuilder {
    registry: Arc<ToolRegistry>,
    middlewares: MiddlewareList,
    policy: CallPolicy,
    default_timeout: Option<Duration>,
    max_content_bytes: usize,
    pending: Option<PendingResults>,
    help_url_base: Option<Arc<str>>,
}

impl ExecutorBuilder {
    /// Adds a `toolCall` middleware with priority 0. Lower priorities run first (outermost);
    /// equal priorities run in registration order (MW-3).
    pub fn middleware(self, mw: impl Middleware) -> Self {
        self.middleware_with_priority(0, mw)
    }

    /// Adds a middleware with a priority.
    pub fn middleware_with_priority(mut self, priority: i32, mw: impl Middleware) -> Self {
        self.middlewares.push(priority, Arc::new(mw));
        self
    }

    /// Adds a shared middleware.
    pub fn middleware_arc(mut self, priority: i32, mw: Arc<dyn Middleware>) -> Self {
        self.middlewares.push(priority, mw);
        self
    }

    /// Sets which calls are allowed (PERM-3).
    pub fn policy(mut self, policy: CallPolicy) -> Self {
        self.policy = policy;
        self
    }

    /// Sets the timeout of exports that set none.
    pub fn default_timeout(mut self, timeout: Duration) -> Self {
        self.default_timeout = Some(timeout);
        self
    }

    /// How many bytes of content parts (images, audio, resources) one result may carry;
    /// a larger result is refused as `E_TOOL_CONTENT_TOO_LARGE`. Default
    /// [`DEFAULT_MAX_CONTENT_BYTES`](crate::content::DEFAULT_MAX_CONTENT_BYTES) (16 MiB).
    pub fn max_content_bytes(mut self, max: usize) -> Self {
        self.max_content_bytes = max;
        self
    }

    /// Shares pending results with other executors.
    pub fn pending_results(mut self, pending: PendingResults) -> Self {
        self.pending = Some(pending);
        self
    }

    /// Sets where this executor's errors with runtime codes point (RES-7): the address of
    /// `docs/errors.md` (or the host's copy of it), without the `#`. Their `helpUrl` becomes
    /// `{base}#{code in lower case}`. Default: the process-wide base
    /// ([`help_url::help_url_base`]).
    pub fn help_url_base(mut self, base: impl Into<String>) -> Self {
        self.help_url_base = Some(Arc::from(base.into()));
        self
    }

    /// Finishes the executor.
    pub fn build(self) -> ToolExecutor {
        ToolExecutor {
            shared: Arc::new(Shared {
                registry: self.registry,
                chain: self.middlewares.to_chain(),
                policy: self.policy,
                core: Arc::new(CallCore {
                    default_timeout: self.default_timeout,
                    max_content_bytes: self.max_content_bytes,
                    pending: self.pending.unwrap_or_default(),
                    help_url_base: self.help_url_base,
                }),
            }),
        }
    }
}

impl Core for CallCore {
    fn run(self: Arc<Self>, call: ToolCallContext) -> MiddlewareFuture {
        let (name, id, args, ctx, entry) = call.into_parts();
        let limit = entry.resource().error_message_limit();
        match start_core(&self, &entry, args, &ctx) {
            Ready::Done(reply) => Box::pin(std::future::ready(
                reply.into_result(id, name, limit, &self),
            )),
            Ready::Wait(fut) => {
                Box::pin(async move { fut.await.into_result(id, name, limit, &self) })
            }
        }
    }
}

/// Work answered at once (validation failed, a synchronous handler, a refusal) or a future to
/// wait for (an asynchronous handler, a middleware chain): what `execute` has after its
/// synchronous part, and how the core starts. Only the latter is boxed, so the common path of
/// a synchronous handler never builds a large state machine.
enum Ready<T> {
    Done(T),
    Wait(Pin<Box<dyn Future<Output = T> + Send>>),
}

/// Validation and the handler, with panics caught, a timeout and cancellation.
fn start_core(
    core: &Arc<CallCore>,
    entry: &Arc<RegisteredExport>,
    args: JsonObject,
    ctx: &ToolContext,
) -> Ready<Reply> {
    let export = entry.export();
    let handler = export.handler();
    // Every call, typed handler or not, is checked against exactly the schema the model sees
    // (serde alone would drop unknown keys and ignore ranges, lengths and patterns).
    let mut value = Value::Object(args);
    if let Err(problems) = export.validator().check(&mut value) {
        return Ready::Done(Reply::Error(invalid_args(problems, export.parameters())));
    }
    let args = match value {
        Value::Object(map) => map,
        _ => JsonObject::new(),
    };
    if ctx.is_cancelled() {
        return Ready::Done(Reply::Error(cancelled()));
    }
    let timeout = export.timeout().or(core.default_timeout);
    if handler.blocks()
        && let Some(limit) = timeout
    {
        let run = run_blocking(
            Arc::clone(core),
            Arc::clone(entry),
            args,
            ctx.clone(),
            limit,
        );
        return Ready::Wait(Box::pin(run));
    }
    let started = {
        let _entered = ctx.logger().enter();
        std::panic::catch_unwind(AssertUnwindSafe(|| handler.call(ctx, args)))
    };
    match started {
        Err(panic) => Ready::Done(Reply::Error(panic_error(&*panic))),
        Ok(HandlerCall::Ready(outcome)) => Ready::Done(conclude(core, entry, ctx, Ok(outcome))),
        Ok(HandlerCall::Running(fut)) => {
            let core = Arc::clone(core);
            let entry = Arc::clone(entry);
            let ctx = ctx.clone();
            Ready::Wait(Box::pin(async move {
                // The deadline starts before the first poll: that poll is inside the timeout.
                let deadline = timeout.map(|limit| (tokio::time::Instant::now() + limit, limit));
                let mut fut = AssertUnwindSafe(fut).catch_unwind();
                // Most handlers finish on their first poll; only the others pay for a timer.
                let first = std::future::poll_fn(|cx| {
                    let _entered = ctx.logger().enter();
                    Poll::Ready(fut.poll_unpin(cx))
                });
                let outcome = match first.await {
                    Poll::Ready(outcome) => outcome,
                    Poll::Pending => {
                        let rest = wait_longer(fut, deadline, ctx.cancellation().clone());
                        match rest.instrument(ctx.logger().clone()).await {
                            Ok(outcome) => outcome,
                            Err(stop) => return Reply::Error(stop),
                        }
                    }
                };
                conclude(&core, &entry, &ctx, outcome)
            }))
        }
    }
}

/// A handler that blocks its thread (a synchronous export) under a timeout: it runs on Tokio's
/// blocking pool, so the timeout fires on time and the runtime keeps serving other calls. The
/// thread itself cannot be stopped; it finishes in the background and its answer is dropped.
async fn run_blocking(
    core: Arc<CallCore>,
    entry: Arc<RegisteredExport>,
    args: JsonObject,
    ctx: ToolContext,
    limit: Duration,
) -> Reply {
    let deadline = tokio::time::Instant::now() + limit;
    let handler = Arc::clone(entry.export().handler());
    let call_ctx = ctx.clone();
    let task = tokio::task::spawn_blocking(move || {
        let _entered = call_ctx.logger().enter();
        std::panic::catch_unwind(AssertUnwindSafe(|| handler.call(&call_ctx, args)))
    });
    let joined = tokio::select! {
        joined = task => joined,
        () = tokio::time::sleep_until(deadline) => return Reply::Error(timed_out(limit)),
        () = ctx.cancellation().cancelled() => return Reply::Error(cancelled()),
    };
    let outcome = match joined {
        Ok(Ok(HandlerCall::Ready(outcome))) => Ok(outcome),
        Ok(Ok(HandlerCall::Running(fut))) => {
            let fut = AssertUnwindSafe(fut).catch_unwind();
            let rest = wait_longer(fut, Some((deadline, limit)), ctx.cancellation().clone());
            match rest.instrument(ctx.logger().clone()).await {
                Ok(outcome) => outcome,
                Err(stop) => return Reply::Error(stop),
            }
        }
        Ok(Err(panic)) => Err(panic),
        Err(join) => match join.try_into_panic() {
            Ok(panic) => Err(panic),
            Err(_) => return Reply::Error(cancelled()),
        },
    };
    conclude(&core, &entry, &ctx, outcome)
}

/// The reply for what the handler produced.
fn conclude(
    core: &CallCore,
    entry: &RegisteredExport,
    ctx: &ToolContext,
    outcome: CaughtOutcome,
) -> Reply {
    let export = entry.export();
    match outcome {
        Err(panic) => Reply::Error(panic_error(&*panic)),
        Ok(Ok(Outcome::Output(output))) => Reply::Output(output),
        Ok(Ok(Outcome::Rich(rich))) => {
            let bytes: usize = rich
                .content
                .iter()
                .map(crate::content::Content::byte_len)
                .sum();
            if bytes > core.max_content_bytes {
                Reply::Error(crate::refusal::content_too_large(
                    bytes,
                    core.max_content_bytes,
                ))
            } else {
                Reply::Rich(rich)
            }
        }
        Ok(Ok(Outcome::Pending(pending))) => {
            let limit = entry.resource().error_message_limit();
            let help = (core.help_url_base(), entry.resource().help_url_base());
            Reply::Pending(
                core.pending
                    .submit(pending, ctx, entry.name().as_str(), limit, help),
            )
        }
        Ok(Err(HandlerError::Failed(err))) => {
            Reply::Error(err.with_resource_help(entry.resource().help_url_base()))
        }
        Ok(Err(HandlerError::InvalidArgs { reason })) => {
            let problems = vec![ArgProblem {
                path: String::new(),
                message: reason,
            }];
            Reply::Error(invalid_args(problems, export.parameters()))
        }
    }
}

type CaughtOutcome = Result<Result<Outcome, HandlerError>, Box<dyn Any + Send>>;

/// The slow path of a handler that did not finish on its first poll: wait for it, for the
/// timeout, or for cancellation. Boxed by the caller so the common path's future stays small.
async fn wait_longer<F>(
    fut: F,
    deadline: Option<(tokio::time::Instant, Duration)>,
    cancel: tokio_util::sync::CancellationToken,
) -> Result<CaughtOutcome, ToolError>
where
    F: Future<Output = CaughtOutcome> + Unpin,
{
    match deadline {
        Some((at, limit)) => tokio::select! {
            r = fut => Ok(r),
            () = tokio::time::sleep_until(at) => Err(timed_out(limit)),
            () = cancel.cancelled() => Err(cancelled()),
        },
        None => tokio::select! {
            r = fut => Ok(r),
            () = cancel.cancelled() => Err(cancelled()),
        },
    }
}
