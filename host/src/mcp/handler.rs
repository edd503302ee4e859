//! The rmcp `ServerHandler`: each MCP request goes to the module that does
//! its job; nothing is decided here.

#[allow(deprecated)]
use rmcp::model::SetLevelRequestParams;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CancelTaskParams, CancelledNotificationParam, GetTaskParams,
    GetTaskResult, Implementation, ListResourcesResult, ListToolsResult, PaginatedRequestParams,
    ReadResourceRequestParams, ReadResourceResponse, ServerCapabilities, ServerConfig, UpdateTaskParams,
};
use rmcp::service::{NotificationContext, RequestContext};
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler};

use serde_json::Value;

use super::{ToolServer, access, mode, status};
use crate::audit::Who;
use crate::log_text::escaped;

// Logging (`logging/setLevel`, the `logging` capability) is deprecated in
// rmcp by SEP-2577, but every protocol version this host serves has it.
#[allow(deprecated)]
impl ServerHandler for ToolServer {
    fn get_info(&self) -> ServerConfig {
        let mut capabilities = ServerCapabilities::builder()
            .enable_tools()
            .enable_logging()
            .enable_resources()
            .enable_tasks()
            .build();
        if self.caller.shared.list_changes.is_some()
            && let Some(tools) = &mut capabilities.tools
        {
            // With --watch, the tool list changes when a component is reloaded.
            tools.list_changed = Some(true);
        }
        ServerConfig::new(capabilities).with_server_info(
            Implementation::new("mcp-wasm-host", env!("CARGO_PKG_VERSION")).with_title("mcp-wasm-host"),
        )
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        self.listen_for_changes(context.peer);
    }

    async fn on_cancelled(
        &self,
        _notification: CancelledNotificationParam,
        _context: NotificationContext<RoleServer>,
    ) {
        // rmcp has already fired the request's token; a guest computing in
        // that call only notices at its next yield, so make it yield now.
        self.caller.shared.runner.interrupt_guests();
    }

    async fn set_level(
        &self,
        request: SetLevelRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.caller.log_filter.set(request.level);
        Ok(())
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, McpError> {
        Ok(status::list())
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, McpError> {
        status::read(&request.uri, self.caller.shared.runner.stats())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        let tools = self.caller.shared.loaded_tools(&context.ct).await?;
        let granted = access::caller(&context).map(|principal| principal.scopes.as_slice());
        Ok(ListToolsResult::with_all_items(tools.listed_for(granted)))
    }

    async fn call_tool(
        &self,
        mut request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        // The id is the client's: escaped and cut like any outside text.
        let span = tracing::info_span!("tools/call", request = %escaped(context.id.to_string()));
        let tools = self.caller.shared.loaded_tools(&context.ct).await?;
        if let Some(needed) = tools.scopes_of(&request.name) {
            // New calls and follow-ups alike (the HTTP layer answered 403
            // already where it could).
            if let Err(refusal) = access::check_scopes(&request.name, &needed, &context) {
                let arguments = Value::Object(request.arguments.clone().unwrap_or_default());
                let audit = self.caller.shared.runner.stats().audit();
                audit.refused(Who::of(&context), &request.name, &arguments, "insufficient-scope").await;
                return Err(refusal);
            }
        }
        if let Some(state) = request.request_state.take() {
            // A follow-up to a paused call (2026-07-28): it carries the answer.
            return mode::rounds::resume(self, &state, request, &context, span).await;
        }
        let audit = self.caller.shared.runner.stats().audit();
        // Kept for the record of a refusal, only when there is an audit log.
        let asked = audit
            .is_on()
            .then(|| (request.name.clone(), Value::Object(request.arguments.clone().unwrap_or_default())));
        let mut plan = match tools.plan(request, &self.caller.shared.runner).await {
            Ok(plan) => plan,
            Err(refusal) => {
                if let Some((name, arguments)) = asked {
                    let known = tools.listed().iter().any(|tool| tool.name == name);
                    let reason = if known { "invalid-arguments" } else { "unknown-tool" };
                    audit.refused(Who::of(&context), &name, &arguments, reason).await;
                }
                return Err(refusal);
            }
        };
        plan.share = access::share(self.caller.shared.fairness.as_ref(), &context)?;
        if context.client_capabilities().is_some_and(|caps| caps.supports_tasks()) {
            return Ok(mode::task::start(self, plan, &context, span));
        }
        if mode::rounds::speaks_in_rounds(&context) {
            return mode::rounds::start(self, plan, &context, span).await;
        }
        mode::request::run(self, plan, &context, span).await
    }

    async fn get_task(
        &self,
        request: GetTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, McpError> {
        let calls = self.calls(&context);
        calls.owners.check(&request.task_id, &context)?;
        Ok(GetTaskResult::new(calls.tasks.get_task(&request.task_id)?))
    }

    async fn update_task(
        &self,
        request: UpdateTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        let calls = self.calls(&context);
        calls.owners.check(&request.task_id, &context)?;
        calls.tasks.update_task(&request.task_id, request.input_responses)
    }

    async fn cancel_task(
        &self,
        request: CancelTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        // The task's run watches for this and stops the call the usual way.
        let calls = self.calls(&context);
        calls.owners.check(&request.task_id, &context)?;
        calls.tasks.cancel_task(&request.task_id)?;
        self.caller.shared.runner.interrupt_guests();
        Ok(())
    }
}
