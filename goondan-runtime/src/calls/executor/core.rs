//! The core of every call, inside the `toolCall` middleware chain: argument validation, then
//! the handler under one guard (panics caught, the deadline, cancellation), and the result of
//! what it produced. The executor finishes that result.

use std::any::Any;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use futures_util::FutureExt;
use pin_project_lite::pin_project;
use serde_json::Value;

use crate::calls::guardrail::Guardrails;
use crate::calls::middleware::{CallContext, Core, Ready};
use crate::calls::pending::PendingResults;
use crate::calls::refusal::{cancelled, invalid_args, panic_error};
use crate::tools::catalog::ShownParameters;
use crate::tools::context::ToolContext;
use crate::tools::handler::{Handler, HandlerCall, HandlerError, Outcome};
use crate::tools::registry::RegisteredExport;
use crate::tools::result::{ArcStr, JsonObject, ToolCallResult};
use crate::tools::schema::ArgProblem;

use super::guard::{CaughtOutcome, Running, Waiting};

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
        let (name, id, args, ctx, entry, shown) = call.into_parts();
        match self.call(&entry, shown.as_ref(), ctx, id, name, args) {
            Started::Done(result) => Ready::Done(result),
            // Inside a chain the rest is a future of its own, which owns what it borrows.
            Started::Waiting(waiting, id, name) => Ready::Wait(Box::pin(InChain {
                waiting,
                core: self,
                entry,
                id,
                name,
            })),
        }
    }
}

/// What the core answers at once (a synchronous handler, a refusal), or the handler still
/// running: a call without middleware awaits it in place, a chain boxes it.
pub(super) enum Started {
    Done(ToolCallResult),
    /// The handler's guard, and the call's id and name for its result.
    Waiting(Waiting, ArcStr, ArcStr),
}

impl CallCore {
    /// Validation, then the handler: a synchronous answer at once, anything else to wait for
    /// under the call's guard ([`Waiting`]).
    pub(super) fn call(
        &self,
        entry: &RegisteredExport,
        shown: Option<&ShownParameters>,
        ctx: ToolContext,
        id: ArcStr,
        name: ArcStr,
        args: JsonObject,
    ) -> Started {
        let export = entry.export();
        let handler = export.handler();
        // Every call, typed handler or not, is checked against exactly the schema the model
        // was shown (serde alone would drop unknown keys and ignore ranges, lengths and
        // patterns). A Step that showed another schema (a narrower one, say) has the call
        // checked against that one first, then against the export's own, which its handler
        // reads.
        let mut value = Value::Object(args);
        let shown = shown.filter(|s| !Arc::ptr_eq(s.schema(), export.parameters_arc()));
        if let Some(shown) = shown
            && let Err(problems) = shown.validator().check(&mut value)
        {
            let err = invalid_args(problems, shown.schema());
            return Started::Done(ToolCallResult::error(id, name, err));
        }
        if let Err(problems) = export.validator().check(&mut value) {
            let err = invalid_args(problems, export.parameters());
            return Started::Done(ToolCallResult::error(id, name, err));
        }
        let args = match value {
            Value::Object(map) => map,
            _ => JsonObject::new(),
        };
        if ctx.is_cancelled() {
            return Started::Done(ToolCallResult::error(id, name, cancelled()));
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
            let running = Running::Blocking(Box::pin(blocking));
            return Started::Waiting(Waiting::new(running, ctx, Some(limit)), id, name);
        }
        let outcome = match start_handler(&**handler, &ctx, args) {
            Err(panic) => Err(panic),
            Ok(HandlerCall::Ready(outcome)) => Ok(outcome),
            Ok(HandlerCall::Running(fut)) => {
                let running = Running::Handler(fut);
                return Started::Waiting(Waiting::new(running, ctx, timeout), id, name);
            }
        };
        Started::Done(self.conclude(entry, &ctx, id, name, outcome))
    }

    /// Polls a waiting call's guard (`enter`: whether it enters the call's span itself, see
    /// [`Waiting::poll`]) and makes the call's result of what it lets through, or of why it
    /// stopped the handler; the id and name are taken for it. The one route of both a call
    /// without middleware, in place, and the chain's boxed `InChain`; inlined into each, so
    /// `enter` is known where it is read.
    #[inline]
    pub(super) fn poll_waiting(
        &self,
        entry: &RegisteredExport,
        mut waiting: Pin<&mut Waiting>,
        id: &mut ArcStr,
        name: &mut ArcStr,
        cx: &mut Context<'_>,
        enter: bool,
    ) -> Poll<ToolCallResult> {
        let Poll::Ready(ran) = waiting.as_mut().poll(cx, enter) else {
            return Poll::Pending;
        };
        let (id, name) = (std::mem::take(id), std::mem::take(name));
        Poll::Ready(match ran {
            Ok(outcome) => self.conclude(entry, waiting.context(), id, name, outcome),
            Err(stop) => ToolCallResult::error(id, name, stop),
        })
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

pin_project! {
    /// A waiting call inside a middleware chain: the chain's future owns what the call
    /// borrows without one (the core, the export, the call's id and name).
    struct InChain {
        #[pin]
        waiting: Waiting,
        core: Arc<CallCore>,
        entry: Arc<RegisteredExport>,
        id: ArcStr,
        name: ArcStr,
    }
}

impl Future for InChain {
    type Output = ToolCallResult;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<ToolCallResult> {
        let this = self.project();
        this.core
            .poll_waiting(this.entry, this.waiting, this.id, this.name, cx, true)
    }
}
