//! mcp-wasm-host: an MCP server whose tools are sandboxed WebAssembly components.
//!
//! The path of a tool call, top to bottom:
//!
//! - [`shutdown`] / [`http`]: the transports — stdio (stdin EOF and signals
//!   stop every call) or Streamable HTTP;
//! - [`server`]: MCP `tools/list` / `tools/call` (rmcp), argument validation,
//!   outcome → MCP result (with [`content`]), the status resource;
//! - [`approval`]: which calls need the user's yes first, and how it is asked;
//! - [`paused`]: calls paused across requests under a lease (2026-07-28);
//! - [`call`]: one call's life: approval, a slot, run, cancel, grace, forced
//!   stop, cleanup (with [`limits`] naming what was exceeded);
//! - [`cancellation`]: the per-call stop signal, also the guest's `cancelled`;
//! - [`client`]: what a guest asks of the MCP client (log, progress,
//!   elicitation, sampling), withdrawn when its call stops, with [`notify`]
//!   sending its log records and progress in order, bounded;
//! - [`sandbox`]: the store a call runs in, with the user's grants and limits;
//! - [`grants`]: what the user granted (directories, environment, hosts);
//! - [`open_guard`]: only regular files and directories open in a grant;
//! - [`guest_output`]: a call's stdout and stderr, capped, into the host's log;
//! - [`outgoing_http`]: `wasi:http` requests, sent only to granted hosts, at
//!   addresses the host resolved and checked;
//! - [`priority`]: guest code runs below the protocol threads;
//! - [`config`]: `--config tools.toml` merged with the command line;
//! - [`component`]: loading and checking a component and its tools;
//! - [`schema`]: tool schemas bounded at load, checks bounded at run time;
//! - [`engine`]: the wasmtime engine, epoch ticker and compile cache;
//! - [`bindings`]: the `mcp:tool` WIT contract as Rust types;
//! - [`contract`]: the same contract's WIT text, for `mcp-wasm-host wit`;
//! - [`scaffold`]: new tool projects (with the SDK and the contract), for `mcp-wasm-host new`;
//! - [`stats`]: live counts, so tests and operators can see nothing leaks.

pub mod approval;
pub mod bindings;
pub mod call;
pub mod cancellation;
pub mod cli;
pub mod client;
pub mod component;
pub mod config;
pub mod content;
pub mod contract;
pub mod engine;
pub mod grants;
pub mod guest_output;
pub mod http;
pub mod limits;
pub(crate) mod notify;
pub mod open_guard;
pub mod outgoing_http;
pub mod paused;
pub mod priority;
pub mod sandbox;
pub mod scaffold;
pub mod schema;
pub mod server;
pub mod shutdown;
pub mod stats;

use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context as _, Result};
use rmcp::ServiceExt as _;
use tokio_util::sync::CancellationToken;

use crate::call::CallRunner;
use crate::cli::ServeArgs;
use crate::component::{ToolComponent, host_linker};
use crate::config::ComponentSettings;
use crate::engine::{CompileCache, EngineSettings, build_engine, start_epoch_ticker};
use crate::server::ToolServer;
use crate::shutdown::EofWatch;
use crate::stats::Stats;

/// How long the process waits, after shutdown starts, for calls to stop and
/// clean up before it exits anyway.
const SHUTDOWN_BUDGET: Duration = Duration::from_millis(900);

/// Loads the components named in `args` (and its `--config` file) and
/// builds the server for them, without serving yet. Every configuration
/// error surfaces here.
pub async fn build_server(
    args: &ServeArgs,
    shutdown: CancellationToken,
    stats: Arc<Stats>,
) -> Result<ToolServer> {
    let settings = config::resolve(args)?;
    if settings.components.is_empty() {
        anyhow::bail!("no components to serve: give --component PATH, or [[component]] entries in --config");
    }
    let named =
        |component: &ComponentSettings| component.origin.clone().unwrap_or_else(|| "the command line".into());
    let cache = compile_cache(args);
    // Nothing a tool may write can be something the host trusts, and no
    // grant may sit inside another writable one, across all components.
    let mut trusted: Vec<std::path::PathBuf> =
        settings.components.iter().map(|component| component.path.clone()).collect();
    trusted.extend(args.config.clone());
    if let CompileCache::Dir(dir) = &cache {
        trusted.push(dir.clone());
    }
    let mut settings = settings;
    for component in &mut settings.components {
        let origin = named(component);
        component.grants.capture().with_context(|| format!("grants from {origin}"))?;
        for host in component.grants.hosts.iter() {
            tracing::info!(component = %component.path.display(), %host, "outgoing HTTP allowed");
        }
    }
    let every_dir = settings.components.iter().flat_map(|component| &component.grants.dirs);
    grants::check_layout(every_dir, &trusted)?;
    let server = &settings.server;
    // The engine is shared: its instance pool is sized for the largest
    // memory any component may use, and fuel is metered if any uses it.
    let limits = settings.components.iter().map(|component| &component.limits);
    let engine = build_engine(&EngineSettings {
        max_memory: limits.clone().map(|limits| limits.max_memory).max().unwrap_or_default(),
        max_stack: server.max_stack,
        // Each call also needs a slot for its cleanup, plus one for listing.
        max_concurrent_calls: server.max_concurrent_calls.saturating_mul(2).saturating_add(1),
        fuel_metering: limits.clone().any(|limits| limits.fuel.is_some()),
    })?;
    start_epoch_ticker(&engine);
    let linker = host_linker(&engine)?;
    let mut components = Vec::with_capacity(settings.components.len());
    for settings in &settings.components {
        let mut component = ToolComponent::load(&settings.path, &engine, &linker, &cache)
            .await
            .with_context(|| format!("loading the component from {}", named(settings)))?;
        component.grants = settings.grants.clone();
        component.limits = settings.limits.clone();
        component.approvals = settings.approvals.clone();
        components.push(component);
    }
    let runner = CallRunner::new(engine, server.max_concurrent_calls.max(1) as usize, shutdown, stats);
    let client_policy = client::ClientPolicy {
        request_timeout: server.elicitation_timeout,
        max_requests_per_call: server.max_questions,
        approval_timeout: server.approval_timeout,
        paused_slots: Arc::new(tokio::sync::Semaphore::new(server.max_paused as usize)),
    };
    ToolServer::new(components, runner, client_policy)
}

fn compile_cache(args: &ServeArgs) -> CompileCache {
    if args.no_cache {
        return CompileCache::Disabled;
    }
    match args.cache_dir.clone().or_else(CompileCache::default_dir) {
        Some(dir) => CompileCache::Dir(dir),
        None => CompileCache::Disabled,
    }
}

/// Raises the soft limit on open files to the hard limit: every call's
/// handles are capped (`--max-handles`), and the process as a whole should
/// run into those caps, not into a low default soft limit.
fn raise_open_file_limit() {
    use rustix::process::{Resource, getrlimit, setrlimit};
    let mut limit = getrlimit(Resource::Nofile);
    if limit.current != limit.maximum {
        limit.current = limit.maximum;
        if let Err(err) = setrlimit(Resource::Nofile, limit) {
            tracing::debug!("cannot raise the open-file limit: {err}");
        }
    }
}

/// Serves over stdio, or over Streamable HTTP with `--http`.
pub async fn serve(args: &ServeArgs) -> Result<()> {
    raise_open_file_limit();
    let shutdown = CancellationToken::new();
    let stats = Arc::new(Stats::default());
    let server = build_server(args, shutdown.clone(), stats.clone()).await?;
    tracing::info!(tools = server.tools().len(), "loaded");
    match args.http {
        Some(addr) => serve_http(server, args, addr, shutdown, stats).await,
        None => serve_stdio(server, shutdown, stats).await,
    }
}

async fn serve_http(
    server: ToolServer,
    args: &ServeArgs,
    addr: std::net::SocketAddr,
    shutdown: CancellationToken,
    stats: Arc<Stats>,
) -> Result<()> {
    // The file was read and checked in `build_server` already; this reads
    // its [server] table again for the HTTP limits.
    let limits = config::resolve(args)?.server;
    let options = http::HttpOptions {
        addr,
        allowed_hosts: args.http_allowed_hosts.clone(),
        allowed_origins: args.http_allowed_origins.clone(),
        max_sessions: limits.max_sessions as usize,
        idle_timeout: limits.http_idle_timeout,
        header_timeout: limits.http_header_timeout,
        body_timeout: limits.http_body_timeout,
        max_connections: limits.max_connections as usize,
    };
    let serving = http::serve(server, options, shutdown.clone());
    tokio::pin!(serving);
    tokio::select! {
        result = &mut serving => return result,
        () = shutdown::signal() => shutdown.cancel(),
    }
    drain_calls(&stats).await;
    Ok(())
}

/// Waits, bounded by [`SHUTDOWN_BUDGET`], for stopped calls to finish their cleanup.
async fn drain_calls(stats: &Stats) {
    let deadline = tokio::time::Instant::now() + SHUTDOWN_BUDGET;
    while stats.snapshot().live_calls > 0 && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    let left = stats.snapshot().live_calls;
    if left > 0 {
        tracing::warn!(calls = left, "exiting with calls still stopping");
    }
}

/// Serves over stdin/stdout until the client disconnects or a signal arrives.
/// Every in-flight call is stopped and cleaned up before this returns.
async fn serve_stdio(server: ToolServer, shutdown: CancellationToken, stats: Arc<Stats>) -> Result<()> {
    let input = EofWatch::new(tokio::io::stdin(), shutdown.clone());
    let running = tokio::select! {
        running = server.serve((input, tokio::io::stdout())) => {
            running.context("the MCP session did not start")?
        }
        () = shutdown::signal() => return Ok(()),
    };
    // Keep the session alive while calls stop: dropping it would make rmcp
    // cancel every request as if the client had, before shutdown is seen.
    let session = running.waiting();
    tokio::pin!(session);
    tokio::select! {
        quit = &mut session => {
            tracing::info!(reason = ?quit.ok(), "session ended");
        }
        () = shutdown::signal() => shutdown.cancel(),
    }
    // Whatever ended the session, stop what is still running and give the
    // calls a bounded time to stop and clean up.
    shutdown.cancel();
    drain_calls(&stats).await;
    Ok(())
}

/// `inspect`: loads a component and returns its tools as `tools/list` shows them.
pub async fn inspect(path: &std::path::Path) -> Result<serde_json::Value> {
    // The serving defaults, so the compiled artifact it caches is the one a
    // later `serve` with default flags loads.
    let cli = cli::Cli::parse_args(["mcp-wasm-host".as_ref(), "--component".as_ref(), path.as_os_str()])?;
    let args = cli.serve;
    let server = build_server(&args, CancellationToken::new(), Arc::default()).await?;
    Ok(serde_json::json!({ "tools": server.tools() }))
}
