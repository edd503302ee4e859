//! A call in rounds (protocol 2026-07-28): paused across requests.
//!
//! There the server sends the client no requests: a call that needs the
//! user's answer (an approval, an elicitation) returns an `input_required`
//! result at once, and the client calls again with the answer and the
//! `requestState` it was given. The call itself does not start over: it
//! runs in a task of its own ([`Execution`]), parked where it asked, and
//! the table here holds it under a lease keyed by that `requestState`.
//! The follow-up call hands the answer over and waits for what the call
//! does next: finish, or pause again.
//!
//! A lease lasts as long as the question's own timeout, at most
//! `--approval-timeout`. When it runs out, the call is stopped like a
//! cancelled one (reason `no-answer`): its store is dropped and its
//! `cleanup` runs. Nothing paused outlives its lease.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, ErrorCode, InputRequests, InputRequiredResult, InputResponses,
    ProtocolVersion,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer};
use serde_json::{Value, json};
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;
use tracing::Instrument as _;

use crate::ask::{Delivery, Pause};
use crate::call::CallSignals;
use crate::mcp::ToolServer;
use crate::mcp::tools::CallPlan;
use crate::stats::{Live, Stats};

/// Whether the session is on protocol 2026-07-28 or later, where the server
/// sends the client no requests and questions travel in results.
pub(in crate::mcp) fn speaks_in_rounds(context: &RequestContext<RoleServer>) -> bool {
    context
        .protocol_version()
        .is_some_and(|version| version.as_str() >= ProtocolVersion::V_2026_07_28.as_str())
}

/// Starts `plan` in a task of its own and drives it for `context`'s
/// request: its response, or the `input_required` result of its first pause.
pub(in crate::mcp) async fn start(
    server: &ToolServer,
    plan: CallPlan,
    context: &RequestContext<RoleServer>,
    span: tracing::Span,
) -> Result<CallToolResponse, McpError> {
    let (pauses_tx, pauses) = mpsc::unbounded_channel();
    let (done_tx, done) = oneshot::channel();
    let signals = CallSignals::default();
    let caller = server.caller.clone();
    let channel =
        caller.channel(&plan, context, Delivery::Rounds(pauses_tx), context.meta.get_progress_token());
    let execution = Execution { tool: plan.spec().name.clone(), pauses, done, signals: signals.clone() };
    tokio::spawn(
        async move {
            let response = caller.execute(&plan, signals, channel).await;
            let _ = done_tx.send(response);
        }
        .instrument(span),
    );
    server.calls(context).paused.drive(execution, &context.ct).await
}

/// A follow-up `tools/call` carrying `state` (the `requestState` it was
/// handed) and the user's answer: resumes that paused call.
pub(in crate::mcp) async fn resume(
    server: &ToolServer,
    state: &str,
    mut request: CallToolRequestParams,
    context: &RequestContext<RoleServer>,
    span: tracing::Span,
) -> Result<CallToolResponse, McpError> {
    let responses = request.input_responses.take();
    let paused = &server.calls(context).paused;
    paused.resume(state, &request.name, responses, &context.ct).instrument(span).await
}

/// A call running in its own task, driven by whichever request currently
/// stands for it.
pub(super) struct Execution {
    /// The tool it runs, so a follow-up cannot resume it as another tool.
    tool: String,
    /// Where the call's questions arrive.
    pauses: mpsc::UnboundedReceiver<Pause>,
    /// The call's response, once it has one.
    done: oneshot::Receiver<Result<CallToolResponse, McpError>>,
    /// How to stop it.
    signals: CallSignals,
}

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
    async fn drive(
        self: &Arc<Self>,
        mut execution: Execution,
        request: &CancellationToken,
    ) -> Result<CallToolResponse, McpError> {
        tokio::select! {
            biased;
            done = &mut execution.done => done.unwrap_or_else(|_| {
                Err(McpError::internal_error("the call ended without a response", None))
            }),
            Some(pause) = execution.pauses.recv() => Ok(self.hold(execution, pause)),
            () = request.cancelled() => {
                execution.signals.client_cancel.cancel();
                // rmcp sends nothing for a cancelled request.
                Err(McpError::new(ErrorCode::INTERNAL_ERROR, "request cancelled", None))
            }
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
    async fn resume(
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
