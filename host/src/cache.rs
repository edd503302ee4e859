//! The compile cache: a component's compiled code, kept between runs so a
//! large component starts in milliseconds instead of seconds. Compiled code
//! runs unchecked, so the cache is used only when nobody but this user can
//! have written it.

use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};

use anyhow::Result;
use sha2::{Digest, Sha256};
use wasmtime::Engine;
use wasmtime::component::Component;

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

    /// The artifact compiled earlier for `bytes` by an engine like
    /// `engine`, if the cache has a usable one. Never compiles.
    pub fn cached(&self, engine: &Engine, bytes: &[u8]) -> Option<Component> {
        let path = self.artifact_path(engine, bytes)?;
        match trusted_file(&path) {
            Ok(true) => {
                // SAFETY: the file is a regular file owned by this user in a
                // directory only this user can write (checked by
                // `artifact_path`), written by `Component::serialize`; its
                // name is the digest of the component's bytes and of the
                // engine's compatibility hash, so it is this component for
                // this engine. wasmtime also checks the header and refuses
                // incompatible artifacts.
                match unsafe { Component::deserialize_file(engine, &path) } {
                    Ok(component) => return Some(component),
                    Err(err) => {
                        tracing::warn!(path = %path.display(), "ignoring unusable cached artifact: {err:#}")
                    }
                }
            }
            Ok(false) => {}
            Err(err) => tracing::warn!(path = %path.display(), "ignoring cached artifact: {err:#}"),
        }
        None
    }

    /// Compiles `bytes` with `engine` and stores the artifact for next time.
    pub fn compile(&self, engine: &Engine, bytes: &[u8]) -> Result<(Component, CacheOutcome)> {
        let component = Component::new(engine, bytes)?;
        let Some(path) = self.artifact_path(engine, bytes) else {
            return Ok((component, CacheOutcome::Disabled));
        };
        if let Err(err) = store_artifact(&path, &component) {
            // A read-only or full cache directory must not stop the host.
            tracing::warn!(path = %path.display(), "cannot write the compile cache: {err:#}");
        }
        Ok((component, CacheOutcome::Miss))
    }

    /// Where the artifact of `bytes` for `engine` is kept; `None` when
    /// caching is off or the directory cannot be trusted.
    fn artifact_path(&self, engine: &Engine, bytes: &[u8]) -> Option<PathBuf> {
        let CompileCache::Dir(dir) = self else { return None };
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
    let bytes = component.serialize()?;
    let dir = path.parent().unwrap_or(Path::new("."));
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
