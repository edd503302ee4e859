//! mcp-wasm-host: an MCP server whose tools are sandboxed WebAssembly components.
//!
//! The path of a tool call, top to bottom, one folder or file per job:
//!
//! - [`transport`]: stdio (stdin EOF and signals stop every call) or
//!   Streamable HTTP, bounded;
//! - [`mcp`]: the rmcp handler, which only dispatches; routing and argument
//!   validation (`mcp/tools`); the three ways a call travels
//!   (`mcp/mode/{request,rounds,task}`; a paused 2026-07-28 call is parked
//!   here or sealed into its `requestState`, `mode/rounds/{parked,sealed}`
//!   with [`request_state`]); outcome → MCP result (`mcp/result`);
//!   the status resource;
//! - [`call`]: one call's life — approval, a slot, run, stop (`call/stop`),
//!   cleanup (`call/cleanup`) — and its outcome classified in one place
//!   (`call/outcome`);
//! - [`approval`]: which calls need the user's yes, the question, the verdict;
//! - [`ask`]: a call's channel to the user — log and progress notifications,
//!   questions withdrawn when the call stops;
//! - [`store`]: the data of a call's wasmtime store, handing each WIT
//!   interface its view, and the one place guest code is run;
//! - [`wit`]: the host side of each `mcp:tool` interface (`types`,
//!   `cancellation`, `client`), over the contract's types in [`contract`];
//! - [`cancellation`]: the per-call stop signal the guest sees as `cancelled`;
//! - [`sandbox`]: what a store grants and bounds — WASI with the user's
//!   grants, outgoing HTTP to granted hosts only, regular files only, the
//!   memory budget, guest output, and the lowered guest threads.
//!
//! Beside the path: [`cli`] and [`config`] (the command line merged with
//! `--config`), [`component`] (loading and checking a component, of either
//! kind: the `mcp:tool` contract, or [`plain`] functions as tools),
//! [`schema`] (schemas bounded at load, checks bounded at run time),
//! [`engine`] and [`cache`] (the wasmtime engines, epoch ticker, compile
//! cache) with [`tiering`] (cold components serve baseline code until their
//! optimized code is compiled), [`limits`] (what a call may use, named in messages)
//! with [`json_size`] (sizes of JSON counted without writing it),
//! [`log_text`] (the one rule for outside text in log lines and errors: escaped, cut),
//! [`stats`] (live counts, so tests and operators can see nothing leaks)
//! with [`metrics`] (the same and more for Prometheus, at `/metrics`) and
//! [`audit`] (who called what and how it ended, `--audit-log`)
//! and [`scaffold`] (new tool projects for `mcp-wasm-host new`).
//! [`shell`] is `mcp-wasm-host call`: one call from the shell, through an
//! rmcp client talking to this server in the same process.
//!
//! Before loading: [`registry`] pulls `oci://` components (by tag or
//! digest, bounded and hashed), verifies their cosign signatures and keeps
//! them by digest, so the loader only ever sees a checked local file.
//! [`loader`] loads one configured component, at start and when [`watch`]
//! (`--watch`) finds a new version to swap in without a restart.

mod approval;
mod ask;
mod audit;
mod auth;
mod cache;
mod call;
mod cancellation;
pub mod cli;
mod component;
mod config;
pub mod contract;
mod engine;
mod inspect;
mod json_size;
mod limits;
mod loader;
pub mod log_text;
mod mcp;
mod metrics;
mod operation;
mod plain;
mod registry;
mod request_state;
mod sandbox;
pub mod scaffold;
mod schema;
mod secret_file;
pub mod shell;
mod stats;
mod store;
pub mod telemetry;
mod tiering;
mod tool_name;
mod transport;
mod watch;
mod wit;

use std::sync::Arc;

use anyhow::{Context as _, Result};
use tokio_util::sync::CancellationToken;

use crate::ask::AskPolicy;
use crate::cache::CompileCache;
use crate::call::CallRunner;
use crate::cli::ServeArgs;
use crate::config::{ComponentSettings, Settings};
use crate::engine::{EngineSettings, Epochs, Tier, build_engine};
use crate::loader::Loader;
use crate::mcp::ToolServer;
use crate::sandbox::guest_pool::GuestPool;
use crate::sandbox::{descriptors, grants};
use crate::stats::Stats;
use crate::tiering::Compiler;

pub use inspect::inspect;

/// Builds the server for the components named in `args` (and its
/// `--config` file), without loading them yet (see [`load_components`]);
/// the loader is kept for reloads. Every configuration error surfaces here.
pub(crate) fn build_server(
    args: &ServeArgs,
    settings: &mut Settings,
    shutdown: CancellationToken,
    stats: Arc<Stats>,
) -> Result<(ToolServer, Loader)> {
    if settings.components.is_empty() {
        anyhow::bail!("no components to serve: give --component PATH, or [[component]] entries in --config");
    }
    let cache = compile_cache(args);
    // Nothing a tool may write can be something the host trusts, and no
    // grant may sit inside another writable one, across all components.
    // `oci://` components are pulled after this (while the protocol is
    // answered): what is trusted for them is the store they are kept in.
    let local = settings.components.iter().filter(|component| component.oci.is_none());
    let mut trusted: Vec<std::path::PathBuf> = local.map(|component| component.path.clone()).collect();
    if settings.components.iter().any(|component| component.oci.is_some()) {
        trusted.extend(registry_options(args).map(|options| options.store_dir));
    }
    trusted.extend(args.config.clone());
    trusted.extend(settings.server.audit_log.clone());
    if let CompileCache::Dir { dir, .. } = &cache {
        trusted.push(dir.clone());
    }
    for component in &mut settings.components {
        let origin = origin_of(component);
        component.grants.capture().with_context(|| format!("grants from {origin}"))?;
        for host in component.grants.hosts.iter() {
            tracing::info!(component = %component.path.display(), %host, "outgoing HTTP allowed");
        }
    }
    let every_dir = settings.components.iter().flat_map(|component| &component.grants.dirs);
    grants::check_layout(every_dir, &trusted)?;
    fit_descriptors(args, settings);
    let server = &settings.server;
    // The engine is shared: its instance pool is sized for the largest
    // memory any component may use, and fuel is metered if any uses it.
    let limits = settings.components.iter().map(|component| &component.limits);
    let engine_settings = EngineSettings {
        max_memory: limits.clone().map(|limits| limits.max_memory).max().unwrap_or_default(),
        max_stack: server.max_stack,
        // Each call also needs a slot for its cleanup, plus one for listing.
        max_concurrent_calls: server.max_concurrent_calls.saturating_mul(2).saturating_add(1),
        fuel_metering: limits.clone().any(|limits| limits.fuel.is_some()),
    };
    let engine = build_engine(&engine_settings, Tier::Optimized)?;
    let total_memory = server.max_total_memory.unwrap_or_else(sandbox::default_total_memory);
    sandbox::host_memory().configure(total_memory);
    sandbox::host_memory().watch_pool(&engine);
    sandbox::release_when_idle({
        let stats = stats.clone();
        move || stats.snapshot().calls_total
    });
    tracing::info!(
        max_total_memory = %limits::HumanBytes(total_memory),
        "memory of all calls together (--max-total-memory)"
    );
    let epochs = Epochs::new(&engine);
    let guests = GuestPool::start(&epochs)?;
    // Cold components serve baseline code first, from an engine with the
    // same settings (tiering.rs), unless --no-tiering.
    let tiering = (!server.no_tiering).then(|| (engine_settings, epochs.clone()));
    let loader = Loader { compiler: Compiler::new(&engine, cache, tiering)? };
    let max_calls = server.max_concurrent_calls.max(1) as usize;
    let runner = CallRunner::new(epochs, guests, max_calls, shutdown, stats);
    let ask_policy = AskPolicy {
        elicitation_timeout: server.elicitation_timeout,
        max_questions: server.max_questions,
        approval_timeout: server.approval_timeout,
        paused_slots: Arc::new(tokio::sync::Semaphore::new(server.max_paused as usize)),
        paused_share: None,
    };
    let state_keys = match &server.state_key_file {
        Some(path) => {
            let keys = request_state::StateKeys::load(path, server.approval_timeout)?;
            tracing::info!(
                keys = ?keys.key_ids(),
                replica = keys.replica(),
                "paused calls travel sealed in their requestState (--state-key-file)"
            );
            Some(keys)
        }
        None => None,
    };
    let fairness = server.auth.as_ref().map(auth::Fairness::new);
    let server = ToolServer::loading(runner, ask_policy, state_keys, server.watch, fairness)?;
    Ok((server, loader))
}

/// Where `component` was configured, for messages: its `--config` entry,
/// or the command line.
fn origin_of(component: &ComponentSettings) -> String {
    component.origin.clone().unwrap_or_else(|| "the command line".into())
}

/// How often a component still compiling is reported in the log.
const COMPILING_REPORT: std::time::Duration = std::time::Duration::from_secs(2);

/// Loads every component of `settings` into `server`, in order, and lets the
/// requests waiting for them go on; the first one that fails is the error.
pub(crate) async fn load_components(server: &ToolServer, loader: &Loader, settings: &Settings) -> Result<()> {
    let started = std::time::Instant::now();
    let mut components = Vec::with_capacity(settings.components.len());
    for component in &settings.components {
        let origin = origin_of(component);
        let load = loader.load(component, server.runner());
        tokio::pin!(load);
        let mut report =
            tokio::time::interval_at(tokio::time::Instant::now() + COMPILING_REPORT, COMPILING_REPORT);
        let loaded = loop {
            tokio::select! {
                loaded = &mut load => break loaded,
                _ = report.tick() => tracing::info!(
                    component = %component.path.display(),
                    elapsed_s = started.elapsed().as_secs(),
                    "still loading (compiling); tools/list and calls wait for it"
                ),
            }
        };
        components.push(loaded.with_context(|| format!("loading the component from {origin}"))?);
    }
    // `--tools` names tools of any of the components it applies to.
    let shared = settings.components.iter().filter(|c| c.offer.shared).filter_map(|c| c.offer.tools.as_ref());
    let offered = |name: &String| components.iter().any(|c| c.tools.iter().any(|t| t.guest_name == *name));
    if let Some(missing) = shared.flatten().find(|name| !offered(name)) {
        anyhow::bail!("--tools names `{}`, which no component offers", log_text::escaped(missing));
    }
    server.finish_loading(components, started.elapsed())
}

/// Pulls every `oci://` component (and checks its signature) before
/// anything is loaded, pointing its settings at the checked file.
async fn pull_components(args: &ServeArgs, settings: &mut Settings) -> Result<Vec<registry::Pulled>> {
    let options = registry_options(args);
    let mut pulled = Vec::new();
    for component in &mut settings.components {
        let Some(reference) = component.oci.clone() else {
            if let Some(key) = &component.signature_key {
                anyhow::bail!(
                    "{}: a signature ({}) can only be required of an oci:// component; a local file \
                     carries no cosign signature",
                    component.path.display(),
                    key.display()
                );
            }
            continue;
        };
        let Some(options) = &options else {
            anyhow::bail!("{reference}: no directory to keep pulled components in: give --cache-dir DIR");
        };
        let got = registry::pull(&reference, component.signature_key.as_deref(), options)
            .await
            .with_context(|| format!("cannot load {reference}"))?;
        component.path = got.path.clone();
        pulled.push(got);
    }
    Ok(pulled)
}

/// Where pulled components are kept (`CACHE/oci`), and which registries may
/// be reached in plain HTTP; `None` when there is no cache directory.
fn registry_options(args: &ServeArgs) -> Option<registry::RegistryOptions> {
    let store_dir = args.cache_dir.clone().or_else(CompileCache::default_dir)?.join("oci");
    Some(registry::RegistryOptions {
        store_dir,
        insecure: args.insecure_registries.clone(),
        timeout: args.registry_timeout,
    })
}

fn compile_cache(args: &ServeArgs) -> CompileCache {
    if args.no_cache {
        return CompileCache::Disabled;
    }
    match args.cache_dir.clone().or_else(CompileCache::default_dir) {
        Some(dir) => CompileCache::Dir { dir, max_size: args.cache_max_size as u64 },
        None => CompileCache::Disabled,
    }
}

/// Keeps a reserve of descriptors from calls, and fits each component's
/// `--max-handles` to what calls may share (see `sandbox::descriptors`).
fn fit_descriptors(args: &ServeArgs, settings: &mut Settings) {
    let limit = descriptors::limit();
    let server = &settings.server;
    // Every store the instance pool may hold at once opens its grants.
    let sandboxes = u64::from(server.max_concurrent_calls).saturating_mul(2).saturating_add(1);
    let grants = settings.components.iter().map(|component| component.grants.dirs.len()).max();
    let connections = if args.http.is_some() { u64::from(server.max_connections) } else { 0 };
    let reserve = descriptors::reserve(limit, sandboxes, grants.unwrap_or(0) as u64, connections);
    descriptors::keep_reserve(limit, reserve);
    for component in &mut settings.components {
        let requested = component.limits.max_handles;
        let fitted = descriptors::fit_handles(requested, limit, reserve);
        if fitted < requested {
            tracing::warn!(
                component = %component.path.display(),
                requested,
                fitted,
                open_file_limit = limit,
                reserve,
                "--max-handles lowered from {requested} to {fitted}: one call may hold at most a quarter of \
                 the descriptors left to calls under the open-file limit of {limit}"
            );
            component.limits.max_handles = fitted;
        }
    }
}

/// Serves over stdio, or over Streamable HTTP with `--http`.
pub async fn serve(args: &ServeArgs) -> Result<()> {
    descriptors::raise_limit();
    // Before anything slow: a signal during loading must not kill the process.
    let signals = transport::signal::Signals::listen();
    let shutdown = CancellationToken::new();
    let settings = config::resolve(args)?;
    if settings.server.auth.is_some() && args.http.is_none() {
        anyhow::bail!(
            "--auth-issuer (or [server.auth]) works only with --http: over stdio the client's \
             credentials come from the environment, as the MCP specification has it"
        );
    }
    let stats = Stats::default();
    let audit = audit::AuditLog::open(&settings, args.http, stats.metrics())?;
    let stats = Arc::new(stats.with_audit(audit));
    let served = serve_with(args, settings, signals, shutdown, stats.clone()).await;
    stats.audit().stop(served.is_ok()).await;
    served
}

/// [`serve`], once the settings are resolved and the audit log is open.
async fn serve_with(
    args: &ServeArgs,
    mut settings: Settings,
    signals: transport::signal::Signals,
    shutdown: CancellationToken,
    stats: Arc<Stats>,
) -> Result<()> {
    let limits = settings.server.clone();
    let (server, loader) = build_server(args, &mut settings, shutdown.clone(), stats.clone())?;
    // The protocol is answered while the components are pulled and load: a
    // pull may take up to --registry-timeout and a cold compile seconds,
    // and a client's first request must not wait for either.
    let serving = transport(args, &limits, server.clone(), signals, shutdown.clone(), stats);
    tokio::pin!(serving);
    let loading = async {
        pull_components(args, &mut settings).await?;
        load_components(&server, &loader, &settings).await
    };
    tokio::select! {
        // The client left, or a signal came, before the components loaded.
        served = &mut serving => return served,
        // A component that cannot be loaded stops the host with its message.
        loaded = loading => loaded?,
    }
    // Components loaded from baseline code get optimized code in the background.
    loader.spawn_optimize_all(&server);
    if limits.watch {
        let options = watch::WatchOptions {
            file_interval: limits.watch_interval,
            tag_interval: limits.watch_tag_interval,
            registry: registry_options(args),
        };
        watch::spawn(server.clone(), loader, settings.components, options, shutdown);
    }
    serving.await
}

/// Serves `server` over stdio, or over Streamable HTTP with `--http`.
async fn transport(
    args: &ServeArgs,
    limits: &config::ServerSettings,
    server: ToolServer,
    signals: transport::signal::Signals,
    shutdown: CancellationToken,
    stats: Arc<Stats>,
) -> Result<()> {
    match args.http {
        Some(addr) => {
            let options = transport::http::HttpOptions {
                addr,
                allowed_hosts: args.http_allowed_hosts.clone(),
                allowed_origins: args.http_allowed_origins.clone(),
                max_sessions: limits.max_sessions as usize,
                idle_timeout: limits.http_idle_timeout,
                header_timeout: limits.http_header_timeout,
                body_timeout: limits.http_body_timeout,
                max_connections: limits.max_connections as usize,
                max_request_memory: limits.max_request_memory,
                drain_timeout: limits.drain_timeout,
                auth: limits.auth.clone(),
                tls: limits.tls.clone(),
            };
            transport::http::serve_until_signal(server, options, signals, shutdown, stats).await
        }
        None => {
            let memory = limits.max_request_memory;
            transport::stdio::serve(server, signals, shutdown, stats, limits.eof_drain, memory).await
        }
    }
}
