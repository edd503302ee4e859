//! A real OCI registry on loopback for the `oci://` tests: Debian's
//! `docker-registry` (the CNCF distribution registry), started on a free
//! port with its storage in a temp dir, killed when dropped. Components are
//! pushed as `wkg oci push` lays them out, and signed as `cosign sign
//! --key` does, from Rust.

use std::path::{Path, PathBuf};
use std::process::Stdio;

use base64::Engine as _;
use oci_client::client::{ClientConfig, ClientProtocol, Config, ImageLayer};
use oci_client::manifest::OciImageManifest;
use oci_client::secrets::RegistryAuth;
use oci_client::{Client, Reference};
use p256::ecdsa::signature::Signer as _;
use p256::ecdsa::{Signature, SigningKey};
use p256::pkcs8::EncodePublicKey as _;
use tokio::io::{AsyncBufReadExt as _, BufReader};
use tokio::process::{Child, Command};

use crate::harness::Lines;

/// Where the Debian package installs the registry (`scripts/setup.sh` installs it).
const REGISTRY_BINARY: &str = "docker-registry";

/// A registry serving on `127.0.0.1:port`.
pub struct TestRegistry {
    child: Option<Child>,
    /// `127.0.0.1:PORT`.
    pub addr: String,
    storage: tempfile::TempDir,
}

impl TestRegistry {
    /// Starts a registry and waits until it listens. A missing binary fails
    /// the test, saying how to install it.
    pub async fn start() -> TestRegistry {
        let storage = tempfile::tempdir().unwrap();
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let addr = format!("127.0.0.1:{port}");
        let config = storage.path().join("config.yml");
        std::fs::write(
            &config,
            format!(
                "version: 0.1\nlog:\n  level: info\n  accesslog:\n    disabled: true\nstorage:\n  \
                 filesystem:\n    rootdirectory: {}\nhttp:\n  addr: {addr}\n",
                storage.path().join("data").display()
            ),
        )
        .unwrap();
        let mut child = match Command::new(REGISTRY_BINARY)
            .arg("serve")
            .arg(&config)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
        {
            Ok(child) => child,
            Err(err) => panic!(
                "cannot start `{REGISTRY_BINARY}` ({err}): the oci:// tests need Debian's docker-registry \
                 package; run scripts/setup.sh (or apt-get install docker-registry)"
            ),
        };
        let log = std::sync::Arc::new(Lines::<String>::default());
        {
            let (stderr, log) = (child.stderr.take().unwrap(), log.clone());
            tokio::spawn(async move {
                let mut lines = BufReader::new(stderr).lines();
                while let Ok(Some(line)) = lines.next_line().await {
                    log.push(line);
                }
            });
        }
        log.wait_for("the registry to listen", |line| line.contains("listening on")).await;
        TestRegistry { child: Some(child), addr, storage }
    }

    /// Stops the registry (and waits until it has exited).
    pub async fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            child.kill().await.unwrap();
        }
    }

    /// `oci://127.0.0.1:PORT/{path}`.
    pub fn reference(&self, path: &str) -> String {
        format!("oci://{}/{path}", self.addr)
    }

    fn client() -> Client {
        let config = ClientConfig { protocol: ClientProtocol::Http, ..ClientConfig::default() };
        Client::try_from(config).unwrap()
    }

    /// Pushes `wasm` as `wkg oci push` would, to `repository:tag`; returns
    /// the manifest's digest.
    pub async fn push(&self, repository: &str, tag: &str, wasm: &[u8]) -> String {
        self.push_annotated(repository, tag, wasm, None).await
    }

    /// [`Self::push`], with a manifest annotation `padding` of `padding` bytes.
    pub async fn push_annotated(
        &self,
        repository: &str,
        tag: &str,
        wasm: &[u8],
        padding: Option<usize>,
    ) -> String {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let reference = Reference::with_tag(self.addr.clone(), repository.into(), tag.into());
        let layer = ImageLayer::new(wasm.to_vec(), "application/wasm".into(), None);
        let config = format!(
            r#"{{"architecture":"wasm","os":"wasip2","layerDigests":["{}"]}}"#,
            layer.sha256_digest()
        );
        let config = Config::new(config.into_bytes(), "application/vnd.wasm.config.v0+json".into(), None);
        let annotations = padding.map(|size| [("padding".to_string(), "x".repeat(size))].into());
        let manifest = OciImageManifest::build(std::slice::from_ref(&layer), &config, annotations);
        let client = Self::client();
        client.push(&reference, &[layer], config, &RegistryAuth::Anonymous, Some(manifest)).await.unwrap();
        client.fetch_manifest_digest(&reference, &RegistryAuth::Anonymous).await.unwrap()
    }

    /// Signs manifest `digest` in `repository` with `key` as `cosign sign
    /// --key` does: a simple-signing payload naming the digest, its ECDSA
    /// signature in the layer's annotation, under the tag `sha256-HEX.sig`.
    pub async fn sign(&self, repository: &str, digest: &str, key: &SigningKey) {
        let payload = format!(
            r#"{{"critical":{{"identity":{{"docker-reference":"{}/{repository}"}},"image":{{"docker-manifest-digest":"{digest}"}},"type":"cosign container image signature"}},"optional":null}}"#,
            self.addr
        );
        let signature: Signature = key.sign(payload.as_bytes());
        let signature = base64::engine::general_purpose::STANDARD.encode(signature.to_der().as_bytes());
        self.put_signature(repository, digest, payload.into_bytes(), signature).await;
    }

    /// Writes a `.sig` manifest for `digest` carrying `payload` and `signature` as given.
    pub async fn put_signature(&self, repository: &str, digest: &str, payload: Vec<u8>, signature: String) {
        let tag = format!("{}.sig", digest.replace(':', "-"));
        let reference = Reference::with_tag(self.addr.clone(), repository.into(), tag);
        let annotations = [("dev.cosignproject.cosign/signature".to_string(), signature)].into();
        let layer = ImageLayer::new(
            payload,
            "application/vnd.dev.cosign.simplesigning.v1+json".into(),
            Some(annotations),
        );
        let config = Config::new(b"{}".to_vec(), "application/vnd.oci.image.config.v1+json".into(), None);
        let client = Self::client();
        client.push(&reference, &[layer], config, &RegistryAuth::Anonymous, None).await.unwrap();
    }

    /// The file the registry keeps blob `digest` in (to damage it).
    pub fn blob_file(&self, digest: &str) -> PathBuf {
        let hex = digest.strip_prefix("sha256:").unwrap();
        self.storage.path().join(format!("data/docker/registry/v2/blobs/sha256/{}/{hex}/data", &hex[..2]))
    }
}

/// A P-256 key pair from `seed`, its public half written as cosign.pub in `dir`.
pub fn cosign_key(dir: &Path, name: &str, seed: u8) -> (SigningKey, PathBuf) {
    let signing = SigningKey::from_slice(&[seed; 32]).unwrap();
    let pem = signing.verifying_key().to_public_key_pem(p256::pkcs8::LineEnding::LF).unwrap();
    let path = dir.join(format!("{name}.pub"));
    std::fs::write(&path, pem).unwrap();
    (signing, path)
}

/// `sha256:HEX` of `bytes`.
pub fn sha256(bytes: &[u8]) -> String {
    use sha2::Digest as _;
    let hex: String = sha2::Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect();
    format!("sha256:{hex}")
}
