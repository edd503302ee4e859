//! Who may call over `--http`: with `--auth-issuer`, the host is an OAuth
//! 2.1 resource server, as the MCP authorization profile has it. Every
//! request to `/mcp` must carry a valid access token (a JWT, RFC 9068) in
//! its `Authorization: Bearer` header; clients without one are told where
//! to get one (Protected Resource Metadata, RFC 9728).
//!
//! The life of one request through here: [`Gate::admit`] reads the header
//! → [`token`] checks the token's header against the algorithm allow-list
//! → [`keys`] finds its signing key in the issuer's JWKS (fetched through
//! [`issuer`], cached) → [`token`] checks the signature and claims → the
//! caller's [`Principal`] rides on the request. The verdict on a JWT is
//! remembered by the token's hash ([`token_cache`]) for a minute at most,
//! never past its `exp`, so a client's repeated token is verified once. A
//! refusal is answered by [`challenge`]; the metadata document is
//! [`metadata`]'s.
//!
//! A token that is not a JWT is opaque: with `--auth-client-id` the host
//! asks the issuer about it ([`introspect`], RFC 7662, its verdicts cached
//! by the token's hash in [`token_cache`]); without, it is refused.
//!
//! The token itself goes nowhere: not into logs, metrics, or anything a
//! guest sees. Only the principal does.

mod challenge;
mod fairness;
mod introspect;
mod issuer;
mod keys;
mod metadata;
mod scopes;
mod token;
mod token_cache;

use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{Context as _, Result, bail};
use http::{Method, Response};
use http_body_util::Full;
use hyper::body::Bytes;
use reqwest::Url;

pub use fairness::Fairness;
pub use introspect::IntrospectionSettings;
use introspect::{Introspector, Unchecked};
use keys::{KeyCache, KeyError};
use metadata::Metadata;
pub use scopes::{Lacking, ToolScope, ToolScopes, by_tool as scopes_by_tool};
use token_cache::TokenCache;

/// `--auth-issuer`, `--auth-resource`, `--auth-scopes` (or `[server.auth]`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AuthSettings {
    /// The authorization server, exactly as its tokens' `iss` names it.
    pub issuer: String,
    /// This server's URL as clients use it (the tokens' audience).
    pub resource: String,
    /// The scopes to advertise (`scopes_supported`), and to ask for in a
    /// `401` challenge.
    pub scopes: Vec<String>,
    /// The scopes tools need besides, advertised too (`required_scopes`,
    /// `--tool-scope`).
    pub tool_scopes: Vec<String>,
    /// Calls one principal may have at once (`--max-calls-per-principal`).
    pub max_calls_per_principal: u32,
    /// Calls one principal may have waiting for the user at once.
    pub max_paused_per_principal: u32,
    /// How opaque tokens are checked, if they are accepted at all.
    pub introspection: Option<IntrospectionSettings>,
}

impl AuthSettings {
    /// Checks that both URLs are ones the host can work with: absolute,
    /// and HTTPS unless the issuer is on loopback (tests, local issuers).
    pub fn new(issuer: String, resource: String, scopes: Vec<String>) -> Result<Self> {
        let parsed = Url::parse(&issuer).with_context(|| format!("--auth-issuer {issuer:?} is not a URL"))?;
        if parsed.scheme() != "https" && !(parsed.scheme() == "http" && issuer::is_loopback(&parsed)) {
            bail!("--auth-issuer {issuer:?} must be an https:// URL (plain http only on loopback)");
        }
        if parsed.query().is_some() || parsed.fragment().is_some() {
            bail!("--auth-issuer {issuer:?} must have no query or fragment (RFC 8414)");
        }
        let resource_url =
            Url::parse(&resource).with_context(|| format!("--auth-resource {resource:?} is not a URL"))?;
        if !matches!(resource_url.scheme(), "https" | "http") || resource_url.fragment().is_some() {
            bail!("--auth-resource {resource:?} must be an http(s) URL without a fragment (RFC 8707)");
        }
        if let Some(bad) = scopes.iter().find(|scope| !scopes::is_scope(scope)) {
            bail!(
                "--auth-scopes: {bad:?} is not a scope (RFC 6749: printable ASCII, no spaces, quotes or \\)"
            );
        }
        Ok(AuthSettings {
            issuer,
            resource,
            scopes,
            tool_scopes: Vec::new(),
            max_calls_per_principal: 32,
            max_paused_per_principal: 4,
            introspection: None,
        })
    }
}

/// The characters RFC 6749 allows in a scope token.
fn is_scope_char(c: char) -> bool {
    c == '!' || ('#'..='[').contains(&c) || (']'..='~').contains(&c)
}

/// Who is calling: what a valid token said. Attached to each admitted
/// request's extensions (`http::request::Parts`), for handlers to bind
/// what the caller creates to it. Holds no token.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Principal {
    /// The token's `iss`.
    pub issuer: String,
    /// The token's `sub`.
    pub subject: String,
    /// The OAuth client the token was issued to, if it says.
    pub client_id: Option<String>,
    /// The scopes the token grants.
    pub scopes: Vec<String>,
}

/// The scopes a token's space-separated `scope` grants. A word that is not
/// a scope token (RFC 6749 §3.3: a control, a quote, a backslash, anything
/// past ASCII) is dropped: no configured scope can equal it, and kept it
/// would reach the `WWW-Authenticate` header of a step-up.
pub(crate) fn granted_scopes(scope: &str) -> Vec<String> {
    scope.split_whitespace().filter(|word| scopes::is_scope(word)).map(String::from).collect()
}

impl Principal {
    /// The caller of an MCP request, if it came over `--http` through the
    /// gate (stdio, and HTTP without `--auth-issuer`, have none).
    pub fn of(extensions: &rmcp::model::Extensions) -> Option<&Principal> {
        extensions.get::<http::request::Parts>()?.extensions.get::<Principal>()
    }

    /// Who this is, as a stable key: `iss` and `sub` (RFC 9068 §5: the pair
    /// names one resource owner). A refreshed token keeps the same key, so
    /// its holder still reaches what it made. Holds no token.
    pub fn key(&self) -> String {
        // A space cannot occur in `iss` (a URL), so the pair is unambiguous.
        format!("{} {}", self.issuer, self.subject)
    }
}

/// A refusal: the HTTP answer to send instead of serving the request.
pub type Refusal = Response<Full<Bytes>>;

/// Admits requests that carry a valid token, and serves the metadata that
/// tells clients how to get one.
pub struct Gate {
    settings: AuthSettings,
    metadata: Metadata,
    keys: KeyCache,
    /// With `--auth-client-id`: checks opaque tokens.
    introspector: Option<Introspector>,
    /// What was decided about JWTs seen lately, by their hash.
    verdicts: Mutex<TokenCache>,
}

/// How long a JWT's verdict is remembered at most: long enough that a
/// client's stream of requests costs one signature check a minute, and
/// short next to the ten minutes the key cache may keep a key the issuer
/// has withdrawn.
const REMEMBER_JWT: Duration = Duration::from_secs(60);

impl Gate {
    /// A gate for `settings`; nothing is fetched until the first token.
    pub fn new(settings: AuthSettings) -> Result<Self> {
        let metadata = Metadata::new(&settings)?;
        let keys = KeyCache::new(issuer::Issuer::new(&settings.issuer)?);
        let introspector = match &settings.introspection {
            Some(introspection) => Some(Introspector::new(introspection.clone(), &settings.issuer)?),
            None => None,
        };
        let verdicts = Mutex::new(TokenCache::new(token_cache::MAX_ENTRIES));
        Ok(Gate { settings, metadata, keys, introspector, verdicts })
    }

    /// The Protected Resource Metadata answer, if `path` is one of its
    /// well-known URLs (no token needed for it).
    pub fn metadata(&self, method: &Method, path: &str) -> Option<Response<Full<Bytes>>> {
        self.metadata.answer(method, path)
    }

    /// The caller of the request with these `parts`, or the answer that
    /// refuses it: `401` without a valid token.
    pub async fn admit(&self, parts: &http::request::Parts) -> Result<Principal, Refusal> {
        let challenge = challenge::Challenge::new(self.metadata.url(), &self.settings.scopes);
        if query_has_token(parts.uri.query()) {
            return Err(challenge.unauthorized(Some((
                "invalid_request",
                "an access token in the query string is refused; send it in the Authorization header",
            ))));
        }
        let Some(token) = bearer(parts) else {
            return Err(challenge.unauthorized(None));
        };
        let token = match token {
            Ok(token) => token,
            Err(why) => return Err(challenge.unauthorized(Some(("invalid_request", why)))),
        };
        match self.verify(token).await {
            Ok(principal) => Ok(principal),
            Err(Invalid::Token(why)) => {
                tracing::debug!(why, "refused an access token");
                Err(challenge.unauthorized(Some(("invalid_token", why))))
            }
            Err(Invalid::IssuerDown) => Err(challenge.unauthorized(Some((
                "invalid_token",
                "the token cannot be checked now: the authorization server's keys are unavailable",
            )))),
            Err(Invalid::IntrospectionDown) => Err(challenge.unauthorized(Some((
                "invalid_token",
                "the token cannot be checked now: the authorization server's introspection endpoint is unavailable",
            )))),
        }
    }

    /// The verdict `lacking` on `principal`'s call, as HTTP shows it:
    /// `403 insufficient_scope`, naming what to step up to.
    pub fn forbid(&self, principal: &Principal, lacking: &Lacking) -> Refusal {
        let challenge = challenge::Challenge::new(self.metadata.url(), &self.settings.scopes);
        challenge.insufficient_scope(lacking, &principal.scopes)
    }

    /// The token's principal, once its signature and claims check out.
    async fn verify(&self, token: &str) -> Result<Principal, Invalid> {
        if !introspect::is_jwt(token) {
            let Some(introspector) = &self.introspector else {
                return Err(Invalid::Token(
                    "not a JWT, and this server checks no opaque tokens (no introspection configured)",
                ));
            };
            return introspector.check(token, &self.settings).await.map_err(|unchecked| match unchecked {
                Unchecked::Refused(why) => Invalid::Token(why),
                Unchecked::IssuerDown => Invalid::IntrospectionDown,
            });
        }
        // A client sends the same token with every request: its verdict is
        // remembered by the token's hash, so its signature is checked once.
        let remembered = token_cache::key(token);
        let now = Instant::now();
        if let Some(verdict) = self.verdicts.lock().expect("the JWT verdicts").get(&remembered, now) {
            return verdict.map_err(Invalid::Token);
        }
        let header = token::header(token).map_err(Invalid::Token)?;
        let key = match self.keys.key_for(header.kid.as_deref(), header.alg).await {
            Ok(key) => key,
            Err(KeyError::Unavailable) => return Err(Invalid::IssuerDown),
            Err(KeyError::Unknown) => return Err(Invalid::Token("no key of the issuer signed this token")),
            Err(KeyError::Mismatch) => {
                return Err(Invalid::Token("the key named by `kid` is not one for the token's `alg`"));
            }
        };
        let verdict = token::verify(token, &key, header.alg, &self.settings);
        let mut verdicts = self.verdicts.lock().expect("the JWT verdicts");
        match verdict {
            Ok(token::Verified { principal, exp }) => {
                let unix_now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default().as_secs_f64();
                verdicts.put(remembered, Ok(principal.clone()), now + remember_for(exp, unix_now), now);
                Ok(principal)
            }
            Err(why) => {
                // A token that is not valid yet may be later; any other
                // refusal stands (a bad signature, an expiry, a claim).
                if why != token::NOT_YET {
                    verdicts.put(remembered, Err(why), now + REMEMBER_JWT, now);
                }
                Err(Invalid::Token(why))
            }
        }
    }
}

/// How long to remember that a token expiring at `exp` verified, at
/// `unix_now`: never past its own `exp` (without the leeway its check
/// allows), and at most [`REMEMBER_JWT`].
fn remember_for(exp: f64, unix_now: f64) -> Duration {
    Duration::try_from_secs_f64((exp - unix_now).max(0.0)).unwrap_or_default().min(REMEMBER_JWT)
}

/// Why a token was not admitted.
enum Invalid {
    /// The token is bad; the reason is for the client (it quotes nothing
    /// of the token).
    Token(&'static str),
    /// The issuer's keys could not be fetched: fail closed.
    IssuerDown,
    /// The issuer could not be asked about an opaque token: fail closed.
    IntrospectionDown,
}

/// The bearer token in `Authorization`, if the header is there; an error
/// if it is there but not a single well-formed Bearer credential.
fn bearer(parts: &http::request::Parts) -> Option<Result<&str, &'static str>> {
    let mut values = parts.headers.get_all(http::header::AUTHORIZATION).iter();
    let value = values.next()?;
    if values.next().is_some() {
        return Some(Err("more than one Authorization header"));
    }
    let parsed = value.to_str().ok().and_then(|text| {
        let (scheme, token) = text.split_once(' ')?;
        let token = token.trim();
        let well_formed = !token.is_empty() && !token.contains(' ');
        (scheme.eq_ignore_ascii_case("bearer") && well_formed).then_some(token)
    });
    Some(parsed.ok_or("the Authorization header is not `Bearer TOKEN`"))
}

/// Whether a query string carries an access token (RFC 6750 §2.3, which
/// the MCP profile forbids).
fn query_has_token(query: Option<&str>) -> bool {
    query.is_some_and(|query| {
        query.split('&').any(|pair| pair.split('=').next().is_some_and(|name| name == "access_token"))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_refuse_what_cannot_be_an_issuer_or_resource() {
        let ok =
            |issuer: &str| AuthSettings::new(issuer.into(), "https://mcp.example.com/mcp".into(), vec![]);
        assert!(ok("https://login.example.com/realms/x").is_ok());
        assert!(ok("http://127.0.0.1:8080").is_ok());
        assert!(ok("http://login.example.com").is_err());
        assert!(ok("https://login.example.com/?tenant=1").is_err());
        assert!(ok("not a url").is_err());
        let scopes = AuthSettings::new(
            "https://a.example".into(),
            "https://b.example/mcp".into(),
            vec!["tools:read".into(), "bad scope".into()],
        );
        assert!(scopes.is_err());
    }

    #[test]
    fn a_verified_jwt_is_remembered_a_minute_at_most_and_never_past_its_exp() {
        let now = 1_800_000_000.0;
        assert_eq!(remember_for(now + 3600.0, now), REMEMBER_JWT);
        assert_eq!(remember_for(now + 10.0, now), Duration::from_secs(10));
        // Within the leeway past `exp`: admitted, but not remembered.
        assert_eq!(remember_for(now - 30.0, now), Duration::ZERO);
        assert_eq!(remember_for(f64::NAN, now), Duration::ZERO);
    }

    #[test]
    fn only_a_single_bearer_header_is_a_token() {
        let parts = |values: &[&str]| {
            let mut request = http::Request::get("/mcp");
            for value in values {
                request = request.header("authorization", *value);
            }
            request.body(()).unwrap().into_parts().0
        };
        assert_eq!(bearer(&parts(&[])), None);
        assert_eq!(bearer(&parts(&["Bearer abc.def.ghi"])), Some(Ok("abc.def.ghi")));
        assert_eq!(bearer(&parts(&["bearer abc"])), Some(Ok("abc")));
        assert!(matches!(bearer(&parts(&["Basic dXNlcg=="])), Some(Err(_))));
        assert!(matches!(bearer(&parts(&["Bearer a", "Bearer b"])), Some(Err(_))));
        assert!(query_has_token(Some("x=1&access_token=abc")));
        assert!(!query_has_token(Some("not_access_token=1")));
    }
}
