//! The issuer's signing keys, cached: fetched on the first token, again
//! when they are older than [`MAX_AGE`], and again — at most once per
//! [`MIN_REFRESH`] — when a token names a key id the cache does not hold
//! (the issuer may have rotated its keys). A fetch that fails is not
//! retried for [`RETRY_AFTER_FAILURE`]: meanwhile tokens are refused at
//! once (fail closed) rather than each waiting on a dead issuer.

use std::time::{Duration, Instant};

use jsonwebtoken::Algorithm;
use jsonwebtoken::jwk::{AlgorithmParameters, EllipticCurve, Jwk, KeyAlgorithm};
use tokio::sync::Mutex;

use super::issuer::Issuer;

/// How long fetched keys are used before they are fetched again (so a key
/// the issuer withdrew stops being trusted).
const MAX_AGE: Duration = Duration::from_secs(10 * 60);
/// The least time between two fetches for an unknown key id.
const MIN_REFRESH: Duration = Duration::from_secs(30);
/// After a failed fetch, how long tokens are refused before trying again.
const RETRY_AFTER_FAILURE: Duration = Duration::from_secs(5);

/// Why no key was found for a token.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum KeyError {
    /// The issuer's keys could not be fetched.
    Unavailable,
    /// No key of the issuer has that id (after a refresh, if one was due).
    Unknown,
    /// The key with that id is not one for the token's algorithm.
    Mismatch,
}

/// The keys, and when they were fetched.
pub(super) struct KeyCache {
    issuer: Issuer,
    /// Held across a fetch, so concurrent tokens wait for one fetch
    /// instead of each starting their own.
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    keys: Vec<Jwk>,
    fetched: Option<Instant>,
    failed: Option<Instant>,
    refreshed_for_unknown: Option<Instant>,
}

impl KeyCache {
    pub(super) fn new(issuer: Issuer) -> Self {
        KeyCache { issuer, state: Mutex::default() }
    }

    /// The key that verifies a token with header `kid` and `alg`.
    pub(super) async fn key_for(&self, kid: Option<&str>, alg: Algorithm) -> Result<Jwk, KeyError> {
        let mut state = self.state.lock().await;
        if state.fetched.is_none_or(|at| at.elapsed() >= MAX_AGE) {
            self.fetch(&mut state).await?;
        }
        match find(&state.keys, kid, alg) {
            Err(KeyError::Unknown) => {}
            found => return found,
        }
        if state.refreshed_for_unknown.is_some_and(|at| at.elapsed() < MIN_REFRESH) {
            return Err(KeyError::Unknown);
        }
        state.refreshed_for_unknown = Some(Instant::now());
        tracing::info!("a token names a key the cache does not hold; fetching the issuer's keys again");
        self.fetch(&mut state).await?;
        find(&state.keys, kid, alg)
    }

    /// Replaces the keys with the issuer's; on failure, none are kept.
    async fn fetch(&self, state: &mut State) -> Result<(), KeyError> {
        if state.failed.is_some_and(|at| at.elapsed() < RETRY_AFTER_FAILURE) {
            return Err(KeyError::Unavailable);
        }
        match self.issuer.keys().await {
            Ok(keys) => {
                tracing::debug!(keys = keys.len(), "fetched the authorization server's keys");
                *state = State { keys, fetched: Some(Instant::now()), failed: None, ..std::mem::take(state) };
                Ok(())
            }
            Err(err) => {
                tracing::warn!(
                    err = format!("{err:#}"),
                    "cannot fetch the authorization server's keys: refusing every token until it answers"
                );
                *state = State { failed: Some(Instant::now()), ..std::mem::take(state) };
                state.keys.clear();
                state.fetched = None;
                Err(KeyError::Unavailable)
            }
        }
    }
}

/// The key among `keys` for a token with `kid` and `alg`: the one with
/// that id, or without an id in the token, the only one fit for `alg`.
fn find(keys: &[Jwk], kid: Option<&str>, alg: Algorithm) -> Result<Jwk, KeyError> {
    match kid {
        Some(kid) => {
            let key =
                keys.iter().find(|key| key.common.key_id.as_deref() == Some(kid)).ok_or(KeyError::Unknown)?;
            if fits(key, alg) { Ok(key.clone()) } else { Err(KeyError::Mismatch) }
        }
        None => {
            let mut fit = keys.iter().filter(|key| fits(key, alg));
            match (fit.next(), fit.next()) {
                (Some(key), None) => Ok(key.clone()),
                // Several could be meant: the token must say which.
                _ => Err(KeyError::Unknown),
            }
        }
    }
}

/// Whether `key` may verify a signature made with `alg`: its type and
/// curve are the algorithm's, and its own `alg`, if it names one, is `alg`.
fn fits(key: &Jwk, alg: Algorithm) -> bool {
    use Algorithm::*;
    let kind = match (&key.algorithm, alg) {
        (AlgorithmParameters::RSA(_), RS256 | RS384 | RS512 | PS256 | PS384 | PS512) => true,
        (AlgorithmParameters::EllipticCurve(ec), ES256) => ec.curve == EllipticCurve::P256,
        (AlgorithmParameters::EllipticCurve(ec), ES384) => ec.curve == EllipticCurve::P384,
        (AlgorithmParameters::OctetKeyPair(okp), EdDSA) => okp.curve == EllipticCurve::Ed25519,
        // Symmetric keys never: a JWKS is public.
        _ => false,
    };
    kind && key.common.key_algorithm.as_ref().is_none_or(|named| same(named, alg))
}

/// Whether a JWK's `alg` names the JWS algorithm `alg`.
fn same(named: &KeyAlgorithm, alg: Algorithm) -> bool {
    format!("{named:?}") == format!("{alg:?}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn jwk(value: serde_json::Value) -> Jwk {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn a_key_serves_only_the_algorithms_of_its_type_curve_and_alg() {
        let ed = jwk(
            json!({"kty": "OKP", "crv": "Ed25519", "x": "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo", "kid": "ed"}),
        );
        let rsa = jwk(json!({"kty": "RSA", "n": "sXch", "e": "AQAB", "alg": "RS256", "kid": "rsa"}));
        let keys = vec![ed.clone(), rsa.clone()];
        assert_eq!(find(&keys, Some("ed"), Algorithm::EdDSA), Ok(ed.clone()));
        assert_eq!(find(&keys, Some("ed"), Algorithm::RS256), Err(KeyError::Mismatch));
        assert_eq!(find(&keys, Some("rsa"), Algorithm::PS256), Err(KeyError::Mismatch));
        assert_eq!(find(&keys, Some("rsa"), Algorithm::RS256), Ok(rsa));
        assert_eq!(find(&keys, Some("gone"), Algorithm::EdDSA), Err(KeyError::Unknown));
        assert_eq!(find(&keys, None, Algorithm::EdDSA), Ok(ed));
        assert_eq!(find(&keys, None, Algorithm::HS256), Err(KeyError::Unknown));
    }
}
