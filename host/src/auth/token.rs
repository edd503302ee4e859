//! Checking one JWT access token (RFC 9068): its algorithm against the
//! allow-list, its signature against the issuer's key, and its claims —
//! `iss` is the issuer, `aud` names this resource (RFC 8707), `exp` and
//! `nbf` hold (with [`LEEWAY`] for clock skew), and `sub` is there.

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

/// The token's header, if it is a JWT signed with an allowed algorithm.
pub(super) fn header(token: &str) -> Result<Header, &'static str> {
    let header = jsonwebtoken::decode_header(token)
        .map_err(|_| "not a JWT signed with a supported algorithm (alg `none` is refused)")?;
    if !ALLOWED.contains(&header.alg) {
        return Err("the token's algorithm is not allowed (only RS*, PS*, ES256, ES384, EdDSA)");
    }
    Ok(header)
}

/// The claims read from a valid token, besides those `Validation` checks.
#[derive(Deserialize)]
struct Claims {
    sub: String,
    #[serde(default)]
    client_id: Option<String>,
    /// RFC 9068 §2.2.3: space-separated.
    #[serde(default)]
    scope: Option<String>,
}

/// The token's principal, once `key` verifies its signature (made with
/// `alg`) and its claims check out against `settings`.
pub(super) fn verify(
    token: &str,
    key: &Jwk,
    alg: Algorithm,
    settings: &AuthSettings,
) -> Result<Principal, &'static str> {
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
            ImmatureSignature => "the token is not valid yet (nbf)",
            InvalidAudience => "the token is not for this resource (aud)",
            InvalidIssuer => "the token is from another issuer (iss)",
            MissingRequiredClaim(_) => "the token lacks a required claim (exp, iss, aud, sub)",
            InvalidAlgorithm => "the token's algorithm does not match its key",
            _ => "the token is malformed",
        }
    })?;
    let claims = data.claims;
    Ok(Principal {
        issuer: settings.issuer.clone(),
        subject: claims.sub,
        client_id: claims.client_id,
        scopes: claims.scope.unwrap_or_default().split_whitespace().map(String::from).collect(),
    })
}
