//! A call inside its request (protocol up to 2025-11-25): the request's
//! cancellation is the call's, its progress token the call's, and the
//! questions the tool asks are requests to the client.

use rmcp::model::CallToolResponse;
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer};

use crate::ask::Delivery;
use crate::audit::Who;
use crate::call::CallSignals;
use crate::mcp::ToolServer;
use crate::mcp::tools::CallPlan;
use crate::telemetry::spans::RequestSpan;

/// Runs `plan` to its response, within `context`'s request.
pub(in crate::mcp) async fn run(
    server: &ToolServer,
    plan: CallPlan,
    context: &RequestContext<RoleServer>,
    span: RequestSpan,
) -> Result<CallToolResponse, McpError> {
    let caller = &server.caller;
    let channel = caller.channel(&plan, context, Delivery::Requests, context.meta.get_progress_token());
    let signals = CallSignals { client_cancel: context.ct.clone(), ..CallSignals::default() };
    span.within(caller.execute(&plan, signals, channel, Who::of(context))).await
}
