//! Checking one JWT access token (RFC 9068): its algorithm against the
//! allow-list, its signature against the issuer's key, and its claims —
//! `iss` is the issuer, `aud` names this resource (RFC 8707), `exp` and
//! `nbf` hold (with [`LEEWAY`] for clock skew), and `sub` is there. The
//! header must say `typ: at+jwt` (RFC 9068 §2.1, so an ID token or another
//! JWT of the issuer's cannot pass for an access token) and carry no `crit`
//! (RFC 7515 §4.1.11: this host understands no extension it could list).

use jsonwebtoken::jwk::Jwk;
use jsonwebtoken::{Algorithm, DecodingKey, Header, Validation};
use serde::Deserialize;

use super::{AuthSettings, Principal};

/// Clock skew allowed on `exp` and `nbf`, in seconds.
const LEEWAY: u64 = 60;

/// The only algorithms accepted: asymmetric ones. Never `none` (not even
/// parsed), never HMAC (its "key" would be the issuer's public key).
const ALLOWED: [Algorithm; 9] = [
    Algorithm::RS256,
    Algorithm::RS384,
    Algorithm::RS512,
    Algorithm::PS256,
    Algorithm::PS384,
    Algorithm::PS512,
    Algorithm::ES256,
    Algorithm::ES384,
    Algorithm::EdDSA,
];

/// The token's header, if it is a JWT access token signed with an allowed
/// algorithm.
pub(super) fn header(token: &str) -> Result<Header, &'static str> {
    let header = jsonwebtoken::decode_header(token)
        .map_err(|_| "not a JWT signed with a supported algorithm (alg `none` is refused)")?;
    if !ALLOWED.contains(&header.alg) {
        return Err("the token's algorithm is not allowed (only RS*, PS*, ES256, ES384, EdDSA)");
    }
    let typ = header.typ.as_deref().unwrap_or_default().to_ascii_lowercase();
    if typ != "at+jwt" && typ != "application/at+jwt" {
        return Err("the token is not a JWT access token (typ must be at+jwt, RFC 9068)");
    }
    // jsonwebtoken's `Header` has no `crit` (it would drop one unseen): the
    // header's own JSON, which `decode_header` just read, says.
    if has_crit(token) {
        return Err("the token names critical extensions (crit) this server does not understand");
    }
    Ok(header)
}

/// Whether the JOSE header of `token` (already decoded once, so valid
/// base64url JSON) has a `crit` member.
fn has_crit(token: &str) -> bool {
    use base64::Engine as _;
    let encoded = token.split('.').next().unwrap_or_default();
    let decoded = base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(encoded.trim_end_matches('='));
    let header = decoded.ok().and_then(|bytes| serde_json::from_slice::<serde_json::Map<_, _>>(&bytes).ok());
    // Unreadable here though jsonwebtoken read it: refuse rather than guess.
    header.is_none_or(|header| header.contains_key("crit"))
}

/// The claims read from a valid token, besides those `Validation` checks.
#[derive(Deserialize)]
struct Claims {
    sub: String,
    /// Seconds since the epoch; `Validation` has checked it is there and
    /// not past (with [`LEEWAY`]).
    exp: f64,
    #[serde(default)]
    client_id: Option<String>,
    /// RFC 9068 §2.2.3: space-separated.
    #[serde(default)]
    scope: Option<String>,
    /// Checked by `Validation` when it is a number; jsonwebtoken skips one
    /// of another type, so it is refused here (fail closed, as for `exp`).
    #[serde(default)]
    nbf: Option<serde_json::Value>,
}

/// A token that verified: its principal, and when it expires.
pub(super) struct Verified {
    pub(super) principal: Principal,
    /// Its `exp`, in seconds since the epoch.
    pub(super) exp: f64,
}

/// Why [`verify`] refuses a token that is not valid *yet*: the one refusal
/// that time may turn around, so it is not remembered.
pub(super) const NOT_YET: &str = "the token is not valid yet (nbf)";

/// The token's principal, once `key` verifies its signature (made with
/// `alg`) and its claims check out against `settings`.
pub(super) fn verify(
    token: &str,
    key: &Jwk,
    alg: Algorithm,
    settings: &AuthSettings,
) -> Result<Verified, &'static str> {
    let key = DecodingKey::from_jwk(key).map_err(|_| "the issuer's key cannot be read")?;
    let mut validation = Validation::new(alg);
    validation.leeway = LEEWAY;
    validation.validate_exp = true;
    validation.validate_nbf = true;
    validation.set_issuer(&[&settings.issuer]);
    validation.set_audience(&[&settings.resource]);
    validation.set_required_spec_claims(&["exp", "iss", "aud", "sub"]);
    let data = jsonwebtoken::decode::<Claims>(token, &key, &validation).map_err(|err| {
        use jsonwebtoken::errors::ErrorKind::*;
        match err.kind() {
            InvalidSignature => "the token's signature does not verify",
            ExpiredSignature => "the token has expired",
            ImmatureSignature => NOT_YET,
            InvalidAudience => "the token is not for this resource (aud)",
            InvalidIssuer => "the token is from another issuer (iss)",
            MissingRequiredClaim(_) => "the token lacks a required claim (exp, iss, aud, sub)",
            InvalidAlgorithm => "the token's algorithm does not match its key",
            _ => "the token is malformed",
        }
    })?;
    let claims = data.claims;
    if claims.nbf.as_ref().is_some_and(|nbf| !nbf.is_number()) {
        return Err("the token's nbf is not a number");
    }
    let principal = Principal {
        issuer: settings.issuer.clone(),
        subject: claims.sub,
        client_id: claims.client_id,
        scopes: super::granted_scopes(claims.scope.as_deref().unwrap_or_default()),
    };
    Ok(Verified { principal, exp: claims.exp })
}
