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

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use rmcp::ErrorData as McpError;
use rmcp::model::{CallToolResponse, InputRequests, InputRequiredResult, InputResponses};
use serde_json::{Value, json};
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use super::{Execution, Step};
use crate::ask::Pause;
use crate::stats::{Live, Stats};

/// A paused call and what its answer unblocks.
struct Lease {
    execution: Execution,
    /// The key the answer comes under in `inputResponses`.
    key: String,
    answer: oneshot::Sender<Value>,
    /// Stops the lease's timer when the call is resumed first.
    expiry: tokio::task::AbortHandle,
    _counted: Live,
}

/// Every paused call, by the `requestState` handed to the client.
pub(in crate::mcp) struct PausedCalls {
    leases: Mutex<HashMap<String, Lease>>,
    stats: Arc<Stats>,
}

impl PausedCalls {
    /// An empty table that counts its leases in `stats`.
    pub(in crate::mcp) fn new(stats: Arc<Stats>) -> Arc<Self> {
        Arc::new(PausedCalls { leases: Mutex::default(), stats })
    }

    /// Drives `execution` for the request whose cancellation is `request`,
    /// until the call finishes (its response) or pauses (an
    /// `input_required` result, the call held under a lease). A cancelled
    /// request stops the call.
    pub(super) async fn drive(
        self: &Arc<Self>,
        execution: Execution,
        request: &CancellationToken,
    ) -> Result<CallToolResponse, McpError> {
        match execution.step(request).await {
            Step::Done(response) => response,
            Step::Paused(execution, pause) => Ok(self.hold(execution, *pause)),
        }
    }

    /// Holds `execution` under a new lease and words the pause for the client.
    fn hold(self: &Arc<Self>, execution: Execution, pause: Pause) -> CallToolResponse {
        // Unguessable: a client cannot resume a call it was not handed. In a
        // session only that session's requests see this table; 2026-07-28
        // over HTTP has no sessions, and there the id is the only key.
        let id = uuid::Uuid::new_v4().to_string();
        // Locked before the timer starts, so even a zero lease finds its entry.
        let mut leases = self.leases.lock().unwrap();
        let expiry = {
            let (table, id, lease) = (Arc::downgrade(self), id.clone(), pause.lease);
            tokio::spawn(async move {
                tokio::time::sleep(lease).await;
                if let Some(table) = table.upgrade()
                    && let Some(lease) = table.take(&id)
                {
                    tracing::info!(tool = %lease.execution.tool, "paused call got no answer within its lease; stopping it");
                    lease.execution.signals.unanswered.cancel();
                }
            })
            .abort_handle()
        };
        let requests = InputRequests::from([(pause.key.clone(), pause.request)]);
        let lease =
            Lease { execution, key: pause.key, answer: pause.answer, expiry, _counted: self.stats.lease() };
        leases.insert(id.clone(), lease);
        CallToolResponse::InputRequired(InputRequiredResult::new(Some(requests), Some(id)))
    }

    /// Stops every paused call (its session ended): each is cancelled as
    /// if by the client, and cleans up.
    pub(in crate::mcp) fn stop_all(&self) {
        let leases: Vec<Lease> = self.leases.lock().unwrap().drain().map(|(_, lease)| lease).collect();
        for lease in leases {
            lease.expiry.abort();
            lease.execution.signals.client_cancel.cancel();
        }
    }

    fn take(&self, id: &str) -> Option<Lease> {
        self.leases.lock().unwrap().remove(id)
    }

    /// Resumes the call paused under `id` with the client's `responses`,
    /// and drives it on for `request`.
    pub(super) async fn resume(
        self: &Arc<Self>,
        id: &str,
        tool: &str,
        responses: Option<InputResponses>,
        request: &CancellationToken,
    ) -> Result<CallToolResponse, McpError> {
        let lease = {
            let mut leases = self.leases.lock().unwrap();
            match leases.get(id) {
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
        lease.expiry.abort();
        // No answer under the key asked: the user gave none, which is not a yes.
        let answer = responses
            .and_then(|mut responses| responses.remove(&lease.key))
            .unwrap_or_else(|| json!({ "action": "cancel" }));
        let _ = lease.answer.send(answer);
        self.drive(lease.execution, request).await
    }
}
