//! Distributed traces (OpenTelemetry): the host's `tracing` spans exported
//! over OTLP, joined to the client's trace.
//!
//! Off unless an endpoint is configured (`--otlp-endpoint`, or the
//! standard `OTEL_EXPORTER_OTLP_ENDPOINT` / `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`):
//! otherwise no layer is installed at all, so tracing costs nothing. When on,
//! spans are batched and exported from the SDK's own thread with a bounded
//! queue (`OTEL_BSP_MAX_QUEUE_SIZE`, at most [`MAX_QUEUED_SPANS`]; spans past
//! it are dropped, counted by the SDK), so a collector that is down or slow
//! never slows a call. What a queued span can hold is bounded too: at most
//! [`MAX_EVENTS_PER_SPAN`] events (a tool's log records and output lines,
//! each cut to 1 KiB before it is escaped, so at most 6 KiB), and
//! attributes the host wrote from bounded, escaped values. So the queue's
//! worst case is [`MAX_QUEUED_SPANS`] × ([`MAX_EVENTS_PER_SPAN`] × 6 KiB +
//! its attributes), under 64 MiB, whatever the tools log and whether or not
//! the collector answers. The protocol is HTTP/protobuf, or
//! gRPC with `OTEL_EXPORTER_OTLP_PROTOCOL=grpc` (or `..._TRACES_PROTOCOL`).
//! The rest is configured the standard way: `OTEL_SERVICE_NAME`,
//! `OTEL_RESOURCE_ATTRIBUTES`, `OTEL_TRACES_SAMPLER(_ARG)`,
//! `OTEL_EXPORTER_OTLP_HEADERS`, `OTEL_EXPORTER_OTLP_TIMEOUT`.
//!
//! [`context`] takes the W3C trace context of each request (from its
//! `params._meta`, else its HTTP headers); [`spans`] names and describes
//! the spans as OpenTelemetry's MCP semantic conventions say; [`escaping`]
//! escapes every text of a span on its way out, whoever wrote the field.

pub mod context;
pub mod escaping;
pub mod events;
pub mod spans;

use std::sync::OnceLock;
use std::time::Duration;

use anyhow::Result;
use opentelemetry_sdk::trace::SdkTracerProvider;
use tracing_subscriber::Layer;
use tracing_subscriber::registry::LookupSpan;

/// The tracer the spans made with the OpenTelemetry API start from (a
/// request's and a guest run's, see [`spans`]); set once, at start, when
/// spans are exported.
static TRACER: OnceLock<opentelemetry_sdk::trace::SdkTracer> = OnceLock::new();

/// How long the host waits at exit for the last spans to be exported.
const FLUSH_AT_EXIT: Duration = Duration::from_secs(2);

/// The most spans waiting for export; `OTEL_BSP_MAX_QUEUE_SIZE` may ask for
/// fewer, not more. The SDK allocates what a span holds outside any budget
/// of ours, so its input is bounded instead (see the module doc).
pub const MAX_QUEUED_SPANS: usize = 512;

/// The most events one span keeps (the SDK drops the rest, counted).
pub const MAX_EVENTS_PER_SPAN: u32 = 16;

/// The target of the `call ended` line (`call::record`), which stays out
/// of traces: what it says is on the call's spans already (the guest span's
/// outcome, forced and fuel, the request's error, the cleanup's span and
/// reason), and as an event of a dozen attributes it was built and exported
/// for every call. It names the module that writes it, as a line's target
/// would by default.
pub const CALL_RECORD: &str = "mcp_wasm_host::call::record";

/// The layer that hands the host's spans to the exporter.
pub type TraceLayer<S> = Box<dyn Layer<S> + Send + Sync>;

/// The exporter, kept to flush it at exit.
pub struct Telemetry {
    provider: SdkTracerProvider,
}

/// Whether tracing is on.
pub fn is_on() -> bool {
    TRACER.get().is_some()
}

/// The tracer, when spans are exported.
fn tracer() -> Option<&'static opentelemetry_sdk::trace::SdkTracer> {
    TRACER.get()
}

/// How spans travel to the collector.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Protocol {
    /// OTLP/HTTP with protobuf bodies (`POST {endpoint}/v1/traces`).
    HttpProtobuf,
    /// OTLP/gRPC (`TraceService/Export` at the endpoint).
    Grpc,
}

fn from_env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|value| !value.trim().is_empty())
}

/// The protocol the standard variables ask for: HTTP/protobuf unless
/// `grpc` (the specification's default is either; most SDKs pick HTTP).
fn protocol() -> Result<Protocol> {
    let asked =
        from_env("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL").or_else(|| from_env("OTEL_EXPORTER_OTLP_PROTOCOL"));
    match asked.as_deref().map(str::trim) {
        None | Some("http/protobuf") => Ok(Protocol::HttpProtobuf),
        Some("grpc") => Ok(Protocol::Grpc),
        Some(other) => anyhow::bail!(
            "OTEL_EXPORTER_OTLP_PROTOCOL={}: this host exports over `http/protobuf` or `grpc`",
            crate::log_text::escaped(other)
        ),
    }
}

/// The endpoint the user configured, if any: `flag`, else the standard
/// environment variables. A base endpoint gets `/v1/traces` over HTTP; a
/// gRPC endpoint is used as it is.
fn endpoint(flag: Option<&str>, protocol: Protocol) -> Option<String> {
    let signal = |base: String| match protocol {
        Protocol::HttpProtobuf => format!("{}/v1/traces", base.trim_end_matches('/')),
        Protocol::Grpc => base,
    };
    if let Some(base) = flag {
        return Some(signal(base.to_string()));
    }
    from_env("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
        .or_else(|| from_env("OTEL_EXPORTER_OTLP_ENDPOINT").map(signal))
}

/// The span exporter for `protocol`. gRPC's client (tonic) needs a Tokio
/// runtime for its connection: it gets a one-thread runtime of its own,
/// kept for the process's life, so exports never run on the host's.
#[cfg(feature = "otlp")]
fn exporter(endpoint: &str, protocol: Protocol) -> Result<opentelemetry_otlp::SpanExporter> {
    use anyhow::Context as _;
    use opentelemetry_otlp::{SpanExporter, WithExportConfig as _};
    let built = match protocol {
        Protocol::HttpProtobuf => SpanExporter::builder().with_http().with_endpoint(endpoint).build(),
        Protocol::Grpc => {
            static RUNTIME: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
            let runtime = match RUNTIME.get() {
                Some(runtime) => runtime,
                None => {
                    let made = tokio::runtime::Builder::new_multi_thread()
                        .worker_threads(1)
                        .thread_name("otlp-grpc")
                        .enable_all()
                        .build()
                        .context("cannot start the gRPC exporter's runtime")?;
                    RUNTIME.get_or_init(|| made)
                }
            };
            let _inside = runtime.enter();
            SpanExporter::builder().with_tonic().with_endpoint(endpoint).build()
        }
    };
    built.with_context(|| format!("cannot export traces to {endpoint}"))
}

/// Starts exporting if an endpoint is configured: the layer to add to the
/// subscriber and the handle to flush at exit; `None` (nothing installed)
/// otherwise. Call it before the async runtime starts (the exporter's
/// blocking client must not be made on one).
pub fn start<S>(flag: Option<&str>) -> Result<Option<(TraceLayer<S>, Telemetry)>>
where
    S: tracing::Subscriber + Send + Sync + for<'a> LookupSpan<'a>,
{
    // The protocol matters only once there is an endpoint to export to.
    let asked = protocol();
    let Some(endpoint) = endpoint(flag, *asked.as_ref().unwrap_or(&Protocol::HttpProtobuf)) else {
        return Ok(None);
    };
    let protocol = asked?;
    #[cfg(not(feature = "otlp"))]
    {
        let _ = protocol;
        anyhow::bail!(
            "cannot export traces to {endpoint}: this build has no OTLP exporter (it was built without \
             the default `otlp` feature)"
        );
    }
    #[cfg(feature = "otlp")]
    export(&endpoint, protocol).map(Some)
}

/// Exports to `endpoint` over `protocol`, in batches from the SDK's own
/// thread: the layer and the handle to flush at exit.
#[cfg(feature = "otlp")]
fn export<S>(endpoint: &str, protocol: Protocol) -> Result<(TraceLayer<S>, Telemetry)>
where
    S: tracing::Subscriber + Send + Sync + for<'a> LookupSpan<'a>,
{
    use opentelemetry::trace::TracerProvider as _;
    use opentelemetry_sdk::Resource;
    // reqwest and tonic (under the exporter) take the TLS provider the host uses.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let exporter = exporter(endpoint, protocol)?;
    // OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES win over the default name.
    let resource = if std::env::var_os("OTEL_SERVICE_NAME").is_some() {
        Resource::builder().build()
    } else {
        Resource::builder().with_service_name("mcp-wasm-host").build()
    };
    let queue = std::env::var(opentelemetry_sdk::trace::OTEL_BSP_MAX_QUEUE_SIZE)
        .ok()
        .and_then(|asked| asked.parse::<usize>().ok())
        .map_or(MAX_QUEUED_SPANS, |asked| asked.clamp(1, MAX_QUEUED_SPANS));
    let batches = opentelemetry_sdk::trace::BatchConfigBuilder::default()
        .with_max_queue_size(queue)
        .with_max_export_batch_size(queue.min(512))
        .build();
    let processor =
        // Escaped on its way out, whoever wrote each field (`escaping`).
        opentelemetry_sdk::trace::BatchSpanProcessor::builder(escaping::Escaping(exporter))
            .with_batch_config(batches)
            .build();
    let provider = SdkTracerProvider::builder()
        .with_span_processor(processor)
        .with_max_events_per_span(MAX_EVENTS_PER_SPAN)
        .with_resource(resource)
        .build();
    let tracer = provider.tracer("mcp-wasm-host");
    opentelemetry::global::set_text_map_propagator(
        opentelemetry_sdk::propagation::TraceContextPropagator::new(),
    );
    let _ = TRACER.set(tracer.clone());
    // Only the host's own spans (the request and what it runs) and the
    // tools' log records and output (escaped and bounded as in the log),
    // which become events of their call's guest span; whatever RUST_LOG
    // lets into the log.
    // The `call ended` line is not (see [`CALL_RECORD`]), nor the log spans
    // of a request and a guest run: their exported spans are made with the
    // API (`spans`), and their lines become events through `events`.
    let only_ours = tracing_subscriber::filter::Targets::new()
        .with_target("mcp_wasm_host", tracing::Level::INFO)
        .with_target(spans::REQUEST_LOG, tracing_subscriber::filter::LevelFilter::OFF)
        .with_target(spans::GUEST_LOG, tracing_subscriber::filter::LevelFilter::OFF)
        .with_target(CALL_RECORD, tracing::Level::WARN)
        .with_target("tool", tracing::Level::INFO);
    // What the layer does by default on every span and on every poll of
    // an instrumented future, none of which a trace of ours reads (with the
    // two changes beside it, tracing at 100 % went from 0.70x to 0.85x the
    // calls a second, BENCHMARKS.md): the OTel context attached and detached on each enter (nothing here
    // reads `Context::current`; a child's parent is the current tracing
    // span all the same), the clock read twice on each for `busy_ns` and
    // `idle_ns`, and each span's source file, line, module, thread (its
    // name copied) and target as attributes, each escaped and encoded again
    // at export.
    let layer = tracing_opentelemetry::layer()
        .with_context_activation(false)
        .with_tracked_inactivity(false)
        .with_location(false)
        .with_threads(false)
        .with_target(false)
        .with_tracer(tracer)
        .and_then(events::ApiSpanEvents)
        .with_filter(only_ours);
    Ok((Box::new(layer), Telemetry { provider }))
}

impl Telemetry {
    /// Exports what is still queued, waiting at most [`FLUSH_AT_EXIT`]: a
    /// collector that does not answer does not hold the exit up.
    pub fn flush(self) {
        let (done, wait) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = self.provider.shutdown();
            let _ = done.send(());
        });
        let _ = wait.recv_timeout(FLUSH_AT_EXIT);
    }
}
