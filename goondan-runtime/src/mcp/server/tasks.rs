//! Pending results as MCP tasks (the `io.modelcontextprotocol/tasks` extension): one concept
//! seen from two sides. A `tools/call` whose result is pending (RES-2) answers with a task
//! whose id is the pending handle; `tasks/get` polls the handle; its completion is the call's
//! result; `tasks/cancel` cancels the call's context, which stops the work.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

use rmcp::ErrorData;
use rmcp::model::{DetailedTask, JsonObject, Task, TaskPayload, TaskStatus};
use rmcp::task_manager::current_timestamp;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::call::call_tool_result;
use super::caller::McpCaller;
use crate::calls::pending::{PendingResults, PendingState};
use crate::lock;
use crate::tools::output_schema::OutputSchema;
use crate::tools::result::ToolCallResult;

/// How often a client is asked to poll, in milliseconds.
pub(super) const POLL_INTERVAL_MS: u64 = 250;

/// How many tasks are remembered; the oldest finished ones are forgotten first.
const MAX_TASKS: usize = 1024;

struct Entry {
    cancel: CancellationToken,
    /// The call's client, holding the task's questions.
    questions: Arc<McpCaller>,
    created_at: String,
    output_schema: Option<Arc<OutputSchema>>,
    /// The result, once taken from the pending results.
    finished: Option<ToolCallResult>,
    cancelled: bool,
}

/// The tasks of a server, keyed by pending handle.
#[derive(Default)]
pub(super) struct TaskTable {
    entries: Mutex<HashMap<String, Entry>>,
    order: Mutex<Vec<String>>,
}

impl TaskTable {
    /// Tracks the pending `handle` as a task; `cancel` stops its work.
    pub(super) fn create(
        &self,
        handle: &str,
        cancel: CancellationToken,
        output_schema: Option<Arc<OutputSchema>>,
        questions: Arc<McpCaller>,
    ) -> Task {
        let now = current_timestamp();
        let task = Task::new(handle, TaskStatus::Working, now.clone(), now.clone())
            .with_poll_interval_ms(POLL_INTERVAL_MS);
        let mut entries = lock(&self.entries);
        entries.insert(
            handle.to_owned(),
            Entry {
                cancel,
                questions,
                created_at: now,
                output_schema,
                finished: None,
                cancelled: false,
            },
        );
        let mut order = lock(&self.order);
        order.push(handle.to_owned());
        if order.len() > MAX_TASKS {
            let old = order.remove(0);
            entries.remove(&old);
        }
        task
    }

    /// Where the task stands: polls its pending handle.
    pub(super) fn get(
        &self,
        task_id: &str,
        pending: &PendingResults,
    ) -> Result<DetailedTask, ErrorData> {
        let mut entries = lock(&self.entries);
        let entry = entries.get_mut(task_id).ok_or_else(|| unknown(task_id))?;
        if entry.finished.is_none() && !entry.cancelled {
            match pending.poll(task_id) {
                Some(PendingState::Running) => {}
                Some(PendingState::Finished(_)) => entry.finished = pending.take(task_id),
                None => {
                    return Err(ErrorData::internal_error(
                        format!("the result of task `{task_id}` is no longer kept"),
                        None,
                    ));
                }
            }
        }
        let now = current_timestamp();
        let payload = match (&entry.finished, entry.cancelled) {
            (_, true) => TaskPayload::Cancelled,
            (None, false) => {
                let input_requests = entry.questions.outstanding();
                if input_requests.is_empty() {
                    TaskPayload::Working
                } else {
                    TaskPayload::InputRequired { input_requests }
                }
            }
            (Some(result), false) if crashed(result) => TaskPayload::Failed {
                error: error_object(
                    result
                        .error
                        .as_ref()
                        .map_or("the task's work failed", |e| e.message()),
                ),
            },
            (Some(result), false) => {
                let r = call_tool_result(
                    std::borrow::Cow::Borrowed(result),
                    entry.output_schema.as_deref(),
                );
                match serde_json::to_value(&r) {
                    Ok(Value::Object(o)) => TaskPayload::Completed { result: o },
                    _ => TaskPayload::Failed {
                        error: error_object("the task's result could not be serialised"),
                    },
                }
            }
        };
        let task = Task::new(task_id, payload.status(), entry.created_at.clone(), now)
            .with_poll_interval_ms(POLL_INTERVAL_MS);
        Ok(DetailedTask::new(task, payload))
    }

    /// Answers some of the task's questions (`tasks/update`).
    pub(super) fn update(
        &self,
        task_id: &str,
        responses: BTreeMap<String, Value>,
    ) -> Result<(), ErrorData> {
        let questions = {
            let entries = lock(&self.entries);
            let entry = entries.get(task_id).ok_or_else(|| unknown(task_id))?;
            Arc::clone(&entry.questions)
        };
        questions.answer(responses)
    }

    /// Cancels the task's work. A finished task stays finished.
    pub(super) fn cancel(&self, task_id: &str) -> Result<(), ErrorData> {
        let mut entries = lock(&self.entries);
        let entry = entries.get_mut(task_id).ok_or_else(|| unknown(task_id))?;
        if entry.finished.is_none() {
            entry.cancelled = true;
            entry.cancel.cancel();
        }
        Ok(())
    }
}

/// Whether the work broke rather than the tool reporting a failure: such a task has
/// `failed`, while a tool's own error is a `completed` task whose result is an error.
fn crashed(result: &ToolCallResult) -> bool {
    matches!(
        result.error_code(),
        Some(crate::tools::error::codes::PANIC | crate::tools::error::codes::CANCELLED)
    ) && result.is_error()
}

fn unknown(task_id: &str) -> ErrorData {
    ErrorData::invalid_params(format!("unknown task `{task_id}`"), None)
}

fn error_object(message: &str) -> JsonObject {
    JsonObject::from_iter([
        ("code".into(), Value::from(-32603)),
        ("message".into(), Value::from(message)),
    ])
}
