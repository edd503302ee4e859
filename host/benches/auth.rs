//! What authorization costs per call over `--http` (`--only auth`): the
//! host serving the demo's `echo` with auth off (the baseline), with
//! `--auth-issuer` and JWT access tokens, and with opaque tokens checked
//! by introspection (RFC 7662), all three up at once and measured in
//! interleaved rounds.
//!
//! The authorization server is the bench's own, on loopback, as in
//! `tests/e2e/auth.rs`: an RFC 8414 discovery document, a JWKS of an
//! Ed25519 key made here with ring (tokens signed with jsonwebtoken), and
//! an introspection endpoint that checks the host's HTTP Basic client
//! credentials. Every client is rmcp's on protocol 2026-07-28 (one HTTP
//! request per call, each carrying its token), as in `http_load.rs`.
//!
//! Each round, each host in turn (starting with the next one each round)
//! answers sequential calls from one client (p50, p99 over all rounds),
//! then [`IN_FLIGHT`] clients call back to back for the span, each its own
//! caller with its own token (calls/s, the median round). The caches are
//! warm when measured: every token is used in a warm-up first, so the keys
//! are fetched and each opaque token introspected before the rounds; the
//! issuer counts what it serves during them. A host without the introspection flags (an older build under
//! `BENCH_HOST_BINARY`) gets no introspection row, and the section says so.

use std::collections::HashSet;
use std::convert::Infallible;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use http_body_util::{BodyExt as _, Full};
use hyper::body::{Bytes, Incoming};
use hyper_util::rt::TokioIo;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use ring::signature::{Ed25519KeyPair, KeyPair as _};
use rmcp::model::ProtocolVersion;
use rmcp::service::RunningService;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ClientLifecycleMode, ClientServiceExt as _, RoleClient};
use serde_json::{Value, json};
use tokio::net::TcpListener;
use tokio::process::Command;

use crate::harness::{guest, params};
use crate::http_load::{Server, announced, load};
use crate::{Samples, Scale, host_knows, ms, warm_cache};

/// Clients calling at once in the throughput part, each its own caller.
const IN_FLIGHT: usize = 32;
/// The resource the host says it is; tokens name it in `aud`.
const RESOURCE: &str = "http://127.0.0.1/mcp";
/// The host's client credentials at the introspection endpoint (nothing
/// in them that form-encoding would escape).
const CLIENT_ID: &str = "bench-host";
const CLIENT_SECRET: &str = "bench-secret";

type Client = RunningService<RoleClient, ()>;

/// The bench's authorization server: discovery, JWKS, introspection.
struct AuthServer {
    url: String,
    /// The signing key, PKCS#8.
    pkcs8: Vec<u8>,
    /// The opaque tokens it issued; introspection calls any other inactive.
    opaque: Arc<Mutex<HashSet<String>>>,
    jwks_fetches: Arc<AtomicUsize>,
    introspections: Arc<AtomicUsize>,
}

/// What the issuer's request handler shares with it.
#[derive(Clone)]
struct Shared {
    url: String,
    jwks: Value,
    opaque: Arc<Mutex<HashSet<String>>>,
    jwks_fetches: Arc<AtomicUsize>,
    introspections: Arc<AtomicUsize>,
}

impl AuthServer {
    async fn start() -> AuthServer {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let pkcs8 =
            Ed25519KeyPair::generate_pkcs8(&ring::rand::SystemRandom::new()).unwrap().as_ref().to_vec();
        let key = Ed25519KeyPair::from_pkcs8(&pkcs8).unwrap();
        let jwk = json!({ "kty": "OKP", "crv": "Ed25519", "use": "sig", "alg": "EdDSA", "kid": "bench",
                          "x": URL_SAFE_NO_PAD.encode(key.public_key().as_ref()) });
        let shared = Shared {
            url: url.clone(),
            jwks: json!({ "keys": [jwk] }),
            opaque: Arc::default(),
            jwks_fetches: Arc::default(),
            introspections: Arc::default(),
        };
        let server = AuthServer {
            url,
            pkcs8,
            opaque: shared.opaque.clone(),
            jwks_fetches: shared.jwks_fetches.clone(),
            introspections: shared.introspections.clone(),
        };
        tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else { continue };
                let shared = shared.clone();
                let service = hyper::service::service_fn(move |request| {
                    let shared = shared.clone();
                    async move { Ok::<_, Infallible>(answer(request, &shared).await) }
                });
                tokio::spawn(
                    hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service),
                );
            }
        });
        server
    }

    /// A JWT access token for `subject`, valid for the next hour.
    fn jwt(&self, subject: &str) -> String {
        let now = now();
        let claims = json!({ "iss": self.url, "sub": subject, "aud": RESOURCE, "client_id": "bench-client",
                             "scope": "tools:call", "iat": now, "nbf": now, "exp": now + 3600 });
        let mut header = Header::new(Algorithm::EdDSA);
        header.kid = Some("bench".into());
        header.typ = Some("at+jwt".into());
        jsonwebtoken::encode(&header, &claims, &EncodingKey::from_ed_der(&self.pkcs8)).unwrap()
    }

    /// An opaque token for `subject`, which introspection will call active.
    fn opaque(&self, subject: &str) -> String {
        let token = format!("opaque-{subject}-{:x}", now());
        self.opaque.lock().unwrap().insert(token.clone());
        token
    }
}

fn now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs()
}

/// One request to the issuer: discovery, the JWKS, or introspection.
async fn answer(request: hyper::Request<Incoming>, shared: &Shared) -> hyper::Response<Full<Bytes>> {
    let url = &shared.url;
    let body = match request.uri().path() {
        "/.well-known/oauth-authorization-server" => json!({
            "issuer": url, "jwks_uri": format!("{url}/jwks"),
            "introspection_endpoint": format!("{url}/introspect") }),
        "/jwks" => {
            shared.jwks_fetches.fetch_add(1, Ordering::Relaxed);
            shared.jwks.clone()
        }
        "/introspect" => {
            shared.introspections.fetch_add(1, Ordering::Relaxed);
            match introspect(request, shared).await {
                Some(answer) => answer,
                None => return status(401),
            }
        }
        _ => return status(404),
    };
    hyper::Response::builder()
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from(body.to_string())))
        .unwrap()
}

fn status(code: u16) -> hyper::Response<Full<Bytes>> {
    hyper::Response::builder().status(code).body(Full::new(Bytes::new())).unwrap()
}

/// RFC 7662: `None` (a 401) unless the client's Basic credentials are
/// right; then `active` with the token's claims if this server issued it.
async fn introspect(request: hyper::Request<Incoming>, shared: &Shared) -> Option<Value> {
    let basic = format!("Basic {}", STANDARD.encode(format!("{CLIENT_ID}:{CLIENT_SECRET}")));
    if request.headers().get("authorization").is_none_or(|value| *value != *basic) {
        return None;
    }
    let body = request.into_body().collect().await.ok()?.to_bytes();
    let body = String::from_utf8_lossy(&body);
    let token = body.split('&').find_map(|pair| pair.strip_prefix("token="))?;
    if !shared.opaque.lock().unwrap().contains(token) {
        return Some(json!({ "active": false }));
    }
    let subject = token.split('-').nth(1).unwrap_or_default();
    Some(json!({ "active": true, "sub": subject, "aud": [RESOURCE], "iss": shared.url,
                 "client_id": "bench-client", "scope": "tools:call", "token_type": "Bearer",
                 "exp": now() + 3600 }))
}

/// One configuration under test: its label, the host, and the token each
/// client presents (`None` with auth off).
struct Config {
    label: &'static str,
    server: Server,
    tokens: Vec<Option<String>>,
}

/// The host on loopback with `extra` flags, on a compile cache warmed
/// first (as `start_component` does for stdio hosts).
async fn start_host(extra: &[&str]) -> Server {
    let program = crate::host_under_test();
    warm_cache(&program, "demo");
    let mut command = Command::new(program);
    command
        .args(["--http", "127.0.0.1:0", "--component"])
        .arg(guest("demo"))
        .args(["--max-connections", "1024", "--max-concurrent-calls", "128"])
        .args(extra)
        .env("RUST_LOG", "warn");
    if host_knows("--no-tiering") {
        command.arg("--no-tiering");
    }
    announced(command).await
}

/// A 2026-07-28 client on its own connection, sending `token` as its bearer.
async fn client(url: &str, token: Option<&str>) -> Client {
    let mut config = StreamableHttpClientTransportConfig::with_uri(url.to_string());
    if let Some(token) = token {
        config = config.auth_header(token);
    }
    let transport = StreamableHttpClientTransport::from_config(config);
    let lifecycle = ClientLifecycleMode::Discover { preferred_versions: vec![ProtocolVersion::V_2026_07_28] };
    ().serve_with_lifecycle(transport, lifecycle).await.expect("MCP client start")
}

/// `calls` sequential `echo` calls: each one's latency.
async fn sequential(client: &Client, calls: usize) -> Vec<Duration> {
    let mut times = Vec::with_capacity(calls);
    for _ in 0..calls {
        let started = Instant::now();
        let result = client.call_tool(params("echo", json!({ "text": "hello" }))).await.unwrap();
        times.push(started.elapsed());
        assert_eq!(result.is_error, Some(false));
    }
    times
}

/// The section.
pub(super) async fn auth(scale: Scale) {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let issuer = AuthServer::start().await;
    let callers: Vec<String> = (0..IN_FLIGHT).map(|n| format!("caller{n}")).collect();
    let jwt_flags =
        ["--auth-issuer", &issuer.url, "--auth-resource", RESOURCE, "--auth-scopes", "tools:call"];

    let mut configs = vec![
        Config { label: "auth off", server: start_host(&[]).await, tokens: vec![None; IN_FLIGHT] },
        Config {
            label: "JWT (`--auth-issuer`)",
            server: start_host(&jwt_flags).await,
            tokens: callers.iter().map(|caller| Some(issuer.jwt(caller))).collect(),
        },
    ];
    let secret_dir = tempfile::tempdir().unwrap();
    let introspecting = host_knows("--auth-client-id") && host_knows("--auth-client-secret-file");
    if introspecting {
        let secret_file = secret_dir.path().join("client-secret");
        std::fs::write(&secret_file, CLIENT_SECRET).unwrap();
        let secret_file = secret_file.display().to_string();
        let introspection_url = format!("{}/introspect", issuer.url);
        let mut flags = jwt_flags.to_vec();
        flags.extend(["--auth-client-id", CLIENT_ID, "--auth-client-secret-file", &secret_file]);
        if host_knows("--auth-introspection-url") {
            flags.extend(["--auth-introspection-url", &introspection_url]);
        }
        configs.push(Config {
            label: "opaque, introspection (RFC 7662)",
            server: start_host(&flags).await,
            tokens: callers.iter().map(|caller| Some(issuer.opaque(caller))).collect(),
        });
    }

    // Every client of every host connected, and warmed up: each token has
    // been checked once, so the keys and verdicts are cached.
    let mut pools: Vec<Vec<Arc<Client>>> = Vec::new();
    for config in &configs {
        let mut clients = Vec::with_capacity(IN_FLIGHT);
        for token in &config.tokens {
            clients.push(Arc::new(client(&config.server.url, token.as_deref()).await));
        }
        sequential(&clients[0], 200).await;
        load(&clients, Duration::from_millis(500)).await;
        pools.push(clients);
    }
    let counted = |n: &AtomicUsize| n.load(Ordering::Relaxed);
    let (keys_before, asked_before) = (counted(&issuer.jwks_fetches), counted(&issuer.introspections));
    // The hosts did ask: a measured call is checked, not waved through.
    assert!(keys_before >= 1, "the JWT host never fetched the issuer's keys");
    assert!(
        !introspecting || asked_before >= IN_FLIGHT,
        "the introspecting host asked about {asked_before} of {IN_FLIGHT} tokens"
    );

    // Interleaved rounds, as many as the `http` section's (5; 1 with --quick).
    let rounds = scale.http_rounds;
    let per_round = scale.echo_calls / rounds;
    let mut latencies = vec![Vec::new(); configs.len()];
    let mut rates = vec![Vec::new(); configs.len()];
    let started = Instant::now();
    for round in 0..rounds {
        // Each round starts with another host, so none always follows the
        // same neighbour's burst.
        for n in (0..pools.len()).map(|i| (i + round) % pools.len()) {
            latencies[n].extend(sequential(&pools[n][0], per_round).await);
            rates[n].push(load(&pools[n], scale.http_span).await.0);
        }
    }
    let measured_for = started.elapsed();
    let keys_fetched = counted(&issuer.jwks_fetches) - keys_before;
    let introspected = counted(&issuer.introspections) - asked_before;

    println!(
        "## What authorization costs over Streamable HTTP, protocol 2026-07-28 (`echo`; {rounds} interleaved \
         rounds of {per_round} sequential calls from one client, then {IN_FLIGHT} clients back to back for {:.0} s)\n",
        scale.http_span.as_secs_f64()
    );
    println!(
        "| host | p50 | p99 | calls/s at {IN_FLIGHT} in flight (median of {rounds}) |\n|---|---|---|---|"
    );
    let mut figures = Vec::new();
    for (n, config) in configs.iter().enumerate() {
        let times = Samples::new(std::mem::take(&mut latencies[n]));
        rates[n].sort_by(f64::total_cmp);
        let rate = rates[n][rates[n].len() / 2];
        println!("| {} | {} | {} | {rate:.0} |", config.label, ms(times.p50()), ms(times.p99()));
        figures.push((times.p50().as_secs_f64(), times.p99().as_secs_f64(), rate));
    }
    println!("\nratio (with auth / auth off; p50 and p99 lower is better, calls/s higher):\n");
    println!("| host | p50 | p99 | calls/s |\n|---|---|---|---|");
    let off = figures[0];
    for (config, (p50, p99, rate)) in configs.iter().zip(&figures).skip(1) {
        println!("| {} | {:.2}× | {:.2}× | {:.2}× |", config.label, p50 / off.0, p99 / off.1, rate / off.2);
    }
    println!(
        "\nduring the {:.0} s of rounds the issuer served {keys_fetched} JWKS fetches and {introspected} \
         introspections ({} tokens; the host keeps an active verdict for a while, then asks again)",
        measured_for.as_secs_f64(),
        IN_FLIGHT
    );
    if !introspecting {
        println!(
            "\nno introspection row: the host under test has no --auth-client-id / --auth-client-secret-file"
        );
    }
    println!();
}
