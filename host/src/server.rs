//! The MCP face of the host: `tools/list` and `tools/call` over rmcp.
//!
//! This module speaks MCP (rmcp types) on one side and the host's own types
//! on the other: it routes a call to the component that offers the tool,
//! validates the arguments against the tool's schema, hands the call to the
//! [`CallRunner`] and maps the [`CallOutcome`] back to an MCP result.
//!
//! A call runs one of three ways, by what the client speaks:
//! - inside its request (up to protocol 2025-11-25): questions to the user
//!   are requests to the client;
//! - as a task, when the client declared the tasks extension: the call
//!   answers with the task at once, and questions show as `input_required`;
//! - in a task of its own that a chain of requests drives (2026-07-28): a
//!   question pauses the call under a lease ([`PausedCalls`]).
//!
//! Tasks and paused calls belong to the session that started them
//! ([`SessionCalls`]): a task id or `requestState` from another session is
//! unknown there, and when a session ends, what it still runs is stopped.

use std::collections::HashMap;
use std::sync::Arc;

use anyhow::{Context as _, Result, bail};
#[allow(deprecated)]
use rmcp::model::SetLevelRequestParams;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, CancelTaskParams, CancelledNotificationParam,
    CreateTaskResult, ErrorCode, GetTaskParams, GetTaskResult, Implementation, ListResourcesResult,
    ListToolsResult, PaginatedRequestParams, ProtocolVersion, ReadResourceRequestParams,
    ReadResourceResponse, ReadResourceResult, Resource, ResourceContents, ServerCapabilities, ServerConfig,
    Tool, ToolAnnotations, UpdateTaskParams,
};
use rmcp::service::{NotificationContext, RequestContext};
use rmcp::task_manager::{TaskContext, TaskExit, TaskManager, TaskOptions};
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler};
use serde_json::{Value, json};
use tracing::Instrument as _;

use crate::approval::ApprovalQuestion;
use crate::bindings::types::CallError;
use crate::call::{CallOutcome, CallRunner, CallSignals};
use crate::cancellation::StopReason;
use crate::client::{Asker, CallIdentity, ClientLink, ClientPolicy, SessionState};
use crate::component::{ToolComponent, ToolSpec};
use crate::content;
use crate::paused::{Execution, PausedCalls};
use crate::schema::CheckFailure;

/// The MCP server: every tool of every loaded component. One value per MCP
/// session (stdio has one; HTTP makes one per session with
/// [`ToolServer::new_session`]); sessions share the tools and the runner.
#[derive(Clone)]
pub struct ToolServer {
    inner: Arc<Inner>,
    session: Arc<SessionState>,
    /// This session's tasks and paused calls. Running calls hold a
    /// [`Caller`], never this, so it is dropped with the session.
    calls: Arc<SessionCalls>,
}

/// What running a call needs: the server's tools and runner, and the
/// session's client state. Cloned into calls that outlive their request.
#[derive(Clone)]
struct Caller {
    inner: Arc<Inner>,
    session: Arc<SessionState>,
}

/// One session's calls that outlive their request: tasks (the tasks
/// extension) and calls paused for an answer (2026-07-28). Reachable only
/// through the session's own requests; when the session ends, they stop
/// (the calls are cancelled, clean up, and their slots are freed).
pub struct SessionCalls {
    tasks: TaskManager,
    paused: Arc<PausedCalls>,
}

impl SessionCalls {
    fn new(stats: Arc<crate::stats::Stats>) -> Arc<Self> {
        Arc::new(SessionCalls { tasks: TaskManager::new(), paused: PausedCalls::new(stats) })
    }
}

impl Drop for SessionCalls {
    fn drop(&mut self) {
        // Aborting a task's future stops its call (see `start_task`).
        self.tasks.shutdown();
        self.paused.stop_all();
    }
}

struct Inner {
    /// Tool name → (component, index into its `tools`).
    routes: HashMap<String, (Arc<ToolComponent>, usize)>,
    /// The `tools/list` answer, built once.
    listed: Vec<Tool>,
    runner: CallRunner,
    /// How calls may use the client (question timeout and budget).
    client_policy: ClientPolicy,
    /// Tasks and paused calls of requests that come in no session:
    /// 2026-07-28 over HTTP is stateless, so a request there cannot be tied
    /// to the one that started a call. Their ids (task ids, `requestState`)
    /// are random UUIDs handed only to that client, and act as bearer
    /// tokens: whoever presents one may use it.
    sessionless: Arc<SessionCalls>,
}

/// A routed, validated call, ready to run anywhere.
#[derive(Clone)]
struct CallPlan {
    component: Arc<ToolComponent>,
    index: usize,
    arguments: Value,
}

impl CallPlan {
    fn spec(&self) -> &ToolSpec {
        &self.component.tools[self.index]
    }
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
                listed.push(mcp_tool(spec, component.approvals.needs_approval(spec)));
                routes.insert(spec.name.clone(), (component.clone(), index));
            }
        }
        for (component, _) in routes.values() {
            component
                .approvals
                .validate(routes.keys().map(String::as_str))
                .with_context(|| format!("approval rules for {}", component.path.display()))?;
        }
        let stats = runner.stats().clone();
        let inner =
            Inner { routes, listed, runner, client_policy, sessionless: SessionCalls::new(stats.clone()) };
        Ok(Self { inner: Arc::new(inner), session: Arc::default(), calls: SessionCalls::new(stats) })
    }

    /// The same tools for a new MCP session, with its own session state
    /// (e.g. its logging level), tasks and paused calls.
    pub fn new_session(&self) -> Self {
        let calls = SessionCalls::new(self.inner.runner.stats().clone());
        Self { inner: self.inner.clone(), session: Arc::default(), calls }
    }

    fn caller(&self) -> Caller {
        Caller { inner: self.inner.clone(), session: self.session.clone() }
    }

    /// The tasks and paused calls `context`'s request may reach: its
    /// session's, or for a request in no HTTP session, the sessionless ones.
    fn calls(&self, context: &RequestContext<RoleServer>) -> &SessionCalls {
        let sessionless = context
            .extensions
            .get::<http::request::Parts>()
            .is_some_and(|request| !request.headers.contains_key("mcp-session-id"));
        if sessionless { &self.inner.sessionless } else { &self.calls }
    }

    /// Every tool, as listed to clients.
    pub fn tools(&self) -> &[Tool] {
        &self.inner.listed
    }
}

/// The `_meta` key that tells clients a tool asks the user before it runs.
pub const NEEDS_APPROVAL_META: &str = "mcp-wasm-host/needsApproval";

fn mcp_tool(spec: &ToolSpec, needs_approval: bool) -> Tool {
    let mut tool = Tool::new_with_raw(
        spec.name.clone(),
        spec.description.clone().map(Into::into),
        spec.input.json.clone(),
    );
    tool.title = spec.title.clone();
    tool.output_schema = spec.output.as_ref().map(|schema| schema.json.clone());
    let a = &spec.annotations;
    if a.read_only.is_some() || a.destructive.is_some() || a.idempotent.is_some() || a.open_world.is_some() {
        tool.annotations =
            Some(ToolAnnotations::from_raw(None, a.read_only, a.destructive, a.idempotent, a.open_world));
    }
    if needs_approval {
        let mut meta = rmcp::model::JsonObject::new();
        meta.insert(NEEDS_APPROVAL_META.into(), Value::Bool(true));
        tool.meta = Some(rmcp::model::MetaObject(meta));
    }
    tool
}

// Logging (`logging/setLevel`, the `logging` capability) is deprecated in
// rmcp by SEP-2577, but every protocol version this host serves has it.
#[allow(deprecated)]
impl ServerHandler for ToolServer {
    fn get_info(&self) -> ServerConfig {
        let capabilities = ServerCapabilities::builder()
            .enable_tools()
            .enable_logging()
            .enable_resources()
            .enable_tasks()
            .build();
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
        mut request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let span = tracing::info_span!("tools/call", request = %context.id);
        if let Some(state) = request.request_state.take() {
            // A follow-up to a paused call (2026-07-28): it carries the answer.
            let responses = request.input_responses.take();
            return self
                .calls(&context)
                .paused
                .resume(&state, &request.name, responses, &context.ct)
                .instrument(span)
                .await;
        }
        let plan = self.plan(request).await?;
        if context.client_capabilities().is_some_and(|caps| caps.supports_tasks()) {
            return Ok(self.start_task(plan, &context));
        }
        if speaks_in_rounds(&context) {
            let execution = self.start_execution(plan, &context, span);
            return self.calls(&context).paused.drive(execution, &context.ct).await;
        }
        // Up to 2025-11-25 the call runs inside its request.
        let caller = self.caller();
        let client = caller.client_link(&plan, &context, Asker::Requests, context.meta.get_progress_token());
        let signals = CallSignals { client_cancel: context.ct.clone(), ..CallSignals::default() };
        caller.execute(&plan, signals, client).instrument(span).await
    }

    async fn get_task(
        &self,
        request: GetTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, McpError> {
        Ok(GetTaskResult::new(self.calls(&context).tasks.get_task(&request.task_id)?))
    }

    async fn update_task(
        &self,
        request: UpdateTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.calls(&context).tasks.update_task(&request.task_id, request.input_responses)
    }

    async fn cancel_task(
        &self,
        request: CancelTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        // The task's run watches for this and stops the call the usual way.
        self.calls(&context).tasks.cancel_task(&request.task_id)?;
        self.inner.runner.interrupt_guests();
        Ok(())
    }
}

/// Whether the session is on protocol 2026-07-28 or later, where the server
/// sends the client no requests and questions travel in results.
fn speaks_in_rounds(context: &RequestContext<RoleServer>) -> bool {
    context
        .protocol_version()
        .is_some_and(|version| version.as_str() >= ProtocolVersion::V_2026_07_28.as_str())
}

impl ToolServer {
    /// Routes `request` to its tool and checks its arguments (bounded by
    /// the tool's `--timeout`, off the async workers when costly).
    async fn plan(&self, request: CallToolRequestParams) -> Result<CallPlan, McpError> {
        let name = request.name.as_ref();
        let Some((component, index)) = self.inner.routes.get(name) else {
            let mut available: Vec<&str> = self.inner.routes.keys().map(String::as_str).collect();
            available.sort_unstable();
            return Err(McpError::invalid_params(
                format!("unknown tool `{name}`"),
                Some(json!({ "available": available })),
            ));
        };
        let arguments = Arc::new(Value::Object(request.arguments.unwrap_or_default()));
        let deadline = tokio::time::Instant::now() + component.limits.timeout;
        let schema = &component.tools[*index].input;
        match self.inner.runner.checker().check(schema, arguments.clone(), deadline).await {
            Ok(()) => {}
            Err(CheckFailure::Invalid(error)) => {
                return Err(McpError::invalid_params(
                    format!("arguments do not match the input schema of `{name}`: {error}"),
                    Some(json!({ "errors": [error] })),
                ));
            }
            Err(CheckFailure::TooSlow(_)) => {
                return Err(McpError::invalid_params(
                    format!(
                        "checking the arguments against the input schema of `{name}` took longer than \
                         the tool's time limit (--timeout)"
                    ),
                    None,
                ));
            }
        }
        // The check is done, so its thread no longer holds the arguments.
        let arguments = Arc::try_unwrap(arguments).unwrap_or_else(|shared| (*shared).clone());
        Ok(CallPlan { component: component.clone(), index: *index, arguments })
    }

    /// Starts the call in a task of its own, for a session where questions
    /// travel in results (2026-07-28).
    fn start_execution(
        &self,
        plan: CallPlan,
        context: &RequestContext<RoleServer>,
        span: tracing::Span,
    ) -> Execution {
        let (pauses_tx, pauses) = tokio::sync::mpsc::unbounded_channel();
        let (done_tx, done) = tokio::sync::oneshot::channel();
        let signals = CallSignals::default();
        let server = self.caller();
        let client =
            server.client_link(&plan, context, Asker::Rounds(pauses_tx), context.meta.get_progress_token());
        let execution = Execution { tool: plan.spec().name.clone(), pauses, done, signals: signals.clone() };
        tokio::spawn(
            async move {
                let response = server.execute(&plan, signals, client).await;
                let _ = done_tx.send(response);
            }
            .instrument(span),
        );
        execution
    }

    /// Starts the call as a task (the tasks extension) and returns the task.
    fn start_task(&self, plan: CallPlan, context: &RequestContext<RoleServer>) -> CallToolResponse {
        let server = self.caller();
        let span = tracing::info_span!("tools/call", request = %context.id);
        let make_client = {
            let (server, plan, context) = (self.caller(), plan.clone(), context.clone());
            move |task: TaskContext, unanswered| {
                server.client_link(&plan, &context, Asker::Task(task, unanswered), None)
            }
        };
        // rmcp drops a task's future when its time to live runs out; the run
        // below outlives that and stops the call itself, so keep the TTL
        // above any call's own bounds.
        let limits = &plan.component.limits;
        let ttl =
            limits.timeout + self.inner.client_policy.approval_timeout + std::time::Duration::from_secs(60);
        let options = TaskOptions::new().with_ttl_ms(ttl.as_millis() as u64).with_poll_interval_ms(100);
        let task = self.calls(context).tasks.spawn(options, move |task| {
            Box::pin(
                async move {
                    let signals = CallSignals::default();
                    let cancel = signals.client_cancel.clone();
                    let client = make_client(task.clone(), signals.unanswered.clone());
                    // In a task of its own: if rmcp drops this future, the
                    // guard below stops the call and it still cleans up.
                    let run = tokio::spawn(async move { server.execute(&plan, signals, client).await });
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
                        Ok(Ok(_)) => {
                            Err(TaskExit::Error(McpError::internal_error("unexpected response", None)))
                        }
                        Ok(Err(error)) => Err(TaskExit::Error(error)),
                        Err(join) => Err(TaskExit::Error(McpError::internal_error(join.to_string(), None))),
                    }
                }
                .instrument(span),
            )
        });
        CallToolResponse::Task(CreateTaskResult::new(task))
    }
}

impl Caller {
    fn client_link(
        &self,
        plan: &CallPlan,
        context: &RequestContext<RoleServer>,
        asker: Asker,
        progress_token: Option<rmcp::model::ProgressToken>,
    ) -> ClientLink {
        let spec = plan.spec();
        let identity = CallIdentity {
            tool: spec.name.clone(),
            pre_approved: plan.component.approvals.pre_approved(spec),
        };
        ClientLink::new(
            context.peer.clone(),
            context.client_capabilities(),
            asker,
            identity,
            progress_token,
            self.session.clone(),
            self.inner.client_policy.clone(),
            self.inner.runner.stats().clone(),
        )
    }

    /// Runs a planned call to its MCP response: approval first if the tool
    /// needs it, then the guest, then the result checks.
    async fn execute(
        &self,
        plan: &CallPlan,
        signals: CallSignals,
        client: ClientLink,
    ) -> Result<CallToolResponse, McpError> {
        let spec = plan.spec();
        let approval = plan
            .component
            .approvals
            .needs_approval(spec)
            .then(|| ApprovalQuestion::for_call(&spec.name, &plan.arguments));
        let arguments = plan.arguments.to_string();
        let outcome =
            self.inner.runner.run(&plan.component, &spec.name, &arguments, signals, client, approval).await;
        to_response(&spec.name, outcome)
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
        CallOutcome::Stopped(StopReason::NoAnswer) => content::error_result(format!(
            "tool `{tool}` was stopped: it waited for the user's answer longer than its lease (--approval-timeout)"
        )),
        CallOutcome::Stopped(_) => {
            content::error_result(format!("tool `{tool}` was stopped: the server is shutting down"))
        }
        CallOutcome::LimitHit(limit) => content::error_result(format!("tool `{tool}` was stopped: {limit}")),
        CallOutcome::Crashed(detail) => content::error_result(format!("tool `{tool}` crashed: {detail}")),
        CallOutcome::Declined(why) => content::error_result(format!(
            "tool `{tool}` did not run: it needs the user's approval, and {why}"
        )),
        CallOutcome::BadOutput(problem) => content::error_result(format!(
            "tool `{tool}` returned a result that breaks its output schema: {problem}"
        )),
    };
    Ok(CallToolResponse::Complete(result))
}
