//! [`ToolExecutor`]: runs one model tool call under the Goondan rules and always answers with a
//! [`ToolCallResult`] (RES-3).
//!
//! One route for every call: name check, catalog gate (PERM-1..4), registry lookup, the
//! `toolCall` middleware chain (MW-1), then the core:
//! argument validation and the handler under one guard (panics caught, timeout,
//! cancellation). The result is finished in one place, which the pending store and the MCP
//! server use too: the error cut to the resource's limit (RES-4) and given its help URL
//! (RES-7), and the call's event.

use std::any::Any;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Duration;

use futures_util::FutureExt;
use serde_json::Value;
use tracing::Instrument;

use crate::calls::events::emit_called;
use crate::calls::finish::{Announce, Rules, finish};
use crate::calls::guardrail::{self, Guardrails};
use crate::calls::middleware::{BoxFuture, CallContext, Core, Middleware, MiddlewareList, Next};
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

use self::core::CallCore;

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
    /// [`ToolCallResult`]. Must run inside a Tokio runtime (timeouts, synchronous handlers and
    /// pending work use it).
    pub async fn execute(
        &self,
        call: ToolCall,
        step: &ToolContext,
        catalog: &ToolCatalog,
    ) -> ToolCallResult {
        let ToolCall { id, name, args } = call;
        let ctx = step.for_call(&id, &name);
        let span = ctx.logger().clone();
        let (limit, started) =
            span.in_scope(|| self.start(id.clone(), name.clone(), args, ctx, catalog));
        // A middleware that panics, before or after `next`, answers like a panicking handler
        // (RES-3): what the chain does at once is caught in `start`, the rest as it is awaited.
        let ran = match started {
            Ok(running) => {
                let running = AssertUnwindSafe(running).catch_unwind();
                running.instrument(span.clone()).await
            }
            Err(panic) => Err(panic),
        };
        let mut result = answer(id, name, ran);
        let rules = Rules {
            limit,
            help_base: self.shared.core.help_url_base.as_deref(),
        };
        // The Step's context has the call's trace.
        span.in_scope(|| finish(&mut result, rules, Announce::Call(step)));
        result
    }

    /// The call up to its chain, in the call's span: announced, checked against the catalog,
    /// and handed to the middleware chain, which does at once what comes before its first
    /// wait. Answers with the error message limit that applies (RES-4) and the call's future
    /// (a refusal's is ready), or the chain's panic.
    fn start(
        &self,
        id: ArcStr,
        name: ArcStr,
        args: Value,
        ctx: ToolContext,
        catalog: &ToolCatalog,
    ) -> (
        usize,
        std::thread::Result<BoxFuture<'static, ToolCallResult>>,
    ) {
        emit_called(&ctx);
        let (entry, shown, args) = match self.prepare(&name, args, catalog) {
            Ok(prepared) => prepared,
            Err((limit, err)) => {
                let refused = ToolCallResult::error(id, name, err);
                return (limit, Ok(Box::pin(std::future::ready(refused))));
            }
        };
        let limit = entry.resource().error_message_limit();
        let call = CallContext::new(name, id, args, ctx, entry, shown.cloned());
        let next = Next::new(
            Arc::clone(&self.shared.chain),
            Arc::clone(&self.shared.core) as Arc<dyn Core>,
        );
        (
            limit,
            std::panic::catch_unwind(AssertUnwindSafe(|| next.run(call))),
        )
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
            Lookup::Resolved(entry, shown) => (Arc::clone(entry), shown),
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
                (entry, shown)
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
    Arc<RegisteredExport>,
    Option<&'c ShownParameters>,
    JsonObject,
);

/// The chain's answer, or its panic's. A middleware cannot retarget a call: the result keeps
/// the call's id and name.
fn answer(
    id: ArcStr,
    name: ArcStr,
    ran: Result<ToolCallResult, Box<dyn Any + Send>>,
) -> ToolCallResult {
    match ran {
        Ok(mut result) => {
            result.tool_call_id = id;
            result.tool_name = name;
            result
        }
        Err(panic) => ToolCallResult::error(id, name, middleware_panic_error(&*panic)),
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
    pub fn middleware_with_priority(self, priority: i32, mw: impl Middleware) -> Self {
        self.middleware_arc(priority, Arc::new(mw))
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
