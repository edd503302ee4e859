//! The rmcp `ServerHandler`: each MCP request goes to the module that does
//! its job; nothing is decided here.

use std::borrow::Cow;

#[allow(deprecated)]
use rmcp::model::SetLevelRequestParams;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CancelTaskParams, CancelledNotificationParam,
    ClientCapabilities, CompleteRequestParams, CompleteResult, GetPromptRequestParams, GetPromptResponse,
    GetSkillRequestParams, GetSkillResult, GetTaskParams, GetTaskResult, Implementation, ListPromptsResult,
    ListResourceTemplatesResult, ListResourcesResult, ListSkillsResult, ListToolsResult,
    PaginatedRequestParams, ReadResourceDirectoryRequestParams, ReadResourceDirectoryResult,
    ReadResourceRequestParams, ReadResourceResponse, ReadResourceResult, SKILLS_EXTENSION_ID,
    ServerCapabilities, ServerConfig, SubscribeRequestParams, SubscriptionFilter, Tool,
    UnsubscribeRequestParams, UpdateTaskParams,
};
use rmcp::model::{ClientNotification, ClientRequest, ProtocolVersion, ServerResult};
use rmcp::service::{NotificationContext, RequestContext, SubscriptionContext};
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler};

use serde_json::Value;

use super::{ToolServer, access, mode, status, subscriptions};
use crate::audit::Who;
use crate::auth::Lacking;
use crate::contract::tasks_export::TaskSupport;
use crate::tasks::Owner;
use crate::telemetry::spans;

// Logging (`logging/setLevel`, the `logging` capability) is deprecated in
// rmcp by SEP-2577, but every protocol version this host serves has it.
//
// Each request's answer is boxed (`Box::pin(async move { .. })`), but for
// the two smallest (`logging/setLevel`, `resources/unsubscribe`): rmcp
// runs every request in a future of its own that holds the largest of
// these inline, and moves it (into its task, and again as the task ends)
// whatever the method. Unboxed, that future was 13 KiB, sized by
// `prompts/get` and `tools/call`; boxing them took `memmove` from 8.6 to
// 5.9 % of the host's CPU under load (BENCHMARKS.md). Boxed, an answer
// costs one allocation and the request future is rmcp's own state
// (`request_futures_stay_small` below), which [`Served`] boxes in turn on
// stdio.
#[allow(deprecated)]
impl ServerHandler for ToolServer {
    fn get_info(&self) -> ServerConfig {
        let shared = &self.caller.shared;
        let watching = shared.list_changes.is_some();
        // Before the components are loaded, or with --watch (a reload may
        // add them), prompts and completion may come: they are advertised.
        let tools = shared.tools();
        let maybe = watching || !shared.loading.is_done();
        let mut capabilities = ServerCapabilities::builder()
            .enable_tools()
            .enable_logging()
            .enable_resources()
            .enable_resources_subscribe()
            .enable_tasks()
            .build();
        if maybe || tools.catalog.has_prompts() {
            let mut prompts = rmcp::model::PromptsCapability::default();
            prompts.list_changed = watching.then_some(true);
            capabilities.prompts = Some(prompts);
        }
        if maybe || tools.catalog.completes {
            capabilities.completions = Some(rmcp::model::JsonObject::new());
        }
        if maybe || !tools.catalog.skills.is_empty() {
            // SEP-2640, with `resources/directory/read`; skill files are
            // resources, and `resources` is always declared.
            let settings = serde_json::json!({ "directoryRead": true });
            let Value::Object(settings) = settings else { unreachable!("an object") };
            capabilities.extensions.get_or_insert_default().insert(SKILLS_EXTENSION_ID.into(), settings);
        }
        if watching {
            // With --watch, the lists change when a component is reloaded.
            if let Some(tools) = &mut capabilities.tools {
                tools.list_changed = Some(true);
            }
            if let Some(resources) = &mut capabilities.resources {
                resources.list_changed = Some(true);
            }
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
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, McpError> {
        Box::pin(async move {
            let span = spans::request("resources/list", &context, self.caller.shared.runner.stats().clone());
            spans::traced(span, async {
                let tools = self.caller.shared.loaded_tools(&context.ct).await?;
                let granted = access::caller(&context).map(|principal| principal.scopes.as_slice());
                let mut resources = status::list();
                resources.extend(tools.catalog.resources_for(granted));
                Ok(self.cacheable(ListResourcesResult::with_all_items(resources), &context))
            })
            .await
        })
        .await
    }

    async fn list_skills(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListSkillsResult, McpError> {
        Box::pin(async move {
            let span = spans::request("skills/list", &context, self.caller.shared.runner.stats().clone());
            spans::traced(span, async {
                Ok(self.cacheable(self.list_offered_skills(&context).await?, &context))
            })
            .await
        })
        .await
    }

    async fn get_skill(
        &self,
        request: GetSkillRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetSkillResult, McpError> {
        Box::pin(async move {
            let span = spans::request("skills/get", &context, self.caller.shared.runner.stats().clone());
            span.span.resource(&request.uri);
            spans::traced(span, async {
                uri_within_bounds(&request.uri)?;
                let got = self.get_offered_skill(&request.uri, &context).await?;
                Ok(self.cacheable(got, &context))
            })
            .await
        })
        .await
    }

    async fn read_resource_directory(
        &self,
        request: ReadResourceDirectoryRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceDirectoryResult, McpError> {
        Box::pin(async move {
            let span = spans::request(
                "resources/directory/read",
                &context,
                self.caller.shared.runner.stats().clone(),
            );
            span.span.resource(&request.uri);
            spans::traced(span, async {
                uri_within_bounds(&request.uri)?;
                let children = self.read_skill_directory(&request.uri, &context).await?;
                Ok(self.cacheable(children, &context))
            })
            .await
        })
        .await
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, McpError> {
        Box::pin(async move {
            let span = spans::request(
                "resources/templates/list",
                &context,
                self.caller.shared.runner.stats().clone(),
            );
            spans::traced(span, async {
                let tools = self.caller.shared.loaded_tools(&context.ct).await?;
                let granted = access::caller(&context).map(|principal| principal.scopes.as_slice());
                let templates = tools.catalog.templates_for(granted);
                Ok(self.cacheable(ListResourceTemplatesResult::with_all_items(templates), &context))
            })
            .await
        })
        .await
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, McpError> {
        Box::pin(async move {
            let span = spans::request("resources/read", &context, self.caller.shared.runner.stats().clone());
            span.span.resource(&request.uri);
            spans::traced(span, async {
                uri_within_bounds(&request.uri)?;
                if request.uri.starts_with(crate::component::HOST_SCHEME) {
                    return status::read(&request.uri, self.caller.shared.runner.stats());
                }
                let contents = self.read_offered(&request.uri, &context).await?;
                Ok(ReadResourceResult::new(contents).into())
            })
            .await
        })
        .await
    }

    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        Box::pin(async move {
            let span =
                spans::request("resources/subscribe", &context, self.caller.shared.runner.stats().clone());
            span.span.resource(&request.uri);
            spans::traced(span, async {
                uri_within_bounds(&request.uri)?;
                let tools = self.caller.shared.loaded_tools(&context.ct).await?;
                let uri = request.uri.as_str();
                let offered =
                    uri.starts_with(crate::component::HOST_SCHEME) || tools.catalog.route_uri(uri).is_some();
                if !offered {
                    let shown = crate::log_text::escaped_to(uri, 256);
                    return Err(McpError::resource_not_found(format!("no resource `{shown}`"), None));
                }
                let subscribers = &self.caller.shared.subscribers;
                subscribers.follow(&self.following, context.peer.clone(), uri).map_err(|_| {
                    McpError::invalid_request(
                        format!(
                            "a session may follow at most {} resources, of {} KiB of URIs together",
                            subscriptions::MAX_PER_SESSION,
                            subscriptions::MAX_BYTES_PER_SESSION >> 10
                        ),
                        None,
                    )
                })
            })
            .await
        })
        .await
    }

    async fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.caller.shared.subscribers.unfollow(&self.following, &request.uri);
        Ok(())
    }

    /// `subscriptions/listen` (2026-07-28): the URIs the components serve,
    /// and the lists when they can change (`--watch`).
    fn accepted_subscription_filter(&self, requested: &SubscriptionFilter) -> Option<SubscriptionFilter> {
        let shared = &self.caller.shared;
        let tools = shared.tools();
        let mut accepted = SubscriptionFilter::new();
        if shared.list_changes.is_some() {
            accepted.tools_list_changed = requested.tools_list_changed;
            accepted.resources_list_changed = requested.resources_list_changed;
            accepted.prompts_list_changed = requested.prompts_list_changed;
        }
        // Before the components are loaded (this cannot wait for them),
        // what they will serve is not known yet: every URI is followed.
        let loaded = shared.loading.is_done();
        accepted.resource_subscriptions = requested.resource_subscriptions.as_ref().map(|uris| {
            uris.iter()
                .filter(|uri| uri.len() <= crate::limits::MAX_MATCHED_URI)
                .filter(|uri| !loaded || tools.catalog.route_uri(uri).is_some())
                .take(subscriptions::MAX_PER_SESSION)
                .cloned()
                .collect()
        });
        // Followed from here: rmcp acknowledges the stream before `listen`.
        let lists =
            [accepted.tools_list_changed, accepted.resources_list_changed, accepted.prompts_list_changed]
                .contains(&Some(true));
        shared.subscribers.accept(accepted.resource_subscriptions.as_deref().unwrap_or_default(), lists);
        Some(accepted)
    }

    async fn listen(&self, context: SubscriptionContext) -> Result<(), McpError> {
        let accepted = context.accepted();
        let uris = accepted.resource_subscriptions.clone().unwrap_or_default();
        let lists =
            [accepted.tools_list_changed, accepted.resources_list_changed, accepted.prompts_list_changed]
                .contains(&Some(true));
        // Followed until the client ends the stream.
        let _following = self.caller.shared.subscribers.listen(context.sink().clone(), &uris, lists);
        context.cancelled().await;
        Ok(())
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, McpError> {
        Box::pin(async move {
            let span = spans::request("prompts/list", &context, self.caller.shared.runner.stats().clone());
            spans::traced(span, async {
                let tools = self.caller.shared.loaded_tools(&context.ct).await?;
                let granted = access::caller(&context).map(|principal| principal.scopes.as_slice());
                Ok(self.cacheable(
                    ListPromptsResult::with_all_items(tools.catalog.prompts_for(granted)),
                    &context,
                ))
            })
            .await
        })
        .await
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, McpError> {
        Box::pin(async move {
            let mut span = spans::request("prompts/get", &context, self.caller.shared.runner.stats().clone());
            let tools = self.caller.shared.loaded_tools(&context.ct).await;
            if let Ok(tools) = &tools
                && tools.catalog.prompt(&request.name).is_some()
            {
                span.target(&request.name);
            }
            // A failed load ends inside the span too: it is an error the span
            // and the duration metric record.
            let scope = span.span.clone();
            spans::traced(span, async {
                tools?;
                self.get_offered(request, &context, scope).await
            })
            .await
        })
        .await
    }

    async fn complete(
        &self,
        request: CompleteRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, McpError> {
        Box::pin(async move {
            let span =
                spans::request("completion/complete", &context, self.caller.shared.runner.stats().clone());
            spans::traced(span, self.complete_offered(request, &context)).await
        })
        .await
    }

    /// The tool `name`'s name and input schema: over HTTP on 2026-07-28,
    /// rmcp checks a `tools/call`'s `Mcp-Param-*` headers against the
    /// parameters its input schema marks with `x-mcp-header` (SEP-2243), and
    /// refuses a mismatch with -32020 before the call reaches the host.
    ///
    /// That check is all rmcp 3.11 asks this for (its only two callers take
    /// `input_schema` and drop the rest), once for every such request: the
    /// listed tool's description, annotations and `_meta` are not copied
    /// for it. `tools/list` answers from the listed tools themselves.
    fn get_tool(&self, name: &str) -> Option<Tool> {
        let tools = self.caller.shared.tools();
        let tool = tools.listed().iter().find(|tool| tool.name == name)?;
        Some(Tool::new_with_raw(tool.name.clone(), None, tool.input_schema.clone()))
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        Box::pin(async move {
            let span = spans::request("tools/list", &context, self.caller.shared.runner.stats().clone());
            spans::traced(span, async {
                let tools = self.caller.shared.loaded_tools(&context.ct).await?;
                let granted = access::caller(&context).map(|principal| principal.scopes.as_slice());
                Ok(self.cacheable(ListToolsResult::with_all_items(tools.listed_for(granted)), &context))
            })
            .await
        })
        .await
    }

    async fn call_tool(
        &self,
        mut request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        Box::pin(async move {
            let stats = self.caller.shared.runner.stats().clone();
            let mut traced = match request.request_state {
                Some(_) => spans::follow_up(&context, stats),
                None => spans::request("tools/call", &context, stats),
            };
            let answer = async {
                let tools = self.caller.shared.loaded_tools(&context.ct).await?;
                let span = traced.span.clone();
                if let Some(needed) = tools.scopes_of(&request.name) {
                    // A tool the host serves: it names the span.
                    traced.target(&request.name);
                    // New calls and follow-ups alike (the HTTP layer answered 403
                    // already where it could).
                    if let Err(refusal) = access::check_scopes(&request.name, &needed, &context) {
                        let arguments = Value::Object(request.arguments.clone().unwrap_or_default());
                        let audit = self.caller.shared.runner.stats().audit();
                        audit
                            .refused(Who::of(&context), &request.name, &arguments, Lacking::AUDIT_REASON)
                            .await;
                        return Err(refusal);
                    }
                }
                if let Some(state) = request.request_state.take() {
                    // A follow-up to a paused call (2026-07-28): it carries the answer.
                    return mode::rounds::resume(self, &state, request, &context, span).await;
                }
                let audit = self.caller.shared.runner.stats().audit();
                // Kept for the record of a refusal, only when there is an audit log.
                let asked = audit.is_on().then(|| {
                    (request.name.clone(), Value::Object(request.arguments.clone().unwrap_or_default()))
                });
                // Answers sent with a first call, before any question (2026-07-28).
                let given = request.input_responses.take();
                let checked = match tools.plan(request, &self.caller.shared.runner).await {
                    Ok(checked) => checked,
                    Err(refusal) => {
                        if let Some((name, arguments)) = asked {
                            let known = tools.listed().iter().any(|tool| tool.name == name);
                            let reason = if known { "invalid-arguments" } else { "unknown-tool" };
                            audit.refused(Who::of(&context), &name, &arguments, reason).await;
                        }
                        return Err(refusal);
                    }
                };
                let plan = checked.admitted(access::share(self.caller.shared.fairness.as_ref(), &context)?);
                let speaks_tasks = context.client_capabilities().is_some_and(|caps| caps.supports_tasks());
                match (plan.spec().tasks, speaks_tasks) {
                    (TaskSupport::Required, false) => {
                        // The tool runs only as a task (SEP-2663): refused before it runs.
                        audit
                            .refused(Who::of(&context), &plan.spec().name, &plan.arguments, "needs-tasks")
                            .await;
                        let tasks = ClientCapabilities::builder().enable_tasks().build();
                        return Err(McpError::missing_required_client_capability(tasks));
                    }
                    // In rounds (2026-07-28, parked or sealed) the call becomes
                    // a task there, after the rounds of the questions it asks
                    // first; elsewhere it is a task from the start.
                    (TaskSupport::Optional | TaskSupport::Required, true)
                        if !mode::rounds::speaks_in_rounds(&context) =>
                    {
                        return mode::task::start(self, plan, &context, span).await;
                    }
                    _ => {}
                }
                if mode::rounds::speaks_in_rounds(&context) {
                    return mode::rounds::start(self, plan, &context, span, given).await;
                }
                mode::request::run(self, plan, &context, span).await
            }
            .await;
            traced.ended(&answer, spans::is_tool_error);
            answer
        })
        .await
    }

    async fn get_task(
        &self,
        request: GetTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, McpError> {
        Box::pin(async move {
            let id = &request.task_id;
            let allowed = |owner: &Owner| access::task_check(id, &context, owner);
            Ok(GetTaskResult::new(self.calls(&context).tasks.get(id, &allowed).await?))
        })
        .await
    }

    async fn update_task(
        &self,
        request: UpdateTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        Box::pin(async move {
            let id = &request.task_id;
            let allowed = |owner: &Owner| access::task_check(id, &context, owner);
            self.calls(&context).tasks.update(id, &allowed, request.input_responses).await
        })
        .await
    }

    async fn cancel_task(
        &self,
        request: CancelTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        Box::pin(async move {
            // The task's run watches for this and stops the call the usual way.
            let id = &request.task_id;
            let allowed = |owner: &Owner| access::task_check(id, &context, owner);
            self.calls(&context).tasks.cancel(id, &allowed).await?;
            self.caller.shared.runner.interrupt_guests();
            Ok(())
        })
        .await
    }
}

/// A [`ToolServer`] as rmcp serves it on stdio: the same handler, with
/// each request's whole future in one allocation.
///
/// rmcp runs a request in a task of its own, whose future holds the
/// future of rmcp's dispatch (`Service::handle_request` of the
/// `ServerHandler` impl above) inline: 4.4 KiB even with every answer
/// boxed, 3 KiB of it rmcp's own state. That whole future was moved eight
/// times a call (five in rmcp's loop, three in tokio's task): 35 KiB of
/// `memmove` a `tools/call`, 5.3 KiB once boxed here (copies of 2 KiB or
/// more, a uprobe on `memmove` of the host serving the demo's `echo` at 32
/// in flight; calls/s +5–8 %, BENCHMARKS.md). What rmcp still holds is the
/// request and its context, until it hands them over. rmcp's Streamable
/// HTTP service takes a `ServerHandler`, so an HTTP session is served by
/// [`ToolServer`] itself (a plain 2026-07-28 `tools/call` over HTTP is
/// answered by `transport/http/direct`, outside rmcp's loop).
#[derive(Clone)]
pub struct Served(pub ToolServer);

impl rmcp::Service<RoleServer> for Served {
    fn handle_request(
        &self,
        request: ClientRequest,
        context: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<ServerResult, McpError>> + Send + '_ {
        Box::pin(<ToolServer as rmcp::Service<RoleServer>>::handle_request(&self.0, request, context))
    }

    fn handle_notification(
        &self,
        notification: ClientNotification,
        context: NotificationContext<RoleServer>,
    ) -> impl Future<Output = Result<(), McpError>> + Send + '_ {
        <ToolServer as rmcp::Service<RoleServer>>::handle_notification(&self.0, notification, context)
    }

    fn get_info(&self) -> ServerConfig {
        <ToolServer as rmcp::Service<RoleServer>>::get_info(&self.0)
    }

    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        <ToolServer as rmcp::Service<RoleServer>>::supported_protocol_versions(&self.0)
    }
}

/// Refuses a URI too long to be any resource of ours before anything is
/// matched against it or kept (a subscription keeps its URI).
fn uri_within_bounds(uri: &str) -> Result<(), McpError> {
    let max = crate::limits::MAX_MATCHED_URI;
    if uri.len() > max {
        return Err(McpError::invalid_params(
            format!("the URI is {} bytes, more than the {max} a resource's may be", uri.len()),
            None,
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The size of the future `handler` returns (never run: only its type).
    fn future_size<'a, S: 'a, A, B, F: Future>(_handler: impl Fn(&'a S, A, B) -> F) -> usize {
        std::mem::size_of::<F>()
    }

    /// rmcp holds the future of every request's answer inline in its own
    /// and moves that whole (see the note on the impl): an answer that
    /// stops being boxed makes every request, `tools/call` first, copy it.
    #[test]
    fn request_futures_stay_small() {
        let request = future_size(<ToolServer as rmcp::Service<RoleServer>>::handle_request);
        // rmcp's own state is 3 KiB of it.
        assert!(request <= 4096, "rmcp's request future is {request} bytes: is an answer no longer boxed?");
        let call = future_size(<ToolServer as ServerHandler>::call_tool);
        assert!(call <= 512, "the tools/call answer's future is {call} bytes inline");
        // What rmcp's task holds of it, as served.
        let served = future_size(<Served as rmcp::Service<RoleServer>>::handle_request);
        assert!(served <= 16, "the request future rmcp holds is {served} bytes: is it no longer boxed?");
    }
}
