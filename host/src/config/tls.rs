//! `--tls-cert`, `--tls-key` and `--behind-tls-proxy`, and the check that
//! bearer tokens never cross a network in clear: with `--auth-issuer` beyond loopback, TLS must be the host's own or be
//! said to be terminated in front of it.

use std::net::SocketAddr;
use std::path::PathBuf;

use anyhow::{Result, bail};
use reqwest::Url;

use super::ServerSettings;
use crate::auth::AuthSettings;

/// `--tls-cert` and `--tls-key`: the PEM files `--http` serves HTTPS with.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TlsFiles {
    /// The certificate chain, the server's own first.
    pub cert: PathBuf,
    /// Its private key.
    pub key: PathBuf,
}

/// The TLS files (`--tls-cert`, `--tls-key`, or their `[server]` keys):
/// both or neither.
pub(super) fn files(server: &ServerSettings) -> Result<Option<TlsFiles>> {
    match (server.tls_cert.clone(), server.tls_key.clone()) {
        (None, None) => Ok(None),
        (Some(cert), Some(key)) => Ok(Some(TlsFiles { cert, key })),
        _ => bail!("--tls-cert and --tls-key (`tls_cert`, `tls_key` in [server]) go together"),
    }
}

/// Refuses settings that would send bearer tokens in clear over a network:
/// auth on an address beyond loopback without TLS (the host's or, with
/// `--behind-tls-proxy`, one in front), or a plain-http resource beyond
/// loopback (clients would send their tokens to it as is).
pub(super) fn check_exposure(
    http: Option<SocketAddr>,
    tls: Option<&TlsFiles>,
    behind_tls_proxy: bool,
    auth: Option<&AuthSettings>,
) -> Result<()> {
    let Some(addr) = http else {
        if tls.is_some() {
            bail!("--tls-cert works only with --http");
        }
        return Ok(());
    };
    let Some(auth) = auth else { return Ok(()) };
    if !addr.ip().is_loopback() && tls.is_none() && !behind_tls_proxy {
        bail!(
            "--auth-issuer on {addr}, beyond loopback, needs TLS: give --tls-cert and --tls-key, or \
             --behind-tls-proxy if an ingress or proxy in front terminates TLS (bearer tokens must not \
             cross a network in clear)"
        );
    }
    let resource = Url::parse(&auth.resource)?;
    if resource.scheme() == "http" && !is_loopback(&resource) {
        if !behind_tls_proxy {
            bail!(
                "--auth-resource {} is plain http beyond loopback: clients would send their tokens \
                 in clear; name the https:// URL they use (or give --behind-tls-proxy if TLS is \
                 added on the way, e.g. by a service mesh)",
                auth.resource
            );
        }
        tracing::warn!(resource = %auth.resource, "--auth-resource is plain http: clients must reach it through TLS");
    } else if resource.scheme() == "http" && tls.is_some() {
        tracing::warn!(
            resource = %auth.resource,
            "--auth-resource is http:// but the host serves https://: clients compare the two"
        );
    }
    Ok(())
}

/// Whether `url` names a loopback host.
fn is_loopback(url: &Url) -> bool {
    let Some(host) = url.host_str() else { return false };
    let ip = host.trim_start_matches('[').trim_end_matches(']').parse::<std::net::IpAddr>();
    host.eq_ignore_ascii_case("localhost") || ip.is_ok_and(|ip| ip.is_loopback())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn auth(resource: &str) -> AuthSettings {
        AuthSettings::new("https://login.example.com".into(), resource.into(), vec![]).unwrap()
    }

    #[test]
    fn tokens_beyond_loopback_need_tls_here_or_in_front() {
        let files = TlsFiles { cert: "c.pem".into(), key: "k.pem".into() };
        let public: SocketAddr = "0.0.0.0:8080".parse().unwrap();
        let local: SocketAddr = "127.0.0.1:8080".parse().unwrap();
        let https = auth("https://mcp.example.com/mcp");
        let err = check_exposure(Some(public), None, false, Some(&https)).unwrap_err().to_string();
        assert!(err.contains("--tls-cert") && err.contains("--behind-tls-proxy"), "{err}");
        assert!(check_exposure(Some(public), Some(&files), false, Some(&https)).is_ok());
        assert!(check_exposure(Some(public), None, true, Some(&https)).is_ok());
        assert!(check_exposure(Some(local), None, false, Some(&https)).is_ok());
        assert!(check_exposure(Some(public), None, false, None).is_ok());
        // A plain-http resource: fine on loopback, refused beyond unless TLS is in front.
        assert!(check_exposure(Some(local), None, false, Some(&auth("http://127.0.0.1/mcp"))).is_ok());
        let plain = auth("http://mcp.example.com/mcp");
        assert!(check_exposure(Some(local), None, false, Some(&plain)).is_err());
        assert!(check_exposure(Some(public), None, true, Some(&plain)).is_ok());
        assert!(check_exposure(None, Some(&files), false, None).is_err());
    }
}
