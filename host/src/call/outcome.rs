//! How a call ended, in the host's terms, classified in one place: from
//! what the guest returned (or did not), why it was asked to stop, and
//! what its store saw.

use wasmtime::Trap;

use crate::approval::Decline;
use crate::contract::types::{CallError, CallResult, StopReason};
use crate::limits::{CallLimits, LimitHit};
use crate::sandbox::MemoryHit;

use super::output_size;

/// How a call ended, in the host's terms.
#[derive(Debug)]
pub enum CallOutcome {
    /// The tool returned a result or its own error.
    Returned(Result<CallResult, CallError>),
    /// The client cancelled the call, its pause went unanswered, or the
    /// host is shutting down.
    Stopped(StopReason),
    /// The call was stopped at a limit (fuel, memory, stack, deadline).
    LimitHit(LimitHit),
    /// The guest trapped (a panic, an abort, a bug); the text says how.
    Crashed(String),
    /// The tool needed the user's approval and did not get it; it never ran.
    Declined(Decline),
    /// The tool returned a result that breaks its own output schema; the
    /// text says how (the first violation).
    BadOutput(String),
    /// The call paused and its state went to the client, sealed
    /// (`--state-key-file`): it stopped here, and runs again wherever the
    /// answer lands. Nobody receives this outcome; it names the end in
    /// logs and metrics.
    HandedOff,
}

impl CallOutcome {
    /// Why a run of `what` (`tool \`echo\``, `resource read of …`) that
    /// ended so has no answer of its own, in the user's terms. The one text
    /// for every surface that shows it: a tool's `isError` result, a task's
    /// failure, a resource, prompt or completion request's error.
    pub fn why_none(&self, what: &str) -> String {
        match self {
            CallOutcome::Returned(_) => format!("{what} returned"),
            CallOutcome::Stopped(StopReason::ClientCancelled) => format!("{what} was cancelled"),
            CallOutcome::Stopped(StopReason::NoAnswer) => format!(
                "{what} was stopped: it waited for the user's answer longer than its lease (--approval-timeout)"
            ),
            CallOutcome::Stopped(_) => format!("{what} was stopped: the server is shutting down"),
            CallOutcome::LimitHit(limit) => format!("{what} was stopped: {limit}"),
            CallOutcome::Crashed(detail) => format!("{what} crashed: {detail}"),
            CallOutcome::Declined(why) => {
                format!("{what} did not run: it needs the user's approval, and {why}")
            }
            CallOutcome::BadOutput(problem) => {
                format!("{what} returned a result that breaks its output schema: {problem}")
            }
            // Its pause went out sealed; nobody waits for this response.
            CallOutcome::HandedOff => format!("{what} paused; it continues where the client's answer lands"),
        }
    }

    /// A short name for logs.
    pub fn label(&self) -> &'static str {
        match self {
            CallOutcome::Returned(Ok(result)) if result.is_error => "tool-error",
            CallOutcome::Returned(Ok(_)) => "ok",
            CallOutcome::Returned(Err(_)) => "tool-error",
            CallOutcome::Stopped(_) => "stopped",
            CallOutcome::LimitHit(_) => "limit",
            CallOutcome::Crashed(_) => "crashed",
            CallOutcome::Declined(_) => "declined",
            CallOutcome::BadOutput(_) => "bad-output",
            CallOutcome::HandedOff => "handed-off",
        }
    }

    /// Why, for an outcome that has reasons: the stop reason of a stopped
    /// call (`client-cancelled`, `shutdown`, `no-answer`), the limit a call
    /// hit (`timeout`, `fuel`, `memory`, …), the way an approval failed.
    pub fn reason(&self) -> Option<&'static str> {
        Some(match self {
            CallOutcome::Stopped(reason) => crate::wit::types::stop_reason_name(*reason),
            CallOutcome::LimitHit(limit) => match limit {
                LimitHit::Fuel(_) => "fuel",
                LimitHit::Deadline(_) => "timeout",
                LimitHit::Memory(_) => "memory",
                LimitHit::TotalMemory(_) => "total-memory",
                LimitHit::Stack => "stack",
                LimitHit::Output(..) => "output",
                LimitHit::Handles(_) => "handles",
                LimitHit::ContentBlocks(..) => "content-blocks",
            },
            CallOutcome::Declined(Decline::NoAnswer(_)) => "approval-timeout",
            CallOutcome::Declined(Decline::Cancelled) => "cancelled",
            CallOutcome::Declined(Decline::Declined | Decline::Dismissed) => "user-declined",
            CallOutcome::Declined(_) => "cannot-ask",
            _ => return None,
        })
    }

    /// This outcome, or [`CallOutcome::HandedOff`] if the call was stopped
    /// (or its approval ended) because its pause went to the client sealed.
    pub(super) fn or_handed_off(self, handed_off: &tokio_util::sync::CancellationToken) -> Self {
        match self {
            CallOutcome::Stopped(_) | CallOutcome::Declined(_) if handed_off.is_cancelled() => {
                CallOutcome::HandedOff
            }
            other => other,
        }
    }
}

/// What the guest's `tool.call` came back with: `None` when it did not
/// return and was dropped.
pub(super) type GuestResult = Option<wasmtime::Result<Result<CallResult, CallError>>>;

/// Classifies a guest's end. Returns the outcome and, for a call that did
/// not return normally, the reason its `cleanup` runs with.
pub(super) fn classify(
    limits: &CallLimits,
    result: GuestResult,
    stop: Option<StopReason>,
    memory_hit: Option<MemoryHit>,
) -> (CallOutcome, Option<StopReason>) {
    match (result, stop) {
        // Asked to stop and did not return in time: stopped by force.
        (None, Some(reason)) => (stopped(limits, reason), Some(reason)),
        (None, None) => unreachable!("a call is only abandoned after it was cancelled"),
        // Asked to stop; the guest said it stopped, or trapped meanwhile.
        (Some(Ok(Err(CallError::Cancelled))) | Some(Err(_)), Some(reason)) => {
            (stopped(limits, reason), Some(reason))
        }
        // Returned a result or its own error — even if a cancel arrived
        // meanwhile, it finished and released what it held: no cleanup.
        (Some(Ok(returned)), _) => (self::returned(limits, returned), None),
        (Some(Err(trap)), None) => (trapped(limits, &trap, memory_hit), Some(StopReason::LimitExceeded)),
    }
}

/// What the guest returned, unless it is over `--max-output` or
/// `--max-content-blocks`: a result (an `is_error` one too) or the message
/// of the tool's own error.
fn returned(limits: &CallLimits, returned: Result<CallResult, CallError>) -> CallOutcome {
    match output_size::check(limits, &returned) {
        Ok(()) => CallOutcome::Returned(returned),
        Err(limit) => CallOutcome::LimitHit(limit),
    }
}

fn stopped(limits: &CallLimits, reason: StopReason) -> CallOutcome {
    match reason {
        StopReason::DeadlineExceeded => CallOutcome::LimitHit(LimitHit::Deadline(limits.timeout)),
        other => CallOutcome::Stopped(other),
    }
}

fn trapped(limits: &CallLimits, error: &wasmtime::Error, memory_hit: Option<MemoryHit>) -> CallOutcome {
    match memory_hit {
        Some(MemoryHit::Call) => return CallOutcome::LimitHit(LimitHit::Memory(limits.max_memory)),
        Some(MemoryHit::Host(limit)) => return CallOutcome::LimitHit(LimitHit::TotalMemory(limit)),
        None => {}
    }
    if let Some(wasmtime::component::ResourceTableError::Full) = error.downcast_ref() {
        return CallOutcome::LimitHit(LimitHit::Handles(limits.max_handles));
    }
    match error.downcast_ref::<Trap>() {
        Some(Trap::OutOfFuel) => {
            CallOutcome::LimitHit(LimitHit::Fuel(limits.metered_fuel().unwrap_or(u64::MAX)))
        }
        Some(Trap::StackOverflow) => CallOutcome::LimitHit(LimitHit::Stack),
        // A Rust tool's stack grows down towards address 0, so overflowing
        // it usually shows up as this rather than as a stack overflow.
        Some(Trap::MemoryOutOfBounds) => CallOutcome::Crashed(
            "wasm trap: out of bounds memory access (also how a Rust tool's stack overflow ends)".into(),
        ),
        Some(Trap::UnreachableCodeReached) => CallOutcome::Crashed(
            "it panicked or aborted (wasm `unreachable`); the host's stderr shows what the tool printed"
                .into(),
        ),
        Some(trap) => CallOutcome::Crashed(format!("wasm trap: {trap}")),
        None => CallOutcome::Crashed(format!("{error:#}")),
    }
}

/// How a call's `cleanup` went.
#[derive(Clone, Copy, Debug)]
pub(super) enum CleanupOutcome {
    Done,
    Failed,
}

impl CleanupOutcome {
    pub(super) fn label(self) -> &'static str {
        match self {
            CleanupOutcome::Done => "done",
            CleanupOutcome::Failed => "failed",
        }
    }
}
