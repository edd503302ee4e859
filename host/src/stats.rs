//! Live counts of what the host holds, so tests and operators can check that
//! nothing leaks: every call, store and cleanup is counted in and out.
//! Stats also owns the Prometheus [`Metrics`], so whatever counts can record,
//! and the [`AuditLog`], so whatever ends a call (or the host) can record it.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use tokio::sync::Notify;

use crate::audit::AuditLog;
use crate::metrics::{Levels, Metrics};

/// Counters shared by all calls.
#[derive(Debug, Default)]
pub struct Stats {
    live_calls: AtomicU64,
    live_stores: AtomicU64,
    open_client_requests: AtomicU64,
    paused_calls: AtomicU64,
    leases: AtomicU64,
    calls_total: AtomicU64,
    cleanups_total: AtomicU64,
    /// Woken when the last live call ends (shutdown waits for it).
    calls_ended: Notify,
    metrics: Metrics,
    /// With `--audit-log`: where calls and lifecycle events are recorded.
    audit: AuditLog,
}

/// A point-in-time copy of [`Stats`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct StatsSnapshot {
    /// Calls started and not yet finished (cleanup included).
    pub live_calls: u64,
    /// Wasm stores alive (calls, cleanups, tool listings).
    pub live_stores: u64,
    /// Requests sent to the client (elicitation, sampling) and not yet
    /// answered or withdrawn.
    pub open_client_requests: u64,
    /// Calls waiting for the user: for an approval, or for an answer that
    /// comes in a later request (2026-07-28 sessions, tasks).
    pub paused_calls: u64,
    /// Paused calls held for a later `tools/call` to resume (2026-07-28).
    pub leases: u64,
    /// Calls started since the host started.
    pub calls_total: u64,
    /// Cleanup exports run since the host started.
    pub cleanups_total: u64,
}

/// Decrements a counter when dropped, so an early return cannot leak a
/// count. Owns its `Stats`, so it can travel with what it counts (a store
/// dropped in the background).
#[must_use]
pub struct Live {
    stats: Arc<Stats>,
    counter: fn(&Stats) -> &AtomicU64,
}

impl Drop for Live {
    fn drop(&mut self) {
        let counter = (self.counter)(&self.stats);
        if counter.fetch_sub(1, Ordering::AcqRel) == 1 && std::ptr::eq(counter, &self.stats.live_calls) {
            self.stats.calls_ended.notify_waiters();
        }
    }
}

impl Stats {
    /// Counts a call in; it is counted out when the guard drops.
    pub fn call(self: &Arc<Self>) -> Live {
        self.calls_total.fetch_add(1, Ordering::Relaxed);
        self.live_calls.fetch_add(1, Ordering::Relaxed);
        Live { stats: self.clone(), counter: |stats| &stats.live_calls }
    }

    /// Counts a store in; it is counted out when the guard drops.
    pub fn store(self: &Arc<Self>) -> Live {
        self.live_stores.fetch_add(1, Ordering::Relaxed);
        Live { stats: self.clone(), counter: |stats| &stats.live_stores }
    }

    /// Counts a request to the client in; it is counted out when the guard drops.
    pub fn client_request(self: &Arc<Self>) -> Live {
        self.open_client_requests.fetch_add(1, Ordering::Relaxed);
        Live { stats: self.clone(), counter: |stats| &stats.open_client_requests }
    }

    /// Counts a paused call in; it is counted out when the guard drops.
    pub fn paused(self: &Arc<Self>) -> Live {
        self.paused_calls.fetch_add(1, Ordering::Relaxed);
        Live { stats: self.clone(), counter: |stats| &stats.paused_calls }
    }

    /// Counts a lease in; it is counted out when the guard drops.
    pub fn lease(self: &Arc<Self>) -> Live {
        self.leases.fetch_add(1, Ordering::Relaxed);
        Live { stats: self.clone(), counter: |stats| &stats.leases }
    }

    /// Records that a cleanup export ran.
    pub fn cleanup_ran(&self) {
        self.cleanups_total.fetch_add(1, Ordering::Relaxed);
    }

    /// Returns once no call is live.
    pub async fn no_live_calls(&self) {
        loop {
            let ended = self.calls_ended.notified();
            let mut ended = std::pin::pin!(ended);
            // Registered before the check, so an end in between is not missed.
            ended.as_mut().enable();
            if self.live_calls.load(Ordering::Acquire) == 0 {
                return;
            }
            ended.await;
        }
    }

    /// These stats, recording to `audit` (`--audit-log`).
    pub fn with_audit(self, audit: AuditLog) -> Self {
        Stats { audit, ..self }
    }

    /// The audit log (a no-op without `--audit-log`).
    pub fn audit(&self) -> &AuditLog {
        &self.audit
    }

    /// The Prometheus metrics, to record events in.
    pub fn metrics(&self) -> &Metrics {
        &self.metrics
    }

    /// The metrics as `/metrics` serves them, with the live counts as gauges.
    pub fn render_metrics(&self, sessions: u64, draining: bool) -> String {
        let now = self.snapshot();
        self.metrics.render(Levels {
            live_calls: now.live_calls,
            paused_calls: now.paused_calls,
            open_client_requests: now.open_client_requests,
            live_stores: now.live_stores,
            sessions,
            draining,
            memory_bytes: crate::sandbox::host_memory().used() as u64,
            pool_resident_bytes: crate::sandbox::host_memory().pool_resident() as u64,
        })
    }

    /// Reads all counters.
    pub fn snapshot(&self) -> StatsSnapshot {
        StatsSnapshot {
            live_calls: self.live_calls.load(Ordering::Relaxed),
            live_stores: self.live_stores.load(Ordering::Relaxed),
            open_client_requests: self.open_client_requests.load(Ordering::Relaxed),
            paused_calls: self.paused_calls.load(Ordering::Relaxed),
            leases: self.leases.load(Ordering::Relaxed),
            calls_total: self.calls_total.load(Ordering::Relaxed),
            cleanups_total: self.cleanups_total.load(Ordering::Relaxed),
        }
    }
}
