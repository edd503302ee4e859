//! Stage 3 of start-up: `oci://` components pulled and checked, then every
//! component loaded into the server, in order.

use anyhow::{Context as _, Result};

use crate::cache::CompileCache;
use crate::config::{self, ComponentSettings, Settings};
use crate::loader::Loader;
use crate::mcp::ToolServer;
use crate::{log_text, registry};

/// Where `component` was configured, for messages: its `--config` entry,
/// or the command line.
pub(super) fn origin_of(component: &ComponentSettings) -> String {
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
    let shared =
        settings.components.iter().filter(|c| c.selection.shared).filter_map(|c| c.selection.tools.as_ref());
    let offered = |name: &String| components.iter().any(|c| c.tools.iter().any(|t| t.guest_name == *name));
    if let Some(missing) = shared.flatten().find(|name| !offered(name)) {
        anyhow::bail!("--tools names `{}`, which no component offers", log_text::escaped(missing));
    }
    server.finish_loading(components, started.elapsed())
}

/// Pulls every `oci://` component (and checks its signature) before
/// anything is loaded, pointing its settings at the checked file.
pub(crate) async fn pull_components(settings: &mut Settings) -> Result<Vec<registry::Pulled>> {
    let options = registry_options(&settings.server);
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
pub(super) fn registry_options(server: &config::ServerSettings) -> Option<registry::RegistryOptions> {
    let copies_dir = server.cache_dir.clone().or_else(CompileCache::default_dir)?.join("oci");
    Some(registry::RegistryOptions {
        copies_dir,
        insecure: server.insecure_registries.clone(),
        timeout: server.registry_timeout,
        max_component_size: server.max_component_size,
    })
}
