//! Approval-required tools, over every way a client can answer: an
//! elicitation (sessions up to 2025-11-25), a paused result resumed by a
//! later call (2026-07-28), and a task's `input_required` status (the tasks
//! extension). Whatever the answer — yes, no, none in time, or the call
//! cancelled meanwhile — the host ends with nothing paused, no question left
//! open and no store alive.

use std::time::{Duration, Instant};

use rmcp::model::{
    CallToolResponse, CancelTaskParams, ClientCapabilities, ElicitRequestParams, GetTaskParams, InputRequest,
    TaskPayload, TaskStatus, UpdateTaskParams,
};
use serde_json::{Value, json};

use crate::harness::{
    Approval, Event, Host, PATIENCE, Start, TestClient, approval_answer, files_in, params, task_id, text_of,
    wait_for_lock,
};

#[tokio::test]
async fn an_approved_call_runs_and_the_question_summarises_its_arguments() {
    let host = Host::start(Start::new("demo", &[])).await;
    // tools/list says which tools ask first.
    let tools = host.client.peer().list_all_tools().await.unwrap();
    let asks = |name: &str| {
        let tool = tools.iter().find(|tool| tool.name == name).unwrap();
        tool.meta.as_ref().and_then(|meta| meta.0.get("mcp-wasm-host/needsApproval")).is_some()
    };
    assert!(asks("delete_records") && !asks("echo") && !asks("prune") && !asks("spin"));
    let long = "x".repeat(5_000);
    let result = host.call("delete_records", json!({ "table": long })).await.unwrap();
    assert_eq!(result.is_error, Some(false), "{result:?}");
    assert!(text_of(&result).starts_with("deleted every record of xxx"));
    let asked =
        host.test_client.events.wait_for("the approval request", |e| e.starts_with("elicit 1:")).await;
    assert!(asked.contains("Allow the tool `delete_records` to run?"), "{asked}");
    // The 5 000-character argument is cut, not pasted into the prompt.
    assert!(asked.contains("table: \"xxx") && asked.contains('…') && asked.len() < 300, "{asked}");
    host.wait_until_idle().await;
}

#[tokio::test]
async fn a_declined_call_never_runs_and_says_so() {
    for answer in [Approval::Decline, Approval::Deny] {
        let host = Host::start(Start::new("demo", &[])).await;
        host.test_client.answer_approvals(answer);
        let result = host.call("delete_records", json!({ "table": "users" })).await.unwrap();
        assert_eq!(result.is_error, Some(true));
        let text = text_of(&result);
        assert!(text.contains("did not run") && text.contains("the user declined"), "{text}");
        let ended = host
            .stderr
            .wait_for_event("the call to end", |e| e.message() == "call ended before it started")
            .await;
        assert_eq!(ended.str("outcome"), Some("declined"), "{ended}");
        // Declined before it ran: no store was ever made for it.
        assert!(!host.stderr.events().iter().any(|e| e.message() == "call started"), "the tool ran");
        host.wait_until_idle().await;
    }
}

#[tokio::test]
async fn no_answer_in_time_is_a_decline_and_the_question_is_withdrawn() {
    let host = Host::start(Start::new("demo", &["--approval-timeout", "200ms"])).await;
    host.test_client.hold_from(1);
    let result = host.call("delete_records", json!({ "table": "users" })).await.unwrap();
    assert_eq!(result.is_error, Some(true));
    assert!(text_of(&result).contains("no answer within --approval-timeout"), "{}", text_of(&result));
    host.test_client.events.wait_for("the question to be withdrawn", |e| e == "withdrawn 1").await;
    let idle = host.wait_until_idle().await;
    assert_eq!(idle["paused_calls"], 0);
}

#[tokio::test]
async fn cancelling_a_call_that_waits_for_approval_withdraws_the_question() {
    let host = Host::start(Start::new("demo", &[])).await;
    host.test_client.hold_from(1);
    let call = host.start_call("delete_records", json!({ "table": "users" })).await;
    let id = call.id.clone();
    host.test_client.events.wait_for("the approval request", |e| e.starts_with("elicit 1:")).await;
    let status = host.status().await;
    assert_eq!(
        (status["paused_calls"].as_u64(), status["open_client_requests"].as_u64()),
        (Some(1), Some(1))
    );

    call.cancel(Some("changed my mind".into())).await.unwrap();
    host.test_client.events.wait_for("the question to be withdrawn", |e| e == "withdrawn 1").await;
    let ended = host
        .stderr
        .wait_for_event("the call to end", |e| e.message() == "call ended before it started")
        .await;
    assert_eq!(ended.str("stop_reason"), Some("client-cancelled"), "{ended}");
    host.wait_until_idle().await;
    assert_eq!(host.responses_to(&id), 0, "a cancelled call got a response");
}

#[tokio::test]
async fn a_client_that_cannot_ask_fails_closed_and_says_how_to_approve_up_front() {
    let client = TestClient::declaring(ClientCapabilities::default());
    let host = Host::start(Start::new("demo", &[]).client(client)).await;
    let result = host.call("delete_records", json!({ "table": "users" })).await.unwrap();
    assert_eq!(result.is_error, Some(true));
    let text = text_of(&result);
    assert!(
        text.contains("cannot ask the user for approval") && text.contains("--no-approval delete_records"),
        "{text}"
    );
    // The mid-call request fails closed the same way.
    let result = host.call("prune", json!({})).await.unwrap();
    assert!(text_of(&result).contains("nothing pruned: this client cannot ask"), "{}", text_of(&result));
    host.wait_until_idle().await;
}

#[tokio::test]
async fn the_user_decides_which_tools_need_approval() {
    // Waived up front: runs without asking, and mid-call requests are granted.
    let host =
        Host::start(Start::new("demo", &["--no-approval", "delete_records", "--no-approval", "prune"])).await;
    let result = host.call("delete_records", json!({ "table": "users" })).await.unwrap();
    assert_eq!(result.is_error, Some(false), "{result:?}");
    assert_eq!(text_of(&host.call("prune", json!({ "count": 2 })).await.unwrap()), "pruned 2 snapshots");
    assert!(host.test_client.events.all().is_empty(), "nobody should have been asked");

    // Required for a harmless tool: now it asks; a tool rule beats `all`.
    let host =
        Host::start(Start::new("demo", &["--require-approval", "all", "--no-approval", "countdown"])).await;
    host.test_client.answer_approvals(Approval::Decline);
    assert_eq!(host.call("echo", json!({ "text": "hi" })).await.unwrap().is_error, Some(true));
    let counted = host.call("countdown", json!({ "steps": 1, "step_ms": 0, "quiet": true })).await.unwrap();
    assert_eq!(counted.is_error, Some(false), "{counted:?}");

    // A rule naming a tool nobody offers is a clear error at start.
    let component = crate::harness::guest("demo");
    let out = crate::harness::run_with_stdin_open(
        std::process::Command::new(crate::harness::host_binary()).args([
            "--component",
            component.to_str().unwrap(),
            "--require-approval",
            "delete_everything",
        ]),
    );
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("--require-approval delete_everything: no loaded component offers"), "{stderr}");
}

#[tokio::test]
async fn a_mid_call_approval_holds_nothing_after_a_no() {
    let dir = tempfile::tempdir().unwrap();
    let grant = dir.path().to_str().unwrap();
    let host = Host::start(Start::new("demo", &["--dir", grant])).await;
    let result = host.call("prune", json!({ "count": 4 })).await.unwrap();
    assert_eq!(text_of(&result), "pruned 4 snapshots");
    let asked =
        host.test_client.events.wait_for("the approval request", |e| e.starts_with("elicit 1:")).await;
    assert!(asked.contains("The tool `prune` asks: Delete 4 old snapshots for good?"), "{asked}");

    host.test_client.answer_approvals(Approval::Decline);
    let result = host.call("prune", json!({})).await.unwrap();
    assert_eq!(result.is_error, Some(true));
    assert!(text_of(&result).contains("nothing pruned: the user declined"), "{}", text_of(&result));
    assert!(files_in(dir.path()).is_empty(), "the lock outlived the call: {:?}", files_in(dir.path()));

    // Cancelled while the guest waits in `request-approval`: withdrawn, stopped, cleaned up.
    host.test_client.hold_from(3);
    let call = host.start_call("prune", json!({})).await;
    wait_for_lock(dir.path()).await;
    host.test_client.events.wait_for("the third question", |e| e.starts_with("elicit 3:")).await;
    call.cancel(None).await.unwrap();
    host.test_client.events.wait_for("the question to be withdrawn", |e| e == "withdrawn 3").await;
    let ended = host
        .stderr
        .wait_for_event("the cancelled call to end", |e| {
            e.is_call_ended("prune") && e.str("stop_reason") == Some("client-cancelled")
        })
        .await;
    assert_eq!(ended.str("cleanup"), Some("done"), "{ended}");
    host.wait_until_idle().await;
    assert!(files_in(dir.path()).is_empty(), "cleanup left {:?}", files_in(dir.path()));
}

#[tokio::test]
async fn too_many_calls_waiting_for_approval_are_declined_at_once() {
    let host = Host::start(Start::new("demo", &["--max-paused", "1"])).await;
    host.test_client.hold_from(1);
    let first = host.start_call("delete_records", json!({ "table": "a" })).await;
    host.test_client.events.wait_for("the first approval request", |e| e.starts_with("elicit 1:")).await;
    let second = host.call("delete_records", json!({ "table": "b" })).await.unwrap();
    assert!(text_of(&second).contains("--max-paused"), "{}", text_of(&second));
    first.cancel(None).await.unwrap();
    host.wait_until_idle().await;
}

// ---- Protocol 2026-07-28: the call pauses, and a later call resumes it ----

/// The first input request of a paused result: its key, and the message it shows.
fn only_question(response: &CallToolResponse) -> (String, String, String) {
    let CallToolResponse::InputRequired(paused) = response else {
        panic!("expected a pause, got {response:?}")
    };
    let (key, request) = paused.input_requests.as_ref().unwrap().iter().next().unwrap();
    let InputRequest::Elicitation(elicit) = request else {
        panic!("expected an elicitation, got {request:?}")
    };
    let ElicitRequestParams::FormElicitationParams { message, .. } = &elicit.params else { panic!("a form") };
    (key.clone(), message.clone(), paused.request_state.clone().unwrap())
}

#[tokio::test]
async fn on_2026_07_28_the_pause_comes_back_at_once_and_a_no_ends_it_at_once() {
    let host = Host::start(Start::new("demo", &[]).discover()).await;
    let call = || params("delete_records", json!({ "table": "users" }));

    let asked = Instant::now();
    let paused = host.client.call_tool_once(call()).await.unwrap();
    let pause_took = asked.elapsed();
    let (key, message, state) = only_question(&paused);
    assert!(message.contains("Allow the tool `delete_records` to run?"), "{message}");
    let status = host.status().await;
    assert_eq!((status["paused_calls"].as_u64(), status["leases"].as_u64()), (Some(1), Some(1)));

    let declined = Instant::now();
    let follow_up =
        call().with_input_responses(approval_answer(&key, false)).with_request_state(state.clone());
    let result = host.client.call_tool_once(follow_up).await.unwrap();
    let decline_took = declined.elapsed();
    let CallToolResponse::Complete(result) = result else { panic!("expected the result, got {result:?}") };
    assert!(text_of(&result).contains("the user declined"), "{}", text_of(&result));
    // The timeline the issue asks for: generous bounds, far above what it takes.
    assert!(pause_took < Duration::from_millis(100), "the pause took {pause_took:?}");
    assert!(decline_took < Duration::from_millis(100), "the declined result took {decline_took:?}");

    // The same requestState cannot be used twice.
    let again = call().with_input_responses(approval_answer(&key, true)).with_request_state(state);
    let err = host.client.call_tool_once(again).await.unwrap_err().to_string();
    assert!(err.contains("no paused call has this requestState"), "{err}");
    host.wait_until_idle().await;
}

#[tokio::test]
async fn on_2026_07_28_rmcps_client_answers_and_the_parked_guest_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let host = Host::start(Start::new("demo", &["--dir", dir.path().to_str().unwrap()]).discover()).await;
    // rmcp's client drives the rounds itself, answering through its handler.
    let result = host.client.call_tool(params("delete_records", json!({ "table": "users" }))).await.unwrap();
    assert_eq!(text_of(&result), "deleted every record of users");
    // Mid-call: the guest stays parked in `request-approval` across the two
    // requests; it is resumed, not run again (one "call started" per call).
    let result = host.client.call_tool(params("prune", json!({ "count": 5 }))).await.unwrap();
    assert_eq!(text_of(&result), "pruned 5 snapshots");
    assert_eq!(host.stderr.count_for_tool("call started", "prune"), 1);
    // Plain elicitations travel the same way.
    let result = host.client.call_tool(params("survey", json!({ "questions": 2 }))).await.unwrap();
    assert_eq!(text_of(&result), "answer 3\nanswer 4");
    host.wait_until_idle().await;
    assert!(files_in(dir.path()).is_empty());
}

#[tokio::test]
async fn on_2026_07_28_a_lease_that_runs_out_stops_the_call_and_cleans_up() {
    let dir = tempfile::tempdir().unwrap();
    let grant = dir.path().to_str().unwrap();
    let host =
        Host::start(Start::new("demo", &["--dir", grant, "--approval-timeout", "300ms"]).discover()).await;
    let paused = host.client.call_tool_once(params("prune", json!({}))).await.unwrap();
    let (key, _, state) = only_question(&paused);
    assert_eq!(files_in(dir.path()).len(), 1, "the parked call holds its lock");

    // Nobody comes back: the lease runs out, the call is stopped and cleaned up.
    let ended = host.call_ended("prune").await;
    assert_eq!(
        (ended.str("stop_reason"), ended.str("cleanup")),
        (Some("no-answer"), Some("done")),
        "{ended}"
    );
    host.wait_until_idle().await;
    assert!(files_in(dir.path()).is_empty(), "cleanup left {:?}", files_in(dir.path()));

    // A late answer finds nothing to resume, and says why.
    let late = params("prune", json!({}))
        .with_input_responses(approval_answer(&key, true))
        .with_request_state(state);
    let err = host.client.call_tool_once(late).await.unwrap_err().to_string();
    assert!(err.contains("--approval-timeout"), "{err}");
}

/// One sweeper watches every lease: a call answered in time is taken off
/// the watch (its lease running out later stops nothing), the others run
/// out each on its own, and a call paused after the watch emptied still
/// gets its lease.
#[tokio::test]
async fn on_2026_07_28_every_lease_runs_out_on_its_own_and_an_answer_takes_its_call_off_the_watch() {
    let dir = tempfile::tempdir().unwrap();
    let grant = dir.path().to_str().unwrap();
    let host =
        Host::start(Start::new("demo", &["--dir", grant, "--approval-timeout", "400ms"]).discover()).await;
    let pause = |tool: &'static str, arguments: Value| {
        let client = &host.client;
        async move { only_question(&client.call_tool_once(params(tool, arguments)).await.unwrap()) }
    };
    let (answered_key, _, answered_state) = pause("delete_records", json!({ "table": "users" })).await;
    pause("prune", json!({})).await;
    let answer = params("delete_records", json!({ "table": "users" }))
        .with_input_responses(approval_answer(&answered_key, true))
        .with_request_state(answered_state);
    let result = host.client.call_tool_once(answer).await.unwrap();
    let CallToolResponse::Complete(result) = result else { panic!("expected the result, got {result:?}") };
    assert_eq!(text_of(&result), "deleted every record of users");

    // The unanswered one runs out; then nothing is left to watch.
    let no_answer = |e: &Event| e.is_call_ended("prune") && e.str("stop_reason") == Some("no-answer");
    host.stderr.wait_for_events("the first lease to run out", 1, no_answer).await;
    assert_eq!(host.wait_until_idle().await["leases"], 0);

    // A call paused now is watched again, and runs out like the first.
    pause("prune", json!({})).await;
    host.stderr.wait_for_events("the second lease to run out", 2, no_answer).await;
    assert_eq!(host.wait_until_idle().await["leases"], 0);
    assert!(files_in(dir.path()).is_empty(), "cleanup left {:?}", files_in(dir.path()));
    let stopped: Vec<Event> = host
        .stderr
        .events()
        .into_iter()
        .filter(|e| e.message() == "call ended" && e.str("stop_reason").is_some())
        .collect();
    assert_eq!(stopped.len(), 2, "only the unanswered calls were stopped: {stopped:?}");
}

#[tokio::test]
async fn on_2026_07_28_sampling_travels_in_the_result_too() {
    let capabilities: ClientCapabilities =
        serde_json::from_value(json!({ "elicitation": {}, "sampling": {} })).unwrap();
    let client = TestClient::declaring(capabilities);
    let host = Host::start(Start::new("everything", &[]).client(client).discover()).await;
    let result = host.client.call_tool(params("test_sampling", json!({ "prompt": "hello" }))).await.unwrap();
    assert_eq!(text_of(&result), "LLM response: sampled: hello");
    host.test_client.events.wait_for("the sampling request", |e| e == "sample: hello").await;
    host.wait_until_idle().await;
}

// ---- The tasks extension: questions show as `input_required` ----

fn task_client() -> TestClient {
    TestClient::declaring(ClientCapabilities::builder().enable_elicitation().enable_tasks().build())
}

/// Polls the task until `done` says its state is the one wanted.
async fn poll_task(host: &Host, id: &str, done: impl Fn(&TaskPayload) -> bool) -> TaskPayload {
    let poll = async {
        loop {
            let task = host.client.peer().get_task(GetTaskParams::new(id)).await.unwrap().task;
            if done(&task.payload) {
                return task.payload;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    };
    tokio::time::timeout(PATIENCE, poll).await.expect("the task reached the state in time")
}

fn input_key(payload: &TaskPayload) -> Option<String> {
    match payload {
        TaskPayload::InputRequired { input_requests } => input_requests.keys().next().cloned(),
        _ => None,
    }
}

async fn start_task(host: &Host, tool: &str, arguments: Value) -> String {
    task_id(host.client.call_tool_once(params(tool, arguments)).await.unwrap())
}

#[tokio::test]
async fn a_task_goes_input_required_then_completes_on_an_answer() {
    for (approve, expected) in [(true, "deleted every record of users"), (false, "the user declined")] {
        let host = Host::start(Start::new("demo", &[]).client(task_client())).await;
        let id = start_task(&host, "delete_records", json!({ "table": "users" })).await;
        let waiting = poll_task(&host, &id, |p| input_key(p).is_some()).await;
        assert_eq!(host.status().await["paused_calls"], 1);
        let key = input_key(&waiting).unwrap();
        host.client
            .peer()
            .update_task(UpdateTaskParams::new(id.clone(), approval_answer(&key, approve)))
            .await
            .unwrap();
        let done = poll_task(&host, &id, |p| matches!(p, TaskPayload::Completed { .. })).await;
        let TaskPayload::Completed { result } = done else { unreachable!() };
        let text = result["content"][0]["text"].as_str().unwrap_or_default().to_string();
        assert!(text.contains(expected), "{text}");
        host.wait_until_idle().await;
    }
}

#[tokio::test]
async fn cancelling_a_task_stops_its_guest_the_usual_way() {
    let dir = tempfile::tempdir().unwrap();
    let host =
        Host::start(Start::new("demo", &["--dir", dir.path().to_str().unwrap()]).client(task_client())).await;
    // Waiting for a mid-call approval, holding a lock.
    let id = start_task(&host, "prune", json!({})).await;
    poll_task(&host, &id, |p| input_key(p).is_some()).await;
    assert_eq!(files_in(dir.path()).len(), 1);
    host.client.peer().cancel_task(CancelTaskParams::new(id.clone())).await.unwrap();
    let status = poll_task(&host, &id, |p| matches!(p, TaskPayload::Cancelled)).await;
    assert!(matches!(status, TaskPayload::Cancelled));
    let ended = host.call_ended("prune").await;
    assert_eq!(
        (ended.str("stop_reason"), ended.str("cleanup")),
        (Some("client-cancelled"), Some("done")),
        "{ended}"
    );

    // A spinning guest is stopped too, by force.
    let id = start_task(&host, "spin", json!({})).await;
    wait_for_lock(dir.path()).await;
    host.client.peer().cancel_task(CancelTaskParams::new(id.clone())).await.unwrap();
    poll_task(&host, &id, |p| matches!(p, TaskPayload::Cancelled)).await;
    host.wait_until_idle().await;
    assert!(files_in(dir.path()).is_empty(), "cleanup left {:?}", files_in(dir.path()));
    let task = host.client.peer().get_task(GetTaskParams::new(id)).await.unwrap().task;
    assert_eq!(task.task.status, TaskStatus::Cancelled);
}

#[tokio::test]
async fn a_task_whose_question_goes_unanswered_ends_and_cleans_up() {
    let dir = tempfile::tempdir().unwrap();
    let grant = dir.path().to_str().unwrap();
    let host = Host::start(
        Start::new("demo", &["--dir", grant, "--approval-timeout", "300ms"]).client(task_client()),
    )
    .await;
    let id = start_task(&host, "prune", json!({})).await;
    poll_task(&host, &id, |p| input_key(p).is_some()).await;
    // Nobody answers: the call is stopped like a 2026-07-28 lease that ran
    // out, cleaned up, and the task fails (the tool gave no result of its
    // own) instead of asking forever.
    let done = poll_task(&host, &id, |p| matches!(p, TaskPayload::Failed { .. })).await;
    let TaskPayload::Failed { error } = done else { unreachable!() };
    let text = error["message"].as_str().unwrap_or_default().to_string();
    assert!(text.contains("--approval-timeout"), "{error:?}");
    let ended = host.call_ended("prune").await;
    assert_eq!(
        (ended.str("stop_reason"), ended.str("cleanup")),
        (Some("no-answer"), Some("done")),
        "{ended}"
    );
    host.wait_until_idle().await;
    assert!(files_in(dir.path()).is_empty(), "cleanup left {:?}", files_in(dir.path()));

    // On 2026-07-28, where a call in rounds became the task, the lease
    // bounds the question on the task too: the tool gets no answer (and
    // here keeps the file rather than stop).
    let start = Start::new("everything", &["--approval-timeout", "300ms"]).client(task_client()).discover();
    let host = Host::start(start).await;
    let id = start_task(&host, "confirm_delete", json!({})).await;
    poll_task(&host, &id, |p| input_key(p).is_some()).await;
    let done = poll_task(&host, &id, |p| matches!(p, TaskPayload::Completed { .. })).await;
    let TaskPayload::Completed { result } = done else { unreachable!() };
    assert_eq!(result["content"][0]["text"], "Kept the file", "{result:?}");
    host.wait_until_idle().await;
}

#[tokio::test]
async fn a_quick_call_answers_at_once_and_a_task_fails_only_for_what_the_host_ended() {
    let host = Host::start(Start::new("everything", &[]).client(task_client())).await;
    // A quick call answers in its own response: no task to poll.
    match host.client.call_tool_once(params("greet", json!({ "name": "World" }))).await.unwrap() {
        CallToolResponse::Complete(result) => assert_eq!(text_of(&result), "Hello, World!"),
        other => panic!("expected the result itself, got {other:?}"),
    }
    // The tool's own error is its answer: completed, with isError.
    let id = start_task(&host, "failing_job", json!({})).await;
    let done = poll_task(&host, &id, |p| matches!(p, TaskPayload::Completed { .. })).await;
    let TaskPayload::Completed { result } = done else { unreachable!() };
    assert_eq!(result["isError"], true, "{result:?}");
    // A guest that crashes gave no answer: failed, with a JSON-RPC error.
    let id = start_task(&host, "protocol_error_job", json!({})).await;
    let done = poll_task(&host, &id, |p| matches!(p, TaskPayload::Failed { .. })).await;
    let TaskPayload::Failed { error } = done else { unreachable!() };
    assert_eq!(error["code"], -32603, "{error:?}");
    assert!(error["message"].as_str().unwrap_or_default().contains("crashed"), "{error:?}");
    // A cancel that the tool heeds settles as cancelled, and the ack is
    // the same on a task that has ended.
    let id = start_task(&host, "slow_compute", json!({ "seconds": 60, "label": "cancel me" })).await;
    host.client.peer().cancel_task(CancelTaskParams::new(id.clone())).await.unwrap();
    poll_task(&host, &id, |p| matches!(p, TaskPayload::Cancelled)).await;
    host.client.peer().cancel_task(CancelTaskParams::new(id.clone())).await.unwrap();
    host.wait_until_idle().await;
}

#[tokio::test]
async fn on_2026_07_28_a_question_asked_at_once_is_a_round_and_the_call_then_becomes_a_task() {
    let host = Host::start(Start::new("everything", &[]).client(task_client()).discover()).await;
    // Round 1: the tool asks before it has run a moment: an input_required
    // result of the tools/call itself, no task yet.
    let first = host.client.call_tool_once(params("test_tool_with_task", json!({}))).await.unwrap();
    let CallToolResponse::InputRequired(paused) = first else { panic!("expected a round, got {first:?}") };
    assert!(
        paused.input_requests.as_ref().is_some_and(|asked| asked.contains_key("user_name")),
        "{paused:?}"
    );
    // Round 2: with the answer it works on past the moment: a task.
    let answer = rmcp::model::InputResponses::from([(
        "user_name".to_string(),
        json!({ "action": "accept", "content": { "name": "Ada" } }),
    )]);
    let follow_up = params("test_tool_with_task", json!({}))
        .with_input_responses(answer)
        .with_request_state(paused.request_state.unwrap());
    let CallToolResponse::Task(created) = host.client.call_tool_once(follow_up).await.unwrap() else {
        panic!("expected a task")
    };
    let done = poll_task(&host, &created.task.task_id, |p| matches!(p, TaskPayload::Completed { .. })).await;
    let TaskPayload::Completed { result } = done else { unreachable!() };
    assert!(result["content"][0]["text"].as_str().unwrap_or_default().contains("Ada"), "{result:?}");

    // A question asked once the call is a task shows on the task, and its
    // lease bounds it there too: the answer resumes the call.
    let id = start_task(&host, "confirm_delete", json!({ "filename": "notes.txt" })).await;
    let waiting = poll_task(&host, &id, |p| input_key(p).is_some()).await;
    let key = input_key(&waiting).unwrap();
    let yes = json!({ "action": "accept", "content": { "confirm": true } });
    host.client.peer().update_task(UpdateTaskParams::new(id.clone(), [(key, yes)].into())).await.unwrap();
    let done = poll_task(&host, &id, |p| matches!(p, TaskPayload::Completed { .. })).await;
    let TaskPayload::Completed { result } = done else { unreachable!() };
    assert_eq!(result["content"][0]["text"], "Deleted notes.txt", "{result:?}");
    host.wait_until_idle().await;
}

#[tokio::test]
async fn a_tool_that_runs_only_as_a_task_is_refused_to_a_client_without_tasks() {
    let host = Host::start(Start::new("everything", &[])).await;
    let err = host.client.call_tool_once(params("failing_job", json!({}))).await.unwrap_err();
    let text = format!("{err:?}");
    assert!(text.contains("-32021") || text.contains("MissingRequiredClientCapability"), "{text}");
    assert!(text.contains("io.modelcontextprotocol/tasks"), "{text}");
    // A tool that is never a task answers in its response to a client with tasks.
    let host = Host::start(Start::new("everything", &[]).client(task_client()).discover()).await;
    let greeted = host.client.call_tool_once(params("greet", json!({ "name": "Ada" }))).await.unwrap();
    assert!(matches!(greeted, CallToolResponse::Complete(_)), "{greeted:?}");
}
