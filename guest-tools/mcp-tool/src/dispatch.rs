//! What [`export!`](crate::export) expands to calls: the table of a
//! component's tools, and the raw `list-tools` and `call` exports written
//! over it. Not part of the API.

pub use crate::raw::mcp::tool::types::{CallError, CallResult, ToolInfo};

use crate::{Cancelled, Context, Error, Output, TaskSupport, Tool};

/// One tool of a component, as the exports need it.
pub struct Entry {
    name: &'static str,
    tasks: TaskSupport,
    info: fn() -> ToolInfo,
    call: fn(Context, &str) -> Result<CallResult, Error>,
}

impl Entry {
    /// The entry of tool `T`.
    pub const fn of<T: Tool>() -> Entry {
        Entry { name: T::NAME, tasks: T::TASKS, info: info::<T>, call: call_tool::<T> }
    }
}

/// `list-tools`: every tool's description, in the order `export!` names them.
pub fn list_tools(tools: &[Entry]) -> Vec<ToolInfo> {
    tools.iter().map(|tool| (tool.info)()).collect()
}

/// `list-task-support`: the tools whose calls are not `optional` tasks.
pub fn list_task_support(tools: &[Entry]) -> Vec<(String, TaskSupport)> {
    tools
        .iter()
        .filter(|tool| tool.tasks != TaskSupport::Optional)
        .map(|tool| (tool.name.to_string(), tool.tasks))
        .collect()
}

/// `call`: finds the tool by name and runs it.
pub fn call(
    tools: &[Entry],
    call_id: String,
    name: String,
    arguments: String,
    cancelled: Cancelled,
) -> Result<CallResult, CallError> {
    let Some(tool) = tools.iter().find(|tool| tool.name == name) else {
        return Err(CallError::UnknownTool(name));
    };
    (tool.call)(Context::new(call_id, tool.name, cancelled), &arguments).map_err(CallError::from)
}

fn info<T: Tool>() -> ToolInfo {
    ToolInfo {
        name: T::NAME.to_string(),
        title: T::TITLE.map(str::to_string),
        description: Some(T::DESCRIPTION.to_string()),
        input_schema: T::input_schema().to_string(),
        output_schema: T::output_schema().map(|schema| schema.to_string()),
        annotations: T::ANNOTATIONS,
        needs_approval: T::NEEDS_APPROVAL,
    }
}

fn call_tool<T: Tool>(cx: Context, arguments: &str) -> Result<CallResult, Error> {
    let args: T::Args =
        serde_json::from_str(arguments).map_err(|err| Error::InvalidArguments(err.to_string()))?;
    T::call(&cx, args)?.into_result()
}

use crate::offers::{Args, contents};
use crate::raw::exports::mcp::tool::completion::{CompletionRequest, Completions, Reference};
use crate::raw::exports::mcp::tool::prompts::{
    PromptArgument, PromptError, PromptInfo, PromptMessage, PromptResult,
};
use crate::raw::exports::mcp::tool::resources::{
    ReadError, ResourceContents, ResourceInfo, ResourceTemplate as TemplateInfo,
};
use crate::{Prompt, Resource, ResourceTemplate};

/// One resource of a component, as the exports need it.
pub struct ResourceEntry {
    uri: &'static str,
    name: &'static str,
    info: fn() -> ResourceInfo,
    read: fn(&Context) -> Result<crate::ResourceBody, Error>,
    mime_type: Option<&'static str>,
}

impl ResourceEntry {
    /// The entry of resource `R`.
    pub const fn of<R: Resource>() -> ResourceEntry {
        ResourceEntry {
            uri: R::URI,
            name: R::NAME,
            info: resource_info::<R>,
            read: R::read,
            mime_type: R::MIME_TYPE,
        }
    }
}

fn resource_info<R: Resource>() -> ResourceInfo {
    ResourceInfo {
        uri: R::URI.into(),
        name: R::NAME.into(),
        title: R::TITLE.map(Into::into),
        description: R::DESCRIPTION.map(Into::into),
        mime_type: R::MIME_TYPE.map(Into::into),
        size: None,
    }
}

/// One resource template of a component.
pub struct TemplateEntry {
    template: &'static str,
    name: &'static str,
    info: fn() -> TemplateInfo,
    read: fn(&Context, &str, &Args) -> Result<crate::ResourceBody, Error>,
    complete: fn(&str, &str) -> Vec<String>,
    mime_type: Option<&'static str>,
}

impl TemplateEntry {
    /// The entry of template `T`.
    pub const fn of<T: ResourceTemplate>() -> TemplateEntry {
        TemplateEntry {
            template: T::URI_TEMPLATE,
            name: T::NAME,
            info: template_info::<T>,
            read: T::read,
            complete: T::complete,
            mime_type: T::MIME_TYPE,
        }
    }
}

fn template_info<T: ResourceTemplate>() -> TemplateInfo {
    TemplateInfo {
        uri_template: T::URI_TEMPLATE.into(),
        name: T::NAME.into(),
        title: T::TITLE.map(Into::into),
        description: T::DESCRIPTION.map(Into::into),
        mime_type: T::MIME_TYPE.map(Into::into),
    }
}

/// One prompt of a component.
pub struct PromptEntry {
    name: &'static str,
    info: fn() -> PromptInfo,
    get: fn(&Context, &Args) -> Result<Vec<crate::Message>, Error>,
    complete: fn(&str, &str, &Args) -> Vec<String>,
}

impl PromptEntry {
    /// The entry of prompt `P`.
    pub const fn of<P: Prompt>() -> PromptEntry {
        PromptEntry { name: P::NAME, info: prompt_info::<P>, get: P::get, complete: P::complete }
    }
}

fn prompt_info<P: Prompt>() -> PromptInfo {
    PromptInfo {
        name: P::NAME.into(),
        title: P::TITLE.map(Into::into),
        description: Some(P::DESCRIPTION.into()),
        arguments: P::ARGUMENTS
            .iter()
            .map(|argument| PromptArgument {
                name: argument.name.into(),
                title: None,
                description: argument.description.map(Into::into),
                required: argument.required,
            })
            .collect(),
    }
}

/// `list-resources`.
pub fn list_resources(resources: &[ResourceEntry]) -> Vec<ResourceInfo> {
    resources.iter().map(|resource| (resource.info)()).collect()
}

/// `list-templates`.
pub fn list_templates(templates: &[TemplateEntry]) -> Vec<TemplateInfo> {
    templates.iter().map(|template| (template.info)()).collect()
}

/// `read`: the resource with that URI, or the first template it matches.
pub fn read(
    resources: &[ResourceEntry],
    templates: &[TemplateEntry],
    call_id: String,
    uri: String,
    cancelled: Cancelled,
) -> Result<Vec<ResourceContents>, ReadError> {
    let read_error = |error: Error| match error {
        Error::NotFound | Error::UnknownTool(_) => ReadError::NotFound,
        Error::Cancelled => ReadError::Cancelled,
        other => ReadError::Failed(other.to_string()),
    };
    if let Some(resource) = resources.iter().find(|resource| resource.uri == uri) {
        let body = (resource.read)(&Context::new(call_id, resource.name, cancelled)).map_err(read_error)?;
        return Ok(vec![contents(uri, resource.mime_type, body)]);
    }
    for template in templates {
        if let Some(vars) = match_template(template.template, &uri) {
            let cx = Context::new(call_id, template.name, cancelled);
            let body = (template.read)(&cx, &uri, &Args::new(vars)).map_err(read_error)?;
            return Ok(vec![contents(uri, template.mime_type, body)]);
        }
    }
    Err(ReadError::NotFound)
}

/// `list-prompts`.
pub fn list_prompts(prompts: &[PromptEntry]) -> Vec<PromptInfo> {
    prompts.iter().map(|prompt| (prompt.info)()).collect()
}

/// `get-prompt`.
pub fn get_prompt(
    prompts: &[PromptEntry],
    call_id: String,
    name: String,
    arguments: Vec<(String, String)>,
    cancelled: Cancelled,
) -> Result<PromptResult, PromptError> {
    let Some(prompt) = prompts.iter().find(|prompt| prompt.name == name) else {
        return Err(PromptError::InvalidArguments(format!("no prompt named `{name}`")));
    };
    let cx = Context::new(call_id, prompt.name, cancelled);
    match (prompt.get)(&cx, &Args::new(arguments)) {
        Ok(messages) => Ok(PromptResult {
            description: None,
            messages: messages
                .into_iter()
                .map(|message| PromptMessage { role: message.role, content: message.content })
                .collect(),
        }),
        Err(Error::InvalidArguments(why)) => Err(PromptError::InvalidArguments(why)),
        Err(Error::Cancelled) => Err(PromptError::Cancelled),
        Err(other) => Err(PromptError::Failed(other.to_string())),
    }
}

/// `complete`: asks the prompt or template named by the request.
pub fn complete(
    prompts: &[PromptEntry],
    templates: &[TemplateEntry],
    request: CompletionRequest,
) -> Result<Completions, String> {
    let values = match &request.reference {
        Reference::Prompt(name) => prompts
            .iter()
            .find(|prompt| prompt.name == name)
            .map(|prompt| {
                (prompt.complete)(&request.argument, &request.value, &Args::new(request.context.clone()))
            })
            .unwrap_or_default(),
        Reference::ResourceTemplate(text) => templates
            .iter()
            .find(|template| template.template == text)
            .map(|template| (template.complete)(&request.argument, &request.value))
            .unwrap_or_default(),
    };
    let total = u32::try_from(values.len()).ok();
    Ok(Completions { values, total, has_more: false })
}

/// The variables of `uri` if it matches `template` (the host's rule: a
/// `{name}` matches characters other than `/`, up to the text after it).
pub fn match_template(template: &str, uri: &str) -> Option<Vec<(String, String)>> {
    let mut rest_template = template;
    let mut rest = uri;
    let mut vars = Vec::new();
    while !rest_template.is_empty() {
        if let Some(after_brace) = rest_template.strip_prefix('{') {
            let end = after_brace.find('}')?;
            let name = &after_brace[..end];
            rest_template = &after_brace[end + 1..];
            let next_literal = &rest_template[..rest_template.find('{').unwrap_or(rest_template.len())];
            let segment_end = rest.find('/').unwrap_or(rest.len());
            let stop = if next_literal.is_empty() {
                segment_end
            } else {
                (1..=segment_end)
                    .filter(|at| rest.is_char_boundary(*at))
                    .find(|at| rest[*at..].starts_with(next_literal))?
            };
            if stop == 0 {
                return None;
            }
            vars.push((name.to_string(), rest[..stop].to_string()));
            rest = &rest[stop..];
        } else {
            let literal = &rest_template[..rest_template.find('{').unwrap_or(rest_template.len())];
            rest = rest.strip_prefix(literal)?;
            rest_template = &rest_template[literal.len()..];
        }
    }
    rest.is_empty().then_some(vars)
}

#[cfg(test)]
mod tests {
    use super::match_template;

    #[test]
    fn templates_match_as_the_host_matches_them() {
        let vars = match_template("test://template/{id}/data", "test://template/123/data").unwrap();
        assert_eq!(vars, [("id".to_string(), "123".to_string())]);
        assert!(match_template("test://template/{id}/data", "test://template/1/2/data").is_none());
        assert!(match_template("db://orders/{id}", "db://orders/").is_none());
    }
}
