//! `--tls-cert`/`--tls-key`: MCP over HTTPS, with the certificate renewed
//! in place; and `--behind-tls-proxy`: auth beyond loopback needs one or
//! the other. The certificates are made here: self-signed Ed25519, their
//! DER written by hand and signed with ring (no certificate crate in the
//! tree). The client is hyper over tokio-rustls trusting exactly one of
//! them, so which certificate the host serves is seen from outside.

use std::net::SocketAddr;
use std::path::Path;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Instant;

use base64::Engine as _;
use http_body_util::{BodyExt as _, Full};
use hyper::body::Bytes;
use hyper_util::rt::TokioIo;
use ring::signature::{Ed25519KeyPair, KeyPair as _};
use rustls::pki_types::{CertificateDer, ServerName};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt as _, AsyncReadExt as _, BufReader};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;

use crate::harness::{PATIENCE, guest, host_binary};
use crate::http_limits::HttpHost;

const VERSION: &str = "2025-11-25";

/// A self-signed certificate for `127.0.0.1` and `localhost`, and its key.
struct Cert {
    der: Vec<u8>,
    pem: String,
    key_pem: String,
}

/// One DER element.
fn der(tag: u8, content: &[u8]) -> Vec<u8> {
    let mut out = vec![tag];
    match content.len() {
        len @ 0..=127 => out.push(len as u8),
        len @ 128..=255 => out.extend([0x81, len as u8]),
        len => out.extend([0x82, (len >> 8) as u8, len as u8]),
    }
    out.extend_from_slice(content);
    out
}

fn seq(parts: &[Vec<u8>]) -> Vec<u8> {
    der(0x30, &parts.concat())
}

fn pem(label: &str, der: &[u8]) -> String {
    let text = base64::engine::general_purpose::STANDARD.encode(der);
    let lines: Vec<&str> =
        text.as_bytes().chunks(64).map(|line| std::str::from_utf8(line).unwrap()).collect();
    format!("-----BEGIN {label}-----\n{}\n-----END {label}-----\n", lines.join("\n"))
}

impl Cert {
    /// A new key and its X.509 v3 certificate (RFC 5280), serial `serial`.
    fn new(serial: u8) -> Cert {
        let rng = ring::rand::SystemRandom::new();
        let pkcs8 = Ed25519KeyPair::generate_pkcs8(&rng).unwrap();
        let pair = Ed25519KeyPair::from_pkcs8(pkcs8.as_ref()).unwrap();
        let ed25519 = seq(&[der(0x06, &[0x2b, 0x65, 0x70])]);
        let common_name = seq(&[der(0x06, &[0x55, 0x04, 0x03]), der(0x0c, b"mcp-wasm-host test")]);
        let name = seq(&[der(0x31, &common_name)]);
        let validity = seq(&[der(0x17, b"200101000000Z"), der(0x17, b"491231235959Z")]);
        let public = [&[0u8][..], pair.public_key().as_ref()].concat();
        let spki = seq(&[ed25519.clone(), der(0x03, &public)]);
        // subjectAltName: iPAddress 127.0.0.1, dNSName localhost.
        let names = seq(&[der(0x87, &[127, 0, 0, 1]), der(0x82, b"localhost")]);
        let san = seq(&[der(0x06, &[0x55, 0x1d, 0x11]), der(0x04, &names)]);
        let tbs = seq(&[
            der(0xa0, &der(0x02, &[2])),
            der(0x02, &[serial & 0x7f]),
            ed25519.clone(),
            name.clone(),
            validity,
            name,
            spki,
            der(0xa3, &seq(&[san])),
        ]);
        let signature = [&[0u8][..], pair.sign(&tbs).as_ref()].concat();
        let cert = seq(&[tbs, ed25519, der(0x03, &signature)]);
        Cert { pem: pem("CERTIFICATE", &cert), key_pem: pem("PRIVATE KEY", pkcs8.as_ref()), der: cert }
    }

    /// Writes the pair where the host reads it, each file replaced whole
    /// (written aside, then renamed), the key first.
    fn install(&self, dir: &Path) {
        for (name, text) in [("key.pem", &self.key_pem), ("cert.pem", &self.pem)] {
            std::fs::write(dir.join(format!("{name}.new")), text).unwrap();
            std::fs::rename(dir.join(format!("{name}.new")), dir.join(name)).unwrap();
        }
    }
}

/// An HTTP/1.1 connection over TLS to `addr`, trusting only `trusted`; an
/// error if the handshake fails (the host serves another certificate).
async fn connect(
    addr: SocketAddr,
    trusted: &Cert,
) -> Result<hyper::client::conn::http1::SendRequest<Full<Bytes>>, std::io::Error> {
    let mut roots = rustls::RootCertStore::empty();
    roots.add(CertificateDer::from(trusted.der.clone())).unwrap();
    let mut config =
        rustls::ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(roots)
            .with_no_client_auth();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    let tcp = TcpStream::connect(addr).await?;
    let name = ServerName::IpAddress(addr.ip().into());
    let tls = tokio::time::timeout(PATIENCE, TlsConnector::from(Arc::new(config)).connect(name, tcp))
        .await
        .expect("the handshake ended in time")?;
    assert_eq!(tls.get_ref().1.alpn_protocol(), Some(&b"http/1.1"[..]));
    let (sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(tls)).await.unwrap();
    tokio::spawn(connection);
    Ok(sender)
}

/// `method path` over TLS (trusting `trusted`), with `message` as its body
/// and in `session` if given: status, session id, body.
async fn send(
    host: &HttpHost,
    trusted: &Cert,
    method: &str,
    path: &str,
    session: Option<&str>,
    message: Option<Value>,
) -> (u16, Option<String>, String) {
    let mut sender = connect(host.addr, trusted).await.expect("a TLS connection");
    let mut request = hyper::Request::builder()
        .method(method)
        .uri(path)
        .header("host", host.addr.to_string())
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream");
    if let Some(session) = session {
        request = request.header("mcp-session-id", session).header("mcp-protocol-version", VERSION);
    }
    let body = message.map(|message| message.to_string()).unwrap_or_default();
    let request = request.body(Full::new(Bytes::from(body))).unwrap();
    let response = tokio::time::timeout(PATIENCE, sender.send_request(request)).await.unwrap().unwrap();
    let status = response.status().as_u16();
    let session = response.headers().get("mcp-session-id").map(|value| value.to_str().unwrap().to_string());
    let body =
        tokio::time::timeout(PATIENCE, response.into_body().collect()).await.unwrap().unwrap().to_bytes();
    (status, session, String::from_utf8_lossy(&body).into_owned())
}

/// A host serving HTTPS with the pair in `dir`, plus `more` flags.
async fn tls_host(dir: &Path, more: &[&str]) -> HttpHost {
    let (cert, key) = (dir.join("cert.pem").display().to_string(), dir.join("key.pem").display().to_string());
    let mut args = vec!["--tls-cert", &cert, "--tls-key", &key];
    args.extend(more);
    let host = HttpHost::start(&args).await;
    let announced = host.stderr.dump();
    assert!(announced.contains(&format!("at https://{}/mcp", host.addr)), "{announced}");
    host
}

#[tokio::test]
async fn mcp_is_served_over_https_and_a_renewed_certificate_needs_no_restart() {
    let dir = tempfile::tempdir().unwrap();
    let (first, second, stray) = (Cert::new(1), Cert::new(2), Cert::new(3));
    first.install(dir.path());
    let host = tls_host(dir.path(), &[]).await;

    // initialize, initialized, a call: all over HTTPS.
    let initialize = json!({ "jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": VERSION, "capabilities": {}, "clientInfo": { "name": "tls", "version": "1" } } });
    let (status, session, _) = send(&host, &first, "POST", "/mcp", None, Some(initialize)).await;
    assert_eq!(status, 200);
    let session = session.expect("a session id");
    let initialized = json!({ "jsonrpc": "2.0", "method": "notifications/initialized" });
    assert_eq!(send(&host, &first, "POST", "/mcp", Some(&session), Some(initialized)).await.0, 202);
    let call = json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call",
                       "params": { "name": "echo", "arguments": { "text": "over tls" } } });
    let (status, _, body) = send(&host, &first, "POST", "/mcp", Some(&session), Some(call)).await;
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("over tls") && !body.contains("\"isError\":true"), "{body}");
    assert_eq!(send(&host, &first, "GET", "/healthz", None, None).await.0, 200);
    assert!(connect(host.addr, &second).await.is_err(), "the second certificate is not served yet");

    // Renewed in place: new connections get the new certificate.
    second.install(dir.path());
    host.stderr.wait_for_event("the reload", |e| e.message() == "TLS certificate reloaded").await;
    assert_eq!(send(&host, &second, "GET", "/healthz", None, None).await.0, 200);
    assert!(connect(host.addr, &first).await.is_err(), "the old certificate is still served");

    // A certificate whose key is not the one beside it: refused, the last
    // good pair keeps serving.
    std::fs::write(dir.path().join("cert.pem"), &stray.pem).unwrap();
    host.stderr.wait_for_event("the refused pair", |e| e.message().contains("does not load")).await;
    assert_eq!(send(&host, &second, "GET", "/healthz", None, None).await.0, 200);
    assert!(connect(host.addr, &stray).await.is_err());
}

#[tokio::test]
async fn a_stalled_tls_handshake_frees_its_connection_slot_after_the_header_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let cert = Cert::new(1);
    cert.install(dir.path());
    let host = tls_host(dir.path(), &["--max-connections", "1", "--http-header-timeout", "1s"]).await;
    // Connects and never says hello.
    let mut stalled = TcpStream::connect(host.addr).await.unwrap();
    let started = Instant::now();
    // Meanwhile the slot is taken: another connection is turned away.
    let mut turned_away = TcpStream::connect(host.addr).await.unwrap();
    let mut refusal = Vec::new();
    tokio::time::timeout(PATIENCE, turned_away.read_to_end(&mut refusal)).await.unwrap().unwrap();
    assert!(String::from_utf8_lossy(&refusal).starts_with("HTTP/1.1 503"), "{refusal:?}");
    // The host gives up on the handshake: the connection closes...
    let mut rest = Vec::new();
    let _ = tokio::time::timeout(PATIENCE, stalled.read_to_end(&mut rest)).await.expect("closed in time");
    assert!(rest.is_empty(), "{rest:?}");
    assert!(started.elapsed() < PATIENCE);
    // ...and the slot is free for a client that completes its handshake.
    assert_eq!(send(&host, &cert, "GET", "/healthz", None, None).await.0, 200);
}

/// Runs the host with `args` until it announces its address (`Ok` with the
/// line) or exits (`Err` with its stderr).
async fn start(args: &[&str]) -> Result<String, String> {
    let mut child = tokio::process::Command::new(host_binary())
        .arg("--component")
        .arg(guest("demo"))
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let mut seen = String::new();
    let found = tokio::time::timeout(PATIENCE, async {
        while let Some(line) = lines.next_line().await.unwrap() {
            if line.contains("serving MCP over Streamable HTTP at") {
                return Some(line);
            }
            seen.push_str(&line);
            seen.push('\n');
        }
        None
    })
    .await
    .expect("the host started or exited in time");
    match found {
        Some(line) => Ok(line),
        None => {
            assert!(!child.wait().await.unwrap().success());
            Err(seen)
        }
    }
}

#[tokio::test]
async fn auth_beyond_loopback_needs_tls_here_or_behind_tls_proxy() {
    let auth =
        ["--auth-issuer", "https://login.example.com", "--auth-resource", "https://mcp.example.com/mcp"];
    let public = [&["--http", "0.0.0.0:0"][..], &auth].concat();
    let err = start(&public).await.unwrap_err();
    assert!(err.contains("--tls-cert") && err.contains("--behind-tls-proxy"), "{err}");
    let line = start(&[&public[..], &["--behind-tls-proxy"]].concat()).await.unwrap();
    assert!(line.contains("at http://0.0.0.0:"), "{line}");

    let dir = tempfile::tempdir().unwrap();
    Cert::new(1).install(dir.path());
    let (cert, key) = (dir.path().join("cert.pem"), dir.path().join("key.pem"));
    let (cert, key) = (cert.to_str().unwrap(), key.to_str().unwrap());
    let line = start(&[&public[..], &["--tls-cert", cert, "--tls-key", key]].concat()).await.unwrap();
    assert!(line.contains("at https://0.0.0.0:"), "{line}");

    // A plain-http resource beyond loopback: clients would send tokens in clear.
    let plain = ["--http", "127.0.0.1:0", "--auth-issuer", "https://login.example.com", "--auth-resource"];
    let err = start(&[&plain[..], &["http://mcp.example.com/mcp"]].concat()).await.unwrap_err();
    assert!(err.contains("plain http"), "{err}");
    // Half a pair, and a key that is not the certificate's.
    let err = start(&["--http", "127.0.0.1:0", "--tls-cert", cert]).await.unwrap_err();
    assert!(err.contains("--tls-key"), "{err}");
    std::fs::write(dir.path().join("key.pem"), Cert::new(2).key_pem).unwrap();
    let err = start(&["--http", "127.0.0.1:0", "--tls-cert", cert, "--tls-key", key]).await.unwrap_err();
    assert!(err.contains("does not fit"), "{err}");
}
