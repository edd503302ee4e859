//! `--auth-issuer`: the host as an OAuth 2.1 resource server, over the
//! real wire. The authorization server is the test's own, on loopback: it
//! serves an RFC 8414 discovery document and a JWKS of Ed25519 keys made
//! here with ring, and the tokens are signed here with jsonwebtoken. Each
//! refusal's status and `WWW-Authenticate` are asserted. It also answers
//! token introspection (RFC 7662) for the opaque tokens of
//! `auth_introspect.rs`, checking the host's client credentials.

use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use http_body_util::{BodyExt as _, Full};
use hyper::body::Bytes;
use hyper_util::rt::TokioIo;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use ring::signature::{Ed25519KeyPair, KeyPair as _};
use serde_json::{Value, json};
use tokio::net::{TcpListener, TcpStream};

use crate::harness::{PATIENCE, guest, host_binary};
use crate::http_limits::HttpHost;

pub(crate) const RESOURCE: &str = "http://127.0.0.1/mcp";
const VERSION: &str = "2025-11-25";

/// One Ed25519 signing key of the test issuer.
pub(crate) struct Key {
    kid: String,
    pkcs8: Vec<u8>,
    public: Vec<u8>,
}

impl Key {
    pub(crate) fn new(kid: &str) -> Key {
        let rng = ring::rand::SystemRandom::new();
        let pkcs8 = Ed25519KeyPair::generate_pkcs8(&rng).unwrap().as_ref().to_vec();
        let public = Ed25519KeyPair::from_pkcs8(&pkcs8).unwrap().public_key().as_ref().to_vec();
        Key { kid: kid.into(), pkcs8, public }
    }

    fn jwk(&self) -> Value {
        json!({ "kty": "OKP", "crv": "Ed25519", "use": "sig", "alg": "EdDSA",
                "kid": self.kid, "x": URL_SAFE_NO_PAD.encode(&self.public) })
    }

    /// A token with `claims`, signed by this key.
    pub(crate) fn sign(&self, claims: &Value) -> String {
        let mut header = Header::new(Algorithm::EdDSA);
        header.kid = Some(self.kid.clone());
        header.typ = Some("at+jwt".into());
        jsonwebtoken::encode(&header, claims, &EncodingKey::from_ed_der(&self.pkcs8)).unwrap()
    }

    /// A token signed by this key under a JOSE header written by hand
    /// (one jsonwebtoken's `Header` cannot hold, such as `crit`).
    pub(crate) fn sign_with_header(&self, header: &Value, claims: &Value) -> String {
        let message = format!(
            "{}.{}",
            URL_SAFE_NO_PAD.encode(header.to_string()),
            URL_SAFE_NO_PAD.encode(claims.to_string())
        );
        let key = EncodingKey::from_ed_der(&self.pkcs8);
        let signature = jsonwebtoken::crypto::sign(message.as_bytes(), &key, Algorithm::EdDSA).unwrap();
        format!("{message}.{signature}")
    }
}

/// The client id the host introspects as.
pub(crate) const CLIENT_ID: &str = "mcp-host";
/// Its secret, with characters that form-encoding must escape (RFC 6749 §2.3.1).
pub(crate) const CLIENT_SECRET: &str = "s3cret:with/odd chars";
/// The `Authorization` the issuer expects for them: base64 of the
/// form-encoded id and secret.
const CLIENT_BASIC: &str = "Basic bWNwLWhvc3Q6czNjcmV0JTNBd2l0aCUyRm9kZCtjaGFycw==";

/// The test's authorization server: discovery, a JWKS it can change, and
/// introspection of the opaque tokens it was told about.
pub(crate) struct Issuer {
    pub(crate) url: String,
    jwks: Arc<Mutex<Value>>,
    /// JWKS requests served so far.
    fetches: Arc<AtomicUsize>,
    /// Introspection answers by token; any other token is inactive.
    opaque: Arc<Mutex<HashMap<String, Value>>>,
    /// Introspection requests served so far (with good credentials or not).
    pub(crate) introspections: Arc<AtomicUsize>,
}

impl Issuer {
    pub(crate) async fn start(keys: &[&Key]) -> Issuer {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let jwks = Arc::new(Mutex::new(Value::Null));
        let fetches = Arc::new(AtomicUsize::new(0));
        let opaque = Arc::new(Mutex::new(HashMap::new()));
        let introspections = Arc::new(AtomicUsize::new(0));
        let issuer = Issuer {
            url: url.clone(),
            jwks: jwks.clone(),
            fetches: fetches.clone(),
            opaque: opaque.clone(),
            introspections: introspections.clone(),
        };
        issuer.publish(keys);
        tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else { continue };
                let (url, jwks, fetches) = (url.clone(), jwks.clone(), fetches.clone());
                let (opaque, introspections) = (opaque.clone(), introspections.clone());
                let service =
                    hyper::service::service_fn(move |request: hyper::Request<hyper::body::Incoming>| {
                        let (url, jwks, fetches) = (url.clone(), jwks.clone(), fetches.clone());
                        let (opaque, introspections) = (opaque.clone(), introspections.clone());
                        async move {
                            let body = match request.uri().path() {
                                "/.well-known/oauth-authorization-server" => Some(json!({
                                "issuer": url, "jwks_uri": format!("{url}/jwks"),
                                "introspection_endpoint": format!("{url}/introspect") })),
                                "/jwks" => {
                                    fetches.fetch_add(1, Ordering::SeqCst);
                                    Some(jwks.lock().unwrap().clone())
                                }
                                "/introspect" => {
                                    introspections.fetch_add(1, Ordering::SeqCst);
                                    return Ok::<_, Infallible>(introspect(request, &opaque).await);
                                }
                                _ => None,
                            };
                            Ok(match body {
                                Some(body) => hyper::Response::new(Full::new(Bytes::from(body.to_string()))),
                                None => hyper::Response::builder()
                                    .status(404)
                                    .body(Full::new(Bytes::new()))
                                    .unwrap(),
                            })
                        }
                    });
                tokio::spawn(
                    hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service),
                );
            }
        });
        issuer
    }

    /// Makes introspection answer `answer` for `token`.
    pub(crate) fn grant(&self, token: &str, answer: Value) {
        self.opaque.lock().unwrap().insert(token.to_string(), answer);
    }

    /// The introspection answer for an active token of `sub` for `RESOURCE`.
    pub(crate) fn active(&self, sub: &str) -> Value {
        json!({ "active": true, "sub": sub, "aud": [RESOURCE], "iss": self.url, "client_id": "test-client",
                "scope": "tools:call", "token_type": "Bearer", "exp": now() + 300 })
    }

    fn publish(&self, keys: &[&Key]) {
        *self.jwks.lock().unwrap() = json!({ "keys": keys.iter().map(|key| key.jwk()).collect::<Vec<_>>() });
    }

    /// Claims of a token for `RESOURCE`, valid for the next five minutes.
    pub(crate) fn claims(&self) -> Value {
        let now = now();
        json!({ "iss": self.url, "sub": "alice", "aud": RESOURCE, "client_id": "test-client",
                "scope": "tools:call", "iat": now, "nbf": now, "exp": now + 300 })
    }
}

/// The introspection endpoint: `401` unless the host's Basic credentials
/// are right and the body is a form with a token; then the answer granted
/// for that token, or `{"active": false}`.
async fn introspect(
    request: hyper::Request<hyper::body::Incoming>,
    opaque: &Mutex<HashMap<String, Value>>,
) -> hyper::Response<Full<Bytes>> {
    let authorized = request.headers().get("authorization").is_some_and(|value| value == CLIENT_BASIC);
    let form = request.headers().get("content-type").is_some_and(|value| {
        value.to_str().unwrap_or_default().starts_with("application/x-www-form-urlencoded")
    });
    let body = request.into_body().collect().await.unwrap().to_bytes();
    let body = String::from_utf8_lossy(&body);
    let token = body.split('&').find_map(|pair| pair.strip_prefix("token="));
    let answer = match token {
        Some(token) if authorized && form => {
            opaque.lock().unwrap().get(token).cloned().unwrap_or(json!({ "active": false }))
        }
        _ => {
            return hyper::Response::builder()
                .status(401)
                .body(Full::new(Bytes::from(r#"{"error":"invalid_client"}"#)))
                .unwrap();
        }
    };
    hyper::Response::new(Full::new(Bytes::from(answer.to_string())))
}

pub(crate) fn now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs()
}

/// A host whose tokens come from `issuer`.
async fn host_for(issuer: &str) -> HttpHost {
    HttpHost::start(&["--auth-issuer", issuer, "--auth-resource", RESOURCE, "--auth-scopes", "tools:call"])
        .await
}

/// Something serving MCP over HTTP at an address: a host, or a balancer
/// in front of hosts.
pub(crate) trait Reachable {
    fn addr(&self) -> std::net::SocketAddr;
}

impl Reachable for HttpHost {
    fn addr(&self) -> std::net::SocketAddr {
        self.addr
    }
}

/// What came back for one request.
#[derive(Debug)]
pub(crate) struct Answer {
    pub(crate) status: u16,
    pub(crate) challenge: Option<String>,
    pub(crate) session: Option<String>,
    pub(crate) body: String,
}

/// Sends `method` `path` (with `message` as its JSON body, and `token` as
/// its bearer token, if given) on a new connection.
pub(crate) async fn send(
    host: &impl Reachable,
    method: &str,
    path: &str,
    token: Option<&str>,
    session: Option<&str>,
    message: Option<Value>,
) -> Answer {
    let stream = TcpStream::connect(host.addr()).await.unwrap();
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream)).await.unwrap();
    tokio::spawn(connection);
    let mut request = hyper::Request::builder()
        .method(method)
        .uri(path)
        .header("host", host.addr().to_string())
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream");
    if let Some(token) = token {
        request = request.header("authorization", format!("Bearer {token}"));
    }
    if let Some(session) = session {
        request = request.header("mcp-session-id", session).header("mcp-protocol-version", VERSION);
    }
    let body = message.map(|message| message.to_string()).unwrap_or_default();
    let request = request.body(Full::new(Bytes::from(body))).unwrap();
    let response = tokio::time::timeout(PATIENCE, sender.send_request(request)).await.unwrap().unwrap();
    let header = |name: &str| response.headers().get(name).map(|value| value.to_str().unwrap().to_string());
    let (status, challenge, session) =
        (response.status().as_u16(), header("www-authenticate"), header("mcp-session-id"));
    let body =
        tokio::time::timeout(PATIENCE, response.into_body().collect()).await.unwrap().unwrap().to_bytes();
    Answer { status, challenge, session, body: String::from_utf8_lossy(&body).into_owned() }
}

fn initialize() -> Value {
    json!({ "jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": VERSION, "capabilities": {},
        "clientInfo": { "name": "auth", "version": "1" } } })
}

/// `initialize` with `token`: its answer.
pub(crate) async fn init(host: &impl Reachable, token: &str) -> Answer {
    send(host, "POST", "/mcp", Some(token), None, Some(initialize())).await
}

/// Asserts a `401` whose challenge points at the metadata, with `error`.
pub(crate) fn assert_refused(answer: &Answer, host: &HttpHost, error: Option<&str>) {
    assert_eq!(answer.status, 401, "{answer:?}");
    let challenge = answer.challenge.as_deref().expect("a WWW-Authenticate header");
    let metadata = "resource_metadata=\"http://127.0.0.1/.well-known/oauth-protected-resource/mcp\"";
    assert!(challenge.starts_with("Bearer ") && challenge.contains(metadata), "{challenge}");
    match error {
        Some(error) => assert!(challenge.contains(&format!("error=\"{error}\"")), "{challenge}"),
        None => assert!(!challenge.contains("error="), "{challenge}"),
    }
    assert!(!host.stderr.dump().contains("eyJ"), "a token reached the log");
}

#[tokio::test]
async fn a_valid_token_calls_a_tool_and_requests_without_one_get_401_pointing_at_the_metadata() {
    let key = Key::new("k1");
    let issuer = Issuer::start(&[&key]).await;
    let host = host_for(&issuer.url).await;
    let token = key.sign(&issuer.claims());

    // No token: POST, GET and DELETE alike.
    let refused = send(&host, "POST", "/mcp", None, None, Some(initialize())).await;
    assert_refused(&refused, &host, None);
    // What to ask for: the scopes configured (--auth-scopes).
    let challenge = refused.challenge.unwrap();
    assert!(challenge.contains(", scope=\"tools:call\""), "{challenge}");
    assert_refused(&send(&host, "GET", "/mcp", None, Some("any"), None).await, &host, None);
    assert_refused(&send(&host, "DELETE", "/mcp", None, Some("any"), None).await, &host, None);
    // A token in the query string is refused, even a valid one.
    let query = format!("/mcp?access_token={token}");
    assert_refused(
        &send(&host, "POST", &query, None, None, Some(initialize())).await,
        &host,
        Some("invalid_request"),
    );
    // Probes need no token.
    assert_eq!(send(&host, "GET", "/healthz", None, None, None).await.status, 200);

    // The metadata, at both well-known paths, without a token.
    for path in ["/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource"] {
        let answer = send(&host, "GET", path, None, None, None).await;
        assert_eq!(answer.status, 200, "{answer:?}");
        let document: Value = serde_json::from_str(&answer.body).unwrap();
        assert_eq!(document["resource"], RESOURCE);
        assert_eq!(document["authorization_servers"], json!([issuer.url]));
        assert_eq!(document["scopes_supported"], json!(["tools:call"]));
        assert_eq!(document["bearer_methods_supported"], json!(["header"]));
    }

    // With the token: a session, and a call in it.
    let opened = init(&host, &token).await;
    assert_eq!(opened.status, 200, "{opened:?}");
    let session = opened.session.expect("a session id");
    let initialized = json!({ "jsonrpc": "2.0", "method": "notifications/initialized" });
    assert_eq!(
        send(&host, "POST", "/mcp", Some(&token), Some(&session), Some(initialized)).await.status,
        202
    );
    let call = json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call",
                       "params": { "name": "echo", "arguments": { "text": "authorized" } } });
    let called = send(&host, "POST", "/mcp", Some(&token), Some(&session), Some(call.clone())).await;
    assert_eq!(called.status, 200, "{called:?}");
    assert!(called.body.contains("authorized") && !called.body.contains("\"isError\":true"), "{called:?}");
    // The same session without the token: refused.
    assert_refused(&send(&host, "POST", "/mcp", None, Some(&session), Some(call)).await, &host, None);
    assert!(!host.stderr.dump().contains(&token));
    // Nor is the token, or its signature, in the metrics after the calls.
    let metrics = send(&host, "GET", "/metrics", None, None, None).await;
    assert!(metrics.status == 200 && metrics.body.contains("mcp_wasm_host_"), "{metrics:?}");
    let signature = token.rsplit('.').next().unwrap();
    assert!(!metrics.body.contains(&token) && !metrics.body.contains(signature), "{}", metrics.body);
}

#[tokio::test]
async fn tokens_that_are_expired_early_for_another_audience_or_issuer_or_forged_get_401_invalid_token() {
    let key = Key::new("k1");
    let issuer = Issuer::start(&[&key]).await;
    let host = host_for(&issuer.url).await;
    let with = |change: Value| {
        let mut claims = issuer.claims();
        for (name, value) in change.as_object().unwrap() {
            claims[name] = value.clone();
        }
        claims
    };
    let now = now();
    let refused = [
        ("expired", key.sign(&with(json!({ "exp": now - 120 })))),
        ("not yet valid", key.sign(&with(json!({ "nbf": now + 300 })))),
        ("another audience", key.sign(&with(json!({ "aud": "https://other.example.com/mcp" })))),
        ("another issuer", key.sign(&with(json!({ "iss": "https://evil.example.com" })))),
        ("no aud", key.sign(&with(json!({ "aud": null })))),
        ("signed by another key under the same kid", Key::new("k1").sign(&issuer.claims())),
        ("alg none", {
            let header = URL_SAFE_NO_PAD.encode(r#"{"alg":"none","typ":"JWT","kid":"k1"}"#);
            let payload = URL_SAFE_NO_PAD.encode(issuer.claims().to_string());
            format!("{header}.{payload}.")
        }),
        ("HS256 with the public key as the secret", {
            let mut header = Header::new(Algorithm::HS256);
            header.kid = Some("k1".into());
            jsonwebtoken::encode(&header, &issuer.claims(), &EncodingKey::from_secret(&key.public)).unwrap()
        }),
        ("garbage", "not-a-jwt".to_string()),
        // Before, these three were accepted: a string `nbf` was skipped
        // (fail-open where a string `exp` is refused), `typ` was not read,
        // and an unknown critical extension was ignored.
        ("a string nbf", key.sign(&with(json!({ "nbf": (now + 3000).to_string() })))),
        (
            "typ JWT, not at+jwt",
            key.sign_with_header(&json!({ "alg": "EdDSA", "typ": "JWT", "kid": "k1" }), &issuer.claims()),
        ),
        ("no typ", key.sign_with_header(&json!({ "alg": "EdDSA", "kid": "k1" }), &issuer.claims())),
        (
            "an unknown crit",
            key.sign_with_header(
                &json!({ "alg": "EdDSA", "typ": "at+jwt", "kid": "k1", "crit": ["exp-ext"], "exp-ext": 1 }),
                &issuer.claims(),
            ),
        ),
    ];
    // The hand-written header itself is good: at+jwt without crit passes.
    let by_hand =
        key.sign_with_header(&json!({ "alg": "EdDSA", "typ": "at+jwt", "kid": "k1" }), &issuer.claims());
    assert_eq!(init(&host, &by_hand).await.status, 200);
    for (what, token) in &refused {
        let answer = init(&host, token).await;
        assert_eq!(answer.status, 401, "{what}: {answer:?}");
        assert_refused(&answer, &host, Some("invalid_token"));
    }
    // Within the leeway (60 s) a token still passes.
    let skewed = key.sign(&with(json!({ "exp": now - 20, "nbf": now + 20 })));
    assert_eq!(init(&host, &skewed).await.status, 200);
}

#[tokio::test]
async fn an_unknown_kid_refreshes_the_keys_once_so_a_rotation_succeeds_and_a_bogus_kid_fails() {
    let (old, new, bogus) = (Key::new("old"), Key::new("new"), Key::new("bogus"));
    let issuer = Issuer::start(&[&old]).await;
    let host = host_for(&issuer.url).await;
    assert_eq!(init(&host, &old.sign(&issuer.claims())).await.status, 200);
    assert_eq!(issuer.fetches.load(Ordering::SeqCst), 1);
    // The issuer rotates: the first token with the new key refreshes the cache.
    issuer.publish(&[&old, &new]);
    assert_eq!(init(&host, &new.sign(&issuer.claims())).await.status, 200);
    assert_eq!(issuer.fetches.load(Ordering::SeqCst), 2);
    // A key the issuer never published: refused, without another fetch
    // (refreshes for unknown keys are rate-limited).
    for _ in 0..3 {
        let answer = init(&host, &bogus.sign(&issuer.claims())).await;
        assert_refused(&answer, &host, Some("invalid_token"));
    }
    assert_eq!(issuer.fetches.load(Ordering::SeqCst), 2);
    assert_eq!(init(&host, &old.sign(&issuer.claims())).await.status, 200);
}

#[tokio::test]
async fn an_issuer_that_never_answers_fails_closed_within_its_bound() {
    // Accepts connections and never answers them.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for stream in listener.incoming() {
            held.push(stream);
        }
    });
    let host = host_for(&url).await;
    let key = Key::new("k1");
    let claims = json!({ "iss": url, "sub": "alice", "aud": RESOURCE, "exp": now() + 300 });
    let started = Instant::now();
    let answer = init(&host, &key.sign(&claims)).await;
    let took = started.elapsed();
    assert_refused(&answer, &host, Some("invalid_token"));
    assert!(took < Duration::from_secs(15), "took {took:?}");
    host.stderr
        .wait_for("a log line about the issuer", |line| {
            line.text().contains("cannot fetch the authorization server's keys")
        })
        .await;
    // Meanwhile probes answer as ever.
    assert_eq!(send(&host, "GET", "/healthz", None, None, None).await.status, 200);
}

/// A loopback server whose every answer is `200` with a body that never
/// ends: the start of a JSON object, then spaces, as fast as they are
/// read. With `discovery`, its RFC 8414 discovery document is the one
/// answer that ends (its `jwks_uri` and `introspection_endpoint` are then
/// endless). Returns its URL, and how many connections the other side has
/// hung up on mid-body.
pub(crate) async fn endless_issuer(discovery: bool) -> (String, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let document = json!({ "issuer": url, "jwks_uri": format!("{url}/jwks"),
                           "introspection_endpoint": format!("{url}/introspect") });
    let document = discovery.then(|| document.to_string());
    let hung_up = Arc::new(AtomicUsize::new(0));
    let counter = hung_up.clone();
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else { continue };
            tokio::spawn(answer_endlessly(stream, document.clone(), counter.clone()));
        }
    });
    (url, hung_up)
}

/// Answers the requests on `stream`: the discovery `document` (if any) for
/// its path, else a body without end, counting in `hung_up` when the
/// other side closes it.
async fn answer_endlessly(mut stream: TcpStream, document: Option<String>, hung_up: Arc<AtomicUsize>) {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    loop {
        // The request's head (a body, if any, is left unread).
        let mut head = Vec::new();
        while !head.windows(4).any(|w| w == b"\r\n\r\n") && head.len() < 16 << 10 {
            let mut buf = [0; 4096];
            match stream.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(n) => head.extend_from_slice(&buf[..n]),
            }
        }
        let discovery = head.starts_with(b"GET /.well-known/oauth-authorization-server ");
        if let Some(document) = document.as_ref().filter(|_| discovery) {
            let length = document.len();
            let answer = format!("HTTP/1.1 200 OK\r\ncontent-length: {length}\r\n\r\n{document}");
            // The connection stays open, for the next request on it.
            if stream.write_all(answer.as_bytes()).await.is_err() {
                return;
            }
            continue;
        }
        // No length: the body would end when the connection does.
        let start =
            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nconnection: close\r\n\r\n{\"keys\":";
        let spaces = vec![b' '; 64 << 10];
        let mut sent = stream.write_all(start.as_bytes()).await;
        while sent.is_ok() {
            sent = stream.write_all(&spaces).await;
        }
        hung_up.fetch_add(1, Ordering::SeqCst);
        return;
    }
}

/// Waits until the other side has hung up on `hung_up`'s server at least once.
pub(crate) async fn wait_for_hang_up(hung_up: &AtomicUsize) {
    let waited = async {
        while hung_up.load(Ordering::SeqCst) == 0 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    };
    tokio::time::timeout(PATIENCE, waited).await.expect("the host hung up on the endless body");
}

#[tokio::test]
async fn an_issuer_that_answers_endlessly_fails_closed_within_its_bound() {
    // An endless discovery document, then a good one naming an endless JWKS.
    for discovery in [false, true] {
        let (url, hung_up) = endless_issuer(discovery).await;
        let host = host_for(&url).await;
        let claims = json!({ "iss": url, "sub": "alice", "aud": RESOURCE, "exp": now() + 300 });
        let started = Instant::now();
        let answer = init(&host, &Key::new("k1").sign(&claims)).await;
        let took = started.elapsed();
        assert_refused(&answer, &host, Some("invalid_token"));
        // Refused after 1 MiB, well before the 10 s bound (and 15 s is
        // that bound with room for a loaded machine).
        assert!(took < Duration::from_secs(15), "discovery {discovery}: took {took:?}");
        let logged = host
            .stderr
            .wait_for("a log line about the issuer", |line| {
                line.text().contains("cannot fetch the authorization server's keys")
            })
            .await;
        let what = if discovery {
            "its JWKS is larger than 1048576 bytes"
        } else {
            "its discovery document is larger than 1048576 bytes"
        };
        assert!(logged.text().contains(what), "discovery {discovery}: {logged}");
        // The host stopped reading: it hung up on the body.
        wait_for_hang_up(&hung_up).await;
        // Meanwhile the host answers as ever.
        assert_eq!(send(&host, "GET", "/healthz", None, None, None).await.status, 200);
        let metadata =
            send(&host, "GET", "/.well-known/oauth-protected-resource/mcp", None, None, None).await;
        assert_eq!(metadata.status, 200, "{metadata:?}");
    }
}

#[tokio::test]
async fn auth_is_refused_without_http_and_without_a_resource() {
    let run = |args: Vec<String>| async move {
        let output = tokio::process::Command::new(host_binary())
            .arg("--component")
            .arg(guest("demo"))
            .args(args)
            .stdin(std::process::Stdio::null())
            .output()
            .await
            .unwrap();
        (output.status.success(), String::from_utf8_lossy(&output.stderr).into_owned())
    };
    let issuer = "https://login.example.com".to_string();
    let (ok, stderr) =
        run(vec!["--auth-issuer".into(), issuer.clone(), "--auth-resource".into(), RESOURCE.into()]).await;
    assert!(!ok && stderr.contains("--http"), "{stderr}");
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("tools.toml");
    std::fs::write(&config, format!("[server.auth]\nissuer = \"{issuer}\"\nresource = \"{RESOURCE}\"\n"))
        .unwrap();
    let (ok, stderr) = run(vec!["--config".into(), config.display().to_string()]).await;
    assert!(!ok && stderr.contains("only with --http"), "{stderr}");
    let (ok, stderr) = run(vec!["--http".into(), "127.0.0.1:0".into(), "--auth-issuer".into(), issuer]).await;
    assert!(!ok && stderr.contains("--auth-resource"), "{stderr}");
}
