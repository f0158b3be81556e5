//! The tracing events of a tool call's life: `tool.called`, then `tool.completed`,
//! `tool.failed` or `tool.submitted` (a pending result), each with the call's trace and span.

use crate::tools::context::ToolContext;
use crate::tools::result::ToolCallResult;

/// Emits `tool.called` for the call `ctx` belongs to.
pub(crate) fn emit_called(ctx: &ToolContext) {
    tracing::info!(
        name: "tool.called",
        target: "goondan::tool",
        trace_id = ctx.trace_id(),
        span_id = ctx.logger().id().map(|id| id.into_u64()),
        tool_call_id = ctx.tool_call_id(),
        "tool.called"
    );
}

/// Emits `tool.completed` or `tool.failed` (or `tool.submitted` for a pending result).
/// `trace_id` and the span id are read only when the event is enabled (the macros evaluate
/// fields lazily): a context makes its trace id when first asked.
pub(crate) fn emit_finished<'a>(
    result: &ToolCallResult,
    handle: Option<&str>,
    trace_id: impl FnOnce() -> &'a str,
) {
    let span_id = || tracing::Span::current().id().map(|id| id.into_u64());
    match &result.error {
        Some(err) => tracing::warn!(
            name: "tool.failed",
            target: "goondan::tool",
            trace_id = trace_id(),
            span_id = span_id(),
            tool = %result.tool_name,
            tool_call_id = %result.tool_call_id,
            handle,
            code = err.code(),
            "tool.failed"
        ),
        None if result.is_pending() => tracing::info!(
            name: "tool.submitted",
            target: "goondan::tool",
            trace_id = trace_id(),
            span_id = span_id(),
            tool = %result.tool_name,
            tool_call_id = %result.tool_call_id,
            handle = result.handle.as_deref(),
            "tool.submitted"
        ),
        None => tracing::info!(
            name: "tool.completed",
            target: "goondan::tool",
            trace_id = trace_id(),
            span_id = span_id(),
            tool = %result.tool_name,
            tool_call_id = %result.tool_call_id,
            handle,
            "tool.completed"
        ),
    }
}
