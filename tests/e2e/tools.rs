//! tools/list and tools/call: schemas, results, bad input.

use rmcp::model::ErrorCode;
use rmcp::service::ServiceError;
use serde_json::json;

use crate::harness::{Host, Start, no_args, text_of, wait_for_lock};

#[tokio::test]
async fn lists_every_tool_with_its_schema_and_hints() {
    let host = Host::start(Start::new("demo", &[])).await;
    let tools = host.client.peer().list_all_tools().await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    for expected in ["echo", "countdown", "spin", "stall", "wait_for_cancel", "allocate"] {
        assert!(names.contains(&expected), "{expected} missing from {names:?}");
    }
    let echo = tools.iter().find(|t| t.name == "echo").unwrap();
    assert_eq!(echo.input_schema["type"], "object");
    assert_eq!(echo.input_schema["required"], json!(["text"]));
    assert!(echo.output_schema.is_some(), "echo declares an output schema");
    let hints = echo.annotations.as_ref().expect("echo has annotations");
    assert_eq!(hints.read_only_hint, Some(true));
    let spin = tools.iter().find(|t| t.name == "spin").unwrap();
    assert_eq!(spin.annotations.as_ref().unwrap().destructive_hint, Some(true));
}

#[tokio::test]
async fn echo_returns_its_text_and_structured_content() {
    let host = Host::start(Start::new("demo", &[])).await;
    let result = host.call("echo", json!({ "text": "hello, sandbox" })).await.unwrap();
    assert_eq!(result.is_error, Some(false));
    assert_eq!(text_of(&result), "hello, sandbox");
    assert_eq!(result.structured_content, Some(json!({ "text": "hello, sandbox" })));
    host.assert_clean_stdout();
}

#[tokio::test]
async fn arguments_that_fail_the_schema_are_invalid_params_naming_the_problem() {
    let host = Host::start(Start::new("demo", &[])).await;
    let err = host.call("echo", json!({ "text": 42 })).await.unwrap_err();
    let ServiceError::McpError(err) = err else { panic!("expected a JSON-RPC error, got {err:?}") };
    assert_eq!(err.code, ErrorCode::INVALID_PARAMS);
    assert!(err.message.contains("/text"), "names the bad field: {}", err.message);
    assert!(err.message.contains("string"), "says what was expected: {}", err.message);

    let err = host.call("echo", no_args()).await.unwrap_err();
    let ServiceError::McpError(err) = err else { panic!("expected a JSON-RPC error") };
    assert_eq!(err.code, ErrorCode::INVALID_PARAMS);
    assert!(err.message.contains("text"), "names the missing field: {}", err.message);

    // The server is still serving.
    assert_eq!(text_of(&host.call("echo", json!({ "text": "ok" })).await.unwrap()), "ok");
}

#[tokio::test]
async fn an_unknown_tool_is_a_jsonrpc_error_listing_the_real_ones() {
    let host = Host::start(Start::new("demo", &[])).await;
    let err = host.call("no_such_tool", no_args()).await.unwrap_err();
    let ServiceError::McpError(err) = err else { panic!("expected a JSON-RPC error, got {err:?}") };
    assert_eq!(err.code, ErrorCode::INVALID_PARAMS);
    assert!(err.message.contains("no_such_tool"), "{}", err.message);
    let available = err.data.unwrap()["available"].clone();
    assert!(available.as_array().unwrap().contains(&json!("echo")));
}

#[tokio::test]
async fn calls_run_in_parallel() {
    // A call blocked for an hour must not hold up another call.
    let locks = tempfile::tempdir().unwrap();
    let dir = locks.path().display().to_string();
    let host = Host::start(Start::new("demo", &["--dir", &dir])).await;
    let stalled = host.start_call("stall", no_args()).await;
    wait_for_lock(locks.path()).await; // stall is now asleep in a host call
    let result = host.call("echo", json!({ "text": "beside a stalled call" })).await.unwrap();
    assert_eq!(text_of(&result), "beside a stalled call");
    stalled.cancel(None).await.unwrap();
}

#[tokio::test]
async fn guest_stdout_never_reaches_the_protocol_stream() {
    // countdown prints every step to its stdout.
    let host = Host::start(Start::new("demo", &[])).await;
    let result = host.call("countdown", json!({ "steps": 3, "step_ms": 1 })).await.unwrap();
    assert_eq!(text_of(&result), "counted down from 3");
    host.stderr
        .wait_for_event("the guest's printed steps on stderr", |e| {
            e.target == "tool" && e.str("stream") == Some("stdout") && e.message() == "countdown: 1"
        })
        .await;
    host.assert_clean_stdout();
}
