//! A call in rounds (protocol 2026-07-28): paused across requests.
//!
//! There the server sends the client no requests: a call that needs the
//! user's answer (an approval, an elicitation) returns an `input_required`
//! result at once, and the client calls again with the answer and the
//! `requestState` it was given. The call ([`Execution`]) is driven by
//! whichever request currently stands for it. It runs in its first
//! request's own future, and moves to a task of its own only when it
//! outlives that request: it pauses, becomes a task, or the request is
//! cancelled (so a call that asks nothing costs no task, no hand-over
//! between threads).
//! The same holds for a prompt whose `get-prompt` asks the user
//! (`prompts/get` in rounds, [`Work::Prompt`]).
//! Where it waits for the answer depends on `--state-key-file`:
//!
//! - [`parked`] (no key): the call stays parked where it asked, in this
//!   process, under a lease keyed by the `requestState`; the follow-up
//!   hands the answer over and the call goes on;
//! - [`sealed`] (a key): nothing stays here. The `requestState` is the
//!   call's state, sealed; the follow-up may land on any replica, which
//!   runs the call again and answers its questions from the state.

mod parked;
mod sealed;

use std::convert::Infallible;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use futures_util::StreamExt as _;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, CreateTaskResult, ErrorCode,
    GetPromptRequestParams, GetPromptResponse, GetPromptResult, InputRequiredResult, InputResponses,
    ProtocolVersion,
};
use rmcp::service::RequestContext;
use rmcp::task_manager::TaskExit;
use rmcp::{ErrorData as McpError, RoleServer};
use serde_json::Value;
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use super::task;
use crate::ask::{AnswerBook, CallIdentity, Delivery, Pause, PauseReceiver, RoundTrips};
use crate::audit::Who;
use crate::call::{CallOutcome, CallSignals, Share};
use crate::component::ToolComponent;
use crate::contract::tasks_export::TaskSupport;
use crate::mcp::tools::CallPlan;
use crate::mcp::{ToolServer, access, result};
use crate::operation::Operation;
use crate::tasks::{NoAnswer, TaskHandle};
use crate::telemetry::spans::RequestSpan;

pub(in crate::mcp) use parked::PausedCalls;

/// Whether the session is on protocol 2026-07-28 or later, where the server
/// sends the client no requests and questions travel in results.
pub(in crate::mcp) fn speaks_in_rounds(context: &RequestContext<RoleServer>) -> bool {
    context
        .protocol_version()
        .is_some_and(|version| version.as_str() >= ProtocolVersion::V_2026_07_28.as_str())
}

/// What runs in rounds: a tool call, or a prompt that may ask first.
pub(in crate::mcp) enum Work {
    /// A checked, admitted tool call.
    Tool(CallPlan),
    /// A checked prompt request.
    Prompt(PromptRun),
}

/// A prompt request ready to run: its component, what to run, and the
/// caller's slot.
pub(in crate::mcp) struct PromptRun {
    /// The prompt's name.
    pub name: String,
    /// Its arguments as the client sent them (what a sealed state binds).
    pub arguments: Value,
    /// The component that offers it.
    pub component: Arc<ToolComponent>,
    /// The `get-prompt` to run.
    pub operation: Operation,
    /// The caller's slot among its share of calls.
    pub share: Share,
    /// Turns the run's outcome into the prompt's messages (the offering
    /// module's job, handed in so this module does not import it back).
    pub finish: fn(&str, CallOutcome) -> Result<GetPromptResult, McpError>,
}

impl Work {
    /// The name a follow-up must repeat: a tool's, or `prompts/get NAME`
    /// (no tool is named with a space).
    fn label(&self) -> String {
        match self {
            Work::Tool(plan) => plan.spec().name.clone(),
            Work::Prompt(run) => prompt_label(&run.name),
        }
    }
}

/// What a paused prompt is known by in the table of paused calls.
fn prompt_label(name: &str) -> String {
    format!("prompts/get {name}")
}

/// How a call in rounds ended: a tool call's outcome, or a prompt's
/// messages.
pub(in crate::mcp) enum Finished {
    /// The tool (named) and how its call ended.
    Tool(String, CallOutcome),
    /// A prompt's messages.
    Prompt(GetPromptResult),
}

/// What one request in rounds answers: the end, a pause, or the task the
/// call became.
pub(in crate::mcp) enum Round {
    /// The call ended.
    Finished(Finished),
    /// The call asks the user first.
    Input(InputRequiredResult),
    /// The call ran past [`task::QUICK`] for a client of the tasks
    /// extension: it runs on as this task.
    Task(CreateTaskResult),
}

impl Round {
    /// As a `tools/call` response.
    fn into_tool(self) -> Result<CallToolResponse, McpError> {
        match self {
            Round::Finished(Finished::Tool(tool, outcome)) => result::to_response(&tool, outcome),
            Round::Input(input) => Ok(CallToolResponse::InputRequired(input)),
            Round::Task(task) => Ok(CallToolResponse::Task(task)),
            Round::Finished(Finished::Prompt(_)) => {
                Err(McpError::internal_error("a prompt answered a tool call", None))
            }
        }
    }

    /// As a `prompts/get` response.
    fn into_prompt(self) -> Result<GetPromptResponse, McpError> {
        match self {
            Round::Finished(Finished::Prompt(result)) => Ok(GetPromptResponse::Complete(result)),
            Round::Input(input) => Ok(GetPromptResponse::InputRequired(input)),
            Round::Finished(Finished::Tool(..)) | Round::Task(_) => {
                Err(McpError::internal_error("a tool answered a prompt", None))
            }
        }
    }
}

/// Starts `plan` in a task of its own and drives it for `context`'s
/// request: its response, or the `input_required` result of its first pause.
pub(in crate::mcp) async fn start(
    server: &ToolServer,
    plan: CallPlan,
    context: &RequestContext<RoleServer>,
    span: RequestSpan,
    given: Option<InputResponses>,
) -> Result<CallToolResponse, McpError> {
    launch(server, Work::Tool(plan), context, span, AnswerBook::default(), given).await?.into_tool()
}

/// Starts the prompt `run` in rounds, like [`start`] a call.
pub(in crate::mcp) async fn start_prompt(
    server: &ToolServer,
    run: PromptRun,
    context: &RequestContext<RoleServer>,
    span: RequestSpan,
    given: Option<InputResponses>,
) -> Result<GetPromptResponse, McpError> {
    launch(server, Work::Prompt(run), context, span, AnswerBook::default(), given).await?.into_prompt()
}

/// A follow-up `tools/call` carrying `state` (the `requestState` it was
/// handed) and the user's answer: continues that paused call.
pub(in crate::mcp) async fn resume(
    server: &ToolServer,
    state: &str,
    mut request: CallToolRequestParams,
    context: &RequestContext<RoleServer>,
    span: RequestSpan,
) -> Result<CallToolResponse, McpError> {
    if let Some(keys) = &server.caller.shared.state_keys {
        // The call runs again here: it takes a slot of the caller's share.
        let share = access::share(server.caller.shared.fairness.as_ref(), context)?;
        let (plan, book) = sealed::reopen(server, keys, state, request, context, &span, share).await?;
        return launch(server, Work::Tool(plan), context, span, book, None).await?.into_tool();
    }
    let responses = request.input_responses.take();
    let name = request.name;
    resume_parked(server, state, &name, responses, context, span).await?.into_tool()
}

/// A follow-up `prompts/get` carrying `state` and the user's answers:
/// continues that paused prompt. `run` is the follow-up's own prompt,
/// checked like a new one, for a state that must be run again.
pub(in crate::mcp) async fn resume_prompt(
    server: &ToolServer,
    state: &str,
    request: &mut GetPromptRequestParams,
    run: PromptRun,
    context: &RequestContext<RoleServer>,
    span: RequestSpan,
) -> Result<GetPromptResponse, McpError> {
    let responses = request.input_responses.take();
    if let Some(keys) = &server.caller.shared.state_keys {
        let book = sealed::reopen_prompt(server, keys, state, &run, responses, context, &span)?;
        return launch(server, Work::Prompt(run), context, span, book, None).await?.into_prompt();
    }
    resume_parked(server, state, &prompt_label(&run.name), responses, context, span).await?.into_prompt()
}

/// Hands `responses` to the call parked under `state` and drives it on.
async fn resume_parked(
    server: &ToolServer,
    state: &str,
    label: &str,
    responses: Option<InputResponses>,
    context: &RequestContext<RoleServer>,
    span: RequestSpan,
) -> Result<Round, McpError> {
    let paused = &server.calls(context).paused;
    let owner = access::caller(context).map(|principal| principal.key());
    let turn = |execution: &Execution| TaskTurn::new(server, execution, context, span.clone());
    span.within(paused.resume(state, label, owner.as_deref(), responses, &context.ct, turn)).await
}

/// Starts `work` in a task of its own, `book` holding the answers it was
/// given before (a call re-run from its sealed state) and `given` those the
/// client sent with a first request, and drives it.
async fn launch(
    server: &ToolServer,
    work: Work,
    context: &RequestContext<RoleServer>,
    span: RequestSpan,
    book: AnswerBook,
    given: Option<InputResponses>,
) -> Result<Round, McpError> {
    let (pauses_tx, pauses) = futures_channel::mpsc::unbounded();
    let (done_tx, done) = oneshot::channel();
    let signals = CallSignals::default();
    let caller = server.caller.clone();
    let sealing = caller.shared.state_keys.clone().map(|keys| {
        let binding = match &work {
            Work::Tool(plan) => sealed::binding(&plan.spec().name, &plan.arguments, context),
            Work::Prompt(run) => sealed::binding(&prompt_label(&run.name), &run.arguments, context),
        };
        sealed::Sealing::new(keys, binding, &span)
    });
    let rounds = RoundTrips {
        pauses: pauses_tx,
        book: sealing.is_some().then_some(book),
        handed_off: signals.handed_off.clone(),
        given: given.unwrap_or_default(),
    };
    // A tool's call may become a task, parked or re-run from its sealed
    // state alike: its pauses are then the task's, kept wherever the task
    // is (with `--task-store`, for every replica). The bounds its task's
    // time to live must cover.
    let becomes_task = match &work {
        Work::Tool(plan) if may_become_task(plan, context) => {
            let limits = plan.route.component.limits.timeout + caller.shared.ask_policy.approval_timeout;
            Some(TaskBounds { ttl: limits, scopes: plan.route.scopes.clone() })
        }
        _ => None,
    };
    let tool = work.label();
    let who = Who::of(context);
    let call: CallFuture = match work {
        Work::Tool(plan) => {
            let progress = context.meta.get_progress_token();
            let channel = caller.channel(&plan, context, Delivery::Rounds(rounds), progress);
            let signals = signals.clone();
            Box::pin(span.within(async move {
                let outcome = caller.run_planned(&plan, signals, channel, who).await;
                let _ =
                    done_tx.send(outcome.map(|outcome| Finished::Tool(plan.spec().name.clone(), outcome)));
            }))
        }
        Work::Prompt(run) => {
            let identity = CallIdentity { tool: run.operation.label().to_string(), pre_approved: false };
            let channel =
                caller.channel_for(identity, &run.component, context, Delivery::Rounds(rounds), None);
            let signals = signals.clone();
            Box::pin(span.within(async move {
                let what = format!("prompt `{}`", run.name);
                let outcome = caller
                    .shared
                    .runner
                    .run(&run.component, run.operation, &run.share, signals, channel, None, None)
                    .await;
                let _ = done_tx.send((run.finish)(&what, outcome).map(Finished::Prompt));
            }))
        }
    };
    let execution = Execution {
        tool,
        owner: access::caller(context).map(|principal| principal.key()),
        inline: Some(call),
        pauses,
        done,
        signals,
        early: None,
        becomes_task,
    };
    let turn = |execution: &Execution| TaskTurn::new(server, execution, context, span.clone());
    match sealing {
        Some(sealing) => {
            sealing.drive(execution, &context.ct, server.caller.shared.runner.stats(), turn).await
        }
        None => server.calls(context).paused.drive(execution, &context.ct, turn).await,
    }
}

/// Whether `plan`'s call may become a task for `context`'s client: it
/// speaks the tasks extension, and the tool's calls are not `forbidden`
/// tasks.
fn may_become_task(plan: &CallPlan, context: &RequestContext<RoleServer>) -> bool {
    plan.spec().tasks != TaskSupport::Forbidden
        && context.client_capabilities().is_some_and(|caps| caps.supports_tasks())
}

/// What a call that may become a task needs for it.
struct TaskBounds {
    /// The longest the call may take (its deadline and a pause's lease):
    /// the task's time to live covers it.
    ttl: std::time::Duration,
    /// The tool's scopes, which whoever reads the task must hold.
    scopes: Arc<[String]>,
}

/// Turns a call in rounds that ran past [`task::QUICK`] into a task of
/// the request's session.
pub(super) struct TaskTurn<'a> {
    server: &'a ToolServer,
    context: &'a RequestContext<RoleServer>,
    span: RequestSpan,
}

impl<'a> TaskTurn<'a> {
    /// For `execution`, when it may become a task at all.
    fn new(
        server: &'a ToolServer,
        execution: &Execution,
        context: &'a RequestContext<RoleServer>,
        span: RequestSpan,
    ) -> Option<Self> {
        execution.becomes_task.as_ref().map(|_| TaskTurn { server, context, span })
    }

    /// The round of a call that ran past [`task::QUICK`]: the task `turn`
    /// makes of `execution`, parked or sealed alike.
    async fn take(
        execution: Execution,
        turn: impl FnOnce(&Execution) -> Option<TaskTurn<'a>>,
    ) -> Result<Round, McpError> {
        match turn(&execution) {
            Some(turn) => Ok(Round::Task(turn.make(execution).await?)),
            None => Err(McpError::internal_error("a call that cannot be a task ran as one", None)),
        }
    }

    /// The task `execution` runs on as; its questions from now on show as
    /// the task's `input_required` status.
    async fn make(self, execution: Execution) -> Result<CreateTaskResult, McpError> {
        let calls = self.server.calls(self.context);
        let bounds = execution.becomes_task.as_ref().expect("checked by TaskTurn::new");
        let owner = access::owner(&execution.tool, bounds.scopes.clone(), self.context);
        let (ttl, stop) = (bounds.ttl, execution.signals.client_cancel.clone());
        let task =
            calls.tasks.spawn(owner, ttl, stop, |task| self.span.within(execution.run_as(task))).await?;
        Ok(CreateTaskResult::new(task))
    }
}

/// A call's whole run: it sends its response on its [`Execution::done`].
type CallFuture = Pin<Box<dyn Future<Output = ()> + Send>>;

/// A call in rounds, driven by whichever request currently stands for it.
struct Execution {
    /// The tool it runs (or `prompts/get NAME`), so a follow-up cannot
    /// resume it as another.
    tool: String,
    /// With `--auth-issuer`: [`crate::auth::Principal::key`] of its caller,
    /// the only one whose follow-up may resume it.
    owner: Option<String>,
    /// The call itself while it runs in its first request's future
    /// ([`Inline`]); `None` once it ended or moved to a task of its own
    /// ([`Execution::detach`]).
    inline: Option<CallFuture>,
    /// Where the call's questions arrive.
    pauses: PauseReceiver,
    /// The call's response, once it has one.
    done: oneshot::Receiver<Result<Finished, McpError>>,
    /// How to stop it.
    signals: CallSignals,
    /// The call's response if it ended while parked with no request
    /// driving it, taken from its channel by [`Execution::unhook`].
    early: Option<Result<Finished, McpError>>,
    /// Set when the call may become a task (the tasks extension).
    becomes_task: Option<TaskBounds>,
}

/// Where a call driven for a request got to.
enum Step {
    /// It finished (or the request was cancelled, which stopped it).
    Done(Result<Finished, McpError>),
    /// It asked the user.
    Paused(Execution, Box<Pause>),
    /// It may become a task, and is still running after [`task::QUICK`].
    Slow(Execution),
}

impl Execution {
    /// Drives the call for the request whose cancellation is `request`,
    /// until it finishes or pauses, or runs past [`task::QUICK`] when it
    /// may become a task. A cancelled request stops the call.
    async fn step(mut self, request: &CancellationToken) -> Step {
        if let Some(done) = self.early.take() {
            return Step::Done(done);
        }
        let quick = self.becomes_task.is_some();
        tokio::select! {
            biased;
            // First, so that a call that ends here is answered in the same poll.
            never = Inline(&mut self.inline) => match never {},
            done = &mut self.done => Step::Done(Self::response(done)),
            Some(pause) = self.pauses.next() => {
                self.detach();
                self.unhook();
                Step::Paused(self, pause)
            }
            () = tokio::time::sleep(task::QUICK), if quick => {
                self.detach();
                self.unhook();
                Step::Slow(self)
            }
            () = request.cancelled() => {
                self.signals.client_cancel.cancel();
                // Stopped, it still runs its stop and `cleanup`.
                self.detach();
                // rmcp sends nothing for a cancelled request.
                Step::Done(Err(McpError::new(ErrorCode::INTERNAL_ERROR, "request cancelled", None)))
            }
        }
    }

    /// Moves the call, if it still runs in the request's future, to a task
    /// of its own: the request leaves it (a pause, a task, a cancel) and
    /// the call goes on without it.
    fn detach(&mut self) {
        // No runtime only while the process shuts down, when the call
        // goes with everything else.
        if let Some(call) = self.inline.take()
            && let Ok(runtime) = tokio::runtime::Handle::try_current()
        {
            runtime.spawn(call);
        }
    }

    fn response(
        done: Result<Result<Finished, McpError>, oneshot::error::RecvError>,
    ) -> Result<Finished, McpError> {
        done.unwrap_or_else(|_| Err(McpError::internal_error("the call ended without a response", None)))
    }

    /// Leaves no waker of the request that drove this step in the call's
    /// channels. That request's task is finished once its pause is
    /// answered, but a waker left in a channel would keep the task's memory
    /// (≈8 KiB) for as long as the call stays parked: 80 MB for 10 000.
    /// Polling once with a no-op waker replaces it; a response the call
    /// sent meanwhile is kept for the next step.
    fn unhook(&mut self) {
        let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
        if let std::task::Poll::Ready(done) = std::pin::Pin::new(&mut self.done).poll(&mut cx) {
            self.early = Some(Self::response(done));
        }
        // A call pauses again only after its answer, so nothing is queued here.
        if let std::task::Poll::Ready(Some(pause)) = self.pauses.poll_next_unpin(&mut cx) {
            tracing::warn!(tool = %self.tool, questions = pause.questions.len(), "a parked call paused twice at once");
        }
    }

    /// Runs the call on as `task` to its end: each pause's questions go to
    /// the task's `input_required` status, within the pause's lease; a
    /// `tasks/cancel` stops the call the usual way.
    async fn run_as(mut self, task: TaskHandle) -> Result<CallToolResult, TaskExit> {
        let signals = self.signals.clone();
        let done = loop {
            if let Some(done) = self.early.take() {
                break done;
            }
            tokio::select! {
                biased;
                done = &mut self.done => break Self::response(done),
                Some(pause) = self.pauses.next() => ask_in_task(&task, *pause, &signals).await,
                () = task.cancelled(), if !signals.client_cancel.is_cancelled() => signals.client_cancel.cancel(),
            }
        };
        match done {
            Ok(Finished::Tool(tool, outcome)) => result::to_task_end(&tool, outcome),
            Ok(Finished::Prompt(_)) => {
                Err(TaskExit::Error(McpError::internal_error("a prompt became a task", None)))
            }
            Err(_) if task.is_cancel_requested() => Err(TaskExit::Cancelled),
            Err(error) => Err(TaskExit::Error(error)),
        }
    }
}

impl Drop for Execution {
    fn drop(&mut self) {
        // The request's future was dropped mid-call (its connection went,
        // its server shut down): the call is stopped, and its stop and
        // `cleanup` run on a task, as for a cancelled request.
        if self.inline.is_some() {
            self.signals.client_cancel.cancel();
            self.detach();
        }
    }
}

/// Polls a call running in its request's future (see [`Execution::inline`]),
/// and never ends: the call's end shows on [`Execution::done`].
struct Inline<'a>(&'a mut Option<CallFuture>);

impl Future for Inline<'_> {
    type Output = Infallible;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Infallible> {
        let slot = &mut *self.get_mut().0;
        if let Some(call) = slot {
            // A panic stays the call's, as in a task of its own: its
            // response's sender goes with it, and the request is answered
            // "the call ended without a response".
            let polled = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| call.as_mut().poll(cx)));
            if !matches!(polled, Ok(Poll::Pending)) {
                *slot = None;
            }
        }
        Poll::Pending
    }
}

/// Puts `pause`'s questions to the client through `task` and hands each
/// answer to the call; when the lease runs out first, or a question cannot
/// be put, the call is stopped as unanswered (a `tasks/cancel` stops it as
/// cancelled, through [`Execution::run_as`]).
async fn ask_in_task(task: &TaskHandle, pause: Pause, signals: &CallSignals) {
    let (asked, waiting): (Vec<_>, Vec<_>) = pause
        .questions
        .into_iter()
        .map(|question| ((question.key, question.request), question.answer))
        .unzip();
    match task.ask_all(asked, pause.lease).await {
        Ok(answers) => {
            // An answer that cannot reach the call leaves it waiting for
            // its stop: give it one.
            if !waiting.into_iter().zip(answers).all(|(waiting, answer)| waiting.send(answer).is_ok()) {
                signals.unanswered.cancel();
            }
        }
        Err(NoAnswer::Unanswered) => signals.unanswered.cancel(),
        Err(NoAnswer::Cancelled) => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An execution of the call `call` makes from its response's sender
    /// and its signals, as `launch` makes one (for a call that cannot
    /// become a task).
    fn execution(
        call: impl FnOnce(oneshot::Sender<Result<Finished, McpError>>, CallSignals) -> CallFuture,
    ) -> Execution {
        let (_pauses_tx, pauses) = futures_channel::mpsc::unbounded();
        let (done_tx, done) = oneshot::channel();
        let signals = CallSignals::default();
        Execution {
            tool: "t".into(),
            owner: None,
            inline: Some(call(done_tx, signals.clone())),
            pauses,
            done,
            signals,
            early: None,
            becomes_task: None,
        }
    }

    fn prompt_done() -> Result<Finished, McpError> {
        Ok(Finished::Prompt(GetPromptResult::new(Vec::new())))
    }

    #[tokio::test]
    async fn a_call_that_asks_nothing_ends_in_its_requests_future() {
        let (ran_tx, ran_rx) = oneshot::channel();
        let run = execution(|done, _| {
            Box::pin(async move {
                let _ = ran_tx.send(tokio::task::try_id());
                let _ = done.send(prompt_done());
            })
        });
        let here = tokio::task::try_id();
        let step = run.step(&CancellationToken::new()).await;
        assert!(matches!(step, Step::Done(Ok(Finished::Prompt(_)))));
        // It ran in this task: no task of its own was made.
        assert_eq!(ran_rx.await.unwrap(), here);
    }

    #[tokio::test]
    async fn a_cancelled_request_leaves_its_call_running_to_its_end_on_a_task() {
        let (ended_tx, ended) = oneshot::channel();
        let run = execution(|done, signals| {
            Box::pin(async move {
                // Stopping and cleaning up take a while after the cancel.
                signals.client_cancel.cancelled().await;
                tokio::task::yield_now().await;
                let _ = ended_tx.send(());
                let _ = done.send(prompt_done());
            })
        });
        let request = CancellationToken::new();
        request.cancel();
        let step = run.step(&request).await;
        assert!(matches!(step, Step::Done(Err(_))));
        ended.await.expect("the call ran on to its end");
    }

    #[tokio::test]
    async fn a_request_future_dropped_mid_call_stops_the_call_and_lets_it_end() {
        let (ended_tx, ended) = oneshot::channel();
        let (started_tx, started) = oneshot::channel();
        let run = execution(|done, signals| {
            Box::pin(async move {
                let _ = started_tx.send(());
                signals.client_cancel.cancelled().await;
                let _ = ended_tx.send(());
                let _ = done.send(prompt_done());
            })
        });
        let request = CancellationToken::new();
        {
            let mut step = std::pin::pin!(run.step(&request));
            // One poll starts the call in this future; then the future goes.
            assert!(futures_util::poll!(step.as_mut()).is_pending());
        }
        started.await.unwrap();
        ended.await.expect("the call was stopped and ran to its end");
    }

    #[tokio::test]
    async fn a_call_that_panics_is_answered_without_a_response() {
        let run = execution(|done, _| {
            Box::pin(async move {
                let _keep = done;
                panic!("the call's own bug");
            })
        });
        let step = run.step(&CancellationToken::new()).await;
        let Step::Done(Err(error)) = step else { panic!("the panic was not the call's alone") };
        assert!(error.message.contains("without a response"), "{error:?}");
    }
}
