//! One tool as the host lists it: its name, description and schemas,
//! checked and bounded whichever kind of component declared it.

use std::collections::HashMap;
use std::sync::Arc;

use anyhow::{Context as _, Result, bail};
use serde_json::Value;

use crate::config::Selection;
use crate::contract::tasks_export::TaskSupport;
use crate::contract::types::{Annotations, ToolInfo};
use crate::log_text::escaped;
use crate::schema::{SCHEMA_LIMITS, Schema};
use crate::tool_name;

/// One tool as declared by its component, with its input schema compiled.
#[derive(Clone)]
pub struct ToolSpec {
    /// Unique tool name, as clients call it (with the component's
    /// `prefix`, if it has one).
    pub name: String,
    /// The name the component itself knows the tool by.
    pub guest_name: String,
    /// Display name.
    pub title: Option<String>,
    /// What the tool does.
    pub description: Option<String>,
    /// JSON Schema of the arguments (always an object schema), bounded.
    pub input: Arc<Schema>,
    /// JSON Schema of the structured result, if declared, bounded.
    pub output: Option<Arc<Schema>>,
    /// Behaviour hints.
    pub annotations: Annotations,
    /// The component's own word on whether calls need the user's approval.
    pub needs_approval: Option<bool>,
    /// Whether its calls may run as tasks (the component's `tasks` export;
    /// `optional` when it says nothing).
    pub tasks: TaskSupport,
}

impl ToolSpec {
    pub(super) fn from_info(info: ToolInfo) -> Result<ToolSpec> {
        if !tool_name::is_valid(&info.name) {
            bail!("tool names must be 1-128 characters of A-Z a-z 0-9 _ - .");
        }
        let input = Schema::load(&info.input_schema, &SCHEMA_LIMITS).context("input-schema")?;
        if input.json.get("type").and_then(Value::as_str) != Some("object") {
            bail!("input-schema must have \"type\": \"object\" (MCP tool arguments are objects)");
        }
        let output = info
            .output_schema
            .as_deref()
            .map(|text| Schema::load(text, &SCHEMA_LIMITS).context("output-schema"))
            .transpose()?;
        let text_limit = |what: &str, text: &Option<String>, limit: usize| match text {
            Some(text) if text.len() > limit => {
                bail!("its {what} is {} bytes, more than the {limit} the host accepts", text.len())
            }
            _ => Ok(()),
        };
        text_limit("title", &info.title, MAX_TITLE)?;
        text_limit("description", &info.description, MAX_DESCRIPTION)?;
        Ok(ToolSpec {
            guest_name: info.name.clone(),
            name: info.name,
            title: info.title,
            description: info.description,
            input: Arc::new(input),
            output: output.map(Arc::new),
            annotations: info.annotations,
            needs_approval: info.needs_approval,
            tasks: TaskSupport::Optional,
        })
    }
}

/// Longest tool title the host lists, in bytes.
pub(super) const MAX_TITLE: usize = 1 << 10;
/// Longest tool description the host lists, in bytes.
pub(super) const MAX_DESCRIPTION: usize = 16 << 10;

/// The tools a component offers once the user's `selection` is applied (which
/// are served, under which names, with which hints). A name the component
/// does not offer, or a prefixed name outside MCP's rules, is an error
/// naming it.
pub fn apply_selection(selection: &Selection, tools: Vec<ToolSpec>) -> Result<Vec<ToolSpec>> {
    // A shared selection is checked across components, once all are loaded.
    let named = selection.tools.iter().flatten().filter(|_| !selection.shared).map(|name| ("tools", name));
    let hinted = selection.hints.keys().map(|name| ("annotations", name));
    for (key, name) in named.chain(hinted) {
        if !tools.iter().any(|spec| spec.guest_name == *name) {
            let offered: Vec<&str> = tools.iter().map(|spec| spec.guest_name.as_str()).collect();
            bail!(
                "`{key}` names `{}`, which it does not offer (it offers: {})",
                escaped(name),
                offered.join(", ")
            );
        }
    }
    let prefix = &selection.prefix;
    tools
        .into_iter()
        .filter(|spec| selection.tools.as_ref().is_none_or(|tools| tools.contains(&spec.guest_name)))
        .map(|mut spec| {
            spec.name = format!("{prefix}{}", spec.guest_name);
            if !tool_name::is_valid(&spec.name) {
                bail!(
                    "with prefix `{}`, tool `{}` would be named `{}`, outside MCP's tool-name rules \
                     (1-128 of A-Z a-z 0-9 _ - .)",
                    escaped(prefix),
                    spec.guest_name,
                    escaped(&spec.name)
                );
            }
            if let Some(hints) = selection.hints.get(&spec.guest_name) {
                let given = &mut spec.annotations;
                given.read_only = hints.read_only.or(given.read_only);
                given.destructive = hints.destructive.or(given.destructive);
                given.idempotent = hints.idempotent.or(given.idempotent);
                given.open_world = hints.open_world.or(given.open_world);
            }
            Ok(spec)
        })
        .collect()
}

/// Gives each tool named in `support` (the `tasks` export) its task
/// support. A name that is no tool of the component is an error, and so is
/// one named twice: the list is the component's, and bounded by its tools.
pub(super) fn set_task_support(tools: &mut [ToolSpec], support: Vec<(String, TaskSupport)>) -> Result<()> {
    let mut by_name: HashMap<&str, usize> =
        tools.iter().enumerate().map(|(at, tool)| (tool.guest_name.as_str(), at)).collect();
    let mut set = Vec::with_capacity(support.len().min(tools.len()));
    for (name, tasks) in support {
        let Some(at) = by_name.remove(name.as_str()) else {
            bail!("`{}` is no tool of the component, or is named twice", escaped(name));
        };
        set.push((at, tasks));
    }
    for (at, tasks) in set {
        tools[at].tasks = tasks;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Hints;

    #[test]
    fn task_support_names_tools_of_the_component_once_each() {
        let input = r#"{"type":"object"}"#;
        let named =
            |name: &str| ToolSpec::from_info(ToolInfo { name: name.into(), ..info(input, None) }).unwrap();
        let mut tools = vec![named("greet"), named("job")];
        set_task_support(&mut tools, vec![("job".into(), TaskSupport::Required)]).unwrap();
        assert_eq!((tools[0].tasks, tools[1].tasks), (TaskSupport::Optional, TaskSupport::Required));
        let unknown = set_task_support(&mut tools, vec![("ghost\u{1b}[2J".into(), TaskSupport::Forbidden)]);
        assert!(unknown.unwrap_err().to_string().contains("is no tool of the component"));
        let twice = vec![("job".into(), TaskSupport::Forbidden), ("job".into(), TaskSupport::Required)];
        assert!(set_task_support(&mut tools, twice).is_err());
    }

    #[test]
    fn a_selection_and_a_prefix_rename_and_filter_the_tools() {
        let input = r#"{"type":"object"}"#;
        let named =
            |name: &str| ToolSpec::from_info(ToolInfo { name: name.into(), ..info(input, None) }).unwrap();
        let tools = vec![named("echo"), named("add"), named("spin")];
        let hints = Hints { destructive: Some(true), ..Hints::default() };
        let selection = Selection {
            tools: Some(vec!["echo".into(), "spin".into()]),
            prefix: "t_".into(),
            hints: [("spin".to_string(), hints)].into(),
            shared: false,
        };
        let offered = apply_selection(&selection, tools.clone()).unwrap();
        let names: Vec<_> =
            offered.iter().map(|spec| (spec.name.as_str(), spec.guest_name.as_str())).collect();
        assert_eq!(names, [("t_echo", "echo"), ("t_spin", "spin")]);
        assert_eq!(offered[1].annotations.destructive, Some(true), "the config's hint");
        assert_eq!(offered[1].annotations.read_only, None, "the component's own");
        let nope = Selection { tools: Some(vec!["nope".into()]), ..Selection::default() };
        let err = apply_selection(&nope, tools.clone()).err().unwrap().to_string();
        assert!(err.contains("`nope`") && err.contains("echo, add, spin"), "{err}");
        let bad = Selection { prefix: "bad prefix ".into(), ..Selection::default() };
        let err = apply_selection(&bad, tools).err().unwrap().to_string();
        assert!(err.contains("tool-name rules"), "{err}");
    }

    /// A tool `t` declaring `input_schema` and `output_schema`.
    fn info(input_schema: &str, output_schema: Option<&str>) -> ToolInfo {
        let annotations =
            Annotations { read_only: None, destructive: None, idempotent: None, open_world: None };
        ToolInfo {
            name: "t".into(),
            title: None,
            description: Some("d".into()),
            input_schema: input_schema.into(),
            output_schema: output_schema.map(Into::into),
            annotations,
            needs_approval: None,
        }
    }

    fn tool_spec(output_schema: Option<&str>) -> ToolSpec {
        let input = r#"{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}"#;
        ToolSpec::from_info(info(input, output_schema)).unwrap()
    }

    #[test]
    fn a_tool_keeps_its_bounded_schemas() {
        let spec = tool_spec(Some(r#"{"type":"object","properties":{"sum":{"type":"number"}}}"#));
        assert!(spec.input.first_violation(&serde_json::json!({ "n": 1 })).is_none());
        let error = spec.input.first_violation(&serde_json::json!({ "n": "one" })).unwrap();
        assert!(error.starts_with("/n: "), "{error}");
        assert!(spec.output.is_some());
        assert!(tool_spec(None).output.is_none());
    }

    #[test]
    fn schemas_that_are_not_object_schemas_are_refused() {
        let mut info = info(r#"{"type":"string"}"#, None);
        assert!(ToolSpec::from_info(info.clone()).is_err());
        info.input_schema = "{not json".into();
        assert!(ToolSpec::from_info(info).is_err());
    }
}
