//! Start-up, in the order it happens, one stage a file:
//!
//! 1. the settings: the command line merged with `--config`
//!    ([`crate::config::resolve`]); nothing after this reads the command line;
//! 2. [`runtime`]: what calls run on — the engine and its instance pool,
//!    the compile cache, guest threads, the call runner and the server
//!    that will hold the components;
//! 3. [`components`]: `oci://` components pulled and checked, then every
//!    component compiled and loaded (while the protocol is already answered);
//! 4. [`transport`]: stdio or Streamable HTTP, until the client leaves or a
//!    signal comes.
//!
//! `mcp-wasm-host call` and `inspect` run stages 1 to 3 in this process
//! and talk to the server themselves.

use std::sync::Arc;

use anyhow::Result;
use tokio_util::sync::CancellationToken;

use crate::config::ServeArgs;
use crate::config::{self, Settings};
use crate::sandbox::descriptors;
use crate::stats::Stats;
use crate::{audit, watch};

mod components;
mod runtime;
mod transport;
pub(crate) use components::{load_components, pull_components};
pub(crate) use runtime::build_server;

/// Serves over stdio, or over Streamable HTTP with `--http`.
pub async fn serve(args: &ServeArgs) -> Result<()> {
    descriptors::raise_limit();
    // Before anything slow: a signal during loading must not kill the process.
    let signals = crate::transport::signal::Signals::listen();
    let shutdown = CancellationToken::new();
    let settings = config::resolve(args)?;
    if settings.server.auth.is_some() && settings.server.http.is_none() {
        anyhow::bail!(
            "--auth-issuer (or [server.auth]) works only with --http: over stdio the client's \
             credentials come from the environment, as the MCP specification has it"
        );
    }
    let stats = Stats::default();
    let audit = audit::AuditLog::open(&settings, stats.metrics())?;
    let stats = Arc::new(stats.with_audit(audit));
    let served = serve_with(settings, signals, shutdown, stats.clone()).await;
    stats.audit().stop(served.is_ok()).await;
    served
}

/// [`serve`], once the settings are resolved and the audit log is open.
async fn serve_with(
    mut settings: Settings,
    signals: crate::transport::signal::Signals,
    shutdown: CancellationToken,
    stats: Arc<Stats>,
) -> Result<()> {
    let limits = settings.server.clone();
    let task_store = runtime::connect_task_store(&settings.server).await?;
    let (server, loader) = build_server(&mut settings, shutdown.clone(), stats.clone(), task_store)?;
    // The protocol is answered while the components are pulled and load: a
    // pull may take up to --registry-timeout and a cold compile seconds,
    // and a client's first request must not wait for either.
    let serving = transport::serve(&limits, server.clone(), signals, shutdown.clone(), stats);
    tokio::pin!(serving);
    let loading = async {
        pull_components(&mut settings).await?;
        load_components(&server, &loader, &settings).await
    };
    tokio::select! {
        // The client left, or a signal came, before the components loaded.
        served = &mut serving => return served,
        // A component that cannot be loaded stops the host with its message.
        loaded = loading => loaded?,
    }
    // What start-up ran once stops counting as the host's memory.
    crate::code_pages::unmap_run_once_code();
    // Components loaded from baseline code get optimized code in the background.
    loader.spawn_optimize_all(&server);
    if limits.watch {
        let options = watch::WatchOptions {
            file_interval: limits.watch_interval,
            tag_interval: limits.watch_tag_interval,
            registry: components::registry_options(&limits),
        };
        watch::spawn(server.clone(), loader, settings.components, options, shutdown);
    }
    serving.await
}
