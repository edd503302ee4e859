//! Resources, prompts and completion, served from components: routing a
//! request to the component that offers what it names, checking it, and
//! running it as a call (`crate::call`): a fresh instance, the component's
//! limits, cancellable, stopped when it must be. The answer comes back as
//! a call result (`crate::operation`) and is turned into the MCP result
//! here, every guest string checked again on the way.

use std::collections::BTreeMap;
use std::sync::Arc;

use rmcp::model::{
    CompleteRequestParams, CompleteResult, CompletionInfo, GetPromptRequestParams, GetPromptResponse,
    GetPromptResult, PromptMessage, Reference, ResourceContents, Role,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer};
use serde_json::{Value, json};

use super::mode::rounds::PromptRun;
use super::result::{content_block, resource_contents};
use super::skills::{self, SkillCatalog};
use super::{ToolServer, access, mode};
use crate::ask::{CallIdentity, Delivery};
use crate::call::{CallOutcome, CallSignals};
use crate::component::{ToolComponent, check_uri};
use crate::contract::completion_export::{CompletionRequest, Reference as GuestReference};
use crate::contract::types::{CallError, CallResult, Content};
use crate::log_text::escaped_to;
use crate::operation::Operation;
use crate::telemetry::spans::RequestSpan;

/// The most bytes of a guest's error message passed on to the client.
const MAX_MESSAGE: usize = 4 << 10;

impl ToolServer {
    /// `resources/read` of a component's resource.
    pub(super) async fn read_offered(
        &self,
        uri: &str,
        context: &RequestContext<RoleServer>,
    ) -> Result<Vec<ResourceContents>, McpError> {
        let tools = self.caller.shared.loaded_tools(&context.ct).await?;
        let Some(component) = tools.catalog.route_uri(uri).cloned() else {
            return Err(McpError::resource_not_found(
                format!("no resource `{}`", escaped_to(uri, 256)),
                Some(json!({ "uri": uri })),
            ));
        };
        access::check_scopes(uri, &component.scopes.every_tool, context)?;
        if let Some(file) = SkillCatalog::file(&component, uri) {
            return Ok(vec![skills::contents(file)]);
        }
        let outcome = self.run_offered(&component, Operation::Read { uri: uri.to_string() }, context).await?;
        let what = format!("reading `{}`", escaped_to(uri, 256));
        match outcome {
            CallOutcome::Returned(Ok(result)) => contents(result).map_err(|why| internal(&what, &why)),
            CallOutcome::Returned(Err(CallError::UnknownTool(_))) => Err(McpError::resource_not_found(
                format!("no resource `{}`", escaped_to(uri, 256)),
                Some(json!({ "uri": uri })),
            )),
            other => Err(failure(&what, other)),
        }
    }

    /// `prompts/get`.
    pub(super) async fn get_offered(
        &self,
        mut request: GetPromptRequestParams,
        context: &RequestContext<RoleServer>,
        span: RequestSpan,
    ) -> Result<GetPromptResponse, McpError> {
        let run = self.prompt_run(&request, context).await?;
        // On 2026-07-28 a prompt that asks the user pauses like a tool call.
        if mode::rounds::speaks_in_rounds(context) {
            return match request.request_state.take() {
                Some(state) => {
                    mode::rounds::resume_prompt(self, &state, &mut request, run, context, span).await
                }
                None => {
                    let given = request.input_responses.take();
                    mode::rounds::start_prompt(self, run, context, span, given).await
                }
            };
        }
        let identity = CallIdentity { tool: run.operation.label().to_string(), pre_approved: false };
        let channel = self.caller.channel_for(identity, &run.component, context, Delivery::Requests, None);
        let signals = CallSignals { client_cancel: context.ct.clone(), ..CallSignals::default() };
        let runner = &self.caller.shared.runner;
        let outcome =
            runner.run(&run.component, run.operation, &run.share, signals, channel, None, None).await;
        prompt_result(&format!("prompt `{}`", run.name), outcome).map(Into::into)
    }

    /// Checks a `prompts/get` (the prompt, its scopes, its arguments) and
    /// readies it to run, with a slot of the caller's share.
    async fn prompt_run(
        &self,
        request: &GetPromptRequestParams,
        context: &RequestContext<RoleServer>,
    ) -> Result<PromptRun, McpError> {
        let tools = self.caller.shared.loaded_tools(&context.ct).await?;
        let name = request.name.as_str();
        let Some((component, spec)) = tools.catalog.prompt(name) else {
            return Err(McpError::invalid_params(
                format!("unknown prompt `{}`", escaped_to(name, 256)),
                None,
            ));
        };
        access::check_scopes(name, &component.scopes.for_tool(name), context)?;
        let given = request.arguments.clone().unwrap_or_default();
        let mut arguments = Vec::with_capacity(given.len());
        for (key, value) in given.iter() {
            if !spec.arguments.iter().any(|argument| argument.name == *key) {
                return Err(McpError::invalid_params(
                    format!("prompt `{name}` has no argument `{}`", escaped_to(key, 256)),
                    None,
                ));
            }
            // MCP's prompt arguments are strings; other JSON is passed as its text.
            let value = match value {
                Value::String(text) => text.clone(),
                other => other.to_string(),
            };
            arguments.push((key.clone(), value));
        }
        if let Some(missing) = spec
            .arguments
            .iter()
            .find(|argument| argument.required && !arguments.iter().any(|(k, _)| *k == argument.name))
        {
            return Err(McpError::invalid_params(
                format!("prompt `{name}` needs argument `{}`", missing.name),
                None,
            ));
        }
        let share = access::share(self.caller.shared.fairness.as_ref(), context)?;
        Ok(PromptRun {
            name: name.to_string(),
            arguments: Value::Object(given),
            component: component.clone(),
            operation: Operation::Prompt { name: name.to_string(), arguments },
            share,
            finish: prompt_result,
        })
    }

    /// `completion/complete`: asked of the component that offers the prompt
    /// or template; none if it does not export `completion`.
    pub(super) async fn complete_offered(
        &self,
        request: CompleteRequestParams,
        context: &RequestContext<RoleServer>,
    ) -> Result<CompleteResult, McpError> {
        let tools = self.caller.shared.loaded_tools(&context.ct).await?;
        let (component, reference, scopes) = match &request.r#ref {
            Reference::Prompt(prompt) => {
                let Some((component, spec)) = tools.catalog.prompt(&prompt.name) else {
                    return Err(McpError::invalid_params(
                        format!("unknown prompt `{}`", escaped_to(&prompt.name, 256)),
                        None,
                    ));
                };
                let scopes = component.scopes.for_tool(&spec.name);
                (component.clone(), GuestReference::Prompt(spec.guest_name.clone()), scopes)
            }
            Reference::Resource(template) => {
                let Some(component) = tools.catalog.route_template(&template.uri) else {
                    return Err(McpError::invalid_params(
                        format!("unknown resource template `{}`", escaped_to(&template.uri, 256)),
                        None,
                    ));
                };
                let scopes = component.scopes.every_tool.clone();
                (component.clone(), GuestReference::ResourceTemplate(template.uri.clone()), scopes)
            }
            _ => return Err(McpError::invalid_params("unknown reference type", None)),
        };
        access::check_scopes("completion/complete", &scopes, context)?;
        if !component.offers.completes {
            return Ok(CompleteResult::default());
        }
        let context_arguments: BTreeMap<String, String> =
            request.context.and_then(|context| context.arguments).unwrap_or_default().into_iter().collect();
        let operation = Operation::Complete(CompletionRequest {
            reference,
            argument: request.argument.name,
            value: request.argument.value,
            context: context_arguments.into_iter().collect(),
        });
        match self.run_offered(&component, operation, context).await? {
            CallOutcome::Returned(Ok(result)) => Ok(CompleteResult::new(completions(result))),
            CallOutcome::Returned(Err(CallError::Failed(why))) => {
                tracing::info!(reason = %escaped_to(&why, 512), "completion failed; the client gets none");
                Ok(CompleteResult::default())
            }
            other => Err(failure("completion", other)),
        }
    }

    /// Runs `operation` on `component` within `context`'s request: its
    /// cancel is the run's, its questions go to the client as requests.
    /// Guest code runs, so it takes a slot of the caller's share
    /// (`--max-calls-per-principal`) as a tool call does, held until it ends.
    async fn run_offered(
        &self,
        component: &Arc<ToolComponent>,
        operation: Operation,
        context: &RequestContext<RoleServer>,
    ) -> Result<CallOutcome, McpError> {
        let share = access::share(self.caller.shared.fairness.as_ref(), context)?;
        let identity = CallIdentity { tool: operation.label().to_string(), pre_approved: false };
        let channel = self.caller.channel_for(identity, component, context, Delivery::Requests, None);
        let signals = CallSignals { client_cancel: context.ct.clone(), ..CallSignals::default() };
        Ok(self.caller.shared.runner.run(component, operation, &share, signals, channel, None, None).await)
    }
}

/// A prompt run's outcome (`what` names it in errors) as its messages.
fn prompt_result(what: &str, outcome: CallOutcome) -> Result<GetPromptResult, McpError> {
    match outcome {
        CallOutcome::Returned(Ok(result)) => messages(result).map_err(|why| internal(what, &why)),
        CallOutcome::Returned(Err(CallError::InvalidArguments(why))) => Err(McpError::invalid_params(
            format!("{what}: invalid arguments: {}", escaped_to(&why, MAX_MESSAGE)),
            None,
        )),
        other => Err(failure(what, other)),
    }
}

/// A read's contents, each URI and MIME type checked again.
fn contents(result: CallResult) -> Result<Vec<ResourceContents>, String> {
    let mut contents = Vec::with_capacity(result.content.len());
    for piece in result.content {
        let Content::Embedded(piece) = piece else {
            return Err("it returned something other than contents".into());
        };
        check_uri(&piece.uri).map_err(|why| format!("a piece it returned: {why}"))?;
        let mime_type = checked_mime(piece.mime_type)?;
        contents.push(resource_contents(piece.uri, mime_type, piece.body));
    }
    Ok(contents)
}

/// A prompt's messages: its content blocks with the roles the host wrote.
fn messages(result: CallResult) -> Result<GetPromptResult, String> {
    let structured: Value = serde_json::from_str(result.structured_content.as_deref().unwrap_or("{}"))
        .map_err(|err| err.to_string())?;
    let roles = structured["roles"].as_array().cloned().unwrap_or_default();
    if roles.len() != result.content.len() {
        return Err("its messages and their roles do not match".into());
    }
    let mut messages = Vec::with_capacity(roles.len());
    for (role, content) in roles.iter().zip(result.content) {
        let role = if role == "assistant" { Role::Assistant } else { Role::User };
        if let Content::Embedded(resource) = &content {
            check_uri(&resource.uri).map_err(|why| format!("an embedded resource: {why}"))?;
        }
        messages.push(PromptMessage::new(role, content_block(content)));
    }
    let mut got = GetPromptResult::new(messages);
    got.description = structured["description"].as_str().map(str::to_string);
    Ok(got)
}

/// Completion values, with the total and whether there are more.
fn completions(result: CallResult) -> CompletionInfo {
    let structured: Value = result
        .structured_content
        .as_deref()
        .and_then(|text| serde_json::from_str(text).ok())
        .unwrap_or_default();
    let values = result
        .content
        .into_iter()
        .filter_map(|content| match content {
            Content::Text(text) => Some(text),
            _ => None,
        })
        .collect();
    let mut info = CompletionInfo::default();
    info.values = values;
    info.total = structured["total"].as_u64().map(|total| total.min(u64::from(u32::MAX)) as u32);
    info.has_more = structured["hasMore"].as_bool();
    info
}

/// A MIME type the host passes on: short, no control characters.
fn checked_mime(mime: Option<String>) -> Result<Option<String>, String> {
    match mime {
        Some(mime) if mime.len() > 256 || mime.chars().any(char::is_control) => {
            Err("a MIME type it returned is too long or holds control characters".into())
        }
        other => Ok(other),
    }
}

fn internal(what: &str, why: &str) -> McpError {
    McpError::internal_error(format!("{what}: the component's answer is refused: {why}"), None)
}

/// The error for a run that produced nothing to send.
fn failure(what: &str, outcome: CallOutcome) -> McpError {
    let message = match outcome {
        CallOutcome::Returned(Err(CallError::Failed(why))) => {
            format!("{what} failed: {}", escaped_to(&why, MAX_MESSAGE))
        }
        CallOutcome::Returned(Err(CallError::InvalidArguments(why))) => {
            format!("{what}: invalid arguments: {}", escaped_to(&why, MAX_MESSAGE))
        }
        CallOutcome::Returned(Err(CallError::Cancelled)) => format!("{what} was cancelled"),
        returned @ CallOutcome::Returned(_) => format!("{what} did not complete ({})", returned.label()),
        // How the host ended it: the text a tool call's result shows.
        other => other.why_none(what),
    };
    McpError::internal_error(message, None)
}
