//! The life of one tool call, top to bottom:
//!
//! 0. if the tool needs the user's approval, the user is asked first; no
//!    answer in time is a decline, and nothing has run;
//! 1. a turn to start (`sandbox::guest_pool`), then a fresh store and
//!    instance of the pre-instantiated component (made ahead of the call for
//!    a component slow to instantiate: `component::ahead`);
//! 2. the guest runs `tool.call`, watched for a client cancel, the deadline
//!    and host shutdown ([`stop`]) — whichever comes first flips the call's
//!    `cancelled` resource (a cancel or shutdown also bumps the epoch, so a
//!    computing guest returns to the host at once);
//! 3. the guest gets `--cancel-grace` to return by itself; after that the
//!    host drops the call future, which stops a guest that is computing
//!    (parked at an epoch yield) or blocked in an async host call alike
//!    (guest code that runs past a short call moves to the guest pool, below
//!    the protocol threads);
//! 4. every handle the call held is closed; its store goes then, or, for a
//!    component slow to reset, just after the response (`component::behind`);
//! 5. for every call that did not return normally, `tool.cleanup` runs in a
//!    new store and instance with its own fuel and deadline.
//!
//! The outcome is classified in [`outcome`], in the host's own terms (a
//! result's size as the client will receive it in [`output_size`]); the
//! call's one [`record`] reports it (the `call ended` line, the metrics,
//! the audit record); `mcp` maps it to MCP.

mod cleanup;
mod outcome;
mod output_schema;
mod output_size;
mod record;
mod stop;

use std::pin::pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio_util::sync::CancellationToken;
use tracing::Instrument as _;
use tracing::field::Empty;

use crate::engine::Epochs;

use crate::approval::ApprovalQuestion;
use crate::ask::CallChannel;
use crate::cancellation::CallCancellation;
use crate::component::{Kind, ToolComponent};
use crate::contract::types::StopReason;
use crate::operation::Operation;
use crate::sandbox::StoreBudget;
use crate::sandbox::guest_pool::{GuestPool, StartTurn};
use crate::schema::Checker;
use crate::stats::Stats;
use crate::telemetry::spans::{self, GuestSpan};
use crate::wit::types::stop_reason_name;

pub use outcome::CallOutcome;
#[cfg(test)]
pub(crate) use output_size::wire_size;
pub use stop::CallSignals;

use outcome::classify;
use record::{CallRecord, Ran};
use stop::{StopSignals, stop_or_finish};

/// A run's slot in its caller's share of calls (`--max-calls-per-principal`),
/// held for as long as anything of the call is. [`CallRunner::run`] takes
/// one, so no run of guest code, whatever the method that asks for it (a
/// tool call, a read, a prompt, a completion, a follow-up round), can skip
/// its caller's share: the type says it was taken.
#[derive(Clone)]
pub struct Share {
    /// Held, never read: dropped with the last part of the call.
    _slot: Option<Arc<OwnedSemaphorePermit>>,
}

impl Share {
    /// A slot taken from the caller's share.
    pub fn taken(slot: OwnedSemaphorePermit) -> Self {
        Share { _slot: Some(Arc::new(slot)) }
    }

    /// No share to take: the server has no authorization, so no callers
    /// to tell apart (every call still takes a `--max-concurrent-calls` slot).
    pub fn unshared() -> Self {
        Share { _slot: None }
    }
}

/// Runs calls. One per server; shared by all concurrent calls.
pub struct CallRunner {
    /// Every engine guests may run on (a baseline one too, while it serves).
    epochs: Epochs,
    /// Where guest code runs: threads of its own, below the protocol's.
    guests: GuestPool,
    /// Fires when the host shuts down; every live call stops.
    shutdown: CancellationToken,
    stats: Arc<Stats>,
    next_call: AtomicU64,
    /// One permit per call allowed to run at once (`--max-concurrent-calls`).
    /// The engine's instance pool is sized for twice this plus one, so a
    /// call's cleanup (and a store still being reset in the background)
    /// always finds a free slot.
    slots: Semaphore,
    /// Checks results against output schemas (and arguments against input
    /// schemas, for the MCP side), off the async workers when costly.
    checker: Checker,
}

/// Which call this is: its component, id and stop signal.
#[derive(Clone, Copy)]
struct CallContext<'a> {
    component: &'a ToolComponent,
    call_id: &'a Arc<str>,
    cancellation: &'a CallCancellation,
}

/// What [`CallRunner::run`] opened for a call before its approval: the
/// part that runs it takes these over.
struct Opened<'a> {
    tool: &'a str,
    call_id: Arc<str>,
    record: CallRecord<'a>,
    cancellation: CallCancellation,
}

/// How the guest's part of a call ended.
struct GuestEnd {
    outcome: CallOutcome,
    /// Set when the call did not return normally: the reason for `cleanup`.
    needs_cleanup: Option<StopReason>,
    /// Whether the host had to stop the guest (it did not return in the grace period).
    forced: bool,
    /// Log records and progress reports the rate limits dropped.
    dropped_notes: u64,
    /// Whether the call's instance was made ahead of it (`component::ahead`).
    ahead: bool,
    /// The fuel the guest used, when fuel is metered.
    fuel_used: Option<u64>,
}

impl CallRunner {
    /// A runner whose calls stop on `shutdown`. Each call gets the grants
    /// and limits of its component.
    pub fn new(
        epochs: Epochs,
        guests: GuestPool,
        max_concurrent_calls: usize,
        shutdown: CancellationToken,
        stats: Arc<Stats>,
    ) -> Self {
        // Shutdown must reach computing guests at once, like a cancel.
        let (epochs_for_shutdown, shutdown_signal) = (epochs.clone(), shutdown.clone());
        tokio::spawn(async move {
            shutdown_signal.cancelled().await;
            epochs_for_shutdown.increment();
        });
        let slots = Semaphore::new(max_concurrent_calls);
        Self {
            epochs,
            guests,
            shutdown,
            stats,
            next_call: AtomicU64::new(1),
            slots,
            checker: Checker::default(),
        }
    }

    /// Where guest code runs (also a component's `list-tools` when it is
    /// loaded again, with `--watch`).
    pub fn guests(&self) -> &GuestPool {
        &self.guests
    }

    /// The schema checker calls share.
    pub fn checker(&self) -> &Checker {
        &self.checker
    }

    /// The host's live counters.
    pub fn stats(&self) -> &Arc<Stats> {
        &self.stats
    }

    /// Makes every computing guest yield to the host now rather than at the
    /// next epoch tick, so a cancel or shutdown is seen at once. Called when
    /// a client's `notifications/cancelled` arrives (after rmcp has fired the
    /// request's token) and when shutdown starts.
    pub fn interrupt_guests(&self) {
        // Every engine: the guest may be running baseline or optimized code.
        self.epochs.increment();
    }

    /// Runs `operation` of `component` (a tool call's arguments already
    /// validated), until it returns or is stopped, and its cleanup is done.
    /// With `approval`, the user is asked first and the tool runs only on a
    /// yes. Every way out closes the call's one record ([`record`]), which
    /// also writes `audit`, the call's audit record, if it has one.
    // The share is an argument of its own, not a field with a default, so
    // that no caller can leave it out.
    #[allow(clippy::too_many_arguments)]
    pub async fn run(
        &self,
        component: &ToolComponent,
        operation: Operation,
        _share: &Share,
        signals: CallSignals,
        mut channel: Box<CallChannel>,
        approval: Option<ApprovalQuestion>,
        audit: Option<crate::audit::CallAudit>,
    ) -> CallOutcome {
        let _live = self.stats.call();
        let tool = operation.label().to_string();
        let tool = tool.as_str();
        let limits = &component.limits;
        let call_id: Arc<str> = format!("call-{}", self.next_call.fetch_add(1, Ordering::Relaxed)).into();
        let record = CallRecord::open(&self.stats, call_id.clone(), tool, audit, signals.approved.clone());
        let cancellation = CallCancellation::new();
        channel.limit_payloads(limits);
        if let Some(question) = approval
            && let Err(outcome) =
                Box::pin(self.await_approval(question, &mut channel, &cancellation, &signals))
                    .instrument(tracing::info_span!(
                        "approval",
                        mcp.method.name = "elicitation/create",
                        verdict = Empty
                    ))
                    .await
        {
            let outcome = outcome.or_handed_off(&signals.handed_off);
            record.ended_before_start(&outcome, cancellation.reason().map(stop_reason_name));
            return outcome;
        }
        // Boxed: a call paused for its approval keeps this future while it
        // waits (10 000 such calls may be held at once), and the rest of the
        // call is over a kilobyte of state it needs only once it runs.
        let opened = Opened { tool, call_id, record, cancellation };
        Box::pin(self.run_approved(component, operation, opened, signals, channel)).await
    }

    /// The rest of [`CallRunner::run`], once the call may run: a slot and a
    /// turn, the guest, the output check, `cleanup`, and the record closed.
    async fn run_approved(
        &self,
        component: &ToolComponent,
        operation: Operation,
        opened: Opened<'_>,
        signals: CallSignals,
        channel: Box<CallChannel>,
    ) -> CallOutcome {
        let Opened { tool, call_id, record, cancellation } = opened;
        let limits = &component.limits;
        let handed_off = signals.handed_off.clone();
        // Past --max-concurrent-calls, a call waits its turn (still
        // cancellable); then for its turn to start, which the calls starting
        // before it give back once their guests return, wait or have
        // computed a while (`guest_pool`). Most calls find both free: they
        // get no span for a wait they did not have.
        let free_now =
            self.slots.try_acquire().ok().and_then(|slot| Some((slot, self.guests.try_start_turn()?)));
        let (_slot, turn) = if let Some(taken) = free_now {
            taken
        } else {
            tokio::select! {
                taken = async { (self.slots.acquire().await, self.guests.start_turn().await) }
                    .instrument(tracing::info_span!("wait for a slot")) => {
                    (taken.0.expect("the call semaphore is never closed"), taken.1)
                }
                () = signals.client_cancel.cancelled() => {
                    let outcome = CallOutcome::Stopped(StopReason::ClientCancelled);
                    record.ended_before_start(&outcome, Some(stop_reason_name(StopReason::ClientCancelled)));
                    return outcome;
                }
                () = self.shutdown.cancelled() => {
                    let outcome = CallOutcome::Stopped(StopReason::Shutdown);
                    record.ended_before_start(&outcome, Some(stop_reason_name(StopReason::Shutdown)));
                    return outcome;
                }
            }
        };
        let started = Instant::now();
        let deadline = tokio::time::Instant::now() + limits.timeout;
        // A plain component has no `cancelled` to watch: waiting for it to
        // return by itself would only make its stop later.
        let grace = match component.code.kind() {
            Kind::Contract => limits.cancel_grace,
            Kind::Plain => std::time::Duration::ZERO,
        };
        let stop = StopSignals { signals, shutdown: self.shutdown.clone(), deadline, grace };

        tracing::debug!(call_id = &*call_id, tool, "call started");
        let call = CallContext { component, call_id: &call_id, cancellation: &cancellation };
        let tier = if component.baseline.is_some() { "baseline" } else { "optimized" };
        let guest_span = GuestSpan::start(tier);
        let GuestEnd { mut outcome, needs_cleanup, forced, dropped_notes, ahead, fuel_used } =
            guest_span.within(Box::pin(self.run_guest(&call, &operation, stop, *channel, turn))).await;
        guest_span.ended(outcome.label(), forced, fuel_used);
        // Checked within the call's slot and deadline: a hostile output
        // schema costs this call's time, not the host's.
        if let CallOutcome::Returned(Ok(result)) = &outcome
            && operation.is_tool()
            && let Some(problem) = Box::pin(self.check_output(component, tool, result, deadline)).await
        {
            outcome = CallOutcome::BadOutput(problem);
        }

        let outcome = outcome.or_handed_off(&handed_off);
        let cleanup = match needs_cleanup {
            Some(reason) => Some(
                Box::pin(self.cleanup(component, &call_id, reason))
                    .instrument(tracing::info_span!("cleanup", reason = stop_reason_name(reason)))
                    .await,
            ),
            None => None,
        };
        let ran = Ran {
            started,
            stop_reason: cancellation.reason().map(stop_reason_name),
            forced,
            dropped_notes,
            stop_s: cancellation.cancelled_at().map(|at| at.elapsed().as_secs_f64()),
            cleanup,
            subject: operation.subject(),
            tier,
            ahead,
        };
        record.ended(&outcome, ran);
        outcome
    }

    /// Asks the user to approve the call, watching the same stop signals as
    /// a running call. `Err` carries the outcome when the call must not run.
    async fn await_approval(
        &self,
        question: ApprovalQuestion,
        channel: &mut CallChannel,
        cancellation: &CallCancellation,
        signals: &CallSignals,
    ) -> Result<(), CallOutcome> {
        let mut asking = pin!(channel.approve(question, cancellation));
        let stop = tokio::select! {
            biased;
            verdict = asking.as_mut() => {
                // The approval span's: approved, or how the user declined.
                let said = verdict.as_ref().map_or_else(|decline| decline.label(), |()| "approved");
                tracing::Span::current().record("verdict", said);
                return verdict.map(|()| signals.approved.cancel()).map_err(CallOutcome::Declined);
            }
            () = self.shutdown.cancelled() => StopReason::Shutdown,
            () = signals.client_cancel.cancelled() => StopReason::ClientCancelled,
            () = signals.unanswered.cancelled() => StopReason::NoAnswer,
            () = signals.handed_off.cancelled() => StopReason::NoAnswer,
        };
        // Flipping the call's cancellation makes the question withdraw itself.
        cancellation.cancel(stop);
        tracing::Span::current().record("verdict", "stopped");
        let _ = asking.await;
        Err(CallOutcome::Stopped(stop))
    }

    /// Runs the guest in its own store until it returns or is stopped.
    async fn run_guest(
        &self,
        call: &CallContext<'_>,
        operation: &Operation,
        stop: StopSignals,
        channel: CallChannel,
        turn: StartTurn,
    ) -> GuestEnd {
        let CallContext { component, call_id, cancellation } = *call;
        let limits = &component.limits;
        let budget = StoreBudget::for_call(limits);
        let (made, ahead) = component
            .ahead
            .guest(component, &self.guests, &budget, cancellation.clone(), call_id.clone(), channel)
            .await;
        let guest = match made {
            Ok(guest) => guest,
            Err(err) => {
                let outcome = CallOutcome::Crashed(format!("cannot create the sandbox: {err:#}"));
                return GuestEnd {
                    outcome,
                    needs_cleanup: None,
                    forced: false,
                    dropped_notes: 0,
                    ahead,
                    fuel_used: None,
                };
            }
        };
        let store_live = self.stats.store();
        let deadline = stop.deadline;

        // The guest runs on the guest pool and hands its store back when it
        // returns, or when `stop_now` fires (then it is stopped first).
        let stop_now = CancellationToken::new();
        let task = self
            .guests
            .spawn(spans::in_current_context({
                let stop_now = stop_now.clone();
                // The component's own names (without a prefix).
                let (call_id, operation) = (call_id.to_string(), component.guest_operation(operation));
                let max_memory = limits.max_memory;
                let mut guest = guest;
                async move {
                    let result = tokio::select! {
                        // A guest told to stop is not resumed.
                        biased;
                        () = stop_now.cancelled() => None,
                        result = guest.call(&call_id, &operation, max_memory) => Some(result),
                    };
                    // The call future is dropped here: a guest still running is stopped.
                    (result, guest)
                }
                // The guest's log records are events of its call's span.
                .in_current_span()
            }))
            .holding(turn.clone());
        let force_stop = || {
            stop_now.cancel();
            // A computing guest sees `stop_now` at its next epoch yield: now.
            self.interrupt_guests();
        };
        let (result, mut guest) = stop_or_finish(task, cancellation, stop, force_stop).await;
        let fuel_used = guest.fuel_used(budget.fuel);
        if let Some(took) = guest.instantiated_in() {
            component.ahead.note_instantiation(took);
        }
        let memory_hit = guest.state().memory_was_hit();
        let channel = guest.state().channel();
        let mut dropped_notes = channel.dropped();
        let notifier = channel.take_notifier();
        let returned_normally = matches!(result, Some(Ok(_))) && cancellation.reason().is_none();
        // Every handle the call held (files, sockets, pollables) is closed
        // here, before the response and before cleanup runs, so cleanup
        // finds them released. The store itself, whose drop resets the
        // instance's memory slot, goes now or, for a component slow to
        // reset (an interpreter), behind the response (`component::behind`).
        guest.state().release();
        component.behind.drop_store((guest, store_live), &self.guests, Some(&turn));
        // The store is gone (or on its way on an idle pool): the next call's
        // instance may take its slot. Before the notifications below, which
        // wait on the client: a client slow to read them must not hold a
        // turn (or a memory slot) other calls need.
        turn.give_back();
        // Progress and log notifications precede the result, within what is
        // left of the call's time; a stopped call sends none after the stop.
        if let Some(notifier) = notifier {
            if returned_normally {
                let abandoned = notifier.finish(deadline).await;
                if abandoned > 0 {
                    tracing::info!(
                        call_id = &**call_id,
                        abandoned,
                        "notifications still queued when the call's time ran out (--timeout) were dropped"
                    );
                    dropped_notes += abandoned;
                }
            } else {
                notifier.abandon()
            }
        }

        let forced = result.is_none();
        let (outcome, needs_cleanup) = classify(limits, result, cancellation.reason(), memory_hit);
        // A plain component, or one that does not export `tool`, has no `cleanup` to run.
        let needs_cleanup = needs_cleanup.filter(|_| component.code.has_cleanup());
        GuestEnd { outcome, needs_cleanup, forced, dropped_notes, ahead, fuel_used }
    }
}
