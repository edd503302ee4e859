//! Opaque access tokens (`--auth-client-id`): the host asks the test
//! issuer of `auth.rs` about each by token introspection (RFC 7662),
//! authenticating with its client credentials, and caches the verdict.
//! The issuer counts the requests, so the cache is seen from outside.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use serde_json::json;

use crate::auth::{
    CLIENT_ID, CLIENT_SECRET, Issuer, Key, RESOURCE, assert_refused, endless_issuer, init, send,
    wait_for_hang_up,
};
use crate::http_limits::HttpHost;

/// A host that introspects opaque tokens at `issuer` with `secret`, plus `more` flags.
async fn host_for(issuer: &Issuer, secret: &str, more: &[&str]) -> (HttpHost, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let secret_file = dir.path().join("client-secret");
    // With the newline an editor leaves: not part of the secret.
    std::fs::write(&secret_file, format!("{secret}\n")).unwrap();
    let secret_file = secret_file.display().to_string();
    let mut args = vec![
        "--auth-issuer",
        &issuer.url,
        "--auth-resource",
        RESOURCE,
        "--auth-client-id",
        CLIENT_ID,
        "--auth-client-secret-file",
        &secret_file,
    ];
    args.extend(more);
    (HttpHost::start(&args).await, dir)
}

/// Asserts the refusal that says the issuer cannot be asked now.
fn assert_cannot_check(answer: &crate::auth::Answer, host: &HttpHost) {
    assert_refused(answer, host, Some("invalid_token"));
    assert!(answer.body.contains("cannot be checked now"), "{answer:?}");
}

#[tokio::test]
async fn a_valid_opaque_token_calls_a_tool_and_is_introspected_once() {
    let issuer = Issuer::start(&[]).await;
    let (host, _dir) = host_for(&issuer, CLIENT_SECRET, &[]).await;
    let token = "opaque-4f1c9a7e2b";
    issuer.grant(token, issuer.active("alice"));

    let opened = init(&host, token).await;
    assert_eq!(opened.status, 200, "{opened:?}");
    let session = opened.session.expect("a session id");
    let initialized = json!({ "jsonrpc": "2.0", "method": "notifications/initialized" });
    assert_eq!(send(&host, "POST", "/mcp", Some(token), Some(&session), Some(initialized)).await.status, 202);
    let call = json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call",
                       "params": { "name": "echo", "arguments": { "text": "opaque and fine" } } });
    let called = send(&host, "POST", "/mcp", Some(token), Some(&session), Some(call)).await;
    assert_eq!(called.status, 200, "{called:?}");
    assert!(
        called.body.contains("opaque and fine") && !called.body.contains("\"isError\":true"),
        "{called:?}"
    );
    // Three requests with the token, one question to the issuer: the rest
    // came from the cache.
    assert_eq!(issuer.introspections.load(Ordering::SeqCst), 1);
    // Another token is another question.
    issuer.grant("opaque-other", issuer.active("bob"));
    assert_eq!(init(&host, "opaque-other").await.status, 200);
    assert_eq!(issuer.introspections.load(Ordering::SeqCst), 2);
    let log = host.stderr.dump();
    assert!(!log.contains(token) && !log.contains("opaque-other"), "a token reached the log");
}

#[tokio::test]
async fn revoked_foreign_and_subjectless_opaque_tokens_get_401_invalid_token() {
    let issuer = Issuer::start(&[]).await;
    let (host, _dir) = host_for(&issuer, CLIENT_SECRET, &[]).await;
    let with = |change: serde_json::Value| {
        let mut answer = issuer.active("alice");
        for (name, value) in change.as_object().unwrap() {
            answer[name] = value.clone();
        }
        answer
    };
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs();
    let refused = [
        ("revoked", json!({ "active": false })),
        ("another audience", with(json!({ "aud": "https://other.example.com/mcp" }))),
        ("no audience", with(json!({ "aud": null }))),
        ("another issuer", with(json!({ "iss": "https://evil.example.com" }))),
        ("expired", with(json!({ "exp": now - 120 }))),
        ("no subject", with(json!({ "sub": null }))),
    ];
    for (n, (what, answer)) in refused.iter().enumerate() {
        let token = format!("opaque-refused-{n}");
        issuer.grant(&token, answer.clone());
        let answer = init(&host, &token).await;
        assert_eq!(answer.status, 401, "{what}: {answer:?}");
        assert_refused(&answer, &host, Some("invalid_token"));
    }
    // A token the issuer never issued: inactive too.
    assert_refused(&init(&host, "opaque-unknown").await, &host, Some("invalid_token"));
    let asked = issuer.introspections.load(Ordering::SeqCst);
    assert_eq!(asked, refused.len() + 1);
    // Refusals are remembered briefly: sending them again asks nothing.
    for _ in 0..3 {
        assert_refused(&init(&host, "opaque-refused-0").await, &host, Some("invalid_token"));
        assert_refused(&init(&host, "opaque-unknown").await, &host, Some("invalid_token"));
    }
    assert_eq!(issuer.introspections.load(Ordering::SeqCst), asked);
}

#[tokio::test]
async fn without_client_credentials_opaque_tokens_are_refused_unasked() {
    let issuer = Issuer::start(&[]).await;
    let host = HttpHost::start(&["--auth-issuer", &issuer.url, "--auth-resource", RESOURCE]).await;
    issuer.grant("opaque-valid", issuer.active("alice"));
    let answer = init(&host, "opaque-valid").await;
    assert_refused(&answer, &host, Some("invalid_token"));
    assert!(answer.body.contains("no introspection"), "{answer:?}");
    assert_eq!(issuer.introspections.load(Ordering::SeqCst), 0);
    // JWTs still go the JWT way (here: no key, refused) and are never introspected.
    let jwt = Key::new("k1").sign(&issuer.active("alice"));
    assert_refused(&init(&host, &jwt).await, &host, Some("invalid_token"));
    assert_eq!(issuer.introspections.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn credentials_the_issuer_refuses_fail_closed() {
    let issuer = Issuer::start(&[]).await;
    // The secret from a config file, relative to it.
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("secret"), "not-the-secret\n").unwrap();
    let config = dir.path().join("tools.toml");
    std::fs::write(
        &config,
        format!(
            "[server.auth]\nissuer = \"{}\"\nresource = \"{RESOURCE}\"\nclient_id = \"{CLIENT_ID}\"\n\
             client_secret_file = \"secret\"\n",
            issuer.url
        ),
    )
    .unwrap();
    let host = HttpHost::start(&["--config", &config.display().to_string()]).await;
    issuer.grant("opaque-valid", issuer.active("alice"));
    assert_cannot_check(&init(&host, "opaque-valid").await, &host);
    assert_eq!(issuer.introspections.load(Ordering::SeqCst), 1);
    host.stderr
        .wait_for("the refused credentials in the log", |line| {
            line.text().contains("refused the host's client credentials")
        })
        .await;
    assert!(!host.stderr.dump().contains("not-the-secret"), "the secret reached the log");
}

#[tokio::test]
async fn a_hanging_introspection_endpoint_fails_closed_within_its_bound() {
    let issuer = Issuer::start(&[]).await;
    // Accepts connections and never answers them.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let endpoint = format!("http://{}/introspect", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for stream in listener.incoming() {
            held.push(stream);
        }
    });
    let (host, _dir) = host_for(&issuer, CLIENT_SECRET, &["--auth-introspection-url", &endpoint]).await;
    issuer.grant("opaque-valid", issuer.active("alice"));
    let started = Instant::now();
    let answer = init(&host, "opaque-valid").await;
    let took = started.elapsed();
    assert_cannot_check(&answer, &host);
    assert!(took < Duration::from_secs(15), "took {took:?}");
    // The explicit endpoint was used, not the issuer's.
    assert_eq!(issuer.introspections.load(Ordering::SeqCst), 0);
    // Meanwhile probes answer as ever.
    assert_eq!(send(&host, "GET", "/healthz", None, None, None).await.status, 200);
}

#[tokio::test]
async fn an_introspection_endpoint_that_answers_endlessly_fails_closed_within_its_bound() {
    let issuer = Issuer::start(&[]).await;
    // Answers every request with a body that never ends.
    let (endless, hung_up) = endless_issuer(false).await;
    let endpoint = format!("{endless}/introspect");
    let (host, _dir) = host_for(&issuer, CLIENT_SECRET, &["--auth-introspection-url", &endpoint]).await;
    issuer.grant("opaque-valid", issuer.active("alice"));
    let started = Instant::now();
    let answer = init(&host, "opaque-valid").await;
    let took = started.elapsed();
    assert_cannot_check(&answer, &host);
    // Refused after 64 KiB, within the 10 s bound (with room for a loaded machine).
    assert!(took < Duration::from_secs(15), "took {took:?}");
    let logged = host
        .stderr
        .wait_for("a log line about the introspection", |line| {
            line.text().contains("cannot introspect an access token")
        })
        .await;
    assert!(logged.text().contains("the introspection answer is larger than 65536 bytes"), "{logged}");
    // The host stopped reading: it hung up on the body.
    wait_for_hang_up(&hung_up).await;
    assert_eq!(issuer.introspections.load(Ordering::SeqCst), 0);
    // Meanwhile the host answers as ever: its probe and its metadata.
    assert_eq!(send(&host, "GET", "/healthz", None, None, None).await.status, 200);
    let metadata = send(&host, "GET", "/.well-known/oauth-protected-resource/mcp", None, None, None).await;
    assert_eq!(metadata.status, 200, "{metadata:?}");
}
