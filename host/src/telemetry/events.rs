//! The events of the spans made with the OpenTelemetry API (a request's
//! and a guest run's, see [`super::spans`]). The bridge
//! (`tracing-opentelemetry`) adds a log line to the exported span of the
//! `tracing` span it is written in; these spans have a `tracing` span for
//! the log only, which the bridge never sees, so it would drop the line.
//! This layer adds it instead to the span current in the OpenTelemetry
//! context (the one [`super::spans::RequestSpan::within`] or
//! [`super::spans::GuestSpan::within`] attached), as the bridge would: the
//! message is the event's name, `level`, `target` and the line's fields its
//! attributes. Lines written inside a bridged span are left to the bridge.

use std::fmt;

use opentelemetry::trace::TraceContextExt as _;
use opentelemetry::{Key, KeyValue};
use tracing::field::{Field, Visit};
use tracing_subscriber::layer::Context;
use tracing_subscriber::registry::LookupSpan;

/// The layer, under the bridge's own filter (beside the bridge, in one
/// `Filtered`): it takes the same lines, and sees the same spans.
pub struct ApiSpanEvents;

impl<S> tracing_subscriber::Layer<S> for ApiSpanEvents
where
    S: tracing::Subscriber + for<'a> LookupSpan<'a>,
{
    fn on_event(&self, event: &tracing::Event<'_>, ctx: Context<'_, S>) {
        // A line inside a bridged span is the bridge's (the filtered
        // context shows no other span).
        if ctx.event_span(event).is_some() {
            return;
        }
        opentelemetry::Context::map_current(|current| {
            let span = current.span();
            if !span.is_recording() {
                return;
            }
            let metadata = event.metadata();
            let mut fields = Fields {
                name: None,
                attributes: vec![
                    KeyValue::new("level", metadata.level().as_str()),
                    KeyValue::new("target", metadata.target()),
                ],
            };
            event.record(&mut fields);
            span.add_event(fields.name.unwrap_or_else(|| metadata.name().to_string()), fields.attributes);
        });
    }
}

/// A line's message and fields, as the bridge converts them.
struct Fields {
    name: Option<String>,
    attributes: Vec<KeyValue>,
}

impl Fields {
    fn push(&mut self, field: &Field, value: impl Into<opentelemetry::Value>) {
        self.attributes.push(KeyValue::new(Key::from_static_str(field.name()), value));
    }
}

impl Visit for Fields {
    fn record_bool(&mut self, field: &Field, value: bool) {
        self.push(field, value);
    }

    fn record_i64(&mut self, field: &Field, value: i64) {
        self.push(field, value);
    }

    fn record_u64(&mut self, field: &Field, value: u64) {
        // OpenTelemetry has no unsigned attributes.
        match i64::try_from(value) {
            Ok(value) => self.push(field, value),
            Err(_) => self.push(field, value.to_string()),
        }
    }

    fn record_f64(&mut self, field: &Field, value: f64) {
        self.push(field, value);
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        match field.name() {
            "message" => self.name = Some(value.to_string()),
            _ => self.push(field, value.to_string()),
        }
    }

    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        match field.name() {
            "message" => self.name = Some(format!("{value:?}")),
            _ => self.push(field, format!("{value:?}")),
        }
    }
}
