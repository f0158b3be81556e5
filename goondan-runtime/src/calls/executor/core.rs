//! The core of every call, inside the `toolCall` middleware chain: argument validation, then
//! the handler under one guard (panics caught, the deadline, cancellation), and the result of
//! what it produced. The executor finishes that result.

use std::any::Any;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Duration;

use futures_util::FutureExt;
use serde_json::Value;

use crate::calls::guardrail::Guardrails;
use crate::calls::middleware::{BoxFuture, CallContext, Core};
use crate::calls::pending::PendingResults;
use crate::calls::refusal::{cancelled, invalid_args, panic_error, timed_out};
use crate::tools::catalog::ShownParameters;
use crate::tools::context::ToolContext;
use crate::tools::error::ToolError;
use crate::tools::handler::{HandlerError, Outcome};
use crate::tools::registry::RegisteredExport;
use crate::tools::result::{ArcStr, JsonObject, ToolCallResult};
use crate::tools::schema::ArgProblem;
use crate::tools::tool::Export;

/// What a handler produced, or its panic.
type CaughtOutcome = Result<Result<Outcome, HandlerError>, Box<dyn Any + Send>>;

/// The core of every call, inside the middleware chain: validation, the handler, the reply.
/// One per executor, shared by every call's chain.
pub(super) struct CallCore {
    pub(super) default_timeout: Option<Duration>,
    /// How many bytes of content parts one result may carry.
    pub(super) max_content_bytes: usize,
    pub(super) pending: PendingResults,
    pub(super) help_url_base: Option<Arc<str>>,
    /// The output guardrails a submitted call's completion goes through.
    pub(super) completion_guardrails: Option<Arc<Guardrails>>,
}

impl Core for CallCore {
    /// Validation and the cancellation check, then the handler under its guard, then the
    /// result of what it produced. What can be refused is refused before the call's future is
    /// made, so that the future holds only what the handler's run needs.
    fn run(self: Arc<Self>, call: CallContext) -> BoxFuture<'static, ToolCallResult> {
        let (name, id, args, ctx, entry, shown) = call.into_parts();
        let args = match admitted(entry.export(), shown.as_ref(), args, &ctx) {
            Ok(args) => args,
            Err(err) => return Box::pin(std::future::ready(ToolCallResult::error(id, name, err))),
        };
        Box::pin(async move {
            let export = entry.export();
            let timeout = export.timeout().or(self.default_timeout);
            match guarded(export, &ctx, args, timeout).await {
                Ok(outcome) => self.conclude(&entry, &ctx, id, name, outcome),
                Err(stop) => ToolCallResult::error(id, name, stop),
            }
        })
    }
}

/// The arguments, once admitted for the handler: checked against exactly the schema the model
/// was shown (serde alone would drop unknown keys and ignore ranges, lengths and patterns),
/// and the call not cancelled. A Step that showed another schema (a narrower one, say) has the
/// call checked against that one first, then against the export's own, which its handler
/// reads.
fn admitted(
    export: &Export,
    shown: Option<&ShownParameters>,
    args: JsonObject,
    ctx: &ToolContext,
) -> Result<JsonObject, ToolError> {
    let mut value = Value::Object(args);
    let shown = shown.filter(|s| !Arc::ptr_eq(s.schema(), export.parameters_arc()));
    if let Some(shown) = shown
        && let Err(problems) = shown.validator().check(&mut value)
    {
        return Err(invalid_args(problems, shown.schema()));
    }
    if let Err(problems) = export.validator().check(&mut value) {
        return Err(invalid_args(problems, export.parameters()));
    }
    if ctx.is_cancelled() {
        return Err(cancelled());
    }
    Ok(match value {
        Value::Object(map) => map,
        _ => JsonObject::new(),
    })
}

impl CallCore {
    /// The result of what the handler produced. Its error is finished later, once, by the
    /// executor.
    fn conclude(
        &self,
        entry: &RegisteredExport,
        ctx: &ToolContext,
        id: ArcStr,
        name: ArcStr,
        outcome: CaughtOutcome,
    ) -> ToolCallResult {
        let err = match outcome {
            Ok(Ok(Outcome::Output(output))) => return ToolCallResult::ok(id, name, output),
            Ok(Ok(Outcome::Rich(rich))) => {
                let bytes: usize = rich
                    .content
                    .iter()
                    .map(crate::tools::content::Content::byte_len)
                    .sum();
                if bytes <= self.max_content_bytes {
                    let rich = *rich;
                    return ToolCallResult::ok(id, name, rich.output).with_content(rich.content);
                }
                crate::calls::refusal::content_too_large(bytes, self.max_content_bytes)
            }
            Ok(Ok(Outcome::Pending(pending))) => {
                let limit = entry.resource().error_message_limit();
                let help = (self.help_url_base.clone(), entry.resource().help_url_base());
                let guard = self.completion_guardrails.clone();
                let handle = self.pending.submit(pending, ctx, &name, limit, help, guard);
                return ToolCallResult::pending(id, name, handle);
            }
            Ok(Err(HandlerError::Failed(err))) => {
                err.with_resource_help(entry.resource().help_url_base())
            }
            Ok(Err(HandlerError::InvalidArgs { reason })) => {
                let problems = vec![ArgProblem {
                    path: String::new(),
                    message: reason,
                }];
                invalid_args(problems, entry.export().parameters())
            }
            Err(panic) => panic_error(&*panic),
        };
        ToolCallResult::error(id, name, err)
    }
}

/// Runs the handler under its guard: its outcome (a panic caught), or why the guard stopped
/// it, the call's cancellation or its deadline, whichever comes first. A handler stopped by
/// the guard is dropped here, in the call's span.
async fn guarded(
    export: &Export,
    ctx: &ToolContext,
    args: JsonObject,
    timeout: Option<Duration>,
) -> Result<CaughtOutcome, ToolError> {
    // The deadline counts from now: a handler's first poll, which may block, is within it.
    let deadline = timeout.map(|limit| (tokio::time::Instant::now() + limit, limit));
    // The handler is polled first; the cancellation and the deadline are only waited for
    // (and their waiters made) once it has to wait.
    let cancellation = async { Box::pin(ctx.cancellation().cancelled()).await };
    let deadline = async {
        match deadline {
            Some((at, limit)) => {
                Box::pin(tokio::time::sleep_until(at)).await;
                limit
            }
            None => std::future::pending().await,
        }
    };
    tokio::select! {
        biased;
        outcome = run_handler(export, ctx, args) => Ok(outcome),
        () = cancellation => Err(cancelled()),
        limit = deadline => Err(timed_out(limit)),
    }
}

/// Runs the handler, its panic caught. A synchronous export (a plain `fn`, which does its
/// work inside [`Handler::call`](crate::tools::handler::Handler::call)) runs on Tokio's
/// blocking pool, so that it never holds up the runtime and its deadline fires on time; the
/// thread itself cannot be stopped, so a handler past its deadline finishes in the
/// background and its answer is dropped.
async fn run_handler(export: &Export, ctx: &ToolContext, args: JsonObject) -> CaughtOutcome {
    let started = if export.blocks() {
        let handler = Arc::clone(export.handler());
        let call_ctx = ctx.clone();
        let started = tokio::task::spawn_blocking(move || {
            let _entered = call_ctx.logger().enter();
            std::panic::catch_unwind(AssertUnwindSafe(|| handler.call(&call_ctx, args)))
        })
        .await;
        match started {
            Ok(started) => started,
            Err(join) => match join.try_into_panic() {
                Ok(panic) => Err(panic),
                Err(_) => return Ok(Err(HandlerError::Failed(cancelled()))),
            },
        }
    } else {
        std::panic::catch_unwind(AssertUnwindSafe(|| export.handler().call(ctx, args)))
    };
    match started {
        Ok(answer) => AssertUnwindSafe(answer).catch_unwind().await,
        Err(panic) => Err(panic),
    }
}
