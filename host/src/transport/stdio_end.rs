//! What the end of stdin means: the client will send nothing more, and
//! every request it already sent gets its answer.
//!
//! A client that closes stdin (a shell heredoc, `echo … | mcp-wasm-host`,
//! an SDK's `close`) has said all it will say; it may still read stdout.
//! So the host answers what it has received, calls still waiting for a
//! component to load or for a slot included, and then exits:
//! - the drain (`--eof-drain`) starts once every component has loaded, so a
//!   call received before a cold compile ends still gets to start;
//! - what is still unanswered when the drain ends is stopped and cleaned up
//!   as at a cancel, and answered as stopped;
//! - a question to the client can no longer be answered: those open at the
//!   end, and any asked after it, fail at once (an approval is declined);
//! - a `notifications/cancelled` read before the end, or a signal, still
//!   stops a call at once; so does a stdout that cannot be written (then
//!   nobody is left to answer).
//!
//! The [`Ledger`] knows which requests are unanswered each way: the reading
//! half notes what arrives, the writing half what goes out. [`Ending`] is
//! the reading half's wait at the end of input.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use rmcp::RoleServer;
use rmcp::model::{
    ClientNotification, ErrorData, JsonRpcError, JsonRpcMessage, JsonRpcVersion2_0, RequestId,
};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use tokio::sync::{Notify, watch};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::audit::{AuditLog, Drain};
use crate::budget::{Budget, Charge};
use crate::transport::signal::SHUTDOWN_BUDGET;

/// The longest the end of input waits for the components to load before
/// the drain starts anyway: the bound a request itself waits for them.
const LOAD_WAIT: Duration = crate::mcp::LOAD_WAIT;

/// The requests each way still waiting for an answer, shared by the reading
/// and the writing half of stdio, and what the client's requests hold of
/// the host's memory until they are answered (`--max-request-memory`, as
/// over HTTP: each frame is charged what it costs parsed before it is
/// parsed, [`crate::json_size::parsed_cost`]).
pub(crate) struct Ledger {
    open: Mutex<Open>,
    /// What all requests in flight may hold together.
    memory: Arc<Budget>,
    /// Woken when an answer goes out or a question must be failed.
    changed: Notify,
    /// Fired when stdout cannot be written: the client is gone.
    shutdown: CancellationToken,
}

#[derive(Default)]
struct Open {
    /// Requests from the client not answered yet, with what each holds.
    received: HashMap<RequestId, Charge>,
    /// Requests to the client not answered yet.
    asked: HashSet<RequestId>,
    /// Requests to the client to fail: it can no longer answer them.
    unanswerable: Vec<RequestId>,
    /// The input has ended.
    ended: bool,
}

impl Open {
    /// Request `id` is answered (or cancelled): what it held is free.
    fn answered(&mut self, id: &RequestId) {
        self.received.remove(id);
    }
}

impl Ledger {
    /// A ledger that fires `shutdown` when the output fails, and lets
    /// requests in flight hold `memory_limit` bytes of memory together.
    pub(crate) fn new(shutdown: CancellationToken, memory_limit: usize) -> Self {
        Ledger {
            open: Mutex::default(),
            memory: Budget::shared("--max-request-memory", memory_limit),
            changed: Notify::new(),
            shutdown,
        }
    }

    /// Takes what a frame will cost parsed (`cost`) from
    /// `--max-request-memory`, before it is parsed; a refusal says how much
    /// the requests in flight hold.
    pub(crate) fn charge(&self, cost: usize) -> Result<Charge, String> {
        self.memory.charge_owned(cost).map_err(|over| {
            let shown = crate::limits::HumanBytes;
            format!(
                "the request would take {} of memory once parsed, and requests in flight hold {} of the {} \
                 they may hold together (--max-request-memory); retry once some are answered",
                shown(over.asked),
                shown(over.held),
                shown(over.limit)
            )
        })
    }

    fn lock(&self) -> MutexGuard<'_, Open> {
        self.open.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Notes a message read from the client; a request keeps its `charge`
    /// until it is answered (anything else gives it back now).
    pub(crate) fn read(&self, message: &RxJsonRpcMessage<RoleServer>, charge: Charge) {
        let mut open = self.lock();
        match message {
            JsonRpcMessage::Request(request) => {
                open.received.insert(request.id.clone(), charge);
            }
            JsonRpcMessage::Response(response) => {
                open.asked.remove(&response.id);
            }
            JsonRpcMessage::Error(error) => {
                if let Some(id) = &error.id {
                    open.asked.remove(id);
                }
            }
            // rmcp sends no answer to a request the client cancelled.
            JsonRpcMessage::Notification(notification) => {
                if let ClientNotification::CancelledNotification(cancelled) = &notification.notification
                    && let Some(id) = &cancelled.params.request_id
                {
                    open.answered(id);
                }
            }
        }
    }

    /// Notes a message about to be written. `false` for a request to a
    /// client whose input has ended: it is not written, and fails instead.
    pub(crate) fn write(&self, message: &TxJsonRpcMessage<RoleServer>) -> bool {
        let mut open = self.lock();
        let write = match message {
            JsonRpcMessage::Request(request) if open.ended => {
                open.unanswerable.push(request.id.clone());
                false
            }
            JsonRpcMessage::Request(request) => {
                open.asked.insert(request.id.clone());
                true
            }
            JsonRpcMessage::Response(response) => {
                open.answered(&response.id);
                true
            }
            JsonRpcMessage::Error(error) => {
                if let Some(id) = &error.id {
                    open.answered(id);
                }
                true
            }
            JsonRpcMessage::Notification(_) => true,
        };
        let ended = open.ended;
        drop(open);
        if ended {
            self.changed.notify_one();
        }
        write
    }

    /// stdout could not be written: nobody is left to read an answer, so
    /// every call stops now.
    pub(crate) fn output_failed(&self, err: &std::io::Error) {
        if !self.shutdown.is_cancelled() {
            tracing::info!("cannot write to stdout ({err}); stopping every call");
            self.shutdown.cancel();
        }
    }

    /// The input has ended: the questions still open can no longer be
    /// answered. Returns how many requests wait for their answer.
    fn end(&self) -> usize {
        let mut open = self.lock();
        open.ended = true;
        let asked = std::mem::take(&mut open.asked);
        open.unanswerable.extend(asked);
        open.received.len()
    }

    fn next_unanswerable(&self) -> Option<RequestId> {
        self.lock().unanswerable.pop()
    }

    fn unanswered(&self) -> usize {
        self.lock().received.len()
    }
}

/// Where the end of input is.
enum Phase {
    /// The input has not ended.
    Reading,
    /// Ended; the components are still loading (since then).
    Loading(Instant),
    /// Calls are finishing, until then.
    Draining(Instant),
    /// Calls are being stopped and cleaned up, until then.
    Stopping(Instant),
}

/// The reading half's wait at the end of input, for the answers owed.
pub(crate) struct Ending {
    ledger: Arc<Ledger>,
    drain: Duration,
    loaded: watch::Receiver<bool>,
    shutdown: CancellationToken,
    phase: Phase,
    /// Where the end of input is recorded as a drain.
    audit: AuditLog,
}

impl Ending {
    /// Answers owed are given `drain` once `loaded` is true, then the calls
    /// still running are stopped through `shutdown`.
    pub(crate) fn new(
        ledger: Arc<Ledger>,
        drain: Duration,
        loaded: watch::Receiver<bool>,
        shutdown: CancellationToken,
        audit: AuditLog,
    ) -> Self {
        Ending { ledger, drain, loaded, shutdown, phase: Phase::Reading, audit }
    }

    /// Whether the input has ended.
    pub(crate) fn has_begun(&self) -> bool {
        !matches!(self.phase, Phase::Reading)
    }

    /// The ledger the writing half keeps.
    pub(crate) fn ledger(&self) -> &Arc<Ledger> {
        &self.ledger
    }

    /// At the end of input: the next message for rmcp (an error answering
    /// a question the client can no longer answer), or `None` once every
    /// request is answered or the time for them is up. Safe to drop and
    /// call again: its state lives in `self`.
    pub(crate) async fn next(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        if let Phase::Reading = self.phase {
            match self.ledger.end() {
                0 => tracing::info!("input closed; exiting"),
                requests => tracing::info!(
                    requests,
                    drain_ms = self.drain.as_millis() as u64,
                    "input closed; answering the requests already received, then exiting"
                ),
            }
            self.phase = Phase::Loading(Instant::now());
            self.audit.drain(Drain::Eof);
        }
        loop {
            if let Some(id) = self.ledger.next_unanswerable() {
                return Some(unanswerable(id));
            }
            if self.ledger.unanswered() == 0 {
                return None;
            }
            let now = Instant::now();
            let stopping = self.shutdown.is_cancelled();
            let (loading, until) = match self.phase {
                Phase::Reading => unreachable!("set above"),
                Phase::Loading(since) => {
                    if *self.loaded.borrow() || stopping || now >= since + LOAD_WAIT {
                        self.phase = Phase::Draining(now + self.drain);
                        continue;
                    }
                    (true, since + LOAD_WAIT)
                }
                Phase::Draining(until) => {
                    if stopping || now >= until {
                        self.stop();
                        continue;
                    }
                    (false, until)
                }
                Phase::Stopping(until) => {
                    if now >= until {
                        tracing::warn!(
                            requests = self.ledger.unanswered(),
                            "exiting with requests unanswered after their calls were stopped"
                        );
                        return None;
                    }
                    (false, until)
                }
            };
            let watched = matches!(self.phase, Phase::Draining(_));
            tokio::select! {
                () = self.ledger.changed.notified() => {}
                loaded = self.loaded.wait_for(|loaded| *loaded), if loading => {
                    // The sender lives as long as the server; were it gone,
                    // nothing is left to wait for.
                    if loaded.is_err() {
                        self.phase = Phase::Draining(Instant::now() + self.drain);
                    }
                }
                () = self.shutdown.cancelled(), if watched => {}
                () = tokio::time::sleep_until(until) => {}
            }
        }
    }

    /// The drain is over (or a signal came): every call still running stops.
    fn stop(&mut self) {
        if !self.shutdown.is_cancelled() {
            tracing::info!(
                requests = self.ledger.unanswered(),
                drain_ms = self.drain.as_millis() as u64,
                "the drain after the input closed is over; stopping the calls still running"
            );
            self.shutdown.cancel();
        }
        self.phase = Phase::Stopping(Instant::now() + SHUTDOWN_BUDGET);
    }
}

/// The error that answers, in the client's stead, a question it can no
/// longer answer.
fn unanswerable(id: RequestId) -> RxJsonRpcMessage<RoleServer> {
    JsonRpcMessage::Error(JsonRpcError {
        jsonrpc: JsonRpcVersion2_0,
        id: Some(id),
        error: ErrorData::internal_error("the client closed its input: it can no longer answer", None),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(line: serde_json::Value) -> RxJsonRpcMessage<RoleServer> {
        serde_json::from_value(line).unwrap()
    }

    #[test]
    fn a_cancelled_request_is_owed_no_answer_and_questions_fail_once_input_ends() {
        let ledger = Ledger::new(CancellationToken::new(), 1 << 20);
        let call = |id: u64| {
            message(serde_json::json!({ "jsonrpc": "2.0", "id": id, "method": "tools/call",
                "params": { "name": "echo", "arguments": {} } }))
        };
        ledger.read(&call(1), ledger.charge(100).unwrap());
        ledger.read(&call(2), ledger.charge(200).unwrap());
        ledger.read(
            &message(serde_json::json!({ "jsonrpc": "2.0", "method": "notifications/cancelled",
            "params": { "requestId": 2 } })),
            ledger.charge(50).unwrap(),
        );
        assert_eq!(ledger.unanswered(), 1);
        // The cancelled request's charge is free again, and the
        // notification's; the open one's is held.
        assert_eq!(ledger.memory.held(), 100);
        assert!(ledger.charge((1 << 20) - 100).is_ok());
        let refused = ledger.charge((1 << 20) - 99).unwrap_err();
        assert!(refused.contains("--max-request-memory"), "{refused}");

        let asked: TxJsonRpcMessage<RoleServer> = serde_json::from_value(serde_json::json!({
            "jsonrpc": "2.0", "id": 7, "method": "ping" }))
        .unwrap();
        assert!(ledger.write(&asked), "written while the input is open");
        assert_eq!(ledger.end(), 1);
        assert_eq!(ledger.next_unanswerable(), Some(RequestId::Number(7)));
        // Asked after the end: not written, failed instead.
        assert!(!ledger.write(&asked));
        assert_eq!(ledger.next_unanswerable(), Some(RequestId::Number(7)));
        assert_eq!(ledger.next_unanswerable(), None);
    }
}
