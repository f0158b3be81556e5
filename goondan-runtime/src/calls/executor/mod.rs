//! [`ToolExecutor`]: runs one model tool call under the Goondan rules and always answers with a
//! [`ToolCallResult`] (RES-3).
//!
//! One route for every call: name check, catalog gate (PERM-1..4), registry lookup, the
//! `toolCall` middleware chain (MW-1; an empty chain is the core itself), then the core:
//! argument validation and the handler under one guard (panics caught, timeout,
//! cancellation). The result is finished in one place, which the pending store and the MCP
//! server use too: the error cut to the resource's limit (RES-4) and given its help URL
//! (RES-7), and the call's event.

use std::any::Any;
use std::borrow::Cow;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use pin_project_lite::pin_project;
use serde_json::Value;

use crate::calls::events::emit_called;
use crate::calls::finish::{Announce, Rules, finish};
use crate::calls::guardrail::{self, Guardrails};
use crate::calls::middleware::{
    self, BoxFuture, CallContext, Core, Middleware, MiddlewareList, Next,
};
use crate::calls::pending::PendingResults;
use crate::calls::refusal::{
    args_not_object, invalid_name, middleware_panic_error, not_found, not_in_catalog,
};
use crate::tools::catalog::{Lookup, ShownParameters, ToolCatalog};
use crate::tools::context::ToolContext;
use crate::tools::error::{DEFAULT_ERROR_MESSAGE_LIMIT, ToolError};
use crate::tools::name;
use crate::tools::registry::{RegisteredExport, ToolRegistry};
use crate::tools::result::JsonObject;
use crate::tools::result::{ArcStr, ToolCall, ToolCallResult};

mod core;
mod guard;

use self::core::{CallCore, Started};
use self::guard::Waiting;

pub use crate::calls::refusal::MAX_LISTED_PROBLEMS;

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
            max_content_bytes: crate::tools::content::DEFAULT_MAX_CONTENT_BYTES,
            pending: None,
            help_url_base: None,
            guardrails: Guardrails::new(),
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
    ///
    /// The returned future does nothing until it is first polled. A call that does not wait
    /// (a synchronous handler, a refusal) is answered on that poll without making any state
    /// of its own; a call that waits keeps its handler's guard inside this future (no box of
    /// the executor's when there is no middleware).
    pub fn execute<'c>(
        &'c self,
        call: ToolCall,
        ctx: &'c ToolContext,
        catalog: &'c ToolCatalog,
    ) -> impl Future<Output = ToolCallResult> + Send + 'c {
        // The executor's own future, handed back as it is (not awaited inside an `async fn`,
        // whose state would hold the arguments beside it): the call's state is made in place
        // on the first poll.
        Execute {
            executor: self,
            step: ctx,
            catalog,
            state: Begun::Start { call: Some(call) },
        }
    }

    /// Everything up to the first wait, synchronously: a synchronous handler answers here, so
    /// `execute`'s future stays small and needs no box and no timer.
    fn begin<'c>(
        &'c self,
        call: ToolCall,
        step: &'c ToolContext,
        catalog: &'c ToolCatalog,
    ) -> Begin<'c> {
        let ToolCall { id, name, args } = call;
        let ctx = step.for_call(&id, &name);
        let span = ctx.logger().clone();
        let prepared = span.in_scope(|| {
            emit_called(&ctx);
            self.prepare(&name, args, catalog)
        });
        let (entry, shown, args) = match prepared {
            Ok(prepared) => prepared,
            Err((limit, err)) => {
                let mut result = ToolCallResult::error(id, name, err);
                self.finish(&mut result, limit, &span, step);
                return Begin::Done(result);
            }
        };
        let called = Called {
            id: id.clone(),
            name: name.clone(),
            span,
            entry,
        };
        let core = &self.shared.core;
        let chain = &self.shared.chain;
        // A middleware that panics, before or after `next`, answers like a panicking handler
        // (RES-3): the chain's synchronous start is caught here, the rest as it is polled.
        let started = called.span.in_scope(|| {
            std::panic::catch_unwind(AssertUnwindSafe(|| {
                if chain.is_empty() {
                    // An empty chain is the core: no call context for middleware and no
                    // `Next` to hand it over (the saving is in `docs/benchmarks.md`).
                    // `mw_1_pass_through_fast_path_answers_like_the_boxed_path_and_like_no_middleware`
                    // checks that both answer alike.
                    return match core.call(&called.entry, shown, ctx, id, name, args) {
                        Started::Done(result) => Entered::Done(result),
                        Started::Waiting(waiting, id, name) => Entered::Handler(waiting, id, name),
                    };
                }
                let next = Next::new(Arc::clone(chain), Arc::clone(core) as Arc<dyn Core>);
                match next.start(CallContext::new(
                    name,
                    id,
                    args,
                    ctx,
                    Arc::clone(&called.entry),
                    shown.cloned(),
                )) {
                    middleware::Ready::Done(result) => Entered::Done(result),
                    middleware::Ready::Wait(running) => Entered::Chain(running),
                }
            }))
        });
        let mut result = match started {
            Ok(Entered::Handler(waiting, id, name)) => {
                return Begin::Waiting(Begun::Handler {
                    waiting,
                    called,
                    id,
                    name,
                });
            }
            Ok(Entered::Chain(running)) => {
                return Begin::Waiting(Begun::Chain { running, called });
            }
            // The core answers with the call's own id and name.
            Ok(Entered::Done(result)) if chain.is_empty() => result,
            Ok(Entered::Done(result)) => called.answer(Ok(result)),
            Err(panic) => called.answer(Err(panic)),
        };
        self.finish(&mut result, called.limit(), &called.span, step);
        Begin::Done(result)
    }

    /// Finishes the call's result and announces it in the call's span. The Step's context has
    /// the call's trace.
    fn finish(
        &self,
        result: &mut ToolCallResult,
        limit: usize,
        span: &tracing::Span,
        step: &ToolContext,
    ) {
        let rules = Rules {
            limit,
            help_base: self.shared.core.help_url_base.as_deref(),
        };
        span.in_scope(|| finish(result, rules, Announce::Call(step)));
    }

    /// Everything before middleware: the catalog gate, the registry lookup, the arguments'
    /// shape. A name in the catalog is valid and resolved: that is the common path. Anything
    /// else is explained in the order name, catalog, registry.
    fn prepare<'c>(
        &self,
        name: &str,
        args: Value,
        catalog: &'c ToolCatalog,
    ) -> Result<Prepared<'c>, Refusal> {
        let (entry, shown) = match catalog.lookup(name) {
            Lookup::Resolved(entry, shown) => (Cow::Borrowed(entry), shown),
            lookup => {
                if let Err(err) = name::validate_tool_name(name) {
                    let err = invalid_name(name, &err, catalog);
                    return Err((DEFAULT_ERROR_MESSAGE_LIMIT, err));
                }
                let entry = self.shared.registry.get(name);
                let limit = entry.as_ref().map_or(DEFAULT_ERROR_MESSAGE_LIMIT, |e| {
                    e.resource().error_message_limit()
                });
                let shown = match lookup {
                    Lookup::Listed(shown) => shown,
                    _ if self.shared.policy == CallPolicy::CatalogOnly => {
                        return Err((limit, not_in_catalog(name, catalog)));
                    }
                    _ => None,
                };
                let entry = entry.ok_or_else(|| (limit, not_found(name, catalog)))?;
                (Cow::Owned(entry), shown)
            }
        };
        match args {
            Value::Object(map) => Ok((entry, shown, map)),
            Value::Null => Ok((entry, shown, JsonObject::new())),
            other => {
                let limit = entry.resource().error_message_limit();
                let err = args_not_object(&other, entry.export().parameters());
                Err((limit, err))
            }
        }
    }
}

/// A call refused before its handler: the error message limit that applies, and the error.
type Refusal = (usize, ToolError);

/// A call ready for the chain: the called export, the parameter schema the Step showed in
/// place of its own (if it did), and the arguments.
type Prepared<'c> = (
    Cow<'c, Arc<RegisteredExport>>,
    Option<&'c ShownParameters>,
    JsonObject,
);

pin_project! {
    /// A call of [`ToolExecutor::execute`]: the call, until the first poll begins it, then
    /// what it waits for, in the same place.
    struct Execute<'c> {
        executor: &'c ToolExecutor,
        step: &'c ToolContext,
        catalog: &'c ToolCatalog,
        #[pin]
        state: Begun<'c>,
    }
}

impl Future for Execute<'_> {
    type Output = ToolCallResult;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<ToolCallResult> {
        let mut this = self.project();
        let (executor, step) = (*this.executor, *this.step);
        let BegunProj::Start { call } = this.state.as_mut().project() else {
            return this.state.poll_with(executor, step, cx);
        };
        let Some(call) = call.take() else {
            panic!("a call's future polled after it answered");
        };
        match executor.begin(call, step, this.catalog) {
            Begin::Done(result) => Poll::Ready(result),
            Begin::Waiting(begun) => {
                this.state.set(begun);
                this.state.poll_with(executor, step, cx)
            }
        }
    }
}

/// How far `begin` got: the finished result, or what is left to wait for.
enum Begin<'c> {
    Done(ToolCallResult),
    Waiting(Begun<'c>),
}

pin_project! {
    /// A call not yet begun (taken by `Execute`'s first poll), or still running: its
    /// handler (no middleware: awaited in place, the core and the export borrowed; the id and
    /// name the core handed back, for its result), or the chain. Polled by `Execute`, which
    /// lends it the executor and the Step's context.
    #[project = BegunProj]
    enum Begun<'c> {
        Start { call: Option<ToolCall> },
        Handler { #[pin] waiting: Waiting, called: Called<'c>, id: ArcStr, name: ArcStr },
        Chain { running: BoxFuture<'static, ToolCallResult>, called: Called<'c> },
    }
}

impl Begun<'_> {
    /// Once begun, polls the call: its answer, finished.
    fn poll_with(
        self: Pin<&mut Self>,
        executor: &ToolExecutor,
        step: &ToolContext,
        cx: &mut Context<'_>,
    ) -> Poll<ToolCallResult> {
        // A panic while the call runs (a middleware's, or the result's making) answers like a
        // panicking handler (RES-3); the handler's own is caught by its guard.
        let (ran, called) = match self.project() {
            BegunProj::Start { .. } => panic!("a call polled before `Execute` began it"),
            BegunProj::Handler {
                waiting,
                called,
                id,
                name,
            } => {
                let core = &executor.shared.core;
                // The span is entered once, here, for the guard and the result's making.
                let ran = called.span.in_scope(|| {
                    std::panic::catch_unwind(AssertUnwindSafe(|| {
                        core.poll_waiting(&called.entry, waiting, id, name, cx, false)
                    }))
                });
                (ran, called)
            }
            BegunProj::Chain { running, called } => {
                let ran = called.span.in_scope(|| {
                    std::panic::catch_unwind(AssertUnwindSafe(|| running.as_mut().poll(cx)))
                });
                (ran, called)
            }
        };
        match ran {
            Ok(Poll::Pending) => Poll::Pending,
            Ok(Poll::Ready(result)) => Poll::Ready(called.settle(Ok(result), executor, step)),
            Err(panic) => Poll::Ready(called.settle(Err(panic), executor, step)),
        }
    }
}

/// What the chain (or the core, with no middleware) answered at once, or left running.
enum Entered {
    Done(ToolCallResult),
    /// The handler's guard, and the call's id and name the core handed back.
    Handler(Waiting, ArcStr, ArcStr),
    Chain(BoxFuture<'static, ToolCallResult>),
}

/// What the executor keeps of a call still running, to finish its answer.
struct Called<'c> {
    /// The call's id.
    id: ArcStr,
    /// The name the model called: the entry's, or the one a toolset gave it.
    name: ArcStr,
    /// The call's span.
    span: tracing::Span,
    /// The called export.
    entry: Cow<'c, Arc<RegisteredExport>>,
}

impl Called<'_> {
    /// The called export's error message limit (RES-4).
    fn limit(&self) -> usize {
        self.entry.resource().error_message_limit()
    }

    /// Finishes the call's answer, or its panic's.
    fn settle(
        &self,
        ran: Result<ToolCallResult, Box<dyn Any + Send>>,
        executor: &ToolExecutor,
        step: &ToolContext,
    ) -> ToolCallResult {
        let mut result = self.answer(ran);
        executor.finish(&mut result, self.limit(), &self.span, step);
        result
    }

    /// The chain's answer, or its panic's. A middleware cannot retarget a call: the result
    /// keeps the call's id and name.
    fn answer(&self, ran: Result<ToolCallResult, Box<dyn Any + Send>>) -> ToolCallResult {
        let name = &self.name;
        match ran {
            Ok(mut r) => {
                if r.tool_call_id != self.id {
                    r.tool_call_id = self.id.clone();
                }
                if r.tool_name != *name {
                    r.tool_name = name.clone();
                }
                r
            }
            Err(panic) => ToolCallResult::error(
                self.id.clone(),
                name.clone(),
                middleware_panic_error(&*panic),
            ),
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
    guardrails: Guardrails,
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

    /// Adds [guardrails](crate::calls::guardrail): their middleware, outermost
    /// ([`PRIORITY`](crate::calls::guardrail::PRIORITY)), and their output checks on the
    /// completion of every submitted call too.
    pub fn guardrails(mut self, guardrails: Guardrails) -> Self {
        self.guardrails = self.guardrails.extend(guardrails);
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
    /// [`DEFAULT_MAX_CONTENT_BYTES`](crate::tools::content::DEFAULT_MAX_CONTENT_BYTES) (16 MiB).
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
    /// ([`help_url_base`](crate::tools::help_url::help_url_base)).
    pub fn help_url_base(mut self, base: impl Into<String>) -> Self {
        self.help_url_base = Some(Arc::from(base.into()));
        self
    }

    /// Finishes the executor.
    pub fn build(mut self) -> ToolExecutor {
        let completions = self
            .guardrails
            .checks_outputs()
            .then(|| Arc::new(self.guardrails.clone()));
        if !self.guardrails.is_empty() {
            let guardrails = std::mem::take(&mut self.guardrails);
            self.middlewares
                .push(guardrail::PRIORITY, Arc::new(guardrails));
        }
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
                    completion_guardrails: completions,
                }),
            }),
        }
    }
}
