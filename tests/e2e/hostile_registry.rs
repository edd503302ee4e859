//! A hostile registry: a loopback HTTP server written here, answering each
//! request as an attacker would — bodies that never end, a token endpoint
//! that streams forever, a blob trickled a byte a second, error messages
//! that forge log lines. The host must stop its start with one clear,
//! bounded, escaped error, and its memory must stay bounded throughout;
//! while it pulls, a client's handshake is answered.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;
use sha2::{Digest as _, Sha256};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::{TcpListener, TcpStream};

use crate::harness::{Host, Start, host_binary, rss_kib};

/// What the server answers to one request.
#[derive(Clone)]
enum Answer {
    /// A status line's code and reason, extra headers, a body; then it closes.
    Whole(&'static str, Vec<String>, Vec<u8>),
    /// A status, then a chunked body that never ends.
    Endless(&'static str),
    /// `200` with the length of `body`, whose bytes come one per second.
    Trickle(Vec<u8>),
}

/// The server: answers each request by its path (query included).
struct HostileServer {
    listener: TcpListener,
    addr: SocketAddr,
}

impl HostileServer {
    async fn bind() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        HostileServer { listener, addr }
    }

    /// Serves until the test ends.
    fn serve(self, route: impl Fn(&str) -> Answer + Send + Sync + 'static) -> SocketAddr {
        let route = Arc::new(route);
        tokio::spawn(async move {
            while let Ok((stream, _)) = self.listener.accept().await {
                let route = route.clone();
                tokio::spawn(async move {
                    let _ = answer(stream, &*route).await;
                });
            }
        });
        self.addr
    }
}

/// Reads one request's head and writes its answer.
async fn answer(mut stream: TcpStream, route: &(impl Fn(&str) -> Answer + ?Sized)) -> std::io::Result<()> {
    let mut head = Vec::new();
    let mut buf = [0u8; 4096];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") && head.len() < 64 << 10 {
        let n = stream.read(&mut buf).await?;
        if n == 0 {
            return Ok(());
        }
        head.extend_from_slice(&buf[..n]);
    }
    let head = String::from_utf8_lossy(&head);
    let path = head.split_whitespace().nth(1).unwrap_or("/").to_string();
    match route(&path) {
        Answer::Whole(status, headers, body) => {
            let mut out =
                format!("HTTP/1.1 {status}\r\nContent-Length: {}\r\nConnection: close\r\n", body.len());
            headers.iter().for_each(|header| out.push_str(&format!("{header}\r\n")));
            out.push_str("\r\n");
            stream.write_all(out.as_bytes()).await?;
            stream.write_all(&body).await
        }
        Answer::Endless(status) => {
            let head =
                format!("HTTP/1.1 {status}\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n");
            stream.write_all(head.as_bytes()).await?;
            let chunk = [b"10000\r\n".as_slice(), &[b'x'; 0x10000], b"\r\n"].concat();
            // Until the host hangs up.
            loop {
                stream.write_all(&chunk).await?;
            }
        }
        Answer::Trickle(body) => {
            let head =
                format!("HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n", body.len());
            stream.write_all(head.as_bytes()).await?;
            for byte in body {
                stream.write_all(&[byte]).await?;
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
            Ok(())
        }
    }
}

fn sha256(bytes: &[u8]) -> String {
    format!("sha256:{}", hex::encode(Sha256::digest(bytes)))
}

/// The bytes the hostile registry claims are a component.
const LAYER: &[u8] = &[b'c'; 1000];

/// An honest Wasm OCI artifact manifest for [`LAYER`].
fn manifest() -> Vec<u8> {
    json!({
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": { "mediaType": "application/vnd.wasm.config.v0+json", "digest": sha256(b"{}"), "size": 2 },
        "layers": [{ "mediaType": "application/wasm", "digest": sha256(LAYER), "size": LAYER.len() }],
    })
    .to_string()
    .into_bytes()
}

/// A registry that answers `/v2/`, the manifest of `tools/x:1`, and
/// answers `blob` for the component's blob.
fn registry_with_blob(blob: Answer) -> impl Fn(&str) -> Answer + Send + Sync + 'static {
    move |path: &str| match path {
        "/v2/" => Answer::Whole("200 OK", vec![], b"{}".to_vec()),
        "/v2/tools/x/manifests/1" => Answer::Whole(
            "200 OK",
            vec!["Content-Type: application/vnd.oci.image.manifest.v1+json".into()],
            manifest(),
        ),
        path if path.starts_with("/v2/tools/x/blobs/") => blob.clone(),
        _ => Answer::Whole("404 Not Found", vec![], Vec::new()),
    }
}

/// How a host that should not start ended.
struct Refused {
    stderr: String,
    took: Duration,
    peak_rss_mib: u64,
}

/// RSS past which the host is killed (and the test fails): the attacks
/// here took 3 GB in 3 s.
const RSS_CEILING_MIB: u64 = 300;

/// Starts the host on `oci://ADDR/tools/x:1` with `extra` flags, watching
/// its RSS (killing it past [`RSS_CEILING_MIB`]) until it exits.
async fn start_against(addr: SocketAddr, extra: &[&str]) -> Refused {
    let cache = tempfile::tempdir().unwrap();
    let reference = format!("oci://{addr}/tools/x:1");
    let mut child = tokio::process::Command::new(host_binary())
        .args(["--component", &reference, "--cache-dir", &cache.path().display().to_string()])
        .args(extra)
        .env("RUST_LOG", "warn")
        .env("NO_COLOR", "1")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let pid = child.id().unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let read = tokio::spawn(async move {
        let mut text = String::new();
        let _ = stderr.read_to_string(&mut text).await;
        text
    });
    let started = Instant::now();
    let mut peak_kib = 0;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        peak_kib = peak_kib.max(rss_kib(pid));
        let killed = if peak_kib / 1024 > RSS_CEILING_MIB {
            Some("its RSS passed the ceiling")
        } else if started.elapsed() > Duration::from_secs(60) {
            Some("it ran for a minute")
        } else {
            None
        };
        if let Some(why) = killed {
            child.kill().await.unwrap();
            let stderr = read.await.unwrap();
            panic!("the host was killed: {why} ({} MiB); stderr:\n{stderr}", peak_kib / 1024);
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    };
    let took = started.elapsed();
    let stderr = read.await.unwrap();
    assert!(!status.success(), "the host started: {stderr}");
    eprintln!("refused after {took:?}, peak RSS {} MiB:\n{stderr}", peak_kib / 1024);
    Refused { stderr, took, peak_rss_mib: peak_kib / 1024 }
}

/// The one `error:` line of a refused start, checked to be bounded and free
/// of control characters.
fn error_line(refused: &Refused) -> &str {
    let errors: Vec<&str> = refused.stderr.lines().filter(|line| line.starts_with("error:")).collect();
    assert_eq!(errors.len(), 1, "{}", refused.stderr);
    assert!(!refused.stderr.contains(['\x1b', '\x07']), "raw escapes: {:?}", refused.stderr);
    assert!(errors[0].len() < 8 << 10, "{} bytes", errors[0].len());
    errors[0]
}

#[tokio::test]
async fn an_endless_error_body_for_a_blob_is_cut_and_the_start_fails_bounded() {
    // Before: oci-client read the 500's body whole: 3 GB in 3 s.
    let addr =
        HostileServer::bind().await.serve(registry_with_blob(Answer::Endless("500 Internal Server Error")));
    let refused = start_against(addr, &[]).await;
    let said = error_line(&refused);
    assert!(said.contains("answered 500") && said.contains(&format!("blob {}", sha256(LAYER))), "{said}");
    assert!(refused.peak_rss_mib < 150, "peak RSS {} MiB", refused.peak_rss_mib);
}

#[tokio::test]
async fn an_endless_token_response_is_refused_at_its_bound() {
    // Before: oci-client read the token response whole, before any manifest.
    let server = HostileServer::bind().await;
    let challenge =
        format!(r#"WWW-Authenticate: Bearer realm="http://{}/token",service="hostile""#, server.addr);
    let addr = server.serve(move |path| match path {
        "/v2/" => Answer::Whole("401 Unauthorized", vec![challenge.clone()], Vec::new()),
        path if path.starts_with("/token") => Answer::Endless("200 OK"),
        _ => Answer::Whole("404 Not Found", vec![], Vec::new()),
    });
    let refused = start_against(addr, &[]).await;
    let said = error_line(&refused);
    assert!(said.contains("its token is larger than 65536 bytes"), "{said}");
    assert!(refused.peak_rss_mib < 150, "peak RSS {} MiB", refused.peak_rss_mib);
}

#[tokio::test]
async fn a_registry_error_message_is_quoted_escaped_on_one_line() {
    // Before: the message went into the `error:` line raw, its newline
    // starting a forged line and its escapes clearing the terminal.
    let body = br#"{"errors":[{"code":"BLOB_UNKNOWN","message":"gone\nERROR forged line\u001b[2J\u0007"}]}"#;
    let blob = Answer::Whole("404 Not Found", vec!["Content-Type: application/json".into()], body.to_vec());
    let addr = HostileServer::bind().await.serve(registry_with_blob(blob));
    let refused = start_against(addr, &[]).await;
    let said = error_line(&refused);
    assert!(said.contains(r"BLOB_UNKNOWN: gone\nERROR forged line\u{1b}[2J\u{7}"), "{said}");
    assert!(!refused.stderr.lines().any(|line| line.starts_with("ERROR forged")), "{}", refused.stderr);
}

#[tokio::test]
async fn a_trickled_blob_stops_the_start_at_the_registry_timeout() {
    // Before: a blob at one byte a second held the start for ever (the
    // 30 s between bytes never ran out).
    let addr = HostileServer::bind().await.serve(registry_with_blob(Answer::Trickle(LAYER.to_vec())));
    let refused = start_against(addr, &["--registry-timeout", "3s"]).await;
    let said = error_line(&refused);
    assert!(said.contains("took longer than --registry-timeout (3s)"), "{said}");
    assert!(refused.took < Duration::from_secs(15), "it took {:?}", refused.took);
    assert!(refused.peak_rss_mib < 150, "peak RSS {} MiB", refused.peak_rss_mib);
}

#[tokio::test]
async fn initialize_is_answered_at_once_while_a_slow_pull_is_under_way() {
    // Before: the pull ran before the transport started, so a client got
    // no handshake until it ended (for a trickled blob, never).
    let addr = HostileServer::bind().await.serve(registry_with_blob(Answer::Trickle(LAYER.to_vec())));
    let cache = tempfile::tempdir().unwrap();
    let reference = format!("oci://{addr}/tools/x:1");
    let cache_dir = cache.path().display().to_string();
    let args = ["--component", &reference, "--cache-dir", &cache_dir, "--registry-timeout", "8s"];
    let started = Instant::now();
    let host = Host::start(Start { args: args.map(String::from).to_vec(), ..Start::new("demo", &[]) }).await;
    assert!(started.elapsed() < Duration::from_secs(4), "the handshake took {:?}", started.elapsed());
    let progress = host.stderr.wait_for_event("progress", |e| e.message() == "still pulling").await;
    assert_eq!(progress.str("layer"), Some(sha256(LAYER).as_str()), "{progress}");
    let refused = host
        .stderr
        .wait_until("the pull to be given up", |lines| {
            lines.iter().map(|line| line.text()).find(|text| text.starts_with("error:")).map(String::from)
        })
        .await;
    assert!(refused.contains("took longer than --registry-timeout (8s)"), "{refused}");
}
