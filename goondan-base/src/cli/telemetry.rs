//! What the `goondan` program says about itself: log lines on stderr (`RUST_LOG`; without it,
//! only telemetry warnings), and OpenTelemetry spans and metrics over OTLP when the standard
//! variables name an endpoint (`OTEL_EXPORTER_OTLP_ENDPOINT`; see
//! [`goondan_runtime::telemetry`]). Agent processes inherit the variables, so every process of
//! a run exports into the same trace.

use std::io::{IsTerminal, Write};

use goondan_runtime::telemetry::Telemetry;
use tracing_subscriber::Layer;
use tracing_subscriber::filter::{EnvFilter, LevelFilter};
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;

/// The log lines shown when `RUST_LOG` says nothing: an OTLP endpoint that does not answer.
const QUIET: &str = "goondan::telemetry=warn";

/// Sets up the process's subscriber; an OpenTelemetry setup that fails is told on `err` and
/// leaves the export off.
pub(crate) fn start(err: &mut dyn Write) {
    let telemetry = Telemetry::from_env().unwrap_or_else(|e| {
        let _ = writeln!(err, "warning: OpenTelemetry export is off: {e}");
        None
    });
    let lines = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(QUIET));
    let fmt = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .with_filter(lines);
    // Spans and the events in them at INFO and above: the span events of a call, never the
    // DEBUG detail.
    let exported = telemetry
        .as_ref()
        .map(|t| t.layer().with_filter(LevelFilter::INFO));
    // A program that set its own subscriber first keeps it.
    let _ = tracing_subscriber::registry()
        .with(exported)
        .with(fmt)
        .try_init();
    if let Some(telemetry) = telemetry {
        telemetry.install();
    }
}
