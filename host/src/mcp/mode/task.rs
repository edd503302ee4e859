//! A call as a task (the tasks extension, SEP-2663, kept in
//! [`crate::tasks`]). The call starts at once; one that answers within
//! [`QUICK`] answers in its own `tools/call` response, as a plain call
//! would (SEP-2663's immediate result: no task to poll, nothing kept).
//! Otherwise the response is the task, made when the call runs past
//! [`QUICK`] or asks its first question; its questions then show as the
//! task's `input_required` status until `tasks/update` answers them, and
//! `tasks/cancel` stops the call the usual way (cancel, grace, forced stop,
//! cleanup). This is the way for a client before 2026-07-28; in rounds,
//! `rounds` makes the task once the call runs past [`QUICK`].

use std::sync::Arc;
use std::time::Duration;

use rmcp::model::{CallToolResponse, CreateTaskResult};
use rmcp::service::RequestContext;
use rmcp::task_manager::TaskExit;
use rmcp::{ErrorData as McpError, RoleServer};

use crate::ask::{Delivery, TaskSlot};
use crate::audit::Who;
use crate::call::CallSignals;
use crate::mcp::tools::CallPlan;
use crate::mcp::{ToolServer, access, result};
use crate::telemetry::spans::RequestSpan;

/// How long a call may take and still answer in its own response.
pub(super) const QUICK: Duration = Duration::from_millis(100);

/// Starts `plan` for `context`'s session: its result if it is quick, or
/// else the task it became.
pub(in crate::mcp) async fn start(
    server: &ToolServer,
    plan: CallPlan,
    context: &RequestContext<RoleServer>,
    span: RequestSpan,
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
        tokio::spawn(span.within(async move { caller.run_planned(&plan, signals, channel, who).await }))
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
    let owner = access::owner(&tool, scopes, context);
    let task = calls
        .tasks
        .spawn(owner, ttl, stop_if_dropped.disarm(), move |task| {
            slot.fill(task.clone());
            span.within(async move {
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
            })
        })
        .await?;
    Ok(CallToolResponse::Task(CreateTaskResult::new(task)))
}
