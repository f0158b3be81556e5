//! The GenAI metrics, read off the spans: when a span with `gen_ai.operation.name` closes, its
//! duration is a `gen_ai.client.operation.duration` measurement, and a model request's token
//! counts are `gen_ai.client.token.usage` measurements, with the conventions' attributes. One
//! description of an operation (its span) gives both its trace and its metrics.

use std::fmt;
use std::time::Instant;

use opentelemetry::KeyValue;
use opentelemetry::metrics::{Histogram, Meter};
use tracing::Subscriber;
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing_subscriber::Layer;
use tracing_subscriber::layer::Context;
use tracing_subscriber::registry::LookupSpan;

/// The field that marks a span as a GenAI operation.
const OPERATION: &str = "gen_ai.operation.name";

/// The buckets the conventions advise for `gen_ai.client.operation.duration`, in seconds.
const DURATION_BUCKETS: [f64; 14] = [
    0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92,
];

/// The buckets the conventions advise for `gen_ai.client.token.usage`: the powers of 4, from
/// 1 to 4^13.
fn token_buckets() -> Vec<f64> {
    (0..14).map(|i| 4f64.powi(i)).collect()
}

/// The layer that measures GenAI operations.
pub(super) struct GenAiMetrics {
    duration: Histogram<f64>,
    tokens: Histogram<u64>,
}

impl GenAiMetrics {
    pub(super) fn new(meter: &Meter) -> Self {
        Self {
            duration: meter
                .f64_histogram("gen_ai.client.operation.duration")
                .with_unit("s")
                .with_description("GenAI operation duration")
                .with_boundaries(DURATION_BUCKETS.to_vec())
                .build(),
            tokens: meter
                .u64_histogram("gen_ai.client.token.usage")
                .with_unit("{token}")
                .with_description("Number of input and output tokens used")
                .with_boundaries(token_buckets())
                .build(),
        }
    }
}

/// The text fields a measurement keeps, as its attributes, in this order.
const TEXT_FIELDS: [&str; 6] = [
    OPERATION,
    "gen_ai.provider.name",
    "gen_ai.request.model",
    "gen_ai.tool.name",
    "gen_ai.agent.name",
    "error.type",
];

/// What a measured span told so far.
#[derive(Default)]
struct Operation {
    started: Option<Instant>,
    /// The values of [`TEXT_FIELDS`], by position.
    texts: [Option<String>; TEXT_FIELDS.len()],
    input_tokens: Option<u64>,
    output_tokens: Option<u64>,
}

impl Operation {
    fn attributes(&self) -> Vec<KeyValue> {
        TEXT_FIELDS
            .into_iter()
            .zip(&self.texts)
            .filter_map(|(key, value)| value.as_ref().map(|v| KeyValue::new(key, v.clone())))
            .collect()
    }

    /// Where a text field of this name is kept; `None` for the fields the metrics ignore.
    fn text_slot(&mut self, field: &Field) -> Option<&mut Option<String>> {
        let at = TEXT_FIELDS.iter().position(|name| *name == field.name())?;
        self.texts.get_mut(at)
    }
}

impl Visit for Operation {
    fn record_str(&mut self, field: &Field, value: &str) {
        if let Some(slot) = self.text_slot(field) {
            *slot = Some(value.to_owned());
        }
    }

    fn record_u64(&mut self, field: &Field, value: u64) {
        match field.name() {
            "gen_ai.usage.input_tokens" => self.input_tokens = Some(value),
            "gen_ai.usage.output_tokens" => self.output_tokens = Some(value),
            _ => {}
        }
    }

    fn record_i64(&mut self, field: &Field, value: i64) {
        if let Ok(value) = u64::try_from(value) {
            self.record_u64(field, value);
        }
    }

    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        // `%value` fields arrive here; only the text fields are kept, written once.
        if let Some(slot) = self.text_slot(field) {
            *slot = Some(format!("{value:?}"));
        }
    }
}

impl<S> Layer<S> for GenAiMetrics
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        if attrs.metadata().fields().field(OPERATION).is_none() {
            return;
        }
        let Some(span) = ctx.span(id) else { return };
        let mut op = Operation {
            started: Some(Instant::now()),
            ..Operation::default()
        };
        attrs.record(&mut op);
        span.extensions_mut().insert(op);
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(id) else { return };
        if let Some(op) = span.extensions_mut().get_mut::<Operation>() {
            values.record(op);
        }
    }

    fn on_close(&self, id: Id, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(&id) else { return };
        let Some(op) = span.extensions_mut().remove::<Operation>() else {
            return;
        };
        let Some(started) = op.started else { return };
        let attributes = op.attributes();
        self.duration
            .record(started.elapsed().as_secs_f64(), &attributes);
        for (kind, count) in [("input", op.input_tokens), ("output", op.output_tokens)] {
            if let Some(count) = count {
                let mut with_kind = attributes.clone();
                with_kind.push(KeyValue::new("gen_ai.token.type", kind));
                self.tokens.record(count, &with_kind);
            }
        }
    }
}
