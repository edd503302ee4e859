//! The last step before a span leaves the host: every text in it — its
//! name, its attributes, its events' names and attributes, its links'
//! attributes, its status — is escaped by the one rule
//! ([`crate::log_text::is_unsafe`]), whoever wrote the field.
//!
//! Call sites already escape what they know is outside text (a URI, a
//! request id, a tool's log record), but a span field is any `tracing`
//! field, and nothing at compile time says which of them came from a guest
//! or a client. So, as the text log's writer does for its lines
//! ([`crate::log_text::OneLinePerEvent`]), the exporter is the backstop:
//! no span reaches a collector (and the terminal of whoever reads it) with
//! a raw control, bidi override or line separator, even from a field added
//! tomorrow that nobody escaped. Text that is already safe, nearly all of
//! it, is scanned and passed on untouched.

use std::borrow::Cow;

use opentelemetry::trace::Status;
use opentelemetry::{Array, KeyValue, StringValue, Value};
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::trace::{SpanData, SpanExporter};

use crate::log_text::{escape_controls, is_unsafe};

/// A span exporter that escapes every text of each span before `E` sends it.
#[derive(Debug)]
pub struct Escaping<E>(pub E);

impl<E: SpanExporter> SpanExporter for Escaping<E> {
    async fn export(&self, mut batch: Vec<SpanData>) -> OTelSdkResult {
        batch.iter_mut().for_each(escape_span);
        self.0.export(batch).await
    }

    fn shutdown_with_timeout(&self, timeout: std::time::Duration) -> OTelSdkResult {
        self.0.shutdown_with_timeout(timeout)
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.0.force_flush()
    }

    fn set_resource(&mut self, resource: &opentelemetry_sdk::Resource) {
        self.0.set_resource(resource);
    }
}

/// Escapes every text `span` holds.
pub fn escape_span(span: &mut SpanData) {
    escape_cow(&mut span.name);
    span.attributes.iter_mut().for_each(escape_pair);
    for event in span.events.events.iter_mut() {
        escape_cow(&mut event.name);
        event.attributes.iter_mut().for_each(escape_pair);
    }
    for link in span.links.links.iter_mut() {
        link.attributes.iter_mut().for_each(escape_pair);
    }
    if let Status::Error { description } = &mut span.status {
        escape_cow(description);
    }
}

fn escape_cow(text: &mut Cow<'static, str>) {
    if text.chars().any(is_unsafe) {
        *text = Cow::Owned(escape_controls(text).into_owned());
    }
}

fn escape_pair(pair: &mut KeyValue) {
    match &mut pair.value {
        Value::String(text) => escape_string(text),
        Value::Array(Array::String(texts)) => texts.iter_mut().for_each(escape_string),
        _ => {}
    }
}

fn escape_string(text: &mut StringValue) {
    if text.as_str().chars().any(is_unsafe) {
        *text = StringValue::from(escape_controls(text.as_str()).into_owned());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use opentelemetry::trace::{Event, SpanContext, SpanId, SpanKind};
    use opentelemetry::{InstrumentationScope, Key};
    use opentelemetry_sdk::trace::{SpanEvents, SpanLinks};

    #[test]
    fn every_text_of_a_span_is_escaped_and_safe_text_is_left_alone() {
        let raw = "a\nb\u{1b}[2J\u{9b}c\u{202e}d";
        let mut events = SpanEvents::default();
        events.events.push(Event::new(raw, std::time::SystemTime::now(), vec![KeyValue::new("k", raw)], 0));
        let mut span = SpanData {
            span_context: SpanContext::empty_context(),
            parent_span_id: SpanId::INVALID,
            parent_span_is_remote: false,
            span_kind: SpanKind::Server,
            name: Cow::Owned(raw.into()),
            start_time: std::time::SystemTime::now(),
            end_time: std::time::SystemTime::now(),
            attributes: vec![
                KeyValue::new("mcp.resource.uri", raw),
                KeyValue::new("plain", "notes://a b"),
                KeyValue::new(Key::from("list"), Value::Array(Array::String(vec![raw.into()]))),
            ],
            dropped_attributes_count: 0,
            events,
            links: SpanLinks::default(),
            status: Status::error(raw),
            instrumentation_scope: InstrumentationScope::builder("test").build(),
        };
        escape_span(&mut span);
        let escaped = r"a\nb\u{1b}[2J\u{9b}c\u{202e}d";
        assert_eq!(span.name, escaped);
        assert_eq!(span.attributes[0].value.as_str(), escaped);
        assert_eq!(span.attributes[1].value.as_str(), "notes://a b");
        assert_eq!(span.attributes[2].value, Value::Array(Array::String(vec![escaped.into()])));
        assert_eq!(span.events.events[0].name, escaped);
        assert_eq!(span.events.events[0].attributes[0].value.as_str(), escaped);
        assert_eq!(span.status, Status::error(escaped));
    }
}
