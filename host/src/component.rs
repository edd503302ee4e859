//! Loading a tool component: compile (or fetch from the compile cache),
//! tell its kind — written for the `mcp:tool` contract, or plain functions
//! (`crate::plain`) — check that it needs only imports the host provides,
//! pre-instantiate it once, and read its tool list.
//!
//! Every problem here is reported before the server starts serving, naming
//! the file and saying what to do about it.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result, bail};
use wasmtime::component::{Component, Linker};

use crate::approval::ApprovalRules;
use crate::ask::CallChannel;
use crate::auth::ToolScopes;
use crate::cache::CacheOutcome;
use crate::cancellation::CallCancellation;
use crate::contract::CONTRACT_VERSION;
use crate::contract::types::ToolInfo;
use crate::engine::Tier;
use crate::limits::{CallLimits, MAX_CORE_INSTANCES, MAX_MEMORIES, MAX_TABLES};
use crate::log_text::escaped;
use crate::operation::Operation;
use crate::plain::{self, PlainCode};
use crate::sandbox::StoreBudget;
use crate::sandbox::grants::Grants;
use crate::sandbox::guest_pool::GuestPool;
use crate::skills;
use crate::store::{CallState, ContractCode, Guest, Listing};
use crate::tiering::{BaselineCode, Compiler};
use crate::tool_name::MAX_TOOLS;

mod ahead;
mod behind;
mod checks;
mod offers;
mod spec;
mod uri_template;

pub use crate::store::{Code, Kind};
pub use ahead::Ahead;
pub use behind::Behind;
use checks::{check_contract_version, check_is_component};
pub use offers::{HOST_SCHEME, Offers, PromptSpec, check_uri};
pub use spec::{ToolSpec, apply_selection};

/// How long a compile may take before the log says one is under way.
const SAY_COMPILING_AFTER: Duration = Duration::from_millis(300);

/// Functions left out of a plain component that the log names one by one.
const MAX_LEFT_OUT_LOGGED: usize = 32;

/// `list-tools` runs once at start; it gets this long before the component is rejected.
const LIST_TOOLS_TIMEOUT: Duration = Duration::from_secs(5);

/// A loaded tool component, ready to instantiate once per call.
pub struct ToolComponent {
    /// Short name for logs and messages: the file name without `.wasm`.
    pub name: String,
    /// Where it was loaded from.
    pub path: PathBuf,
    /// Its code, by kind; imports resolved once, so each call only
    /// allocates and initialises.
    pub code: Code,
    /// The tools it offers, in its own order.
    pub tools: Vec<ToolSpec>,
    /// Its resources, templates and prompts, and whether it completes.
    pub offers: Offers,
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
    /// Neither the contract nor a function that can be called from JSON.
    #[error(
        "it offers no tools: it does not export mcp:tool/tool, and none of its exported functions can \
         be called from JSON{0}"
    )]
    NoTools(String),
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
        let engine = compiled.component.engine();
        check_contract_version(&compiled.component, engine).with_context(|| shown.to_string())?;
        let name = path
            .file_stem()
            .map(|stem| stem.to_string_lossy().into_owned())
            .unwrap_or_else(|| "component".into());
        let (code, tools, offers) = if plain::is_contract(&compiled.component, engine) {
            let code =
                pre_instantiate(&compiled.component, &compiled.linker).with_context(|| shown.to_string())?;
            let mut listing = list(&code, guests)
                .await
                .with_context(|| format!("{shown}: listing what it offers (list-tools, list-resources, list-templates, list-prompts) failed"))?;
            let mut offers = Offers::from_listing(&mut listing, &name);
            let served =
                offers.resources.iter().map(|spec| (spec.uri.as_str(), spec.mime_type.as_deref())).collect();
            let skills = skills::from_read(std::mem::take(&mut listing.read), &served, &name);
            offers.add_skills(skills);
            let mut tools = contract_tools(std::mem::take(&mut listing.tools), &shown.to_string())?;
            spec::set_task_support(&mut tools, std::mem::take(&mut listing.task_support))
                .with_context(|| format!("{shown}: its `tasks` export"))?;
            (Code::Contract(code), tools, offers)
        } else {
            let (code, tools) = plain_code(&bytes, &compiled.component, &compiled.linker)
                .await
                .with_context(|| shown.to_string())?;
            (code, tools, Offers::default())
        };
        Ok(ToolComponent {
            name,
            path: path.to_owned(),
            code,
            tools,
            offers,
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
        let code = match &self.code {
            Code::Contract(_) => Code::Contract(pre_instantiate(component, linker)?),
            Code::Plain(plain) => Code::Plain(PlainCode::new(
                linker
                    .instantiate_pre(component)
                    .map_err(|err| LoadError::MissingImport(format!("{err:#}")))?,
                &plain.functions(),
                plain.left_out().to_vec(),
            )?),
        };
        Ok(ToolComponent {
            name: self.name.clone(),
            path: self.path.clone(),
            code,
            tools: self.tools.clone(),
            offers: self.offers.clone(),
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

impl ToolComponent {
    /// The name the component knows tool `name` by (`name` without the
    /// component's prefix).
    pub fn guest_name<'a>(&'a self, name: &'a str) -> &'a str {
        self.tools.iter().find(|spec| spec.name == name).map_or(name, |spec| spec.guest_name.as_str())
    }

    /// `operation` with the names the component knows things by (without
    /// its prefix).
    pub fn guest_operation(&self, operation: &Operation) -> Operation {
        match operation {
            Operation::Tool { name, arguments } => {
                Operation::Tool { name: self.guest_name(name).to_string(), arguments: arguments.clone() }
            }
            Operation::Prompt { name, arguments } => Operation::Prompt {
                name: self.offers.prompt(name).map_or(name, |spec| &spec.guest_name).clone(),
                arguments: arguments.clone(),
            },
            other => other.clone(),
        }
    }

    /// Whether `arguments` (which passed the tool's schema) convert to the
    /// parameters of tool `guest_name`: always for the contract, whose
    /// guests read JSON themselves.
    pub fn check_arguments(&self, guest_name: &str, arguments: &serde_json::Value) -> Result<(), String> {
        match &self.code {
            Code::Contract(_) => Ok(()),
            Code::Plain(plain) => plain.check(guest_name, arguments),
        }
    }
}

/// A contract component's tools, as its `list-tools` declared them.
fn contract_tools(infos: Vec<ToolInfo>, shown: &str) -> Result<Vec<ToolSpec>> {
    if infos.len() > MAX_TOOLS {
        bail!(
            "{shown} offers {} tools, more than the {MAX_TOOLS} the host accepts from one component",
            infos.len()
        );
    }
    infos
        .into_iter()
        .map(|info| {
            // The name is the component's: quoted escaped and cut, like
            // all outside text in errors (a forged one is why it is refused).
            let tool_name = escaped(info.name.clone()).to_string();
            ToolSpec::from_info(info)
                .with_context(|| format!("{shown}: tool `{tool_name}` is declared wrongly"))
        })
        .collect()
}

/// A plain component's code and tools, from its WIT. A function that
/// cannot be a tool is left out with a log line saying why; a component
/// left with none is refused, naming them.
async fn plain_code(
    bytes: &Arc<[u8]>,
    component: &Component,
    linker: &Linker<CallState>,
) -> Result<(Code, Vec<ToolSpec>)> {
    // Reading the WIT validates the component again: seconds for a large
    // interpreter, so not on an async worker.
    let bytes = bytes.clone();
    let derived = tokio::task::spawn_blocking(move || plain::derive(&bytes)).await??;
    let mut left_out = derived.left_out;
    let mut functions = Vec::new();
    let mut tools = Vec::new();
    for (function, info) in derived.functions.into_iter().zip(derived.infos) {
        match ToolSpec::from_info(info) {
            Ok(spec) => {
                functions.push(function);
                tools.push(spec);
            }
            Err(err) => left_out.push(plain::LeftOut { function: function.tool, why: format!("{err:#}") }),
        }
    }
    for function in &functions {
        let export = function.interface.as_deref().map_or(String::new(), |interface| format!("{interface}#"));
        tracing::debug!(tool = %function.tool, function = %escaped(format!("{export}{}", function.name)), "served as a tool");
    }
    // A component may export thousands of functions: a bounded log.
    for gone in left_out.iter().take(MAX_LEFT_OUT_LOGGED) {
        tracing::info!(function = %escaped(&gone.function), reason = %escaped(&gone.why), "not served as a tool");
    }
    if left_out.len() > MAX_LEFT_OUT_LOGGED {
        let more = left_out.len() - MAX_LEFT_OUT_LOGGED;
        tracing::info!(more, "more functions not served as tools (`inspect` lists them all)");
    }
    if tools.is_empty() {
        let named = left_out
            .iter()
            .take(8)
            .map(|gone| format!("`{}`: {}", escaped(&gone.function), escaped(&gone.why)))
            .collect::<Vec<_>>();
        let named = if named.is_empty() { String::new() } else { format!(" ({})", named.join("; ")) };
        return Err(LoadError::NoTools(named).into());
    }
    if tools.len() > MAX_TOOLS {
        bail!(
            "it offers {} tools, more than the {MAX_TOOLS} the host accepts from one component",
            tools.len()
        );
    }
    let pre =
        linker.instantiate_pre(component).map_err(|err| LoadError::MissingImport(format!("{err:#}")))?;
    Ok((Code::Plain(PlainCode::new(pre, &functions, left_out)?), tools))
}

/// Resolves the component's imports once, so each call only instantiates,
/// and finds the contract's interfaces it exports.
fn pre_instantiate(
    component: &Component,
    linker: &Linker<CallState>,
) -> Result<Arc<ContractCode>, LoadError> {
    let instance_pre =
        linker.instantiate_pre(component).map_err(|err| LoadError::MissingImport(format!("{err:#}")))?;
    ContractCode::new(instance_pre).map(Arc::new).map_err(LoadError::NotATool)
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

/// Reads what a contract component offers, in a throw-away instance.
async fn list(code: &Arc<ContractCode>, guests: &GuestPool) -> Result<Listing> {
    let code = Code::Contract(code.clone());
    let budget = StoreBudget {
        fuel: Some(1_000_000_000),
        max_memory: 64 << 20,
        time_limit: LIST_TOOLS_TIMEOUT,
        ..StoreBudget::for_call(&CallLimits::default())
    };
    let channel = CallChannel::detached(Arc::default());
    let mut guest = Guest::new(
        &code,
        &Grants::default(),
        &budget,
        CallCancellation::new(),
        Arc::from("list-tools"),
        channel,
    )?;
    let budget = skills::budget();
    let run = guests.spawn(async move { guest.list(skills::is_skill_file, &budget).await });
    match tokio::time::timeout(LIST_TOOLS_TIMEOUT, run).await {
        Ok(result) => Ok(result?),
        Err(_) => bail!("it did not return within {LIST_TOOLS_TIMEOUT:?}"),
    }
}
