//! What was pulled, kept by digest in `CACHE/oci/`: `manifests/sha256-HEX.json`,
//! `blobs/sha256-HEX.wasm` (the component layer) and `signatures/sha256-HEX.json`
//! (a signature that verified, checked again on every offline start).
//!
//! These copies are trusted as the compile cache is — a directory only this user
//! can write — and still every read is hashed against the digest that names
//! it, so a file damaged on disk is pulled again, never loaded.

use std::path::{Path, PathBuf};

use anyhow::{Context as _, Result};

use super::oci::{Manifest, sha256};
use super::signature::Signed;
use crate::cache::trusted_dir;

/// The copies' directory, checked.
pub struct Copies {
    dir: PathBuf,
}

impl Copies {
    /// Opens (makes, mode 0700) the store at `dir`, refusing one others may write.
    pub fn open(dir: &Path) -> Result<Copies> {
        for sub in ["manifests", "blobs", "signatures"] {
            trusted_dir(&dir.join(sub))
                .with_context(|| format!("the component store {} cannot be used", dir.display()))?;
        }
        trusted_dir(dir).with_context(|| format!("the component store {} cannot be used", dir.display()))?;
        Ok(Copies { dir: dir.to_owned() })
    }

    /// The component file for manifest `digest`, if the manifest and its
    /// layer are in the store and hash to their digests.
    pub fn component(&self, digest: &str) -> Result<Option<PathBuf>> {
        let Some(raw) = read(&self.file("manifests", digest, "json"))? else {
            return Ok(None);
        };
        if sha256(&raw) != digest {
            tracing::warn!(digest, "a stored manifest does not match its digest; pulling it again");
            return Ok(None);
        }
        let image = serde_json::from_slice(&raw).context("a stored manifest")?;
        let manifest = Manifest { digest: digest.into(), raw, image };
        let layer = manifest.component_layer()?;
        let path = self.file("blobs", &layer.digest, "wasm");
        match read(&path)? {
            Some(bytes) if sha256(&bytes) == layer.digest => Ok(Some(path)),
            Some(_) => {
                tracing::warn!(digest, "a stored component does not match its digest; pulling it again");
                Ok(None)
            }
            None => Ok(None),
        }
    }

    /// Keeps a pulled component; returns its file.
    pub fn put_component(&self, digest: &str, raw: &[u8], layer: &str, bytes: &[u8]) -> Result<PathBuf> {
        let path = self.file("blobs", layer, "wasm");
        write(&path, bytes)?;
        // The manifest last: its presence says the whole component is here.
        write(&self.file("manifests", digest, "json"), raw)?;
        Ok(path)
    }

    /// The signature kept for manifest `digest`, if any.
    pub fn signature(&self, digest: &str) -> Result<Option<Signed>> {
        let Some(raw) = read(&self.file("signatures", digest, "json"))? else {
            return Ok(None);
        };
        Ok(serde_json::from_slice(&raw).ok())
    }

    /// Keeps a signature that verified for manifest `digest`.
    pub fn put_signature(&self, digest: &str, signed: &Signed) -> Result<()> {
        write(&self.file("signatures", digest, "json"), &serde_json::to_vec(signed)?)
    }

    fn file(&self, kind: &str, digest: &str, extension: &str) -> PathBuf {
        // Digests were checked to be `sha256:` and hex before they get here.
        self.dir.join(kind).join(format!("{}.{extension}", digest.replace(':', "-")))
    }
}

/// The file's bytes, `None` if it does not exist.
fn read(path: &Path) -> Result<Option<Vec<u8>>> {
    match std::fs::read(path) {
        Ok(bytes) => Ok(Some(bytes)),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(err) => Err(err).with_context(|| format!("cannot read {}", path.display())),
    }
}

/// Writes then renames, so a concurrent start never reads half a file;
/// readable by this user only.
fn write(path: &Path, bytes: &[u8]) -> Result<()> {
    use std::io::Write as _;
    use std::os::unix::fs::OpenOptionsExt as _;
    let name = path.file_name().unwrap_or_default().display();
    let tmp = path.with_file_name(format!(".{name}.tmp{}", std::process::id()));
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&tmp)
        .with_context(|| format!("cannot write {}", tmp.display()))?;
    file.write_all(bytes)?;
    drop(file);
    std::fs::rename(&tmp, path).with_context(|| format!("cannot write {}", path.display()))?;
    Ok(())
}
