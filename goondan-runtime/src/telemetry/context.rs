//! The W3C trace context (`traceparent`) of the current span, and a span that continues one
//! received from elsewhere. Without the `otel` feature, or without a [`Telemetry`] layer, there
//! is no context to send and none is followed.
//!
//! [`Telemetry`]: crate::telemetry

/// The `traceparent` of the current span, when its spans are exported: what a request to
/// another process carries so that its spans join this trace.
///
/// ```
/// // Without a telemetry layer there is no trace to continue elsewhere.
/// assert_eq!(goondan_runtime::telemetry::traceparent(), None);
/// ```
pub fn traceparent() -> Option<String> {
    #[cfg(feature = "otel")]
    if super::enabled() {
        return otel::current();
    }
    None
}

/// Makes `span` continue the trace of `traceparent` (received from another process), before
/// the span is first entered. A `traceparent` that is not one (any text can arrive) is ignored:
/// the span starts a trace of its own.
pub fn continue_trace(span: &tracing::Span, traceparent: &str) {
    #[cfg(feature = "otel")]
    if super::enabled() {
        otel::follow(span, traceparent);
    }
    #[cfg(not(feature = "otel"))]
    let _ = (span, traceparent);
}

#[cfg(feature = "otel")]
mod otel {
    use std::collections::HashMap;

    use opentelemetry::propagation::TextMapPropagator;
    use opentelemetry::trace::TraceContextExt;
    use opentelemetry_sdk::propagation::TraceContextPropagator;
    use tracing_opentelemetry::OpenTelemetrySpanExt;

    /// The header (and `_meta` key) of the W3C trace context.
    const TRACEPARENT: &str = "traceparent";

    pub(super) fn current() -> Option<String> {
        let cx = tracing::Span::current().context();
        if !cx.span().span_context().is_valid() {
            return None;
        }
        let mut carrier = HashMap::with_capacity(2);
        TraceContextPropagator::new().inject_context(&cx, &mut carrier);
        carrier.remove(TRACEPARENT)
    }

    pub(super) fn follow(span: &tracing::Span, traceparent: &str) {
        let carrier = HashMap::from([(TRACEPARENT.to_owned(), traceparent.to_owned())]);
        let cx = TraceContextPropagator::new().extract(&carrier);
        if !cx.span().span_context().is_valid() {
            tracing::debug!(target: "goondan::telemetry", bytes = traceparent.len(), "not a W3C traceparent; a new trace starts");
            return;
        }
        if let Err(e) = span.set_parent(cx) {
            tracing::debug!(target: "goondan::telemetry", error = %e, "the span's trace was not continued");
        }
    }
}
