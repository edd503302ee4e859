//! The wasmtime engine shared by every component and call, and the epoch
//! ticker that lets the host take control back from running guests.

use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::thread;
use std::time::Duration;

use anyhow::{Context as _, Result};
use sha2::{Digest, Sha256};
use wasmtime::component::Component;
use wasmtime::{Config, Engine, InstanceAllocationStrategy, PoolingAllocationConfig};

use crate::sandbox::{MAX_CORE_INSTANCES, MAX_MEMORIES, MAX_TABLES};

/// How often the epoch advances. A computing guest yields to the runtime at
/// each tick; cancellation does not wait for it (the canceller bumps the
/// epoch itself), so this only bounds how long a guest can hog a thread.
pub const EPOCH_TICK: Duration = Duration::from_millis(1);

/// Engine-wide settings from the command line.
#[derive(Clone, Debug)]
pub struct EngineSettings {
    /// Largest linear memory any call may have, in bytes.
    pub max_memory: usize,
    /// Wasm stack per call, in bytes.
    pub max_stack: usize,
    /// Calls (and cleanups) that may be in flight at once.
    pub max_concurrent_calls: u32,
    /// Whether compiled code counts fuel. Off (`--fuel 0`) leaves epoch
    /// interruption as the only brake on a computing guest, which is faster.
    pub fuel_metering: bool,
}

/// Builds the engine: async calls, fuel, epoch interruption and the pooling
/// allocator (a call's store and instance then cost tens of microseconds).
pub fn build_engine(settings: &EngineSettings) -> Result<Engine> {
    let mut config = Config::new();
    config
        .epoch_interruption(true)
        .consume_fuel(settings.fuel_metering)
        .max_wasm_stack(settings.max_stack)
        // The async fiber stack also has to hold the host functions the guest
        // calls into, on top of the wasm stack.
        .async_stack_size(settings.max_stack + (1 << 20))
        // Component-model async is not used: turning its bookkeeping off
        // roughly halves the per-call cost of a store and instance.
        .concurrency_support(false);

    let slots = settings.max_concurrent_calls;
    let mut pool = PoolingAllocationConfig::default();
    pool.total_component_instances(slots)
        // Per component: what one call's store may hold (`sandbox`); a
        // component that needs more is refused when it loads.
        .max_memories_per_component(MAX_MEMORIES as u32)
        .max_tables_per_component(MAX_TABLES as u32)
        .max_core_instances_per_component(MAX_CORE_INSTANCES as u32)
        // A Rust component has a handful of core instances (the module, the
        // WASI adapter, shims); leave room for larger ones.
        .total_core_instances(slots * 16)
        .total_memories(slots * 4)
        .total_tables(slots * 8)
        .total_stacks(slots)
        .max_memory_size(round_up_to_page(settings.max_memory) + WASM_PAGE)
        .decommit_batch_size(16)
        .async_stack_keep_resident(64 << 10)
        .table_keep_resident(16 << 10)
        .linear_memory_keep_resident(4 << 20)
        // Reuse warm slots (least recently used first) instead of touching
        // cold ones: with resident memory kept per slot, the process's RSS
        // then follows the peak number of concurrent calls, not the pool size.
        .max_unused_warm_slots(8)
        .pagemap_scan(wasmtime::Enabled::Auto);
    config.allocation_strategy(InstanceAllocationStrategy::Pooling(pool));

    Engine::new(&config).map_err(anyhow::Error::from).context("cannot configure the wasmtime engine")
}

const WASM_PAGE: usize = 64 << 10;

fn round_up_to_page(bytes: usize) -> usize {
    bytes.div_ceil(WASM_PAGE) * WASM_PAGE
}

/// Advances the engine's epoch every [`EPOCH_TICK`] for the life of the
/// process. A plain thread: it must keep ticking even if every runtime
/// worker is busy running guests.
pub fn start_epoch_ticker(engine: &Engine) {
    let engine = engine.weak();
    thread::Builder::new()
        .name("epoch-ticker".into())
        .spawn(move || {
            while let Some(engine) = engine.upgrade() {
                engine.increment_epoch();
                drop(engine);
                thread::sleep(EPOCH_TICK);
            }
        })
        .expect("spawning the epoch ticker thread");
}

/// Where compiled components are kept between runs.
#[derive(Clone, Debug)]
pub enum CompileCache {
    /// No caching: compile on every start.
    Disabled,
    /// Compiled artifacts live in this directory.
    Dir(PathBuf),
}

impl CompileCache {
    /// `$XDG_CACHE_HOME/mcp-wasm-host`, or `~/.cache/mcp-wasm-host`.
    pub fn default_dir() -> Option<PathBuf> {
        std::env::var_os("XDG_CACHE_HOME")
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|home| Path::new(&home).join(".cache")))
            .map(|base| base.join("mcp-wasm-host"))
    }

    /// Compiles `bytes`, or loads the artifact compiled earlier for the same
    /// bytes by an engine with the same settings and wasmtime version.
    pub fn load(&self, engine: &Engine, bytes: &[u8]) -> Result<(Component, CacheOutcome)> {
        let CompileCache::Dir(dir) = self else {
            return Ok((Component::new(engine, bytes)?, CacheOutcome::Disabled));
        };
        // Cached native code runs unchecked, so the cache is used only when
        // nobody but this user can have written it.
        if let Err(err) = trusted_dir(dir) {
            tracing::warn!(dir = %dir.display(), "not using the compile cache: {err:#}");
            return Ok((Component::new(engine, bytes)?, CacheOutcome::Disabled));
        }
        let path = dir.join(format!("{}.cwasm", cache_key(engine, bytes)));
        match trusted_file(&path) {
            Ok(true) => {
                // SAFETY: the file is a regular file owned by this user in a
                // directory only this user can write (checked just above),
                // written by `Component::serialize`; its name is the digest
                // of the component's bytes and of the engine's compatibility
                // hash, so it is this component for this engine. wasmtime
                // also checks the header and refuses incompatible artifacts.
                match unsafe { Component::deserialize_file(engine, &path) } {
                    Ok(component) => return Ok((component, CacheOutcome::Hit)),
                    Err(err) => {
                        tracing::warn!(path = %path.display(), "ignoring unusable cached artifact: {err:#}")
                    }
                }
            }
            Ok(false) => {}
            Err(err) => tracing::warn!(path = %path.display(), "ignoring cached artifact: {err:#}"),
        }
        let component = Component::new(engine, bytes)?;
        if let Err(err) = store_artifact(dir, &path, &component) {
            // A read-only or full cache directory must not stop the host.
            tracing::warn!(dir = %dir.display(), "cannot write the compile cache: {err:#}");
        }
        Ok((component, CacheOutcome::Miss))
    }
}

/// Whether a component came from the compile cache.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CacheOutcome {
    /// Loaded from the cache; no compilation.
    Hit,
    /// Compiled, and stored for next time.
    Miss,
    /// Compiled; caching is off.
    Disabled,
}

fn cache_key(engine: &Engine, bytes: &[u8]) -> String {
    struct ShaHasher(Sha256);
    impl Hasher for ShaHasher {
        fn finish(&self) -> u64 {
            unreachable!("only used to feed the digest")
        }
        fn write(&mut self, bytes: &[u8]) {
            self.0.update(bytes);
        }
    }
    let mut hasher = ShaHasher(Sha256::new());
    engine.precompile_compatibility_hash().hash(&mut hasher);
    hasher.0.update(bytes);
    let digest = hasher.0.finalize();
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

/// Makes the cache directory if needed (mode 0700), and checks that it is a
/// real directory (not a symlink) owned by this user and not writable by
/// its group or others.
fn trusted_dir(dir: &Path) -> Result<()> {
    use std::os::unix::fs::DirBuilderExt as _;
    if !dir.exists() {
        std::fs::DirBuilder::new().recursive(true).mode(0o700).create(dir)?;
    }
    let meta = std::fs::symlink_metadata(dir)?;
    if !meta.is_dir() {
        anyhow::bail!("it is not a directory (or it is a symlink)");
    }
    owned_and_private(&meta)
}

/// Whether a cached artifact exists and may be loaded: `Ok(false)` when
/// there is none, an error when there is one nobody should trust.
fn trusted_file(path: &Path) -> Result<bool> {
    let meta = match std::fs::symlink_metadata(path) {
        Ok(meta) => meta,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(false),
        Err(err) => return Err(err.into()),
    };
    if !meta.is_file() {
        anyhow::bail!("it is not a regular file (or it is a symlink)");
    }
    owned_and_private(&meta)?;
    Ok(true)
}

fn owned_and_private(meta: &std::fs::Metadata) -> Result<()> {
    use std::os::unix::fs::MetadataExt as _;
    let me = rustix::process::geteuid().as_raw();
    if meta.uid() != me {
        anyhow::bail!("it is owned by user {}, not by this user ({me})", meta.uid());
    }
    if meta.mode() & 0o022 != 0 {
        anyhow::bail!("its group or others may write to it (mode {:o})", meta.mode() & 0o7777);
    }
    Ok(())
}

fn store_artifact(dir: &Path, path: &Path, component: &Component) -> Result<()> {
    use std::io::Write as _;
    use std::os::unix::fs::OpenOptionsExt as _;
    let bytes = component.serialize()?;
    // Write then rename, so a concurrent start never reads a half-written
    // file; readable by this user only.
    let tmp =
        dir.join(format!(".{}.tmp{}", path.file_name().unwrap_or_default().display(), std::process::id()));
    let mut file = std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(&tmp)?;
    file.write_all(&bytes)?;
    drop(file);
    std::fs::rename(&tmp, path)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt as _;

    #[test]
    fn the_cache_is_made_private_and_refused_when_others_can_write_it() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("cache");
        trusted_dir(&dir).unwrap();
        assert_eq!(std::fs::metadata(&dir).unwrap().permissions().mode() & 0o777, 0o700);
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).unwrap();
        let err = trusted_dir(&dir).unwrap_err().to_string();
        assert!(err.contains("may write"), "{err}");
        let link = root.path().join("link");
        std::os::unix::fs::symlink(&dir, &link).unwrap();
        assert!(trusted_dir(&link).unwrap_err().to_string().contains("symlink"));
    }

    #[test]
    fn a_planted_artifact_is_never_loaded() {
        let root = tempfile::tempdir().unwrap();
        let file = root.path().join("x.cwasm");
        assert!(!trusted_file(&file).unwrap(), "no artifact yet");
        std::fs::write(&file, b"planted").unwrap();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o666)).unwrap();
        assert!(trusted_file(&file).is_err(), "world-writable");
        std::fs::remove_file(&file).unwrap();
        std::os::unix::fs::symlink("/etc/passwd", &file).unwrap();
        assert!(trusted_file(&file).is_err(), "a symlink");
        std::fs::remove_file(&file).unwrap();
        std::fs::write(&file, b"planted").unwrap();
        // Giving a file away takes root (as in CI); a user's run checks the rest.
        if std::os::unix::fs::chown(&file, Some(4242), None).is_ok() {
            let err = trusted_file(&file).unwrap_err().to_string();
            assert!(err.contains("owned by user 4242"), "{err}");
        }
    }
}
