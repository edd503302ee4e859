//! `tools/list` and the first step of `tools/call`: every loaded tool, the
//! route from a tool's name to its component, and the check of a call's
//! arguments against the tool's input schema.

use std::collections::HashMap;
use std::sync::Arc;

use anyhow::{Context as _, Result, bail};
use rmcp::ErrorData as McpError;
use rmcp::model::{CallToolRequestParams, Tool, ToolAnnotations};
use serde_json::{Value, json};

use super::catalog::Catalog;
use crate::approval::ApprovalQuestion;
use crate::call::{CallRunner, Share};
use crate::component::{ToolComponent, ToolSpec};
use crate::schema::CheckFailure;

/// The `_meta` key that tells clients a tool asks the user before it runs.
pub const NEEDS_APPROVAL_META: &str = "mcp-wasm-host/needsApproval";

/// Every tool of every component, by name, and the `tools/list` answer.
/// Immutable: a reload (`--watch`) builds a new one beside it.
pub(super) struct Tools {
    /// The components, in the order they were configured.
    components: Vec<Arc<ToolComponent>>,
    routes: HashMap<String, Route>,
    /// The `tools/list` answer, built once.
    listed: Vec<Tool>,
    /// Their resources, templates and prompts.
    pub(super) catalog: Catalog,
}

/// Where a tool lives, and what the user decided about its approval.
#[derive(Clone)]
pub(super) struct Route {
    pub(super) component: Arc<ToolComponent>,
    /// Index into the component's `tools`.
    index: usize,
    /// Each call is approved by the user before it runs.
    needs_approval: bool,
    /// The user approved the tool up front (`--no-approval`): its mid-call
    /// approval requests are granted without asking.
    pub(super) pre_approved: bool,
    /// The scopes a caller's token needs for it (with `--auth-issuer`).
    pub(super) scopes: Arc<[String]>,
    /// Its input schema marks a parameter to be mirrored in a header
    /// (SEP-2243's `x-mcp-header`): found once here, not per request.
    header_params: bool,
}

/// A routed call whose arguments passed the tool's input schema; it runs
/// once admitted into its caller's share ([`Checked::admitted`]).
pub(super) struct Checked {
    route: Route,
    arguments: Value,
}

impl Checked {
    /// The call, holding `share` (its caller's slot) as long as any part
    /// of it lives.
    pub(super) fn admitted(self, share: Share) -> CallPlan {
        CallPlan { route: self.route, arguments: self.arguments, share }
    }
}

/// A routed call whose arguments passed the tool's input schema, with its
/// caller's slot: ready to run anywhere.
#[derive(Clone)]
pub(super) struct CallPlan {
    pub(super) route: Route,
    pub(super) arguments: Value,
    /// The caller's slot among its share of calls, held as long as any
    /// part of the call is (the plan goes with it).
    pub(super) share: Share,
}

impl CallPlan {
    pub(super) fn spec(&self) -> &ToolSpec {
        &self.route.component.tools[self.route.index]
    }

    /// The question to put to the user before the call runs, if the tool needs one.
    pub(super) fn approval_question(&self) -> Option<ApprovalQuestion> {
        self.route.needs_approval.then(|| ApprovalQuestion::for_call(&self.spec().name, &self.arguments))
    }
}

impl Tools {
    /// Routes every tool of `components`; two components offering the same
    /// name, or an approval rule naming no loaded tool, is an error.
    pub(super) fn new(components: Vec<Arc<ToolComponent>>) -> Result<Self> {
        let mut routes: HashMap<String, Route> = HashMap::new();
        let mut listed = Vec::new();
        for component in components.iter().cloned() {
            for (index, spec) in component.tools.iter().enumerate() {
                if let Some(other) = routes.get(&spec.name) {
                    bail!(
                        "tool `{}` is offered by both {} and {}; tool names must be unique \
                         across --component files",
                        spec.name,
                        other.component.path.display(),
                        component.path.display()
                    );
                }
                let decision = component.approvals.decide(
                    &spec.name,
                    spec.annotations.destructive == Some(true),
                    spec.needs_approval,
                );
                listed.push(mcp_tool(spec, decision.needs_approval));
                let route = Route {
                    component: component.clone(),
                    index,
                    needs_approval: decision.needs_approval,
                    pre_approved: decision.pre_approved,
                    scopes: component.scopes.for_tool(&spec.name).into(),
                    header_params: names_header_params(&spec.input.json),
                };
                routes.insert(spec.name.clone(), route);
            }
        }
        let catalog = Catalog::new(&components)?;
        // A scope may name a tool or a prompt.
        let prompts = components.iter().flat_map(|component| component.offers.prompts.iter());
        let named: Vec<&str> =
            routes.keys().map(String::as_str).chain(prompts.map(|prompt| prompt.name.as_str())).collect();
        for route in routes.values() {
            route
                .component
                .approvals
                .validate(routes.keys().map(String::as_str))
                .with_context(|| format!("approval rules for {}", route.component.path.display()))?;
            route
                .component
                .scopes
                .validate(named.iter().copied())
                .with_context(|| format!("scopes for {}", route.component.path.display()))?;
        }
        Ok(Tools { components, routes, listed, catalog })
    }

    /// The same tools with the component at `index` replaced by `new`,
    /// checked as at start (names unique, approval rules naming loaded tools).
    pub(super) fn replacing(&self, index: usize, new: ToolComponent) -> Result<Self> {
        let mut components = self.components.clone();
        let Some(slot) = components.get_mut(index) else {
            bail!("no component {index} to replace");
        };
        *slot = Arc::new(new);
        Tools::new(components)
    }

    /// The component at `index`, in configuration order.
    pub(super) fn component(&self, index: usize) -> Option<&Arc<ToolComponent>> {
        self.components.get(index)
    }

    /// How many components there are.
    pub(super) fn component_count(&self) -> usize {
        self.components.len()
    }

    /// Every tool, as listed to clients.
    pub(super) fn listed(&self) -> &[Tool] {
        &self.listed
    }

    /// The tools a caller granted `scopes` may call, as listed to it; every
    /// tool for a caller with no token (stdio, or no `--auth-issuer`).
    pub(super) fn listed_for(&self, scopes: Option<&[String]>) -> Vec<Tool> {
        let Some(granted) = scopes else { return self.listed.clone() };
        let reachable =
            |tool: &Tool| self.routes.get(tool.name.as_ref()).is_some_and(|route| reachable(route, granted));
        self.listed.iter().filter(|tool| reachable(tool)).cloned().collect()
    }

    /// The scopes `tool` needs, if it is one.
    pub(super) fn scopes_of(&self, tool: &str) -> Option<Arc<[String]>> {
        Some(self.routes.get(tool)?.scopes.clone())
    }

    /// Whether `tool` is one whose input schema marks a parameter to be
    /// mirrored in a header (SEP-2243's `x-mcp-header`).
    pub(super) fn has_header_params(&self, tool: &str) -> bool {
        self.routes.get(tool).is_some_and(|route| route.header_params)
    }

    /// Routes `request` to its tool and checks its arguments (bounded by
    /// the tool's `--timeout`, off the async workers when costly).
    pub(super) async fn plan(
        &self,
        request: CallToolRequestParams,
        runner: &CallRunner,
    ) -> Result<Checked, McpError> {
        let name = request.name.as_ref();
        let Some(route) = self.routes.get(name) else {
            let mut available: Vec<&str> = self.routes.keys().map(String::as_str).collect();
            available.sort_unstable();
            return Err(McpError::invalid_params(
                format!("unknown tool `{name}`"),
                Some(json!({ "available": available })),
            ));
        };
        let arguments = Arc::new(Value::Object(request.arguments.unwrap_or_default()));
        let component = &route.component;
        let deadline = tokio::time::Instant::now() + component.limits.timeout;
        let schema = &component.tools[route.index].input;
        match runner.checker().check(schema, arguments.clone(), deadline).await {
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
        // What a schema cannot say (a plain component's 64-bit integers in
        // range, base64): the same error as the schema's.
        if let Err(error) = component.check_arguments(&component.tools[route.index].guest_name, &arguments) {
            return Err(McpError::invalid_params(
                format!("arguments do not fit the parameters of `{name}`: {error}"),
                Some(json!({ "errors": [error] })),
            ));
        }
        // The check is done, so its thread no longer holds the arguments.
        let arguments = Arc::try_unwrap(arguments).unwrap_or_else(|shared| (*shared).clone());
        Ok(Checked { route: route.clone(), arguments })
    }
}

/// Whether a caller granted `granted` may call the tool at `route`.
fn reachable(route: &Route, granted: &[String]) -> bool {
    route.scopes.iter().all(|scope| granted.contains(scope))
}

/// Whether `schema` has an `x-mcp-header` anywhere (walked without
/// recursion: its depth is the component's to choose, within the schema
/// limits).
fn names_header_params(schema: &rmcp::model::JsonObject) -> bool {
    let mut open: Vec<&rmcp::model::JsonObject> = vec![schema];
    while let Some(object) = open.pop() {
        if object.contains_key("x-mcp-header") {
            return true;
        }
        for value in object.values() {
            match value {
                Value::Object(inner) => open.push(inner),
                Value::Array(items) => open.extend(items.iter().filter_map(Value::as_object)),
                _ => {}
            }
        }
    }
    false
}

/// A tool as `tools/list` shows it.
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

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_header_mark_is_found_at_any_depth_and_only_there() {
        let marked = |schema: Value| names_header_params(schema.as_object().unwrap());
        assert!(!marked(json!({ "type": "object", "properties": { "text": { "type": "string" } } })));
        assert!(marked(
            json!({ "properties": { "region": { "type": "string", "x-mcp-header": "Region" } } })
        ));
        assert!(marked(json!({ "anyOf": [{ "properties": { "a": { "x-mcp-header": "A" } } }] })));
        // A property of that name counts too: such a call goes to rmcp,
        // which checks it in full.
        assert!(marked(json!({ "properties": { "x-mcp-header": { "type": "string" } } })));
    }
}
