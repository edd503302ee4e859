//! What stops a call, besides the guest returning, and how: the guest is
//! told first (its `cancelled` flips) and gets a grace period to return by
//! itself; then the host drops it.

use std::time::Duration;

use tokio_util::sync::CancellationToken;
use tracing::Instrument as _;

use crate::cancellation::CallCancellation;
use crate::contract::types::StopReason;
use crate::sandbox::guest_pool::GuestTask;
use crate::wit::types::stop_reason_name;

/// What can stop a call from outside, besides the host shutting down.
#[derive(Clone, Debug, Default)]
pub struct CallSignals {
    /// Fires when the client cancels the request (or the task).
    pub client_cancel: CancellationToken,
    /// Fires when the call was paused and its lease ran out unanswered.
    pub unanswered: CancellationToken,
    /// Fires when the call's pause was handed to the client in a sealed
    /// state (`--state-key-file`): the call stops here and runs again
    /// wherever the answer lands. The guest sees `no-answer`: none came here.
    pub handed_off: CancellationToken,
    /// Fires when the user approved the call (a tool that needs approval),
    /// so its audit record can tell "approved, then stopped" from
    /// "stopped while asking".
    pub approved: CancellationToken,
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
            () = self.signals.handed_off.cancelled() => StopReason::NoAnswer,
            () = tokio::time::sleep_until(self.deadline) => StopReason::DeadlineExceeded,
        }
    }
}

/// Waits for the guest task to finish or for a reason to stop it; then
/// tells the guest (its `cancelled` flips) and waits up to the grace period
/// for it to return by itself. If it does not, `force_stop` makes the task
/// drop the guest: the result is then `None`, with the store (`S`) the task
/// hands back.
///
/// The guest computes on the guest pool, so the stop signals are seen here
/// at once; the guest sees `force_stop` at its next epoch yield, which
/// `force_stop` makes immediate (see [`super::CallRunner::interrupt_guests`]).
pub(super) async fn stop_or_finish<T: Send + 'static, S: Send + 'static>(
    mut guest: GuestTask<'_, (Option<T>, S)>,
    cancellation: &CallCancellation,
    stop: StopSignals,
    force_stop: impl FnOnce(),
) -> (Option<T>, S) {
    let reason = tokio::select! {
        // The guest first: a call that finishes as the cancel arrives keeps
        // its result.
        biased;
        done = &mut guest => return done,
        reason = stop.first() => reason,
    };
    cancellation.cancel(reason);
    if !stop.grace.is_zero()
        && let Ok(done) = tokio::time::timeout(stop.grace, &mut guest).await
    {
        return done;
    }
    // Did not return in time: stopped by force, whatever it did meanwhile.
    let forcing = async {
        force_stop();
        guest.await
    };
    let (_, store) =
        forcing.instrument(tracing::info_span!("forced stop", reason = stop_reason_name(reason))).await;
    (None, store)
}
