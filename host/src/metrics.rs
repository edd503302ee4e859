//! Prometheus metrics, served at `/metrics` with `--http`: what the host
//! did (calls by tool and outcome, how long they took and how long they
//! took to stop, cleanups, approvals) and what it holds right now (live
//! calls, paused calls, open client requests, sessions, memory).
//!
//! Events are recorded where they happen, through [`Metrics`], which
//! [`crate::stats::Stats`] owns, so every layer that counts already has it.
//! Levels are read from the live counters only when scraped ([`Levels`]).
//!
//! Beside the host's own (`mcp_wasm_host_*`), the two metrics of
//! OpenTelemetry's MCP semantic conventions, under their Prometheus names:
//! `mcp_server_operation_duration_seconds` (every request, by
//! `mcp_method_name`, `gen_ai_tool_name` or `gen_ai_prompt_name`,
//! `error_type`, `network_transport`, `mcp_protocol_version`) and
//! `mcp_server_session_duration_seconds` (each Streamable HTTP session, from
//! `initialize` to its close, expiry or eviction). Every label value comes
//! from a bounded set: the methods, the tools and prompts the host serves,
//! JSON-RPC error codes, and the protocol versions it negotiates.

use prometheus_client::encoding::{EncodeLabelSet, LabelSetEncoder};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::{Registry, Unit};

/// The content type of [`Metrics::render`]'s text.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// Labels of a finished call.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct CallLabels {
    tool: String,
    /// `CallOutcome::label()`: ok, tool-error, stopped, limit, crashed, declined, bad-output.
    outcome: &'static str,
}

/// A label set of one tool.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ToolLabels {
    tool: String,
}

/// A label set of one result (of a cleanup, of an approval).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ResultLabels {
    result: &'static str,
}

/// One MCP request, as `mcp.server.operation.duration` is labelled. A
/// label without a value is left out, not written empty.
#[derive(Clone, Debug, Hash, PartialEq, Eq)]
pub struct McpOperation {
    /// `mcp.method.name`.
    pub method: &'static str,
    /// `gen_ai.tool.name`: a tool the host serves, for `tools/call`.
    pub tool: Option<String>,
    /// `gen_ai.prompt.name`: a prompt the host serves, for `prompts/get`.
    pub prompt: Option<String>,
    /// `error.type`: the JSON-RPC error code, or `tool_error` for an `isError` result.
    pub error_type: Option<String>,
    /// `network.transport`: `tcp` (HTTP) or `pipe` (stdio).
    pub transport: &'static str,
    /// `mcp.protocol.version`, as negotiated.
    pub protocol_version: Option<String>,
}

impl EncodeLabelSet for McpOperation {
    fn encode(&self, encoder: &mut LabelSetEncoder) -> std::fmt::Result {
        let optional = [
            ("gen_ai_tool_name", &self.tool),
            ("gen_ai_prompt_name", &self.prompt),
            ("error_type", &self.error_type),
            ("mcp_protocol_version", &self.protocol_version),
        ];
        let mut labels = vec![("mcp_method_name", self.method), ("network_transport", self.transport)];
        labels.extend(optional.iter().filter_map(|(name, value)| Some((*name, value.as_deref()?))));
        labels.encode(encoder)
    }
}

/// The buckets OpenTelemetry's MCP conventions advise for both durations (seconds).
const MCP_BUCKETS: [f64; 14] =
    [0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0];

fn mcp_histogram() -> Histogram {
    Histogram::new(MCP_BUCKETS)
}

/// Seconds, from 1 ms to about 9 minutes.
fn duration_histogram() -> Histogram {
    Histogram::new(exponential_buckets(0.001, 4.0, 10))
}

/// Seconds, from 1 ms to about 4 s: stopping should be quick.
fn stop_histogram() -> Histogram {
    Histogram::new(exponential_buckets(0.001, 2.0, 13))
}

/// The audit log's counters (`--audit-log`): records written and writes
/// that failed. Clones share their values, so the audit log's writer
/// thread counts into the registry without holding the [`Metrics`].
#[derive(Clone, Debug, Default)]
pub struct AuditCounters {
    /// Records written to the file.
    pub records: Counter,
    /// Writes that failed (each retried until it succeeds).
    pub write_errors: Counter,
}

/// What the host holds right now, read when metrics are scraped.
#[derive(Clone, Copy, Debug, Default)]
pub struct Levels {
    /// Calls started and not finished (cleanup included): the call slots in use.
    pub live_calls: u64,
    /// Calls waiting for the user.
    pub paused_calls: u64,
    /// Requests sent to the client and not yet answered.
    pub open_client_requests: u64,
    /// Wasm stores alive.
    pub live_stores: u64,
    /// Streamable HTTP sessions.
    pub sessions: u64,
    /// Whether the host is draining (SIGTERM received; new calls refused).
    pub draining: bool,
    /// Bytes live calls hold against `--max-total-memory`.
    pub memory_bytes: u64,
    /// Bytes the instance pool keeps resident of ended calls.
    pub pool_resident_bytes: u64,
}

/// The registry and a typed handle for every metric in it.
#[derive(Debug)]
pub struct Metrics {
    registry: Registry,
    calls: Family<CallLabels, Counter>,
    call_seconds: Family<ToolLabels, Histogram, fn() -> Histogram>,
    stop_seconds: Histogram,
    cleanups: Family<ResultLabels, Counter>,
    approvals: Family<ResultLabels, Counter>,
    request_states: Family<ResultLabels, Counter>,
    audit: AuditCounters,
    mcp_operations: Family<McpOperation, Histogram, fn() -> Histogram>,
    mcp_sessions: Histogram,
    live_calls: Gauge,
    paused_calls: Gauge,
    open_client_requests: Gauge,
    live_stores: Gauge,
    sessions: Gauge,
    draining: Gauge,
    memory_bytes: Gauge,
    pool_resident_bytes: Gauge,
}

impl Default for Metrics {
    fn default() -> Self {
        let mut root = Registry::default();
        let mcp_operations =
            Family::<McpOperation, Histogram, fn() -> Histogram>::new_with_constructor(mcp_histogram);
        root.register_with_unit(
            "mcp_server_operation_duration",
            "MCP requests answered, by method, tool or prompt, and error (OpenTelemetry MCP semantic conventions)",
            Unit::Seconds,
            mcp_operations.clone(),
        );
        let mcp_sessions = mcp_histogram();
        root.register_with_unit(
            "mcp_server_session_duration",
            "Streamable HTTP sessions ended (closed, expired or evicted), how long each lasted \
             (OpenTelemetry MCP semantic conventions)",
            Unit::Seconds,
            mcp_sessions.clone(),
        );
        let registry = root.sub_registry_with_prefix("mcp_wasm_host");
        let calls = Family::<CallLabels, Counter>::default();
        registry.register("calls", "Tool calls finished, by tool and outcome", calls.clone());
        let call_seconds =
            Family::<ToolLabels, Histogram, fn() -> Histogram>::new_with_constructor(duration_histogram);
        registry.register(
            "call_duration_seconds",
            "How long calls that ran took, cleanup included, by tool",
            call_seconds.clone(),
        );
        let stop_seconds = stop_histogram();
        registry.register(
            "stop_latency_seconds",
            "From a stop (cancel, deadline, shutdown) to the call's end, cleanup included",
            stop_seconds.clone(),
        );
        let cleanups = Family::<ResultLabels, Counter>::default();
        registry.register("cleanups", "Cleanup exports run, by result (done, failed)", cleanups.clone());
        let approvals = Family::<ResultLabels, Counter>::default();
        registry.register(
            "approvals",
            "Approval questions, by result (asked, approved, declined, expired, cancelled, handed-off)",
            approvals.clone(),
        );
        let request_states = Family::<ResultLabels, Counter>::default();
        registry.register(
            "request_states",
            "Sealed requestStates (--state-key-file), by result (sealed, resumed-same-replica, \
             resumed-other-replica, refused)",
            request_states.clone(),
        );
        let audit = AuditCounters::default();
        registry.register(
            "audit_records",
            "Records written to the audit log (--audit-log)",
            audit.records.clone(),
        );
        registry.register(
            "audit_write_errors",
            "Writes to the audit log that failed (retried; calls wait behind them)",
            audit.write_errors.clone(),
        );
        let mut gauge = |name: &str, help: &str| {
            let gauge = Gauge::default();
            registry.register(name, help, gauge.clone());
            gauge
        };
        let live_calls = gauge("live_calls", "Calls running or waiting: the call slots in use");
        let paused_calls = gauge("paused_calls", "Calls waiting for the user");
        let open_client_requests =
            gauge("open_client_requests", "Requests to the client (elicitation, sampling) not yet answered");
        let live_stores = gauge("live_stores", "Wasm stores alive");
        let sessions = gauge("sessions", "Streamable HTTP sessions");
        let draining = gauge("draining", "1 while draining after SIGTERM: new calls are refused");
        let memory_bytes = gauge(
            "memory_bytes",
            "Memory live calls hold (memories, tables, header fields), counted against --max-total-memory",
        );
        let pool_resident_bytes = gauge(
            "pool_resident_bytes",
            "Memory the instance pool keeps resident of ended calls (released when idle)",
        );
        Metrics {
            registry: root,
            live_calls,
            paused_calls,
            open_client_requests,
            live_stores,
            sessions,
            draining,
            memory_bytes,
            pool_resident_bytes,
            mcp_operations,
            mcp_sessions,
            calls,
            call_seconds,
            stop_seconds,
            cleanups,
            approvals,
            request_states,
            audit,
        }
    }
}

impl Metrics {
    /// Records a finished call: its outcome, and for a call that ran, how
    /// long it took and (if it was stopped) how long stopping took.
    pub fn call_ended(&self, tool: &str, outcome: &'static str, elapsed_s: Option<f64>, stop_s: Option<f64>) {
        self.calls.get_or_create(&CallLabels { tool: tool.to_owned(), outcome }).inc();
        if let Some(elapsed) = elapsed_s {
            self.call_seconds.get_or_create(&ToolLabels { tool: tool.to_owned() }).observe(elapsed);
        }
        if let Some(stop) = stop_s {
            self.stop_seconds.observe(stop);
        }
    }

    /// Records a cleanup's result (`done`, `failed`).
    pub fn cleanup_ended(&self, result: &'static str) {
        self.cleanups.get_or_create(&ResultLabels { result }).inc();
    }

    /// Records an approval event (`asked`, then one of `approved`,
    /// `declined`, `expired`, `cancelled`).
    pub fn approval(&self, result: &'static str) {
        self.approvals.get_or_create(&ResultLabels { result }).inc();
    }

    /// Records a sealed `requestState` event: one `sealed` per pause handed
    /// to the client; per follow-up, `resumed-same-replica`,
    /// `resumed-other-replica` or `refused`.
    pub fn request_state(&self, result: &'static str) {
        self.request_states.get_or_create(&ResultLabels { result }).inc();
    }

    /// Records one MCP request answered (`mcp.server.operation.duration`).
    pub fn mcp_operation_ended(&self, operation: &McpOperation, seconds: f64) {
        self.mcp_operations.get_or_create(operation).observe(seconds);
    }

    /// The histogram of Streamable HTTP sessions' lifetimes
    /// (`mcp.server.session.duration`), for the session table to observe.
    pub fn mcp_sessions(&self) -> Histogram {
        self.mcp_sessions.clone()
    }

    /// The audit log's counters, for its writer.
    pub fn audit(&self) -> AuditCounters {
        self.audit.clone()
    }

    /// The metrics in the OpenMetrics text format, with `levels` as the gauges.
    pub fn render(&self, levels: Levels) -> String {
        let level = |n: u64| i64::try_from(n).unwrap_or(i64::MAX);
        self.live_calls.set(level(levels.live_calls));
        self.paused_calls.set(level(levels.paused_calls));
        self.open_client_requests.set(level(levels.open_client_requests));
        self.live_stores.set(level(levels.live_stores));
        self.sessions.set(level(levels.sessions));
        self.draining.set(i64::from(levels.draining));
        self.memory_bytes.set(level(levels.memory_bytes));
        self.pool_resident_bytes.set(level(levels.pool_resident_bytes));
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &self.registry)
            .expect("writing to a String cannot fail");
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_call_is_counted_by_tool_and_outcome() {
        let metrics = Metrics::default();
        metrics.call_ended("echo", "ok", Some(0.002), None);
        metrics.call_ended("echo", "ok", Some(0.003), None);
        metrics.call_ended("spin", "stopped", Some(1.0), Some(0.1));
        let text = metrics.render(Levels { sessions: 2, memory_bytes: 5 << 20, ..Levels::default() });
        assert!(text.contains(r#"mcp_wasm_host_calls_total{tool="echo",outcome="ok"} 2"#), "{text}");
        assert!(text.contains(r#"mcp_wasm_host_calls_total{tool="spin",outcome="stopped"} 1"#), "{text}");
        assert!(text.contains("mcp_wasm_host_stop_latency_seconds_count 1"), "{text}");
        assert!(text.contains("mcp_wasm_host_sessions 2"), "{text}");
        assert!(text.contains("mcp_wasm_host_memory_bytes 5242880"), "{text}");
        assert!(text.ends_with("# EOF\n"), "{text}");
    }

    #[test]
    fn mcp_operations_carry_the_conventions_labels_and_leave_out_the_empty_ones() {
        let metrics = Metrics::default();
        let call = McpOperation {
            method: "tools/call",
            tool: Some("echo".into()),
            prompt: None,
            error_type: None,
            transport: "pipe",
            protocol_version: Some("2025-11-25".into()),
        };
        metrics.mcp_operation_ended(&call, 0.004);
        metrics
            .mcp_operation_ended(&McpOperation { error_type: Some("-32602".into()), ..call.clone() }, 0.001);
        metrics.mcp_sessions().observe(2.5);
        let text = metrics.render(Levels::default());
        let ok = r#"mcp_server_operation_duration_seconds_count{mcp_method_name="tools/call",network_transport="pipe",gen_ai_tool_name="echo",mcp_protocol_version="2025-11-25"} 1"#;
        assert!(text.contains(ok), "{text}");
        assert!(text.contains(r#"error_type="-32602""#), "{text}");
        assert!(!text.contains(r#"gen_ai_prompt_name="""#), "{text}");
        assert!(text.contains("mcp_server_session_duration_seconds_count 1"), "{text}");
        assert!(text.contains("# UNIT mcp_server_operation_duration_seconds seconds"), "{text}");
    }
}
