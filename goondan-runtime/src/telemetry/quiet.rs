//! Exporters that fail quietly: an OTLP endpoint that is down or slow costs one warning per
//! outage (target `goondan::telemetry`), not one per batch, and the batch is dropped. The
//! exports run on the SDK's own threads, so a call never waits for them.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::metrics::Temporality;
use opentelemetry_sdk::metrics::data::ResourceMetrics;
use opentelemetry_sdk::metrics::exporter::PushMetricExporter;
use opentelemetry_sdk::trace::{SpanData, SpanExporter};

/// An exporter whose failures are told once per outage.
#[derive(Debug)]
pub(super) struct Quiet<E> {
    inner: E,
    /// What it exports, for the warning: `spans` or `metrics`.
    signal: &'static str,
    /// Whether the last export failed (the warning was given).
    failing: AtomicBool,
}

impl<E> Quiet<E> {
    pub(super) fn new(inner: E, signal: &'static str) -> Self {
        Self {
            inner,
            signal,
            failing: AtomicBool::new(false),
        }
    }

    /// Tells the first failure of an outage, and its end.
    fn told(&self, result: OTelSdkResult, items: usize) -> OTelSdkResult {
        match &result {
            Ok(()) => {
                if self.failing.swap(false, Ordering::Relaxed) {
                    tracing::info!(target: "goondan::telemetry", signal = self.signal, "the OTLP endpoint takes telemetry again");
                }
            }
            Err(e) => {
                if !self.failing.swap(true, Ordering::Relaxed) {
                    tracing::warn!(
                        target: "goondan::telemetry",
                        signal = self.signal,
                        dropped = items,
                        error = %e,
                        "the OTLP endpoint did not take the {}; they are dropped until it does (calls go on)",
                        self.signal
                    );
                }
            }
        }
        result
    }
}

impl<E: SpanExporter> SpanExporter for Quiet<E> {
    async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
        let items = batch.len();
        let result = self.inner.export(batch).await;
        self.told(result, items)
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.inner.shutdown_with_timeout(timeout)
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.inner.force_flush()
    }

    fn set_resource(&mut self, resource: &opentelemetry_sdk::Resource) {
        self.inner.set_resource(resource);
    }
}

impl<E: PushMetricExporter> PushMetricExporter for Quiet<E> {
    async fn export(&self, metrics: &ResourceMetrics) -> OTelSdkResult {
        let result = self.inner.export(metrics).await;
        self.told(result, 1)
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.inner.force_flush()
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.inner.shutdown_with_timeout(timeout)
    }

    fn temporality(&self) -> Temporality {
        self.inner.temporality()
    }
}
