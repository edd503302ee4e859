//! An HTTP answer's body read under a bound: what the host fetches itself
//! (a registry's manifests, an issuer's discovery document and keys, an
//! introspection answer) is refused past its bound, whatever
//! `Content-Length` claims, before more is read.

use anyhow::{Context as _, Result, bail};
use reqwest::Response;

/// The body of `response`, refused past `max` bytes (whatever its
/// `Content-Length` says) before more is read.
pub async fn read_bounded(mut response: Response, max: usize, what: impl Fn() -> String) -> Result<Vec<u8>> {
    if response.content_length().is_some_and(|length| length > max as u64) {
        bail!("{} is larger than {max} bytes", what());
    }
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await.with_context(|| format!("reading {}", what()))? {
        if body.len() + chunk.len() > max {
            bail!("{} is larger than {max} bytes", what());
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}
