//! Asynchronous submission (RES-2): a handler returns [`Pending`], the caller
//! gets a handle at once, and the completion arrives as an event or by polling.

use std::collections::{HashMap, VecDeque};
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use futures_util::FutureExt;
use tokio::sync::{broadcast, watch};
use tracing::Instrument;

use crate::calls::finish::{Announce, Rules, finish};
use crate::calls::guardrail::Guardrails;
use crate::lock;
use crate::tools::context::ToolContext;
use crate::tools::error::{ToolError, codes};
use crate::tools::handler::Pending;
use crate::tools::result::ToolCallResult;

/// How many finished results are kept for polling before the oldest is dropped.
pub const DEFAULT_KEEP_FINISHED: usize = 1024;

/// Where a submitted call stands.
#[derive(Debug, Clone, PartialEq)]
#[allow(clippy::large_enum_variant)] // returned by value once per poll; boxing buys nothing
pub enum PendingState {
    /// Still running.
    Running,
    /// Finished; the result has `status` `ok` or `error`.
    Finished(ToolCallResult),
}

#[derive(Default)]
struct State {
    /// Each submitted call's result, `None` while it runs.
    slots: HashMap<String, watch::Receiver<Option<ToolCallResult>>>,
    finished: VecDeque<String>,
}

struct Inner {
    state: Mutex<State>,
    events: broadcast::Sender<ToolCallResult>,
    /// The start of every handle of this store: unique to it, so that a handle a store of an
    /// earlier process issued (read back from a run journal) is never issued again.
    prefix: String,
    next: AtomicU64,
    keep_finished: usize,
}

/// The submitted calls of an executor: poll them by handle, wait for them, or subscribe to
/// their completions. Cheap to clone.
#[derive(Clone)]
pub struct PendingResults {
    inner: Arc<Inner>,
}

impl Default for PendingResults {
    fn default() -> Self {
        Self::new(DEFAULT_KEEP_FINISHED)
    }
}

impl std::fmt::Debug for PendingResults {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PendingResults")
            .field("tracked", &lock(&self.inner.state).slots.len())
            .finish()
    }
}

impl PendingResults {
    /// Tracks submissions, keeping at most `keep_finished` finished results for polling.
    pub fn new(keep_finished: usize) -> Self {
        let (events, _) = broadcast::channel(256);
        Self {
            inner: Arc::new(Inner {
                state: Mutex::default(),
                events,
                prefix: crate::tools::context::fresh_id("pending"),
                next: AtomicU64::new(1),
                keep_finished,
            }),
        }
    }

    /// Where the call with `handle` stands; `None` for a handle never issued or already taken.
    pub fn poll(&self, handle: &str) -> Option<PendingState> {
        let state = lock(&self.inner.state);
        let done = state.slots.get(handle)?.borrow();
        Some(match &*done {
            Some(r) => PendingState::Finished(r.clone()),
            None => PendingState::Running,
        })
    }

    /// Removes and returns the result of a finished call.
    pub fn take(&self, handle: &str) -> Option<ToolCallResult> {
        let mut state = lock(&self.inner.state);
        let finished = state.slots.get(handle)?.borrow().clone()?;
        state.slots.remove(handle);
        state.finished.retain(|h| h != handle);
        Some(finished)
    }

    /// Waits for the call with `handle` to finish and removes its result. `None` for an
    /// unknown handle.
    pub async fn wait(&self, handle: &str) -> Option<ToolCallResult> {
        let mut rx = lock(&self.inner.state).slots.get(handle)?.clone();
        let result = rx
            .wait_for(Option::is_some)
            .await
            .ok()
            .and_then(|r| r.clone());
        self.take(handle);
        result
    }

    /// Returns once the call with `handle` has finished (at once for an unknown handle),
    /// leaving its result to [`take`](Self::take).
    pub async fn finished(&self, handle: &str) {
        let rx = lock(&self.inner.state).slots.get(handle).cloned();
        if let Some(mut rx) = rx {
            let _ = rx.wait_for(Option::is_some).await;
        }
    }

    /// Every completion from now on, as it happens.
    pub fn subscribe(&self) -> broadcast::Receiver<ToolCallResult> {
        self.inner.events.subscribe()
    }

    /// How many submitted calls are still running.
    pub fn running(&self) -> usize {
        lock(&self.inner.state)
            .slots
            .values()
            .filter(|done| done.borrow().is_none())
            .count()
    }

    /// Starts `pending` in the background and returns its handle. The result carries the
    /// call's id and tool name; an error is cut to `limit` characters and given a help URL
    /// from `help`: the executor's own base for runtime codes (`None`: the process's) and the
    /// resource's for its author's codes, if any (RES-7). The result goes through `guard`'s
    /// output checks before anyone sees it.
    pub(crate) fn submit(
        &self,
        pending: Pending,
        ctx: &ToolContext,
        tool_name: &str,
        limit: usize,
        help: (Option<Arc<str>>, Option<&str>),
        guard: Option<Arc<Guardrails>>,
    ) -> String {
        let n = self.inner.next.fetch_add(1, Ordering::Relaxed);
        let handle = format!("{}-{n}", self.inner.prefix);
        let (tx, rx) = watch::channel(None);
        lock(&self.inner.state).slots.insert(handle.clone(), rx);

        let this = self.clone();
        let call_id = ctx.tool_call_id().to_owned();
        let tool_name = tool_name.to_owned();
        let cancel = ctx.cancellation().clone();
        let span = ctx.logger().clone();
        let task_handle = handle.clone();
        let trace_id = ctx.trace_id().to_owned();
        let checked_in = guard.map(|g| (g, ctx.clone()));
        let (runtime_help, resource_help) = (help.0, help.1.map(str::to_owned));
        let work = AssertUnwindSafe(pending.future).catch_unwind();
        tokio::spawn(
            async move {
                let outcome = tokio::select! {
                    r = work => match r {
                        Ok(r) => r,
                        Err(panic) => Err(crate::calls::refusal::panic_error(&*panic)),
                    },
                    () = cancel.cancelled() => Err(ToolError::new("the submitted work was cancelled")
                        .with_code(codes::CANCELLED)
                        .with_name("ToolCancelledError")),
                };
                let mut result = match outcome {
                    Ok(output) => ToolCallResult::ok(call_id, tool_name, output),
                    Err(err) => {
                        let err = err.with_resource_help(resource_help.as_deref());
                        ToolCallResult::error(call_id, tool_name, err)
                    }
                };
                if let Some((guard, ctx)) = &checked_in {
                    result = guard.check_outputs(result, ctx).await;
                }
                let rules = Rules {
                    limit,
                    help_base: runtime_help.as_deref(),
                };
                let announce = Announce::Pending {
                    handle: &task_handle,
                    trace_id: &trace_id,
                };
                finish(&mut result, rules, announce);
                this.complete(&task_handle, tx, result);
            }
            .instrument(span),
        );
        handle
    }

    fn complete(
        &self,
        handle: &str,
        tx: watch::Sender<Option<ToolCallResult>>,
        result: ToolCallResult,
    ) {
        let _ = self.inner.events.send(result.clone());
        tx.send_replace(Some(result));
        let mut state = lock(&self.inner.state);
        state.finished.push_back(handle.to_owned());
        while state.finished.len() > self.inner.keep_finished {
            if let Some(old) = state.finished.pop_front() {
                state.slots.remove(&old);
            }
        }
    }
}
