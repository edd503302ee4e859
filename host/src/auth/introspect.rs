//! Opaque access tokens, checked by asking the issuer (Token Introspection,
//! RFC 7662): a token that is not a JWT is POSTed to the issuer's
//! introspection endpoint, the host authenticating as an OAuth client
//! (HTTP Basic, RFC 6749 §2.3.1), and the answer is checked as a JWT's
//! claims are: `active`, `aud` names this resource (RFC 8707), `iss` (if
//! given) is the issuer, `exp`/`nbf` hold with the same leeway, `sub` is
//! there. `sub` is required, never made up from `client_id`: a principal
//! is `iss` + `sub`, and a client id could collide with a user's subject.
//!
//! Bounded like the JWKS fetch: [`ISSUER_TIMEOUT`] for the whole check
//! (waiting for one of [`MAX_IN_FLIGHT`] slots included), at most
//! [`MAX_ANSWER`] bytes of answer, no redirects, HTTPS unless on loopback.
//! An issuer that cannot answer fails closed. Verdicts are cached (see
//! [`token_cache`](super::token_cache)) so the issuer sees one request per
//! token a minute, and a flood of bad tokens is answered from memory.

use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{Context as _, Result, anyhow, bail};
use base64::Engine as _;
use reqwest::Url;
use serde::Deserialize;
use tokio::sync::{OnceCell, Semaphore};

use super::issuer::{ISSUER_TIMEOUT, Issuer, is_loopback};
use super::token_cache::{self, MAX_ENTRIES, TokenCache, Verdict};
use super::{AuthSettings, Principal};
use crate::bounded_body::read_bounded;
use crate::log_text::escaped;

/// The largest introspection answer read (real ones are a few hundred bytes).
const MAX_ANSWER: usize = 64 << 10;
/// The longest opaque token sent to the issuer; longer ones are refused
/// without asking.
const MAX_TOKEN: usize = 8 << 10;
/// Introspection requests in flight at once: distinct tokens beyond this
/// wait (within [`ISSUER_TIMEOUT`]) rather than pile onto the issuer.
const MAX_IN_FLIGHT: usize = 16;
/// The longest an active token's verdict is reused (less if it expires sooner).
const ACTIVE_FOR: Duration = Duration::from_secs(60);
/// How long a refused token's verdict is reused.
const REFUSED_FOR: Duration = Duration::from_secs(10);
/// Clock skew allowed on `exp` and `nbf`, in seconds (as for JWTs).
const LEEWAY: f64 = 60.0;

/// `--auth-introspection-url`, `--auth-client-id`, `--auth-client-secret-file`
/// (or `[server.auth]`): how the host asks about opaque tokens.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IntrospectionSettings {
    /// The endpoint, if given; else the one the issuer's discovery document names.
    pub url: Option<String>,
    /// The host's client id at the issuer.
    pub client_id: String,
    /// Its client secret (read from a file, never from the command line).
    pub client_secret: ClientSecret,
}

impl IntrospectionSettings {
    /// Checks the URL (absolute, HTTPS unless on loopback) and that the
    /// credentials are not empty.
    pub fn new(url: Option<String>, client_id: String, client_secret: String) -> Result<Self> {
        if let Some(url) = &url {
            let parsed =
                Url::parse(url).with_context(|| format!("--auth-introspection-url {url:?} is not a URL"))?;
            check_endpoint(&parsed)?;
        }
        if client_id.is_empty() || client_id.chars().any(char::is_control) {
            bail!("--auth-client-id must be a non-empty client id without control characters");
        }
        if client_secret.is_empty() {
            bail!("--auth-client-secret-file holds no secret");
        }
        Ok(IntrospectionSettings { url, client_id, client_secret: ClientSecret(client_secret) })
    }
}

/// A client secret; `Debug` does not show it.
#[derive(Clone, PartialEq, Eq)]
pub struct ClientSecret(String);

impl std::fmt::Debug for ClientSecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ClientSecret(..)")
    }
}

/// The endpoint must be HTTPS unless on loopback.
fn check_endpoint(url: &Url) -> Result<()> {
    if url.scheme() != "https" && !(url.scheme() == "http" && is_loopback(url)) {
        bail!(
            "the introspection endpoint {} must be https:// (plain http only on loopback)",
            escaped(url.as_str())
        );
    }
    Ok(())
}

/// Whether `token` is shaped as a JWT: three base64url parts, the first a
/// JSON object with `alg`. Anything else is opaque (its `alg`, even
/// `none`, is then the JWT checks' to refuse).
pub(super) fn is_jwt(token: &str) -> bool {
    let mut parts = token.split('.');
    let (Some(header), Some(_), Some(_), None) = (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return false;
    };
    let Ok(decoded) = base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(header) else { return false };
    serde_json::from_slice::<serde_json::Map<String, serde_json::Value>>(&decoded)
        .is_ok_and(|header| header.contains_key("alg"))
}

/// Why an opaque token got no verdict.
pub(super) enum Unchecked {
    /// A verdict: the token is refused, for this reason.
    Refused(&'static str),
    /// The issuer could not be asked (down, slow, refusing the host's
    /// credentials, answering nonsense): fail closed.
    IssuerDown,
}

/// Asks the issuer about opaque tokens, and remembers what it said.
pub(super) struct Introspector {
    settings: IntrospectionSettings,
    /// For its discovery document, when no endpoint is given.
    issuer: Issuer,
    client: reqwest::Client,
    endpoint: OnceCell<Url>,
    cache: Mutex<TokenCache>,
    in_flight: Semaphore,
}

impl Introspector {
    pub(super) fn new(settings: IntrospectionSettings, issuer: &str) -> Result<Self> {
        let issuer = Issuer::new(issuer)?;
        // The endpoint's scheme is checked before each use (check_endpoint),
        // and redirects are never followed, so no plain-HTTP hop can sneak in.
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .connect_timeout(ISSUER_TIMEOUT)
            .timeout(ISSUER_TIMEOUT)
            .build()
            .context("cannot set up the client for token introspection")?;
        Ok(Introspector {
            settings,
            issuer,
            client,
            endpoint: OnceCell::new(),
            cache: Mutex::new(TokenCache::new(MAX_ENTRIES)),
            in_flight: Semaphore::new(MAX_IN_FLIGHT),
        })
    }

    /// The principal of opaque `token`, from the cache or the issuer.
    pub(super) async fn check(&self, token: &str, auth: &AuthSettings) -> Result<Principal, Unchecked> {
        if token.len() > MAX_TOKEN {
            return Err(Unchecked::Refused("the token is too long"));
        }
        let key = token_cache::key(token);
        if let Some(verdict) = self.cache.lock().expect("the token cache").get(&key, Instant::now()) {
            return verdict.map_err(Unchecked::Refused);
        }
        let asking = async {
            let _slot = self.in_flight.acquire().await.context("introspection is shut down")?;
            self.ask(token).await
        };
        let answer = match tokio::time::timeout(ISSUER_TIMEOUT, asking).await {
            Ok(Ok(answer)) => answer,
            Ok(Err(err)) => return Err(down(err)),
            Err(_) => return Err(down(anyhow!("no answer within {}s", ISSUER_TIMEOUT.as_secs()))),
        };
        let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default().as_secs_f64();
        let verdict = judge(&answer, auth, now);
        let lifetime = match (&verdict, answer.exp.as_ref().and_then(serde_json::Value::as_f64)) {
            (Ok(_), Some(exp)) => ACTIVE_FOR.min(Duration::from_secs_f64((exp - now).clamp(0.0, 3600.0))),
            (Ok(_), None) => ACTIVE_FOR,
            (Err(_), _) => REFUSED_FOR,
        };
        let at = Instant::now();
        self.cache.lock().expect("the token cache").put(key, verdict.clone(), at + lifetime, at);
        verdict.map_err(Unchecked::Refused)
    }

    /// The issuer's answer about `token`.
    async fn ask(&self, token: &str) -> Result<Answer> {
        let endpoint = self.endpoint.get_or_try_init(|| self.find_endpoint()).await?;
        let basic = format!("{}:{}", form(&self.settings.client_id), form(&self.settings.client_secret.0));
        let mut authorization = reqwest::header::HeaderValue::try_from(format!(
            "Basic {}",
            base64::prelude::BASE64_STANDARD.encode(basic)
        ))
        .context("the client credentials do not fit in a header")?;
        authorization.set_sensitive(true);
        let response = self
            .client
            .post(endpoint.clone())
            .header(reqwest::header::AUTHORIZATION, authorization)
            .header(reqwest::header::CONTENT_TYPE, "application/x-www-form-urlencoded")
            .header(reqwest::header::ACCEPT, "application/json")
            .body(format!("token={}&token_type_hint=access_token", form(token)))
            .send()
            .await
            .map_err(|err| anyhow::Error::new(err.without_url()))
            .context("cannot reach the introspection endpoint")?;
        let status = response.status();
        if status == reqwest::StatusCode::UNAUTHORIZED || status == reqwest::StatusCode::FORBIDDEN {
            bail!(
                "the introspection endpoint refused the host's client credentials ({status}); check --auth-client-id and --auth-client-secret-file"
            );
        }
        if !status.is_success() {
            bail!("the introspection endpoint answered {status}");
        }
        let body = read_bounded(response, MAX_ANSWER, || "the introspection answer".to_string()).await?;
        serde_json::from_slice(&body).context("the introspection answer is not JSON with a boolean `active`")
    }

    /// The endpoint given, or the one the issuer's discovery document names.
    async fn find_endpoint(&self) -> Result<Url> {
        let url = match &self.settings.url {
            Some(url) => Url::parse(url).context("--auth-introspection-url is not a URL")?,
            None => self
                .issuer
                .introspection_endpoint()
                .await?
                .context("the issuer's discovery document names no introspection_endpoint; give --auth-introspection-url")?,
        };
        check_endpoint(&url)?;
        Ok(url)
    }
}

/// Logs why the issuer could not be asked (never the token), and fails closed.
fn down(err: anyhow::Error) -> Unchecked {
    tracing::warn!(err = format!("{err:#}"), "cannot introspect an access token: refusing it");
    Unchecked::IssuerDown
}

/// An introspection answer (RFC 7662 §2.2): the members the host checks.
/// The looser ones are JSON values, so an odd type is a refusal, not a
/// failure to read the answer.
#[derive(Deserialize)]
struct Answer {
    active: bool,
    #[serde(default)]
    scope: Option<serde_json::Value>,
    #[serde(default)]
    client_id: Option<serde_json::Value>,
    #[serde(default)]
    sub: Option<serde_json::Value>,
    #[serde(default)]
    aud: Option<serde_json::Value>,
    #[serde(default)]
    iss: Option<serde_json::Value>,
    #[serde(default)]
    exp: Option<serde_json::Value>,
    #[serde(default)]
    nbf: Option<serde_json::Value>,
    /// RFC 7662's `token_type`, and Keycloak's `typ`: a refresh token is
    /// not an access token, even when the issuer calls it active.
    #[serde(default)]
    token_type: Option<serde_json::Value>,
    #[serde(default)]
    typ: Option<serde_json::Value>,
}

/// The principal an answer grants, at unix time `now`, or why it grants none.
fn judge(answer: &Answer, auth: &AuthSettings, now: f64) -> Verdict {
    use serde_json::Value;
    if !answer.active {
        return Err("the token is not active (revoked, expired, or unknown to the issuer)");
    }
    let refresh = |kind: &Option<Value>| {
        kind.as_ref()
            .and_then(Value::as_str)
            .is_some_and(|kind| kind.to_ascii_lowercase().starts_with("refresh"))
    };
    if refresh(&answer.token_type) || refresh(&answer.typ) {
        return Err("a refresh token is not an access token");
    }
    match text(&answer.iss) {
        None => {}
        Some(Ok(iss)) if iss == auth.issuer => {}
        Some(_) => return Err("the token is from another issuer (iss)"),
    }
    let audience_ok = match &answer.aud {
        Some(Value::String(aud)) => *aud == auth.resource,
        Some(Value::Array(auds)) => auds.iter().any(|aud| aud.as_str() == Some(auth.resource.as_str())),
        _ => false,
    };
    if !audience_ok {
        return Err("the token is not for this resource (aud)");
    }
    let time = |value: &Option<Value>| value.as_ref().map(|value| value.as_f64().ok_or(()));
    match time(&answer.exp) {
        Some(Err(())) => return Err("the token's exp is not a time"),
        Some(Ok(exp)) if now > exp + LEEWAY => return Err("the token has expired"),
        _ => {}
    }
    match time(&answer.nbf) {
        Some(Err(())) => return Err("the token's nbf is not a time"),
        Some(Ok(nbf)) if nbf > now + LEEWAY => return Err("the token is not valid yet (nbf)"),
        _ => {}
    }
    let subject = match text(&answer.sub) {
        Some(Ok(sub)) if !sub.is_empty() => sub.to_string(),
        _ => return Err("the token names no subject (sub)"),
    };
    let client_id = match text(&answer.client_id) {
        None => None,
        Some(Ok(id)) => Some(id.to_string()),
        Some(Err(())) => return Err("the token's client_id is not a string"),
    };
    let scopes = match text(&answer.scope) {
        None => Vec::new(),
        Some(Ok(scope)) => super::granted_scopes(scope),
        Some(Err(())) => return Err("the token's scope is not a string"),
    };
    Ok(Principal { issuer: auth.issuer.clone(), subject, client_id, scopes })
}

/// A member that must be a string if present: `None` if absent.
fn text(value: &Option<serde_json::Value>) -> Option<Result<&str, ()>> {
    value.as_ref().map(|value| value.as_str().ok_or(()))
}

/// `application/x-www-form-urlencoded` encoding of one value (also what
/// RFC 6749 §2.3.1 asks of client credentials before Basic encoding).
fn form(value: &str) -> String {
    let mut encoded = String::with_capacity(value.len());
    for byte in value.bytes() {
        match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'*' => encoded.push(byte as char),
            b' ' => encoded.push('+'),
            _ => encoded.push_str(&format!("%{byte:02X}")),
        }
    }
    encoded
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn auth() -> AuthSettings {
        AuthSettings::new("https://issuer.example".into(), "https://mcp.example/mcp".into(), vec![]).unwrap()
    }

    fn judged(answer: serde_json::Value) -> Verdict {
        judge(&serde_json::from_value(answer).unwrap(), &auth(), 1_000_000.0)
    }

    #[test]
    fn an_answer_grants_a_principal_only_when_active_for_us_in_time_and_with_a_subject() {
        let good = json!({ "active": true, "sub": "alice", "aud": ["x", "https://mcp.example/mcp"],
                           "iss": "https://issuer.example", "exp": 1_000_030, "scope": "a b", "client_id": "c" });
        let principal = judged(good.clone()).unwrap();
        assert_eq!((principal.subject.as_str(), principal.scopes.len()), ("alice", 2));
        assert_eq!(principal.key(), "https://issuer.example alice");
        let with = |name: &str, value: serde_json::Value| {
            let mut answer = good.clone();
            answer[name] = value;
            judged(answer)
        };
        assert!(with("active", json!(false)).is_err());
        assert!(with("aud", json!("https://other.example/mcp")).is_err());
        assert!(with("aud", json!(null)).is_err());
        assert!(with("iss", json!("https://evil.example")).is_err());
        assert!(with("exp", json!(1_000_000 - 61)).is_err());
        assert!(with("exp", json!(1_000_000 - 59)).is_ok());
        assert!(with("exp", json!("soon")).is_err());
        assert!(with("nbf", json!(1_000_000 + 61)).is_err());
        assert!(with("sub", json!(null)).is_err());
        assert!(with("sub", json!("")).is_err());
        assert!(with("scope", json!(["a"])).is_err());
        assert!(with("token_type", json!("refresh_token")).is_err());
        assert!(with("typ", json!("Refresh")).is_err());
        assert!(with("token_type", json!("Bearer")).is_ok());
    }

    #[test]
    fn only_three_part_tokens_with_a_jwt_header_are_jwts() {
        assert!(is_jwt("eyJhbGciOiJub25lIn0.e30."));
        assert!(is_jwt("eyJhbGciOiJFZERTQSJ9.e30.c2ln"));
        assert!(!is_jwt("opaque-token"));
        assert!(!is_jwt("a.b.c"));
        assert!(!is_jwt("e30.e30.e30"));
        assert!(!is_jwt("eyJhbGciOiJub25lIn0.e30.x.y"));
    }

    #[test]
    fn credentials_are_form_encoded_and_never_shown() {
        assert_eq!(form("a b:c/é"), "a+b%3Ac%2F%C3%A9");
        let settings = IntrospectionSettings::new(None, "host".into(), "s3cret".into()).unwrap();
        assert!(!format!("{settings:?}").contains("s3cret"));
        assert!(
            IntrospectionSettings::new(Some("http://issuer.example/i".into()), "h".into(), "s".into())
                .is_err()
        );
        assert!(
            IntrospectionSettings::new(Some("http://127.0.0.1:9/i".into()), "h".into(), "s".into()).is_ok()
        );
        assert!(IntrospectionSettings::new(None, "h".into(), String::new()).is_err());
    }
}
