//! `oci://` components: a tool published to an OCI registry (`wkg oci push`),
//! pulled, checked and kept by digest before the host loads it.
//!
//! The steps, one file each (all of them the default-on `oci` feature; a
//! build without it refuses an `oci://` component at start):
//! - `pull`: the order of the steps, and the reference's syntax;
//! - `oci`: talk to the registry — resolve a tag or a digest to the
//!   component's manifest, pull its one `application/wasm` layer, bounded
//!   and checked against its digest; credentials from the Docker config
//!   file or the environment (`credentials`); every request, its token and
//!   its error bodies read under a bound (`http`);
//! - `signature`: with a key (`--require-signature KEY.pub`), the
//!   cosign signature over the manifest's digest is verified before any
//!   component byte is pulled;
//! - `copies`: what was pulled, by digest, so a digest-pinned reference
//!   starts without the registry.
//!
//! Every byte from a registry is treated as hostile: every body is bounded
//! before anything is read whole, a whole pull has a deadline
//! (`--registry-timeout`), every manifest and blob is hashed and compared
//! with the digest that names it, what a registry says is quoted escaped
//! and cut, and plain HTTP is spoken only to loopback registries or those
//! named with `--insecure-registry`.

#[cfg(feature = "oci")]
mod copies;
#[cfg(feature = "oci")]
mod credentials;
#[cfg(feature = "oci")]
mod http;
#[cfg(feature = "oci")]
mod oci;
#[cfg(feature = "oci")]
mod pull;
#[cfg(feature = "oci")]
mod signature;

use std::path::PathBuf;
use std::time::Duration;

#[cfg(feature = "oci")]
pub use pull::{is_tag, pull};

/// Without the `oci` feature: every `oci://` component is refused at start.
#[cfg(not(feature = "oci"))]
pub async fn pull(
    reference: &str,
    _key: Option<&std::path::Path>,
    _: &RegistryOptions,
) -> anyhow::Result<Pulled> {
    anyhow::bail!(
        "{}: this build cannot pull oci:// components (it was built without the default `oci` feature)",
        crate::log_text::escaped(reference)
    )
}

/// Without the `oci` feature there is no tag to follow.
#[cfg(not(feature = "oci"))]
pub fn is_tag(_reference: &str) -> bool {
    false
}

/// How a component reference from a registry is written.
pub const SCHEME: &str = "oci://";

/// How the host may reach registries and where it keeps what it pulled.
#[derive(Clone, Debug)]
// Without `oci` only the copies' directory is read (as a trusted path).
#[cfg_attr(not(feature = "oci"), allow(dead_code))]
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
    fn a_component_is_named_after_its_repository() {
        assert_eq!(short_name("oci://127.0.0.1:5000/tools/demo:1"), "demo");
        assert_eq!(short_name("oci://ghcr.io/me/demo@sha256:ab"), "demo");
        assert_eq!(short_name("oci://localhost/x"), "x");
    }
}
