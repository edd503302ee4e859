//! A contract component's exports: which of `tool`, `resources`, `prompts`
//! and `completion` it has (looked up once, when it is loaded), calling
//! them, and carrying each answer back as a [`CallResult`] so that every
//! answer passes the same caps (`crate::operation`).

use std::sync::atomic::{AtomicBool, Ordering};

use serde_json::json;
use wasmtime::component::{ComponentExportIndex, Instance, InstancePre, Resource, TypedFunc};
use wasmtime::{AsContextMut, Store};

use super::CallState;
use crate::budget::Charge;
use crate::contract::CONTRACT_VERSION;
use crate::contract::cancellation::Cancelled;
use crate::contract::completion_export::{self, Completions};
use crate::contract::prompts_export::{self, PromptError, PromptInfo, PromptResult, Role};
use crate::contract::resources_export::{self, ReadError, ResourceContents, ResourceInfo, ResourceTemplate};
use crate::contract::tasks_export::{self, TaskSupport};
use crate::contract::tool_export;
use crate::contract::types::{CallError, CallResult, Content, EmbeddedResource, ResourceBody, ToolInfo};
use crate::operation::Operation;

/// The most completion values a client gets (MCP's own cap).
const MAX_COMPLETIONS: usize = 100;

/// Which of the contract's interfaces a component exports, with their
/// functions found.
pub struct ContractCode {
    /// The component with its imports resolved.
    pub pre: InstancePre<CallState>,
    tool: Option<tool_export::GuestIndices>,
    /// `tool.call`, the function every tool call runs, found apart from
    /// the rest of `tool` (see [`ToolCall`]).
    call: Option<ToolCall>,
    resources: Option<resources_export::GuestIndices>,
    prompts: Option<prompts_export::GuestIndices>,
    completion: Option<completion_export::GuestIndices>,
    tasks: Option<tasks_export::GuestIndices>,
}

/// What a component offers, read once when it is loaded.
#[derive(Default)]
pub struct Listing {
    pub tools: Vec<ToolInfo>,
    pub resources: Vec<ResourceInfo>,
    pub templates: Vec<ResourceTemplate>,
    pub prompts: Vec<PromptInfo>,
    /// It exports `completion`.
    pub completes: bool,
    /// The tools whose calls are not `optional` tasks (`tasks` export).
    pub task_support: Vec<(String, TaskSupport)>,
    /// The fixed resources read at load, in the listing's instance
    /// (`Guest::list`): the files of the component's skills.
    pub read: Vec<ReadAtLoad>,
}

/// One fixed resource read when its component was loaded.
pub struct ReadAtLoad {
    pub uri: String,
    /// Its contents, or why there are none (the guest's error, a trap, the
    /// budget).
    pub got: Result<LoadedBody, String>,
}

/// What a read at load returned for its URI, held within its [`Charge`].
pub struct LoadedBody {
    pub body: ResourceBody,
    /// Of the component's `Budget` for what it reads at load.
    pub charge: Charge,
}

impl ContractCode {
    /// Finds the interfaces `pre`'s component exports. An interface that is
    /// there but lacks a function of the contract is an error naming it;
    /// one that is not there is simply not offered.
    pub fn new(pre: InstancePre<CallState>) -> Result<Self, String> {
        fn find<T>(
            pre: &InstancePre<CallState>,
            interface: &str,
            indices: impl FnOnce(&InstancePre<CallState>) -> wasmtime::Result<T>,
        ) -> Result<Option<T>, String> {
            if contract_export(pre, interface).is_none() {
                return Ok(None);
            }
            indices(pre).map(Some).map_err(|err| format!("its `{interface}` export: {err:#}"))
        }
        let tool = find(&pre, "tool", tool_export::GuestIndices::new)?;
        let call = match &tool {
            Some(_) => Some(ToolCall::find(&pre)?),
            None => None,
        };
        Ok(ContractCode {
            tool,
            call,
            resources: find(&pre, "resources", resources_export::GuestIndices::new)?,
            prompts: find(&pre, "prompts", prompts_export::GuestIndices::new)?,
            completion: find(&pre, "completion", completion_export::GuestIndices::new)?,
            tasks: find(&pre, "tasks", tasks_export::GuestIndices::new)?,
            pre,
        })
    }

    /// Whether it exports `tool` (and so `cleanup`).
    pub fn has_tool(&self) -> bool {
        self.tool.is_some()
    }

    /// Reads everything the component offers, in `instance`. A function
    /// whose type breaks the contract fails here, before anything is served.
    pub async fn list(&self, store: &mut Store<CallState>, instance: &Instance) -> wasmtime::Result<Listing> {
        let mut listing = Listing::default();
        if let Some(tool) = &self.tool {
            listing.tools = tool.load(&mut *store, instance)?.call_list_tools(&mut *store).await?;
        }
        if let Some(resources) = &self.resources {
            let resources = resources.load(&mut *store, instance)?;
            listing.resources = resources.call_list_resources(&mut *store).await?;
            listing.templates = resources.call_list_templates(&mut *store).await?;
        }
        if let Some(prompts) = &self.prompts {
            listing.prompts = prompts.load(&mut *store, instance)?.call_list_prompts(&mut *store).await?;
        }
        if let Some(completion) = &self.completion {
            completion.load(&mut *store, instance)?;
            listing.completes = true;
        }
        if let Some(tasks) = &self.tasks {
            listing.task_support =
                tasks.load(&mut *store, instance)?.call_list_task_support(&mut *store).await?;
        }
        Ok(listing)
    }

    /// Reads the resource at `uri` in `instance`, as it is (`Guest::list`
    /// keeps it as the component's own copy). `None`: it does not export
    /// `resources`.
    pub async fn read(
        &self,
        mut store: impl AsContextMut<Data = CallState> + Send,
        instance: &Instance,
        uri: &str,
        cancelled: Resource<Cancelled>,
    ) -> wasmtime::Result<Option<Result<Vec<ResourceContents>, ReadError>>> {
        let Some(resources) = &self.resources else { return Ok(None) };
        let resources = resources.load(&mut store, instance)?;
        Ok(Some(resources.call_read(&mut store, "load", uri, cancelled).await?))
    }

    /// Runs `operation` (with the component's own names) in `instance`.
    pub async fn run(
        &self,
        mut store: impl AsContextMut<Data = CallState> + Send,
        instance: &Instance,
        call_id: &str,
        operation: &Operation,
        cancelled: Resource<Cancelled>,
    ) -> wasmtime::Result<Result<CallResult, CallError>> {
        let missing = |interface: &str| wasmtime::format_err!("the component does not export `{interface}`");
        match operation {
            Operation::Tool { name, arguments } => {
                let call = self.call.as_ref().ok_or_else(|| missing("tool"))?;
                let call = call.func(&mut store, instance)?;
                let (answer,) = call.call_async(&mut store, (call_id, name, arguments, cancelled)).await?;
                Ok(answer)
            }
            Operation::Read { uri } => {
                let resources = self.resources.as_ref().ok_or_else(|| missing("resources"))?;
                let resources = resources.load(&mut store, instance)?;
                Ok(read_answer(resources.call_read(&mut store, call_id, uri, cancelled).await?))
            }
            Operation::Prompt { name, arguments } => {
                let prompts = self.prompts.as_ref().ok_or_else(|| missing("prompts"))?;
                let prompts = prompts.load(&mut store, instance)?;
                let got = prompts.call_get_prompt(&mut store, call_id, name, arguments, cancelled).await?;
                Ok(prompt_answer(got))
            }
            Operation::Complete(request) => {
                let completion = self.completion.as_ref().ok_or_else(|| missing("completion"))?;
                let completion = completion.load(&mut store, instance)?;
                let got = completion.call_complete(&mut store, call_id, request, cancelled).await?;
                Ok(got.map(completion_answer).map_err(CallError::Failed))
            }
        }
    }

    /// `tool.cleanup` for `call_id`, if the component exports `tool`.
    pub async fn cleanup(
        &self,
        mut store: impl AsContextMut<Data = CallState> + Send,
        instance: &Instance,
        call_id: &str,
        reason: crate::contract::types::StopReason,
    ) -> wasmtime::Result<()> {
        let Some(tool) = &self.tool else { return Ok(()) };
        tool.load(&mut store, instance)?.call_cleanup(&mut store, call_id, reason).await
    }
}

/// `pre`'s export of the contract's `interface` (`tool`, `resources`...),
/// if it has one. Semver-aware: `@0.2.0` and every other 0.2 patch match.
fn contract_export(pre: &InstancePre<CallState>, interface: &str) -> Option<ComponentExportIndex> {
    let name = format!("mcp:tool/{interface}@{CONTRACT_VERSION}");
    pre.component().get_export_index(None, name.as_str())
}

/// `tool.call`'s parameters: the call's id, the tool's name, its arguments
/// (JSON) and the call's `cancelled`.
type CallParams<'a> = (&'a str, &'a str, &'a str, Resource<Cancelled>);

/// `tool.call`, found once when its component is loaded.
///
/// The bindings' `load` looks up and type-checks every function of `tool`
/// in each new instance (`list-tools`, `call` and `cleanup`, with the
/// records and variants of their types); a call needs only `call`, whose
/// type is the component's and so the same in every instance. It is
/// checked in the first instance and then taken as checked, as the
/// bindings themselves do between `load` and a call.
struct ToolCall {
    index: ComponentExportIndex,
    /// Its type matched [`CallParams`] and the result in an instance of
    /// this component.
    checked: AtomicBool,
}

impl ToolCall {
    /// `call` in `pre`'s `tool` export (which the caller found there).
    fn find(pre: &InstancePre<CallState>) -> Result<Self, String> {
        let index = contract_export(pre, "tool")
            .and_then(|tool| pre.component().get_export_index(Some(&tool), "call"))
            .ok_or("its `tool` export has no `call`")?;
        Ok(ToolCall { index, checked: AtomicBool::new(false) })
    }

    /// `call` in `instance`, typed.
    fn func<'a>(
        &self,
        mut store: impl AsContextMut<Data = CallState>,
        instance: &Instance,
    ) -> wasmtime::Result<TypedFunc<CallParams<'a>, (Result<CallResult, CallError>,)>> {
        if !self.checked.load(Ordering::Acquire) {
            let typed = instance.get_typed_func(&mut store, self.index)?;
            self.checked.store(true, Ordering::Release);
            return Ok(typed);
        }
        // An index of another component's export finds nothing here.
        let func = instance
            .get_func(&mut store, self.index)
            .ok_or_else(|| wasmtime::format_err!("the instance is not of this component"))?;
        // SAFETY: `func` is this component's `call` (the index finds only
        // its own exports), whose type was checked against these types in
        // an instance of the same component; a component's types do not
        // change from one instance to the next.
        Ok(unsafe { TypedFunc::new_unchecked(func) })
    }
}

/// A read's contents as embedded resources; `not-found` as `unknown-tool`
/// (which the MCP side answers with "resource not found").
fn read_answer(read: Result<Vec<ResourceContents>, ReadError>) -> Result<CallResult, CallError> {
    match read {
        Ok(contents) => Ok(CallResult {
            content: contents
                .into_iter()
                .map(|piece| {
                    Content::Embedded(EmbeddedResource {
                        uri: piece.uri,
                        mime_type: piece.mime_type,
                        body: piece.body,
                    })
                })
                .collect(),
            structured_content: None,
            is_error: false,
        }),
        Err(ReadError::NotFound) => Err(CallError::UnknownTool(String::new())),
        Err(ReadError::Failed(why)) => Err(CallError::Failed(why)),
        Err(ReadError::Cancelled) => Err(CallError::Cancelled),
    }
}

/// A prompt's messages as content blocks, in order; their roles and the
/// description in the structured content (JSON the host writes).
fn prompt_answer(got: Result<PromptResult, PromptError>) -> Result<CallResult, CallError> {
    match got {
        Ok(PromptResult { description, messages }) => {
            let roles: Vec<&str> = messages
                .iter()
                .map(|message| match message.role {
                    Role::User => "user",
                    Role::Assistant => "assistant",
                })
                .collect();
            let structured = json!({ "description": description, "roles": roles }).to_string();
            Ok(CallResult {
                content: messages.into_iter().map(|message| message.content).collect(),
                structured_content: Some(structured),
                is_error: false,
            })
        }
        Err(PromptError::InvalidArguments(why)) => Err(CallError::InvalidArguments(why)),
        Err(PromptError::Failed(why)) => Err(CallError::Failed(why)),
        Err(PromptError::Cancelled) => Err(CallError::Cancelled),
    }
}

/// Completion values as text blocks, at most [`MAX_COMPLETIONS`] of them;
/// the total and whether there are more in the structured content.
fn completion_answer(completions: Completions) -> CallResult {
    let Completions { mut values, total, has_more } = completions;
    let cut = values.len() > MAX_COMPLETIONS;
    values.truncate(MAX_COMPLETIONS);
    let structured = json!({ "total": total, "hasMore": has_more || cut }).to_string();
    CallResult {
        content: values.into_iter().map(Content::Text).collect(),
        structured_content: Some(structured),
        is_error: false,
    }
}
