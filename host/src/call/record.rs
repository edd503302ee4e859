//! One record per call: opened when the runner takes a call, closed exactly
//! once with how it ended. Closing writes everything that reports a call —
//! the `call ended` log line, the metrics, and the audit record of a tool
//! call (`--audit-log`) — so a new way out of [`super::CallRunner::run`],
//! or a new outcome, cannot report in one place and forget another.
//!
//! A record dropped unclosed (the call's future was dropped: its request
//! is gone) writes its audit record as `abandoned`, as [`CallAudit`] does.

use std::sync::Arc;
use std::time::Instant;

use tokio_util::sync::CancellationToken;

use super::outcome::{CallOutcome, CleanupOutcome};
use crate::audit::{CallAudit, CallEnd, Verdict};
use crate::contract::types::StopReason;
use crate::stats::Stats;
use crate::telemetry::CALL_RECORD;

/// A call being recorded.
pub(super) struct CallRecord<'a> {
    stats: &'a Stats,
    call_id: Arc<str>,
    tool: &'a str,
    /// The audit record, for a tool call when `--audit-log` is on.
    audit: Option<CallAudit>,
    /// Fires when the user approved the call (for the audit's verdict).
    approved: CancellationToken,
}

/// How a call that ran ended, besides its outcome.
pub(super) struct Ran<'o> {
    /// When the guest's part began (after approval and the wait for a slot).
    pub(super) started: Instant,
    /// What stopped it, if anything did.
    pub(super) stop_reason: Option<&'static str>,
    /// Whether the host had to stop the guest.
    pub(super) forced: bool,
    /// Log records and progress reports the rate limits dropped.
    pub(super) dropped_notes: u64,
    /// Seconds from the stop signal to the end, if it was stopped.
    pub(super) stop_s: Option<f64>,
    /// How its cleanup went, if it needed one.
    pub(super) cleanup: Option<CleanupOutcome>,
    /// What the call is about besides its tool (a read's URI): outside
    /// text, escaped when it is logged.
    pub(super) subject: Option<&'o str>,
    /// Which compiler's code ran it.
    pub(super) tier: &'static str,
    /// Whether its instance was made ahead of it.
    pub(super) ahead: bool,
}

impl<'a> CallRecord<'a> {
    /// Opens the record of call `call_id` of `tool`.
    pub(super) fn open(
        stats: &'a Stats,
        call_id: Arc<str>,
        tool: &'a str,
        audit: Option<CallAudit>,
        approved: CancellationToken,
    ) -> Self {
        Self { stats, call_id, tool, audit, approved }
    }

    /// Closes the record of a call that ended before its guest ran (declined,
    /// cancelled while waiting for approval or a slot, shutdown).
    pub(super) fn ended_before_start(mut self, outcome: &CallOutcome, stop_reason: Option<&'static str>) {
        let (call_id, tool) = (&*self.call_id, self.tool);
        tracing::info!(
            target: CALL_RECORD,
            call_id,
            tool,
            outcome = outcome.label(),
            stop_reason,
            "call ended before it started"
        );
        self.stats.metrics().call_ended(tool, outcome.label(), None, None);
        self.audit(outcome);
    }

    /// Closes the record of a call whose guest ran.
    pub(super) fn ended(mut self, outcome: &CallOutcome, ran: Ran<'_>) {
        let elapsed = ran.started.elapsed().as_secs_f64();
        tracing::info!(
            target: CALL_RECORD,
            call_id = &*self.call_id,
            tool = self.tool,
            subject = ran.subject.map(crate::log_text::escaped).map(tracing::field::display),
            outcome = outcome.label(),
            stop_reason = ran.stop_reason,
            forced = ran.forced,
            dropped_notes = ran.dropped_notes,
            stop_ms = ran.stop_s.map(millis),
            cleanup = ran.cleanup.map(CleanupOutcome::label),
            elapsed_ms = millis(elapsed),
            tier = ran.tier,
            instance = if ran.ahead { "made-ahead" } else { "made-by-call" },
            "call ended"
        );
        let metrics = self.stats.metrics();
        metrics.call_ended(self.tool, outcome.label(), Some(elapsed), ran.stop_s);
        if let Some(cleanup) = ran.cleanup {
            metrics.cleanup_ended(cleanup.label());
        }
        self.audit(outcome);
    }

    /// Writes the audit record (if any): the outcome, and the approval
    /// verdict (a tool that needs no approval gets `not-required` from the
    /// audit log itself).
    fn audit(&mut self, outcome: &CallOutcome) {
        let Some(audit) = self.audit.take() else { return };
        let verdict = match outcome {
            _ if self.approved.is_cancelled() => Verdict::Approved,
            CallOutcome::Declined(why) => Verdict::of_decline(why),
            CallOutcome::HandedOff => Verdict::HandedOff,
            CallOutcome::Stopped(StopReason::NoAnswer) => Verdict::Timeout,
            _ => Verdict::Cancelled,
        };
        audit.ended(CallEnd { outcome: outcome.label(), reason: outcome.reason(), approval: Some(verdict) });
    }
}

/// `seconds` in milliseconds to the microsecond, as a log line shows them
/// (`0.07`, not `0.06978999999999999`).
fn millis(seconds: f64) -> f64 {
    (seconds * 1e6).round() / 1e3
}
