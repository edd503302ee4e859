//! Stage 2 of start-up: the runtime calls run on, built from the settings
//! before any component is loaded.

use std::sync::Arc;

use anyhow::{Context as _, Result};
use tokio_util::sync::CancellationToken;

use super::components::{origin_of, registry_options};
use crate::ask::AskPolicy;
use crate::cache::CompileCache;
use crate::call::CallRunner;
use crate::config::{self, Settings};
use crate::engine::{EngineSettings, Epochs, Tier, build_engine};
use crate::loader::Loader;
use crate::mcp::ToolServer;
use crate::sandbox::guest_pool::GuestPool;
use crate::sandbox::{self, descriptors, grants};
use crate::stats::Stats;
use crate::tasks::TaskStore;
use crate::tiering::Compiler;
use crate::{auth, limits, request_state};

/// Builds the server for the components in `settings` (the command line
/// and its `--config` file, merged), without loading them yet (see
/// [`load_components`]); the loader is kept for reloads. Every
/// configuration error surfaces here.
pub(crate) fn build_server(
    settings: &mut Settings,
    shutdown: CancellationToken,
    stats: Arc<Stats>,
    task_store: Option<TaskStore>,
) -> Result<(ToolServer, Loader)> {
    if settings.components.is_empty() {
        anyhow::bail!("no components to serve: give --component PATH, or [[component]] entries in --config");
    }
    let cache = compile_cache(&settings.server);
    // Nothing a tool may write can be something the host trusts, and no
    // grant may sit inside another writable one, across all components.
    // `oci://` components are pulled after this (while the protocol is
    // answered): what is trusted for them is the store they are kept in.
    let local = settings.components.iter().filter(|component| component.oci.is_none());
    let mut trusted: Vec<std::path::PathBuf> = local.map(|component| component.path.clone()).collect();
    if settings.components.iter().any(|component| component.oci.is_some()) {
        trusted.extend(registry_options(&settings.server).map(|options| options.copies_dir));
    }
    trusted.extend(settings.config_file.clone());
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
    fit_descriptors(settings);
    let server = &settings.server;
    // The engine is shared: its instance pool is sized for the largest
    // memory any component may use, and fuel is metered if any uses it.
    let limits = settings.components.iter().map(|component| &component.limits);
    let engine_settings = EngineSettings {
        max_memory: limits.clone().map(|limits| limits.max_memory).max().unwrap_or_default(),
        max_stack: server.max_stack,
        // Each call also needs a slot for its cleanup, plus one for listing.
        max_concurrent_calls: server.max_concurrent_calls.saturating_mul(2).saturating_add(1),
        fuel_metering: limits.clone().any(|limits| limits.metered_fuel().is_some()),
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
    let server = ToolServer::loading(runner, ask_policy, state_keys, server.watch, fairness, task_store)?;
    Ok((server, loader))
}

/// The compile cache `--cache-dir`, `--cache-max-size` and `--no-cache` say.
fn compile_cache(server: &config::ServerSettings) -> CompileCache {
    if server.no_cache {
        return CompileCache::Disabled;
    }
    match server.cache_dir.clone().or_else(CompileCache::default_dir) {
        Some(dir) => CompileCache::Dir { dir, max_size: server.cache_max_size as u64 },
        None => CompileCache::Disabled,
    }
}

/// Keeps a reserve of descriptors from calls, and fits each component's
/// `--max-handles` to what calls may share (see `sandbox::descriptors`).
fn fit_descriptors(settings: &mut Settings) {
    let limit = descriptors::limit();
    let server = &settings.server;
    // Every store the instance pool may hold at once opens its grants.
    let sandboxes = u64::from(server.max_concurrent_calls).saturating_mul(2).saturating_add(1);
    let grants = settings.components.iter().map(|component| component.grants.dirs.len()).max();
    let connections = if server.http.is_some() { u64::from(server.max_connections) } else { 0 };
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

/// The task store `--task-store` names, connected; none without it.
pub(crate) async fn connect_task_store(server: &config::ServerSettings) -> Result<Option<TaskStore>> {
    let Some(url) = &server.task_store else { return Ok(None) };
    if server.http.is_none() {
        anyhow::bail!(
            "--task-store keeps tasks for replicas serving --http; over stdio there is one process"
        );
    }
    #[cfg(feature = "task-store")]
    return Ok(Some(TaskStore::connect(url).await?));
    #[cfg(not(feature = "task-store"))]
    {
        let _ = url;
        anyhow::bail!("--task-store: this build leaves the task store out (the `task-store` Cargo feature)")
    }
}
