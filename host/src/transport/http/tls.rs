//! HTTPS where nothing in front terminates TLS (`--tls-cert`, `--tls-key`):
//! rustls on the ring provider, HTTP/1.1 only (ALPN `http/1.1`).
//!
//! The certificate is reloaded when its files change (checked every
//! [`POLL`]), so a renewal (cert-manager, certbot) needs no restart; a new
//! pair that does not load — unreadable, a key that does not match — is
//! logged and the old one keeps serving. The files are read bounded
//! ([`MAX_PEM`] each). A handshake gets the header timeout to finish, so a
//! client that stalls in it does not hold a connection slot for long.

use std::io::Read as _;
use std::path::Path;
use std::sync::{Arc, RwLock, Weak};
use std::time::{Duration, SystemTime};

use anyhow::{Context as _, Result, bail};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject as _;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;
use tokio::net::TcpStream;
use tokio_rustls::TlsAcceptor;
use tokio_rustls::server::TlsStream;

use crate::config::TlsFiles;

/// The largest certificate chain or key file read.
const MAX_PEM: u64 = 1 << 20;
/// How often the files are checked for a change.
const POLL: Duration = Duration::from_secs(2);

/// Accepts TLS connections with the current certificate.
pub(super) struct Tls {
    acceptor: TlsAcceptor,
    /// Kept so the reloading task, which holds it weakly, runs as long as this.
    _resolver: Arc<Resolver>,
}

impl Tls {
    /// Loads the pair (an error if it does not load) and starts watching it.
    pub(super) fn new(files: TlsFiles) -> Result<Self> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let key = load(&files, &provider)?;
        let resolver = Arc::new(Resolver { current: RwLock::new(Arc::new(key)) });
        let mut config = rustls::ServerConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .context("cannot set up TLS")?
            .with_no_client_auth()
            .with_cert_resolver(resolver.clone());
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        tokio::spawn(reload(files, provider, Arc::downgrade(&resolver)));
        Ok(Tls { acceptor: TlsAcceptor::from(Arc::new(config)), _resolver: resolver })
    }

    /// The TLS stream over `stream`, once its handshake is done within
    /// `timeout`; `None` (logged at debug) if it fails or takes longer.
    pub(super) async fn accept(&self, stream: TcpStream, timeout: Duration) -> Option<TlsStream<TcpStream>> {
        match tokio::time::timeout(timeout, self.acceptor.accept(stream)).await {
            Ok(Ok(stream)) => Some(stream),
            Ok(Err(err)) => {
                tracing::debug!(%err, "TLS handshake failed");
                None
            }
            Err(_) => {
                tracing::debug!("TLS handshake took longer than --http-header-timeout");
                None
            }
        }
    }
}

/// Hands every handshake the pair loaded last.
#[derive(Debug)]
struct Resolver {
    current: RwLock<Arc<CertifiedKey>>,
}

impl ResolvesServerCert for Resolver {
    fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(self.current.read().expect("the certificate lock").clone())
    }
}

/// Swaps in the pair whenever the files change, until the [`Tls`] is gone.
async fn reload(files: TlsFiles, provider: Arc<CryptoProvider>, resolver: Weak<Resolver>) {
    let mut seen = stamp(&files);
    loop {
        tokio::time::sleep(POLL).await;
        let Some(resolver) = resolver.upgrade() else { return };
        let now = stamp(&files);
        if now == seen {
            continue;
        }
        seen = now;
        // Read off the reactor: the files may be on a slow disk.
        let (loading, provider) = (files.clone(), provider.clone());
        match tokio::task::spawn_blocking(move || load(&loading, &provider)).await {
            Ok(Ok(key)) => {
                *resolver.current.write().expect("the certificate lock") = Arc::new(key);
                tracing::info!(cert = %files.cert.display(), "TLS certificate reloaded");
            }
            Ok(Err(err)) => tracing::warn!(
                err = format!("{err:#}"),
                "the new TLS certificate or key does not load; still serving the previous one"
            ),
            Err(err) => tracing::warn!(%err, "reloading the TLS certificate failed"),
        }
    }
}

/// What identifies a version of the two files: each one's mtime, length
/// and inode (a renewal that renames a new file in place changes the inode
/// even when mtime and length look the same).
type Stamp = [Option<(SystemTime, u64, u64)>; 2];

fn stamp(files: &TlsFiles) -> Stamp {
    let of = |path: &Path| {
        let meta = std::fs::metadata(path).ok()?;
        #[cfg(unix)]
        let inode = std::os::unix::fs::MetadataExt::ino(&meta);
        #[cfg(not(unix))]
        let inode = 0;
        Some((meta.modified().ok()?, meta.len(), inode))
    };
    [of(&files.cert), of(&files.key)]
}

/// The pair in `files`, checked: a chain, a key the provider can sign
/// with, and the key is the chain's first certificate's.
fn load(files: &TlsFiles, provider: &CryptoProvider) -> Result<CertifiedKey> {
    let cert_pem = read(&files.cert, "--tls-cert")?;
    let chain = CertificateDer::pem_slice_iter(&cert_pem)
        .collect::<Result<Vec<_>, _>>()
        .with_context(|| format!("--tls-cert {}: not PEM certificates", files.cert.display()))?;
    if chain.is_empty() {
        bail!("--tls-cert {}: no CERTIFICATE in it", files.cert.display());
    }
    let key_pem = read(&files.key, "--tls-key")?;
    let key = PrivateKeyDer::from_pem_slice(&key_pem)
        .with_context(|| format!("--tls-key {}: no PEM private key in it", files.key.display()))?;
    CertifiedKey::from_der(chain, key, provider).with_context(|| {
        format!("--tls-key {} does not fit --tls-cert {}", files.key.display(), files.cert.display())
    })
}

/// The bytes of `path`, at most [`MAX_PEM`].
fn read(path: &Path, flag: &str) -> Result<Vec<u8>> {
    let what = || format!("cannot read {flag} {}", path.display());
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .with_context(what)?
        .take(MAX_PEM + 1)
        .read_to_end(&mut bytes)
        .with_context(what)?;
    if bytes.len() as u64 > MAX_PEM {
        bail!("{flag} {} is larger than {MAX_PEM} bytes", path.display());
    }
    Ok(bytes)
}
