//! Noticing that the host should stop — SIGINT or SIGTERM — and giving
//! stopped calls a bounded time to clean up before the process exits.

use std::time::Duration;

use crate::stats::Stats;

/// How long the process waits, after shutdown starts, for calls to stop and
/// clean up before it exits anyway.
pub(crate) const SHUTDOWN_BUDGET: Duration = Duration::from_millis(900);

/// SIGINT and SIGTERM, listened for from the start: once created, the
/// process no longer dies of them, however late a transport first waits.
pub(crate) struct Signals {
    #[cfg(unix)]
    streams: Option<(tokio::signal::unix::Signal, tokio::signal::unix::Signal)>,
}

impl Signals {
    /// Starts listening (call inside the runtime, before serving).
    pub(crate) fn listen() -> Self {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{SignalKind, signal};
            let streams = match (signal(SignalKind::terminate()), signal(SignalKind::interrupt())) {
                (Ok(term), Ok(int)) => Some((term, int)),
                _ => None,
            };
            Signals { streams }
        }
        #[cfg(not(unix))]
        Signals {}
    }

    /// Resolves on the next SIGINT or SIGTERM (Ctrl-C elsewhere).
    pub(crate) async fn recv(&mut self) {
        #[cfg(unix)]
        {
            let Some((term, int)) = &mut self.streams else {
                return std::future::pending().await;
            };
            tokio::select! {
                _ = term.recv() => tracing::info!("SIGTERM; stopping every call"),
                _ = int.recv() => tracing::info!("SIGINT; stopping every call"),
            }
        }
        #[cfg(not(unix))]
        {
            if tokio::signal::ctrl_c().await.is_err() {
                std::future::pending::<()>().await;
            }
        }
    }
}

/// Waits, bounded by [`SHUTDOWN_BUDGET`], for stopped calls to finish their cleanup.
pub(crate) async fn drain_calls(stats: &Stats) {
    let left = wait_for_calls(stats, SHUTDOWN_BUDGET).await;
    if left > 0 {
        tracing::warn!(calls = left, "exiting with calls still stopping");
    }
}

/// Waits up to `budget` for every call to finish; returns how many are left.
pub(crate) async fn wait_for_calls(stats: &Stats, budget: Duration) -> u64 {
    let _ = tokio::time::timeout(budget, stats.no_live_calls()).await;
    stats.snapshot().live_calls
}
