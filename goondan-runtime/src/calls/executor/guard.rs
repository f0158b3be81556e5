//! A handler that did not answer on its first poll, and the one guard it runs under: its
//! answer, the deadline, or cancellation, whichever comes first. Awaited in place by a call
//! without middleware (no box of the executor's own), or boxed for a middleware chain.

use std::any::Any;
use std::future::{Future, poll_fn};
use std::panic::AssertUnwindSafe;
use std::pin::{Pin, pin};
use std::task::{Context, Poll};
use std::time::Duration;

use crate::calls::middleware::BoxFuture;
use crate::calls::refusal::{cancelled, timed_out};
use crate::tools::context::ToolContext;
use crate::tools::error::ToolError;
use crate::tools::handler::{HandlerError, HandlerFuture, Outcome};
use crate::tools::registry::RegisteredExport;
use crate::tools::result::{ArcStr, ToolCallResult};

use super::core::CallCore;

/// What a handler produced, or its panic.
pub(super) type CaughtOutcome = Result<Result<Outcome, HandlerError>, Box<dyn Any + Send>>;

/// The work of a call still to be waited for.
pub(super) enum Running {
    /// An asynchronous handler's future (its panics are caught at each poll).
    Handler(HandlerFuture),
    /// A blocking handler on Tokio's blocking pool, its panic already caught.
    Blocking(BoxFuture<'static, CaughtOutcome>),
    /// Dropped (never polled again).
    Done,
}

impl Running {
    /// Polls the work once, a panic of the handler caught.
    fn poll(&mut self, cx: &mut Context<'_>) -> Poll<CaughtOutcome> {
        match self {
            Running::Handler(fut) => {
                match std::panic::catch_unwind(AssertUnwindSafe(|| fut.as_mut().poll(cx))) {
                    Ok(Poll::Ready(outcome)) => Poll::Ready(Ok(outcome)),
                    Ok(Poll::Pending) => Poll::Pending,
                    Err(panic) => Poll::Ready(Err(panic)),
                }
            }
            Running::Blocking(fut) => fut.as_mut().poll(cx),
            Running::Done => Poll::Pending,
        }
    }
}

/// A call whose handler has started and has to be waited for: what the core needs to answer.
pub(super) struct Waiting {
    running: Running,
    ctx: ToolContext,
    id: ArcStr,
    name: ArcStr,
    timeout: Option<Duration>,
}

impl Waiting {
    pub(super) fn new(
        running: Running,
        ctx: ToolContext,
        id: ArcStr,
        name: ArcStr,
        timeout: Option<Duration>,
    ) -> Self {
        Self {
            running,
            ctx,
            id,
            name,
            timeout,
        }
    }

    /// The call's result once the guard lets the handler's answer through. Borrows the core
    /// and the export: a call without middleware awaits this in place.
    pub(super) async fn finish(self, core: &CallCore, entry: &RegisteredExport) -> ToolCallResult {
        // Fields, not a destructured copy: `self` is kept in the future for its whole life
        // anyway, so locals moved out of it would take the room twice.
        match guard(self.running, self.timeout, &self.ctx).await {
            Ok(outcome) => core.conclude(entry, &self.ctx, self.id, self.name, outcome),
            Err(stop) => ToolCallResult::error(self.id, self.name, stop),
        }
    }
}

/// The one guard of a running handler, synchronous (on the blocking pool) or not: its answer,
/// the deadline, or cancellation, whichever comes first. The deadline starts before the first
/// poll, and that poll is inside it. The handler is polled first, in the call's span; only a
/// handler that has to wait makes the timer and registers for cancellation (on its first
/// wait), so one that answers on its first poll pays for neither. The timer is boxed: only
/// calls with a timeout need one, and inline it would make every call's future larger.
async fn guard(
    running: Running,
    timeout: Option<Duration>,
    ctx: &ToolContext,
) -> Result<CaughtOutcome, ToolError> {
    let mut running = DroppedInSpan {
        running,
        span: ctx.logger(),
    };
    let running = &mut running.running;
    let deadline = timeout.map(|limit| (tokio::time::Instant::now() + limit, limit));
    let mut sleep: Option<Pin<Box<tokio::time::Sleep>>> = None;
    let mut cancel = pin!(None);
    poll_fn(|cx| {
        let _entered = ctx.logger().enter();
        if let Poll::Ready(outcome) = running.poll(cx) {
            return Poll::Ready(Ok(outcome));
        }
        if cancel.is_none() {
            cancel.set(Some(ctx.cancellation().cancelled()));
            if let Some((at, _)) = deadline {
                sleep = Some(Box::pin(tokio::time::sleep_until(at)));
            }
        }
        if ready(cancel.as_mut().as_pin_mut(), cx) {
            return Poll::Ready(Err(cancelled()));
        }
        match deadline {
            Some((_, limit)) if ready(sleep.as_mut().map(Pin::as_mut), cx) => {
                Poll::Ready(Err(timed_out(limit)))
            }
            _ => Poll::Pending,
        }
    })
    .await
}

/// Whether a waiter that is there has fired.
fn ready<F: Future<Output = ()>>(waiter: Option<Pin<&mut F>>, cx: &mut Context<'_>) -> bool {
    waiter.is_some_and(|w| w.poll(cx).is_ready())
}

/// The running work, dropped in the call's span (as a `tracing` `Instrumented` drops what it
/// wraps): a handler dropped unfinished (a deadline, a cancellation, the caller giving up)
/// logs in its call.
struct DroppedInSpan<'a> {
    running: Running,
    span: &'a tracing::Span,
}

impl Drop for DroppedInSpan<'_> {
    fn drop(&mut self) {
        let _entered = self.span.enter();
        self.running = Running::Done;
    }
}
