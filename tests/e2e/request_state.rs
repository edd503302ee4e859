//! `--state-key-file` on protocol 2026-07-28: a paused call's state travels
//! sealed in its `requestState`, so the follow-up can land on another
//! replica (here: another host process with the same key file). That
//! replica runs the call again and answers its questions from the state;
//! the one that asked stopped the call and cleaned up. A state never
//! continues anything but its own call: another tool, other arguments, a
//! second use, a late one or one sealed with another key is refused.

use std::path::{Path, PathBuf};

use rmcp::model::{CallToolResponse, InputRequest, InputResponses};
use serde_json::json;

use crate::harness::{Event, Host, Start, approval_answer, files_in, params, text_of};

/// A key file in `dir` holding `secrets`, one per line.
pub(crate) fn key_file(dir: &Path, name: &str, secrets: &[&str]) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, secrets.join("\n")).unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
    }
    path
}

pub(crate) const KEY: &str = "first-test-state-key-of-forty-bytes-long";
const OTHER_KEY: &str = "other-test-state-key-of-forty-bytes-long";

/// A 2026-07-28 host serving the demo with `key` and `extra` flags.
async fn replica(key: &Path, extra: &[&str]) -> Host {
    let mut args = vec!["--state-key-file", key.to_str().unwrap()];
    args.extend_from_slice(extra);
    Host::start(Start::new("demo", &args).discover()).await
}

/// The one question of a paused result: its key, the request, and the state.
fn paused(response: CallToolResponse) -> (String, InputRequest, String) {
    let CallToolResponse::InputRequired(paused) = response else {
        panic!("expected a pause, got {response:?}")
    };
    let (key, request) = paused.input_requests.unwrap().into_iter().next().unwrap();
    (key, request, paused.request_state.unwrap())
}

fn completed(response: CallToolResponse) -> String {
    let CallToolResponse::Complete(result) = response else {
        panic!("expected the result, got {response:?}")
    };
    text_of(&result)
}

/// The "call ended before it started" event of a call of `tool` that paused
/// for approval before it ran.
async fn ended_before_start(host: &Host, tool: &str) -> Event {
    host.stderr
        .wait_for_event("the call's end before it started", |e| {
            e.message() == "call ended before it started" && e.str("tool") == Some(tool)
        })
        .await
}

/// The id a replica gives itself at start.
async fn replica_id(host: &Host) -> String {
    let started = host
        .stderr
        .wait_for_event("the state keys loaded", |e| e.message().starts_with("paused calls travel sealed"))
        .await;
    started.str("replica").expect("a replica id").to_string()
}

/// A host's "continuing a paused call" event.
async fn continued(host: &Host, tool: &str) -> Event {
    host.stderr
        .wait_for_event("the call continued from its state", |e| {
            e.message().starts_with("continuing a paused call") && e.str("tool") == Some(tool)
        })
        .await
}

fn answer(key: &str, text: &str) -> InputResponses {
    InputResponses::from([(key.to_string(), json!({ "action": "accept", "content": { "answer": text } }))])
}

#[tokio::test]
async fn an_approval_asked_on_one_replica_is_answered_on_another() {
    let dir = tempfile::tempdir().unwrap();
    let key = key_file(dir.path(), "state.key", &[KEY]);
    let (asking, answering) = (replica(&key, &[]).await, replica(&key, &[]).await);
    let call = || params("delete_records", json!({ "table": "users" }));

    let (question, _, state) = paused(asking.client.call_tool_once(call()).await.unwrap());
    // Nothing stays parked on the replica that asked.
    let ended = ended_before_start(&asking, "delete_records").await;
    assert_eq!(ended.str("outcome"), Some("handed-off"), "{ended}");
    assert_eq!(asking.wait_until_idle().await["leases"], 0);

    let follow_up = call().with_input_responses(approval_answer(&question, true)).with_request_state(state);
    let result = answering.client.call_tool_once(follow_up).await.unwrap();
    assert_eq!(completed(result), "deleted every record of users");
    let resumed = continued(&answering, "delete_records").await;
    let (a, b) = (replica_id(&asking).await, replica_id(&answering).await);
    assert_ne!(a, b);
    assert_eq!(
        resumed.str("paused_by"),
        Some(a.as_str()),
        "the state names the replica that paused: {resumed}"
    );
    // The tool ran once, on the replica that got the answer.
    assert_eq!(asking.stderr.count_for_tool("call started", "delete_records"), 0);
    assert_eq!(answering.stderr.count_for_tool("call started", "delete_records"), 1);
}

#[tokio::test]
async fn a_mid_call_question_re_runs_the_call_where_the_answer_lands_and_the_first_run_cleans_up() {
    let dir = tempfile::tempdir().unwrap();
    let key = key_file(dir.path(), "state.key", &[KEY]);
    let grant = tempfile::tempdir().unwrap();
    let dir_flag = ["--dir", grant.path().to_str().unwrap()];
    let (asking, answering) = (replica(&key, &dir_flag).await, replica(&key, &dir_flag).await);
    let call = || params("prune", json!({ "count": 5 }));

    let (question, _, state) = paused(asking.client.call_tool_once(call()).await.unwrap());
    // The first run was stopped at its question and released its lock.
    let ended = asking.call_ended("prune").await;
    assert_eq!(
        (ended.str("outcome"), ended.str("stop_reason"), ended.str("cleanup")),
        (Some("handed-off"), Some("no-answer"), Some("done")),
        "{ended}"
    );
    assert!(files_in(grant.path()).is_empty(), "the first run left {:?}", files_in(grant.path()));

    let follow_up = call().with_input_responses(approval_answer(&question, true)).with_request_state(state);
    let result = answering.client.call_tool_once(follow_up).await.unwrap();
    assert_eq!(completed(result), "pruned 5 snapshots");
    // Run again from the start, its question answered from the state.
    assert_eq!(answering.stderr.count_for_tool("call started", "prune"), 1);
    assert_eq!(answering.status().await["paused_calls"], 0);
    answering.wait_until_idle().await;
    assert!(files_in(grant.path()).is_empty());
}

#[tokio::test]
async fn answers_accumulate_in_the_state_across_replicas_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let key = key_file(dir.path(), "state.key", &[KEY]);
    let (a, b) = (replica(&key, &[]).await, replica(&key, &[]).await);
    let call = || params("survey", json!({ "questions": 3 }));

    // Question 1 on A, answered on B; question 2 on B, answered on A; ...
    let (q1, _, state) = paused(a.client.call_tool_once(call()).await.unwrap());
    let next = call().with_input_responses(answer(&q1, "red")).with_request_state(state);
    let (q2, request, state) = paused(b.client.call_tool_once(next).await.unwrap());
    assert!(serde_json::to_string(&request).unwrap().contains("Question 2 of 3"), "{request:?}");
    let next = call().with_input_responses(answer(&q2, "green")).with_request_state(state);
    let (q3, _, state) = paused(a.client.call_tool_once(next).await.unwrap());
    let last = call().with_input_responses(answer(&q3, "blue")).with_request_state(state);
    assert_eq!(completed(b.client.call_tool_once(last).await.unwrap()), "red\ngreen\nblue");
}

#[tokio::test]
async fn a_state_continues_only_its_own_call_once_in_time_and_under_a_held_key() {
    let dir = tempfile::tempdir().unwrap();
    let key = key_file(dir.path(), "state.key", &[KEY]);
    let foreign_key = key_file(dir.path(), "foreign.key", &[OTHER_KEY]);
    // The rotated ring seals with the new key and still opens the old one's states.
    let rotated_key = key_file(dir.path(), "rotated.key", &[OTHER_KEY, KEY]);
    let host = replica(&key, &[]).await;
    let call = |table: &str| params("delete_records", json!({ "table": table }));
    let pause = |table: &'static str| {
        let host = &host;
        async move { paused(host.client.call_tool_once(call(table)).await.unwrap()) }
    };
    let refusal = |host: &Host, request| {
        let client = host.client.clone();
        async move { client.call_tool_once(request).await.unwrap_err().to_string() }
    };

    // An approval for `users` does not approve `orders`, nor another tool.
    let (question, _, state) = pause("users").await;
    let yes = approval_answer(&question, true);
    let other_args = call("orders").with_input_responses(yes.clone()).with_request_state(state.clone());
    assert!(refusal(&host, other_args).await.contains("failed verification"));
    let other_tool = params("survey", json!({ "questions": 1 }))
        .with_input_responses(yes.clone())
        .with_request_state(state.clone());
    assert!(refusal(&host, other_tool).await.contains("failed verification"));
    // Altered: one character of the payload changed.
    let mut altered: Vec<char> = state.chars().collect();
    let at = altered.len() / 2;
    altered[at] = if altered[at] == 'A' { 'B' } else { 'A' };
    let altered = call("users")
        .with_input_responses(yes.clone())
        .with_request_state(altered.iter().collect::<String>());
    let err = refusal(&host, altered).await;
    assert!(err.contains("requestState"), "{err}");
    // Another deployment's key.
    let foreign = replica(&foreign_key, &[]).await;
    let elsewhere = call("users").with_input_responses(yes.clone()).with_request_state(state.clone());
    assert!(refusal(&foreign, elsewhere).await.contains("key this host does not hold"));
    // The right call goes through, once.
    let right = call("users").with_input_responses(yes.clone()).with_request_state(state.clone());
    assert_eq!(
        completed(host.client.call_tool_once(right.clone()).await.unwrap()),
        "deleted every record of users"
    );
    assert!(refusal(&host, right).await.contains("used already"));
    // After a rotation, a replica with both keys continues it.
    let rotated = replica(&rotated_key, &[]).await;
    let (question, _, state) = pause("audit").await;
    let follow_up =
        call("audit").with_input_responses(approval_answer(&question, true)).with_request_state(state);
    assert_eq!(
        completed(rotated.client.call_tool_once(follow_up).await.unwrap()),
        "deleted every record of audit"
    );

    // A declined approval ends the call where the answer lands.
    let (question, _, state) = pause("logs").await;
    let no = call("logs").with_input_responses(approval_answer(&question, false)).with_request_state(state);
    let text = completed(rotated.client.call_tool_once(no).await.unwrap());
    assert!(text.contains("the user declined"), "{text}");
}

#[tokio::test]
async fn a_late_answer_is_refused_as_expired() {
    let dir = tempfile::tempdir().unwrap();
    let key = key_file(dir.path(), "state.key", &[KEY]);
    let host = replica(&key, &["--approval-timeout", "200ms"]).await;
    let call = || params("delete_records", json!({ "table": "users" }));
    let (question, _, state) = paused(host.client.call_tool_once(call()).await.unwrap());
    ended_before_start(&host, "delete_records").await;
    // The lease is the state's lifetime; wait it out on the host's own clock.
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    let late = call().with_input_responses(approval_answer(&question, true)).with_request_state(state);
    let err = host.client.call_tool_once(late).await.unwrap_err().to_string();
    assert!(err.contains("expired"), "{err}");
}

#[tokio::test]
async fn a_short_or_missing_key_file_stops_the_host_with_the_reason() {
    let dir = tempfile::tempdir().unwrap();
    let short = key_file(dir.path(), "short.key", &["too-short"]);
    let output = std::process::Command::new(crate::harness::host_binary())
        .args(["--component", crate::harness::guest("demo").to_str().unwrap()])
        .args(["--state-key-file", short.to_str().unwrap()])
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("at least 32 bytes"), "{stderr}");
}
