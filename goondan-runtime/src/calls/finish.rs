//! The one place a call's result is finished before anyone outside the executor sees it: its
//! error cut to the resource's limit (RES-4, RES-8) and pointed at its help page (RES-7), and
//! the call's `tool.completed` / `tool.failed` / `tool.submitted` event. The executor, the
//! pending store and the MCP server all finish their results here.

use crate::calls::events::emit_finished;
use crate::tools::context::ToolContext;
use crate::tools::help_url;
use crate::tools::result::ToolCallResult;

/// How a result's error is finished.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Rules<'a> {
    /// How many characters the error's message keeps (the resource's `errorMessageLimit`).
    pub(crate) limit: usize,
    /// Where runtime codes' help pages are: the executor's own base, or `None` for the
    /// process's ([`help_url::help_url_base`], read only when there is an error).
    pub(crate) help_base: Option<&'a str>,
}

/// Which event tells that the result is finished.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Announce<'a> {
    /// The answer of a call, in the call's context.
    Call(&'a ToolContext),
    /// The completion of a submitted call, under its handle (RES-2).
    Pending {
        /// The handle the call was submitted under.
        handle: &'a str,
        /// The trace the submitting call belonged to.
        trace_id: &'a str,
    },
    /// No event: the call was announced already (a late or lost pending answer the MCP server
    /// reports to a client without tasks).
    #[cfg_attr(not(feature = "mcp"), allow(dead_code))]
    Silent,
}

/// Finishes `result` in place: its error, if any, cut and given a help URL
/// ([`ToolError::finish`](crate::ToolError::finish)), then announced. Finishing twice changes
/// nothing: a cut message is short enough and a help URL is kept.
pub(crate) fn finish(result: &mut ToolCallResult, rules: Rules<'_>, announce: Announce<'_>) {
    if let Some(err) = result.error.take() {
        result.error = Some(match rules.help_base {
            Some(base) => err.finish(rules.limit, base),
            None => err.finish(rules.limit, &help_url::help_url_base()),
        });
    }
    if let (Some(err), Announce::Call(_) | Announce::Pending { .. }) = (&result.error, announce) {
        // The call's span is the current one: its OpenTelemetry span says why it failed.
        let span = tracing::Span::current();
        span.record("error.type", err.code());
        span.record("otel.status_code", "ERROR");
    }
    match announce {
        Announce::Call(ctx) => emit_finished(result, None, || ctx.trace_id()),
        Announce::Pending { handle, trace_id } => {
            emit_finished(result, Some(handle), || trace_id);
        }
        Announce::Silent => {}
    }
}
