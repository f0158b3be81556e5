//! The step loop's side of durable runs: writing the journal at each point, the call-start
//! middleware, and what a call that a crash interrupted answers.

use std::sync::{Arc, Mutex};

use super::journal::{INTERRUPTED, Journal, JournalError, JournalPoint, Record, reached};
use crate::calls::finish::{Announce, Rules, finish};
use crate::calls::middleware::{CallContext, Middleware, MiddlewareFuture, Next};
use crate::tools::context::ToolContext;
use crate::tools::error::ToolError;
use crate::tools::registry::ToolRegistry;
use crate::tools::result::{ToolCall, ToolCallResult};

/// The instance's journal, if it has one, and the records waiting to go with its next write.
#[derive(Clone, Default)]
pub(crate) struct Writer(Option<Arc<Inner>>);

struct Inner {
    journal: Arc<dyn Journal>,
    /// Call results, written with the next write: the next call's start, or the end of their
    /// Step, whichever comes first, and in any case before the model sees them. One write per
    /// call instead of two.
    deferred: Mutex<Vec<Record>>,
}

impl Writer {
    pub(crate) fn new(journal: Option<Arc<dyn Journal>>) -> Self {
        Self(journal.map(|journal| {
            Arc::new(Inner {
                journal,
                deferred: Mutex::new(Vec::new()),
            })
        }))
    }

    /// Writes the deferred records and those `build` makes (built only when there is a
    /// journal) as one unit, then marks the points reached: `after-result` once per result
    /// it carried, then `points`.
    pub(crate) async fn write(
        &self,
        points: &[JournalPoint],
        build: impl FnOnce() -> Vec<Record>,
    ) -> Result<(), JournalError> {
        let Some(inner) = &self.0 else {
            return Ok(());
        };
        let mut records = std::mem::take(&mut *lock(&inner.deferred));
        let results = records.len();
        records.extend(build());
        if records.is_empty() {
            return Ok(());
        }
        inner.journal.append(&records).await?;
        for _ in 0..results {
            reached(JournalPoint::AfterResult);
        }
        for &point in points {
            reached(point);
        }
        Ok(())
    }

    /// The journal, if the instance has one.
    pub(crate) fn journal(&self) -> Option<&Arc<dyn Journal>> {
        self.0.as_ref().map(|inner| &inner.journal)
    }

    /// Keeps the records `build` makes for the next write ([`write`](Self::write)).
    pub(crate) fn defer(&self, build: impl FnOnce() -> Record) {
        if let Some(inner) = &self.0 {
            lock(&inner.deferred).push(build());
        }
    }

    /// Writes what was deferred.
    pub(crate) async fn flush(&self) -> Result<(), JournalError> {
        self.write(&[], Vec::new).await
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The innermost `toolCall` middleware of a journaled instance: writes the call's start after
/// every other middleware (approvals included) let it through, just before the handler. When
/// the start cannot be written, the call does not run.
pub(crate) struct JournalStarts(pub(crate) Writer);

impl Middleware for JournalStarts {
    fn handle(self: Arc<Self>, cx: CallContext, next: Next) -> MiddlewareFuture {
        Box::pin(async move {
            let written = self
                .0
                .write(&[JournalPoint::AfterStart], || {
                    vec![Record::CallStarted {
                        turn_id: cx.context().turn_id().to_owned(),
                        message_id: cx.context().message().id.clone(),
                        call_id: cx.tool_call_id().to_owned(),
                    }]
                })
                .await;
            if let Err(e) = written {
                let error = ToolError::new(format!(
                    "the run journal cannot record the call's start, so it did not run: {e}"
                ))
                .with_code("E_TOOL_INTERNAL")
                .with_suggestion("retry once; if it persists, tell the user");
                return ToolCallResult::error(cx.tool_call_id(), cx.tool_name(), error);
            }
            next.run(cx).await
        })
    }
}

/// Whether `name`'s export may run a second time after a crash stopped it midway: marked
/// idempotent, or read-only.
pub(crate) fn rerunnable(registry: &ToolRegistry, name: &str) -> bool {
    registry.get(name).is_some_and(|entry| {
        let hints = entry.export().annotations();
        hints.idempotent == Some(true) || hints.read_only == Some(true)
    })
}

/// The answer of a call whose handler had started when the process stopped, and that is not
/// run again: `E_TOOL_INTERRUPTED`, finished like any result.
pub(crate) fn interrupted(
    call: &ToolCall,
    ctx: &ToolContext,
    registry: &ToolRegistry,
) -> ToolCallResult {
    let error = ToolError::new(format!(
        "`{}` was running when the agent's process stopped; it may or may not have taken effect",
        call.name
    ))
    .with_code(INTERRUPTED)
    .with_suggestion(
        "check whether it took effect (read the file, list the items) before calling it again",
    );
    let mut result = ToolCallResult::error(call.id.clone(), call.name.clone(), error);
    let limit = registry
        .get(&call.name)
        .map_or(crate::tools::error::DEFAULT_ERROR_MESSAGE_LIMIT, |entry| {
            entry.resource().error_message_limit()
        });
    finish(
        &mut result,
        Rules {
            limit,
            help_base: None,
        },
        Announce::Call(ctx),
    );
    result
}
