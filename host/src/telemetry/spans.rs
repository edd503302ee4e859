//! The spans of a request, named and described as OpenTelemetry's MCP
//! semantic conventions say: a server span `{mcp.method.name} {target}`
//! (`tools/call echo`, `prompts/get review`; the method alone when the
//! target is a URI or absent), with `mcp.method.name`, `mcp.session.id`,
//! `mcp.protocol.version`, `jsonrpc.request.id`, `network.transport`, and
//! for a tool `gen_ai.tool.name` and `gen_ai.operation.name`. Its children
//! (the approval wait, the guest run, the forced stop, the cleanup) are the
//! host's `tracing` spans inside it.
//!
//! The span's `trace_id` and `span_id` fields put the trace and the
//! request's span on every log line of the request, in JSON and in text.

use opentelemetry::trace::TraceContextExt as _;
use rmcp::RoleServer;
use rmcp::service::RequestContext;
use tracing::Instrument as _;
use tracing::field::Empty;
use tracing_opentelemetry::OpenTelemetrySpanExt as _;

use crate::log_text::escaped;

/// The span of one MCP request for `method`, named by it until
/// [`target`] names what it is on.
pub fn request(method: &'static str, context: &RequestContext<RoleServer>) -> tracing::Span {
    let http = context.extensions.get::<http::request::Parts>();
    let session =
        http.and_then(|request| request.headers.get("mcp-session-id")).and_then(|id| id.to_str().ok());
    // The client's request id is outside text: escaped and cut.
    let span = tracing::info_span!(
        "request",
        request = %escaped(context.id.to_string()),
        otel.name = method,
        otel.kind = "server",
        otel.status_code = Empty,
        mcp.method.name = method,
        mcp.session.id = session.map(escaped).map(tracing::field::display),
        mcp.protocol.version = context.protocol_version().map(|version| version.as_str().to_string()),
        jsonrpc.request.id = %escaped(context.id.to_string()),
        jsonrpc.protocol.version = "2.0",
        network.transport = if http.is_some() { "tcp" } else { "pipe" },
        gen_ai.tool.name = Empty,
        gen_ai.operation.name = Empty,
        mcp.resource.uri = Empty,
        error.type = Empty,
        trace_id = Empty,
        span_id = Empty,
    );
    if super::is_on() {
        let _ = span.set_parent(super::context::parent_of(context));
        let started = span.context();
        let ids = started.span().span_context().clone();
        span.record("trace_id", tracing::field::display(ids.trace_id()));
        span.record("span_id", tracing::field::display(ids.span_id()));
    }
    span
}

/// Marks `span` failed with `error_type` (`error.type`, status Error).
pub fn failed(span: &tracing::Span, error_type: &str) {
    span.record("error.type", error_type);
    span.record("otel.status_code", "ERROR");
}

/// Records how a request ended on its span: an error response is an error
/// (`error.type` the JSON-RPC code), as is a tool result with `isError`
/// (`tool_error`), as the conventions say.
pub fn ended<T>(span: &tracing::Span, result: &Result<T, rmcp::ErrorData>, is_error: impl Fn(&T) -> bool) {
    match result {
        Err(error) => failed(span, &error.code.0.to_string()),
        Ok(answer) if is_error(answer) => failed(span, "tool_error"),
        Ok(_) => {}
    }
}

/// Answers a request within its `span`, then records how it ended there
/// (see [`ended`]; for requests whose answer cannot be an `isError` result).
pub async fn traced<T>(
    span: tracing::Span,
    answer: impl Future<Output = Result<T, rmcp::ErrorData>>,
) -> Result<T, rmcp::ErrorData> {
    let answer = answer.instrument(span.clone()).await;
    ended(&span, &answer, |_| false);
    answer
}

/// Whether a `tools/call` answer is an `isError` result.
pub fn is_tool_error(response: &rmcp::model::CallToolResponse) -> bool {
    matches!(response, rmcp::model::CallToolResponse::Complete(result) if result.is_error == Some(true))
}

/// Records the URI a request names (an attribute, never the span's name).
pub fn resource(span: &tracing::Span, uri: &str) {
    span.record("mcp.resource.uri", tracing::field::display(escaped(uri)));
}

/// Names `span` after its target once it is known to be one (a tool or a
/// prompt the host serves: a client's made-up names would make span names
/// without bound).
pub fn target(span: &tracing::Span, method: &str, target: &str) {
    let name = format!("{method} {target}");
    if super::is_on() {
        // The OTel span was started when its parent was set: rename it.
        span.context().span().update_name(name.clone());
    }
    span.record("otel.name", tracing::field::display(name));
    if method == "tools/call" {
        span.record("gen_ai.tool.name", target).record("gen_ai.operation.name", "execute_tool");
    }
}
