//! The host's requests to the authorization server: its discovery document
//! (RFC 8414, falling back to OpenID Connect discovery) and the JWKS it
//! names (the introspection endpoint it names is [`super::introspect`]'s). Each is bounded like the registry's requests: no redirects, at
//! most [`MAX_DOCUMENT`] bytes, and [`ISSUER_TIMEOUT`] for the whole fetch,
//! so an issuer that is down or hostile fails closed instead of hanging.

use std::time::Duration;

use anyhow::{Context as _, Result, anyhow, bail};
use jsonwebtoken::jwk::Jwk;
use reqwest::Url;
use serde::Deserialize;

use crate::bounded_body::read_bounded;
use crate::log_text::escaped;

/// The longest one fetch of the keys may take, discovery and JWKS together.
pub(super) const ISSUER_TIMEOUT: Duration = Duration::from_secs(10);
/// The largest discovery document or JWKS read (real ones are a few KiB).
pub(super) const MAX_DOCUMENT: usize = 1 << 20;
/// The most keys kept from one JWKS.
const MAX_KEYS: usize = 100;

/// The parts of a discovery document the host uses.
#[derive(Deserialize)]
struct Discovery {
    issuer: String,
    /// RFC 8414 makes it optional: an issuer of opaque tokens only may have none.
    #[serde(default)]
    jwks_uri: Option<String>,
    #[serde(default)]
    introspection_endpoint: Option<String>,
}

/// One authorization server.
pub(super) struct Issuer {
    /// As configured: what tokens' `iss` and its discovery document's
    /// `issuer` must equal.
    issuer: String,
    /// Where its discovery document may be, in the order tried.
    discovery: [String; 2],
    client: reqwest::Client,
}

/// Whether `url` names a loopback host.
pub(super) fn is_loopback(url: &Url) -> bool {
    let Some(host) = url.host_str() else { return false };
    let ip = host.trim_start_matches('[').trim_end_matches(']').parse::<std::net::IpAddr>();
    host.eq_ignore_ascii_case("localhost") || ip.is_ok_and(|ip| ip.is_loopback())
}

impl Issuer {
    pub(super) fn new(issuer: &str) -> Result<Self> {
        let url = Url::parse(issuer).context("--auth-issuer is not a URL")?;
        let origin = url.origin().ascii_serialization();
        let path = url.path().trim_end_matches('/');
        let discovery = [
            // RFC 8414 §3.1: the well-known part goes before the issuer's path.
            format!("{origin}/.well-known/oauth-authorization-server{path}"),
            // OpenID Connect Discovery 1.0 §4: after it.
            format!("{origin}{path}/.well-known/openid-configuration"),
        ];
        // Plain HTTP only for an issuer on loopback; then the keys too must
        // come from loopback.
        let https_only = !is_loopback(&url);
        // reqwest's rustls has no crypto provider of its own here (see registry/oci.rs).
        let _ = rustls::crypto::ring::default_provider().install_default();
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .https_only(https_only)
            .connect_timeout(ISSUER_TIMEOUT)
            .timeout(ISSUER_TIMEOUT)
            .build()
            .context("cannot set up the client for --auth-issuer")?;
        Ok(Issuer { issuer: issuer.to_string(), discovery, client })
    }

    /// The issuer's signing keys, now. Keys the host cannot use (another
    /// `kty`, an encryption key) are left out.
    pub(super) async fn keys(&self) -> Result<Vec<Jwk>> {
        let fetch = async {
            let jwks_uri = self.jwks_uri().await?;
            if !is_loopback(&jwks_uri) && jwks_uri.scheme() != "https" {
                bail!("its jwks_uri is not HTTPS: {}", escaped(jwks_uri.as_str()));
            }
            let body = self.get(jwks_uri.as_str(), "its JWKS").await?;
            #[derive(Deserialize)]
            struct Set {
                keys: Vec<serde_json::Value>,
            }
            let set: Set = serde_json::from_slice(&body).context("its JWKS is not a JSON key set")?;
            // One key the host cannot read does not spoil the others.
            let keys: Vec<Jwk> = set
                .keys
                .into_iter()
                .filter_map(|key| serde_json::from_value::<Jwk>(key).ok())
                .filter(|key| {
                    key.common
                        .public_key_use
                        .as_ref()
                        .is_none_or(|used| *used == jsonwebtoken::jwk::PublicKeyUse::Signature)
                })
                .take(MAX_KEYS)
                .collect();
            Ok(keys)
        };
        tokio::time::timeout(ISSUER_TIMEOUT, fetch)
            .await
            .map_err(|_| anyhow!("no answer within {}s", ISSUER_TIMEOUT.as_secs()))?
            .with_context(|| format!("authorization server {}", escaped(&self.issuer)))
    }

    /// The `jwks_uri` its discovery document names.
    async fn jwks_uri(&self) -> Result<Url> {
        let uri = self.discover().await?.jwks_uri.context("its discovery document names no jwks_uri")?;
        Url::parse(&uri).context("its jwks_uri is not a URL")
    }

    /// The `introspection_endpoint` its discovery document names (RFC 8414
    /// §2), if any; within [`ISSUER_TIMEOUT`].
    pub(super) async fn introspection_endpoint(&self) -> Result<Option<Url>> {
        let found = tokio::time::timeout(ISSUER_TIMEOUT, self.discover())
            .await
            .map_err(|_| anyhow!("no answer within {}s", ISSUER_TIMEOUT.as_secs()))?
            .with_context(|| format!("authorization server {}", escaped(&self.issuer)))?;
        found
            .introspection_endpoint
            .map(|url| Url::parse(&url).context("its introspection_endpoint is not a URL"))
            .transpose()
    }

    /// Its discovery document, after checking that the document is this
    /// issuer's.
    async fn discover(&self) -> Result<Discovery> {
        let mut failures = Vec::new();
        for url in &self.discovery {
            let body = match self.get(url, "its discovery document").await {
                Ok(body) => body,
                Err(err) => {
                    failures.push(format!("{url}: {err:#}"));
                    continue;
                }
            };
            let document: Discovery = serde_json::from_slice(&body)
                .with_context(|| format!("{url}: not a discovery document with an `issuer`"))?;
            if document.issuer != self.issuer {
                bail!(
                    "{url} names another issuer ({}); tokens from it are not accepted",
                    escaped(&document.issuer)
                );
            }
            return Ok(document);
        }
        bail!("no discovery document ({})", failures.join("; "))
    }

    /// The body of a successful GET of `url`, bounded.
    async fn get(&self, url: &str, what: &str) -> Result<Vec<u8>> {
        let response = self
            .client
            .get(url)
            .header(reqwest::header::ACCEPT, "application/json")
            .send()
            .await
            .map_err(|err| anyhow::Error::new(err.without_url()))
            .with_context(|| format!("cannot fetch {what}"))?;
        let status = response.status();
        if !status.is_success() {
            bail!("{what}: answered {status}");
        }
        read_bounded(response, MAX_DOCUMENT, || what.to_string()).await
    }
}
