//! The spans of a request, named and described as OpenTelemetry's MCP
//! semantic conventions say: a server span `{mcp.method.name} {target}`
//! (`tools/call echo`, `prompts/get review`; the method alone when the
//! target is a URI or absent), with `mcp.method.name`, `mcp.session.id`,
//! `mcp.protocol.version`, `jsonrpc.request.id`, `network.transport`, and
//! for a tool `gen_ai.tool.name` and `gen_ai.operation.name`. Its children
//! (the approval wait, each question to the client, the wait for a slot
//! when there was one, the guest run, the forced stop, the cleanup) are
//! the host's spans inside it.
//!
//! The request's span and the guest run's ([`GuestSpan`]) are made with
//! the OpenTelemetry API, not through the `tracing` bridge: they are the
//! two spans every call has, and through the bridge they cost a call about
//! 6 µs of the host's CPU when traces were exported (each span's builder
//! filled field by field, its ids written for the log, the registry's and
//! both layers' filters on every enter, exit and record) and about 2 µs
//! when they were sampled out (BENCHMARKS.md). The log keeps `tracing`
//! spans of the same names and fields ([`RequestSpan::log`],
//! [`GuestSpan::log`]), which the bridge never sees ([`REQUEST_LOG`],
//! [`GuestSpan`]'s [`GUEST_LOG`]); the rarer spans, still `tracing` spans
//! through the bridge, find their parent in the OpenTelemetry context the
//! futures carry ([`RequestSpan::within`], [`GuestSpan::within`]), and a
//! line written in one of the two becomes its event through
//! [`super::events`].
//!
//! The log span's `trace_id` and `span_id` fields put the trace and the
//! request's span on every log line of the request, in JSON and in text.
//!
//! When a request ends, its `mcp.server.operation.duration` is recorded in
//! `/metrics` whether or not traces are exported.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use opentelemetry::context::FutureExt as _;
use opentelemetry::trace::{SpanBuilder, SpanContext, SpanKind, Status, TraceContextExt as _, Tracer as _};
use opentelemetry::{Context, KeyValue};
use rmcp::RoleServer;
use rmcp::service::RequestContext;
use tracing::Instrument as _;
use tracing::field::Empty;

use crate::log_text::escaped;
use crate::metrics::McpOperation;
use crate::stats::Stats;

/// The target of a request's log span (its module's, as by default), which
/// the bridge to OpenTelemetry leaves out: the exported span is made here.
pub const REQUEST_LOG: &str = module_path!();

/// One MCP request being answered: its span, and what its
/// `mcp.server.operation.duration` is recorded with when it [`ends`].
///
/// [`ends`]: Request::ended
pub struct Request {
    /// The request's span.
    pub span: RequestSpan,
    operation: McpOperation,
    /// The request's cancellation: a request the client cancelled ends as
    /// `cancelled`, whatever error rmcp's handler returned for it.
    cancelled: tokio_util::sync::CancellationToken,
    started: Instant,
    stats: Arc<Stats>,
    /// Whether [`Request::ended`] recorded the end; if not, `Drop` does.
    recorded: bool,
}

/// A request's span as the code answering it holds it: the log's `tracing`
/// span, and the exported one when traces are exported. Clones are the
/// same span; the exported one ends when the last clone is gone (a call
/// that became a task holds it until the task ends), as a `tracing` span
/// closes.
#[derive(Clone)]
pub struct RequestSpan {
    /// The span the request's log lines show (its id, method, target and,
    /// with traces exported, its trace and span ids). Never exported.
    pub log: tracing::Span,
    exported: Option<Arc<Mutex<Exported>>>,
}

/// The exported span of a request.
enum Exported {
    /// A follow-up's span, waiting for [`RequestSpan::continues`] to give
    /// it the trace of the request that paused its call.
    Unstarted(Option<Pending>),
    /// The span, in the context its children are made in.
    Started(Context),
}

/// A span not started yet: what it will start with.
struct Pending {
    builder: SpanBuilder,
    /// The client's own trace context (none, for a follow-up that waits).
    parent: Context,
    /// Whether the request failed before the span started.
    failed: bool,
}

/// The span of one MCP request for `method`, named by it until
/// [`Request::target`] names what it is on. Its duration goes to `stats`.
pub fn request(method: &'static str, context: &RequestContext<RoleServer>, stats: Arc<Stats>) -> Request {
    Request::new(method, context, stats, false)
}

/// The span of a `tools/call` that continues a paused call (it carries a
/// `requestState`): without a trace context of its own, it waits for
/// [`RequestSpan::continues`] to join the trace of the request that paused
/// the call.
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
        let transport = transport_of(context);
        let protocol_version = context.protocol_version().map(|version| version.as_str().to_string());
        // The session id is the only thing that tells sessions apart when
        // there is no authorization: what a log line or an exported span
        // shows is its digest, the same one the audit log keeps, never the
        // id itself.
        let session = context
            .extensions
            .get::<http::request::Parts>()
            .and_then(|request| request.headers.get("mcp-session-id"))
            .map(|id| crate::audit::short_sha256(id.as_bytes()));
        // The client's request id is outside text: escaped and cut.
        let id = escaped(context.id.to_string()).to_string();
        // The `otel.*` fields are the log's only: a line names its span's
        // name, kind and status as it did when the bridge exported it.
        // `otel.name` is recorded once, by `target`: a field recorded twice
        // shows twice in every line, and until then the name is the method,
        // which `mcp.method.name` already shows.
        let log = tracing::info_span!(
            target: REQUEST_LOG,
            "request",
            request = %id,
            otel.name = Empty,
            otel.kind = "server",
            otel.status_code = Empty,
            mcp.method.name = method,
            mcp.session.id = session.as_deref(),
            mcp.protocol.version = protocol_version.as_deref(),
            jsonrpc.request.id = %id,
            jsonrpc.protocol.version = "2.0",
            network.transport = transport,
            gen_ai.tool.name = Empty,
            gen_ai.operation.name = Empty,
            gen_ai.prompt.name = Empty,
            mcp.resource.uri = Empty,
            error.type = Empty,
            trace_id = Empty,
            span_id = Empty,
        );
        let exported = super::tracer().map(|tracer| {
            let mut attributes = Vec::with_capacity(10);
            attributes.push(KeyValue::new("mcp.method.name", method));
            if let Some(session) = session {
                attributes.push(KeyValue::new("mcp.session.id", session));
            }
            if let Some(version) = &protocol_version {
                attributes.push(KeyValue::new("mcp.protocol.version", version.clone()));
            }
            attributes.push(KeyValue::new("jsonrpc.request.id", id));
            attributes.push(KeyValue::new("jsonrpc.protocol.version", "2.0"));
            attributes.push(KeyValue::new("network.transport", transport));
            let builder = tracer.span_builder(method).with_kind(SpanKind::Server).with_attributes(attributes);
            let parent = super::context::parent_of(context);
            let exported = if follow_up && !parent.span().span_context().is_valid() {
                Exported::Unstarted(Some(Pending { builder, parent, failed: false }))
            } else {
                let started = start(builder, &parent, false);
                record_ids(&log, started.span().span_context());
                Exported::Started(started)
            };
            Arc::new(Mutex::new(exported))
        });
        let operation =
            McpOperation { method, tool: None, prompt: None, error_type: None, transport, protocol_version };
        let cancelled = context.ct.clone();
        Request {
            span: RequestSpan { log, exported },
            operation,
            cancelled,
            started: Instant::now(),
            stats,
            recorded: false,
        }
    }
}

/// Starts the span `builder` describes as a child of `parent` (failed, if
/// `failed`): the context its children are made in.
fn start(builder: SpanBuilder, parent: &Context, failed: bool) -> Context {
    let Some(tracer) = super::tracer() else { return parent.clone() };
    let started = parent.with_span(tracer.build_with_context(builder, parent));
    if failed {
        started.span().set_status(Status::error(""));
    }
    started
}

impl Drop for Request {
    /// A request whose handler was dropped before it answered (the client
    /// went away, or rmcp gave up on it) still counts: as `cancelled`.
    fn drop(&mut self) {
        if !self.recorded {
            self.span.failed("cancelled");
            self.record(Some("cancelled".to_string()));
        }
    }
}

impl Drop for Exported {
    /// A follow-up refused before it joined a trace is still exported, as
    /// a trace of its own.
    fn drop(&mut self) {
        if let Exported::Unstarted(unstarted) = self
            && let Some(Pending { builder, parent, failed }) = unstarted.take()
        {
            start(builder, &parent, failed).span().end();
        }
    }
}

impl RequestSpan {
    /// `future` within the request: its log lines show the request's span,
    /// and the spans made in it are the exported span's children.
    pub fn within<F: Future>(&self, future: F) -> impl Future<Output = F::Output> + use<F> {
        within(&self.log, self.context(), future)
    }

    /// The context the exported span's children are made in, once it has
    /// started.
    fn context(&self) -> Option<Context> {
        self.with_exported(|exported| match exported {
            Exported::Started(context) => Some(context.clone()),
            Exported::Unstarted(_) => None,
        })
        .flatten()
    }

    fn with_exported<T>(&self, change: impl FnOnce(&mut Exported) -> T) -> Option<T> {
        let exported = self.exported.as_ref()?;
        Some(change(&mut exported.lock().unwrap_or_else(PoisonError::into_inner)))
    }

    /// Describes the exported span, started or not: a new `name`, more
    /// `attributes` (made only when there is an exported span), and
    /// whether it `failed` (status Error). One lock for all of it.
    fn describe(&self, name: Option<String>, attributes: impl FnOnce() -> Vec<KeyValue>, failed: bool) {
        self.with_exported(|exported| match exported {
            Exported::Started(context) => {
                let span = context.span();
                if let Some(name) = name {
                    span.update_name(name);
                }
                span.set_attributes(attributes());
                if failed {
                    span.set_status(Status::error(""));
                }
            }
            Exported::Unstarted(Some(pending)) => {
                if let Some(name) = name {
                    pending.builder.name = name.into();
                }
                pending.builder.attributes.get_or_insert_with(Vec::new).extend(attributes());
                pending.failed |= failed;
            }
            Exported::Unstarted(None) => {}
        });
    }

    /// Marks the request failed with `error_type` (`error.type`, status
    /// Error).
    pub fn failed(&self, error_type: &str) {
        failed(&self.log, error_type);
        self.describe(None, || vec![KeyValue::new("error.type", error_type.to_string())], true);
    }

    /// Records the URI a request names (an attribute, never the span's
    /// name).
    pub fn resource(&self, uri: &str) {
        let uri = escaped(uri).to_string();
        self.log.record("mcp.resource.uri", tracing::field::display(&uri));
        self.describe(None, || vec![KeyValue::new("mcp.resource.uri", uri)], false);
    }

    /// Joins a follow-up's span to the trace of the request that paused
    /// its call (`paused_by`, the `traceparent` sealed in its state): its
    /// child when the follow-up brought no trace context of its own, else
    /// linked to it. Either way the span has started after this.
    pub fn continues(&self, paused_by: Option<&str>) {
        let paused = paused_by.map(super::context::from_traceparent);
        let paused = paused.filter(|paused| paused.span().span_context().is_valid());
        let ids = self.with_exported(|exported| {
            match exported {
                Exported::Unstarted(unstarted) => {
                    if let Some(Pending { builder, parent, failed }) = unstarted.take() {
                        *exported =
                            Exported::Started(start(builder, paused.as_ref().unwrap_or(&parent), failed));
                    }
                }
                // Started already: it has the client's own parent.
                Exported::Started(context) => {
                    if let Some(paused) = &paused {
                        context.span().add_link(paused.span().span_context().clone(), Vec::new());
                    }
                }
            }
            match exported {
                Exported::Started(context) => Some(context.span().span_context().clone()),
                Exported::Unstarted(_) => None,
            }
        });
        if let Some(Some(ids)) = ids {
            record_ids(&self.log, &ids);
        }
    }

    /// The W3C `traceparent` of the exported span, when traces are
    /// exported.
    pub fn traceparent(&self) -> Option<String> {
        self.context().and_then(|context| super::context::traceparent_of(&context))
    }
}

/// The target of a guest run's log span, which the bridge leaves out: its
/// exported span is made with the API too ([`GuestSpan`]). Under the
/// module that writes the span, so `RUST_LOG` directives for
/// `mcp_wasm_host::call` still take it.
pub const GUEST_LOG: &str = "mcp_wasm_host::call::guest";

/// A guest run's span, `guest`, with `tier`, `outcome`, `forced` and
/// `fuel_used`: the log's `tracing` span and, when traces are exported, the
/// exported span, made with the API for the same reason as the request's
/// (its lines and output become its events through [`super::events`]).
pub struct GuestSpan {
    /// The span the run's log lines show.
    pub log: tracing::Span,
    exported: Option<Context>,
}

impl GuestSpan {
    /// The span of a run on `tier`'s code: a child of the span current in
    /// the OpenTelemetry context (the request's, within
    /// [`RequestSpan::within`]).
    pub fn start(tier: &'static str) -> GuestSpan {
        let log = tracing::info_span!(
            target: GUEST_LOG,
            "guest",
            tier,
            outcome = Empty,
            forced = Empty,
            fuel_used = Empty
        );
        let exported = super::tracer().map(|tracer| {
            let parent = Context::current();
            let builder = tracer.span_builder("guest").with_attributes(vec![KeyValue::new("tier", tier)]);
            let span = tracer.build_with_context(builder, &parent);
            parent.with_span(span)
        });
        GuestSpan { log, exported }
    }

    /// `future` within the run: its log lines show the `guest` span, and
    /// the spans and events made in it are the exported span's.
    pub fn within<F: Future>(&self, future: F) -> impl Future<Output = F::Output> + use<F> {
        within(&self.log, self.exported.clone(), future)
    }

    /// Ends the span with how the run ended: `outcome`, whether the host
    /// had to stop it (`forced`), and the fuel it used when fuel is metered.
    pub fn ended(self, outcome: &'static str, forced: bool, fuel_used: Option<u64>) {
        // As an integer: OpenTelemetry has no unsigned attributes.
        let fuel_used = fuel_used.map(|fuel| i64::try_from(fuel).unwrap_or(i64::MAX));
        self.log.record("outcome", outcome).record("forced", forced);
        if let Some(fuel) = fuel_used {
            self.log.record("fuel_used", fuel);
        }
        if let Some(context) = &self.exported {
            let span = context.span();
            let mut attributes = vec![KeyValue::new("outcome", outcome), KeyValue::new("forced", forced)];
            attributes.extend(fuel_used.map(|fuel| KeyValue::new("fuel_used", fuel)));
            span.set_attributes(attributes);
            span.end();
        }
    }
}

/// `future` in the OpenTelemetry context current where it is made, when
/// traces are exported: for a future polled elsewhere (the guest's, on the
/// guest pool), so the spans and events made in it stay the current span's.
pub fn in_current_context<F: Future>(future: F) -> impl Future<Output = F::Output> + use<F> {
    if super::is_on() {
        futures_util::future::Either::Left(future.with_current_context())
    } else {
        futures_util::future::Either::Right(future)
    }
}

/// `future` in the log span `log` and, when there is one, the exported
/// span of `context`.
fn within<F: Future>(
    log: &tracing::Span,
    context: Option<Context>,
    future: F,
) -> impl Future<Output = F::Output> + use<F> {
    let future = future.instrument(log.clone());
    match context {
        Some(context) => futures_util::future::Either::Left(future.with_context(context)),
        None => futures_util::future::Either::Right(future),
    }
}

/// Puts the request's trace and span ids on its log span, so the log lines
/// within carry them (formatted only when the log shows the span).
fn record_ids(log: &tracing::Span, ids: &SpanContext) {
    if !log.is_disabled() {
        log.record("trace_id", tracing::field::display(ids.trace_id()));
        log.record("span_id", tracing::field::display(ids.span_id()));
    }
}

/// `network.transport`: `tcp` over HTTP, `pipe` over stdio.
fn transport_of(context: &RequestContext<RoleServer>) -> &'static str {
    if context.extensions.get::<http::request::Parts>().is_some() { "tcp" } else { "pipe" }
}

/// Marks the `tracing` span `span` failed with `error_type` (`error.type`,
/// status Error; the bridge exports both).
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
            self.span.failed(error_type);
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
        self.span.log.record("otel.name", tracing::field::display(&name));
        // The conventions' attribute naming the target; a tool's call is
        // also an `execute_tool` operation.
        let key = match method {
            "tools/call" => {
                self.operation.tool = Some(target.to_string());
                Some("gen_ai.tool.name")
            }
            "prompts/get" => {
                self.operation.prompt = Some(target.to_string());
                Some("gen_ai.prompt.name")
            }
            _ => None,
        };
        let executes = method == "tools/call";
        if let Some(key) = key {
            self.span.log.record(key, target);
        }
        if executes {
            self.span.log.record("gen_ai.operation.name", "execute_tool");
        }
        let attributes = || {
            let mut attributes = Vec::with_capacity(2);
            attributes.extend(key.map(|key| KeyValue::new(key, target.to_string())));
            if executes {
                attributes.push(KeyValue::new("gen_ai.operation.name", "execute_tool"));
            }
            attributes
        };
        self.span.describe(Some(name), attributes, false);
    }
}

/// Answers a request within its span, then records how it ended (see
/// [`Request::ended`]; for requests whose answer cannot be an `isError`
/// result).
pub async fn traced<T>(
    request: Request,
    answer: impl Future<Output = Result<T, rmcp::ErrorData>>,
) -> Result<T, rmcp::ErrorData> {
    let answer = request.span.within(answer).await;
    request.ended(&answer, |_| false);
    answer
}

/// Whether a `tools/call` answer is an `isError` result.
pub fn is_tool_error(response: &rmcp::model::CallToolResponse) -> bool {
    matches!(response, rmcp::model::CallToolResponse::Complete(result) if result.is_error == Some(true))
}
