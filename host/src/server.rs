//! The MCP face of the host: `tools/list` and `tools/call` over rmcp.
//!
//! This module speaks MCP (rmcp types) on one side and the host's own types
//! on the other: it routes a call to the component that offers the tool,
//! validates the arguments against the tool's schema, hands the call to the
//! [`CallRunner`] and maps the [`CallOutcome`] back to an MCP result.

use std::collections::HashMap;
use std::sync::Arc;

use anyhow::{Result, bail};
#[allow(deprecated)]
use rmcp::model::SetLevelRequestParams;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, CancelledNotificationParam, ErrorCode,
    Implementation, ListResourcesResult, ListToolsResult, PaginatedRequestParams, ReadResourceRequestParams,
    ReadResourceResponse, ReadResourceResult, Resource, ResourceContents, ServerCapabilities, ServerConfig,
    Tool, ToolAnnotations,
};
use rmcp::service::{NotificationContext, RequestContext};
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler};
use serde_json::{Value, json};
use tracing::Instrument as _;

use crate::bindings::types::CallError;
use crate::call::{CallOutcome, CallRunner};
use crate::cancellation::StopReason;
use crate::client::{ClientLink, ClientPolicy, SessionState};
use crate::component::{ToolComponent, ToolSpec};
use crate::content;

/// The MCP server: every tool of every loaded component. One value per MCP
/// session (stdio has one; HTTP makes one per session with
/// [`ToolServer::new_session`]); sessions share the tools and the runner.
#[derive(Clone)]
pub struct ToolServer {
    inner: Arc<Inner>,
    session: Arc<SessionState>,
}

struct Inner {
    /// Tool name → (component, index into its `tools`).
    routes: HashMap<String, (Arc<ToolComponent>, usize)>,
    /// The `tools/list` answer, built once.
    listed: Vec<Tool>,
    runner: CallRunner,
    /// How calls may use the client (question timeout and budget).
    client_policy: ClientPolicy,
}

/// The URI of the resource that reports the host's live counts.
pub const STATUS_URI: &str = "mcp-wasm-host://status";

impl ToolServer {
    /// Serves the tools of `components`. Two components offering the same
    /// tool name is an error: a client could not tell which one it calls.
    pub fn new(
        components: Vec<ToolComponent>,
        runner: CallRunner,
        client_policy: ClientPolicy,
    ) -> Result<Self> {
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
        let inner = Inner { routes, listed, runner, client_policy };
        Ok(Self { inner: Arc::new(inner), session: Arc::default() })
    }

    /// The same tools for a new MCP session, with its own session state
    /// (e.g. its logging level).
    pub fn new_session(&self) -> Self {
        Self { inner: self.inner.clone(), session: Arc::default() }
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

// Logging (`logging/setLevel`, the `logging` capability) is deprecated in
// rmcp by SEP-2577, but every protocol version this host serves has it.
#[allow(deprecated)]
impl ServerHandler for ToolServer {
    fn get_info(&self) -> ServerConfig {
        let capabilities =
            ServerCapabilities::builder().enable_tools().enable_logging().enable_resources().build();
        ServerConfig::new(capabilities).with_server_info(
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

    async fn set_level(
        &self,
        request: SetLevelRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.session.set_log_level(request.level);
        Ok(())
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, McpError> {
        let status = Resource::new(STATUS_URI, "status")
            .with_description("Live counts: calls, wasm stores and open requests to the client")
            .with_mime_type("application/json");
        Ok(ListResourcesResult::with_all_items(vec![status]))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, McpError> {
        if request.uri != STATUS_URI {
            return Err(McpError::resource_not_found(format!("no resource `{}`", request.uri), None));
        }
        let snapshot = self.inner.runner.stats().snapshot();
        let text =
            serde_json::to_string(&snapshot).map_err(|e| McpError::internal_error(e.to_string(), None))?;
        let contents = ResourceContents::TextResourceContents {
            uri: STATUS_URI.into(),
            mime_type: Some("application/json".into()),
            text,
            meta: None,
        };
        Ok(ReadResourceResult::new(vec![contents]).into())
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

        let client = ClientLink::new(
            context.peer.clone(),
            context.meta.get_progress_token(),
            self.session.clone(),
            self.inner.client_policy,
            self.inner.runner.stats().clone(),
        );
        // Every log line of the call carries the JSON-RPC id the client knows it by.
        let span = tracing::info_span!("tools/call", request = %context.id);
        let outcome = self
            .inner
            .runner
            .run(component, name, &arguments.to_string(), context.ct.clone(), client)
            .instrument(span)
            .await;
        let response = to_response(name, outcome)?;
        Ok(check_output(spec, response))
    }
}

/// A tool that declares an output schema must return structured content that
/// matches it; a result that does not becomes an error naming the tool.
fn check_output(spec: &ToolSpec, response: CallToolResponse) -> CallToolResponse {
    let CallToolResponse::Complete(result) = &response else { return response };
    if result.is_error == Some(true) {
        return response;
    }
    match spec.check_output(result.structured_content.as_ref()) {
        Ok(()) => response,
        Err(problem) => CallToolResponse::Complete(content::error_result(format!(
            "tool `{}` returned a result that breaks its output schema: {problem}",
            spec.name
        ))),
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
