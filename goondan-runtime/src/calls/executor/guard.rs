//! A handler that did not answer at once, and the one guard it runs under: its answer, the
//! deadline, or cancellation, whichever comes first.
//!
//! [`Waiting`] is a future written by hand, not an `async fn`: a call without middleware
//! awaits it in place, inside `execute`'s own future (no box of the executor's), and an
//! `async fn` would keep a second copy of what it moves (the compiler reserves room for a
//! moved-from local until its scope ends). A middleware chain boxes it (the core's `InChain`).

use std::any::Any;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use pin_project_lite::pin_project;
use tokio::time::{Instant, Sleep};
use tokio_util::sync::WaitForCancellationFutureOwned;

use crate::calls::middleware::BoxFuture;
use crate::calls::refusal::{cancelled, timed_out};
use crate::tools::context::ToolContext;
use crate::tools::error::ToolError;
use crate::tools::handler::{HandlerError, HandlerFuture, Outcome};

/// What a handler produced, or its panic.
pub(super) type CaughtOutcome = Result<Result<Outcome, HandlerError>, Box<dyn Any + Send>>;

/// The work of a call still to be waited for.
pub(super) enum Running {
    /// An asynchronous handler's future (its panics are caught at each poll).
    Handler(HandlerFuture),
    /// A blocking handler on Tokio's blocking pool, its panic already caught.
    Blocking(BoxFuture<'static, CaughtOutcome>),
    /// Answered or dropped: never polled again.
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

pin_project! {
    /// A call whose handler has started and has to be waited for, under its guard: the
    /// deadline starts when the handler has been started, before its first poll. The handler
    /// is polled first, in the call's span; only a handler that has to wait makes the timer
    /// and registers for cancellation, so one that answers on its first poll pays for
    /// neither. The timer is boxed: only calls with a timeout need one, and inline it would
    /// make every call's future larger. Its output is the handler's outcome, or why the guard
    /// stopped it; the core makes the call's result of it (`CallCore::poll_waiting`).
    pub(super) struct Waiting {
        running: Running,
        ctx: ToolContext,
        deadline: Option<(Instant, Duration)>,
        sleep: Option<Pin<Box<Sleep>>>,
        #[pin]
        cancel: Option<WaitForCancellationFutureOwned>,
    }

    impl PinnedDrop for Waiting {
        // The running work is dropped in the call's span (as a `tracing` `Instrumented` drops
        // what it wraps): a handler dropped unfinished (a deadline, a cancellation, the caller
        // giving up) logs in its call.
        fn drop(this: Pin<&mut Self>) {
            let this = this.project();
            let _entered = this.ctx.logger().enter();
            *this.running = Running::Done;
        }
    }
}

impl Waiting {
    pub(super) fn new(running: Running, ctx: ToolContext, timeout: Option<Duration>) -> Self {
        Self {
            running,
            ctx,
            deadline: timeout.map(|limit| (Instant::now() + limit, limit)),
            sleep: None,
            cancel: None,
        }
    }

    /// The call's context (the core concludes the call in it).
    pub(super) fn context(self: Pin<&mut Self>) -> &ToolContext {
        self.project().ctx
    }

    /// Polls the handler, then the cancellation and the deadline, in the call's span: entered
    /// here if `enter` (a call without middleware has entered it already; inside a chain,
    /// `next`'s future may be polled outside it). Whatever ends the wait, the handler is
    /// dropped here, in the span.
    #[inline]
    pub(super) fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>, enter: bool) -> Poll<Guarded> {
        let mut this = self.project();
        let _entered = enter.then(|| this.ctx.logger().enter());
        let ran = 'guard: {
            if let Poll::Ready(outcome) = this.running.poll(cx) {
                break 'guard Ok(outcome);
            }
            if this.cancel.is_none() {
                let token = this.ctx.cancellation().clone();
                this.cancel.set(Some(token.cancelled_owned()));
                if let Some((at, _)) = *this.deadline {
                    *this.sleep = Some(Box::pin(tokio::time::sleep_until(at)));
                }
            }
            if let Some(cancel) = this.cancel.as_mut().as_pin_mut()
                && cancel.poll(cx).is_ready()
            {
                break 'guard Err(cancelled());
            }
            if let (Some((_, limit)), Some(sleep)) = (*this.deadline, this.sleep.as_mut())
                && sleep.as_mut().poll(cx).is_ready()
            {
                break 'guard Err(timed_out(limit));
            }
            return Poll::Pending;
        };
        *this.running = Running::Done;
        Poll::Ready(ran)
    }
}

/// What a [`Waiting`] ends with: the handler's outcome, or why the guard stopped it.
pub(super) type Guarded = Result<CaughtOutcome, ToolError>;
