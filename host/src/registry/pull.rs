//! Pulling one `oci://` reference: from the local copies when it is
//! pinned by digest and kept, else from its registry — the manifest, the
//! signature (with a key) before any component byte, then the component,
//! each bounded and hashed — within `--registry-timeout`.

use std::path::Path;

use anyhow::{Context as _, Result, bail};
use oci_client::Reference;

use super::signature::{self, PublicKey};
use super::{Pulled, RegistryOptions, SCHEME, copies, oci};
use crate::limits::{HumanBytes, HumanDuration};

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
pub(super) fn parse(reference: &str) -> Result<Reference> {
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
pub(super) fn check_digest(digest: &str) -> Result<()> {
    let hex = digest.strip_prefix("sha256:").unwrap_or_default();
    if hex.len() != 64 || !hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
        bail!("digest `{digest}` is not sha256: followed by 64 lowercase hex digits");
    }
    Ok(())
}

/// Whether `reference` names a tag (which `--watch` checks again), not a
/// digest.
pub fn is_tag(reference: &str) -> bool {
    parse(reference).is_ok_and(|parsed| parsed.digest().is_none())
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
}
