//! A tool asking several questions at once (`client.ask`, mcp:tool 0.2.2)
//! and the client's roots (`client.list-roots`), through rmcp's client:
//! on 2026-07-28 in one `input_required` result under the tool's keys,
//! parked here or sealed for another replica; before, as requests side by
//! side. A tool that fails for want of a capability the client did not
//! declare gets the client a -32021 that names it, on 2026-07-28. A
//! prompt that asks pauses the same way.

// Sampling and roots are deprecated in rmcp by SEP-2577 but still part of
// every protocol version this host serves.
#![allow(deprecated)]

use rmcp::ServiceError;
use rmcp::model::{
    CallToolResponse, ClientCapabilities, GetPromptRequestParams, GetPromptResponse, InputRequest,
    InputResponses,
};
use serde_json::json;

use crate::harness::{Host, Start, TestClient, params, text_of};
use crate::request_state::{KEY, key_file};

/// A client that can be asked anything.
fn asked_anything() -> TestClient {
    TestClient::declaring(
        ClientCapabilities::builder().enable_elicitation().enable_sampling().enable_roots().build(),
    )
}

/// The answers to `test_input_required_result_multiple_inputs`' three questions.
fn three_answers() -> InputResponses {
    InputResponses::from([
        ("user_name".to_string(), json!({ "action": "accept", "content": { "name": "Alice" } })),
        (
            "greeting".to_string(),
            json!({ "role": "assistant", "model": "m", "content": { "type": "text", "text": "Hello there" } }),
        ),
        ("client_roots".to_string(), json!({ "roots": [{ "uri": "file:///a", "name": "a" }] })),
    ])
}

/// The questions of a paused result, by key, and its state.
fn paused(response: CallToolResponse) -> (Vec<(String, &'static str)>, String) {
    let CallToolResponse::InputRequired(paused) = response else {
        panic!("expected a pause, got {response:?}")
    };
    let questions = paused
        .input_requests
        .unwrap()
        .into_iter()
        .map(|(key, request)| {
            let method = match request {
                InputRequest::Elicitation(_) => "elicitation/create",
                InputRequest::CreateMessage(_) => "sampling/createMessage",
                InputRequest::ListRoots(_) => "roots/list",
                _ => "another method",
            };
            (key, method)
        })
        .collect();
    (questions, paused.request_state.unwrap())
}

fn completed(response: CallToolResponse) -> String {
    let CallToolResponse::Complete(result) = response else {
        panic!("expected the result, got {response:?}")
    };
    text_of(&result)
}

const MULTIPLE: &str = "test_input_required_result_multiple_inputs";

#[tokio::test]
async fn on_2026_07_28_three_questions_asked_at_once_travel_in_one_result_under_the_tools_keys() {
    let host = Host::start(Start::new("everything", &[]).client(asked_anything()).discover()).await;
    let (questions, state) = paused(host.client.call_tool_once(params(MULTIPLE, json!({}))).await.unwrap());
    assert_eq!(
        questions,
        [
            ("client_roots".to_string(), "roots/list"),
            ("greeting".to_string(), "sampling/createMessage"),
            ("user_name".to_string(), "elicitation/create"),
        ]
    );
    let follow_up =
        params(MULTIPLE, json!({})).with_input_responses(three_answers()).with_request_state(state);
    let result = host.client.call_tool_once(follow_up).await.unwrap();
    assert_eq!(completed(result), "name: Alice; greeting: Hello there; roots: file:///a");
    // The call was parked here, not run twice.
    assert_eq!(host.stderr.count_for_tool("call started", MULTIPLE), 1);
    assert_eq!(host.wait_until_idle().await["leases"], 0);
}

#[tokio::test]
async fn three_questions_sealed_on_one_replica_are_answered_on_another_in_one_follow_up() {
    let dir = tempfile::tempdir().unwrap();
    let key = key_file(dir.path(), "state.key", &[KEY]);
    let flags = ["--state-key-file", key.to_str().unwrap()];
    let replica = || Host::start(Start::new("everything", &flags).client(asked_anything()).discover());
    let (asking, answering) = (replica().await, replica().await);

    let (questions, state) = paused(asking.client.call_tool_once(params(MULTIPLE, json!({}))).await.unwrap());
    assert_eq!(questions.len(), 3, "{questions:?}");
    let follow_up =
        params(MULTIPLE, json!({})).with_input_responses(three_answers()).with_request_state(state);
    let result = answering.client.call_tool_once(follow_up).await.unwrap();
    assert_eq!(completed(result), "name: Alice; greeting: Hello there; roots: file:///a");
    // Run again where the answers landed, all three answered from the state.
    assert_eq!(answering.stderr.count_for_tool("call started", MULTIPLE), 1);
    assert_eq!(answering.status().await["paused_calls"], 0);
}

#[tokio::test]
async fn before_2026_the_three_questions_go_to_the_client_as_requests_side_by_side() {
    let client = asked_anything();
    client.answer_forms_with(json!({ "name": "Alice" }));
    let host = Host::start(Start::new("everything", &[]).client(client)).await;
    let result = host.call(MULTIPLE, json!({})).await.unwrap();
    assert_eq!(
        text_of(&result),
        "name: Alice; greeting: sampled: Generate a greeting; roots: file:///work/project"
    );
    let mut seen = host.test_client.events.all();
    seen.sort();
    assert_eq!(seen, ["elicit 1: What is your name?", "roots", "sample: Generate a greeting"]);
}

#[tokio::test]
async fn on_2026_07_28_only_what_the_client_declared_is_asked() {
    let sampling_only = TestClient::declaring(ClientCapabilities::builder().enable_sampling().build());
    let host = Host::start(Start::new("everything", &[]).client(sampling_only).discover()).await;
    let tool = "test_input_required_result_capabilities";
    let (questions, _) = paused(host.client.call_tool_once(params(tool, json!({}))).await.unwrap());
    assert_eq!(questions, [("capital_question".to_string(), "sampling/createMessage")]);
}

#[tokio::test]
async fn a_tool_that_fails_without_an_undeclared_capability_gets_the_client_a_32021_naming_it() {
    let elicitation_only =
        || TestClient::declaring(ClientCapabilities::builder().enable_elicitation().build());
    let host = Host::start(Start::new("everything", &[]).client(elicitation_only()).discover()).await;
    let refused = host.client.call_tool_once(params("test_missing_capability", json!({}))).await.unwrap_err();
    let ServiceError::McpError(error) = refused else { panic!("expected an MCP error, got {refused:?}") };
    assert_eq!(error.code.0, -32021, "{error:?}");
    assert_eq!(error.data.unwrap()["requiredCapabilities"], json!({ "sampling": {} }));

    // Before 2026-07-28 there is no such error: the tool's own failure.
    let older = Host::start(Start::new("everything", &[]).client(elicitation_only())).await;
    let result = older.call("test_missing_capability", json!({})).await.unwrap();
    assert_eq!(result.is_error, Some(true));
    assert_eq!(text_of(&result), "this tool needs sampling");
}

const PROMPT: &str = "test_input_required_result_prompt";

/// The one question of a paused prompt: its key and the state.
fn prompt_paused(response: GetPromptResponse) -> (String, String) {
    let GetPromptResponse::InputRequired(paused) = response else {
        panic!("expected a pause, got {response:?}")
    };
    let (key, request) = paused.input_requests.unwrap().into_iter().next().unwrap();
    assert!(matches!(request, InputRequest::Elicitation(_)), "{request:?}");
    (key, paused.request_state.unwrap())
}

fn prompt_text(response: GetPromptResponse) -> String {
    let GetPromptResponse::Complete(result) = response else {
        panic!("expected the prompt, got {response:?}")
    };
    serde_json::to_value(&result.messages).unwrap()[0]["content"]["text"].as_str().unwrap().to_string()
}

fn context_answer(key: &str) -> InputResponses {
    InputResponses::from([(
        key.to_string(),
        json!({ "action": "accept", "content": { "context": "tests" } }),
    )])
}

#[tokio::test]
async fn on_2026_07_28_a_prompt_that_asks_pauses_like_a_tool_call_parked_or_sealed() {
    // Parked in the host that asked.
    let host = Host::start(Start::new("everything", &[]).discover()).await;
    let (key, state) =
        prompt_paused(host.client.get_prompt_once(GetPromptRequestParams::new(PROMPT)).await.unwrap());
    assert_eq!(key, "user_context");
    let follow_up = GetPromptRequestParams::new(PROMPT)
        .with_input_responses(context_answer(&key))
        .with_request_state(state);
    assert_eq!(prompt_text(host.client.get_prompt_once(follow_up).await.unwrap()), "Use this context: tests");
    assert_eq!(host.wait_until_idle().await["leases"], 0);

    // Sealed, and answered on another replica.
    let dir = tempfile::tempdir().unwrap();
    let key_path = key_file(dir.path(), "state.key", &[KEY]);
    let flags = ["--state-key-file", key_path.to_str().unwrap()];
    let (asking, answering) = (
        Host::start(Start::new("everything", &flags).discover()).await,
        Host::start(Start::new("everything", &flags).discover()).await,
    );
    let (key, state) =
        prompt_paused(asking.client.get_prompt_once(GetPromptRequestParams::new(PROMPT)).await.unwrap());
    let follow_up = || GetPromptRequestParams::new(PROMPT).with_input_responses(context_answer(&key));
    let answered =
        answering.client.get_prompt_once(follow_up().with_request_state(state.clone())).await.unwrap();
    assert_eq!(prompt_text(answered), "Use this context: tests");
    // A state is redeemed once, and only for its own prompt.
    let again = answering.client.get_prompt_once(follow_up().with_request_state(state)).await.unwrap_err();
    assert!(again.to_string().contains("used already"), "{again}");
}

#[tokio::test]
async fn before_2026_a_prompt_that_asks_sends_the_client_a_request() {
    let client = TestClient::default();
    client.answer_forms_with(json!({ "context": "tests" }));
    let host = Host::start(Start::new("everything", &[]).client(client)).await;
    let result = host.client.peer().get_prompt(GetPromptRequestParams::new(PROMPT)).await.unwrap();
    assert_eq!(
        serde_json::to_value(&result.messages).unwrap()[0]["content"]["text"],
        "Use this context: tests"
    );
    assert_eq!(host.test_client.events.all(), ["elicit 1: What context should the prompt use?"]);
}

/// The answer to `user_name` alone.
fn name_only() -> InputResponses {
    InputResponses::from([(
        "user_name".to_string(),
        json!({ "action": "accept", "content": { "name": "Alice" } }),
    )])
}

/// The other two answers of [`three_answers`].
fn greeting_and_roots() -> InputResponses {
    let mut answers = three_answers();
    answers.remove("user_name");
    answers
}

#[tokio::test]
async fn an_answer_sent_with_the_call_itself_is_used_and_only_the_rest_is_asked_parked_or_sealed() {
    let first = || params(MULTIPLE, json!({})).with_input_responses(name_only());
    // Parked here.
    let host = Host::start(Start::new("everything", &[]).client(asked_anything()).discover()).await;
    let (questions, state) = paused(host.client.call_tool_once(first()).await.unwrap());
    let keys: Vec<&str> = questions.iter().map(|(key, _)| key.as_str()).collect();
    assert_eq!(keys, ["client_roots", "greeting"], "user_name was answered up front");
    let follow_up =
        params(MULTIPLE, json!({})).with_input_responses(greeting_and_roots()).with_request_state(state);
    assert_eq!(
        completed(host.client.call_tool_once(follow_up).await.unwrap()),
        "name: Alice; greeting: Hello there; roots: file:///a"
    );

    // Sealed: the up-front answer travels in the state to the replica that
    // runs the call again.
    let dir = tempfile::tempdir().unwrap();
    let key = key_file(dir.path(), "state.key", &[KEY]);
    let flags = ["--state-key-file", key.to_str().unwrap()];
    let replica = || Host::start(Start::new("everything", &flags).client(asked_anything()).discover());
    let (asking, answering) = (replica().await, replica().await);
    let (questions, state) = paused(asking.client.call_tool_once(first()).await.unwrap());
    assert_eq!(questions.len(), 2, "{questions:?}");
    let follow_up =
        params(MULTIPLE, json!({})).with_input_responses(greeting_and_roots()).with_request_state(state);
    assert_eq!(
        completed(answering.client.call_tool_once(follow_up).await.unwrap()),
        "name: Alice; greeting: Hello there; roots: file:///a"
    );
}

#[tokio::test]
async fn an_approval_cannot_be_answered_before_it_is_asked() {
    let host = Host::start(Start::new("demo", &[]).discover()).await;
    let yes = InputResponses::from([
        ("approval-1".to_string(), json!({ "action": "accept", "content": { "approve": true } })),
        ("question-1".to_string(), json!({ "action": "accept", "content": { "approve": true } })),
    ]);
    let call = params("delete_records", json!({ "table": "users" })).with_input_responses(yes);
    let (questions, _) = paused(host.client.call_tool_once(call).await.unwrap());
    assert_eq!(questions.len(), 1, "the user is still asked: {questions:?}");
    assert_eq!(host.stderr.count_for_tool("call started", "delete_records"), 0, "nothing ran");
}
