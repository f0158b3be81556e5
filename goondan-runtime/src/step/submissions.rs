//! Calls whose result is `pending` (RES-2) in the step loop: the instance keeps their handles,
//! brings each completion into the conversation between two Steps, and a Turn does not end
//! while one runs.

use std::sync::Mutex;

use futures_util::future::select_all;

use super::journal::Submitted;
use crate::calls::pending::{PendingResults, PendingState};
use crate::lock;
use crate::tools::error::ToolError;
use crate::tools::result::{ToolCall, ToolCallResult};

/// A call whose result was `pending` and whose completion the conversation has not had yet.
#[derive(Debug, Clone)]
pub(crate) struct Submission {
    /// The assistant message holding the call.
    pub(crate) message_id: String,
    /// The call, as the model made it.
    pub(crate) call: ToolCall,
    /// Its handle in this process's executor; `None` for a call that a process which stopped
    /// submitted (read back from the journal).
    handle: Option<String>,
}

/// The submitted calls of an instance, oldest first.
#[derive(Debug, Default)]
pub(crate) struct Submissions(Mutex<Vec<Submission>>);

impl Submissions {
    /// Keeps the calls a journal says were submitted and never completed: their process is
    /// gone, and so are their handles.
    pub(crate) fn restore(&self, submitted: Vec<Submitted>) {
        lock(&self.0).extend(submitted.into_iter().map(|s| Submission {
            message_id: s.message_id,
            call: s.call,
            handle: None,
        }));
    }

    /// Keeps `call`, submitted under `handle`.
    pub(crate) fn track(&self, message_id: &str, call: &ToolCall, handle: &str) {
        lock(&self.0).push(Submission {
            message_id: message_id.to_owned(),
            call: call.clone(),
            handle: Some(handle.to_owned()),
        });
    }

    /// Whether no submitted call waits for its completion.
    pub(crate) fn is_empty(&self) -> bool {
        lock(&self.0).is_empty()
    }

    /// Takes the calls that a process which stopped had submitted.
    pub(crate) fn take_orphans(&self) -> Vec<Submission> {
        lock(&self.0)
            .extract_if(.., |s| s.handle.is_none())
            .collect()
    }

    /// Takes the calls whose completion is there, with it, in the order they were submitted.
    /// A handle the executor no longer knows completes with an error rather than never.
    pub(crate) fn take_ready(&self, pending: &PendingResults) -> Vec<(Submission, ToolCallResult)> {
        let mut all = lock(&self.0);
        let mut ready = Vec::new();
        let mut running = Vec::with_capacity(all.len());
        for submission in std::mem::take(&mut *all) {
            let Some(handle) = submission.handle.as_deref() else {
                running.push(submission);
                continue;
            };
            match pending.poll(handle) {
                Some(PendingState::Running) => running.push(submission),
                Some(PendingState::Finished(_)) => match pending.take(handle) {
                    Some(result) => ready.push((submission, result)),
                    None => running.push(submission),
                },
                None => {
                    let error = ToolError::new(format!(
                        "the result of `{}` (handle `{handle}`) is no longer kept",
                        submission.call.name
                    ))
                    .with_code("E_TOOL_INTERNAL")
                    .with_suggestion("call the tool again if its result is still needed");
                    let result = ToolCallResult::error(
                        submission.call.id.clone(),
                        submission.call.name.clone(),
                        error,
                    );
                    ready.push((submission, result));
                }
            }
        }
        *all = running;
        ready
    }

    /// Returns once one of the calls submitted in this process has finished (at once when
    /// none runs).
    pub(crate) async fn one_finished(&self, pending: &PendingResults) {
        let handles: Vec<String> = lock(&self.0)
            .iter()
            .filter_map(|s| s.handle.clone())
            .collect();
        if handles.is_empty() {
            return;
        }
        let waits = handles.iter().map(|h| Box::pin(pending.finished(h)));
        select_all(waits).await;
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::calls::pending::PendingResults;

    #[tokio::test]
    async fn a_handle_the_executor_forgot_completes_with_an_error_and_orphans_are_taken_once() {
        let submissions = Submissions::default();
        let pending = PendingResults::default();
        let call = ToolCall::new("c1", "jobs__run", serde_json::json!({}));
        submissions.track("m1", &call, "pending-404");
        submissions.restore(vec![Submitted {
            message_id: "m0".into(),
            call: ToolCall::new("c0", "jobs__run", serde_json::json!({})),
        }]);
        let orphans = submissions.take_orphans();
        assert_eq!(orphans.len(), 1);
        assert_eq!(orphans[0].call.id, "c0");
        assert!(submissions.take_orphans().is_empty());
        // Nothing to wait for: the unknown handle counts as finished.
        tokio::time::timeout(Duration::from_secs(5), submissions.one_finished(&pending))
            .await
            .unwrap_or_else(|_| panic!("waited for a handle nobody runs"));
        let ready = submissions.take_ready(&pending);
        assert_eq!(ready.len(), 1);
        assert_eq!(ready[0].1.error_code(), Some("E_TOOL_INTERNAL"));
        assert!(submissions.is_empty());
    }
}
