//! Loading a tool component: compile (or fetch from the compile cache), check
//! that it implements the `mcp:tool` contract with only imports the host
//! provides, pre-instantiate it once, and read its tool list.
//!
//! Every problem here is reported before the server starts serving, naming
//! the file and saying what to do about it.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result, anyhow, bail};
use serde_json::{Map, Value};
use wasmtime::Engine;
use wasmtime::component::{HasSelf, Linker};

use crate::approval::ApprovalRules;
use crate::bindings::types::{Annotations, ToolInfo};
use crate::bindings::{self, ToolComponentPre};
use crate::cancellation::CallCancellation;
use crate::client::ClientLink;
use crate::engine::{CacheOutcome, CompileCache};
use crate::grants::Grants;
use crate::limits::CallLimits;
use crate::open_guard;
use crate::sandbox::{CallState, StoreBudget, new_store};

/// The version of the `mcp:tool` contract (`wit/`) this host implements.
pub const CONTRACT_VERSION: &str = "0.2.0";

/// `list-tools` runs once at start; it gets this long before the component is rejected.
const LIST_TOOLS_TIMEOUT: Duration = Duration::from_secs(5);

/// A loaded tool component, ready to instantiate once per call.
pub struct ToolComponent {
    /// Short name for logs and messages: the file name without `.wasm`.
    pub name: String,
    /// Where it was loaded from.
    pub path: PathBuf,
    /// Imports resolved once; each call only allocates and initialises.
    pub pre: ToolComponentPre<CallState>,
    /// The tools it offers, in its own order.
    pub tools: Vec<ToolSpec>,
    /// What its calls may see (files, environment).
    pub grants: Grants,
    /// What each of its calls may use.
    pub limits: CallLimits,
    /// Which of its tools need the user's approval.
    pub approvals: ApprovalRules,
}

/// One tool as declared by its component, with its input schema compiled.
pub struct ToolSpec {
    /// Unique tool name.
    pub name: String,
    /// Display name.
    pub title: Option<String>,
    /// What the tool does.
    pub description: Option<String>,
    /// JSON Schema of the arguments (always an object schema).
    pub input_schema: Arc<Map<String, Value>>,
    /// JSON Schema of the structured result, if declared.
    pub output_schema: Option<Arc<Map<String, Value>>>,
    /// Behaviour hints.
    pub annotations: Annotations,
    /// The component's own word on whether calls need the user's approval.
    pub needs_approval: Option<bool>,
    validator: jsonschema::Validator,
    output_validator: Option<jsonschema::Validator>,
}

impl ToolSpec {
    /// Checks call arguments against the input schema. On failure, returns
    /// one message per violation, each naming where in the arguments it is.
    pub fn check_arguments(&self, arguments: &Value) -> Result<(), Vec<String>> {
        let errors = violations(&self.validator, arguments);
        if errors.is_empty() { Ok(()) } else { Err(errors) }
    }

    /// Checks a successful result's structured content against the output
    /// schema, when the tool declares one.
    pub fn check_output(&self, structured: Option<&Value>) -> Result<(), String> {
        let Some(validator) = &self.output_validator else { return Ok(()) };
        let Some(structured) = structured else {
            return Err("it declares an output schema but returned no structured content".into());
        };
        let errors = violations(validator, structured);
        if errors.is_empty() { Ok(()) } else { Err(errors.join("; ")) }
    }
}

/// Every way `instance` breaks the schema, each naming where in it (`/path: ...`).
fn violations(validator: &jsonschema::Validator, instance: &Value) -> Vec<String> {
    validator
        .iter_errors(instance)
        .map(|error| {
            let at = error.instance_path().to_string();
            if at.is_empty() { error.to_string() } else { format!("{at}: {error}") }
        })
        .collect()
}

/// The linker every component is resolved against: WASI 0.2 (with the grants
/// applied per store), outgoing `wasi:http` and the `mcp:tool` host interfaces.
pub fn host_linker(engine: &Engine) -> Result<Linker<CallState>> {
    let mut linker = Linker::new(engine);
    wasmtime_wasi::p2::add_to_linker_async(&mut linker)?;
    // Its `open-at`, for regular files and directories only.
    open_guard::add_to_linker(&mut linker)?;
    // `wasi:http/types` and `outgoing-handler` only (the rest of the proxy
    // world is already in WASI). Every request passes `outgoing_http`'s
    // --allow-host check, so linking it grants nothing by itself.
    wasmtime_wasi_http::p2::add_only_http_to_linker_async(&mut linker)?;
    // Interface by interface: the world-level `add_to_linker` would also add
    // `wasi:io`, which `add_to_linker_async` has already provided.
    bindings::types::add_to_linker::<_, HasSelf<_>>(&mut linker, |state| state)?;
    bindings::cancellation::add_to_linker::<_, HasSelf<_>>(&mut linker, |state| state)?;
    bindings::client::add_to_linker::<_, HasSelf<_>>(&mut linker, |state| state)?;
    Ok(linker)
}

impl ToolComponent {
    /// Loads, checks and pre-instantiates the component at `path`, and reads
    /// its tool list.
    pub async fn load(
        path: &Path,
        engine: &Engine,
        linker: &Linker<CallState>,
        cache: &CompileCache,
    ) -> Result<ToolComponent> {
        let shown = path.display();
        let bytes = std::fs::read(path).with_context(|| format!("cannot read component {shown}"))?;
        check_is_component(&bytes).with_context(|| format!("{shown} is not a usable tool component"))?;

        let started = Instant::now();
        let (component, cache_outcome) =
            cache.load(engine, &bytes).with_context(|| format!("{shown} failed to compile"))?;
        tracing::debug!(
            component = %shown,
            cache = ?cache_outcome,
            elapsed_ms = started.elapsed().as_secs_f64() * 1e3,
            "compiled"
        );
        if cache_outcome == CacheOutcome::Miss {
            tracing::info!(component = %shown, "compiled and cached");
        }

        let instance_pre = linker.instantiate_pre(&component).map_err(|err| {
            let text = format!("{err:#}");
            if text.contains("mcp:tool/") && !text.contains(&format!("@{CONTRACT_VERSION}")) {
                return anyhow!(
                    "{shown} was built against another version of the mcp:tool contract \
                     ({text}); this host implements mcp:tool@{CONTRACT_VERSION}: rebuild the \
                     component against this host's wit/"
                );
            }
            anyhow!(
                "{shown} needs an import the host does not provide: {err:#}\n\
                 The host provides WASI 0.2 (files, environment and outgoing wasi:http \
                 only as granted; no raw sockets) and mcp:tool/client, mcp:tool/cancellation."
            )
        })?;
        let pre = ToolComponentPre::new(instance_pre).map_err(|err| {
            anyhow!(
                "{shown} does not implement the mcp:tool contract \
                 (it must export mcp:tool/tool@0.2.x; build it against wit/ \
                 with world `tool-component`): {err:#}"
            )
        })?;

        let name = path
            .file_stem()
            .map(|stem| stem.to_string_lossy().into_owned())
            .unwrap_or_else(|| "component".into());
        let infos = list_tools(&pre, engine).await.with_context(|| format!("{shown}: list-tools failed"))?;
        let tools = infos
            .into_iter()
            .map(|info| {
                let tool_name = info.name.clone();
                ToolSpec::from_info(info)
                    .with_context(|| format!("{shown}: tool `{tool_name}` is declared wrongly"))
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(ToolComponent {
            name,
            path: path.to_owned(),
            pre,
            tools,
            grants: Grants::default(),
            limits: CallLimits::default(),
            approvals: ApprovalRules::default(),
        })
    }
}

/// Tells a core module, a component and a non-wasm file apart, so the error
/// says what the user actually has.
fn check_is_component(bytes: &[u8]) -> Result<()> {
    const MAGIC: &[u8] = b"\0asm";
    if bytes.len() < 8 || &bytes[..4] != MAGIC {
        bail!("not a WebAssembly file");
    }
    // Bytes 4..8: version (2 bytes) and layer (2 bytes); layer 1 = component.
    if bytes[6..8] != [1, 0] {
        bail!(
            "it is a core WebAssembly module, not a component; build tools with \
             `cargo component build` or `cargo build --target wasm32-wasip2`"
        );
    }
    Ok(())
}

async fn list_tools(pre: &ToolComponentPre<CallState>, engine: &Engine) -> Result<Vec<ToolInfo>> {
    let budget = StoreBudget {
        fuel: Some(1_000_000_000),
        max_memory: 64 << 20,
        time_limit: LIST_TOOLS_TIMEOUT,
        max_guest_output: CallLimits::default().max_guest_output,
    };
    let mut store = new_store(
        engine,
        &Grants::default(),
        &budget,
        CallCancellation::new(),
        Arc::from("list-tools"),
        ClientLink::detached(Arc::default()),
    )?;
    let run = async {
        let instance = pre.instantiate_async(&mut store).await?;
        instance.mcp_tool_tool().call_list_tools(&mut store).await
    };
    match tokio::time::timeout(LIST_TOOLS_TIMEOUT, run).await {
        Ok(result) => Ok(result?),
        Err(_) => bail!("it did not return within {LIST_TOOLS_TIMEOUT:?}"),
    }
}

impl ToolSpec {
    fn from_info(info: ToolInfo) -> Result<ToolSpec> {
        if !is_valid_tool_name(&info.name) {
            bail!("tool names must be 1-128 characters of A-Z a-z 0-9 _ - .");
        }
        let input_schema = parse_schema(&info.input_schema).context("input-schema")?;
        if input_schema.get("type").and_then(Value::as_str) != Some("object") {
            bail!("input-schema must have \"type\": \"object\" (MCP tool arguments are objects)");
        }
        let validator = jsonschema::validator_for(&Value::Object(input_schema.clone()))
            .map_err(|err| anyhow!("input-schema is not a valid JSON Schema: {err}"))?;
        let output_schema = info
            .output_schema
            .as_deref()
            .map(|text| parse_schema(text).context("output-schema"))
            .transpose()?;
        let output_validator = output_schema
            .as_ref()
            .map(|schema| {
                jsonschema::validator_for(&Value::Object(schema.clone()))
                    .map_err(|err| anyhow!("output-schema is not a valid JSON Schema: {err}"))
            })
            .transpose()?;
        Ok(ToolSpec {
            name: info.name,
            title: info.title,
            description: info.description,
            input_schema: Arc::new(input_schema),
            output_schema: output_schema.map(Arc::new),
            annotations: info.annotations,
            needs_approval: info.needs_approval,
            validator,
            output_validator,
        })
    }
}

fn parse_schema(text: &str) -> Result<Map<String, Value>> {
    match serde_json::from_str(text) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(_) => bail!("must be a JSON object"),
        Err(err) => bail!("is not valid JSON: {err}"),
    }
}

/// MCP's recommended tool-name alphabet (2025-11-25, "Tool names").
fn is_valid_tool_name(name: &str) -> bool {
    (1..=128).contains(&name.len())
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn core_modules_and_other_files_are_told_apart() {
        let core = b"\0asm\x01\0\0\0";
        let component = b"\0asm\x0d\0\x01\0";
        assert!(check_is_component(component).is_ok());
        let err = check_is_component(core).unwrap_err().to_string();
        assert!(err.contains("core WebAssembly module"), "{err}");
        let err = check_is_component(b"#!/bin/sh\n").unwrap_err().to_string();
        assert!(err.contains("not a WebAssembly file"), "{err}");
    }

    fn tool_spec(output_schema: Option<&str>) -> ToolSpec {
        ToolSpec::from_info(ToolInfo {
            name: "t".into(),
            title: None,
            description: Some("d".into()),
            input_schema: r#"{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}"#
                .into(),
            output_schema: output_schema.map(Into::into),
            annotations: Annotations {
                read_only: None,
                destructive: None,
                idempotent: None,
                open_world: None,
            },
            needs_approval: None,
        })
        .unwrap()
    }

    #[test]
    fn arguments_are_checked_against_the_input_schema_naming_the_field() {
        let spec = tool_spec(None);
        assert!(spec.check_arguments(&serde_json::json!({ "n": 1 })).is_ok());
        let errors = spec.check_arguments(&serde_json::json!({ "n": "one" })).unwrap_err();
        assert!(errors[0].starts_with("/n: "), "{errors:?}");
    }

    #[test]
    fn structured_content_must_match_a_declared_output_schema() {
        let spec =
            tool_spec(Some(r#"{"type":"object","properties":{"sum":{"type":"number"}},"required":["sum"]}"#));
        assert!(spec.check_output(Some(&serde_json::json!({ "sum": 3 }))).is_ok());
        let problem = spec.check_output(Some(&serde_json::json!({ "sum": "three" }))).unwrap_err();
        assert!(problem.contains("/sum"), "{problem}");
        assert!(spec.check_output(None).unwrap_err().contains("no structured content"));
        // No output schema: anything goes.
        assert!(tool_spec(None).check_output(None).is_ok());
    }

    #[test]
    fn schemas_that_are_not_object_schemas_are_refused() {
        let mut info = ToolInfo {
            name: "t".into(),
            title: None,
            description: None,
            input_schema: r#"{"type":"string"}"#.into(),
            output_schema: None,
            annotations: Annotations {
                read_only: None,
                destructive: None,
                idempotent: None,
                open_world: None,
            },
            needs_approval: None,
        };
        assert!(ToolSpec::from_info(info.clone()).is_err());
        info.input_schema = "{not json".into();
        assert!(ToolSpec::from_info(info).is_err());
    }

    #[test]
    fn tool_names_follow_the_mcp_alphabet() {
        assert!(is_valid_tool_name("echo"));
        assert!(is_valid_tool_name("files.read_v2-beta"));
        assert!(!is_valid_tool_name(""));
        assert!(!is_valid_tool_name("has space"));
        assert!(!is_valid_tool_name(&"x".repeat(129)));
    }
}
