//! A call as a task (the tasks extension, rmcp's `TaskManager`): the
//! `tools/call` answers with the task at once; the call's questions show as
//! the task's `input_required` status until `tasks/update` answers them, and
//! `tasks/cancel` stops the call the usual way (cancel, grace, forced stop,
//! cleanup).

use std::time::Duration;

use rmcp::model::{CallToolResponse, CreateTaskResult};
use rmcp::service::RequestContext;
use rmcp::task_manager::{TaskContext, TaskExit, TaskOptions};
use rmcp::{ErrorData as McpError, RoleServer};
use tracing::Instrument as _;

use crate::ask::Delivery;
use crate::audit::Who;
use crate::call::CallSignals;
use crate::mcp::ToolServer;
use crate::mcp::tools::CallPlan;

/// How long rmcp keeps a task beyond the longest its call may take.
const TTL_MARGIN: Duration = Duration::from_secs(60);

/// Starts `plan` as a task of `context`'s session and returns the task.
pub(in crate::mcp) fn start(
    server: &ToolServer,
    plan: CallPlan,
    context: &RequestContext<RoleServer>,
    span: tracing::Span,
) -> CallToolResponse {
    let caller = server.caller.clone();
    let make_channel = {
        let (caller, plan, context) = (caller.clone(), plan.clone(), context.clone());
        move |task: TaskContext, unanswered| {
            caller.channel(&plan, &context, Delivery::Task(task, unanswered), None)
        }
    };
    // rmcp drops a task's future when its time to live runs out; the run
    // below outlives that and stops the call itself, so keep the TTL above
    // any call's own bounds.
    let ttl = plan.route.component.limits.timeout + caller.shared.ask_policy.approval_timeout + TTL_MARGIN;
    let options = TaskOptions::new().with_ttl_ms(ttl.as_millis() as u64).with_poll_interval_ms(100);
    let (tool, scopes) = (plan.spec().name.clone(), plan.route.scopes.clone());
    let who = Who::of(context);
    let calls = server.calls(context);
    let task = calls.tasks.spawn(options, move |task| {
        Box::pin(
            async move {
                let signals = CallSignals::default();
                let cancel = signals.client_cancel.clone();
                let channel = make_channel(task.clone(), signals.unanswered.clone());
                // In a task of its own: if rmcp drops this future, the guard
                // below stops the call and it still cleans up.
                let run = tokio::spawn(async move { caller.execute(&plan, signals, channel, who).await });
                let _stop_if_dropped = cancel.clone().drop_guard();
                let mut run = std::pin::pin!(run);
                let response = tokio::select! {
                    response = run.as_mut() => response,
                    () = task.cancelled() => {
                        cancel.cancel();
                        run.await
                    }
                };
                match response {
                    Ok(Ok(CallToolResponse::Complete(result))) => Ok(result),
                    _ if task.is_cancel_requested() => Err(TaskExit::Cancelled),
                    Ok(Ok(_)) => Err(TaskExit::Error(McpError::internal_error("unexpected response", None))),
                    Ok(Err(error)) => Err(TaskExit::Error(error)),
                    Err(join) => Err(TaskExit::Error(McpError::internal_error(join.to_string(), None))),
                }
            }
            .instrument(span),
        )
    });
    // Before the client learns the id: no request of its can come first.
    calls.owners.claim(&task.task_id, &tool, scopes, context, &calls.tasks);
    CallToolResponse::Task(CreateTaskResult::new(task))
}
