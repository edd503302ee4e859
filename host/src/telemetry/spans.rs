//! The spans of a request, named and described as OpenTelemetry's MCP
//! semantic conventions say: a server span `{mcp.method.name} {target}`
//! (`tools/call echo`, `prompts/get review`; the method alone when the
//! target is a URI or absent), with `mcp.method.name`, `mcp.session.id`,
//! `mcp.protocol.version`, `jsonrpc.request.id`, `network.transport`, and
//! for a tool `gen_ai.tool.name` and `gen_ai.operation.name`. Its children
//! (the approval wait, each question to the client, the wait for a slot
//! when there was one, the guest run, the forced stop, the cleanup) are
//! the host's `tracing` spans inside it.
//!
//! The span's `trace_id` and `span_id` fields put the trace and the
//! request's span on every log line of the request, in JSON and in text.
//!
//! When a request ends, its `mcp.server.operation.duration` is recorded in
//! `/metrics` whether or not traces are exported.

use std::sync::Arc;
use std::time::Instant;

use opentelemetry::trace::TraceContextExt as _;
use rmcp::RoleServer;
use rmcp::service::RequestContext;
use tracing::Instrument as _;
use tracing::field::Empty;
use tracing_opentelemetry::OpenTelemetrySpanExt as _;

use crate::log_text::escaped;
use crate::metrics::McpOperation;
use crate::stats::Stats;

/// One MCP request being answered: its span, and what its
/// `mcp.server.operation.duration` is recorded with when it [`ends`].
///
/// [`ends`]: Request::ended
pub struct Request {
    /// The request's server span.
    pub span: tracing::Span,
    operation: McpOperation,
    /// A follow-up's span not started yet (see [`follow_up`]).
    unstarted: bool,
    /// The request's cancellation: a request the client cancelled ends as
    /// `cancelled`, whatever error rmcp's handler returned for it.
    cancelled: tokio_util::sync::CancellationToken,
    started: Instant,
    stats: Arc<Stats>,
    /// Whether [`Request::ended`] recorded the end; if not, `Drop` does.
    recorded: bool,
}

impl std::ops::Deref for Request {
    type Target = tracing::Span;

    fn deref(&self) -> &tracing::Span {
        &self.span
    }
}

/// The span of one MCP request for `method`, named by it until
/// [`Request::target`] names what it is on. Its duration goes to `stats`.
pub fn request(method: &'static str, context: &RequestContext<RoleServer>, stats: Arc<Stats>) -> Request {
    Request::new(method, context, stats, false)
}

/// The span of a `tools/call` that continues a paused call (it carries a
/// `requestState`): without a trace context of its own, it waits for
/// [`continues`] to join the trace of the request that paused the call.
pub fn follow_up(context: &RequestContext<RoleServer>, stats: Arc<Stats>) -> Request {
    Request::new("tools/call", context, stats, true)
}

impl Request {
    fn new(
        method: &'static str,
        context: &RequestContext<RoleServer>,
        stats: Arc<Stats>,
        follow_up: bool,
    ) -> Request {
        let (span, unstarted) = span_of(method, context, follow_up);
        let operation = McpOperation {
            method,
            tool: None,
            prompt: None,
            error_type: None,
            transport: transport_of(context),
            protocol_version: context.protocol_version().map(|version| version.as_str().to_string()),
        };
        let cancelled = context.ct.clone();
        Request { span, operation, unstarted, cancelled, started: Instant::now(), stats, recorded: false }
    }
}

impl Drop for Request {
    /// A request whose handler was dropped before it answered (the client
    /// went away, or rmcp gave up on it) still counts: as `cancelled`.
    fn drop(&mut self) {
        if !self.recorded {
            failed(&self.span, "cancelled");
            self.record(Some("cancelled".to_string()));
        }
    }
}

/// Joins the span of a follow-up to the trace of the request that paused
/// its call (`paused_by`, the `traceparent` sealed in its state): its
/// child when the follow-up brought no trace context of its own, else
/// linked to it.
pub fn continues(span: &tracing::Span, paused_by: Option<&str>) {
    if !super::is_on() {
        return;
    }
    if let Some(paused) = paused_by.map(super::context::from_traceparent)
        && paused.span().span_context().is_valid()
        && span.set_parent(paused.clone()).is_err()
    {
        // Started already: it has the client's own parent.
        span.add_link(paused.span().span_context().clone());
    }
    record_ids(span);
}

/// The W3C `traceparent` of `span`, when traces are exported.
pub fn traceparent(span: &tracing::Span) -> Option<String> {
    super::is_on().then(|| super::context::traceparent_of(&span.context())).flatten()
}

/// Starts `span` (if it was not) and puts its trace and span ids on it,
/// so the log lines within carry them.
fn record_ids(span: &tracing::Span) {
    let ids = span.context().span().span_context().clone();
    span.record("trace_id", tracing::field::display(ids.trace_id()));
    span.record("span_id", tracing::field::display(ids.span_id()));
}

/// `network.transport`: `tcp` over HTTP, `pipe` over stdio.
fn transport_of(context: &RequestContext<RoleServer>) -> &'static str {
    if context.extensions.get::<http::request::Parts>().is_some() { "tcp" } else { "pipe" }
}

/// The span itself, joined to the client's trace context if it sent one.
/// Without one, a `follow_up`'s span is left unstarted for [`continues`]
/// (then the second value is true).
fn span_of(
    method: &'static str,
    context: &RequestContext<RoleServer>,
    follow_up: bool,
) -> (tracing::Span, bool) {
    let http = context.extensions.get::<http::request::Parts>();
    // The session id is the only thing that tells sessions apart when there
    // is no authorization: what a log line or an exported span shows is its
    // digest, the same one the audit log keeps, never the id itself.
    let session = http
        .and_then(|request| request.headers.get("mcp-session-id"))
        .map(|id| crate::audit::short_sha256(id.as_bytes()));
    // The client's request id is outside text: escaped and cut.
    let span = tracing::info_span!(
        "request",
        request = %escaped(context.id.to_string()),
        otel.name = method,
        otel.kind = "server",
        otel.status_code = Empty,
        mcp.method.name = method,
        mcp.session.id = session,
        mcp.protocol.version = context.protocol_version().map(|version| version.as_str().to_string()),
        jsonrpc.request.id = %escaped(context.id.to_string()),
        jsonrpc.protocol.version = "2.0",
        network.transport = transport_of(context),
        gen_ai.tool.name = Empty,
        gen_ai.operation.name = Empty,
        gen_ai.prompt.name = Empty,
        mcp.resource.uri = Empty,
        error.type = Empty,
        trace_id = Empty,
        span_id = Empty,
    );
    let mut unstarted = false;
    if super::is_on() {
        let parent = super::context::parent_of(context);
        unstarted = follow_up && !parent.span().span_context().is_valid();
        let _ = span.set_parent(parent);
        if !unstarted {
            record_ids(&span);
        }
    }
    (span, unstarted)
}

/// Marks `span` failed with `error_type` (`error.type`, status Error).
pub fn failed(span: &tracing::Span, error_type: &str) {
    span.record("error.type", error_type);
    span.record("otel.status_code", "ERROR");
}

impl Request {
    /// Records how the request ended, on its span and in its duration: an
    /// error response is an error (`error.type` the JSON-RPC code), as is
    /// a tool result with `isError` (`tool_error`), as the conventions say.
    pub fn ended<T>(mut self, result: &Result<T, rmcp::ErrorData>, is_error: impl Fn(&T) -> bool) {
        let error_type = match result {
            Err(_) if self.cancelled.is_cancelled() => Some("cancelled".to_string()),
            Err(error) => Some(error.code.0.to_string()),
            Ok(answer) if is_error(answer) => Some("tool_error".to_string()),
            Ok(_) => None,
        };
        if let Some(error_type) = &error_type {
            failed(&self.span, error_type);
        }
        self.record(error_type);
    }

    /// Puts the request's duration, ended as `error_type`, in the metric.
    fn record(&mut self, error_type: Option<String>) {
        self.recorded = true;
        self.operation.error_type = error_type;
        self.stats.metrics().mcp_operation_ended(&self.operation, self.started.elapsed().as_secs_f64());
    }

    /// Names the span after its target once it is known to be one (a tool
    /// or a prompt the host serves: a client's made-up names would make
    /// span names and metric labels without bound).
    pub fn target(&mut self, target: &str) {
        let method = self.operation.method;
        let name = format!("{method} {target}");
        if super::is_on() && !self.unstarted {
            // A started OTel span takes a new name only this way.
            self.span.context().span().update_name(name.clone());
        }
        self.span.record("otel.name", tracing::field::display(name));
        match method {
            "tools/call" => {
                self.span.record("gen_ai.tool.name", target).record("gen_ai.operation.name", "execute_tool");
                self.operation.tool = Some(target.to_string());
            }
            "prompts/get" => {
                self.span.record("gen_ai.prompt.name", target);
                self.operation.prompt = Some(target.to_string());
            }
            _ => {}
        }
    }
}

/// Answers a request within its span, then records how it ended (see
/// [`Request::ended`]; for requests whose answer cannot be an `isError`
/// result).
pub async fn traced<T>(
    request: Request,
    answer: impl Future<Output = Result<T, rmcp::ErrorData>>,
) -> Result<T, rmcp::ErrorData> {
    let answer = answer.instrument(request.span.clone()).await;
    request.ended(&answer, |_| false);
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
