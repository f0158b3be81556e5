//! [`ToolExecutor`]: runs one model tool call under the Goondan rules and always answers with a
//! [`ToolCallResult`] (RES-3).
//!
//! Order: name check, catalog gate (PERM-1..4), registry lookup, `toolCall` middleware (MW-1),
//! argument validation, the handler (panics caught, timeout, cancellation), then the error
//! message cut to the resource's limit (RES-4).

use std::any::Any;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;

use futures_util::FutureExt;
use serde_json::Value;
use tracing::Instrument;

use crate::JsonObject;
use crate::catalog::ToolCatalog;
use crate::context::ToolContext;
use crate::error::{DEFAULT_ERROR_MESSAGE_LIMIT, ToolError, codes};
use crate::handler::{HandlerError, Outcome};
use crate::middleware::{
    Core, Middleware, MiddlewareFuture, MiddlewareList, Next, ToolCallContext,
};
use crate::name::{self, split_tool_name};
use crate::pending::PendingResults;
use crate::registry::{RegisteredExport, ToolRegistry};
use crate::result::{ToolCall, ToolCallResult};
use crate::schema::{ArgProblem, keys_of};

/// How many argument problems an `E_TOOL_INVALID_ARGS` message lists before counting the rest.
pub const MAX_LISTED_PROBLEMS: usize = 5;

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
    default_timeout: Option<Duration>,
    pending: PendingResults,
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
            .field("default_timeout", &self.shared.default_timeout)
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
            pending: None,
        }
    }

    /// The registry.
    pub fn registry(&self) -> &Arc<ToolRegistry> {
        &self.shared.registry
    }

    /// The submitted calls (RES-2).
    pub fn pending(&self) -> &PendingResults {
        &self.shared.pending
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
        let ToolCall { id, name, args } = call;
        let trace_id = ctx.trace_id();
        let ctx = ctx.for_call(&id, &name);
        let span = ctx.logger().clone();
        async move {
            emit_called(&ctx);
            let (limit, result) = self.dispatch(&id, &name, args, ctx, catalog).await;
            let result = finish(result, &id, &name, limit);
            emit_finished(&result, None, trace_id);
            result
        }
        .instrument(span)
        .await
    }

    async fn dispatch(
        &self,
        id: &str,
        name: &str,
        args: Value,
        ctx: ToolContext,
        catalog: &ToolCatalog,
    ) -> (usize, ToolCallResult) {
        let fail = |limit, err| (limit, ToolCallResult::error(id, name, err));
        if let Err(err) = check_name(name) {
            return fail(DEFAULT_ERROR_MESSAGE_LIMIT, invalid_name(name, &err, catalog));
        }
        let entry = self.shared.registry.get(name);
        let limit = entry
            .as_ref()
            .map_or(DEFAULT_ERROR_MESSAGE_LIMIT, |e| e.resource().error_message_limit());
        if self.shared.policy == CallPolicy::CatalogOnly && !catalog.contains(name) {
            return fail(limit, not_in_catalog(name, catalog));
        }
        let Some(entry) = entry else {
            return fail(limit, not_found(name, catalog));
        };
        let args = match args {
            Value::Object(map) => map,
            Value::Null => JsonObject::new(),
            other => return fail(limit, args_not_object(&other, entry.export().parameters())),
        };
        let result = if self.shared.chain.is_empty() {
            run_core(&self.shared, &entry, args, ctx).await
        } else {
            let core = Arc::new(CoreCall {
                shared: Arc::clone(&self.shared),
                entry,
            });
            let call = ToolCallContext::new(name, id, args, ctx);
            Next::new(Arc::clone(&self.shared.chain), core).run(call).await
        };
        (limit, result)
    }
}

/// Builds a [`ToolExecutor`].
#[must_use]
pub struct ExecutorBuilder {
    registry: Arc<ToolRegistry>,
    middlewares: MiddlewareList,
    policy: CallPolicy,
    default_timeout: Option<Duration>,
    pending: Option<PendingResults>,
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

    /// Shares pending results with other executors.
    pub fn pending_results(mut self, pending: PendingResults) -> Self {
        self.pending = Some(pending);
        self
    }

    /// Finishes the executor.
    pub fn build(self) -> ToolExecutor {
        ToolExecutor {
            shared: Arc::new(Shared {
                registry: self.registry,
                chain: self.middlewares.to_chain(),
                policy: self.policy,
                default_timeout: self.default_timeout,
                pending: self.pending.unwrap_or_default(),
            }),
        }
    }
}

struct CoreCall {
    shared: Arc<Shared>,
    entry: Arc<RegisteredExport>,
}

impl Core for CoreCall {
    fn run(&self, call: ToolCallContext) -> MiddlewareFuture<'static> {
        let shared = Arc::clone(&self.shared);
        let entry = Arc::clone(&self.entry);
        let (args, ctx) = call.into_parts();
        Box::pin(async move { run_core(&shared, &entry, args, ctx).await })
    }
}

/// Validation and the handler, with panics caught, a timeout and cancellation.
async fn run_core(
    shared: &Shared,
    entry: &RegisteredExport,
    args: JsonObject,
    ctx: ToolContext,
) -> ToolCallResult {
    let id = ctx.tool_call_id().to_owned();
    let name = entry.name().as_str();
    let export = entry.export();
    let handler = export.handler();
    if !handler.checks_args() {
        let as_value = Value::Object(args);
        let validator = export.validator();
        if !validator.is_valid(&as_value) {
            let problems = validator.problems(&as_value);
            return ToolCallResult::error(id, name, invalid_args(problems, export.parameters()));
        }
        let args = match as_value {
            Value::Object(map) => map,
            _ => JsonObject::new(),
        };
        return call_handler(shared, entry, args, ctx).await;
    }
    call_handler(shared, entry, args, ctx).await
}

async fn call_handler(
    shared: &Shared,
    entry: &RegisteredExport,
    args: JsonObject,
    ctx: ToolContext,
) -> ToolCallResult {
    let id = ctx.tool_call_id().to_owned();
    let name = entry.name().as_str();
    let export = entry.export();
    if ctx.is_cancelled() {
        return ToolCallResult::error(id, name, cancelled());
    }
    let started = std::panic::catch_unwind(AssertUnwindSafe(|| {
        export.handler().call(ctx.clone(), args)
    }));
    let fut = match started {
        Ok(fut) => fut,
        Err(panic) => return ToolCallResult::error(id, name, panic_error(&*panic)),
    };
    let mut fut = AssertUnwindSafe(fut).catch_unwind();
    // Most handlers finish on their first poll; only the others pay for a timer.
    let first = std::future::poll_fn(|cx| Poll::Ready(fut.poll_unpin(cx))).await;
    let outcome = match first {
        Poll::Ready(r) => r,
        Poll::Pending => {
            let timeout = export.timeout().or(shared.default_timeout);
            let cancel = ctx.cancellation().clone();
            match timeout {
                Some(limit) => tokio::select! {
                    r = &mut fut => r,
                    () = tokio::time::sleep(limit) => {
                        return ToolCallResult::error(id, name, timed_out(limit));
                    }
                    () = cancel.cancelled() => {
                        return ToolCallResult::error(id, name, cancelled());
                    }
                },
                None => tokio::select! {
                    r = &mut fut => r,
                    () = cancel.cancelled() => {
                        return ToolCallResult::error(id, name, cancelled());
                    }
                },
            }
        }
    };
    match outcome {
        Err(panic) => ToolCallResult::error(id, name, panic_error(&*panic)),
        Ok(Ok(Outcome::Output(output))) => ToolCallResult::ok(id, name, output),
        Ok(Ok(Outcome::Pending(pending))) => {
            let limit = entry.resource().error_message_limit();
            let handle = shared.pending.submit(pending, &ctx, name, limit);
            ToolCallResult::pending(id, name, handle)
        }
        Ok(Err(HandlerError::Failed(err))) => ToolCallResult::error(id, name, err),
        Ok(Err(HandlerError::InvalidArgs { reason, args })) => {
            let mut problems = export.validator().problems(&args);
            if problems.is_empty() {
                problems.push(ArgProblem {
                    path: String::new(),
                    message: reason,
                });
            }
            ToolCallResult::error(id, name, invalid_args(problems, export.parameters()))
        }
    }
}

/// Fixes the call's identity (a middleware cannot retarget a call) and prepares the error for
/// the model: cut to the resource's limit, with a help URL (RES-4, RES-7).
fn finish(mut result: ToolCallResult, id: &str, name: &str, limit: usize) -> ToolCallResult {
    if result.tool_call_id != id {
        id.clone_into(&mut result.tool_call_id);
    }
    if result.tool_name != name {
        name.clone_into(&mut result.tool_name);
    }
    if let Some(err) = result.error.take() {
        result.error = Some(err.finish(limit));
    }
    result
}

/// Checks the name's form without allocating (NAME-6).
fn check_name(name: &str) -> Result<(), name::NameError> {
    let Some((resource, export)) = split_tool_name(name) else {
        return Err(name::NameError::MissingSeparator {
            name: name.to_owned(),
        });
    };
    name::validate_resource_name(resource)?;
    name::validate_export_name(export)?;
    Ok(())
}

fn closest<'a>(name: &str, catalog: &'a ToolCatalog) -> Vec<&'a str> {
    let wanted_resource = split_tool_name(name).map_or(name, |(r, _)| r);
    let mut same: Vec<&str> = catalog
        .names()
        .filter(|n| split_tool_name(n).is_some_and(|(r, _)| r == wanted_resource))
        .collect();
    if same.is_empty() {
        same = catalog.names().collect();
    }
    same.truncate(10);
    same
}

fn list_or_none(names: &[&str]) -> String {
    if names.is_empty() {
        "the catalog is empty".to_owned()
    } else {
        format!("available tools include: {}", names.join(", "))
    }
}

fn invalid_name(name: &str, err: &name::NameError, catalog: &ToolCatalog) -> ToolError {
    ToolError::new(format!("invalid tool name `{name}`: {err}"))
        .with_code(codes::INVALID_NAME)
        .with_name("InvalidToolNameError")
        .with_suggestion(format!(
            "call a tool by its full `{{resource}}__{{export}}` name, exactly as listed; {}",
            list_or_none(&closest(name, catalog))
        ))
}

fn not_in_catalog(name: &str, catalog: &ToolCatalog) -> ToolError {
    ToolError::new(format!(
        "Tool '{name}' is not available in the current Tool Catalog."
    ))
    .with_code(codes::NOT_IN_CATALOG)
    .with_name("ToolNotInCatalogError")
    .with_suggestion(format!(
        "add the tool to the Agent's spec.tools or register it from a step middleware; {}",
        list_or_none(&closest(name, catalog))
    ))
}

fn not_found(name: &str, catalog: &ToolCatalog) -> ToolError {
    ToolError::new(format!(
        "Tool '{name}' is in the catalog but no registered handler executes it."
    ))
    .with_code(codes::NOT_FOUND)
    .with_name("ToolNotFoundError")
    .with_suggestion(format!(
        "register the tool before listing it in the catalog; {}",
        list_or_none(&closest(name, catalog))
    ))
}

fn json_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

fn args_not_object(args: &Value, schema: &Value) -> ToolError {
    invalid_args(
        vec![ArgProblem {
            path: String::new(),
            message: format!("the arguments must be a JSON object, not {}", json_type(args)),
        }],
        schema,
    )
}

fn invalid_args(problems: Vec<ArgProblem>, schema: &Value) -> ToolError {
    let total = problems.len();
    let mut message = format!(
        "invalid arguments ({total} problem{}):",
        if total == 1 { "" } else { "s" }
    );
    for p in problems.iter().take(MAX_LISTED_PROBLEMS) {
        let path = if p.path.is_empty() { "/" } else { &p.path };
        message.push_str(&format!("\n- at `{path}`: {}", p.message));
    }
    if total > MAX_LISTED_PROBLEMS {
        message.push_str(&format!("\n- and {} more", total - MAX_LISTED_PROBLEMS));
    }
    let (required, allowed) = keys_of(schema);
    let quote = |keys: &[String]| {
        if keys.is_empty() {
            "none".to_owned()
        } else {
            keys.iter().map(|k| format!("`{k}`")).collect::<Vec<_>>().join(", ")
        }
    };
    ToolError::new(message)
        .with_code(codes::INVALID_ARGS)
        .with_name("InvalidArgumentsError")
        .with_suggestion(format!(
            "send a JSON object matching the tool's parameters; required: {}; allowed: {}; \
             values are not converted (send 5, not \"5\")",
            quote(&required),
            quote(&allowed)
        ))
}

fn timed_out(limit: Duration) -> ToolError {
    ToolError::new(format!(
        "the tool did not finish within {} ms",
        limit.as_millis()
    ))
    .with_code(codes::TIMEOUT)
    .with_name("ToolTimeoutError")
    .with_suggestion("retry with a smaller request, or ask for the work to be split")
}

fn cancelled() -> ToolError {
    ToolError::new("the call was cancelled before it finished")
        .with_code(codes::CANCELLED)
        .with_name("ToolCancelledError")
        .with_suggestion("the turn was stopped; do not retry unless asked to")
}

/// The error of a panicking handler.
pub(crate) fn panic_error(payload: &(dyn Any + Send)) -> ToolError {
    let what = payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a non-text panic payload".to_owned());
    ToolError::new(format!("the tool panicked: {what}"))
        .with_code(codes::PANIC)
        .with_name("ToolPanicError")
        .with_suggestion("this is a bug in the tool; try different arguments or another tool")
}

fn emit_called(ctx: &ToolContext) {
    tracing::info!(
        name: "tool.called",
        target: "goondan::tool",
        trace_id = ctx.trace_id(),
        span_id = ctx.logger().id().map(|id| id.into_u64()),
        tool_call_id = ctx.tool_call_id(),
        "tool.called"
    );
}

/// Emits `tool.completed` or `tool.failed` (or `tool.submitted` for a pending result).
pub(crate) fn emit_finished(result: &ToolCallResult, handle: Option<&str>, trace_id: &str) {
    let span_id = tracing::Span::current().id().map(|id| id.into_u64());
    match &result.error {
        Some(err) => tracing::warn!(
            name: "tool.failed",
            target: "goondan::tool",
            trace_id,
            span_id,
            tool = %result.tool_name,
            tool_call_id = %result.tool_call_id,
            handle,
            code = err.code(),
            "tool.failed"
        ),
        None if result.is_pending() => tracing::info!(
            name: "tool.submitted",
            target: "goondan::tool",
            trace_id,
            span_id,
            tool = %result.tool_name,
            tool_call_id = %result.tool_call_id,
            handle = result.handle.as_deref(),
            "tool.submitted"
        ),
        None => tracing::info!(
            name: "tool.completed",
            target: "goondan::tool",
            trace_id,
            span_id,
            tool = %result.tool_name,
            tool_call_id = %result.tool_call_id,
            handle,
            "tool.completed"
        ),
    }
}
