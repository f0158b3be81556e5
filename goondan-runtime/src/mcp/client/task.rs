//! A remote MCP task as a Goondan pending result: when a server answers `tools/call` with a
//! task (the SEP-2663 tasks extension, which this client announces), the call's result is
//! `status: "pending"` with a handle, and a background poll of `tasks/get` delivers the
//! completion. Cancelling the call's context, or running past the call timeout, sends
//! `tasks/cancel`.

use std::time::Duration;

use rmcp::model::{CallToolResult, CancelTaskParams, GetTaskParams, Task, TaskPayload};
use rmcp::service::{Peer, RoleClient};
use serde_json::Value;

use super::outcome::{self, unavailable};
use crate::calls::refusal;
use crate::tools::error::ToolError;
use crate::tools::handler::Pending;

/// The poll interval when the server suggests none.
const DEFAULT_POLL: Duration = Duration::from_millis(200);

/// The bounds on a server's suggested poll interval.
const POLL_BOUNDS: (Duration, Duration) = (Duration::from_millis(20), Duration::from_secs(5));

/// The pending result of the remote task `task`, polled until it ends or `limit` passes.
pub(crate) fn pending(
    peer: Peer<RoleClient>,
    server: String,
    remote: String,
    task: Task,
    limit: Duration,
) -> Pending {
    // Made before the future: dropping the future unpolled (a context cancelled at once)
    // still cancels the task.
    let guard = CancelOnDrop {
        peer: peer.clone(),
        task_id: Some(task.task_id.clone()),
    };
    Pending::new(async move {
        let mut guard = guard;
        let polled = tokio::time::timeout(limit, poll(&peer, &server, &remote, task)).await;
        match polled {
            Ok(result) => {
                guard.task_id = None;
                result
            }
            // The guard cancels the task on the server.
            Err(_) => Err(refusal::timed_out(limit)),
        }
    })
}

async fn poll(
    peer: &Peer<RoleClient>,
    server: &str,
    remote: &str,
    task: Task,
) -> Result<Value, ToolError> {
    let id = task.task_id;
    let refused = |why: &str| outcome::remote_error(server, remote, why);
    let mut interval = interval_of(task.poll_interval_ms);
    loop {
        tokio::time::sleep(interval).await;
        let got = peer
            .get_task(GetTaskParams::new(id.clone()))
            .await
            .map_err(|e| match e {
                rmcp::ServiceError::McpError(e) => refused(&e.message),
                _ => unavailable(
                    server,
                    &format!("stopped while running the task of `{remote}`"),
                ),
            })?;
        interval = interval_of(got.task.task.poll_interval_ms);
        match got.task.payload {
            TaskPayload::Working => {}
            TaskPayload::Completed { result } => {
                let result: CallToolResult = serde_json::from_value(Value::Object(result))
                    .map_err(|e| {
                        refused(&format!("the task's result is not a tool result: {e}"))
                    })?;
                return outcome::value_of(server, remote, result);
            }
            TaskPayload::Failed { error } => {
                let message = error
                    .get("message")
                    .and_then(Value::as_str)
                    .map_or_else(|| Value::Object(error.clone()).to_string(), str::to_owned);
                return Err(refused(&message));
            }
            TaskPayload::Cancelled => return Err(refusal::cancelled()),
            TaskPayload::InputRequired { .. } => {
                return Err(refused(
                    "the task asked for more input (elicitation), which this bridge cannot give",
                ));
            }
            _ => return Err(refused("the task is in a state this client does not know")),
        }
    }
}

fn interval_of(ms: Option<u64>) -> Duration {
    ms.map_or(DEFAULT_POLL, Duration::from_millis)
        .clamp(POLL_BOUNDS.0, POLL_BOUNDS.1)
}

/// Sends `tasks/cancel` when the poll is dropped before the task ended (the call's context
/// was cancelled, or it ran past its timeout).
struct CancelOnDrop {
    peer: Peer<RoleClient>,
    task_id: Option<String>,
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        let Some(id) = self.task_id.take() else {
            return;
        };
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let peer = self.peer.clone();
        runtime.spawn(async move {
            let cancel = peer.cancel_task(CancelTaskParams::new(id.clone()));
            match tokio::time::timeout(Duration::from_secs(5), cancel).await {
                Ok(Ok(())) => {}
                Ok(Err(e)) => {
                    tracing::debug!(target: "goondan::mcp", task = %id, "`tasks/cancel` failed: {e}");
                }
                Err(_) => tracing::debug!(target: "goondan::mcp", task = %id, "`tasks/cancel` timed out"),
            }
        });
    }
}
