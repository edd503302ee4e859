//! Tools that talk to the user: elicitation, progress and logging. A
//! question never outlives its call: cancelling the call withdraws the open
//! question from the client, and nothing is left open afterwards.

#[allow(deprecated)]
use rmcp::model::{LoggingLevel, SetLevelRequestParams};
use rmcp::model::{NumberOrString, ProgressToken, RequestMetaObject};
use serde_json::json;

use crate::harness::{Host, Start, text_of};

#[tokio::test]
async fn cancelling_a_call_withdraws_its_open_question_and_later_questions_still_work() {
    let host = Host::start(Start::new("demo", &[])).await;
    let events = host.test_client.events.clone();
    host.test_client.hold_from(3);

    // One call asks five questions; the client answers two and sits on the third.
    let survey = host.start_call("survey", json!({ "questions": 5 })).await;
    let survey_id = survey.id.clone();
    events.wait_for("the third question", |e| e.starts_with("elicit 3:")).await;
    assert_eq!(host.status().await["open_client_requests"], 1);

    // The user gives up on the call: the client is told the question is gone.
    survey.cancel(Some("user gave up".into())).await.unwrap();
    events.wait_for("the third question to be withdrawn", |e| e == "withdrawn 3").await;
    let ended = host.call_ended("survey").await;
    assert_eq!(ended.str("stop_reason"), Some("client-cancelled"), "{ended}");
    assert_eq!(host.responses_to(&survey_id), 0);

    // A new call's questions surface and are answered normally.
    host.test_client.hold_from(0);
    let next = host.call("survey", json!({ "questions": 2 })).await.unwrap();
    assert_eq!(next.is_error, Some(false), "{next:?}");
    assert_eq!(text_of(&next), "answer 4\nanswer 5");

    let idle = host.wait_until_idle().await;
    assert_eq!(idle["open_client_requests"], 0);
    let all = events.all();
    assert!(!all.iter().any(|e| e == "withdrawn 4" || e == "withdrawn 5"), "{all:?}");
}

#[tokio::test]
async fn an_unanswered_question_times_out_and_is_withdrawn() {
    let host = Host::start(Start::new("demo", &["--elicitation-timeout", "200ms"])).await;
    host.test_client.hold_from(1);
    let result = host.call("survey", json!({ "questions": 1 })).await.unwrap();
    assert_eq!(result.is_error, Some(true));
    assert!(text_of(&result).contains("no answer to question 1 in time"), "{}", text_of(&result));
    host.test_client.events.wait_for("the question to be withdrawn", |e| e == "withdrawn 1").await;
    host.wait_until_idle().await;
}

#[tokio::test]
async fn a_call_stopped_by_force_mid_question_withdraws_it_too() {
    // With no grace the host drops the call future at once; the open
    // question is withdrawn from its drop guard.
    let host = Host::start(Start::new("demo", &["--cancel-grace", "0"])).await;
    host.test_client.hold_from(1);
    let survey = host.start_call("survey", json!({ "questions": 1 })).await;
    host.test_client.events.wait_for("the question", |e| e.starts_with("elicit 1:")).await;
    survey.cancel(None).await.unwrap();
    host.test_client.events.wait_for("the question to be withdrawn", |e| e == "withdrawn 1").await;
    host.wait_until_idle().await;
}

#[tokio::test]
async fn progress_reaches_the_client_when_it_asked_for_it() {
    let host = Host::start(Start::new("demo", &[])).await;
    let mut params = rmcp::model::CallToolRequestParams::new("countdown");
    params.arguments = json!({ "steps": 4, "step_ms": 1 }).as_object().cloned();
    params.meta =
        Some(RequestMetaObject::with_progress_token(ProgressToken(NumberOrString::String("p1".into()))));
    let result = host.client.peer().call_tool(params).await.unwrap();
    assert_eq!(text_of(&result), "counted down from 4");
    // Notifications go out before the response on the same stream.
    let progress: Vec<String> =
        host.test_client.events.all().into_iter().filter(|e| e.starts_with("progress")).collect();
    assert_eq!(progress, ["progress 1/4", "progress 2/4", "progress 3/4", "progress 4/4"]);
    // (rmcp's client puts a progress token on every request, so the
    // no-token case is covered by the TypeScript SDK, which does not.)
}

/// On 2026-07-28 there is no `logging/setLevel`: each request names the
/// level it wants in `_meta["io.modelcontextprotocol/logLevel"]`, and a
/// request that names none gets no log records (SEP-2575). Its progress
/// still goes out (it asked for that with its progress token).
#[tokio::test]
#[allow(deprecated)] // rmcp marks logging deprecated by SEP-2577; 2026-07-28 still has it per request
async fn on_2026_07_28_a_request_gets_log_records_only_at_the_level_its_meta_names() {
    let host = Host::start(Start::new("demo", &[]).discover()).await;
    let countdown = |level: Option<LoggingLevel>| {
        let mut params = rmcp::model::CallToolRequestParams::new("countdown");
        params.arguments = json!({ "steps": 2, "step_ms": 0 }).as_object().cloned();
        let mut meta =
            RequestMetaObject::with_progress_token(ProgressToken(NumberOrString::String("p".into())));
        if let Some(level) = level {
            meta.set_log_level(level);
        }
        params.meta = Some(meta);
        params
    };
    let events = |host: &Host, kind: &str| {
        host.test_client.events.all().into_iter().filter(|e| e.starts_with(kind)).collect::<Vec<_>>()
    };
    let result = host.client.peer().call_tool(countdown(None)).await.unwrap();
    assert_eq!(text_of(&result), "counted down from 2");
    assert_eq!(events(&host, "progress").len(), 2, "{:?}", host.test_client.events.all());
    assert!(events(&host, "log").is_empty(), "no level named, no records: {:?}", events(&host, "log"));

    host.client.peer().call_tool(countdown(Some(LoggingLevel::Warning))).await.unwrap();
    assert!(events(&host, "log").is_empty(), "the record is info, below warning: {:?}", events(&host, "log"));

    host.client.peer().call_tool(countdown(Some(LoggingLevel::Info))).await.unwrap();
    assert_eq!(events(&host, "log"), ["log info \"counted down from 2\""]);
}

#[tokio::test]
#[allow(deprecated)]
async fn tool_logs_reach_the_client_at_or_above_its_level() {
    let host = Host::start(Start::new("demo", &[])).await;
    host.call("countdown", json!({ "steps": 1, "step_ms": 0 })).await.unwrap();
    let logs =
        |host: &Host| host.test_client.events.all().into_iter().filter(|e| e.starts_with("log")).count();
    assert_eq!(logs(&host), 1, "{:?}", host.test_client.events.all());
    assert!(host.test_client.events.all().contains(&"log info \"counted down from 1\"".to_string()));

    host.client.peer().set_level(SetLevelRequestParams::new(LoggingLevel::Warning)).await.unwrap();
    host.call("countdown", json!({ "steps": 1, "step_ms": 0 })).await.unwrap();
    assert_eq!(logs(&host), 1, "info is below the client's warning level");
}

#[tokio::test]
async fn a_mode_the_client_did_not_declare_is_never_used() {
    // The test client declares form elicitation only: URL mode is refused
    // inside the host, and the client never sees a request.
    let host = Host::start(Start::new("demo", &[])).await;
    let result = host.call("sign_in", json!({})).await.unwrap();
    assert_eq!(text_of(&result), "this client cannot open URLs for the user");
    let asked = host.test_client.events.all().iter().filter(|e| e.starts_with("elicit")).count();
    assert_eq!(asked, 0);
}
