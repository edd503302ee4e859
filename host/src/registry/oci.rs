//! The registry side of a pull, through `oci-client` (the ORAS project's
//! OCI distribution client): resolve a reference to its manifest, read the
//! component layer and the cosign signatures, each bounded and hashed.
//!
//! A component is the Wasm OCI artifact `wkg oci push` publishes (the
//! layout of the CNCF TAG Runtime's Wasm OCI artifact, as the `oci-wasm`
//! crate defines it): an OCI image manifest whose config has media type
//! `application/vnd.wasm.config.v0+json` and whose one layer is
//! `application/wasm`, the component's bytes.

use std::time::Duration;

use anyhow::{Context as _, Result, bail};
use futures_util::StreamExt as _;
use oci_client::client::{ClientConfig, ClientProtocol};
use oci_client::errors::{OciDistributionError, OciErrorCode};
use oci_client::manifest::{
    IMAGE_MANIFEST_MEDIA_TYPE, OCI_IMAGE_MEDIA_TYPE, OciDescriptor, OciImageManifest,
};
use oci_client::secrets::RegistryAuth;
use oci_client::{Client, Reference, RegistryOperation};
use sha2::{Digest as _, Sha256};

use super::signature::Signed;

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

/// One registry, reached for one reference.
pub struct Registry {
    client: Client,
    /// For manifests, read here with a bound (oci-client reads them whole).
    http: reqwest::Client,
    /// `http` or `https`, as for `client`.
    scheme: &'static str,
    auth: RegistryAuth,
    name: String,
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
    /// A client for `reference`'s registry: HTTPS, or plain HTTP only for
    /// a loopback registry or one the user named with `--insecure-registry`.
    pub fn connect(reference: &Reference, insecure: &[String]) -> Result<Registry> {
        // reqwest's rustls has no crypto provider of its own here (no
        // aws-lc); the process uses ring, as the rest of the host does.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let name = reference.resolve_registry().to_string();
        let plain = is_loopback(&name) || insecure.iter().any(|host| host == &name);
        let protocol =
            if plain { ClientProtocol::HttpsExcept(vec![name.clone()]) } else { ClientProtocol::Https };
        let config = ClientConfig {
            protocol,
            connect_timeout: Some(Duration::from_secs(10)),
            read_timeout: Some(Duration::from_secs(30)),
            max_concurrent_download: 1,
            ..ClientConfig::default()
        };
        let client = Client::try_from(config).context("cannot set up the registry client")?;
        let http = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(10))
            .timeout(Duration::from_secs(60))
            // A manifest is never fetched from elsewhere than the registry named.
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .context("cannot set up the registry client")?;
        let scheme = if plain { "http" } else { "https" };
        Ok(Registry { client, http, scheme, auth: super::auth::for_registry(&name), name })
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

    /// GETs a manifest, reading at most [`MAX_MANIFEST_BYTES`], with the
    /// credentials (or bearer token) oci-client negotiated for pulling.
    async fn manifest_bytes(&self, reference: &Reference) -> Result<Vec<u8>> {
        let token = self
            .client
            .auth(reference, &self.auth, RegistryOperation::Pull)
            .await
            .map_err(|e| self.explain(e))?;
        let name = &self.name;
        let target = reference.digest().or(reference.tag()).unwrap_or("latest");
        let url = format!("{}://{name}/v2/{}/manifests/{target}", self.scheme, reference.repository());
        let accept = format!("{OCI_IMAGE_MEDIA_TYPE}, {IMAGE_MANIFEST_MEDIA_TYPE}");
        let mut request = self.http.get(&url).header(reqwest::header::ACCEPT, accept);
        request = match (token, &self.auth) {
            (Some(token), _) => request.bearer_auth(token),
            (None, RegistryAuth::Basic(user, password)) => request.basic_auth(user, Some(password)),
            (None, _) => request,
        };
        let mut response = request.send().await.map_err(|err| self.explain(err.into()))?;
        match response.status() {
            status if status.is_success() => {}
            reqwest::StatusCode::NOT_FOUND => {
                return Err(anyhow::Error::new(NotFound).context(format!(
                    "registry {name} does not have it: no manifest {target} (manifest unknown)"
                )));
            }
            status @ (reqwest::StatusCode::UNAUTHORIZED | reqwest::StatusCode::FORBIDDEN) => {
                return Err(self.explain(OciDistributionError::UnauthorizedError { url: status.to_string() }));
            }
            status => bail!("registry {name} answered {status} for manifest {target}"),
        }
        let too_large = || {
            anyhow::anyhow!("registry {name}: manifest {target} is larger than {MAX_MANIFEST_BYTES} bytes")
        };
        if response.content_length().is_some_and(|length| length > MAX_MANIFEST_BYTES as u64) {
            return Err(too_large());
        }
        let mut raw = Vec::new();
        while let Some(chunk) =
            response.chunk().await.with_context(|| format!("reading manifest {target}"))?
        {
            if raw.len() + chunk.len() > MAX_MANIFEST_BYTES {
                return Err(too_large());
            }
            raw.extend_from_slice(&chunk);
        }
        Ok(raw)
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
    /// not hash to its digest.
    pub async fn blob(&self, reference: &Reference, layer: &OciDescriptor, limit: u64) -> Result<Vec<u8>> {
        // The digest names a file in the store and goes into a URL: only
        // the canonical form is accepted.
        super::check_digest(&layer.digest).context("its manifest names a layer wrongly")?;
        let size = u64::try_from(layer.size).unwrap_or(u64::MAX);
        if size > limit {
            bail!("its layer {} declares {} bytes, more than the {limit} accepted", layer.digest, layer.size);
        }
        let mut stream =
            self.client.pull_blob_stream(reference, layer).await.map_err(|err| self.explain(err))?;
        if stream.content_length.is_some_and(|length| length > size) {
            bail!("the registry offers more bytes for layer {} than its manifest declares", layer.digest);
        }
        let mut bytes = Vec::with_capacity(size as usize);
        while let Some(chunk) = stream.next().await {
            // oci-client checks the digest as the last chunk arrives.
            let chunk = chunk.with_context(|| {
                format!("layer {} is corrupt, was tampered with, or was cut off", layer.digest)
            })?;
            if (bytes.len() + chunk.len()) as u64 > size {
                bail!("the registry sent more bytes for layer {} than its manifest declares", layer.digest);
            }
            bytes.extend_from_slice(&chunk);
        }
        let actual = sha256(&bytes);
        if actual != layer.digest || bytes.len() as u64 != size {
            bail!(
                "layer {} is corrupt or was tampered with: its {} bytes hash to {actual}",
                layer.digest,
                bytes.len()
            );
        }
        Ok(bytes)
    }

    /// Says what went wrong in the registry's terms, never with credentials.
    fn explain(&self, err: OciDistributionError) -> anyhow::Error {
        let name = &self.name;
        match &err {
            OciDistributionError::RegistryError { envelope, .. }
                if envelope.errors.iter().any(|e| {
                    matches!(e.code, OciErrorCode::ManifestUnknown | OciErrorCode::NameUnknown)
                        || matches!(e.code, OciErrorCode::BlobUnknown | OciErrorCode::NotFound)
                }) =>
            {
                anyhow::Error::new(NotFound).context(format!("registry {name} does not have it: {err}"))
            }
            OciDistributionError::ImageManifestNotFoundError(_) => {
                anyhow::Error::new(NotFound).context(format!("registry {name} does not have it: {err}"))
            }
            OciDistributionError::UnauthorizedError { .. }
            | OciDistributionError::AuthenticationFailure(_) => {
                anyhow::anyhow!(
                    "registry {name} refused access: log in with `docker login {name}` (or set \
                     MCP_WASM_HOST_REGISTRY_USERNAME and MCP_WASM_HOST_REGISTRY_PASSWORD)"
                )
            }
            OciDistributionError::RequestError(request) if request.is_connect() || request.is_timeout() => {
                anyhow::Error::new(err).context(format!("cannot reach registry {name}"))
            }
            _ => anyhow::Error::new(err).context(format!("registry {name}")),
        }
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
                super::check_digest(&layer.digest).context("its manifest names its layer wrongly")?;
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

/// The registry has no such manifest or blob.
#[derive(Debug, thiserror::Error)]
#[error("not found in the registry")]
pub struct NotFound;

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
