//! The compile cache: a component's compiled code, kept between runs so a
//! large component starts in milliseconds instead of seconds. Compiled code
//! runs unchecked, so the cache is used only when nobody but this user can
//! have written it, and an artifact is loaded only when its checksum
//! matches ([`artifact`]); one that does not is compiled and written anew.

use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use anyhow::Result;
use sha2::{Digest, Sha256};
use wasmtime::Engine;
use wasmtime::component::Component;

mod artifact;

/// Where compiled components are kept between runs.
#[derive(Clone, Debug)]
pub enum CompileCache {
    /// No caching: compile on every start.
    Disabled,
    /// Compiled artifacts live in `dir`; the oldest are removed when they
    /// add up to more than `max_size` bytes.
    Dir {
        /// The directory (made `0700` if missing).
        dir: PathBuf,
        /// Bytes of artifacts kept; the one just written is always kept.
        max_size: u64,
    },
}

/// A `.tmp` file this old was left by a host that died while writing it.
const STALE_TMP: Duration = Duration::from_secs(3600);

impl CompileCache {
    /// `$XDG_CACHE_HOME/mcp-wasm-host`, or `~/.cache/mcp-wasm-host`.
    pub fn default_dir() -> Option<PathBuf> {
        std::env::var_os("XDG_CACHE_HOME")
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|home| Path::new(&home).join(".cache")))
            .map(|base| base.join("mcp-wasm-host"))
    }

    /// The artifact compiled earlier for `bytes` by an engine like
    /// `engine`, if the cache has a usable one. Never compiles.
    pub fn cached(&self, engine: &Engine, bytes: &[u8]) -> Option<Component> {
        let path = self.artifact_path(engine, bytes)?;
        match trusted_file(&path) {
            Ok(true) => {}
            Ok(false) => return None,
            Err(err) => {
                tracing::warn!(path = %path.display(), "ignoring cached artifact: {err:#}");
                return None;
            }
        }
        if let Err(err) = artifact::check(&path) {
            // Compiled again, and the artifact written anew.
            tracing::warn!(path = %path.display(), "ignoring damaged cached artifact, recompiling: {err}");
            return None;
        }
        // SAFETY: the file is a regular file owned by this user in a
        // directory only this user can write (checked by `artifact_path`),
        // and its checksum matches: these are the bytes
        // `Component::serialize` wrote. Its name is the digest of the
        // component's bytes and of the engine's compatibility hash, so it
        // is this component for this engine. wasmtime also checks the
        // header and refuses incompatible artifacts. It maps the file
        // rather than copying it: the code's pages are read in as they
        // run, and shared with other hosts that map the same artifact. A
        // new artifact for the same name is renamed over this one
        // (`store_artifact`) and pruning unlinks, so the mapped inode is
        // never written or cut short.
        match unsafe { Component::deserialize_file(engine, &path) } {
            Ok(component) => {
                // Used artifacts are the newest, so pruning removes the
                // least recently used first.
                touch(&path);
                Some(component)
            }
            Err(err) => {
                tracing::warn!(path = %path.display(), "ignoring unusable cached artifact: {err:#}");
                None
            }
        }
    }

    /// Compiles `bytes` with `engine` and stores the artifact for next time.
    pub fn compile(&self, engine: &Engine, bytes: &[u8]) -> Result<(Component, CacheOutcome)> {
        let component = Component::new(engine, bytes)?;
        let Some(path) = self.artifact_path(engine, bytes) else {
            return Ok((component, CacheOutcome::Disabled));
        };
        match store_artifact(&path, &component) {
            Ok(()) => {
                if let CompileCache::Dir { dir, max_size } = self {
                    prune(dir, *max_size, &path);
                }
            }
            // A read-only or full cache directory must not stop the host.
            Err(err) => tracing::warn!(path = %path.display(), "cannot write the compile cache: {err:#}"),
        }
        Ok((component, CacheOutcome::Miss))
    }

    /// Where the artifact of `bytes` for `engine` is kept; `None` when
    /// caching is off or the directory cannot be trusted.
    fn artifact_path(&self, engine: &Engine, bytes: &[u8]) -> Option<PathBuf> {
        let CompileCache::Dir { dir, .. } = self else { return None };
        // Cached native code runs unchecked, so the cache is used only when
        // nobody but this user can have written it.
        if let Err(err) = trusted_dir(dir) {
            tracing::warn!(dir = %dir.display(), "not using the compile cache: {err:#}");
            return None;
        }
        Some(dir.join(format!("{}.cwasm", cache_key(engine, bytes))))
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
    // The artifact's format is part of its name: a host that writes
    // another one (an older host, sharing the directory) keeps its own
    // file instead of overwriting this one on every start.
    hasher.0.update(artifact::TAG);
    hasher.0.update(bytes);
    hex::encode(hasher.0.finalize())
}

/// Makes the cache directory if needed (mode 0700), and checks that it is a
/// real directory (not a symlink) owned by this user and not writable by
/// its group or others.
pub(crate) fn trusted_dir(dir: &Path) -> Result<()> {
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

fn store_artifact(path: &Path, component: &Component) -> Result<()> {
    use std::io::Write as _;
    use std::os::unix::fs::OpenOptionsExt as _;
    let bytes = artifact::seal(component.serialize()?);
    let dir = path.parent().unwrap_or(Path::new("."));
    // Write then rename, so a concurrent start never reads a half-written
    // file; readable by this user only.
    let tmp =
        dir.join(format!(".{}.tmp{}", path.file_name().unwrap_or_default().display(), std::process::id()));
    let mut file = std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(&tmp)?;
    let written = file.write_all(&bytes).and_then(|()| std::fs::rename(&tmp, path));
    if written.is_err() {
        // A full disk must not also keep the half-written file.
        let _ = std::fs::remove_file(&tmp);
    }
    Ok(written?)
}

/// Marks an artifact as just used. Best effort: a cache on a read-only
/// mount still serves its artifacts.
fn touch(path: &Path) {
    let now = SystemTime::now();
    if let Err(err) = std::fs::File::options().write(true).open(path).and_then(|file| file.set_modified(now))
    {
        tracing::debug!(path = %path.display(), "cannot mark the cached artifact used: {err}");
    }
}

/// Removes the least recently used artifacts in `dir` until those left add
/// up to `max_size` bytes or less, never `keep`; and `.tmp` files that a
/// host died writing. Only this cache's own files are touched (`oci/` and
/// anything else in the directory stay). Another host may prune the same
/// directory at once: a file already gone is fine, and a removed artifact
/// still mapped by a running host stays valid for it.
fn prune(dir: &Path, max_size: u64, keep: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    let now = SystemTime::now();
    let mut artifacts = Vec::new();
    let mut total = 0u64;
    for entry in entries.flatten() {
        let path = entry.path();
        let Ok(meta) = std::fs::symlink_metadata(&path) else { continue };
        if !meta.is_file() {
            continue;
        }
        let modified = meta.modified().unwrap_or(now);
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if name.starts_with('.') && name.contains(".cwasm.tmp") {
            if now.duration_since(modified).is_ok_and(|age| age > STALE_TMP) {
                let _ = std::fs::remove_file(&path);
            }
        } else if name.ends_with(".cwasm") {
            total += meta.len();
            if path != keep {
                artifacts.push((modified, meta.len(), path));
            }
        }
    }
    if total <= max_size {
        return;
    }
    artifacts.sort_by_key(|(modified, ..)| *modified);
    let (mut removed, mut freed) = (0usize, 0u64);
    for (_, len, path) in artifacts {
        if total <= max_size {
            break;
        }
        match std::fs::remove_file(&path) {
            Ok(()) => (removed, freed) = (removed + 1, freed + len),
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => {}
            Err(err) => {
                tracing::warn!(path = %path.display(), "cannot prune the compile cache: {err}");
                continue;
            }
        }
        total -= len;
    }
    tracing::info!(dir = %dir.display(), removed, freed_bytes = freed, kept_bytes = total, max_size, "compile cache pruned");
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

    /// Writes `len` bytes at `name` in `dir`, last modified `age` ago.
    fn file_aged(dir: &Path, name: &str, len: usize, age: u64) -> PathBuf {
        let path = dir.join(name);
        std::fs::write(&path, vec![0u8; len]).unwrap();
        let when = SystemTime::now() - Duration::from_secs(age);
        std::fs::File::options().write(true).open(&path).unwrap().set_modified(when).unwrap();
        path
    }

    #[test]
    fn pruning_removes_the_least_recently_used_artifacts_and_nothing_else() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path();
        let oldest = file_aged(dir, "a.cwasm", 100, 400);
        let old = file_aged(dir, "b.cwasm", 100, 300);
        let used = file_aged(dir, "c.cwasm", 100, 200);
        let new = file_aged(dir, "d.cwasm", 100, 0);
        // Not this cache's artifacts: another file, a pulled component.
        let other = file_aged(dir, "notes.txt", 1000, 500);
        std::fs::create_dir(dir.join("oci")).unwrap();
        let pulled = file_aged(&dir.join("oci"), "x.cwasm", 1000, 500);
        // Left by a host that died writing, and one being written now.
        let stale = file_aged(dir, ".e.cwasm.tmp41", 100, 7200);
        let writing = file_aged(dir, ".f.cwasm.tmp42", 100, 1);
        touch(&used);

        prune(dir, 250, &new);
        let left = |path: &PathBuf| path.exists();
        assert!(!left(&oldest) && !left(&old), "the two least recently used go");
        assert!(left(&used) && left(&new), "the one just used and the one just written stay");
        assert!(left(&other) && left(&pulled) && left(&writing));
        assert!(!left(&stale), "a stale .tmp goes");

        // The one just written stays even when it alone is over the size.
        prune(dir, 50, &new);
        assert!(!left(&used) && left(&new));
    }
}
