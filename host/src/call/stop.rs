//! What stops a call, besides the guest returning, and how: the guest is
//! told first (its `cancelled` flips) and gets a grace period to return by
//! itself; then the host drops it.

use std::pin::Pin;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::cancellation::CallCancellation;
use crate::contract::types::StopReason;

/// What can stop a call from outside, besides the host shutting down.
#[derive(Clone, Debug, Default)]
pub struct CallSignals {
    /// Fires when the client cancels the request (or the task).
    pub client_cancel: CancellationToken,
    /// Fires when the call was paused and its lease ran out unanswered.
    pub unanswered: CancellationToken,
}

/// Everything that can stop a running guest.
pub(super) struct StopSignals {
    /// The client's cancel and the lease running out.
    pub(super) signals: CallSignals,
    /// Fires when the host shuts down.
    pub(super) shutdown: CancellationToken,
    /// The call's wall-clock limit.
    pub(super) deadline: tokio::time::Instant,
    /// How long the guest may take to return once told to stop.
    pub(super) grace: Duration,
}

impl StopSignals {
    /// Resolves with the first reason to stop. Shutdown comes before the
    /// client's cancel: when the session closes, rmcp cancels every request
    /// too, but the reason is the shutdown.
    pub(super) async fn first(&self) -> StopReason {
        tokio::select! {
            biased;
            () = self.shutdown.cancelled() => StopReason::Shutdown,
            () = self.signals.client_cancel.cancelled() => StopReason::ClientCancelled,
            () = self.signals.unanswered.cancelled() => StopReason::NoAnswer,
            () = tokio::time::sleep_until(self.deadline) => StopReason::DeadlineExceeded,
        }
    }
}

/// Waits for `guest` to finish or for a reason to stop it; then tells the
/// guest (its `cancelled` flips) and waits up to the grace period for it to
/// return by itself. `None` means the guest did not return and must be
/// stopped by dropping it.
///
/// A computing guest holds its thread until it yields, which it does at
/// every epoch tick; a client cancel or shutdown also bumps the epoch at
/// once (see [`super::CallRunner::interrupt_guests`]), so the stop is
/// noticed within microseconds.
pub(super) async fn stop_or_finish<T>(
    mut guest: Pin<&mut impl Future<Output = T>>,
    cancellation: &CallCancellation,
    stop: StopSignals,
) -> Option<T> {
    let reason = tokio::select! {
        // Poll the guest first: a call that finishes as the cancel arrives
        // keeps its result.
        biased;
        result = guest.as_mut() => return Some(result),
        reason = stop.first() => reason,
    };
    cancellation.cancel(reason);
    if stop.grace.is_zero() {
        return None;
    }
    tokio::time::timeout(stop.grace, guest).await.ok()
}
