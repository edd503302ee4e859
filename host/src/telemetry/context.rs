//! The W3C trace context of a request: from its `params._meta`
//! (`traceparent`, `tracestate`), which wins, else from its HTTP headers.
//! Client input: values past the W3C sizes, or holding a byte W3C does
//! not allow there (only printable ASCII and the list's spaces and tabs),
//! are ignored, not parsed: the OpenTelemetry SDK would export a
//! `tracestate`'s ESC, BEL or line feed verbatim in every span.

use opentelemetry::propagation::{Extractor, TextMapPropagator as _};
use opentelemetry_sdk::propagation::TraceContextPropagator;
use rmcp::RoleServer;
use rmcp::service::RequestContext;

/// `traceparent` is 55 characters in version 00; later versions may add.
const MAX_TRACEPARENT: usize = 256;
/// `tracestate`: 32 entries of at most 256 bytes each, as W3C allows.
const MAX_TRACESTATE: usize = 32 * 257;

/// The parent a request's span joins: the client's span if it sent one,
/// else none (a new trace).
pub fn parent_of(context: &RequestContext<RoleServer>) -> opentelemetry::Context {
    let propagator = TraceContextPropagator::new();
    let meta = &context.meta.0.0;
    if meta.get("traceparent").is_some_and(|value| value.is_string()) {
        return propagator.extract(&Meta(meta));
    }
    match context.extensions.get::<http::request::Parts>() {
        Some(request) => propagator.extract(&Headers(&request.headers)),
        None => opentelemetry::Context::new(),
    }
}

/// Reads a bounded value, of the characters W3C allows in either header
/// (`traceparent` is narrower still, and the SDK checks its form).
fn bounded<'a>(key: &str, value: Option<&'a str>) -> Option<&'a str> {
    let max = if key.eq_ignore_ascii_case("tracestate") { MAX_TRACESTATE } else { MAX_TRACEPARENT };
    let allowed = |b: u8| b == b'\t' || (0x20..=0x7e).contains(&b);
    value.filter(|value| value.len() <= max && value.bytes().all(allowed))
}

struct Meta<'a>(&'a serde_json::Map<String, serde_json::Value>);

impl Extractor for Meta<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        bounded(key, self.0.get(key).and_then(serde_json::Value::as_str))
    }

    fn keys(&self) -> Vec<&str> {
        self.0.keys().map(String::as_str).collect()
    }
}

struct Headers<'a>(&'a http::HeaderMap);

impl Extractor for Headers<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        bounded(key, self.0.get(key).and_then(|value| value.to_str().ok()))
    }

    fn keys(&self) -> Vec<&str> {
        self.0.keys().map(http::HeaderName::as_str).collect()
    }
}

/// The context a `traceparent` names (one this host wrote: the sealed
/// state of a paused call); an empty one if it is not valid.
pub fn from_traceparent(traceparent: &str) -> opentelemetry::Context {
    let carrier = std::collections::HashMap::from([("traceparent".to_string(), traceparent.to_string())]);
    TraceContextPropagator::new().extract(&Bounded(&carrier))
}

/// The `traceparent` of `context`'s span, if it has a valid one.
pub fn traceparent_of(context: &opentelemetry::Context) -> Option<String> {
    let mut carrier = std::collections::HashMap::new();
    TraceContextPropagator::new().inject_context(context, &mut carrier);
    carrier.remove("traceparent")
}

struct Bounded<'a>(&'a std::collections::HashMap<String, String>);

impl Extractor for Bounded<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        bounded(key, self.0.get(key).map(String::as_str))
    }

    fn keys(&self) -> Vec<&str> {
        self.0.keys().map(String::as_str).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tracestate_with_controls_is_ignored_whole() {
        assert_eq!(bounded("tracestate", Some("a=b, c=d\t")), Some("a=b, c=d\t"));
        for forged in ["a=\x1b[2J", "a=b\x07", "a=b\nx=y", "a=\u{9b}1", "a=b\x7f"] {
            assert_eq!(bounded("tracestate", Some(forged)), None, "{forged:?}");
        }
        assert_eq!(bounded("tracestate", Some(&"a=b,".repeat(4000))), None);
    }
}
