//! rmcp's `ServerHandler` over the served catalog and the executor: `tools/list`,
//! `tools/call`, `tasks/get`, `tasks/cancel`, and `list_changed` announcements.

use std::future::Future;
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CancelTaskParams, CreateTaskResult, GetTaskParams,
    GetTaskResult, ListToolsResult, PaginatedRequestParams, ProgressNotificationParam,
    ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::{NotificationContext, RequestContext};
use rmcp::{ErrorData, Peer, RoleServer, ServerHandler};
use serde_json::Value;
use tokio::sync::mpsc::UnboundedReceiver;
use tokio_util::sync::CancellationToken;

use super::{McpServer, call, elicitation, listing, progress};
use crate::context::ToolContext;
use crate::help_url::help_url_base;
use crate::result::{ToolCall, ToolCallResult, ToolStatus};

impl ServerHandler for McpServer {
    fn get_info(&self) -> ServerConfig {
        let capabilities = ServerCapabilities::builder()
            .enable_tools()
            .enable_tool_list_changed()
            .enable_tasks()
            .build();
        let mut config = ServerConfig::new(capabilities).with_server_info(self.shared.info.clone());
        if let Some(text) = &self.shared.instructions {
            config = config.with_instructions(text.clone());
        }
        config
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let catalog = self.catalog();
        let cursor = request.and_then(|r| r.cursor);
        listing::page(
            &catalog,
            cursor.as_deref(),
            self.shared.page_size,
            &self.shared.renames,
        )
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        let catalog = self.catalog();
        let item = catalog.get(self.shared.renames.goondan(name))?;
        Some(listing::tool_of(item, &self.shared.renames))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        self.call(request, context).await
    }

    async fn get_task(
        &self,
        request: GetTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, ErrorData> {
        let task = self
            .shared
            .tasks
            .get(&request.task_id, self.executor().pending())?;
        Ok(GetTaskResult::new(task))
    }

    async fn cancel_task(
        &self,
        request: CancelTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.shared.tasks.cancel(&request.task_id)
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        self.announce_changes(context.peer);
    }
}

impl McpServer {
    /// One `tools/call`: the published name mapped back, a context of its own (cancelled by
    /// `notifications/cancelled`, reporting progress when the client asked), the executor,
    /// then the result as MCP sees it.
    async fn call(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let shared = &self.shared;
        let published = request.name.to_string();
        let name = shared.renames.goondan(&published).to_owned();
        let catalog = self.catalog();
        let args = request.arguments.map_or(Value::Null, Value::Object);
        let cancel = CancellationToken::new();
        let mut builder = ToolContext::builder(&shared.workdir)
            .agent_name(&shared.agent_name)
            .cancellation(cancel.clone());
        let mut reports = None;
        if let Some(token) = context.meta.get_progress_token() {
            let (sink, rx) = progress::queue(token);
            builder = builder.progress(sink);
            reports = Some(rx);
        }
        let ctx = builder.build();
        let call = ToolCall::new(format!("mcp-{}", context.id), name.clone(), args);
        let executor = self.executor();
        let result = drive(
            elicitation::with_client(context.peer.clone(), executor.execute(call, &ctx, &catalog)),
            &context,
            &cancel,
            reports.as_mut(),
        )
        .await;
        drop(ctx);
        if call::is_unknown_tool(&result) {
            return Err(call::unknown_tool(&published, result.error.as_ref()));
        }
        let output_schema = catalog.get(&name).and_then(|i| i.output_schema.clone());
        let Some(handle) = result.handle.clone().filter(|_| result.is_pending()) else {
            return Ok(call::call_tool_result(&result, output_schema.as_deref()).into());
        };
        let client_has_tasks = context
            .client_capabilities()
            .is_some_and(|c| c.supports_tasks());
        if client_has_tasks {
            let task = shared.tasks.create(&handle, cancel, output_schema);
            if let Some(rx) = reports {
                progress::forward_rest(context.peer.clone(), rx);
            }
            return Ok(CallToolResponse::Task(CreateTaskResult::new(task)));
        }
        // A client without tasks waits, bounded by the export's timeout.
        let limit = executor
            .registry()
            .get(&name)
            .and_then(|e| e.export().timeout())
            .unwrap_or(shared.pending_wait);
        let pending = executor.pending().clone();
        let waited = drive(
            tokio::time::timeout(limit, pending.wait(&handle)),
            &context,
            &cancel,
            reports.as_mut(),
        )
        .await;
        let finished = match waited {
            Ok(Some(done)) => done,
            Ok(None) => gone(&result, &handle),
            Err(_) => {
                cancel.cancel();
                timed_out(&result, limit, &name)
            }
        };
        Ok(call::call_tool_result(&finished, output_schema.as_deref()).into())
    }

    /// Sends `notifications/tools/list_changed` to `peer` each time the registry grows and
    /// the served catalog's names change, until the peer is gone.
    fn announce_changes(&self, peer: Peer<RoleServer>) {
        let this = self.clone();
        let mut changes = self.executor().registry().subscribe_changes();
        changes.mark_unchanged();
        tokio::spawn(async move {
            while changes.changed().await.is_ok() {
                let (changed, _) = this.current();
                if changed && peer.notify_tool_list_changed().await.is_err() {
                    break;
                }
                if peer.is_transport_closed() {
                    break;
                }
            }
        });
    }
}

/// Runs `work` to its end while forwarding progress reports and turning the request's
/// cancellation into the call's. Reports queued when the work ends are sent before it
/// returns, so they reach the client before the result.
async fn drive<F: Future>(
    work: F,
    context: &RequestContext<RoleServer>,
    cancel: &CancellationToken,
    mut reports: Option<&mut UnboundedReceiver<ProgressNotificationParam>>,
) -> F::Output {
    let mut work = std::pin::pin!(work);
    let output = loop {
        let next_report = async {
            match reports.as_deref_mut() {
                Some(rx) => rx.recv().await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            biased;
            out = &mut work => break out,
            () = context.ct.cancelled(), if !cancel.is_cancelled() => cancel.cancel(),
            Some(param) = next_report => progress::send(&context.peer, param).await,
        }
    };
    if let Some(rx) = reports {
        while let Ok(param) = rx.try_recv() {
            progress::send(&context.peer, param).await;
        }
    }
    output
}

/// The error of a pending call whose result vanished (evicted before it was read).
fn gone(submitted: &ToolCallResult, handle: &str) -> ToolCallResult {
    let err = crate::ToolError::new(format!("the result of `{handle}` is no longer kept"))
        .with_code(crate::error::codes::UNKNOWN_HANDLE)
        .finish(crate::error::DEFAULT_ERROR_MESSAGE_LIMIT, &help_url_base());
    ToolCallResult::error(&submitted.tool_call_id, &submitted.tool_name, err)
}

/// The error of a pending call that did not finish in time for a client without tasks.
fn timed_out(submitted: &ToolCallResult, limit: Duration, name: &str) -> ToolCallResult {
    let err = crate::refusal::timed_out(limit)
        .finish(crate::error::DEFAULT_ERROR_MESSAGE_LIMIT, &help_url_base());
    tracing::warn!(
        tool = name,
        "pending result not ready within {} ms",
        limit.as_millis()
    );
    let mut r = ToolCallResult::error(&submitted.tool_call_id, &submitted.tool_name, err);
    r.status = ToolStatus::Error;
    r
}
