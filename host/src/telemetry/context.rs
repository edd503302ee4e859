//! The W3C trace context of a request: from its `params._meta`
//! (`traceparent`, `tracestate`), which wins, else from its HTTP headers.
//! Client input: values past the W3C sizes are ignored, not parsed.

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

/// Reads a bounded value.
fn bounded<'a>(key: &str, value: Option<&'a str>) -> Option<&'a str> {
    let max = if key.eq_ignore_ascii_case("tracestate") { MAX_TRACESTATE } else { MAX_TRACEPARENT };
    value.filter(|value| value.len() <= max)
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
