//! Plain components: components not written for the `mcp:tool` contract,
//! served with each exported function as a tool.
//!
//! A component that exports `mcp:tool/tool` is served through the contract
//! (`crate::component`); any other is read here. Its tools come from its
//! WIT types ([`exports`] names them, [`schema`] describes them, with the
//! docs `wit-component` embeds as `package-docs` when the build kept them),
//! and each call converts JSON to component values and back ([`values`])
//! around wasmtime's dynamic `Func::call`.
//!
//! The JSON forms, for arguments and results alike:
//! - integers are JSON integers within the type's range; 64-bit ones are
//!   also accepted as decimal strings and are always returned as decimal
//!   strings (JSON numbers lose digits beyond 2^53 in most clients);
//! - floats are numbers, and `"NaN"`, `"Infinity"`, `"-Infinity"`;
//! - `char` is a string of one Unicode scalar value;
//! - `list<u8>` is a base64 string; other lists are arrays;
//! - `option<T>` is `null` or the value; an option of an option writes
//!   `some` as `{"some": value}`, so `none` and `some(none)` differ;
//! - a record is an object of its fields (an `option` field may be left
//!   out), a tuple an array, an enum a string, flags an array of names;
//! - a variant is `{"tag": "case", "value": payload}` (no `value` for a
//!   case without a payload), a nested `result` `{"ok": v}` or `{"err": v}`.
//!
//! Parameters are the properties of the arguments object. The structured
//! result is `{"result": value}`, and its text the value itself when it is
//! a string, its JSON otherwise. A function returning `result<T, E>` is
//! fallible: `ok` is the result, `err` an error result (`isError`) whose
//! text is the error (as JSON unless it is a string).

mod docs;
mod exports;
mod lift;
mod result_json;
pub mod schema;
#[cfg(test)]
mod tests;
pub mod values;

use std::sync::Arc;

use anyhow::{Context as _, Result, bail};
use serde_json::{Map, Value};
use wasmtime::component::types::{ComponentFunc, ComponentItem, Type};
use wasmtime::component::{Component, ComponentExportIndex, Instance, InstancePre, Val};
use wasmtime::{AsContextMut, Engine};

use crate::budget::Budget;
use crate::contract::types::{Annotations, CallError, CallResult, Content, ToolInfo};
use crate::tool_name::MAX_TOOLS;

pub use exports::LeftOut;
pub use schema::Outcome;

/// Whether a component is written for the `mcp:tool` contract: it exports
/// its `tool` interface. Any other component is plain.
pub fn is_contract(component: &Component, engine: &Engine) -> bool {
    const CONTRACT_EXPORTS: [&str; 4] =
        ["mcp:tool/tool@", "mcp:tool/resources@", "mcp:tool/prompts@", "mcp:tool/completion@"];
    component
        .component_type()
        .exports(engine)
        .any(|(name, _)| CONTRACT_EXPORTS.iter().any(|export| name.starts_with(export)))
}

/// One tool of a plain component: which function it calls and how its
/// result is shown. The same for every compile of the component's bytes.
#[derive(Clone, Debug)]
pub struct PlainFunction {
    /// The tool's name as the component gives it (before any `prefix`).
    pub tool: String,
    /// The exported interface the function is in, or `None` at world level.
    pub interface: Option<String>,
    /// The function's name.
    pub name: String,
    /// How its result is shown.
    pub outcome: Outcome,
}

/// What a plain component offers, read from its bytes.
pub struct Derived {
    /// Its functions that are tools, in export order.
    pub functions: Vec<PlainFunction>,
    /// Their tool declarations (names, descriptions, schemas).
    pub infos: Vec<ToolInfo>,
    /// The functions that are not tools, and why.
    pub left_out: Vec<LeftOut>,
}

/// Bytes of JSON Schema all of one plain component's tools may take
/// together: 64 tools with schemas at their limit.
const MAX_SCHEMA_BYTES: usize = 16 << 20;

/// Reads a plain component's tools from its WIT (`bytes`, which wasmtime
/// has compiled already, so they are a valid component).
pub fn derive(bytes: &[u8]) -> Result<Derived> {
    // wit-parser validates the component again and rebuilds its WIT: a
    // cost once per load, bounded by the component's size. Its docs are
    // put back by name (`docs`).
    let (bytes, package_docs) = docs::split(bytes).context("cannot read the component's sections")?;
    let decoded = wit_parser::decoding::decode(&bytes).context("cannot read the component's WIT types")?;
    let wit_parser::decoding::DecodedWasm::Component(mut resolve, world) = decoded else {
        bail!("it is a WIT package, not a component");
    };
    if let Some(package_docs) = &package_docs {
        docs::apply(package_docs, &mut resolve, world);
    }
    let (candidates, mut left_out) = exports::candidates(&resolve, world);
    // Checked before any schema is written: past the cap, no schema is.
    if candidates.len() > MAX_TOOLS {
        bail!(
            "it offers {} tools, more than the {MAX_TOOLS} the host accepts from one component",
            candidates.len()
        );
    }
    let mut functions = Vec::new();
    let mut infos = Vec::new();
    // Each schema is bounded as it is written (`schema`); together they are
    // bounded too, so 1 024 functions of a schema at its limit each are
    // refused, not held.
    let schema_budget = Budget::new("the schemas of one plain component's tools", MAX_SCHEMA_BYTES);
    let mut schema_bytes = schema_budget.nothing();
    for candidate in candidates {
        let path = match &candidate.interface {
            Some(interface) => format!("{interface}#{}", candidate.function.name),
            None => candidate.function.name.clone(),
        };
        match schema::function(&resolve, candidate.function) {
            Ok(schemas) => {
                // Charged before their text is made (counted, not written).
                let size = |schema: &Value| crate::json_size::json_size(schema, MAX_SCHEMA_BYTES);
                let text_bytes = [Some(&schemas.input), schemas.output.as_ref()]
                    .into_iter()
                    .flatten()
                    .map(|schema| size(schema).unwrap_or_else(|past| past))
                    .fold(0usize, usize::saturating_add);
                if schema_bytes.grow(text_bytes).is_err() {
                    bail!("its tools' schemas together are larger than {} MiB", MAX_SCHEMA_BYTES >> 20);
                }
                let input_schema = schemas.input.to_string();
                let output_schema = schemas.output.map(|schema| schema.to_string());
                infos.push(ToolInfo {
                    name: candidate.tool.clone(),
                    title: None,
                    description: candidate
                        .function
                        .docs
                        .contents
                        .as_ref()
                        .map(|docs| docs.trim().to_string()),
                    input_schema,
                    output_schema,
                    annotations: Annotations {
                        read_only: None,
                        destructive: None,
                        idempotent: None,
                        open_world: None,
                    },
                    needs_approval: None,
                });
                functions.push(PlainFunction {
                    tool: candidate.tool,
                    interface: candidate.interface,
                    name: candidate.function.name.clone(),
                    outcome: schemas.outcome,
                });
            }
            Err(why) => left_out.push(LeftOut { function: path, why }),
        }
    }
    Ok(Derived { functions, infos, left_out })
}

/// A plain component's code: its instance-to-be and where each tool's
/// function is in it. Made anew for each compile of the component (export
/// indices belong to one compile).
pub struct PlainCode<T: 'static> {
    /// Imports resolved once; each call only instantiates.
    pub pre: InstancePre<T>,
    bound: Vec<Bound>,
    left_out: Vec<LeftOut>,
}

/// A tool's function in one compile of the component.
struct Bound {
    function: PlainFunction,
    index: ComponentExportIndex,
    params: Vec<(String, Type)>,
    result: Option<Type>,
    /// [`lift::factor`] of the result type: the call's hostcall fuel is its
    /// memory divided by it.
    lift_factor: usize,
}

impl<T: Send + 'static> PlainCode<T> {
    /// Finds `functions` in `pre`'s component (`left_out`: those that are
    /// not tools, for `inspect`).
    pub fn new(
        pre: InstancePre<T>,
        functions: &[PlainFunction],
        left_out: Vec<LeftOut>,
    ) -> Result<Arc<PlainCode<T>>> {
        let component = pre.component();
        let engine = pre.engine();
        let ty = component.component_type();
        let bound = functions
            .iter()
            .map(|function| {
                let (index, func) = find(component, &ty, engine, function)
                    .with_context(|| format!("cannot find the export of tool `{}`", function.tool))?;
                let result = func.results().next();
                Ok(Bound {
                    function: function.clone(),
                    index,
                    params: func.params().map(|(name, ty)| (name.to_string(), ty)).collect(),
                    lift_factor: result.as_ref().map_or(1, lift::factor),
                    result,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Arc::new(PlainCode { pre, bound, left_out }))
    }

    /// Whether `arguments` convert to the parameters of `tool` (the error
    /// names the argument that does not).
    pub fn check(&self, tool: &str, arguments: &Value) -> Result<(), String> {
        let Some(bound) = self.bound.iter().find(|bound| bound.function.tool == tool) else { return Ok(()) };
        let Some(arguments) = arguments.as_object() else {
            return Err("the arguments are not an object".into());
        };
        values::arguments(&bound.params, arguments).map(drop).map_err(|err| err.to_string())
    }

    /// The component's functions that are not tools, and why.
    pub fn left_out(&self) -> &[LeftOut] {
        &self.left_out
    }

    /// The tools it binds, to bind them again in another compile.
    pub fn functions(&self) -> Vec<PlainFunction> {
        self.bound.iter().map(|bound| bound.function.clone()).collect()
    }

    /// Calls `tool` on `instance` with `arguments` (a JSON object, checked
    /// against the tool's schema), its result lifted, and converted to
    /// JSON, each within `max_memory` bytes of host memory (the result's
    /// size as sent is checked against `--max-output` after, as any
    /// tool's). `Err` is a trap (or a stop): the guest failed, not the tool.
    pub async fn call(
        &self,
        mut store: impl AsContextMut<Data = T>,
        instance: &Instance,
        tool: &str,
        arguments: &str,
        max_memory: usize,
    ) -> wasmtime::Result<Result<CallResult, CallError>> {
        let Some(bound) = self.bound.iter().find(|bound| bound.function.tool == tool) else {
            return Ok(Err(CallError::UnknownTool(tool.to_string())));
        };
        let arguments = match serde_json::from_str::<Map<String, Value>>(arguments) {
            Ok(arguments) => arguments,
            Err(err) => return Ok(Err(CallError::InvalidArguments(format!("not a JSON object: {err}")))),
        };
        let params = match values::arguments(&bound.params, &arguments) {
            Ok(params) => params,
            Err(err) => return Ok(Err(CallError::InvalidArguments(err.to_string()))),
        };
        let Some(func) = instance.get_func(&mut store, bound.index) else {
            return Err(wasmtime::format_err!("the instance has no function for tool `{tool}`"));
        };
        // wasmtime lifts the result into `Val`s (tens of bytes per list
        // element) before the host can measure it, charging the store's
        // hostcall fuel, which `Guest::call` sets to the call's memory; it
        // under-charges names, so this function's share of it is smaller
        // by as much as its result type can under-charge (`lift`).
        let fuel = store.as_context_mut().hostcall_fuel().min(max_memory / bound.lift_factor);
        store.as_context_mut().set_hostcall_fuel(fuel);
        let mut results = vec![Val::Bool(false); usize::from(bound.result.is_some())];
        if let Err(err) = func.call_async(&mut store, &params, &mut results).await {
            // wasmtime's error for it is private: known by its words.
            if format!("{err:#}").contains("fuel allocated for hostcalls has been exhausted") {
                let why = format!(
                    "its result is larger than the host converts for a call of at most {} MiB (--max-memory)",
                    max_memory >> 20
                );
                return Ok(Err(CallError::Failed(why)));
            }
            return Err(err);
        }
        let (Some(ty), Some(val)) = (&bound.result, results.first()) else {
            return Ok(Ok(CallResult { content: Vec::new(), structured_content: None, is_error: false }));
        };
        // Converted within the call's memory, charged before the host
        // allocates it (`result_json::to_json`).
        let memory = Budget::new("--max-memory", max_memory);
        let mut budget = memory.nothing();
        let (ty, val, failed) = match (bound.function.outcome, ty, val) {
            (Outcome::Fallible, Type::Result(result), Val::Result(outcome)) => match outcome {
                Ok(ok) => (result.ok(), ok.as_deref(), false),
                Err(err) => (result.err(), err.as_deref(), true),
            },
            _ => (Some(ty.clone()), Some(val), false),
        };
        let json = match (ty, val) {
            (Some(ty), Some(val)) => match result_json::to_json(&ty, val, &mut budget) {
                Ok(json) => json,
                Err(too_large) => {
                    return Ok(Err(CallError::Failed(format!("its result is too large: {too_large}"))));
                }
            },
            _ => Value::Null,
        };
        let text = match &json {
            Value::String(text) => text.clone(),
            other => other.to_string(),
        };
        if failed {
            return Ok(Ok(CallResult {
                content: vec![Content::Text(text)],
                structured_content: None,
                is_error: true,
            }));
        }
        let structured = serde_json::json!({ "result": json }).to_string();
        Ok(Ok(CallResult {
            content: vec![Content::Text(text)],
            structured_content: Some(structured),
            is_error: false,
        }))
    }
}

/// The export index and type of `function` in `component`.
fn find(
    component: &Component,
    ty: &wasmtime::component::types::Component,
    engine: &Engine,
    function: &PlainFunction,
) -> Option<(ComponentExportIndex, ComponentFunc)> {
    let item = match &function.interface {
        None => ty.get_export(engine, &function.name)?.ty,
        Some(interface) => match ty.get_export(engine, interface)?.ty {
            ComponentItem::ComponentInstance(instance) => instance.get_export(engine, &function.name)?.ty,
            _ => return None,
        },
    };
    let ComponentItem::ComponentFunc(func) = item else { return None };
    let index = match &function.interface {
        None => component.get_export_index(None, &function.name)?,
        Some(interface) => {
            let instance = component.get_export_index(None, interface)?;
            component.get_export_index(Some(&instance), &function.name)?
        }
    };
    Some((index, func))
}
