//! Every request the host makes to a registry, each body read under a
//! bound: the `/v2/` challenge, the Bearer token, manifests, blobs, and the
//! bodies of error answers.
//!
//! These are the host's own reqwest requests (oci-client's HTTP client, same
//! version and TLS) rather than oci-client's: oci-client reads some bodies
//! whole before its caller can bound them — the token response
//! (`auth_res.text()`) and the error body of a blob request — so a hostile
//! registry streaming either forever took the host's memory (upstream issue
//! to be filed with oras-project/rust-oci-client). oci-client still gives
//! the host its reference and manifest types.

use std::time::Duration;

use anyhow::{Context as _, Result, bail};
use oci_client::secrets::RegistryAuth;
use reqwest::{Response, StatusCode, Url};
use serde::Deserialize;

use crate::bounded_body::read_bounded;
use crate::log_text::escaped;

/// A token response is a JWT or two in JSON: a few KiB.
const MAX_TOKEN_BYTES: usize = 64 << 10;
/// What is read of an error answer's body: enough for the registry's
/// `{"errors":[…]}`, whose messages are quoted (escaped, cut).
const MAX_ERROR_BODY: usize = 16 << 10;
/// Redirects a blob request may follow (registries send blobs from storage).
const MAX_REDIRECTS: usize = 5;

/// How requests to one registry, for one repository, are authorized.
enum Authorization {
    None,
    Basic(String, String),
    Bearer(String),
}

/// One registry, reached for one repository.
pub struct RegistryHttp {
    /// `/v2/`, tokens and manifests: never redirected.
    direct: reqwest::Client,
    /// Blobs, which registries commonly redirect to storage; reqwest drops
    /// the credentials on a redirect to another host.
    blobs: reqwest::Client,
    /// `http` or `https`.
    scheme: &'static str,
    /// `HOST[:PORT]`, for URLs and messages.
    pub name: String,
    authorization: Authorization,
}

impl RegistryHttp {
    /// Reaches registry `name` (over plain HTTP if `plain`) and negotiates
    /// pulling from `repository`: anonymously, with `auth`'s credentials, or
    /// with a Bearer token from the realm the registry's challenge names.
    pub async fn connect(name: String, plain: bool, auth: RegistryAuth, repository: &str) -> Result<Self> {
        let https_only = !plain;
        let redirects = reqwest::redirect::Policy::custom(move |attempt| {
            if attempt.previous().len() >= MAX_REDIRECTS {
                attempt.error("too many redirects")
            } else if https_only && attempt.url().scheme() != "https" {
                attempt.error("a redirect away from HTTPS")
            } else {
                attempt.follow()
            }
        });
        let builder = || {
            reqwest::Client::builder()
                .connect_timeout(Duration::from_secs(10))
                // Between two reads; the whole pull has --registry-timeout.
                .read_timeout(Duration::from_secs(30))
                .https_only(https_only)
        };
        let direct = builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .context("cannot set up the registry client")?;
        let blobs = builder().redirect(redirects).build().context("cannot set up the registry client")?;
        let scheme = if plain { "http" } else { "https" };
        let mut http = RegistryHttp { direct, blobs, scheme, name, authorization: Authorization::None };
        http.authorization = http.authorize(auth, repository).await?;
        Ok(http)
    }

    /// Asks `/v2/` how to authorize, as the distribution spec has it: no
    /// challenge (anonymous, or Basic with credentials), a Basic challenge,
    /// or a Bearer challenge whose realm hands out a token.
    async fn authorize(&self, auth: RegistryAuth, repository: &str) -> Result<Authorization> {
        let basic = match auth {
            RegistryAuth::Basic(user, password) => Some((user, password)),
            RegistryAuth::Bearer(token) => return Ok(Authorization::Bearer(token)),
            RegistryAuth::Anonymous => None,
        };
        let url = format!("{}://{}/v2/", self.scheme, self.name);
        // Only the headers are read: the body is dropped unread.
        let response = self.direct.get(&url).send().await.map_err(|err| self.unreachable(err))?;
        let challenge = response
            .headers()
            .get(reqwest::header::WWW_AUTHENTICATE)
            .and_then(|value| value.to_str().ok())
            .and_then(BearerChallenge::parse);
        let Some(challenge) = challenge.filter(|_| response.status() == StatusCode::UNAUTHORIZED) else {
            return Ok(
                basic.map_or(Authorization::None, |(user, password)| Authorization::Basic(user, password))
            );
        };
        drop(response);
        let mut realm = Url::parse(&challenge.realm)
            .with_context(|| format!("registry {}: its token realm is not a URL", self.name))?;
        if self.scheme == "https" && realm.scheme() != "https" {
            bail!("registry {}: its token realm is not HTTPS: {}", self.name, escaped(realm.as_str()));
        }
        realm.query_pairs_mut().append_pair("scope", &format!("repository:{repository}:pull"));
        if let Some(service) = &challenge.service {
            realm.query_pairs_mut().append_pair("service", service);
        }
        let mut request = self.direct.get(realm);
        if let Some((user, password)) = &basic {
            request = request.basic_auth(user, Some(password));
        }
        let response = request.send().await.map_err(|err| self.unreachable(err))?;
        let response = self.success(response, "its token").await?;
        let body =
            read_bounded(response, MAX_TOKEN_BYTES, || format!("registry {}: its token", self.name)).await?;
        #[derive(Deserialize)]
        struct Token {
            token: Option<String>,
            access_token: Option<String>,
        }
        let token: Token = serde_json::from_slice(&body)
            .with_context(|| format!("registry {}: its token response is not JSON", self.name))?;
        match token.token.or(token.access_token) {
            Some(token) => Ok(Authorization::Bearer(token)),
            None => bail!("registry {}: its token response holds no token", self.name),
        }
    }

    /// GETs `path` (under `/v2/`) with the negotiated authorization;
    /// `blob` requests may be redirected. An answer other than success is
    /// the error, naming `what` (see [`RegistryHttp::success`]).
    pub async fn get(&self, path: &str, accept: Option<&str>, blob: bool, what: &str) -> Result<Response> {
        let url = format!("{}://{}/v2/{path}", self.scheme, self.name);
        let client = if blob { &self.blobs } else { &self.direct };
        let mut request = client.get(&url);
        if let Some(accept) = accept {
            request = request.header(reqwest::header::ACCEPT, accept);
        }
        request = match &self.authorization {
            Authorization::None => request,
            Authorization::Basic(user, password) => request.basic_auth(user, Some(password)),
            Authorization::Bearer(token) => request.bearer_auth(token),
        };
        let response = request.send().await.map_err(|err| self.unreachable(err))?;
        self.success(response, what).await
    }

    /// `response` if it is a success; else the error, saying what the
    /// registry said (its `{"errors":[…]}` read bounded, quoted escaped),
    /// and [`NotFound`] for a 404.
    async fn success(&self, response: Response, what: &str) -> Result<Response> {
        let status = response.status();
        if status.is_success() {
            return Ok(response);
        }
        let name = &self.name;
        if matches!(status, StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN) {
            bail!(
                "registry {name} refused access ({status}) to {what}: log in with `docker login {name}` \
                 (or set MCP_WASM_HOST_REGISTRY_USERNAME and MCP_WASM_HOST_REGISTRY_PASSWORD)"
            );
        }
        // The body only explains; a registry that sends no end of it gets
        // it cut, and one that stalls gets no explanation.
        let said =
            match tokio::time::timeout(Duration::from_secs(5), read_prefix(response, MAX_ERROR_BODY)).await {
                Ok(body) => registry_said(&body),
                Err(_) => String::new(),
            };
        if status == StatusCode::NOT_FOUND {
            return Err(anyhow::Error::new(NotFound)
                .context(format!("registry {name} does not have it: no {what}{said}")));
        }
        bail!("registry {name} answered {status} for {what}{said}")
    }

    /// A request that got no answer: the registry cannot be reached, or
    /// stopped answering.
    fn unreachable(&self, err: reqwest::Error) -> anyhow::Error {
        // reqwest's error names the URL; nothing secret is in it.
        let err = anyhow::Error::new(err.without_url());
        err.context(format!("cannot reach registry {}", self.name))
    }
}

/// The registry has no such manifest or blob.
#[derive(Debug, thiserror::Error)]
#[error("not found in the registry")]
pub struct NotFound;

/// At most the first `max` bytes of `response`'s body; what a failed read
/// left is kept.
async fn read_prefix(mut response: Response, max: usize) -> Vec<u8> {
    let mut body = Vec::new();
    while let Ok(Some(chunk)) = response.chunk().await {
        body.extend_from_slice(&chunk[..chunk.len().min(max - body.len())]);
        if body.len() >= max {
            break;
        }
    }
    body
}

/// `: CODE: message; …` from an error body in the distribution spec's
/// shape, escaped and cut; nothing if it has another shape.
fn registry_said(body: &[u8]) -> String {
    #[derive(Deserialize)]
    struct Envelope {
        errors: Vec<Entry>,
    }
    #[derive(Deserialize)]
    struct Entry {
        #[serde(default)]
        code: String,
        #[serde(default)]
        message: String,
    }
    let Ok(envelope) = serde_json::from_slice::<Envelope>(body) else { return String::new() };
    let said: Vec<String> =
        envelope.errors.iter().map(|entry| format!("{}: {}", entry.code, entry.message)).collect();
    if said.is_empty() {
        return String::new();
    }
    format!(" (the registry says: {})", escaped(said.join("; ")))
}

/// A `WWW-Authenticate: Bearer realm="…",service="…"` challenge.
#[derive(Debug, PartialEq, Eq)]
struct BearerChallenge {
    realm: String,
    service: Option<String>,
}

impl BearerChallenge {
    /// The challenge in `header`, if it is a Bearer one with a realm.
    fn parse(header: &str) -> Option<BearerChallenge> {
        let (scheme, params) = header.trim().split_once(' ')?;
        if !scheme.eq_ignore_ascii_case("bearer") {
            return None;
        }
        let (mut realm, mut service) = (None, None);
        let mut rest = params.trim();
        while !rest.is_empty() {
            let (key, after) = rest.split_once('=')?;
            let after = after.trim_start();
            let (value, after) = match after.strip_prefix('"') {
                Some(quoted) => {
                    let end = quoted.find('"')?;
                    (&quoted[..end], &quoted[end + 1..])
                }
                None => after.split_once(',').map_or((after, ""), |(value, after)| (value, after)),
            };
            match key.trim().to_ascii_lowercase().as_str() {
                "realm" => realm = Some(value.to_string()),
                "service" => service = Some(value.to_string()),
                _ => {}
            }
            rest = after.trim_start().trim_start_matches(',').trim_start();
        }
        Some(BearerChallenge { realm: realm?, service })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bearer_challenges_are_read_as_registries_write_them() {
        let parsed = BearerChallenge::parse(
            r#"Bearer realm="https://ghcr.io/token",service="ghcr.io",scope="repository:me/t:pull""#,
        );
        assert_eq!(
            parsed,
            Some(BearerChallenge { realm: "https://ghcr.io/token".into(), service: Some("ghcr.io".into()) })
        );
        let unquoted = BearerChallenge::parse("bearer realm=http://127.0.0.1:1/t, service=local");
        assert_eq!(unquoted.map(|c| c.service), Some(Some("local".into())));
        assert_eq!(BearerChallenge::parse(r#"Basic realm="registry""#), None);
        assert_eq!(BearerChallenge::parse(r#"Bearer service="no realm""#), None);
        assert_eq!(BearerChallenge::parse(r#"Bearer realm="unterminated"#), None);
    }

    #[test]
    fn what_a_registry_says_is_quoted_escaped_and_cut() {
        let body = br#"{"errors":[{"code":"BLOB_UNKNOWN","message":"gone\nERROR forged\u001b[2J"}]}"#;
        assert_eq!(registry_said(body), r" (the registry says: BLOB_UNKNOWN: gone\nERROR forged\u{1b}[2J)");
        assert_eq!(registry_said(b"<html>not json</html>"), "");
        let long = format!(r#"{{"errors":[{{"code":"X","message":"{}"}}]}}"#, "y".repeat(8000));
        assert!(registry_said(long.as_bytes()).len() < 1200);
    }
}
