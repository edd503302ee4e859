//! `--audit-log`: the trail a run leaves holds exactly its calls — one
//! record each, in every way a call can end (ok, tool error, cancelled,
//! refused, declined, approved) — between a `start` and a `stop`, over
//! stdio and over Streamable HTTP with a principal; never a token or an
//! argument's value; each `--watch` reload is recorded; and no record is
//! lost when logrotate renames the file.

use std::path::Path;

use rmcp::ServiceExt as _;
use rmcp::model::{CallToolResponse, ClientCapabilities, ClientRequest, GetTaskParams, Request, TaskPayload};
use rmcp::service::{PeerRequestOptions, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{RoleClient, ServiceError};
use serde_json::{Value, json};
use sha2::{Digest as _, Sha256};

use crate::auth::{Issuer, Key, RESOURCE};
use crate::fleet::{exit_code, get, terminate};
use crate::harness::{Approval, Host, Log, PATIENCE, Start, TestClient, guest, host_binary, params};
use crate::http_limits::HttpHost;

/// An argument value that must appear nowhere in the trail.
const SECRET: &str = "s3cret-argument-value";

/// The records in `path`, one per line; every line must be a JSON object.
pub(crate) fn records(path: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    assert!(text.is_empty() || text.ends_with('\n'), "a torn last line: {text}");
    text.lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|_| panic!("not JSON: {line}")))
        .collect()
}

/// The `call` records among `all`.
fn calls(all: &[Value]) -> Vec<&Value> {
    all.iter().filter(|record| record["event"] == "call").collect()
}

/// The one call record of `tool` that ended as `outcome`.
fn the_call<'a>(all: &'a [Value], tool: &str, outcome: &str) -> &'a Value {
    let found: Vec<&Value> =
        calls(all).into_iter().filter(|r| r["tool"] == tool && r["outcome"] == outcome).collect();
    assert_eq!(found.len(), 1, "one `{tool}` call that ended {outcome}: {all:#?}");
    found[0]
}

fn sha256(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// Asserts what every record of a run holds: a time in RFC 3339 UTC, a
/// `start` first and a `stop` last, and no secret anywhere in the file.
fn assert_well_formed(path: &Path, all: &[Value], secrets: &[&str]) {
    let text = std::fs::read_to_string(path).unwrap();
    for secret in secrets {
        assert!(!text.contains(secret), "{secret:?} is in the audit log:\n{text}");
    }
    for record in all {
        let time = record["time"].as_str().unwrap_or_default();
        assert!(time.len() == 24 && time.ends_with('Z') && time.as_bytes()[10] == b'T', "{record}");
    }
    assert_eq!(all.first().map(|r| &r["event"]), Some(&json!("start")), "{all:#?}");
    assert_eq!(all.last().map(|r| &r["event"]), Some(&json!("stop")), "{all:#?}");
    assert_eq!(all.last().unwrap()["status"], "ok");
    use std::os::unix::fs::PermissionsExt as _;
    assert_eq!(std::fs::metadata(path).unwrap().permissions().mode() & 0o777, 0o600);
}

/// Sends a `tools/call` of `tool` and cancels it once the host has started it.
async fn cancel_once_started(client: &RunningService<RoleClient, TestClient>, stderr: &Log, tool: &str) {
    let request = ClientRequest::CallToolRequest(Request::new(params(tool, json!({}))));
    let handle =
        client.peer().send_request_with_option(request, PeerRequestOptions::no_options()).await.unwrap();
    stderr
        .wait_for_event("the call to start", |e| e.message() == "call started" && e.str("tool") == Some(tool))
        .await;
    handle.cancel(Some("the test cancels".into())).await.unwrap();
    stderr.wait_for_event("the call to end", |e| e.is_call_ended(tool)).await;
}

/// Calls `tool` and returns whether the host refused it with a JSON-RPC error.
async fn refused(client: &RunningService<RoleClient, TestClient>, tool: &str, arguments: Value) -> bool {
    let called =
        tokio::time::timeout(PATIENCE, client.peer().call_tool(params(tool, arguments))).await.unwrap();
    matches!(called, Err(ServiceError::McpError(_)))
}

#[tokio::test]
async fn every_call_over_stdio_leaves_one_record_saying_how_it_ended_and_nothing_of_its_arguments() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("audit.jsonl");
    let everything = guest("everything").display().to_string();
    let args = ["--component", &everything, "--audit-log", log.to_str().unwrap()];
    let host = Host::start(Start::new("demo", &args)).await;
    let client = &host.client;

    let echoed = host.call("echo", json!({ "text": SECRET })).await.unwrap();
    assert_eq!(echoed.is_error, Some(false));
    assert_eq!(host.call("test_error_handling", json!({})).await.unwrap().is_error, Some(true));
    cancel_once_started(client, &host.stderr, "wait_for_cancel").await;
    assert!(refused(client, "no_such_tool", json!({ "text": SECRET })).await);
    assert!(refused(client, "echo", json!({ "text": 5 })).await);
    host.test_client.answer_approvals(Approval::Deny);
    let declined = host.call("delete_records", json!({ "table": SECRET })).await.unwrap();
    assert_eq!(declined.is_error, Some(true));
    host.test_client.answer_approvals(Approval::Approve);
    let approved = host.call("delete_records", json!({ "table": "users" })).await.unwrap();
    assert_eq!(approved.is_error, Some(false));

    let (mut child, stderr) = host.disconnect().await;
    let status = tokio::time::timeout(PATIENCE, child.wait()).await.unwrap().unwrap();
    assert!(status.success(), "{}", stderr.dump());

    let all = records(&log);
    assert_well_formed(&log, &all, &[SECRET]);
    let start = &all[0];
    assert_eq!(start["transport"], "stdio");
    assert_eq!(start["listen"], Value::Null);
    let demo = std::fs::read(guest("demo")).unwrap();
    assert_eq!(start["components"][0]["sha256"], sha256(&demo), "{start}");
    assert_eq!(start["components"][0]["source"], guest("demo").display().to_string());
    // Exactly the seven calls, then the end of input, then the stop.
    assert_eq!(calls(&all).len(), 7, "{all:#?}");
    let events: Vec<&str> = all.iter().map(|r| r["event"].as_str().unwrap()).collect();
    assert_eq!(events[events.len() - 2..], ["drain", "stop"], "{events:?}");
    assert_eq!(all[all.len() - 2]["reason"], "eof");

    let ok = the_call(&all, "echo", "ok");
    let canonical = format!(r#"{{"text":"{SECRET}"}}"#);
    assert_eq!(ok["arguments_sha256"], sha256(canonical.as_bytes()));
    assert_eq!(ok["approval"], json!({ "verdict": "not-required", "by": null }));
    assert!(ok["duration_ms"].as_f64().is_some_and(|ms| ms >= 0.0), "{ok}");
    the_call(&all, "test_error_handling", "tool-error");
    let cancelled = the_call(&all, "wait_for_cancel", "stopped");
    assert_eq!(cancelled["reason"], "client-cancelled");
    let unknown = the_call(&all, "no_such_tool", "refused");
    assert_eq!(unknown["reason"], "unknown-tool");
    assert_eq!(unknown["approval"], Value::Null);
    assert_eq!(unknown["arguments_sha256"], sha256(canonical.as_bytes()));
    assert_eq!(the_call(&all, "echo", "refused")["reason"], "invalid-arguments");
    let declined = the_call(&all, "delete_records", "declined");
    assert_eq!(declined["reason"], "user-declined");
    assert_eq!(declined["approval"], json!({ "verdict": "declined", "by": null }));
    let approved = the_call(&all, "delete_records", "ok");
    assert_eq!(approved["approval"], json!({ "verdict": "approved", "by": null }));
    // Over stdio nobody is authenticated, and there is no HTTP session.
    let mut ids = Vec::new();
    for call in calls(&all) {
        assert_eq!(
            (&call["principal"], &call["client_id"], &call["session"]),
            (&Value::Null, &Value::Null, &Value::Null)
        );
        ids.push(call["request"].as_i64().expect("a numeric request id"));
    }
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), 7, "each call its own request id: {ids:?}");
}

#[tokio::test]
async fn over_http_each_record_names_the_principal_and_the_token_is_nowhere() {
    let key = Key::new("k1");
    let issuer = Issuer::start(&[&key]).await;
    let token = key.sign(&issuer.claims());
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("audit.jsonl");
    let everything = guest("everything").display().to_string();
    let mut host = HttpHost::start(&[
        "--component",
        &everything,
        "--auth-issuer",
        &issuer.url,
        "--auth-resource",
        RESOURCE,
        "--audit-log",
        log.to_str().unwrap(),
    ])
    .await;
    // reqwest (under rmcp's HTTP client) takes the TLS provider the host uses.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let config = StreamableHttpClientTransportConfig::with_uri(format!("http://{}/mcp", host.addr))
        .auth_header(token.clone());
    let test_client = TestClient::default();
    test_client.answer_approvals(Approval::Decline);
    let client = test_client.serve(StreamableHttpClientTransport::from_config(config)).await.unwrap();

    let echoed = client.peer().call_tool(params("echo", json!({ "text": SECRET }))).await.unwrap();
    assert_eq!(echoed.is_error, Some(false));
    let failed = client.peer().call_tool(params("test_error_handling", json!({}))).await.unwrap();
    assert_eq!(failed.is_error, Some(true));
    assert!(refused(&client, "no_such_tool", json!({})).await);
    let declined =
        client.peer().call_tool(params("delete_records", json!({ "table": SECRET }))).await.unwrap();
    assert_eq!(declined.is_error, Some(true));
    cancel_once_started(&client, &host.stderr, "wait_for_cancel").await;

    // The trail's own counters, beside the calls'.
    let metrics = get(&host, "/metrics").await.body;
    assert!(metrics.contains("mcp_wasm_host_audit_write_errors_total 0"), "{metrics}");
    let written = metrics.lines().find_map(|line| line.strip_prefix("mcp_wasm_host_audit_records_total "));
    assert!(written.and_then(|n| n.parse::<u64>().ok()).is_some_and(|n| n >= 1), "{metrics}");
    terminate(&host);
    assert_eq!(exit_code(&mut host).await, Some(0), "{}", host.stderr.dump());
    drop(client);

    let all = records(&log);
    // Neither the token nor any part of it (its header is the same for every JWT).
    let signature = token.rsplit('.').next().unwrap();
    assert_well_formed(&log, &all, &[SECRET, &token, signature, "eyJ"]);
    assert_eq!(all[0]["transport"], "http");
    assert_eq!(all[0]["listen"], "127.0.0.1:0");
    assert_eq!(all[0]["auth_issuer"], issuer.url);
    assert_eq!(calls(&all).len(), 5, "{all:#?}");
    let principal = json!({ "issuer": issuer.url, "subject": "alice" });
    let session = calls(&all)[0]["session"].clone();
    assert!(session.as_str().is_some_and(|s| s.len() == 16), "a short digest of the session: {session}");
    for call in calls(&all) {
        assert_eq!(call["principal"], principal, "{call}");
        assert_eq!(call["client_id"], "test-client", "{call}");
        assert_eq!(call["session"], session, "one session: {call}");
    }
    the_call(&all, "echo", "ok");
    the_call(&all, "test_error_handling", "tool-error");
    assert_eq!(the_call(&all, "no_such_tool", "refused")["reason"], "unknown-tool");
    assert_eq!(the_call(&all, "wait_for_cancel", "stopped")["reason"], "client-cancelled");
    // Who declined: the principal whose session the question went to.
    let declined = the_call(&all, "delete_records", "declined");
    assert_eq!(declined["approval"], json!({ "verdict": "declined", "by": principal }));
    let drains: Vec<&Value> = all.iter().filter(|r| r["event"] == "drain").collect();
    assert_eq!(drains.len(), 1, "{all:#?}");
    assert_eq!(drains[0]["reason"], "signal");
}

/// Stops the host (its stdin closes) and returns its audit records.
async fn records_after(host: Host, log: &Path) -> Vec<Value> {
    let (mut child, stderr) = host.disconnect().await;
    let status = tokio::time::timeout(PATIENCE, child.wait()).await.unwrap().unwrap();
    assert!(status.success(), "{}", stderr.dump());
    records(log)
}

#[tokio::test]
async fn a_call_paused_across_requests_or_run_as_a_task_is_one_record_when_it_ends() {
    let dir = tempfile::tempdir().unwrap();
    // 2026-07-28: the approval pauses the call, and a second request resumes it.
    let log = dir.path().join("rounds.jsonl");
    let host = Host::start(Start::new("demo", &["--audit-log", log.to_str().unwrap()]).discover()).await;
    // rmcp's client drives the rounds itself, answering through its handler.
    let call = || host.client.call_tool(params("delete_records", json!({ "table": "users" })));
    let approved = call().await.unwrap();
    assert_eq!(approved.is_error, Some(false));
    host.test_client.answer_approvals(Approval::Deny);
    let declined = call().await.unwrap();
    assert_eq!(declined.is_error, Some(true));
    let all = records_after(host, &log).await;
    assert_eq!(calls(&all).len(), 2, "{all:#?}");
    assert_eq!(the_call(&all, "delete_records", "ok")["approval"]["verdict"], "approved");
    assert_eq!(the_call(&all, "delete_records", "declined")["approval"]["verdict"], "declined");

    // The tasks extension: a quick call answers at once, a longer one with
    // a task that ends later; one record each.
    let log = dir.path().join("task.jsonl");
    let capabilities = ClientCapabilities::builder().enable_elicitation().enable_tasks().build();
    let start = Start::new("demo", &["--audit-log", log.to_str().unwrap()])
        .client(TestClient::declaring(capabilities));
    let host = Host::start(start).await;
    let quick = host.client.call_tool_once(params("echo", json!({ "text": SECRET }))).await.unwrap();
    assert!(matches!(quick, CallToolResponse::Complete(_)), "{quick:?}");
    let longer = params("countdown", json!({ "steps": 3, "step_ms": 100, "quiet": true }));
    let CallToolResponse::Task(created) = host.client.call_tool_once(longer).await.unwrap() else {
        panic!("expected a task")
    };
    let id = created.task.task_id;
    let done = async {
        while !matches!(
            host.client.peer().get_task(GetTaskParams::new(id.clone())).await.unwrap().task.payload,
            TaskPayload::Completed { .. }
        ) {
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        }
    };
    tokio::time::timeout(PATIENCE, done).await.expect("the task completed");
    let all = records_after(host, &log).await;
    assert_eq!(calls(&all).len(), 2, "{all:#?}");
    the_call(&all, "echo", "ok");
    the_call(&all, "countdown", "ok");
    assert!(!std::fs::read_to_string(&log).unwrap().contains(SECRET));
}

#[tokio::test]
async fn each_reload_under_watch_is_recorded_with_both_versions_and_its_result() {
    let dir = tempfile::tempdir().unwrap();
    let (log, tool) = (dir.path().join("audit.jsonl"), dir.path().join("tool.wasm"));
    std::fs::copy(guest("demo"), &tool).unwrap();
    let (tool_arg, log_arg) = (tool.display().to_string(), log.display().to_string());
    let args = ["--component", &tool_arg, "--audit-log", &log_arg, "--watch", "--watch-interval", "20ms"];
    let host = Host::start(Start { args: args.map(String::from).to_vec(), ..Start::new("demo", &[]) }).await;
    // A change made before the watcher noted the file's version would be its first.
    host.stderr
        .wait_for_event("the watcher", |e| e.message() == "watching components for new versions")
        .await;
    let (demo, everything) =
        (std::fs::read(guest("demo")).unwrap(), std::fs::read(guest("everything")).unwrap());
    crate::watch::replace(&tool, &everything);
    host.stderr.wait_for_event("the reload", |e| e.message() == "component reloaded").await;
    crate::watch::replace(&tool, b"not a component");
    host.stderr.wait_for_event("the refusal", |e| e.message().starts_with("reload refused")).await;
    let all = records_after(host, &log).await;
    assert_well_formed(&log, &all, &[]);

    let reloads: Vec<&Value> = all.iter().filter(|r| r["event"] == "reload").collect();
    assert_eq!(reloads.len(), 2, "{all:#?}");
    assert_eq!(reloads[0]["component"], tool_arg);
    assert_eq!(
        (&reloads[0]["old_sha256"], &reloads[0]["new_sha256"], &reloads[0]["result"]),
        (&json!(sha256(&demo)), &json!(sha256(&everything)), &json!("accepted"))
    );
    // Refused: the version still served is the one it came from.
    assert_eq!(
        (&reloads[1]["old_sha256"], &reloads[1]["new_sha256"], &reloads[1]["result"]),
        (&json!(sha256(&everything)), &json!(sha256(b"not a component")), &json!("refused"))
    );
}

#[tokio::test]
async fn a_renamed_audit_log_is_opened_again_and_no_record_is_lost_or_doubled() {
    let dir = tempfile::tempdir().unwrap();
    // Relative to the config file, as `state_key_file` is.
    let config = dir.path().join("tools.toml");
    std::fs::write(&config, "[server]\naudit_log = \"audit.jsonl\"\n").unwrap();
    let (log, rotated) = (dir.path().join("audit.jsonl"), dir.path().join("audit.jsonl.1"));
    let host = Host::start(Start::new("demo", &["--config", config.to_str().unwrap()])).await;
    let mut made = 0;
    for _ in 0..3 {
        host.call("echo", json!({ "text": "before" })).await.unwrap();
        made += 1;
    }
    std::fs::rename(&log, &rotated).unwrap();
    // The writer looks for a rotation once a second: call until a record
    // lands in a new file at the old path.
    let deadline = tokio::time::Instant::now() + PATIENCE;
    while !calls(&records(&log)).iter().any(|r| r["tool"] == "echo") {
        assert!(tokio::time::Instant::now() < deadline, "no new file at {}", log.display());
        host.call("echo", json!({ "text": "after" })).await.unwrap();
        made += 1;
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    host.call("echo", json!({ "text": "last" })).await.unwrap();
    made += 1;
    let (mut child, stderr) = host.disconnect().await;
    assert!(
        tokio::time::timeout(PATIENCE, child.wait()).await.unwrap().unwrap().success(),
        "{}",
        stderr.dump()
    );

    let (old, new) = (records(&rotated), records(&log));
    assert_eq!(old[0]["event"], "start");
    assert_eq!(new.last().unwrap()["event"], "stop");
    assert!(calls(&old).len() >= 3, "the calls before the rename: {old:#?}");
    let mut ids: Vec<i64> =
        calls(&old).iter().chain(calls(&new).iter()).map(|r| r["request"].as_i64().unwrap()).collect();
    assert_eq!(ids.len(), made, "every call once: {old:#?} {new:#?}");
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), made, "no call twice");
    use std::os::unix::fs::PermissionsExt as _;
    assert_eq!(std::fs::metadata(&log).unwrap().permissions().mode() & 0o777, 0o600);
}

#[tokio::test]
async fn an_audit_log_that_cannot_be_opened_stops_the_host_at_start() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("no-such-dir").join("audit.jsonl");
    for (path, says) in
        [(missing.as_path(), "cannot open --audit-log"), (dir.path(), "cannot open --audit-log")]
    {
        let output = tokio::process::Command::new(host_binary())
            .arg("--component")
            .arg(guest("demo"))
            .arg("--audit-log")
            .arg(path)
            .stdin(std::process::Stdio::null())
            .output()
            .await
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(!output.status.success() && stderr.contains(says), "{stderr}");
    }
}
