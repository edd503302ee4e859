//! `--watch`: a new version of a component is served without a restart.
//!
//! Component files are checked every `--watch-interval` (size, time and
//! inode first, then the bytes' hash, so a rewrite with the same content
//! does nothing); an `oci://` tag is resolved again every
//! `--watch-tag-interval`, and pulled (and its signature checked) when it
//! points elsewhere. A digest-pinned reference never changes and is not
//! watched.
//!
//! The new version is loaded and checked beside the old one exactly as at
//! start, then swapped in for new calls ([`ToolServer::replace_component`]);
//! calls in flight keep the component they were routed to and finish on
//! it. Clients are told with `notifications/tools/list_changed`. A version
//! that fails to load, breaks the contract, or clashes on tool names is
//! refused with a `reload refused` log line, and the old one keeps serving.

use std::path::Path;
use std::time::{Duration, Instant, SystemTime};

use sha2::{Digest as _, Sha256};
use tokio_util::sync::CancellationToken;

use crate::config::ComponentSettings;
use crate::loader::Loader;
use crate::log_text::error_chain;
use crate::mcp::ToolServer;
use crate::registry::{self, RegistryOptions};

/// How often to look, and how to reach registries.
pub struct WatchOptions {
    /// Between two checks of the component files.
    pub file_interval: Duration,
    /// Between two resolutions of each `oci://` tag.
    pub tag_interval: Duration,
    /// Where pulled components are kept; `None` without a cache directory.
    pub registry: Option<RegistryOptions>,
}

/// A component being watched: its place in the server and its settings.
struct Watched {
    index: usize,
    settings: ComponentSettings,
    /// What was last seen: the file's stamp and the hash of its bytes, or
    /// for a tag, the file in the store it pointed to.
    stamp: Option<(u64, SystemTime, u64)>,
    hash: [u8; 32],
    /// The hash of the version serving now, for the audit log's reload record.
    served: [u8; 32],
    /// For a tag: why the last check failed, so the same refusal is
    /// logged once, not at every check.
    refused: Option<String>,
}

/// Starts watching `components` (in configuration order) until `shutdown`.
pub fn spawn(
    server: ToolServer,
    loader: Loader,
    components: Vec<ComponentSettings>,
    options: WatchOptions,
    shutdown: CancellationToken,
) {
    let (mut files, mut tags) = (Vec::new(), Vec::new());
    for (index, settings) in components.into_iter().enumerate() {
        let (stamp, hash) = (stamp_of(&settings.path), hash_of(&settings.path).unwrap_or_default());
        let watched = Watched { index, settings, stamp, hash, served: hash, refused: None };
        match &watched.settings.oci {
            None => files.push(watched),
            Some(reference) if registry::is_tag(reference) => tags.push(watched),
            Some(_) => {}
        }
    }
    tracing::info!(files = files.len(), tags = tags.len(), "watching components for new versions");
    if !files.is_empty() {
        let (server, loader, shutdown) = (server.clone(), loader.clone(), shutdown.clone());
        tokio::spawn(async move {
            while tick(options.file_interval, &shutdown).await {
                for watched in &mut files {
                    if file_changed(watched) {
                        reload(&server, &loader, watched).await;
                    }
                }
            }
        });
    }
    if let (false, Some(registry)) = (tags.is_empty(), options.registry) {
        tokio::spawn(async move {
            while tick(options.tag_interval, &shutdown).await {
                for watched in &mut tags {
                    if tag_moved(watched, &registry).await {
                        reload(&server, &loader, watched).await;
                    }
                }
            }
        });
    }
}

/// Waits `interval`; false once the host shuts down.
async fn tick(interval: Duration, shutdown: &CancellationToken) -> bool {
    tokio::select! {
        () = shutdown.cancelled() => false,
        () = tokio::time::sleep(interval) => true,
    }
}

/// Whether the file holds other bytes than last seen (each new content is
/// tried once, whether or not it loads).
fn file_changed(watched: &mut Watched) -> bool {
    let stamp = stamp_of(&watched.settings.path);
    if stamp == watched.stamp {
        return false;
    }
    watched.stamp = stamp;
    match hash_of(&watched.settings.path) {
        Some(hash) if hash != watched.hash => {
            watched.hash = hash;
            true
        }
        _ => false,
    }
}

/// Whether the tag now points at another component; pulls it (and checks
/// its signature) if so. A registry that cannot be reached changes nothing.
async fn tag_moved(watched: &mut Watched, options: &RegistryOptions) -> bool {
    let Some(reference) = watched.settings.oci.clone() else { return false };
    let key = watched.settings.signature_key.clone();
    match registry::pull(&reference, key.as_deref(), options).await {
        Ok(pulled) if pulled.path != watched.settings.path => {
            tracing::info!(reference, digest = pulled.digest, "the tag moved");
            watched.hash = hash_of(&pulled.path).unwrap_or_default();
            watched.settings.path = pulled.path;
            watched.refused = None;
            true
        }
        Ok(_) => {
            watched.refused = None;
            false
        }
        Err(err) => {
            // The registry's words are in the chain: escaped and cut.
            let reason = error_chain(&err).to_string();
            if watched.refused.as_ref() != Some(&reason) {
                tracing::warn!(reference, reason, "reload refused; the old version keeps serving");
            } else {
                tracing::debug!(reference, "the tag still points at a refused version");
            }
            watched.refused = Some(reason);
            false
        }
    }
}

/// Loads the new version beside the old and swaps it in; logs and keeps
/// the old one if anything is wrong with it.
async fn reload(server: &ToolServer, loader: &Loader, watched: &mut Watched) {
    let shown = watched.settings.oci.clone().unwrap_or_else(|| watched.settings.path.display().to_string());
    let started = Instant::now();
    let swapped = match loader.load(&watched.settings, server.runner()).await {
        Ok(component) => server.replace_component(watched.index, component),
        Err(err) => Err(err),
    };
    let audit = server.runner().stats().audit();
    audit.reload(&shown, watched.served, watched.hash, swapped.is_ok()).await;
    match swapped {
        Ok(tools) => {
            watched.served = watched.hash;
            tracing::info!(
                component = shown,
                tools = tools.join(","),
                elapsed_ms = started.elapsed().as_secs_f64() * 1e3,
                "component reloaded"
            );
            // A new version loaded from baseline code gets optimized code later.
            loader.spawn_optimize(server, watched.index);
            server.notify_tools_changed().await;
        }
        Err(err) => {
            // The chain quotes the new version (its tool names): escaped and cut.
            let reason = error_chain(&err);
            tracing::warn!(component = shown, %reason, "reload refused; the old version keeps serving")
        }
    }
}

/// Size, modification time and inode: a cheap first look.
fn stamp_of(path: &Path) -> Option<(u64, SystemTime, u64)> {
    use std::os::unix::fs::MetadataExt as _;
    let meta = std::fs::metadata(path).ok()?;
    Some((meta.len(), meta.modified().ok()?, meta.ino()))
}

fn hash_of(path: &Path) -> Option<[u8; 32]> {
    std::fs::read(path).ok().map(|bytes| Sha256::digest(&bytes).into())
}
