//! What [`export!`](crate::export) expands to calls: the table of a
//! component's tools, and the raw `list-tools` and `call` exports written
//! over it. Not part of the API.

pub use crate::raw::mcp::tool::types::{CallError, CallResult, ToolInfo};

use crate::{Cancelled, Context, Error, Output, Tool};

/// One tool of a component, as the exports need it.
pub struct Entry {
    name: &'static str,
    info: fn() -> ToolInfo,
    call: fn(Context, &str) -> Result<CallResult, Error>,
}

impl Entry {
    /// The entry of tool `T`.
    pub const fn of<T: Tool>() -> Entry {
        Entry { name: T::NAME, info: info::<T>, call: call_tool::<T> }
    }
}

/// `list-tools`: every tool's description, in the order `export!` names them.
pub fn list_tools(tools: &[Entry]) -> Vec<ToolInfo> {
    tools.iter().map(|tool| (tool.info)()).collect()
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
