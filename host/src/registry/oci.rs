//! The registry side of a pull: resolve a reference to its manifest, read
//! the component layer and the cosign signatures, each bounded and hashed.
//! The requests themselves, every body read under a bound, are in
//! [`super::http`].
//!
//! A component is the Wasm OCI artifact `wkg oci push` publishes (the
//! layout of the CNCF TAG Runtime's Wasm OCI artifact, as the `oci-wasm`
//! crate defines it): an OCI image manifest whose config has media type
//! `application/vnd.wasm.config.v0+json` and whose one layer is
//! `application/wasm`, the component's bytes.

use std::time::{Duration, Instant};

use anyhow::{Context as _, Result, bail};
use oci_client::Reference;
use oci_client::manifest::{
    IMAGE_MANIFEST_MEDIA_TYPE, OCI_IMAGE_MEDIA_TYPE, OciDescriptor, OciImageManifest,
};
use sha2::{Digest as _, Sha256};

use super::http::{NotFound, RegistryHttp};
use super::signature::Signed;
use crate::bounded_body::read_bounded;
use crate::limits::HumanBytes;

/// The config media type of a Wasm OCI artifact (`oci-wasm`, used by `wkg`).
pub const WASM_CONFIG_MEDIA_TYPE: &str = "application/vnd.wasm.config.v0+json";
/// The media type of the layer holding the component.
pub const WASM_LAYER_MEDIA_TYPE: &str = "application/wasm";
/// cosign's signature layer: the simple-signing payload, its signature in
/// the [`SIGNATURE_ANNOTATION`] (cosign's `specs/SIGNATURE_SPEC.md`).
pub const SIMPLE_SIGNING_MEDIA_TYPE: &str = "application/vnd.dev.cosign.simplesigning.v1+json";
/// The layer annotation holding cosign's base64 signature of the payload.
pub const SIGNATURE_ANNOTATION: &str = "dev.cosignproject.cosign/signature";

/// A wkg manifest is under 1 KiB; a larger one is refused unparsed.
const MAX_MANIFEST_BYTES: usize = 64 << 10;
/// A simple-signing payload is a few hundred bytes.
const MAX_PAYLOAD_BYTES: u64 = 64 << 10;
/// Signatures read from one `.sig` manifest (cosign appends one per signing).
const MAX_SIGNATURES: usize = 16;
/// How often a blob still coming is reported in the log.
const PROGRESS_EVERY: Duration = Duration::from_secs(5);

/// One registry, reached for one reference.
pub struct Registry {
    http: RegistryHttp,
}

/// A manifest, checked against the digest that names it.
pub struct Manifest {
    /// `sha256:…` of the bytes below.
    pub digest: String,
    /// The manifest as the registry sent it, for the store.
    pub raw: Vec<u8>,
    /// Parsed.
    pub image: OciImageManifest,
}

impl Registry {
    /// Reaches `reference`'s registry and negotiates pulling from its
    /// repository: HTTPS, or plain HTTP only for a loopback registry or one
    /// the user named with `--insecure-registry`.
    pub async fn connect(reference: &Reference, insecure: &[String]) -> Result<Registry> {
        // reqwest's rustls has no crypto provider of its own here (no
        // aws-lc); the process uses ring, as the rest of the host does.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let name = reference.resolve_registry().to_string();
        let plain = is_loopback(&name) || insecure.iter().any(|host| host == &name);
        let auth = super::credentials::for_registry(&name);
        Ok(Registry { http: RegistryHttp::connect(name, plain, auth, reference.repository()).await? })
    }

    /// Resolves `reference` (a tag or a digest) to its manifest; a digest
    /// the manifest's bytes do not hash to is refused.
    pub async fn manifest(&self, reference: &Reference) -> Result<Manifest> {
        let raw = self.manifest_bytes(reference).await?;
        let digest = sha256(&raw);
        if let Some(pinned) = reference.digest()
            && pinned != digest
        {
            bail!("the registry sent a manifest whose digest is {digest}, not the pinned {pinned}");
        }
        let image: OciImageManifest =
            serde_json::from_slice(&raw).context("its manifest is not an OCI image manifest")?;
        Ok(Manifest { digest, raw, image })
    }

    /// GETs a manifest, reading at most [`MAX_MANIFEST_BYTES`].
    async fn manifest_bytes(&self, reference: &Reference) -> Result<Vec<u8>> {
        let target = reference.digest().or(reference.tag()).unwrap_or("latest");
        let path = format!("{}/manifests/{target}", reference.repository());
        let accept = format!("{OCI_IMAGE_MEDIA_TYPE}, {IMAGE_MANIFEST_MEDIA_TYPE}");
        let what = format!("manifest {target}");
        let response = self.http.get(&path, Some(&accept), false, &what).await?;
        read_bounded(response, MAX_MANIFEST_BYTES, || format!("registry {}: {what}", self.http.name)).await
    }

    /// The cosign signatures stored for `digest` under the `.sig` tag
    /// convention (`sha256-HEX.sig` in the same repository); none when the
    /// tag does not exist.
    pub async fn signatures(&self, reference: &Reference, digest: &str) -> Result<Vec<Signed>> {
        let tag = format!("{}.sig", digest.replace(':', "-"));
        let sig_ref =
            Reference::with_tag(reference.registry().into(), reference.repository().into(), tag.clone());
        let manifest = match self.manifest(&sig_ref).await {
            Ok(manifest) => manifest,
            Err(err) if err.downcast_ref::<NotFound>().is_some() => return Ok(Vec::new()),
            Err(err) => return Err(err.context(format!("reading its signature tag {tag}"))),
        };
        let mut signed = Vec::new();
        for layer in manifest.image.layers.iter().take(MAX_SIGNATURES) {
            let annotation = layer.annotations.as_ref().and_then(|a| a.get(SIGNATURE_ANNOTATION));
            let (true, Some(signature)) = (layer.media_type == SIMPLE_SIGNING_MEDIA_TYPE, annotation) else {
                continue;
            };
            let payload = self.blob(&sig_ref, layer, MAX_PAYLOAD_BYTES).await?;
            signed.push(Signed { payload, signature: signature.clone() });
        }
        Ok(signed)
    }

    /// Pulls the blob `layer` describes, refusing one larger than its
    /// declared size or `limit` (before reading it), and one whose bytes do
    /// not hash to its digest. Logs progress while a large one comes.
    pub async fn blob(&self, reference: &Reference, layer: &OciDescriptor, limit: u64) -> Result<Vec<u8>> {
        // The digest names a file in the store and goes into a URL: only
        // the canonical form is accepted.
        super::pull::check_digest(&layer.digest).context("its manifest names a layer wrongly")?;
        let size = u64::try_from(layer.size).unwrap_or(u64::MAX);
        if size > limit {
            bail!("its layer {} declares {} bytes, more than the {limit} accepted", layer.digest, layer.size);
        }
        let path = format!("{}/blobs/{}", reference.repository(), layer.digest);
        let what = format!("blob {}", layer.digest);
        let mut response = self.http.get(&path, None, true, &what).await?;
        if response.content_length().is_some_and(|length| length > size) {
            bail!("the registry offers more bytes for layer {} than its manifest declares", layer.digest);
        }
        // Reserved as it comes, not as declared: a size is only a claim.
        let mut bytes = Vec::with_capacity(size.min(1 << 20) as usize);
        let mut hasher = Sha256::new();
        let mut reported = Instant::now();
        while let Some(chunk) = response
            .chunk()
            .await
            .with_context(|| format!("layer {} was cut off: the registry stopped sending it", layer.digest))?
        {
            if (bytes.len() + chunk.len()) as u64 > size {
                bail!("the registry sent more bytes for layer {} than its manifest declares", layer.digest);
            }
            hasher.update(&chunk);
            bytes.extend_from_slice(&chunk);
            if reported.elapsed() >= PROGRESS_EVERY {
                reported = Instant::now();
                tracing::info!(
                    registry = self.http.name,
                    layer = layer.digest,
                    received = %HumanBytes(bytes.len()),
                    of = %HumanBytes(size as usize),
                    "still pulling"
                );
            }
        }
        let actual = format!("sha256:{}", hex::encode(hasher.finalize()));
        if actual != layer.digest || bytes.len() as u64 != size {
            bail!(
                "layer {} is corrupt or was tampered with: its {} bytes hash to {actual}",
                layer.digest,
                bytes.len()
            );
        }
        Ok(bytes)
    }
}

impl Manifest {
    /// The component layer of a Wasm OCI artifact; any other shape is refused.
    pub fn component_layer(&self) -> Result<&OciDescriptor> {
        let config = &self.image.config.media_type;
        if config != WASM_CONFIG_MEDIA_TYPE {
            bail!(
                "it is not a Wasm component artifact: its config media type is `{config}`, not \
                 `{WASM_CONFIG_MEDIA_TYPE}` (publish it with `wkg oci push`)"
            );
        }
        match self.image.layers.as_slice() {
            [layer] if layer.media_type == WASM_LAYER_MEDIA_TYPE => {
                super::pull::check_digest(&layer.digest).context("its manifest names its layer wrongly")?;
                Ok(layer)
            }
            layers => bail!(
                "it is not a Wasm component artifact: it must have exactly one `{WASM_LAYER_MEDIA_TYPE}` \
                 layer, it has {} layer(s)",
                layers.len()
            ),
        }
    }
}

/// `sha256:HEX` of `bytes`.
pub fn sha256(bytes: &[u8]) -> String {
    format!("sha256:{}", hex::encode(Sha256::digest(bytes)))
}

/// Whether `registry` (`HOST[:PORT]`) is on this machine.
fn is_loopback(registry: &str) -> bool {
    let host = match registry.rsplit_once(':') {
        Some((host, port)) if port.bytes().all(|b| b.is_ascii_digit()) => host,
        _ => registry,
    };
    let host = host.trim_start_matches('[').trim_end_matches(']');
    host == "localhost" || host.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_loopback_registries_are_spoken_to_in_plain_http() {
        assert!(is_loopback("127.0.0.1:5000"));
        assert!(is_loopback("localhost:5000"));
        assert!(is_loopback("[::1]:5000"));
        assert!(is_loopback("127.8.9.10"));
        assert!(!is_loopback("ghcr.io"));
        assert!(!is_loopback("10.0.0.1:5000"));
        assert!(!is_loopback("localhost.evil.example:5000"));
    }
}
