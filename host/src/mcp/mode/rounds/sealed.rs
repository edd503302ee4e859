//! Paused calls carried by the client (`--state-key-file`): nothing stays
//! in this process. When a call asks the user, its state — the answers so
//! far and the open question — is sealed into the `requestState` and the
//! call stops here (its `cleanup` runs, reason `no-answer`). The follow-up
//! may land on any replica holding the key: that replica checks the state
//! against the follow-up's own tool, arguments and client, runs the call
//! again, and answers the guest's questions from the state in order
//! ([`crate::ask::AnswerBook`]). A tool should therefore ask before it acts,
//! as the protocol expects: what it did before a question, it does again.
//! For a client of the tasks extension, a call that runs on past the quick
//! moment becomes a task on the replica running it (kept in `--task-store`
//! for the others), and asks its later questions there.

use std::sync::Arc;

use rmcp::model::{CallToolRequestParams, InputRequests, InputRequiredResult, InputResponses};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::{Execution, PromptRun, Round, Step, TaskTurn};
use crate::ask::{AnswerBook, Pause, PausedQuestion};
use crate::call::Share;
use crate::mcp::tools::CallPlan;
use crate::mcp::{ToolServer, access};
use crate::request_state::{Answered, Binding, Pending, StateKeys};
use crate::stats::Stats;
use crate::telemetry::spans::RequestSpan;

/// How a call's pauses are sealed: the keys, the call they are bound to,
/// and the trace of the request that runs it.
pub(super) struct Sealing {
    keys: Arc<StateKeys>,
    binding: Binding,
    trace: Option<String>,
}

impl Sealing {
    /// Sealing for the call `binding` names, run in `span`.
    pub(super) fn new(keys: Arc<StateKeys>, binding: Binding, span: &RequestSpan) -> Self {
        Sealing { keys, binding, trace: span.traceparent() }
    }

    /// Drives `execution` for the request whose cancellation is `request`:
    /// its response, or the `input_required` result of its pause, sealed.
    pub(super) async fn drive<'a>(
        self,
        execution: Execution,
        request: &CancellationToken,
        stats: &Stats,
        turn: impl FnOnce(&Execution) -> Option<TaskTurn<'a>>,
    ) -> Result<Round, McpError> {
        match execution.step(request).await {
            Step::Done(response) => response.map(Round::Finished),
            Step::Paused(execution, pause) => self.hand_off(&execution, *pause, stats).map(Round::Input),
            // Past the quick moment, the call runs on here as a task: its
            // later pauses are the task's, never sealed.
            Step::Slow(execution) => TaskTurn::take(execution, turn).await,
        }
    }

    /// Seals the call's state at `pause` into the result, and stops the call.
    fn hand_off(
        &self,
        execution: &Execution,
        pause: Pause,
        stats: &Stats,
    ) -> Result<InputRequiredResult, McpError> {
        let Pause { questions, answered, lease } = pause;
        let mut requests = InputRequests::new();
        let mut pending = Vec::with_capacity(questions.len());
        // Nobody answers here: dropping each answer's sender ends the
        // guest's wait, and the signal says why the call stops.
        for PausedQuestion { key, request, question, answer: _ } in questions {
            pending.push(Pending { question, key: key.clone() });
            requests.insert(key, request);
        }
        let mut state = self.keys.paused(answered, pending);
        state.trace = self.trace.clone();
        let sealed = self.keys.seal(&state, &self.binding, lease);
        match sealed {
            Ok(sealed) => {
                execution.signals.handed_off.cancel();
                stats.metrics().request_state("sealed");
                tracing::debug!(tool = %execution.tool, questions = requests.len(), "paused call handed to the client, sealed");
                Ok(InputRequiredResult::new(Some(requests), Some(sealed)))
            }
            Err(err) => {
                execution.signals.unanswered.cancel();
                Err(McpError::internal_error(format!("`{}` cannot pause: {err}", execution.tool), None))
            }
        }
    }
}

/// Opens the sealed `state` a follow-up `request` carries: the follow-up's
/// call (routed and checked like a new one) and the answers to replay, the
/// one it brings last. A state that fails its seal for this call, expired,
/// or was redeemed here already is refused, saying which. The follow-up's
/// `span` joins the trace of the request that paused the call.
pub(super) async fn reopen(
    server: &ToolServer,
    keys: &StateKeys,
    state: &str,
    mut request: CallToolRequestParams,
    context: &RequestContext<RoleServer>,
    span: &RequestSpan,
    share: Share,
) -> Result<(CallPlan, AnswerBook), McpError> {
    let responses = request.input_responses.take();
    let shared = &server.caller.shared;
    let plan = shared.loaded_tools(&context.ct).await?.plan(request, &shared.runner).await?.admitted(share);
    let binding = binding(&plan.spec().name, &plan.arguments, context);
    let book = redeem(server, keys, state, &binding, &plan.spec().name, responses, span)?;
    Ok((plan, book))
}

/// Opens the sealed `state` a follow-up `prompts/get` carries, for the
/// prompt `run` it asks for: the answers to replay.
pub(super) fn reopen_prompt(
    server: &ToolServer,
    keys: &StateKeys,
    state: &str,
    run: &PromptRun,
    responses: Option<InputResponses>,
    context: &RequestContext<RoleServer>,
    span: &RequestSpan,
) -> Result<AnswerBook, McpError> {
    let label = super::prompt_label(&run.name);
    let binding = binding(&label, &run.arguments, context);
    redeem(server, keys, state, &binding, &label, responses, span)
}

/// Redeems `state` for the call `binding` names (`label` in logs): the
/// answers it was given before, then `responses` to its open questions.
fn redeem(
    server: &ToolServer,
    keys: &StateKeys,
    state: &str,
    binding: &Binding,
    label: &str,
    responses: Option<InputResponses>,
    span: &RequestSpan,
) -> Result<AnswerBook, McpError> {
    let metrics = server.caller.shared.runner.stats().metrics();
    let mut state = keys.redeem(state, binding).map_err(|err| {
        metrics.request_state("refused");
        tracing::info!(tool = %label, "follow-up refused: {err}");
        McpError::invalid_params(err.to_string(), None)
    })?;
    span.continues(state.trace.as_deref());
    let same = state.origin == keys.replica();
    metrics.request_state(if same { "resumed-same-replica" } else { "resumed-other-replica" });
    tracing::info!(
        tool = %label,
        paused_by = %state.origin,
        answers = state.answered.len() + state.pending().count(),
        "continuing a paused call from its sealed state: running it again"
    );
    // No answer under a key asked: the user gave none, which is not a yes.
    let mut responses = responses.unwrap_or_default();
    let mut answers = std::mem::take(&mut state.answered);
    for pending in state.into_pending() {
        let answer = responses.remove(&pending.key).unwrap_or_else(|| json!({ "action": "cancel" }));
        answers.push(Answered { question: pending.question, answer });
    }
    Ok(AnswerBook::new(answers))
}

/// What a state of a call of `name` with `arguments` is bound to: the tool
/// (or prompt), its arguments, and the client — its MCP session, if any,
/// and who it is: with `--auth-issuer` its principal (issuer and subject,
/// so a refreshed token still continues the call), else its
/// `Authorization` header, if any.
pub(super) fn binding(name: &str, arguments: &Value, context: &RequestContext<RoleServer>) -> Binding {
    let headers = context.extensions.get::<http::request::Parts>().map(|request| &request.headers);
    let header = |name: &str| headers.and_then(|headers| headers.get(name)).map(|value| value.as_bytes());
    let session = header("mcp-session-id").map(String::from_utf8_lossy);
    let principal = access::caller(context).map(|principal| format!("principal {}", principal.key()));
    let client = principal.as_ref().map(String::as_bytes).or_else(|| header("authorization"));
    Binding::new(name, arguments, session.as_deref(), client)
}
