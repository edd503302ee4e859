//! A call as a task (the tasks extension, SEP-2663, with rmcp's
//! `TaskManager`). The call starts at once; one that answers within
//! [`QUICK`] answers in its own `tools/call` response, as a plain call
//! would (SEP-2663's immediate result: no task to poll, nothing kept).
//! Otherwise the response is the task, made when the call runs past
//! [`QUICK`] or asks its first question; its questions then show as the
//! task's `input_required` status until `tasks/update` answers them, and
//! `tasks/cancel` stops the call the usual way (cancel, grace, forced stop,
//! cleanup).

use std::sync::Arc;
use std::time::Duration;

use rmcp::model::{CallToolResponse, CallToolResult, CreateTaskResult, Task};
use rmcp::service::RequestContext;
use rmcp::task_manager::{TaskContext, TaskExit, TaskManager, TaskOptions};
use rmcp::{ErrorData as McpError, RoleServer};
use tokio_util::sync::CancellationToken;
use tracing::Instrument as _;

use crate::ask::{Delivery, TaskSlot};
use crate::audit::Who;
use crate::call::CallSignals;
use crate::mcp::tools::CallPlan;
use crate::mcp::{ToolServer, result};

/// How long a call may take and still answer in its own response.
pub(super) const QUICK: Duration = Duration::from_millis(100);

/// How long rmcp keeps a task beyond the longest its call may take.
const TTL_MARGIN: Duration = Duration::from_secs(60);

/// Starts `plan` for `context`'s session: its result if it is quick, or
/// else the task it became.
pub(in crate::mcp) async fn start(
    server: &ToolServer,
    plan: CallPlan,
    context: &RequestContext<RoleServer>,
    span: tracing::Span,
) -> Result<CallToolResponse, McpError> {
    let caller = server.caller.clone();
    let slot = Arc::new(TaskSlot::default());
    let signals = CallSignals::default();
    let cancel = signals.client_cancel.clone();
    let delivery = Delivery::Task(slot.clone(), signals.unanswered.clone());
    let channel = caller.channel(&plan, context, delivery, None);
    let tool = plan.spec().name.clone();
    let (scopes, who) = (plan.route.scopes.clone(), Who::of(context));
    let ttl = plan.route.component.limits.timeout + caller.shared.ask_policy.approval_timeout;
    // In a task of its own, so that it outlives this request once it is a
    // task, and is stopped (and cleaned up) by the guards below if what
    // waits for it goes away.
    let mut run = {
        let plan = plan.clone();
        tokio::spawn(
            async move { caller.run_planned(&plan, signals, channel, who).await }.instrument(span.clone()),
        )
    };
    // Until the task exists, the request is what waits: a cancelled
    // request stops the call.
    let stop_if_dropped = cancel.clone().drop_guard();
    tokio::select! {
        biased;
        ran = &mut run => {
            stop_if_dropped.disarm();
            return match ran {
                Ok(outcome) => result::to_response(&tool, outcome?),
                Err(join) => Err(McpError::internal_error(join.to_string(), None)),
            };
        }
        () = slot.wanted() => {}
        () = tokio::time::sleep(QUICK) => {}
    }
    let calls = server.calls(context);
    let task = spawn(&calls.tasks, ttl, stop_if_dropped.disarm(), move |task| {
        slot.fill(task.clone());
        async move {
            let ran = tokio::select! {
                ran = &mut run => ran,
                () = task.cancelled() => {
                    cancel.cancel();
                    run.await
                }
            };
            match ran {
                Ok(Ok(outcome)) => result::to_task_end(&tool, outcome),
                _ if task.is_cancel_requested() => Err(TaskExit::Cancelled),
                Ok(Err(error)) => Err(TaskExit::Error(error)),
                Err(join) => Err(TaskExit::Error(McpError::internal_error(join.to_string(), None))),
            }
        }
        .instrument(span)
    });
    // Before the client learns the id: no request of its can come first.
    calls.owners.claim(&task.task_id, &plan.spec().name, scopes, context, &calls.tasks);
    Ok(CallToolResponse::Task(CreateTaskResult::new(task)))
}

/// Makes a task of the session's `tasks` running what `run` makes of it
/// (a call already started): kept at least `bounds` beyond its start, and
/// `stop` (the call's cancel) fired if rmcp drops it first.
pub(super) fn spawn<F>(
    tasks: &TaskManager,
    bounds: Duration,
    stop: CancellationToken,
    run: impl FnOnce(TaskContext) -> F,
) -> Task
where
    F: Future<Output = Result<CallToolResult, TaskExit>> + Send + 'static,
{
    // rmcp drops a task's future when its time to live runs out; the call
    // outlives that and stops itself, so keep the TTL above its own bounds.
    let ttl = bounds + TTL_MARGIN;
    let options = TaskOptions::new().with_ttl_ms(ttl.as_millis() as u64).with_poll_interval_ms(100);
    tasks.spawn(options, move |task| {
        let run = run(task);
        Box::pin(async move {
            // If rmcp drops this future, the guard stops the call, and it
            // still cleans up.
            let _stop_if_dropped = stop.drop_guard();
            run.await
        })
    })
}
