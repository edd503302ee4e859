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
use wasmtime::component::{Component, Linker};

use crate::approval::ApprovalRules;
use crate::ask::CallChannel;
use crate::auth::ToolScopes;
use crate::cache::CacheOutcome;
use crate::cancellation::CallCancellation;
use crate::contract::types::{Annotations, ToolInfo};
use crate::contract::{CONTRACT_VERSION, ToolComponentPre};
use crate::engine::Tier;
use crate::limits::{CallLimits, MAX_CORE_INSTANCES, MAX_MEMORIES, MAX_TABLES};
use crate::log_text::escaped;
use crate::sandbox::StoreBudget;
use crate::sandbox::grants::Grants;
use crate::sandbox::guest_pool::GuestPool;
use crate::schema::{SCHEMA_LIMITS, Schema};
use crate::store::{CallState, Guest};
use crate::tiering::{BaselineCode, Compiler};

mod ahead;
mod behind;
mod checks;

pub use ahead::Ahead;
pub use behind::Behind;
use checks::{check_contract_version, check_is_component};

/// How long a compile may take before the log says one is under way.
const SAY_COMPILING_AFTER: Duration = Duration::from_millis(300);

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
    /// The scopes its tools need (with `--auth-issuer`).
    pub scopes: ToolScopes,
    /// Set while it runs baseline code, until [`crate::tiering`] swaps in
    /// optimized code.
    pub baseline: Option<BaselineCode>,
    /// Its next call's instance, made ahead when its instances are slow to make.
    pub ahead: Ahead,
    /// How its calls' stores are dropped: behind the response when slow to.
    pub behind: Behind,
}

/// One tool as declared by its component, with its input schema compiled.
#[derive(Clone)]
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
        "it needs an import the host does not provide: {0}. \
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
    /// its tool list. Its code is what `compiler` gives first: optimized
    /// code from the cache, or baseline code that [`crate::tiering`]
    /// replaces later.
    pub async fn load(path: &Path, compiler: &Compiler, guests: &GuestPool) -> Result<ToolComponent> {
        let shown = path.display();
        let bytes: Arc<[u8]> =
            std::fs::read(path).with_context(|| format!("cannot read component {shown}"))?.into();
        check_is_component(&bytes).with_context(|| shown.to_string())?;

        let started = Instant::now();
        // Compiling takes seconds for a large component: not on an async worker.
        let compiled = {
            let (compiler, code) = (compiler.clone(), bytes.clone());
            let compiling = tokio::task::spawn_blocking(move || compiler.first(&code).map_err(compile_error));
            tokio::pin!(compiling);
            // A cache hit takes milliseconds; a compile, seconds, which a
            // user at a terminal must not mistake for a hang.
            let compiled = tokio::select! {
                compiled = &mut compiling => compiled,
                () = tokio::time::sleep(SAY_COMPILING_AFTER) => {
                    tracing::info!(
                        component = %shown,
                        size_mib = format!("{:.1}", bytes.len() as f64 / f64::from(1 << 20)),
                        "compiling (not in the compile cache yet); requests wait for it"
                    );
                    compiling.await
                }
            };
            compiled.context("the compile thread failed")?.with_context(|| shown.to_string())?
        };
        let compile_ms = started.elapsed().as_secs_f64() * 1e3;
        tracing::debug!(component = %shown, cache = ?compiled.cache, compile_ms, "compiled");
        if compiled.tier == Tier::Baseline {
            tracing::info!(
                component = %shown,
                tier = "baseline",
                compile_ms,
                "compiled with the baseline compiler (Winch); it serves until optimized code is ready"
            );
        } else if compiled.cache == CacheOutcome::Miss {
            tracing::info!(component = %shown, tier = "optimized", compile_ms, "compiled and cached");
        }
        check_contract_version(&compiled.component, compiled.component.engine())
            .with_context(|| shown.to_string())?;
        let pre =
            pre_instantiate(&compiled.component, &compiled.linker).with_context(|| shown.to_string())?;

        let name = path
            .file_stem()
            .map(|stem| stem.to_string_lossy().into_owned())
            .unwrap_or_else(|| "component".into());
        let infos = list_tools(&pre, guests).await.with_context(|| format!("{shown}: list-tools failed"))?;
        if infos.len() > MAX_TOOLS {
            bail!(
                "{shown} offers {} tools, more than the {MAX_TOOLS} the host accepts from one component",
                infos.len()
            );
        }
        let tools = infos
            .into_iter()
            .map(|info| {
                // The name is the component's: quoted escaped and cut, like
                // all outside text in errors (a forged one is why it is refused).
                let tool_name = escaped(info.name.clone()).to_string();
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
            scopes: ToolScopes::default(),
            baseline: (compiled.tier == Tier::Baseline).then(|| BaselineCode::new(bytes)),
            ahead: Ahead::default(),
            behind: Behind::default(),
        })
    }

    /// The same component — tools, grants, limits, approval rules — running
    /// `component` (compiled from the same bytes) instead: optimized code
    /// taking over from baseline code.
    pub fn with_code(&self, component: &Component, linker: &Linker<CallState>) -> Result<ToolComponent> {
        Ok(ToolComponent {
            name: self.name.clone(),
            path: self.path.clone(),
            pre: pre_instantiate(component, linker)?,
            tools: self.tools.clone(),
            grants: self.grants.clone(),
            limits: self.limits.clone(),
            approvals: self.approvals.clone(),
            scopes: self.scopes.clone(),
            baseline: None,
            ahead: Ahead::default(),
            behind: Behind::default(),
        })
    }
}

/// Resolves the component's imports once, so each call only instantiates.
fn pre_instantiate(
    component: &Component,
    linker: &Linker<CallState>,
) -> Result<ToolComponentPre<CallState>, LoadError> {
    let instance_pre =
        linker.instantiate_pre(component).map_err(|err| LoadError::MissingImport(format!("{err:#}")))?;
    ToolComponentPre::new(instance_pre).map_err(|err| LoadError::NotATool(format!("{err:#}")))
}

/// Names a compile failure: the pool's per-component caps (as wasmtime
/// words them) or anything else.
fn compile_error(err: anyhow::Error) -> LoadError {
    let text = format!("{err:#}");
    if text.contains("exceeds the configured maximum") {
        LoadError::TooLarge(text)
    } else {
        LoadError::Compile(text)
    }
}

async fn list_tools(pre: &ToolComponentPre<CallState>, guests: &GuestPool) -> Result<Vec<ToolInfo>> {
    let budget = StoreBudget {
        fuel: Some(1_000_000_000),
        max_memory: 64 << 20,
        time_limit: LIST_TOOLS_TIMEOUT,
        ..StoreBudget::for_call(&CallLimits::default())
    };
    let channel = CallChannel::detached(Arc::default());
    let mut guest = Guest::new(
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
    fn tool_names_follow_the_mcp_alphabet() {
        assert!(is_valid_tool_name("echo"));
        assert!(is_valid_tool_name("files.read_v2-beta"));
        assert!(!is_valid_tool_name(""));
        assert!(!is_valid_tool_name("has space"));
        assert!(!is_valid_tool_name(&"x".repeat(129)));
    }
}
