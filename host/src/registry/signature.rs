//! cosign signatures, key-based: what `cosign sign --key cosign.key
//! REGISTRY/REPOSITORY@sha256:DIGEST` writes, checked against the user's
//! `cosign.pub`.
//!
//! The convention (cosign's `specs/SIGNATURE_SPEC.md`): the signatures of
//! manifest `sha256:HEX` live under the tag `sha256-HEX.sig` of the same
//! repository; each layer of that manifest is a "simple signing" payload
//!
//! ```json
//! {"critical":{"identity":{"docker-reference":"…"},
//!              "image":{"docker-manifest-digest":"sha256:HEX"},
//!              "type":"cosign container image signature"},"optional":null}
//! ```
//!
//! with its signature — ECDSA P-256 over SHA-256 of the payload's bytes,
//! ASN.1 DER, base64 — in the layer annotation
//! `dev.cosignproject.cosign/signature`. A signature counts only if it
//! verifies with the key *and* its payload names the digest being loaded:
//! a valid signature of another digest is a component changed after signing.
//!
//! Not the `sigstore` crate: its `cosign` feature pulls Fulcio, Rekor,
//! OpenID Connect and a browser launcher, and TLS through openssl or
//! aws-lc (a C build); key-based verification is this file, on RustCrypto's
//! `p256`.

use std::path::{Path, PathBuf};

use anyhow::{Context as _, Result, bail};
use base64::Engine as _;
use p256::ecdsa::signature::Verifier as _;
use p256::ecdsa::{Signature, VerifyingKey};
use p256::pkcs8::{DecodePublicKey as _, EncodePublicKey as _};
use serde::{Deserialize, Serialize};

/// The `critical.type` of a cosign image signature payload.
const PAYLOAD_TYPE: &str = "cosign container image signature";

/// A payload and its signature, as read from the registry (and kept in the
/// store for offline starts, where it is verified again).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Signed {
    /// The simple-signing payload's bytes.
    pub payload: Vec<u8>,
    /// base64 of the DER ECDSA signature.
    pub signature: String,
}

/// A cosign public key (`cosign.pub`: PEM, SubjectPublicKeyInfo, P-256).
#[derive(Clone, Debug)]
pub struct PublicKey {
    key: VerifyingKey,
    path: PathBuf,
    /// `SHA256:HEX` of the key's DER encoding.
    fingerprint: String,
}

/// The payload's fields this host checks.
#[derive(Deserialize)]
struct Payload {
    critical: Critical,
}

#[derive(Deserialize)]
struct Critical {
    image: Image,
    #[serde(rename = "type")]
    kind: String,
}

#[derive(Deserialize)]
struct Image {
    #[serde(rename = "docker-manifest-digest")]
    digest: String,
}

impl PublicKey {
    /// Reads a cosign public key file.
    pub fn load(path: &Path) -> Result<PublicKey> {
        let shown = path.display();
        let meta = std::fs::metadata(path).with_context(|| format!("cannot read signature key {shown}"))?;
        if meta.len() > 64 << 10 {
            bail!("signature key {shown} is too large to be a public key");
        }
        let text =
            std::fs::read_to_string(path).with_context(|| format!("cannot read signature key {shown}"))?;
        let key = VerifyingKey::from_public_key_pem(&text).map_err(|err| {
            anyhow::anyhow!(
                "signature key {shown} is not a cosign public key (PEM `PUBLIC KEY`, ECDSA P-256, \
                 as `cosign generate-key-pair` writes cosign.pub): {err}"
            )
        })?;
        let der = key.to_public_key_der().context("encoding the key")?;
        let fingerprint = super::oci::sha256(der.as_bytes()).replacen("sha256:", "SHA256:", 1);
        Ok(PublicKey { key, path: path.to_owned(), fingerprint })
    }

    /// Who signed, as `inspect` and the log show it: the key file and its fingerprint.
    pub fn signer(&self) -> String {
        format!("{} ({})", self.path.display(), self.fingerprint)
    }
}

/// Why a component's signature is refused.
#[derive(Debug, thiserror::Error)]
pub enum SignatureError {
    /// No `.sig` tag, or no signature layer in it.
    #[error("it is not signed: no cosign signature for {digest} (sign it with `cosign sign --key`)")]
    Unsigned {
        /// The manifest digest that has no signature.
        digest: String,
    },
    /// Signatures exist, none verifies with the key.
    #[error("its signature does not verify with {signer}: signed with another key, or altered")]
    WrongKey {
        /// The key that was required.
        signer: String,
    },
    /// A signature verifies, but over another digest.
    #[error(
        "it was changed after signing: the signature made with {signer} is for {signed}, the \
         component is {digest}"
    )]
    OtherDigest {
        /// The key that verified it.
        signer: String,
        /// What the payload names.
        signed: String,
        /// What is being loaded.
        digest: String,
    },
}

/// The first of `signed` that `key` verifies over `digest`; an error saying
/// what is wrong otherwise.
pub fn verify_any<'a>(key: &PublicKey, signed: &'a [Signed], digest: &str) -> Result<&'a Signed> {
    let mut refusal = SignatureError::Unsigned { digest: digest.into() };
    for candidate in signed {
        match verify(key, candidate, digest) {
            Ok(()) => return Ok(candidate),
            // A verified signature over another digest says the most.
            Err(err @ SignatureError::OtherDigest { .. }) => refusal = err,
            Err(err) if matches!(refusal, SignatureError::Unsigned { .. }) => refusal = err,
            Err(_) => {}
        }
    }
    Err(refusal.into())
}

fn verify(key: &PublicKey, signed: &Signed, digest: &str) -> Result<(), SignatureError> {
    let wrong_key = || SignatureError::WrongKey { signer: key.signer() };
    let der =
        base64::engine::general_purpose::STANDARD.decode(signed.signature.trim()).map_err(|_| wrong_key())?;
    let signature = Signature::from_der(&der).map_err(|_| wrong_key())?;
    key.key.verify(&signed.payload, &signature).map_err(|_| wrong_key())?;
    // Only a payload the key signed is read.
    let payload: Payload = serde_json::from_slice(&signed.payload).map_err(|_| wrong_key())?;
    if payload.critical.kind != PAYLOAD_TYPE || payload.critical.image.digest != digest {
        return Err(SignatureError::OtherDigest {
            signer: key.signer(),
            signed: payload.critical.image.digest,
            digest: digest.into(),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use p256::ecdsa::SigningKey;
    use p256::ecdsa::signature::Signer as _;

    fn key_pair(seed: u8) -> (SigningKey, PublicKey) {
        let signing = SigningKey::from_slice(&[seed; 32]).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("cosign.pub");
        let pem = signing.verifying_key().to_public_key_pem(p256::pkcs8::LineEnding::LF).unwrap();
        std::fs::write(&path, pem).unwrap();
        (signing, PublicKey::load(&path).unwrap())
    }

    fn sign(key: &SigningKey, digest: &str) -> Signed {
        let payload = format!(
            r#"{{"critical":{{"identity":{{"docker-reference":"r/x"}},"image":{{"docker-manifest-digest":"{digest}"}},"type":"{PAYLOAD_TYPE}"}},"optional":null}}"#
        );
        let signature: Signature = key.sign(payload.as_bytes());
        let signature = base64::engine::general_purpose::STANDARD.encode(signature.to_der().as_bytes());
        Signed { payload: payload.into_bytes(), signature }
    }

    #[test]
    fn only_a_signature_by_the_key_over_this_digest_counts() {
        let (signing, key) = key_pair(7);
        let (other, _) = key_pair(9);
        let digest = format!("sha256:{}", "a".repeat(64));
        assert!(verify_any(&key, &[sign(&signing, &digest)], &digest).is_ok());
        let err = verify_any(&key, &[], &digest).unwrap_err().to_string();
        assert!(err.contains("not signed"), "{err}");
        let err = verify_any(&key, &[sign(&other, &digest)], &digest).unwrap_err().to_string();
        assert!(err.contains("does not verify"), "{err}");
        let old = format!("sha256:{}", "b".repeat(64));
        let err = verify_any(&key, &[sign(&signing, &old)], &digest).unwrap_err().to_string();
        assert!(err.contains("changed after signing"), "{err}");
        let mut forged = sign(&signing, &digest);
        forged.payload[0] = b' ';
        assert!(verify_any(&key, &[forged], &digest).is_err(), "a payload changed after signing");
    }
}
