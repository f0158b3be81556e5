//! OpenTelemetry: tool calls, model requests and Turns as spans in the
//! [GenAI semantic conventions](https://opentelemetry.io/docs/specs/semconv/gen-ai/), their
//! durations and token usage as metrics, exported over OTLP when configured and off otherwise.
//!
//! The runtime describes its work with `tracing` spans whose fields carry the conventions'
//! attribute names; `Telemetry` (cargo feature `otel`) turns them into OpenTelemetry spans and
//! metrics and sends them over OTLP/HTTP (protobuf):
//!
//! | span | name | attributes |
//! |---|---|---|
//! | a Turn | `invoke_agent {agent}` | `gen_ai.operation.name`, `gen_ai.agent.name` |
//! | a model request (`provider::ProviderModel`) | `chat {model}` | `gen_ai.provider.name`, `gen_ai.request.model`, `gen_ai.usage.input_tokens`, `gen_ai.usage.output_tokens`, `error.type` |
//! | a tool call | `execute_tool {tool}` | `gen_ai.tool.name`, `gen_ai.tool.call.id`, `gen_ai.tool.type`, `error.type` (the error's code) |
//! | an MCP `tools/call` served | `tools/call {tool}` | `mcp.method.name`, `gen_ai.tool.name`, `jsonrpc.request.id` |
//!
//! Each finished operation is also a `gen_ai.client.operation.duration` measurement (seconds),
//! and the tokens of a model request are `gen_ai.client.token.usage` measurements.
//!
//! The W3C trace context travels with the work, so one trace spans every process of a run: an
//! agent's request or one-way event carries `traceparent` in the IPC frame to the agent it
//! addresses (and in a NATS header across machines), a bridged MCP server gets it in the request's `_meta`
//! (SEP-414), and our MCP server continues the trace a client sends it the same way.
//!
//! Exporting never blocks a call: spans wait in a bounded queue for the exporter's own thread,
//! and an endpoint that is down or slow costs one warning (`goondan::telemetry`) until it
//! answers again; spans it could not take are dropped.
//!
//! ```no_run
//! # #[cfg(feature = "otel")]
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use goondan_runtime::telemetry::Telemetry;
//! use tracing_subscriber::layer::SubscriberExt;
//! use tracing_subscriber::util::SubscriberInitExt;
//!
//! // `OTEL_EXPORTER_OTLP_ENDPOINT` (and the other standard variables) configure the export;
//! // without an endpoint, `from_env` is `None` and nothing is exported.
//! let telemetry = Telemetry::from_env()?;
//! tracing_subscriber::registry()
//!     .with(telemetry.as_ref().map(Telemetry::layer))
//!     .init();
//! // ... run agents, serve MCP ...
//! if let Some(telemetry) = telemetry {
//!     telemetry.shutdown(); // the last spans and metrics, sent before the process ends
//! }
//! # Ok(())
//! # }
//! # #[cfg(not(feature = "otel"))]
//! # fn main() {}
//! ```

mod context;
#[cfg(feature = "otel")]
mod metrics;
#[cfg(feature = "otel")]
mod pipeline;
#[cfg(feature = "otel")]
mod quiet;

use std::sync::atomic::{AtomicBool, Ordering};

pub use self::context::{continue_trace, traceparent};
#[cfg(feature = "otel")]
pub use self::pipeline::{Telemetry, TelemetryBuilder, TelemetryError, shutdown};

/// Whether a `Telemetry` layer was made in this process: the spans only an exporter reads
/// (the MCP server's per-request span) are made only then.
static LAYERED: AtomicBool = AtomicBool::new(false);

/// Whether spans are exported from this process.
pub fn enabled() -> bool {
    LAYERED.load(Ordering::Relaxed)
}
