//! The `tracing` events a test binary emits, captured by one global subscriber: each event's
//! name, its fields as text, and (field `in_span`) the names of the spans it happened in.
//!
//! The subscriber is installed once per binary, before any event, so no test races tracing's
//! process-wide callsite cache; tests running in parallel tell their events apart by their
//! own ids (a tool call id, a tool name).
#![allow(unreachable_pub)]

use std::sync::{Arc, Mutex, OnceLock};

use tracing::field::{Field, Visit};
use tracing_subscriber::layer::{Context, SubscriberExt};
use tracing_subscriber::registry::LookupSpan;

/// An event's name and its fields.
pub type Event = (String, Vec<(String, String)>);

/// The events captured so far.
#[derive(Default, Clone)]
pub struct Captured(Arc<Mutex<Vec<Event>>>);

impl Captured {
    /// A copy of every event captured so far, in order.
    pub fn events(&self) -> Vec<Event> {
        self.0.lock().map(|e| e.clone()).unwrap_or_default()
    }
}

/// The binary's capture, installed as the global subscriber on first use.
pub fn captured() -> Captured {
    static CAPTURED: OnceLock<Captured> = OnceLock::new();
    CAPTURED
        .get_or_init(|| {
            let captured = Captured::default();
            let subscriber = tracing_subscriber::registry().with(captured.clone());
            tracing::subscriber::set_global_default(subscriber)
                .expect("no other global subscriber in this test binary");
            captured
        })
        .clone()
}

/// The value of field `key` of an event.
pub fn field<'a>(fields: &'a [(String, String)], key: &str) -> Option<&'a str> {
    fields
        .iter()
        .find(|(f, _)| f == key)
        .map(|(_, v)| v.as_str())
}

struct Fields(Vec<(String, String)>);

impl Visit for Fields {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0.push((field.name().to_owned(), format!("{value:?}")));
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.push((field.name().to_owned(), value.to_owned()));
    }
    fn record_u64(&mut self, field: &Field, value: u64) {
        self.0.push((field.name().to_owned(), value.to_string()));
    }
    fn record_i64(&mut self, field: &Field, value: i64) {
        self.0.push((field.name().to_owned(), value.to_string()));
    }
    fn record_bool(&mut self, field: &Field, value: bool) {
        self.0.push((field.name().to_owned(), value.to_string()));
    }
}

impl<S: tracing::Subscriber + for<'a> LookupSpan<'a>> tracing_subscriber::Layer<S> for Captured {
    fn on_event(&self, event: &tracing::Event<'_>, ctx: Context<'_, S>) {
        let mut fields = Fields(Vec::new());
        event.record(&mut fields);
        if let Some(scope) = ctx.event_scope(event) {
            for span in scope {
                fields.0.push(("in_span".into(), span.name().to_owned()));
            }
        }
        if let Ok(mut events) = self.0.lock() {
            events.push((event.metadata().name().to_owned(), fields.0));
        }
    }
}
