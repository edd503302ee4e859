//! Loading a tool component: compile (or fetch from the compile cache), check
//! that it implements the `mcp:tool` contract with only imports the host
//! provides, pre-instantiate it once, and read its tool list.
//!
//! Every problem here is reported before the server starts serving, naming
//! the file and saying what to do about it.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result, bail};
use serde_json::Value;
use wasmtime::Engine;
use wasmtime::component::{Component, Linker};

use crate::approval::ApprovalRules;
use crate::ask::CallChannel;
use crate::cache::{CacheOutcome, CompileCache};
use crate::cancellation::CallCancellation;
use crate::contract::types::{Annotations, ToolInfo};
use crate::contract::{CONTRACT_VERSION, ToolComponentPre};
use crate::limits::{CallLimits, MAX_CORE_INSTANCES, MAX_MEMORIES, MAX_TABLES};
use crate::sandbox::StoreBudget;
use crate::sandbox::grants::Grants;
use crate::sandbox::guest_pool::GuestPool;
use crate::schema::{SCHEMA_LIMITS, Schema};
use crate::store::{CallState, Guest};

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

/// Why a component cannot be served. Each says what to do about it.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// Not a WebAssembly component at all.
    #[error("it is not a usable tool component: {0}")]
    NotAComponent(&'static str),
    /// wasmtime could not compile it.
    #[error("it failed to compile: {0}")]
    Compile(String),
    /// It needs more memories, tables or instances than a call may hold.
    #[error(
        "it is refused: {0}. A call may hold at most {MAX_MEMORIES} memories, {MAX_TABLES} tables \
         and {MAX_CORE_INSTANCES} core instances"
    )]
    TooLarge(String),
    /// It was built against an incompatible version of `mcp:tool`.
    #[error(
        "it was built against another version of the mcp:tool contract (it uses `{found}`); this \
         host implements mcp:tool@{CONTRACT_VERSION}: rebuild the component against this host's wit/ \
         (`mcp-wasm-host wit DIR` writes it)"
    )]
    ContractVersion {
        /// The import or export that names the other version.
        found: String,
    },
    /// It imports something the host does not provide.
    #[error(
        "it needs an import the host does not provide: {0}\n\
         The host provides WASI 0.2 (files, environment and outgoing wasi:http only as granted; \
         no raw sockets) and mcp:tool/client, mcp:tool/cancellation."
    )]
    MissingImport(String),
    /// It does not export the `tool` interface.
    #[error(
        "it does not implement the mcp:tool contract (it must export mcp:tool/tool@0.2.x; build it \
         against wit/ with world `tool-component`): {0}"
    )]
    NotATool(String),
}

impl ToolComponent {
    /// Loads, checks and pre-instantiates the component at `path`, and reads
    /// its tool list.
    pub async fn load(
        path: &Path,
        engine: &Engine,
        linker: &Linker<CallState>,
        cache: &CompileCache,
        guests: &GuestPool,
    ) -> Result<ToolComponent> {
        let shown = path.display();
        let bytes = std::fs::read(path).with_context(|| format!("cannot read component {shown}"))?;
        check_is_component(&bytes).with_context(|| shown.to_string())?;

        let started = Instant::now();
        // Compiling takes seconds for a large component: not on an async worker.
        let (component, cache_outcome) = {
            let (engine, cache) = (engine.clone(), cache.clone());
            tokio::task::spawn_blocking(move || compile(&engine, &cache, &bytes))
                .await
                .context("the compile thread failed")?
                .with_context(|| shown.to_string())?
        };
        tracing::debug!(
            component = %shown,
            cache = ?cache_outcome,
            elapsed_ms = started.elapsed().as_secs_f64() * 1e3,
            "compiled"
        );
        if cache_outcome == CacheOutcome::Miss {
            tracing::info!(component = %shown, "compiled and cached");
        }
        check_contract_version(&component, engine).with_context(|| shown.to_string())?;
        let instance_pre = linker
            .instantiate_pre(&component)
            .map_err(|err| LoadError::MissingImport(format!("{err:#}")))
            .with_context(|| shown.to_string())?;
        let pre = ToolComponentPre::new(instance_pre)
            .map_err(|err| LoadError::NotATool(format!("{err:#}")))
            .with_context(|| shown.to_string())?;

        let name = path
            .file_stem()
            .map(|stem| stem.to_string_lossy().into_owned())
            .unwrap_or_else(|| "component".into());
        let infos =
            list_tools(&pre, engine, guests).await.with_context(|| format!("{shown}: list-tools failed"))?;
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

/// Compiles `bytes` (or loads them from `cache`).
fn compile(
    engine: &Engine,
    cache: &CompileCache,
    bytes: &[u8],
) -> Result<(Component, CacheOutcome), LoadError> {
    cache.load(engine, bytes).map_err(|err| {
        let text = format!("{err:#}");
        // The pool's per-component caps, as wasmtime words them.
        if text.contains("exceeds the configured maximum") {
            LoadError::TooLarge(text)
        } else {
            LoadError::Compile(text)
        }
    })
}

/// Refuses a component whose `mcp:tool` imports or exports name a version
/// this host cannot serve, read from the component's own type. Within
/// 0.2, patch versions only add: a tool built against 0.2.x with x above
/// the host's may use what the host lacks.
fn check_contract_version(component: &Component, engine: &Engine) -> Result<(), LoadError> {
    let ty = component.component_type();
    let names = ty.imports(engine).map(|(name, _)| name).chain(ty.exports(engine).map(|(name, _)| name));
    for name in names {
        let Some(version) =
            name.strip_prefix("mcp:tool/").and_then(|rest| rest.split_once('@')).map(|(_, v)| v)
        else {
            continue;
        };
        if !serves_version(version) {
            return Err(LoadError::ContractVersion { found: name.to_string() });
        }
    }
    Ok(())
}

/// Whether a tool built against contract `version` runs on this host: the
/// same major and minor (0.x: minor is breaking), a patch no newer.
fn serves_version(version: &str) -> bool {
    let parse = |v: &str| -> Option<(u64, u64, u64)> {
        let mut parts = v.split('.').map(|part| part.parse::<u64>().ok());
        Some((parts.next()??, parts.next()??, parts.next()??))
    };
    match (parse(version), parse(CONTRACT_VERSION)) {
        (Some((major, minor, patch)), Some((ours_major, ours_minor, ours_patch))) => {
            major == ours_major && minor == ours_minor && patch <= ours_patch
        }
        _ => false,
    }
}

/// Tells a core module, a component and a non-wasm file apart, so the error
/// says what the user actually has.
fn check_is_component(bytes: &[u8]) -> Result<(), LoadError> {
    const MAGIC: &[u8] = b"\0asm";
    if bytes.len() < 8 || &bytes[..4] != MAGIC {
        return Err(LoadError::NotAComponent("not a WebAssembly file"));
    }
    // Bytes 4..8: version (2 bytes) and layer (2 bytes); layer 1 = component.
    if bytes[6..8] != [1, 0] {
        return Err(LoadError::NotAComponent(
            "it is a core WebAssembly module, not a component; build tools with \
             `cargo component build` or `cargo build --target wasm32-wasip2`",
        ));
    }
    Ok(())
}

async fn list_tools(
    pre: &ToolComponentPre<CallState>,
    engine: &Engine,
    guests: &GuestPool,
) -> Result<Vec<ToolInfo>> {
    let budget = StoreBudget {
        fuel: Some(1_000_000_000),
        max_memory: 64 << 20,
        time_limit: LIST_TOOLS_TIMEOUT,
        ..StoreBudget::for_call(&CallLimits::default())
    };
    let channel = CallChannel::detached(Arc::default());
    let mut guest = Guest::new(
        engine,
        pre,
        &Grants::default(),
        &budget,
        CallCancellation::new(),
        Arc::from("list-tools"),
        channel,
    )?;
    let run = guests.spawn(async move { guest.list_tools().await });
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

    #[test]
    fn only_the_same_minor_and_no_newer_patch_of_the_contract_is_served() {
        assert!(serves_version(CONTRACT_VERSION));
        assert!(!serves_version("0.1.0"), "0.x minors break");
        assert!(!serves_version("0.3.0"));
        assert!(!serves_version("1.2.0"));
        assert!(!serves_version("0.2.99"), "a newer patch may use what this host lacks");
        assert!(!serves_version("0.2"));
        assert!(!serves_version("garbage"));
    }

    /// The check reads the component's own type: a component importing
    /// `mcp:tool/client` at another version is refused by name, before any
    /// linking.
    #[test]
    fn a_component_built_against_another_contract_is_refused_by_its_type() {
        let engine = Engine::default();
        let wat = r#"(component
            (import "mcp:tool/client@0.1.0" (instance))
            (import "wasi:cli/environment@0.2.6" (instance)))"#;
        let component = Component::new(&engine, wat::parse_str(wat).unwrap()).unwrap();
        let err = check_contract_version(&component, &engine).unwrap_err();
        assert!(
            matches!(&err, LoadError::ContractVersion { found } if found == "mcp:tool/client@0.1.0"),
            "{err}"
        );
        assert!(err.to_string().contains("mcp-wasm-host wit DIR"), "{err}");
        let current = format!(r#"(component (import "mcp:tool/client@{CONTRACT_VERSION}" (instance)))"#);
        let component = Component::new(&engine, wat::parse_str(&current).unwrap()).unwrap();
        assert!(check_contract_version(&component, &engine).is_ok());
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
