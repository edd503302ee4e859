//! Paused calls parked in this process (no `--state-key-file`): the call
//! does not start over. It stays parked where it asked, and the table here
//! holds it under a lease keyed by its `requestState`. The follow-up call
//! hands the answer over and waits for what the call does next: finish, or
//! pause again.
//!
//! A lease lasts as long as the question's own timeout, at most
//! `--approval-timeout`. When it runs out, the call is stopped like a
//! cancelled one (reason `no-answer`): its store is dropped and its
//! `cleanup` runs. Nothing paused outlives its lease.
//!
//! One sweeper task per table watches every lease's expiry (a
//! `DelayQueue`), rather than a timer task per lease: with thousands of
//! calls paused, a task each was 0.4 KiB a call.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};
use std::task::Poll;

use rmcp::ErrorData as McpError;
use rmcp::model::{InputRequests, InputRequiredResult, InputResponses};
use serde_json::{Value, json};
use tokio::sync::oneshot;
use tokio::task::AbortHandle;
use tokio_util::sync::CancellationToken;
use tokio_util::time::{DelayQueue, delay_queue};

use super::{Execution, Round, Step, TaskTurn};
use crate::ask::Pause;
use crate::stats::{Live, Stats};

/// The queue refuses deadlines past ~2 years; no lease needs a year.
const LONGEST_LEASE: std::time::Duration = std::time::Duration::from_secs(365 * 24 * 3600);

/// A paused call and what its answers unblock.
struct Lease {
    execution: Execution,
    /// Each question's key in `inputResponses`, and where its answer goes.
    answers: Vec<(String, oneshot::Sender<Value>)>,
    /// Its entry in `Leases::expiries`, removed when the call is resumed first.
    expiry: delay_queue::Key,
    _counted: Live,
}

/// The leases and when each runs out. One lock for both, so a lease is in
/// `by_id` exactly while its expiry is queued.
#[derive(Default)]
struct Leases {
    by_id: HashMap<String, Lease>,
    /// Made with the first lease: a table is made for every session, and
    /// over HTTP for every 2026-07-28 request (rmcp makes a server for
    /// each), which never holds a lease; an empty `DelayQueue` is its
    /// timer wheel, ~6 KiB allocated and zeroed.
    expiries: Option<DelayQueue<String>>,
    /// The task stopping leases that run out; running while any is queued.
    sweeper: Option<AbortHandle>,
}

impl Leases {
    /// Takes the lease `id` and its queued expiry.
    fn remove(&mut self, id: &str) -> Option<Lease> {
        let lease = self.by_id.remove(id)?;
        if let Some(expiries) = &mut self.expiries {
            expiries.remove(&lease.expiry);
        }
        Some(lease)
    }
}

/// Every paused call, by the `requestState` handed to the client.
pub(in crate::mcp) struct PausedCalls {
    leases: Mutex<Leases>,
    stats: Arc<Stats>,
}

impl Drop for PausedCalls {
    fn drop(&mut self) {
        // The sweeper holds the table weakly; woken by nothing once the
        // table is gone, it would stay parked for good.
        let leases = self.leases.get_mut().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(sweeper) = leases.sweeper.take() {
            sweeper.abort();
        }
    }
}

impl PausedCalls {
    /// An empty table that counts its leases in `stats`.
    pub(in crate::mcp) fn new(stats: Arc<Stats>) -> Arc<Self> {
        Arc::new(PausedCalls { leases: Mutex::default(), stats })
    }

    /// Stops each call whose lease runs out, until none is left to watch.
    async fn sweep(table: Weak<PausedCalls>) {
        loop {
            let expired = std::future::poll_fn(|cx| {
                let Some(table) = table.upgrade() else { return Poll::Ready(None) };
                let mut leases = table.leases.lock().unwrap();
                let queued =
                    leases.expiries.as_mut().map_or(Poll::Ready(None), |queue| queue.poll_expired(cx));
                let polled = match queued {
                    Poll::Ready(Some(expired)) => Poll::Ready(Some(leases.by_id.remove(expired.get_ref()))),
                    Poll::Ready(None) => {
                        // Nothing queued: the next lease starts a new sweeper.
                        leases.sweeper = None;
                        Poll::Ready(None)
                    }
                    Poll::Pending => Poll::Pending,
                };
                drop(leases);
                polled
            })
            .await;
            match expired {
                Some(Some(lease)) => {
                    tracing::info!(tool = %lease.execution.tool, "paused call got no answer within its lease; stopping it");
                    lease.execution.signals.unanswered.cancel();
                }
                Some(None) => {}
                None => return,
            }
        }
    }

    /// Drives `execution` for the request whose cancellation is `request`,
    /// until the call finishes (its response) or pauses (an
    /// `input_required` result, the call held under a lease). A cancelled
    /// request stops the call.
    /// A call that may become a task and runs past [`super::task::QUICK`]
    /// becomes the task `turn` makes.
    pub(super) async fn drive<'a>(
        self: &Arc<Self>,
        execution: Execution,
        request: &CancellationToken,
        turn: impl FnOnce(&Execution) -> Option<TaskTurn<'a>>,
    ) -> Result<Round, McpError> {
        match execution.step(request).await {
            Step::Done(response) => response.map(Round::Finished),
            Step::Paused(execution, pause) => Ok(Round::Input(self.hold(execution, *pause))),
            Step::Slow(execution) => TaskTurn::take(execution, turn).await,
        }
    }

    /// Holds `execution` under a new lease and words the pause for the client.
    fn hold(self: &Arc<Self>, execution: Execution, pause: Pause) -> InputRequiredResult {
        // Unguessable: a client cannot resume a call it was not handed. In a
        // session only that session's requests see this table; 2026-07-28
        // over HTTP has no sessions, and there the id is the only key.
        let id = uuid::Uuid::new_v4().to_string();
        // Queued and entered under one lock, so even a zero lease finds its entry.
        let mut leases = self.leases.lock().unwrap();
        let expiries = leases.expiries.get_or_insert_with(DelayQueue::new);
        let expiry = expiries.insert(id.clone(), pause.lease.min(LONGEST_LEASE));
        if leases.sweeper.is_none() {
            leases.sweeper = Some(tokio::spawn(Self::sweep(Arc::downgrade(self))).abort_handle());
        }
        let mut requests = InputRequests::new();
        let mut answers = Vec::with_capacity(pause.questions.len());
        for question in pause.questions {
            requests.insert(question.key.clone(), question.request);
            answers.push((question.key, question.answer));
        }
        let lease = Lease { execution, answers, expiry, _counted: self.stats.lease() };
        leases.by_id.insert(id.clone(), lease);
        InputRequiredResult::new(Some(requests), Some(id))
    }

    /// Stops every paused call (its session ended): each is cancelled as
    /// if by the client, and cleans up.
    pub(in crate::mcp) fn stop_all(&self) {
        let leases: Vec<Lease> = {
            let mut leases = self.leases.lock().unwrap();
            if let Some(expiries) = &mut leases.expiries {
                expiries.clear();
            }
            leases.by_id.drain().map(|(_, lease)| lease).collect()
        };
        for lease in leases {
            lease.execution.signals.client_cancel.cancel();
        }
    }

    /// Resumes the call paused under `id` with the client's `responses`,
    /// and drives it on for `request`; only `owner`, who started it, may.
    pub(super) async fn resume<'a>(
        self: &Arc<Self>,
        id: &str,
        tool: &str,
        owner: Option<&str>,
        responses: Option<InputResponses>,
        request: &CancellationToken,
        turn: impl FnOnce(&Execution) -> Option<TaskTurn<'a>>,
    ) -> Result<Round, McpError> {
        let lease = {
            let mut leases = self.leases.lock().unwrap();
            // Another caller's paused call is answered as one never paused.
            match leases.by_id.get(id).filter(|lease| lease.execution.owner.as_deref() == owner) {
                Some(lease) if lease.execution.tool != tool => {
                    return Err(McpError::invalid_params(
                        format!("requestState belongs to a call of `{}`, not `{tool}`", lease.execution.tool),
                        None,
                    ));
                }
                Some(_) => leases.remove(id).expect("present"),
                None => {
                    return Err(McpError::invalid_params(
                        "no paused call has this requestState: it was resumed already, or no answer came \
                         within its lease (--approval-timeout) and it was stopped; call the tool again",
                        Some(json!({ "requestState": id })),
                    ));
                }
            }
        };
        // No answer under a key asked: the user gave none, which is not a
        // yes. Keys the call did not ask are ignored.
        let mut responses = responses.unwrap_or_default();
        for (key, answer) in lease.answers {
            let _ = answer.send(responses.remove(&key).unwrap_or_else(|| json!({ "action": "cancel" })));
        }
        self.drive(lease.execution, request, turn).await
    }
}
