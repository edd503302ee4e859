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
use serde_json::Value;
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
use crate::sandbox::{CallState, MAX_CORE_INSTANCES, MAX_MEMORIES, MAX_TABLES, StoreBudget, new_store};
use crate::schema::{SCHEMA_LIMITS, Schema};

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
    /// JSON Schema of the arguments (always an object schema), bounded.
    pub input: Arc<Schema>,
    /// JSON Schema of the structured result, if declared, bounded.
    pub output: Option<Arc<Schema>>,
    /// Behaviour hints.
    pub annotations: Annotations,
    /// The component's own word on whether calls need the user's approval.
    pub needs_approval: Option<bool>,
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
        let (component, cache_outcome) = cache.load(engine, &bytes).map_err(|err| {
            let text = format!("{err:#}");
            if text.contains("exceeds the configured maximum") {
                // The pool's per-component caps: say what the host allows.
                return anyhow!(
                    "{shown} is refused: {text}. A call may hold at most {MAX_MEMORIES} memories, \
                     {MAX_TABLES} tables and {MAX_CORE_INSTANCES} core instances"
                );
            }
            anyhow!("{shown} failed to compile: {text}")
        })?;
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
        if infos.len() > MAX_TOOLS {
            bail!(
                "{shown} offers {} tools, more than the {MAX_TOOLS} the host accepts from one component",
                infos.len()
            );
        }
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
        ..StoreBudget::for_call(&CallLimits::default())
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
            name: info.name,
            title: info.title,
            description: info.description,
            input: Arc::new(input),
            output: output.map(Arc::new),
            annotations: info.annotations,
            needs_approval: info.needs_approval,
        })
    }
}

/// Longest tool title the host lists, in bytes.
const MAX_TITLE: usize = 1 << 10;
/// Longest tool description the host lists, in bytes.
const MAX_DESCRIPTION: usize = 16 << 10;
/// Most tools one component may offer.
const MAX_TOOLS: usize = 1024;

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
