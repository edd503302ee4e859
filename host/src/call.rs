//! The life of one tool call, top to bottom:
//!
//! 0. if the tool needs the user's approval, the user is asked first; no
//!    answer in time is a decline, and nothing has run;
//! 1. a fresh store and instance from the pre-instantiated component;
//! 2. the guest runs `tool.call`, watched for a client cancel, the deadline
//!    and host shutdown — whichever comes first flips the call's
//!    `cancelled` resource (a cancel or shutdown also bumps the epoch, so a
//!    computing guest returns to the host at once);
//! 3. the guest gets `--cancel-grace` to return by itself; after that the
//!    host drops the call future, which stops a guest that is computing
//!    (parked at an epoch yield) or blocked in an async host call alike;
//! 4. the call's store is dropped, closing every handle it held;
//! 5. for every call that did not return normally, `tool.cleanup` runs in a
//!    new store and instance with its own fuel and deadline.
//!
//! The outcome is returned in the host's own terms; `server` maps it to MCP.

use std::pin::pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use serde_json::Value;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;
use wasmtime::{Engine, Trap};

use crate::approval::ApprovalQuestion;
use crate::bindings::types::{CallError, CallResult};
use crate::cancellation::{CallCancellation, GuestCancelled, StopReason};
use crate::client::ClientLink;
use crate::component::ToolComponent;
use crate::guest_output::escape_controls;
use crate::limits::{CallLimits, LimitHit};
use crate::priority::at_guest_priority;
use crate::sandbox::{StoreBudget, new_store};
use crate::schema::{CheckFailure, Checker};
use crate::stats::Stats;

/// How a call ended, in the host's terms.
#[derive(Debug)]
pub enum CallOutcome {
    /// The tool returned a result or its own error.
    Returned(Result<CallResult, CallError>),
    /// The client cancelled the call or the host is shutting down: nobody is
    /// waiting for a result.
    Stopped(StopReason),
    /// The call was stopped at a limit (fuel, memory, stack, deadline).
    LimitHit(LimitHit),
    /// The guest trapped (a panic, an abort, a bug); the text says how.
    Crashed(String),
    /// The tool needed the user's approval and did not get it; it never ran.
    /// The text says why (declined, no answer in time, no way to ask).
    Declined(String),
    /// The tool returned a result that breaks its own output schema; the
    /// text says how (the first violation).
    BadOutput(String),
}

/// What can stop a call from outside, besides the host shutting down.
#[derive(Clone, Debug, Default)]
pub struct CallSignals {
    /// Fires when the client cancels the request (or the task).
    pub client_cancel: CancellationToken,
    /// Fires when the call was paused and its lease ran out unanswered.
    pub unanswered: CancellationToken,
}

/// Runs calls. One per server; shared by all concurrent calls.
pub struct CallRunner {
    engine: Engine,
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
    /// schemas, for the server), off the async workers when costly.
    checker: Checker,
}

/// Which call this is: its component, id and stop signal.
#[derive(Clone, Copy)]
struct CallContext<'a> {
    component: &'a ToolComponent,
    call_id: &'a Arc<str>,
    cancellation: &'a CallCancellation,
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
}

/// What the guest's `tool.call` came back with, before classification.
type GuestResult = wasmtime::Result<Result<CallResult, CallError>>;

impl CallRunner {
    /// A runner whose calls stop on `shutdown`. Each call gets the grants
    /// and limits of its component.
    pub fn new(
        engine: Engine,
        max_concurrent_calls: usize,
        shutdown: CancellationToken,
        stats: Arc<Stats>,
    ) -> Self {
        // Shutdown must reach computing guests at once, like a cancel.
        let (engine_for_shutdown, shutdown_signal) = (engine.clone(), shutdown.clone());
        tokio::spawn(async move {
            shutdown_signal.cancelled().await;
            engine_for_shutdown.increment_epoch();
        });
        let slots = Semaphore::new(max_concurrent_calls);
        Self { engine, shutdown, stats, next_call: AtomicU64::new(1), slots, checker: Checker::default() }
    }

    /// The schema checker calls share.
    pub fn checker(&self) -> &Checker {
        &self.checker
    }

    /// The host's live counters.
    pub fn stats(&self) -> &Arc<Stats> {
        &self.stats
    }

    /// Runs `tool` of `component` with `arguments` (a JSON object, already
    /// validated), until it returns or is stopped, and its cleanup is done.
    /// With `approval`, the user is asked first and the tool runs only on a yes.
    pub async fn run(
        &self,
        component: &ToolComponent,
        tool: &str,
        arguments: &str,
        signals: CallSignals,
        mut client: ClientLink,
        approval: Option<ApprovalQuestion>,
    ) -> CallOutcome {
        let _live = self.stats.call();
        let limits = &component.limits;
        let call_id: Arc<str> = format!("call-{}", self.next_call.fetch_add(1, Ordering::Relaxed)).into();
        let cancellation = CallCancellation::new();
        client.limit_payloads(limits);
        if let Some(question) = approval
            && let Err(outcome) = self.await_approval(question, &mut client, &cancellation, &signals).await
        {
            let stop_reason = cancellation.reason().map(StopReason::as_str);
            tracing::info!(
                call_id = &*call_id,
                tool,
                outcome = outcome.label(),
                stop_reason,
                "call ended before it started"
            );
            return outcome;
        }
        let CallSignals { client_cancel, unanswered } = signals;
        // Past --max-concurrent-calls, a call waits its turn (still cancellable).
        let _slot = tokio::select! {
            slot = self.slots.acquire() => slot.expect("the call semaphore is never closed"),
            () = client_cancel.cancelled() => {
                tracing::info!(call_id = &*call_id, tool, outcome = "stopped", stop_reason = "client-cancelled", "call ended before it started");
                return CallOutcome::Stopped(StopReason::ClientCancelled);
            }
            () = self.shutdown.cancelled() => return CallOutcome::Stopped(StopReason::Shutdown),
        };
        let started = Instant::now();
        let deadline = tokio::time::Instant::now() + limits.timeout;
        let stop = StopSignals {
            client_cancel,
            unanswered,
            shutdown: self.shutdown.clone(),
            deadline,
            grace: limits.cancel_grace,
        };

        tracing::debug!(call_id = &*call_id, tool, "call started");
        let call = CallContext { component, call_id: &call_id, cancellation: &cancellation };
        let GuestEnd { mut outcome, needs_cleanup, forced, dropped_notes } =
            self.run_guest(&call, tool, arguments, stop, client).await;
        // Checked within the call's slot and deadline: a hostile output
        // schema costs this call's time, not the host's.
        if let CallOutcome::Returned(Ok(result)) = &outcome
            && let Some(problem) = self.check_output(component, tool, result, deadline).await
        {
            outcome = CallOutcome::BadOutput(problem);
        }

        let cleanup = match needs_cleanup {
            Some(reason) => Some(self.cleanup(component, &call_id, reason).await),
            None => None,
        };
        let stop_ms = cancellation.cancelled_at().map(|at| at.elapsed().as_secs_f64() * 1e3);
        tracing::info!(
            call_id = &*call_id,
            tool,
            outcome = outcome.label(),
            stop_reason = cancellation.reason().map(StopReason::as_str),
            forced,
            dropped_notes,
            stop_ms,
            cleanup = cleanup.map(CleanupOutcome::label),
            elapsed_ms = started.elapsed().as_secs_f64() * 1e3,
            "call ended"
        );
        outcome
    }

    /// Asks the user to approve the call, watching the same stop signals as
    /// a running call. `Err` carries the outcome when the call must not run.
    async fn await_approval(
        &self,
        question: ApprovalQuestion,
        client: &mut ClientLink,
        cancellation: &CallCancellation,
        signals: &CallSignals,
    ) -> Result<(), CallOutcome> {
        let mut asking = pin!(client.approve(question, cancellation));
        let stop = tokio::select! {
            biased;
            verdict = asking.as_mut() => return verdict.map_err(CallOutcome::Declined),
            () = self.shutdown.cancelled() => StopReason::Shutdown,
            () = signals.client_cancel.cancelled() => StopReason::ClientCancelled,
            () = signals.unanswered.cancelled() => StopReason::NoAnswer,
        };
        // Flipping the call's cancellation makes the question withdraw itself.
        cancellation.cancel(stop);
        let _ = asking.await;
        Err(CallOutcome::Stopped(stop))
    }

    /// Runs the guest in its own store until it returns or is stopped.
    async fn run_guest(
        &self,
        call: &CallContext<'_>,
        tool: &str,
        arguments: &str,
        stop: StopSignals,
        client: ClientLink,
    ) -> GuestEnd {
        let CallContext { component, call_id, cancellation } = *call;
        let limits = &component.limits;
        let budget = StoreBudget::for_call(limits);
        let mut store = match new_store(
            &self.engine,
            &component.grants,
            &budget,
            cancellation.clone(),
            call_id.clone(),
            client,
        ) {
            Ok(store) => store,
            Err(err) => {
                let outcome = CallOutcome::Crashed(format!("cannot create the sandbox: {err:#}"));
                return GuestEnd { outcome, needs_cleanup: None, forced: false, dropped_notes: 0 };
            }
        };
        let store_live = self.stats.store();
        let deadline = stop.deadline;

        let result: Option<GuestResult> = {
            let guest = pin!(at_guest_priority(async {
                let instance = component.pre.instantiate_async(&mut store).await?;
                let cancelled = store.data_mut().table.push(GuestCancelled(cancellation.clone()))?;
                let (call_id, tool, arguments) =
                    (call_id.to_string(), tool.to_string(), arguments.to_string());
                instance.mcp_tool_tool().call_call(&mut store, &call_id, &tool, &arguments, cancelled).await
            }));
            stop_or_finish(guest, cancellation, stop).await
            // The guest future is dropped here: a guest still running is stopped.
        };
        let memory_hit = store.data().memory.was_hit();
        let mut dropped_notes = store.data().client.dropped();
        let returned_normally = matches!(result, Some(Ok(_))) && cancellation.reason().is_none();
        // Progress and log notifications precede the result, within what is
        // left of the call's time; a stopped call sends none after the stop.
        if let Some(notifier) = store.data_mut().client.take_notifier() {
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
        if returned_normally {
            // Resetting the instance's memory takes microseconds; do it off
            // the path of the response.
            tokio::spawn(async move { drop((store, store_live)) });
        } else {
            // Drop the store before cleanup runs, so every handle the call
            // held (files, pollables) is closed when cleanup releases things.
            drop((store, store_live));
        }

        let forced = result.is_none();
        let (outcome, needs_cleanup) = match (result, cancellation.reason()) {
            // Asked to stop and did not return in time: stopped by force.
            (None, Some(reason)) => (self.stopped(limits, reason), Some(reason)),
            (None, None) => unreachable!("a call is only abandoned after it was cancelled"),
            // Asked to stop; the guest said it stopped, or trapped meanwhile.
            (Some(Ok(Err(CallError::Cancelled))) | Some(Err(_)), Some(reason)) => {
                (self.stopped(limits, reason), Some(reason))
            }
            // Returned a result or its own error — even if a cancel arrived
            // meanwhile, it finished and released what it held: no cleanup.
            (Some(Ok(returned)), _) => (self.returned(limits, returned), None),
            (Some(Err(trap)), None) => {
                (self.classify_trap(limits, &trap, memory_hit), Some(StopReason::LimitExceeded))
            }
        };
        GuestEnd { outcome, needs_cleanup, forced, dropped_notes }
    }

    /// What the guest returned, unless it is over `--max-output`: a result
    /// (an `is_error` one too) or the message of the tool's own error.
    fn returned(&self, limits: &CallLimits, returned: Result<CallResult, CallError>) -> CallOutcome {
        let size = match &returned {
            Ok(result) => output_size(result),
            Err(
                CallError::Failed(text) | CallError::InvalidArguments(text) | CallError::UnknownTool(text),
            ) => text.len(),
            Err(CallError::Cancelled) => 0,
        };
        if size > limits.max_output {
            return CallOutcome::LimitHit(LimitHit::Output(size, limits.max_output));
        }
        CallOutcome::Returned(returned)
    }

    /// Why a successful result breaks the tool's output schema, if it does.
    /// Structured content that is not JSON at all is left for the result
    /// mapping to report.
    async fn check_output(
        &self,
        component: &ToolComponent,
        tool: &str,
        result: &CallResult,
        deadline: tokio::time::Instant,
    ) -> Option<String> {
        let spec = component.tools.iter().find(|spec| spec.name == tool)?;
        let schema = spec.output.as_ref()?;
        if result.is_error {
            return None;
        }
        let Some(text) = result.structured_content.as_deref() else {
            return Some("it declares an output schema but returned no structured content".into());
        };
        let structured: Value = serde_json::from_str(text).ok()?;
        match self.checker.check(schema, Arc::new(structured), deadline).await {
            Ok(()) => None,
            Err(CheckFailure::Invalid(why)) => Some(why),
            Err(CheckFailure::TooSlow(_)) => Some(format!(
                "checking it took longer than the call had left of its time limit of {} (--timeout)",
                crate::limits::HumanDuration(component.limits.timeout)
            )),
        }
    }

    fn stopped(&self, limits: &CallLimits, reason: StopReason) -> CallOutcome {
        match reason {
            StopReason::DeadlineExceeded => CallOutcome::LimitHit(LimitHit::Deadline(limits.timeout)),
            other => CallOutcome::Stopped(other),
        }
    }

    fn classify_trap(&self, limits: &CallLimits, error: &wasmtime::Error, memory_hit: bool) -> CallOutcome {
        if memory_hit {
            return CallOutcome::LimitHit(LimitHit::Memory(limits.max_memory));
        }
        if let Some(wasmtime::component::ResourceTableError::Full) = error.downcast_ref() {
            return CallOutcome::LimitHit(LimitHit::Handles(limits.max_handles));
        }
        match error.downcast_ref::<Trap>() {
            Some(Trap::OutOfFuel) => CallOutcome::LimitHit(LimitHit::Fuel(limits.fuel.unwrap_or(u64::MAX))),
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

    /// Makes every computing guest yield to the host now rather than at the
    /// next epoch tick, so a cancel or shutdown is seen at once. Called when
    /// a client's `notifications/cancelled` arrives (after rmcp has fired the
    /// request's token) and when shutdown starts.
    pub fn interrupt_guests(&self) {
        self.engine.increment_epoch();
    }

    /// Runs the component's `cleanup` for `call_id` in a new store.
    async fn cleanup(
        &self,
        component: &ToolComponent,
        call_id: &Arc<str>,
        reason: StopReason,
    ) -> CleanupOutcome {
        self.stats.cleanup_ran();
        let limits = &component.limits;
        let budget = StoreBudget::for_cleanup(limits);
        let mut detached = ClientLink::detached(self.stats.clone());
        detached.limit_payloads(limits);
        let mut store = match new_store(
            &self.engine,
            &component.grants,
            &budget,
            CallCancellation::new(),
            call_id.clone(),
            detached,
        ) {
            Ok(store) => store,
            Err(err) => {
                tracing::warn!(call_id = &**call_id, "cannot create a store for cleanup: {err:#}");
                return CleanupOutcome::Failed;
            }
        };
        let _store_live = self.stats.store();
        let run = at_guest_priority(async {
            let instance = component.pre.instantiate_async(&mut store).await?;
            instance.mcp_tool_tool().call_cleanup(&mut store, call_id, reason.into()).await
        });
        // A cleanup that loops yields at every epoch tick, so the timeout
        // fires and dropping `run` stops it.
        match tokio::time::timeout(limits.cleanup_timeout, run).await {
            Ok(Ok(())) => CleanupOutcome::Done,
            Ok(Err(err)) => {
                // The error may quote the guest (names from its custom sections).
                let err = escape_controls(&format!("{err:#}")).into_owned();
                tracing::warn!(call_id = &**call_id, component = %component.name, "cleanup trapped: {err}");
                CleanupOutcome::Failed
            }
            Err(_) => {
                tracing::warn!(
                    call_id = &**call_id,
                    component = %component.name,
                    "cleanup did not finish within {:?} and was stopped",
                    limits.cleanup_timeout
                );
                CleanupOutcome::Failed
            }
        }
    }
}

/// The bytes a result carries to the client, before encoding.
fn output_size(result: &CallResult) -> usize {
    use crate::bindings::types::{Content, ResourceBody};
    let content: usize = result
        .content
        .iter()
        .map(|block| match block {
            Content::Text(text) => text.len(),
            Content::Image(media) | Content::Audio(media) => media.data.len(),
            Content::Embedded(resource) => match &resource.body {
                ResourceBody::Text(text) => text.len(),
                ResourceBody::Blob(bytes) => bytes.len(),
            },
            Content::ResourceLink(link) => link.uri.len() + link.name.len(),
        })
        .sum();
    content + result.structured_content.as_ref().map_or(0, String::len)
}

/// What can stop a call, besides the guest returning.
struct StopSignals {
    /// Fires when the client cancels the request.
    client_cancel: CancellationToken,
    /// Fires when the host shuts down.
    shutdown: CancellationToken,
    /// Fires when a paused call's lease runs out unanswered.
    unanswered: CancellationToken,
    /// The call's wall-clock limit.
    deadline: tokio::time::Instant,
    /// How long the guest may take to return once told to stop.
    grace: Duration,
}

/// Waits for the guest to return or for a reason to stop it; then tells the
/// guest (its `cancelled` flips) and waits up to the grace period for it to
/// return by itself. `None` means the guest did not return and must be
/// stopped by dropping it.
///
/// A computing guest holds this task until it yields, which it does at every
/// epoch tick; a client cancel or shutdown also bumps the epoch at once (see
/// [`CallRunner::interrupt_guests`]), so the stop is noticed within microseconds.
async fn stop_or_finish(
    mut guest: std::pin::Pin<&mut impl Future<Output = GuestResult>>,
    cancellation: &CallCancellation,
    stop: StopSignals,
) -> Option<GuestResult> {
    let reason = tokio::select! {
        // Poll the guest first: a call that finishes as the cancel arrives
        // keeps its result.
        biased;
        result = guest.as_mut() => return Some(result),
        // Shutdown before the client's cancel: when the session closes, rmcp
        // cancels every request too, but the reason is the shutdown.
        () = stop.shutdown.cancelled() => StopReason::Shutdown,
        () = stop.client_cancel.cancelled() => StopReason::ClientCancelled,
        () = stop.unanswered.cancelled() => StopReason::NoAnswer,
        () = tokio::time::sleep_until(stop.deadline) => StopReason::DeadlineExceeded,
    };
    cancellation.cancel(reason);
    if stop.grace.is_zero() {
        return None;
    }
    tokio::time::timeout(stop.grace, guest).await.ok()
}

#[derive(Clone, Copy, Debug)]
enum CleanupOutcome {
    Done,
    Failed,
}

impl CleanupOutcome {
    fn label(self) -> &'static str {
        match self {
            CleanupOutcome::Done => "done",
            CleanupOutcome::Failed => "failed",
        }
    }
}

impl CallOutcome {
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
        }
    }
}
