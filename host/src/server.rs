//! The MCP face of the host: `tools/list` and `tools/call` over rmcp.
//!
//! This module speaks MCP (rmcp types) on one side and the host's own types
//! on the other: it routes a call to the component that offers the tool,
//! validates the arguments against the tool's schema, hands the call to the
//! [`CallRunner`] and maps the [`CallOutcome`] back to an MCP result.

use std::collections::HashMap;
use std::sync::Arc;

use anyhow::{Result, bail};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, CancelledNotificationParam, ErrorCode,
    Implementation, ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
    ToolAnnotations,
};
use rmcp::service::{NotificationContext, RequestContext};
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler};
use serde_json::{Value, json};

use crate::bindings::types::CallError;
use crate::call::{CallOutcome, CallRunner};
use crate::cancellation::StopReason;
use crate::component::{ToolComponent, ToolSpec};
use crate::content;

/// The MCP server: every tool of every loaded component. Cheap to clone.
#[derive(Clone)]
pub struct ToolServer {
    inner: Arc<Inner>,
}

struct Inner {
    /// Tool name → (component, index into its `tools`).
    routes: HashMap<String, (Arc<ToolComponent>, usize)>,
    /// The `tools/list` answer, built once.
    listed: Vec<Tool>,
    runner: CallRunner,
}

impl ToolServer {
    /// Serves the tools of `components`. Two components offering the same
    /// tool name is an error: a client could not tell which one it calls.
    pub fn new(components: Vec<ToolComponent>, runner: CallRunner) -> Result<Self> {
        let mut routes: HashMap<String, (Arc<ToolComponent>, usize)> = HashMap::new();
        let mut listed = Vec::new();
        for component in components.into_iter().map(Arc::new) {
            for (index, spec) in component.tools.iter().enumerate() {
                if let Some((other, _)) = routes.get(&spec.name) {
                    bail!(
                        "tool `{}` is offered by both {} and {}; tool names must be unique \
                         across --component files",
                        spec.name,
                        other.path.display(),
                        component.path.display()
                    );
                }
                listed.push(mcp_tool(spec));
                routes.insert(spec.name.clone(), (component.clone(), index));
            }
        }
        Ok(Self { inner: Arc::new(Inner { routes, listed, runner }) })
    }

    /// Every tool, as listed to clients.
    pub fn tools(&self) -> &[Tool] {
        &self.inner.listed
    }
}

fn mcp_tool(spec: &ToolSpec) -> Tool {
    let mut tool = Tool::new_with_raw(
        spec.name.clone(),
        spec.description.clone().map(Into::into),
        spec.input_schema.clone(),
    );
    tool.title = spec.title.clone();
    tool.output_schema = spec.output_schema.clone();
    let a = &spec.annotations;
    if a.read_only.is_some() || a.destructive.is_some() || a.idempotent.is_some() || a.open_world.is_some() {
        tool.annotations =
            Some(ToolAnnotations::from_raw(None, a.read_only, a.destructive, a.idempotent, a.open_world));
    }
    tool
}

impl ServerHandler for ToolServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build()).with_server_info(
            Implementation::new("mcp-wasm-host", env!("CARGO_PKG_VERSION")).with_title("mcp-wasm-host"),
        )
    }

    async fn on_cancelled(
        &self,
        _notification: CancelledNotificationParam,
        _context: NotificationContext<RoleServer>,
    ) {
        // rmcp has already fired the request's token; a guest computing in
        // that call only notices at its next yield, so make it yield now.
        self.inner.runner.interrupt_guests();
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        Ok(ListToolsResult::with_all_items(self.inner.listed.clone()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let name = request.name.as_ref();
        let Some((component, index)) = self.inner.routes.get(name) else {
            let mut available: Vec<&str> = self.inner.routes.keys().map(String::as_str).collect();
            available.sort_unstable();
            return Err(McpError::invalid_params(
                format!("unknown tool `{name}`"),
                Some(json!({ "available": available })),
            ));
        };
        let spec = &component.tools[*index];
        let arguments = Value::Object(request.arguments.unwrap_or_default());
        if let Err(errors) = spec.check_arguments(&arguments) {
            return Err(McpError::invalid_params(
                format!("arguments do not match the input schema of `{name}`: {}", errors.join("; ")),
                Some(json!({ "errors": errors })),
            ));
        }

        let outcome =
            self.inner.runner.run(component, name, &arguments.to_string(), context.ct.clone()).await;
        to_response(name, outcome)
    }
}

fn to_response(tool: &str, outcome: CallOutcome) -> Result<CallToolResponse, McpError> {
    let result: CallToolResult = match outcome {
        CallOutcome::Returned(Ok(result)) => content::to_mcp(tool, result),
        CallOutcome::Returned(Err(error)) => content::error_result(match error {
            CallError::Failed(message) => message,
            CallError::InvalidArguments(message) => format!("invalid arguments: {message}"),
            CallError::UnknownTool(other) => {
                format!("component error: `{tool}` was listed but the component does not know `{other}`")
            }
            CallError::Cancelled => format!("tool `{tool}` said it was cancelled, but the call was not"),
        }),
        // The client asked for no result: rmcp sends nothing for a cancelled
        // request, so this error never reaches the wire.
        CallOutcome::Stopped(StopReason::ClientCancelled) => {
            return Err(McpError::new(ErrorCode::INTERNAL_ERROR, "request cancelled", None));
        }
        CallOutcome::Stopped(_) => {
            content::error_result(format!("tool `{tool}` was stopped: the server is shutting down"))
        }
        CallOutcome::LimitHit(limit) => content::error_result(format!("tool `{tool}` was stopped: {limit}")),
        CallOutcome::Crashed(detail) => content::error_result(format!("tool `{tool}` crashed: {detail}")),
    };
    Ok(CallToolResponse::Complete(result))
}
