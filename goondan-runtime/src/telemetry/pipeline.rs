//! The export pipeline: an OTLP/HTTP span exporter behind a batch processor, an OTLP metric
//! exporter behind a periodic reader, both configured by the standard `OTEL_*` variables, and
//! the `tracing` layer that feeds them.

use std::sync::Mutex;
use std::sync::atomic::Ordering;
use std::time::Duration;

use opentelemetry::KeyValue;
use opentelemetry::metrics::MeterProvider as _;
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::WithExportConfig;
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::metrics::SdkMeterProvider;
use opentelemetry_sdk::trace::SdkTracerProvider;
use tracing::Subscriber;
use tracing_subscriber::Layer;
use tracing_subscriber::registry::LookupSpan;

use super::metrics::GenAiMetrics;
use super::quiet::Quiet;

/// The instrumentation scope of our spans and metrics.
const SCOPE: &str = "goondan";

/// The service name when `OTEL_SERVICE_NAME` sets none.
const DEFAULT_SERVICE: &str = "goondan";

/// How long [`Telemetry::shutdown`] waits for the last export.
const SHUTDOWN_WAIT: Duration = Duration::from_secs(3);

/// The variables that name an endpoint: one of them turns the export on.
const ENDPOINT_VARS: [&str; 3] = [
    "OTEL_EXPORTER_OTLP_ENDPOINT",
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
    "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT",
];

/// The pipeline [`Telemetry::install`] made this process's, for [`shutdown`].
static INSTALLED: Mutex<Option<Telemetry>> = Mutex::new(None);

/// Why telemetry could not be set up.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TelemetryError {
    /// The endpoint is not an `http` or `https` URL.
    #[error("the OTLP endpoint `{endpoint}` is not an http(s) URL: {reason}")]
    Endpoint {
        /// The endpoint as given.
        endpoint: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A protocol other than OTLP/HTTP with protobuf was asked for.
    #[error(
        "OTEL_EXPORTER_OTLP_PROTOCOL `{0}` is not supported: goondan exports OTLP over HTTP with protobuf (`http/protobuf`)"
    )]
    Protocol(String),
    /// The OTLP exporter could not be built.
    #[error("the OTLP exporter could not be built: {0}")]
    Exporter(String),
}

/// The OpenTelemetry pipeline of a process: spans and metrics exported over OTLP/HTTP.
///
/// Cloning is cheap: clones share the pipeline.
#[derive(Debug, Clone)]
pub struct Telemetry {
    tracer: SdkTracerProvider,
    meter: SdkMeterProvider,
}

/// Builds a [`Telemetry`]; what it leaves unset comes from the standard `OTEL_*` variables.
#[derive(Debug, Default)]
#[must_use]
pub struct TelemetryBuilder {
    endpoint: Option<String>,
    service_name: Option<String>,
    timeout: Option<Duration>,
}

impl TelemetryBuilder {
    /// The OTLP/HTTP base URL, such as `http://127.0.0.1:4318`: spans go to `/v1/traces` and
    /// metrics to `/v1/metrics` under it.
    pub fn endpoint(mut self, url: impl Into<String>) -> Self {
        self.endpoint = Some(url.into());
        self
    }

    /// The `service.name` of the process (default: `OTEL_SERVICE_NAME`, else `goondan`).
    pub fn service_name(mut self, name: impl Into<String>) -> Self {
        self.service_name = Some(name.into());
        self
    }

    /// How long one export may take (default: `OTEL_EXPORTER_OTLP_TIMEOUT`, else 10 s).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// Builds the pipeline. Exports start on the SDK's own threads.
    pub fn build(self) -> Result<Telemetry, TelemetryError> {
        if let Some(protocol) = std::env::var("OTEL_EXPORTER_OTLP_PROTOCOL")
            .ok()
            .filter(|p| !p.is_empty() && p != "http/protobuf")
        {
            return Err(TelemetryError::Protocol(protocol));
        }
        let bases = match &self.endpoint {
            Some(e) => vec![e.clone()],
            None => ENDPOINT_VARS
                .iter()
                .filter_map(|v| std::env::var(v).ok())
                .filter(|e| !e.is_empty())
                .collect(),
        };
        for endpoint in &bases {
            check_endpoint(endpoint)?;
        }
        let resource = self.resource();
        // The exporters' HTTP client is reqwest, with TLS when a feature that needs it is on.
        #[cfg(any(feature = "mcp", feature = "providers", feature = "nats"))]
        crate::tls::install_crypto_provider();
        let spans = opentelemetry_otlp::SpanExporter::builder().with_http();
        let spans = self
            .export_config(spans, "v1/traces")
            .build()
            .map_err(|e| TelemetryError::Exporter(e.to_string()))?;
        let metrics = opentelemetry_otlp::MetricExporter::builder().with_http();
        let metrics = self
            .export_config(metrics, "v1/metrics")
            .build()
            .map_err(|e| TelemetryError::Exporter(e.to_string()))?;
        let tracer = SdkTracerProvider::builder()
            .with_batch_exporter(Quiet::new(spans, "spans"))
            .with_resource(resource.clone())
            .build();
        let meter = SdkMeterProvider::builder()
            .with_periodic_exporter(Quiet::new(metrics, "metrics"))
            .with_resource(resource)
            .build();
        Ok(Telemetry { tracer, meter })
    }

    /// An exporter's builder with the endpoint (its signal's `path` under the base given in
    /// code) and the timeout given in code, over what the variables say.
    fn export_config<B: WithExportConfig>(&self, mut builder: B, path: &str) -> B {
        if let Some(base) = &self.endpoint {
            builder = builder.with_endpoint(format!("{}/{path}", base.trim_end_matches('/')));
        }
        if let Some(timeout) = self.timeout {
            builder = builder.with_timeout(timeout);
        }
        builder
    }

    /// `service.name` and `process.pid`, over what `OTEL_RESOURCE_ATTRIBUTES` and
    /// `OTEL_SERVICE_NAME` say.
    fn resource(&self) -> Resource {
        let mut resource = Resource::builder()
            .with_attribute(KeyValue::new("process.pid", i64::from(std::process::id())));
        let from_env = std::env::var_os("OTEL_SERVICE_NAME").is_some_and(|n| !n.is_empty());
        match &self.service_name {
            Some(name) => resource = resource.with_service_name(name.clone()),
            None if !from_env => resource = resource.with_service_name(DEFAULT_SERVICE),
            None => {}
        }
        resource.build()
    }
}

/// An endpoint is an `http` or `https` URL with a host.
fn check_endpoint(endpoint: &str) -> Result<(), TelemetryError> {
    let bad = |reason: String| TelemetryError::Endpoint {
        endpoint: endpoint.chars().take(200).collect(),
        reason,
    };
    let url = url::Url::parse(endpoint).map_err(|e| bad(e.to_string()))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(bad(format!("the scheme is `{}`", url.scheme())));
    }
    if url.host_str().is_none_or(str::is_empty) {
        return Err(bad("it names no host".into()));
    }
    Ok(())
}

impl Telemetry {
    /// Starts a pipeline configured in code.
    pub fn builder() -> TelemetryBuilder {
        TelemetryBuilder::default()
    }

    /// The pipeline the standard variables ask for: `None` when none of
    /// `OTEL_EXPORTER_OTLP_ENDPOINT`, `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` and
    /// `OTEL_EXPORTER_OTLP_METRICS_ENDPOINT` is set, or when `OTEL_SDK_DISABLED` is `true`.
    pub fn from_env() -> Result<Option<Self>, TelemetryError> {
        let disabled =
            std::env::var("OTEL_SDK_DISABLED").is_ok_and(|v| v.trim().eq_ignore_ascii_case("true"));
        let configured = ENDPOINT_VARS
            .iter()
            .any(|v| std::env::var_os(v).is_some_and(|e| !e.is_empty()));
        if disabled || !configured {
            return Ok(None);
        }
        TelemetryBuilder::default().build().map(Some)
    }

    /// The `tracing` layer that exports spans through this pipeline and measures the GenAI
    /// operations among them. Making it turns on the spans only an exporter reads.
    pub fn layer<S>(&self) -> impl Layer<S> + use<S>
    where
        S: Subscriber + for<'a> LookupSpan<'a>,
    {
        super::LAYERED.store(true, Ordering::Relaxed);
        let spans = tracing_opentelemetry::layer()
            .with_tracer(self.tracer.tracer(SCOPE))
            .with_threads(false)
            .with_location(false);
        spans.and_then(GenAiMetrics::new(&self.meter.meter(SCOPE)))
    }

    /// Makes this the process's pipeline, which [`shutdown`] flushes (an agent process does
    /// before it exits). The first one installed stays.
    pub fn install(&self) {
        let mut installed = INSTALLED.lock().unwrap_or_else(|p| p.into_inner());
        if installed.is_none() {
            *installed = Some(self.clone());
        }
    }

    /// Sends what is still queued and stops, waiting at most a few seconds for an endpoint
    /// that does not answer.
    pub fn shutdown(&self) {
        // Both wait on their own export threads; a failure was already told once.
        let _ = self.tracer.shutdown_with_timeout(SHUTDOWN_WAIT);
        let _ = self.meter.shutdown_with_timeout(SHUTDOWN_WAIT);
    }
}

/// Flushes and stops the [installed](Telemetry::install) pipeline, if any.
pub fn shutdown() {
    let installed = INSTALLED.lock().unwrap_or_else(|p| p.into_inner()).take();
    if let Some(telemetry) = installed {
        telemetry.shutdown();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_endpoint_must_be_an_http_url_with_a_host() {
        assert!(check_endpoint("http://127.0.0.1:4318").is_ok());
        assert!(check_endpoint("https://collector.example/otlp").is_ok());
        for bad in [
            "",
            "127.0.0.1:4318",
            "grpc://host:4317",
            "file:///tmp/x",
            "http://",
        ] {
            assert!(
                matches!(check_endpoint(bad), Err(TelemetryError::Endpoint { .. })),
                "{bad}"
            );
        }
        let long = format!("nope{}", "x".repeat(10_000));
        let Err(err) = check_endpoint(&long) else {
            panic!("accepted")
        };
        assert!(
            err.to_string().len() < 400,
            "the error quotes a bounded part"
        );
    }
}
