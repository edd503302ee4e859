//! `oci://` components: a tool published to an OCI registry (`wkg oci push`),
//! pulled, checked and kept by digest before the host loads it.
//!
//! The steps, one file each:
//! - [`oci`]: talk to the registry — resolve a tag or a digest to the
//!   component's manifest, pull its one `application/wasm` layer, bounded
//!   and checked against its digest; credentials from the Docker config
//!   file or the environment ([`auth`]); every request, its token and its
//!   error bodies read under a bound ([`http`]);
//! - [`signature`]: with a key (`--require-signature KEY.pub`), the
//!   cosign signature over the manifest's digest is verified before any
//!   component byte is pulled;
//! - [`store`]: what was pulled, by digest, so a digest-pinned reference
//!   starts without the registry.
//!
//! Every byte from a registry is treated as hostile: every body is bounded
//! before anything is read whole, a whole pull has a deadline
//! (`--registry-timeout`), every manifest and blob is hashed and compared
//! with the digest that names it, what a registry says is quoted escaped
//! and cut, and plain HTTP is spoken only to loopback registries or those
//! named with `--insecure-registry`.

mod copies;
mod credentials;
pub(crate) mod http;
mod oci;
mod signature;

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context as _, Result, bail};
use oci_client::Reference;

pub use signature::PublicKey;

use crate::limits::{HumanBytes, HumanDuration};

/// How a component reference from a registry is written.
pub const SCHEME: &str = "oci://";

/// How the host may reach registries and where it keeps what it pulled.
#[derive(Clone, Debug)]
pub struct RegistryOptions {
    /// The store of pulled manifests, blobs and signatures (`CACHE/oci`).
    pub copies_dir: PathBuf,
    /// Registries (`HOST[:PORT]`) spoken to over plain HTTP although they
    /// are not on loopback.
    pub insecure: Vec<String>,
    /// The longest one pull may take, all its requests together
    /// (`--registry-timeout`): a registry that trickles is given up on.
    pub timeout: Duration,
    /// The largest component pulled, in bytes (`--max-component-size`): a
    /// layer that declares more is refused before any of it is read.
    pub max_component_size: usize,
}

/// A component pulled from a registry (or found in the store), checked.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Pulled {
    /// The reference as the user wrote it.
    pub reference: String,
    /// The digest of its manifest, which names this exact component.
    pub digest: String,
    /// The component file in the store.
    pub path: PathBuf,
    /// Whose key verified its signature, when one was required.
    pub signer: Option<String>,
    /// It was started from the store, without asking the registry.
    pub offline: bool,
}

/// Pulls `reference` (`oci://REGISTRY/REPOSITORY:TAG` or `…@sha256:DIGEST`),
/// verifies its signature with `key` if one is given, and returns the
/// component's file in the store. A digest-pinned reference found in the
/// store is served from it without contacting the registry.
pub async fn pull(reference: &str, key: Option<&Path>, options: &RegistryOptions) -> Result<Pulled> {
    let parsed = parse(reference)?;
    let key = key.map(PublicKey::load).transpose()?;
    let store = copies::Copies::open(&options.copies_dir)?;
    if let Some(digest) = parsed.digest()
        && let Some(found) = offline(&store, digest, key.as_ref())?
    {
        tracing::info!(reference, digest, "component found in the store; the registry is not asked");
        return Ok(Pulled { reference: reference.into(), offline: true, ..found });
    }

    let pull = from_registry(reference, &parsed, key.as_ref(), &store, options);
    match tokio::time::timeout(options.timeout, pull).await {
        Ok(pulled) => pulled,
        Err(_) => bail!(
            "registry {}: the pull took longer than --registry-timeout ({}); the registry is too slow \
             or trickles its answer",
            parsed.resolve_registry(),
            HumanDuration(options.timeout)
        ),
    }
}

/// The network part of [`pull`]: manifest, signature, component.
async fn from_registry(
    reference: &str,
    parsed: &Reference,
    key: Option<&PublicKey>,
    store: &copies::Copies,
    options: &RegistryOptions,
) -> Result<Pulled> {
    let registry = oci::Registry::connect(parsed, &options.insecure).await?;
    let manifest = registry.manifest(parsed).await?;
    let digest = manifest.digest.clone();
    if parsed.digest().is_none() {
        tracing::info!(reference, digest, "tag resolved");
    }
    let layer = manifest.component_layer()?;
    // The signature is checked before any component byte is pulled.
    let signer = match key {
        Some(key) => {
            let signed = registry.signatures(parsed, &digest).await?;
            let kept = signature::verify_any(key, &signed, &digest)?;
            store.put_signature(&digest, kept)?;
            Some(key.signer())
        }
        None => None,
    };
    // Already pulled (a tag checked again with --watch, or moved back).
    if let Some(path) = store.component(&digest)? {
        tracing::info!(reference, digest, signer, "component already in the store");
        return Ok(Pulled { reference: reference.into(), digest, path, signer, offline: false });
    }
    let limit = options.max_component_size as u64;
    if u64::try_from(layer.size).is_ok_and(|size| size > limit) {
        bail!(
            "its component layer declares {} bytes, more than --max-component-size ({})",
            layer.size,
            HumanBytes(options.max_component_size)
        );
    }
    let bytes = registry.blob(parsed, layer, limit).await?;
    let path = store.put_component(&digest, &manifest.raw, &layer.digest, &bytes)?;
    tracing::info!(reference, digest, bytes = bytes.len(), signer, "component pulled");
    Ok(Pulled { reference: reference.into(), digest, path, signer, offline: false })
}

/// The component for `digest` from the store, if it is there whole (and,
/// with a key, with a signature that still verifies with it).
fn offline(store: &copies::Copies, digest: &str, key: Option<&PublicKey>) -> Result<Option<Pulled>> {
    let Some(path) = store.component(digest)? else {
        return Ok(None);
    };
    let signer = match key {
        None => None,
        Some(key) => match store.signature(digest)? {
            Some(signed) if signature::verify_any(key, std::slice::from_ref(&signed), digest).is_ok() => {
                Some(key.signer())
            }
            // Never verified with this key (or kept for another key): ask
            // the registry for a signature.
            _ => return Ok(None),
        },
    };
    Ok(Some(Pulled { reference: String::new(), digest: digest.into(), path, signer, offline: true }))
}

/// Parses `oci://REGISTRY/REPOSITORY[:TAG][@DIGEST]`. The registry must be
/// named: a bare `oci://repo:tag` would silently mean Docker Hub.
pub fn parse(reference: &str) -> Result<Reference> {
    let Some(rest) = reference.strip_prefix(SCHEME) else {
        bail!("`{reference}` is not an OCI reference: write oci://REGISTRY/REPOSITORY:TAG or @sha256:DIGEST");
    };
    let first = rest.split('/').next().unwrap_or_default();
    let names_registry =
        rest.contains('/') && (first.contains('.') || first.contains(':') || first == "localhost");
    if !names_registry {
        bail!(
            "`{reference}` names no registry: write oci://REGISTRY/REPOSITORY:TAG \
             (e.g. oci://ghcr.io/OWNER/TOOL:1.0)"
        );
    }
    let parsed =
        rest.parse::<Reference>().with_context(|| format!("`{reference}` is not a valid OCI reference"))?;
    if let Some(digest) = parsed.digest() {
        check_digest(digest).with_context(|| format!("`{reference}`"))?;
    }
    Ok(parsed)
}

/// Only SHA-256 digests, in their canonical form, are accepted.
fn check_digest(digest: &str) -> Result<()> {
    let hex = digest.strip_prefix("sha256:").unwrap_or_default();
    if hex.len() != 64 || !hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
        bail!("digest `{digest}` is not sha256: followed by 64 lowercase hex digits");
    }
    Ok(())
}

/// A short name for a component from `reference`, for logs: the last
/// segment of its repository.
pub fn short_name(reference: &str) -> String {
    let rest = reference.strip_prefix(SCHEME).unwrap_or(reference);
    let repository = rest.split(['@', ':']).next().unwrap_or(rest);
    let repository = match rest.split_once('/') {
        // The registry may have a port: cut at the tag only after it.
        Some((_, path)) => path.split(['@', ':']).next().unwrap_or(repository),
        None => repository,
    };
    repository.rsplit('/').next().unwrap_or(repository).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references_must_name_their_registry() {
        let ok = parse("oci://127.0.0.1:5000/tools/demo:1").unwrap();
        assert_eq!((ok.registry(), ok.repository(), ok.tag()), ("127.0.0.1:5000", "tools/demo", Some("1")));
        assert!(parse("oci://ghcr.io/me/demo@sha256:0123").is_err(), "a short digest");
        assert!(parse("oci://demo:1").unwrap_err().to_string().contains("names no registry"));
        assert!(parse("ghcr.io/me/demo:1").unwrap_err().to_string().contains("not an OCI reference"));
        assert!(check_digest(&format!("sha256:{}", "a".repeat(64))).is_ok());
        assert!(check_digest(&format!("sha512:{}", "a".repeat(64))).is_err());
        assert!(check_digest(&format!("sha256:{}", "A".repeat(64))).is_err());
    }

    #[test]
    fn a_component_is_named_after_its_repository() {
        assert_eq!(short_name("oci://127.0.0.1:5000/tools/demo:1"), "demo");
        assert_eq!(short_name("oci://ghcr.io/me/demo@sha256:ab"), "demo");
        assert_eq!(short_name("oci://localhost/x"), "x");
    }
}
