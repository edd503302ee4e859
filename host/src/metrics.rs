//! Prometheus metrics, served at `/metrics` with `--http`: what the host
//! did (calls by tool and outcome, how long they took and how long they
//! took to stop, cleanups, approvals) and what it holds right now (live
//! calls, paused calls, open client requests, sessions, memory).
//!
//! Events are recorded where they happen, through [`Metrics`], which
//! [`crate::stats::Stats`] owns, so every layer that counts already has it.
//! Levels are read from the live counters only when scraped ([`Levels`]).

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

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
        let mut registry = Registry::with_prefix("mcp_wasm_host");
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
        let gauge = |registry: &mut Registry, name: &str, help: &str| {
            let gauge = Gauge::default();
            registry.register(name, help, gauge.clone());
            gauge
        };
        Metrics {
            live_calls: gauge(&mut registry, "live_calls", "Calls running or waiting: the call slots in use"),
            paused_calls: gauge(&mut registry, "paused_calls", "Calls waiting for the user"),
            open_client_requests: gauge(
                &mut registry,
                "open_client_requests",
                "Requests to the client (elicitation, sampling) not yet answered",
            ),
            live_stores: gauge(&mut registry, "live_stores", "Wasm stores alive"),
            sessions: gauge(&mut registry, "sessions", "Streamable HTTP sessions"),
            draining: gauge(
                &mut registry,
                "draining",
                "1 while draining after SIGTERM: new calls are refused",
            ),
            memory_bytes: gauge(
                &mut registry,
                "memory_bytes",
                "Memory live calls hold (memories, tables, header fields), counted against --max-total-memory",
            ),
            pool_resident_bytes: gauge(
                &mut registry,
                "pool_resident_bytes",
                "Memory the instance pool keeps resident of ended calls (released when idle)",
            ),
            registry,
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
}
