//! The core of every call, inside the `toolCall` middleware chain: argument validation, then
//! the handler under one [`guard`] (panics caught, the deadline, cancellation), and the result
//! of what it produced. The executor finishes that result.

use std::any::Any;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::pin;
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;

use futures_util::FutureExt;
use serde_json::Value;
use tracing::Instrument;

use crate::calls::guardrail::Guardrails;
use crate::calls::middleware::{CallContext, Core, Ready};
use crate::calls::pending::PendingResults;
use crate::calls::refusal::{cancelled, invalid_args, panic_error, timed_out};
use crate::tools::context::ToolContext;
use crate::tools::error::ToolError;
use crate::tools::handler::{Handler, HandlerCall, HandlerError, Outcome};
use crate::tools::registry::RegisteredExport;
use crate::tools::result::{ArcStr, JsonObject, ToolCallResult};
use crate::tools::schema::ArgProblem;

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
    fn start(self: Arc<Self>, call: CallContext) -> Ready<ToolCallResult> {
        let (name, id, args, ctx, entry) = call.into_parts();
        self.call(&entry, ctx, id, name, args)
    }
}

impl CallCore {
    /// Validation, then the handler: a synchronous answer at once, anything else under the
    /// call's [`guard`].
    pub(super) fn call(
        self: &Arc<Self>,
        entry: &Arc<RegisteredExport>,
        ctx: ToolContext,
        id: ArcStr,
        name: ArcStr,
        args: JsonObject,
    ) -> Ready<ToolCallResult> {
        let export = entry.export();
        let handler = export.handler();
        // Every call, typed handler or not, is checked against exactly the schema the model
        // sees (serde alone would drop unknown keys and ignore ranges, lengths and patterns).
        let mut value = Value::Object(args);
        if let Err(problems) = export.validator().check(&mut value) {
            let err = invalid_args(problems, export.parameters());
            return Ready::Done(ToolCallResult::error(id, name, err));
        }
        let args = match value {
            Value::Object(map) => map,
            _ => JsonObject::new(),
        };
        if ctx.is_cancelled() {
            return Ready::Done(ToolCallResult::error(id, name, cancelled()));
        }
        let timeout = export.timeout().or(self.default_timeout);
        if handler.blocks()
            && let Some(limit) = timeout
        {
            // A handler that blocks its thread runs on Tokio's blocking pool, so the deadline
            // fires on time and the runtime keeps serving other calls. The thread itself cannot
            // be stopped; it finishes in the background and its answer is dropped.
            let handler = Arc::clone(handler);
            let call_ctx = ctx.clone();
            let blocking = async move {
                let task =
                    tokio::task::spawn_blocking(move || start_handler(&*handler, &call_ctx, args));
                match task.await {
                    Ok(Ok(HandlerCall::Ready(outcome))) => Ok(outcome),
                    Ok(Ok(HandlerCall::Running(fut))) => AssertUnwindSafe(fut).catch_unwind().await,
                    Ok(Err(panic)) => Err(panic),
                    Err(join) => match join.try_into_panic() {
                        Ok(panic) => Err(panic),
                        Err(_) => Ok(Err(HandlerError::Failed(cancelled()))),
                    },
                }
            };
            return Arc::clone(self).wait(entry, ctx, id, name, Some(limit), blocking);
        }
        let outcome = match start_handler(&**handler, &ctx, args) {
            Err(panic) => Err(panic),
            Ok(HandlerCall::Ready(outcome)) => Ok(outcome),
            Ok(HandlerCall::Running(fut)) => {
                let fut = AssertUnwindSafe(fut).catch_unwind();
                return Arc::clone(self).wait(entry, ctx, id, name, timeout, fut);
            }
        };
        Ready::Done(self.conclude(entry, &ctx, id, name, outcome))
    }

    /// A handler still running: its result once the [`guard`] lets it through.
    fn wait(
        self: Arc<Self>,
        entry: &Arc<RegisteredExport>,
        ctx: ToolContext,
        id: ArcStr,
        name: ArcStr,
        timeout: Option<Duration>,
        running: impl Future<Output = CaughtOutcome> + Send + 'static,
    ) -> Ready<ToolCallResult> {
        let entry = Arc::clone(entry);
        Ready::Wait(Box::pin(async move {
            match guard(running, timeout, &ctx).await {
                Ok(outcome) => self.conclude(&entry, &ctx, id, name, outcome),
                Err(stop) => ToolCallResult::error(id, name, stop),
            }
        }))
    }

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

/// Calls the handler in the call's span, its panic caught: what it answers at once, or the
/// future that will answer.
fn start_handler(
    handler: &dyn Handler,
    ctx: &ToolContext,
    args: JsonObject,
) -> Result<HandlerCall, Box<dyn Any + Send>> {
    let _entered = ctx.logger().enter();
    std::panic::catch_unwind(AssertUnwindSafe(|| handler.call(ctx, args)))
}

/// What a handler produced, or its panic.
type CaughtOutcome = Result<Result<Outcome, HandlerError>, Box<dyn Any + Send>>;

/// The one guard of a running handler, synchronous (on the blocking pool) or not: its answer,
/// the deadline, or cancellation, whichever comes first. The deadline starts before the first
/// poll, and that poll is inside it. A handler that answers on its first poll pays for no timer.
async fn guard<F>(
    running: F,
    timeout: Option<Duration>,
    ctx: &ToolContext,
) -> Result<CaughtOutcome, ToolError>
where
    F: Future<Output = CaughtOutcome>,
{
    let deadline = timeout.map(|limit| (tokio::time::Instant::now() + limit, limit));
    let mut running = pin!(running);
    let first = std::future::poll_fn(|cx| {
        let _entered = ctx.logger().enter();
        Poll::Ready(running.as_mut().poll(cx))
    });
    if let Poll::Ready(outcome) = first.await {
        return Ok(outcome);
    }
    let cancel = ctx.cancellation();
    let rest = async {
        match deadline {
            Some((at, limit)) => tokio::select! {
                r = &mut running => Ok(r),
                () = tokio::time::sleep_until(at) => Err(timed_out(limit)),
                () = cancel.cancelled() => Err(cancelled()),
            },
            None => tokio::select! {
                r = &mut running => Ok(r),
                () = cancel.cancelled() => Err(cancelled()),
            },
        }
    };
    rest.instrument(ctx.logger().clone()).await
}
