//! With `--auth-issuer`, what a caller may reach, over the real wire: only
//! the tools its token's scopes allow (`tools/list` filtered, a call of
//! another answered `403 insufficient_scope`, then a step-up succeeds),
//! only what it started itself (another caller's session, task, paused
//! call or sealed `requestState` is answered as one never issued, and a
//! refreshed token of the same caller still continues its call), and only
//! its share of the host's calls and pauses.
//!
//! The callers are rmcp's own client on protocol 2026-07-28 (stateless
//! HTTP, where task ids and `requestState`s are the only keys), and raw
//! HTTP where a status and header are asserted.

use rmcp::model::{
    CallToolResponse, ClientCapabilities, GetTaskParams, InputRequest, ProtocolVersion, TaskPayload,
    UpdateTaskParams,
};
use rmcp::service::RunningService;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ClientLifecycleMode, ClientServiceExt as _, RoleClient};
use serde_json::{Value, json};
use sha2::Digest as _;

use crate::auth::{Issuer, Key, RESOURCE, Reachable, init, now, send};
use crate::harness::{PATIENCE, TestClient, approval_answer, params, task_id, text_of};
use crate::http_limits::HttpHost;

pub(crate) type Client = RunningService<RoleClient, TestClient>;

/// A host whose tokens come from `issuer`, with `extra` flags.
async fn host(issuer: &Issuer, extra: &[&str]) -> HttpHost {
    let mut args =
        vec!["--auth-issuer", &issuer.url, "--auth-resource", RESOURCE, "--auth-scopes", "tools:call"];
    args.extend_from_slice(extra);
    HttpHost::start(&args).await
}

/// A token of `key` for `subject`, with `scope`; `nonce` makes a fresh one
/// (a refreshed token: same caller, other bytes).
pub(crate) fn token(key: &Key, issuer: &Issuer, subject: &str, scope: &str, nonce: u64) -> String {
    let mut claims = issuer.claims();
    claims["sub"] = json!(subject);
    claims["scope"] = json!(scope);
    claims["jti"] = json!(format!("{subject}-{nonce}"));
    claims["exp"] = json!(now() + 300 + nonce);
    key.sign(&claims)
}

/// rmcp's client on 2026-07-28, sending `token`, declaring `capabilities`.
pub(crate) async fn client(host: &impl Reachable, token: &str, capabilities: ClientCapabilities) -> Client {
    // reqwest (under rmcp's HTTP client) takes the TLS provider the host uses.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let config = StreamableHttpClientTransportConfig::with_uri(format!("http://{}/mcp", host.addr()))
        .auth_header(token);
    let transport = StreamableHttpClientTransport::from_config(config);
    let lifecycle = ClientLifecycleMode::Discover { preferred_versions: vec![ProtocolVersion::V_2026_07_28] };
    TestClient::declaring(capabilities)
        .serve_with_lifecycle(transport, lifecycle)
        .await
        .expect("MCP client start")
}

pub(crate) fn asks() -> ClientCapabilities {
    ClientCapabilities::builder().enable_elicitation().build()
}

pub(crate) fn tasks() -> ClientCapabilities {
    ClientCapabilities::builder().enable_elicitation().enable_tasks().build()
}

/// The one question of a paused result: its key, the request, and the state.
pub(crate) fn paused(response: CallToolResponse) -> (String, InputRequest, String) {
    let CallToolResponse::InputRequired(paused) = response else {
        panic!("expected a pause, got {response:?}")
    };
    let (key, request) = paused.input_requests.unwrap().into_iter().next().unwrap();
    (key, request, paused.request_state.unwrap())
}

pub(crate) fn completed(response: CallToolResponse) -> String {
    let CallToolResponse::Complete(result) = response else {
        panic!("expected the result, got {response:?}")
    };
    text_of(&result)
}

pub(crate) fn delete() -> rmcp::model::CallToolRequestParams {
    params("delete_records", json!({ "table": "users" }))
}

/// A call that works a moment (long enough to become a task for a client
/// of the tasks extension), then asks the user's approval.
pub(crate) fn prune() -> rmcp::model::CallToolRequestParams {
    params("prune", json!({ "find_ms": 300 }))
}

/// The error text of `result`, with `id` written as `ID` (so the answers
/// for two ids can be compared).
pub(crate) fn error_text<T: std::fmt::Debug>(result: Result<T, rmcp::ServiceError>, id: &str) -> String {
    result.expect_err("refused").to_string().replace(id, "ID")
}

#[tokio::test]
async fn another_caller_cannot_resume_or_answer_a_paused_call_and_a_refreshed_token_can() {
    let key = Key::new("k1");
    let issuer = Issuer::start(&[&key]).await;
    let host = host(&issuer, &[]).await;
    let alice = client(&host, &token(&key, &issuer, "alice", "tools:call", 0), asks()).await;
    let bob = client(&host, &token(&key, &issuer, "bob", "tools:call", 0), asks()).await;

    let (question, _, state) = paused(alice.call_tool_once(delete()).await.unwrap());
    let follow_up = |state: &str| {
        delete().with_input_responses(approval_answer(&question, true)).with_request_state(state.to_string())
    };
    // Bob presents Alice's requestState with a yes: the same answer as a
    // state never issued, and her call is still paused.
    let never = uuid_like(&state);
    let refused = error_text(bob.call_tool_once(follow_up(&state)).await, &state);
    assert_eq!(refused, error_text(bob.call_tool_once(follow_up(&never)).await, &never));
    assert!(refused.contains("no paused call has this requestState"), "{refused}");
    assert_eq!(host_status(&host).await["paused_calls"], 1);

    // Alice, with a refreshed token (same issuer and subject), continues it.
    let alice_again = client(&host, &token(&key, &issuer, "alice", "tools:call", 1), asks()).await;
    let done = alice_again.call_tool_once(follow_up(&state)).await.unwrap();
    assert_eq!(completed(done), "deleted every record of users");
}

#[tokio::test]
async fn a_sealed_request_state_continues_only_for_its_own_caller() {
    let dir = tempfile::tempdir().unwrap();
    let key_file = dir.path().join("state.key");
    std::fs::write(&key_file, "auth-test-state-key-of-forty-bytes-long!!\n").unwrap();
    let key = Key::new("k1");
    let issuer = Issuer::start(&[&key]).await;
    let host = host(&issuer, &["--state-key-file", key_file.to_str().unwrap()]).await;
    let alice = client(&host, &token(&key, &issuer, "alice", "tools:call", 0), asks()).await;
    let bob = client(&host, &token(&key, &issuer, "bob", "tools:call", 0), asks()).await;

    let (question, _, state) = paused(alice.call_tool_once(delete()).await.unwrap());
    let follow_up =
        || delete().with_input_responses(approval_answer(&question, true)).with_request_state(state.clone());
    let refused = error_text(bob.call_tool_once(follow_up()).await, &state);
    assert!(refused.contains("requestState failed verification"), "{refused}");
    let alice_again = client(&host, &token(&key, &issuer, "alice", "tools:call", 1), asks()).await;
    assert_eq!(
        completed(alice_again.call_tool_once(follow_up()).await.unwrap()),
        "deleted every record of users"
    );
}

#[tokio::test]
async fn another_caller_cannot_see_answer_or_cancel_a_task() {
    let key = Key::new("k1");
    let issuer = Issuer::start(&[&key]).await;
    let host = host(&issuer, &[]).await;
    let alice = client(&host, &token(&key, &issuer, "alice", "tools:call", 0), tasks()).await;
    let bob = client(&host, &token(&key, &issuer, "bob", "tools:call", 0), tasks()).await;

    // A call that runs past a moment becomes a task (a question asked at
    // once would be a round of the call itself).
    let long = params("countdown", json!({ "steps": 5, "step_ms": 100, "quiet": true }));
    let id = task_id(alice.call_tool_once(long).await.unwrap());

    // Each of Bob's requests gets the answer for a task never issued.
    let never = uuid_like(&id);
    let unknown = error_text(bob.peer().get_task(GetTaskParams::new(never.clone())).await, &never);
    assert_eq!(error_text(bob.peer().get_task(GetTaskParams::new(id.clone())).await, &id), unknown);
    let answer = UpdateTaskParams::new(id.clone(), approval_answer("approval-1", true));
    assert_eq!(error_text(bob.peer().update_task(answer).await, &id), unknown);
    let cancel = rmcp::model::CancelTaskParams::new(id.clone());
    assert_eq!(error_text(bob.peer().cancel_task(cancel).await, &id), unknown);

    // Alice's task runs on, and she sees it complete.
    let done = poll(&alice, &id, |payload| matches!(payload, TaskPayload::Completed { .. })).await;
    let TaskPayload::Completed { result } = done else { unreachable!() };
    assert_eq!(result["content"][0]["text"], "counted down from 5");
}

#[tokio::test]
async fn each_caller_has_its_share_of_calls() {
    let key = Key::new("k1");
    let issuer = Issuer::start(&[&key]).await;
    let host = host(&issuer, &["--max-calls-per-principal", "1"]).await;
    let alice = client(&host, &token(&key, &issuer, "alice", "tools:call", 0), asks()).await;
    let bob = client(&host, &token(&key, &issuer, "bob", "tools:call", 0), asks()).await;

    // Alice's call waits for her answer, holding her one call.
    let (question, _, state) = paused(alice.call_tool_once(delete()).await.unwrap());
    let refused = alice.call_tool(params("echo", json!({ "text": "two" }))).await;
    let refused = refused.expect_err("past her share").to_string();
    assert!(refused.contains("--max-calls-per-principal"), "{refused}");
    // Bob's share is his own.
    assert_eq!(text_of(&bob.call_tool(params("echo", json!({ "text": "bob" }))).await.unwrap()), "bob");
    // Her answer ends the call, and its slot is hers again.
    let follow_up =
        delete().with_input_responses(approval_answer(&question, false)).with_request_state(state);
    completed(alice.call_tool_once(follow_up).await.unwrap());
    assert_eq!(text_of(&alice.call_tool(params("echo", json!({ "text": "again" }))).await.unwrap()), "again");
}

#[tokio::test]
async fn each_caller_has_its_share_of_pauses() {
    let key = Key::new("k1");
    let issuer = Issuer::start(&[&key]).await;
    let host = host(&issuer, &["--max-paused-per-principal", "1"]).await;
    let alice = client(&host, &token(&key, &issuer, "alice", "tools:call", 0), asks()).await;
    let bob = client(&host, &token(&key, &issuer, "bob", "tools:call", 0), asks()).await;

    paused(alice.call_tool_once(delete()).await.unwrap());
    // Her second pause is declined at once, naming the flag; Bob's is not.
    let second = alice.call_tool(params("delete_records", json!({ "table": "logs" }))).await.unwrap();
    assert!(text_of(&second).contains("--max-paused-per-principal"), "{}", text_of(&second));
    paused(bob.call_tool_once(delete()).await.unwrap());
}

#[tokio::test]
async fn tools_list_shows_what_the_token_reaches_and_a_missing_scope_is_403_then_a_step_up_succeeds() {
    let key = Key::new("k1");
    let issuer = Issuer::start(&[&key]).await;
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("audit.jsonl");
    let mut host =
        host(&issuer, &["--tool-scope", "echo=tools:echo", "--audit-log", log.to_str().unwrap()]).await;
    let metadata = send(&host, "GET", "/.well-known/oauth-protected-resource/mcp", None, None, None).await;
    let document: Value = serde_json::from_str(&metadata.body).unwrap();
    assert_eq!(document["scopes_supported"], json!(["tools:call", "tools:echo"]));

    let narrow = token(&key, &issuer, "alice", "tools:call", 0);
    let session = open(&host, &narrow).await;
    let listed =
        send(&host, "POST", "/mcp", Some(&narrow), Some(&session), Some(request(1, "tools/list", json!({}))))
            .await;
    assert_eq!(listed.status, 200, "{listed:?}");
    assert!(listed.body.contains("\"delete_records\"") && !listed.body.contains("\"echo\""), "{listed:?}");

    let call = request(2, "tools/call", json!({ "name": "echo", "arguments": { "text": "stepped up" } }));
    let forbidden = send(&host, "POST", "/mcp", Some(&narrow), Some(&session), Some(call.clone())).await;
    assert_eq!(forbidden.status, 403, "{forbidden:?}");
    let challenge = forbidden.challenge.clone().expect("a WWW-Authenticate header");
    assert!(challenge.starts_with("Bearer error=\"insufficient_scope\""), "{challenge}");
    // What to step up to: the scope it lacks, and the one it has.
    assert!(challenge.contains("scope=\"tools:call tools:echo\""), "{challenge}");
    assert!(challenge.contains("resource_metadata=\"http://127.0.0.1/.well-known/"), "{challenge}");
    assert!(forbidden.body.contains("tools:echo"), "{forbidden:?}");

    // The step-up: a token with both scopes, the same caller, its session.
    let wide = token(&key, &issuer, "alice", "tools:call tools:echo", 1);
    let called = send(&host, "POST", "/mcp", Some(&wide), Some(&session), Some(call)).await;
    assert_eq!(called.status, 200, "{called:?}");
    assert!(called.body.contains("stepped up") && !called.body.contains("\"isError\":true"), "{called:?}");
    let listed =
        send(&host, "POST", "/mcp", Some(&wide), Some(&session), Some(request(3, "tools/list", json!({}))))
            .await;
    assert!(listed.body.contains("\"echo\""), "{listed:?}");

    // The 403 is in the audit log, as a refusal the MCP handler answers
    // would be: who, which tool, the digest of the arguments, and why.
    crate::fleet::terminate(&host);
    assert_eq!(crate::fleet::exit_code(&mut host).await, Some(0), "{}", host.stderr.dump());
    let all = crate::audit::records(&log);
    let calls: Vec<&Value> = all.iter().filter(|record| record["event"] == "call").collect();
    assert_eq!(calls.len(), 2, "the refusal and the stepped-up call: {all:#?}");
    let (refused, called) = (calls[0], calls[1]);
    assert_eq!(refused["tool"], "echo");
    assert_eq!((&refused["outcome"], &refused["reason"]), (&json!("refused"), &json!("insufficient-scope")));
    assert_eq!(refused["principal"], json!({ "issuer": issuer.url, "subject": "alice" }));
    assert_eq!(refused["client_id"], "test-client");
    assert_eq!(refused["request"], 2);
    assert_eq!(refused["approval"], Value::Null);
    // The same arguments, the same digest, whichever layer refused.
    assert_eq!(refused["arguments_sha256"], called["arguments_sha256"]);
    let canonical = r#"{"text":"stepped up"}"#;
    assert_eq!(refused["arguments_sha256"], hex::encode(sha2::Sha256::digest(canonical)));
    assert_eq!(refused["session"], called["session"]);
    assert!(refused["session"].as_str().is_some_and(|s| s.len() == 16 && !session.contains(s)), "{refused}");
    assert_eq!(called["outcome"], "ok");
    let text = std::fs::read_to_string(&log).unwrap();
    for secret in [narrow.as_str(), wide.as_str(), session.as_str(), "eyJ"] {
        assert!(!text.contains(secret), "{secret:?} is in the audit log:\n{text}");
    }
}

#[tokio::test]
async fn another_callers_session_is_not_found() {
    let key = Key::new("k1");
    let issuer = Issuer::start(&[&key]).await;
    let host = host(&issuer, &[]).await;
    let alice = token(&key, &issuer, "alice", "tools:call", 0);
    let bob = token(&key, &issuer, "bob", "tools:call", 0);
    let session = open(&host, &alice).await;
    let list = || Some(request(1, "tools/list", json!({})));
    for method in ["POST", "GET", "DELETE"] {
        let body = if method == "POST" { list() } else { None };
        let answer = send(&host, method, "/mcp", Some(&bob), Some(&session), body).await;
        assert_eq!(answer.status, 404, "{method}: {answer:?}");
        assert_eq!(answer.body, "Not Found: Session not found");
    }
    // Alice's session is untouched, and hers with a refreshed token.
    let refreshed = token(&key, &issuer, "alice", "tools:call", 1);
    let listed = send(&host, "POST", "/mcp", Some(&refreshed), Some(&session), list()).await;
    assert_eq!(listed.status, 200, "{listed:?}");
}

/// A JSON-RPC request.
pub(crate) fn request(id: u64, method: &str, params: Value) -> Value {
    json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params })
}

/// A 2025-11-25 session opened with `token`: its id.
pub(crate) async fn open(host: &impl Reachable, token: &str) -> String {
    let opened = init(host, token).await;
    assert_eq!(opened.status, 200, "{opened:?}");
    let session = opened.session.expect("a session id");
    let initialized = json!({ "jsonrpc": "2.0", "method": "notifications/initialized" });
    assert_eq!(send(host, "POST", "/mcp", Some(token), Some(&session), Some(initialized)).await.status, 202);
    session
}

/// An id shaped like `id` that was never issued.
pub(crate) fn uuid_like(id: &str) -> String {
    id.chars().map(|c| if c.is_ascii_alphanumeric() { '0' } else { c }).collect()
}

/// The host's live counts, from its `/metrics` (no token needed).
async fn host_status(host: &HttpHost) -> Value {
    let metrics = crate::fleet::get(host, "/metrics").await.body;
    let paused = metrics
        .lines()
        .find_map(|line| line.strip_prefix("mcp_wasm_host_paused_calls "))
        .and_then(|n| n.trim().parse::<f64>().ok())
        .expect("paused_calls in /metrics");
    json!({ "paused_calls": paused as u64 })
}

/// Polls a task of `client`'s caller until `done` says its state is the one wanted.
pub(crate) async fn poll(client: &Client, id: &str, done: impl Fn(&TaskPayload) -> bool) -> TaskPayload {
    let poll = async {
        loop {
            let task = client.peer().get_task(GetTaskParams::new(id)).await.unwrap().task;
            if done(&task.payload) {
                return task.payload;
            }
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        }
    };
    tokio::time::timeout(PATIENCE, poll).await.expect("the task reached the state in time")
}

#[tokio::test]
async fn prompts_and_resources_need_their_components_scopes_and_a_prompt_its_own() {
    let key = Key::new("k1");
    let issuer = Issuer::start(&[&key]).await;
    let everything = crate::harness::guest("everything").display().to_string();
    let host =
        host(&issuer, &["--component", &everything, "--tool-scope", "test_simple_prompt=prompts:simple"])
            .await;
    let narrow = token(&key, &issuer, "alice", "tools:call", 0);
    let session = open(&host, &narrow).await;
    let ask = |id, method: &str, params: Value| request(id, method, params);
    let listed =
        send(&host, "POST", "/mcp", Some(&narrow), Some(&session), Some(ask(1, "prompts/list", json!({}))))
            .await;
    assert_eq!(listed.status, 200, "{listed:?}");
    assert!(
        listed.body.contains("\"test_prompt_with_arguments\"")
            && !listed.body.contains("\"test_simple_prompt\""),
        "a prompt the token does not reach is not listed: {listed:?}"
    );
    let get = ask(2, "prompts/get", json!({ "name": "test_simple_prompt" }));
    let refused = send(&host, "POST", "/mcp", Some(&narrow), Some(&session), Some(get.clone())).await;
    assert!(refused.body.contains("-32003") && refused.body.contains("prompts:simple"), "{refused:?}");
    // The component's own scope (--auth-scopes) covers its resources.
    let read = ask(3, "resources/read", json!({ "uri": "test://static-text" }));
    let read = send(&host, "POST", "/mcp", Some(&narrow), Some(&session), Some(read)).await;
    assert!(read.body.contains("This is the content of the static text resource."), "{read:?}");

    let wide = token(&key, &issuer, "alice", "tools:call prompts:simple", 1);
    let got = send(&host, "POST", "/mcp", Some(&wide), Some(&session), Some(get)).await;
    assert!(got.body.contains("This is a simple prompt for testing."), "{got:?}");
}

/// A caller's share of calls is taken by every run of guest code, not only
/// `tools/call`: before, `resources/read`, `prompts/get` and
/// `completion/complete` took a host slot but not the caller's share, so
/// one caller could hold every slot while another's call waited 22 s.
#[tokio::test]
async fn a_read_takes_a_slot_of_the_callers_share_as_a_call_does() {
    let key = Key::new("k1");
    let issuer = Issuer::start(&[&key]).await;
    let everything = crate::harness::guest("everything").display().to_string();
    let host = host(
        &issuer,
        &["--component", &everything, "--max-calls-per-principal", "1", "--timeout", "4s", "--fuel", "0"],
    )
    .await;
    let alice = client(&host, &token(&key, &issuer, "alice", "tools:call", 0), asks()).await;
    let bob = client(&host, &token(&key, &issuer, "bob", "tools:call", 0), asks()).await;
    let read = |uri: &str| rmcp::model::ReadResourceRequestParams::new(uri.to_string());

    // Alice's read spins until --timeout, holding her one slot.
    let spinning = {
        let peer = alice.peer().clone();
        let request = read("test://spinning-resource");
        tokio::spawn(async move { peer.read_resource(request).await })
    };
    wait_for_live_calls(&host, 1).await;
    let refused = alice.peer().read_resource(read("test://static-text")).await;
    let refused = refused.expect_err("past her share").to_string();
    assert!(refused.contains("--max-calls-per-principal"), "{refused}");
    let prompt =
        alice.peer().get_prompt(rmcp::model::GetPromptRequestParams::new("test_simple_prompt")).await;
    assert!(prompt.expect_err("past her share").to_string().contains("--max-calls-per-principal"));
    // Bob's share is his own.
    let read_by_bob = bob.peer().read_resource(read("test://static-text")).await.unwrap();
    assert_eq!(
        crate::offers::text(&read_by_bob.contents[0]),
        "This is the content of the static text resource."
    );
    // Her read ends at its deadline, and the slot is hers again.
    assert!(spinning.await.unwrap().is_err());
    alice.peer().read_resource(read("test://static-text")).await.unwrap();
}

/// Waits until `/metrics` shows `n` calls running or waiting.
async fn wait_for_live_calls(host: &HttpHost, n: u64) {
    let wait = async {
        loop {
            let metrics = crate::fleet::get(host, "/metrics").await.body;
            let live = metrics
                .lines()
                .find_map(|line| line.strip_prefix("mcp_wasm_host_live_calls "))
                .and_then(|n| n.trim().parse::<f64>().ok());
            if live == Some(n as f64) {
                return;
            }
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
    };
    tokio::time::timeout(PATIENCE, wait).await.expect("the calls to start");
}

/// On a 2025-era session a tool's own question (a form, not an approval)
/// waits for the user too, and takes a slot of its caller's paused share:
/// before, only approvals did, so `--max-paused-per-principal` did not
/// bound a caller's open elicitations.
#[tokio::test]
async fn an_elicitation_on_a_2025_session_takes_a_slot_of_the_callers_paused_share() {
    let key = Key::new("k1");
    let issuer = Issuer::start(&[&key]).await;
    let host = host(&issuer, &["--max-paused-per-principal", "1"]).await;
    let connect = |subject: &str| {
        let config = StreamableHttpClientTransportConfig::with_uri(format!("http://{}/mcp", host.addr))
            .auth_header(token(&key, &issuer, subject, "tools:call", 0));
        let test_client = TestClient::declaring(asks());
        // Never answers: the first question stays open.
        test_client.hold_from(1);
        let _ = rustls::crypto::ring::default_provider().install_default();
        rmcp::ServiceExt::serve(test_client, StreamableHttpClientTransport::from_config(config))
    };
    let alice = connect("alice").await.expect("alice's session");
    let bob = connect("bob").await.expect("bob's session");
    let survey = || params("survey", json!({ "questions": 1 }));

    let held = {
        let peer = alice.peer().clone();
        let request = survey();
        tokio::spawn(async move { peer.call_tool(request).await })
    };
    alice.service().events.wait_for("her question", |event| event.starts_with("elicit 1")).await;
    let second = alice.call_tool(survey()).await.unwrap();
    assert_eq!(second.is_error, Some(true), "{second:?}");
    assert!(text_of(&second).contains("--max-paused-per-principal"), "{}", text_of(&second));
    // Bob's share is his own: his question is asked.
    let bobs = {
        let peer = bob.peer().clone();
        let request = survey();
        tokio::spawn(async move { peer.call_tool(request).await })
    };
    bob.service().events.wait_for("his question", |event| event.starts_with("elicit 1")).await;
    held.abort();
    bobs.abort();
}

/// A token is the issuer's text: a scope holding a control character
/// panicked the 403 path (no answer at all), and one holding `"` injected
/// a second `resource_metadata` into `WWW-Authenticate`, placed first.
#[tokio::test]
async fn a_hostile_scope_in_a_token_cannot_break_or_forge_the_step_up_challenge() {
    let key = Key::new("k1");
    let issuer = Issuer::start(&[&key]).await;
    let host = host(&issuer, &["--tool-scope", "echo=tools:echo"]).await;
    let forged = "tools:call a\u{1}b del\u{7f} \",resource_metadata=\"https://evil.example/\" x\"y";
    let token = token(&key, &issuer, "alice", forged, 0);
    let session = open(&host, &token).await;
    let call = request(2, "tools/call", json!({ "name": "echo", "arguments": { "text": "x" } }));
    let forbidden = send(&host, "POST", "/mcp", Some(&token), Some(&session), Some(call)).await;
    assert_eq!(forbidden.status, 403, "{forbidden:?}");
    let challenge = forbidden.challenge.expect("a WWW-Authenticate header");
    assert!(!challenge.contains("evil.example"), "{challenge}");
    assert_eq!(challenge.matches("resource_metadata=").count(), 1, "{challenge}");
    assert!(challenge.contains("scope=\"tools:call tools:echo\""), "{challenge}");
}
