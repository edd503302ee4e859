//! The same tools written in each language a tool can be written in, held to
//! the same assertions: a call returns text and structured content; a tool
//! that ignores cancellation is stopped within the grace period and its
//! `cleanup` runs, and so is one that runs out of fuel or past its
//! deadline; a cooperative tool stops by itself; a tool that needs
//! approval is asked, before it runs or mid-call; progress and a log reach
//! the client; a question is withdrawn when its call is cancelled; several
//! questions go at once (`ask`) and the client's roots are read.
//!
//! Each language's example component offers the same tools as the Rust
//! `demo`, which is written on the Rust SDK (`echo`, `countdown`,
//! `wait_for_cancel`, `spin`, `survey`, `delete_records`, `prune`):
//! `guest-tools/python/app.py`, `guest-tools/js/app.js`. The list at the
//! bottom says which components run; adding one is one line.

use std::collections::HashSet;
use std::path::Path;
use std::sync::{LazyLock, Mutex};
use std::time::{Duration, Instant};

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, ClientCapabilities, NumberOrString, ProgressToken,
    RequestMetaObject,
};
use serde_json::{Value, json};

use crate::harness::{
    Approval, Host, Start, TestClient, files_in, guest, host_binary, no_args, params, text_of, wait_for_lock,
};

/// The tools every language's example offers, as the Rust demo does.
const SHARED_TOOLS: &[&str] =
    &["echo", "countdown", "wait_for_cancel", "spin", "survey", "delete_records", "prune"];

/// Compiles `component` into the compile cache once per test run, one at a
/// time, before any host serves it. The Python and JavaScript components are
/// 13-18 MB and compile cold in about 10 s: without this, every test of a
/// language would compile the same component at once on a cold cache.
fn warm(component: &str) {
    static WARMED: LazyLock<Mutex<HashSet<String>>> = LazyLock::new(Mutex::default);
    let mut warmed = WARMED.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    if warmed.contains(component) {
        return;
    }
    let path = guest(component);
    let out = std::process::Command::new(host_binary())
        .arg("inspect")
        .arg(&path)
        .env("RUST_LOG", "warn")
        .output()
        .expect("running mcp-wasm-host inspect");
    assert!(out.status.success(), "{component} does not load: {}", String::from_utf8_lossy(&out.stderr));
    let listed: Value = serde_json::from_slice(&out.stdout).expect("inspect prints JSON");
    let names: Vec<&str> =
        listed["tools"].as_array().unwrap().iter().filter_map(|tool| tool["name"].as_str()).collect();
    for name in SHARED_TOOLS {
        assert!(names.contains(name), "{component} has no `{name}` tool: {names:?}");
    }
    warmed.insert(component.to_string());
}

/// Serves `component` with `args`, its compiled form already cached.
async fn serve(component: &str, args: &[&str]) -> Host {
    warm(component);
    Host::start(Start::new(component, args)).await
}

fn assert_no_locks(dir: &Path) {
    let left = files_in(dir);
    assert!(left.is_empty(), "cleanup left {left:?} behind");
}

// ---- The scenarios, each run against every component ----

async fn a_call_returns_text_and_structured_content(component: &str) {
    let host = serve(component, &[]).await;
    let tools = host.client.peer().list_all_tools().await.unwrap();
    let echo = tools.iter().find(|tool| tool.name == "echo").unwrap();
    assert!(echo.output_schema.is_some(), "echo declares an output schema");
    assert_eq!(echo.input_schema["required"], json!(["text"]), "{:?}", echo.input_schema);

    let result = host.call("echo", json!({ "text": "hello, wasm" })).await.unwrap();
    assert_eq!(result.is_error, Some(false), "{result:?}");
    assert_eq!(result.structured_content, Some(json!({ "text": "hello, wasm" })));
    assert!(text_of(&result).contains("hello, wasm"), "{}", text_of(&result));

    let counted = host.call("countdown", json!({ "steps": 1, "step_ms": 0, "quiet": true })).await.unwrap();
    assert_eq!(text_of(&counted), "counted down from 1");
    assert_eq!(counted.structured_content, None);

    // Arguments outside the schema never reach the tool.
    let refused = host.call("echo", json!({ "text": 3 })).await;
    assert!(refused.is_err() || refused.unwrap().is_error == Some(true));
    host.assert_clean_stdout();

    // For a client of the tasks extension, the component's `tasks` export
    // (a broken one keeps it from loading) makes `echo` never a task, and
    // a countdown longer than a moment one.
    let tasks = ClientCapabilities::builder().enable_tasks().build();
    let host = Host::start(Start::new(component, &[]).client(TestClient::declaring(tasks)).discover()).await;
    let echoed = host.client.call_tool_once(params("echo", json!({ "text": "now" }))).await.unwrap();
    assert!(matches!(echoed, CallToolResponse::Complete(_)), "{echoed:?}");
    let longer = params("countdown", json!({ "steps": 3, "step_ms": 100, "quiet": true }));
    let counting = host.client.call_tool_once(longer).await.unwrap();
    assert!(matches!(counting, CallToolResponse::Task(_)), "{counting:?}");
}

async fn a_tool_that_ignores_cancellation_is_stopped_within_grace_and_cleaned_up(component: &str) {
    let locks = tempfile::tempdir().unwrap();
    let dir = locks.path().to_str().unwrap();
    let host = serve(component, &["--dir", dir, "--cancel-grace", "100ms"]).await;

    let call = host.start_call("spin", no_args()).await;
    let id = call.id.clone();
    // Running (it holds its lock), then the user gives up.
    wait_for_lock(locks.path()).await;
    let cancelled = Instant::now();
    call.cancel(Some("test cancels".into())).await.unwrap();

    let ended = host.call_ended("spin").await;
    let took = cancelled.elapsed();
    assert_eq!(ended.str("stop_reason"), Some("client-cancelled"), "{ended}");
    assert_eq!(ended.bool("forced"), Some(true), "spin never stops by itself: {ended}");
    assert_eq!(ended.str("cleanup"), Some("done"), "{ended}");
    // The grace, then an epoch tick; the bound leaves room for a busy machine.
    let stop_ms = ended.fields["stop_ms"].as_f64().unwrap();
    assert!((100.0..1_000.0).contains(&stop_ms), "stopped {stop_ms} ms after the cancel: {ended}");
    assert!(took < Duration::from_secs(2), "the call ended {took:?} after the cancel");
    // `cleanup` ran in a fresh instance and removed the call's lock.
    assert_no_locks(locks.path());

    // Nothing went out for the cancelled request, and the next call is served.
    let next = host.call("echo", json!({ "text": "next" })).await.unwrap();
    assert!(text_of(&next).contains("next"));
    assert_eq!(host.responses_to(&id), 0, "a cancelled request got a response");
    host.wait_until_idle().await;
    host.assert_clean_stdout();
}

/// Fuel (a guest counts its own steps) and the deadline (epoch ticks)
/// stop a tool that never stops by itself; cleanup runs in a fresh
/// instance, and the next call is served. For JavaScript this is compiled
/// code (weval, ahead of time), whose loops are metered like any other.
async fn a_spinning_tool_is_stopped_by_its_fuel_and_by_its_deadline(component: &str) {
    for (limit, value, named) in [("--fuel", "500000000", "--fuel"), ("--timeout", "300ms", "(--timeout)")] {
        let locks = tempfile::tempdir().unwrap();
        let host = serve(component, &["--dir", locks.path().to_str().unwrap(), limit, value]).await;
        let result = host.call("spin", no_args()).await.unwrap();
        assert_eq!(result.is_error, Some(true), "{limit}: {result:?}");
        let message = text_of(&result);
        assert!(message.contains("was stopped") && message.contains(named), "{limit}: {message}");
        let ended = host.call_ended("spin").await;
        assert_eq!(ended.str("outcome"), Some("limit"), "{limit}: {ended}");
        assert_eq!(ended.str("cleanup"), Some("done"), "{limit}: {ended}");
        assert_no_locks(locks.path());
        let next = host.call("echo", json!({ "text": "next" })).await.unwrap();
        assert!(text_of(&next).contains("next"), "{limit}: served on");
        host.assert_clean_stdout();
    }
}

async fn a_cooperative_tool_stops_by_itself(component: &str) {
    let host = serve(component, &[]).await;

    // Between steps: cancelled after its first progress report.
    let call = host.start_call("countdown", json!({ "steps": 10000, "step_ms": 10 })).await;
    let id = call.id.clone();
    host.test_client.events.wait_for("the first progress report", |e| e.starts_with("progress 1/")).await;
    call.cancel(None).await.unwrap();
    let ended = host.call_ended("countdown").await;
    assert_eq!(ended.str("stop_reason"), Some("client-cancelled"), "{ended}");
    assert_eq!(ended.bool("forced"), Some(false), "countdown returned `cancelled` by itself: {ended}");
    assert_eq!(ended.str("cleanup"), Some("done"), "{ended}");
    assert_eq!(host.responses_to(&id), 0);

    // Parked on its `cancelled` pollable: woken, and stops by itself.
    let call = host.start_call("wait_for_cancel", no_args()).await;
    host.stderr
        .wait_for_event("wait_for_cancel to start", |e| {
            e.message() == "call started" && e.str("tool") == Some("wait_for_cancel")
        })
        .await;
    call.cancel(None).await.unwrap();
    let ended = host.call_ended("wait_for_cancel").await;
    assert_eq!(ended.bool("forced"), Some(false), "the pollable woke the guest: {ended}");
    host.wait_until_idle().await;
}

async fn an_approval_needing_tool_is_asked(component: &str) {
    let locks = tempfile::tempdir().unwrap();
    let host = serve(component, &["--dir", locks.path().to_str().unwrap()]).await;
    let events = host.test_client.events.clone();

    // Declared in its tool info: the host asks before the tool runs.
    let tools = host.client.peer().list_all_tools().await.unwrap();
    let asks = |name: &str| {
        let tool = tools.iter().find(|tool| tool.name == name).unwrap();
        tool.meta.as_ref().and_then(|meta| meta.0.get("mcp-wasm-host/needsApproval")).is_some()
    };
    assert!(asks("delete_records") && !asks("echo") && !asks("prune") && !asks("spin"));
    let result = host.call("delete_records", json!({ "table": "users" })).await.unwrap();
    assert_eq!(text_of(&result), "deleted every record of users");
    let asked = events.wait_for("the approval request", |e| e.starts_with("elicit 1:")).await;
    assert!(asked.contains("Allow the tool `delete_records` to run?"), "{asked}");

    host.test_client.answer_approvals(Approval::Decline);
    let result = host.call("delete_records", json!({ "table": "users" })).await.unwrap();
    assert_eq!(result.is_error, Some(true));
    assert!(text_of(&result).contains("did not run"), "{}", text_of(&result));

    // Mid-call: the tool asks for one operation, and a no leaves nothing held.
    host.test_client.answer_approvals(Approval::Approve);
    let result = host.call("prune", json!({ "count": 4 })).await.unwrap();
    assert_eq!(text_of(&result), "pruned 4 snapshots");
    let asked = events.wait_for("the mid-call request", |e| e.starts_with("elicit 3:")).await;
    assert!(asked.contains("The tool `prune` asks: Delete 4 old snapshots for good?"), "{asked}");
    host.test_client.answer_approvals(Approval::Deny);
    let result = host.call("prune", json!({})).await.unwrap();
    assert_eq!(result.is_error, Some(true));
    assert!(text_of(&result).contains("nothing pruned"), "{}", text_of(&result));
    assert_no_locks(locks.path());
    host.wait_until_idle().await;

    // On 2026-07-28 the guest stays parked in `request-approval` across the
    // two requests and goes on, not run again.
    let host =
        Host::start(Start::new(component, &["--dir", locks.path().to_str().unwrap()]).discover()).await;
    let result = host.client.call_tool(params("prune", json!({ "count": 5 }))).await.unwrap();
    assert_eq!(text_of(&result), "pruned 5 snapshots");
    assert_eq!(host.stderr.count_for_tool("call started", "prune"), 1);
    host.wait_until_idle().await;
    assert_no_locks(locks.path());
}

async fn progress_and_a_log_reach_the_client(component: &str) {
    let host = serve(component, &[]).await;
    let mut call = CallToolRequestParams::new("countdown");
    call.arguments = json!({ "steps": 4, "step_ms": 1 }).as_object().cloned();
    call.meta =
        Some(RequestMetaObject::with_progress_token(ProgressToken(NumberOrString::String("p1".into()))));
    let result = host.client.peer().call_tool(call).await.unwrap();
    assert_eq!(text_of(&result), "counted down from 4");
    // Notifications go out before the response on the same stream.
    let events = host.test_client.events.all();
    let progress: Vec<&String> = events.iter().filter(|e| e.starts_with("progress")).collect();
    assert_eq!(progress, ["progress 1/4", "progress 2/4", "progress 3/4", "progress 4/4"]);
    let logs: Vec<&String> = events.iter().filter(|e| e.starts_with("log")).collect();
    assert_eq!(logs, ["log info \"counted down from 4\""]);
}

/// From the Python example's second call on, its instance is made before
/// the call arrives (`component::ahead`: CPython's takes ~0.5 ms to make);
/// the Rust and JavaScript examples' take 10-25 µs, less than handing the
/// work to another thread, and are mostly made by their calls (a slow
/// moment can tip them). Either way the instance
/// is the call's own: its output names the call, its time runs from the
/// call's start, a cancel stops it and its cleanup runs.
async fn an_instance_made_ahead_belongs_to_the_call_that_takes_it(component: &str) {
    let locks = tempfile::tempdir().unwrap();
    let dir = locks.path().to_str().unwrap();
    let host = serve(component, &["--dir", dir, "--cancel-grace", "100ms", "--timeout", "2s"]).await;
    let made_by = |ended: &crate::harness::Event| {
        let instance = ended.str("instance");
        if component == "python-tool" {
            assert_eq!(instance, Some("made-ahead"), "{ended}");
        } else {
            assert!(matches!(instance, Some("made-ahead" | "made-by-call")), "{ended}");
        }
    };
    for _ in 0..3 {
        host.call("echo", json!({ "text": "warming" })).await.unwrap();
    }
    // Idle for longer than a call may run: the instance waiting for the
    // next call is not on any call's clock.
    tokio::time::sleep(Duration::from_millis(2500)).await;
    let counted = host.call("countdown", json!({ "steps": 2, "step_ms": 1, "quiet": true })).await.unwrap();
    assert_eq!(text_of(&counted), "counted down from 2");
    let ended = host.call_ended("countdown").await;
    made_by(&ended);
    assert_eq!(ended.str("outcome"), Some("ok"), "{ended}");
    let call_id = ended.str("call_id").unwrap().to_string();
    let lines: Vec<_> =
        host.stderr.events().into_iter().filter(|e| e.message().starts_with("countdown:")).collect();
    assert_eq!(lines.len(), 2, "{lines:?}");
    for line in &lines {
        assert_eq!(line.str("call_id"), Some(call_id.as_str()), "the guest's output names its call: {line}");
    }

    if component == "python-tool" {
        // One made and not yet taken: the next call gets it.
        host.stderr
            .wait_until("an instance made ahead for the next call", |lines| {
                let events = || lines.iter().filter_map(crate::harness::LogLine::event);
                let made = events().filter(|e| e.message() == "instance made ahead").count();
                let taken = events().filter(|e| e.str("instance") == Some("made-ahead")).count();
                (made > taken).then_some(())
            })
            .await;
    }
    let call = host.start_call("spin", no_args()).await;
    wait_for_lock(locks.path()).await;
    call.cancel(Some("test cancels".into())).await.unwrap();
    let ended = host.call_ended("spin").await;
    made_by(&ended);
    assert_eq!(ended.str("stop_reason"), Some("client-cancelled"), "{ended}");
    assert_eq!(ended.str("cleanup"), Some("done"), "{ended}");
    assert_no_locks(locks.path());
    host.wait_until_idle().await;
    host.assert_clean_stdout();
}

async fn a_question_is_withdrawn_on_cancel(component: &str) {
    let locks = tempfile::tempdir().unwrap();
    let host = serve(component, &["--dir", locks.path().to_str().unwrap()]).await;
    let events = host.test_client.events.clone();

    // A question: the client answers the first and sits on the second.
    host.test_client.hold_from(2);
    let survey = host.start_call("survey", json!({ "questions": 3 })).await;
    let id = survey.id.clone();
    events.wait_for("the second question", |e| e.starts_with("elicit 2:")).await;
    assert_eq!(host.status().await["open_client_requests"], 1);
    survey.cancel(Some("user gave up".into())).await.unwrap();
    events.wait_for("the second question to be withdrawn", |e| e == "withdrawn 2").await;
    let ended = host.call_ended("survey").await;
    assert_eq!(ended.str("stop_reason"), Some("client-cancelled"), "{ended}");
    assert_eq!(ended.bool("forced"), Some(false), "the withdrawn question ended the call: {ended}");
    assert_eq!(host.responses_to(&id), 0);

    // An approval the tool asked for mid-call, while holding its lock:
    // withdrawn too, and `cleanup` releases the lock.
    let prune = host.start_call("prune", json!({})).await;
    wait_for_lock(locks.path()).await;
    events.wait_for("the approval request", |e| e.starts_with("elicit 3:")).await;
    prune.cancel(None).await.unwrap();
    events.wait_for("the approval request to be withdrawn", |e| e == "withdrawn 3").await;
    let ended = host.call_ended("prune").await;
    assert_eq!(ended.str("cleanup"), Some("done"), "{ended}");
    let idle = host.wait_until_idle().await;
    assert_eq!(idle["open_client_requests"], 0);
    assert_no_locks(locks.path());
}

// Sampling and roots are deprecated by SEP-2577, and still served.
#[allow(deprecated)]
async fn several_questions_go_at_once_and_the_roots_are_read(component: &str) {
    warm(component);
    let capabilities =
        ClientCapabilities::builder().enable_elicitation().enable_sampling().enable_roots().build();
    for discover in [false, true] {
        // 2025-11-25: requests side by side; 2026-07-28: one `input_required`
        // result with both questions, then the roots in a second round.
        let start = Start::new(component, &[]).client(TestClient::declaring(capabilities.clone()));
        let host = Host::start(if discover { start.discover() } else { start }).await;
        let result = host.client.call_tool(params("plan_trip", json!({}))).await.unwrap();
        assert_eq!(
            text_of(&result),
            "roots: project; where: answer 1; idea: sampled: An idea?",
            "{component} (2026-07-28: {discover})"
        );
        host.wait_until_idle().await;
    }
}

/// One module per component, each with every scenario as a test.
macro_rules! every_language {
    ($($language:ident: $component:literal,)*) => {$(
        mod $language {
            const COMPONENT: &str = $component;

            #[tokio::test]
            async fn a_call_returns_text_and_structured_content() {
                super::a_call_returns_text_and_structured_content(COMPONENT).await;
            }

            #[tokio::test]
            async fn a_tool_that_ignores_cancellation_is_stopped_within_grace_and_cleaned_up() {
                super::a_tool_that_ignores_cancellation_is_stopped_within_grace_and_cleaned_up(COMPONENT).await;
            }

            #[tokio::test]
            async fn a_spinning_tool_is_stopped_by_its_fuel_and_by_its_deadline() {
                super::a_spinning_tool_is_stopped_by_its_fuel_and_by_its_deadline(COMPONENT).await;
            }

            #[tokio::test]
            async fn a_cooperative_tool_stops_by_itself() {
                super::a_cooperative_tool_stops_by_itself(COMPONENT).await;
            }

            #[tokio::test]
            async fn an_approval_needing_tool_is_asked() {
                super::an_approval_needing_tool_is_asked(COMPONENT).await;
            }

            #[tokio::test]
            async fn progress_and_a_log_reach_the_client() {
                super::progress_and_a_log_reach_the_client(COMPONENT).await;
            }

            #[tokio::test]
            async fn an_instance_made_ahead_belongs_to_the_call_that_takes_it() {
                super::an_instance_made_ahead_belongs_to_the_call_that_takes_it(COMPONENT).await;
            }

            #[tokio::test]
            async fn a_question_is_withdrawn_on_cancel() {
                super::a_question_is_withdrawn_on_cancel(COMPONENT).await;
            }

            #[tokio::test]
            async fn several_questions_go_at_once_and_the_roots_are_read() {
                super::several_questions_go_at_once_and_the_roots_are_read(COMPONENT).await;
            }
        }
    )*};
}

// The components held to these assertions: a module name and a fixture in
// target/guests/ (built by `just guests`). Another component offering the
// same tools is one more line.
every_language! {
    rust: "demo",              // on the Rust SDK, guest-tools/mcp-tool
    python: "python-tool",     // guest-tools/python, mcp_tool.py
    javascript: "js-tool",     // guest-tools/js, mcp-tool.js
}

// ---- Beyond the Rust demo: schemas from Python annotations and the JS builder ----

#[tokio::test]
async fn python_and_javascript_derive_the_same_schemas_and_structured_results() {
    let mut seen = Vec::new();
    for component in ["python-tool", "js-tool"] {
        let host = serve(component, &[]).await;
        let tools = host.client.peer().list_all_tools().await.unwrap();
        let stats = tools.iter().find(|tool| tool.name == "stats").unwrap();
        let input = Value::Object((*stats.input_schema).clone());
        assert_eq!(input["required"], json!(["numbers"]), "{component}: {input}");
        assert_eq!(input["properties"]["order"]["enum"], json!(["ascending", "descending"]));
        assert_eq!(input["properties"]["digits"]["type"], json!(["integer", "null"]));
        assert_eq!(input["additionalProperties"], json!(false));
        let output = Value::Object((*stats.output_schema.clone().expect("an output schema")).clone());
        assert_eq!(output["properties"]["mean"]["type"], json!(["number", "null"]), "{component}: {output}");

        let args = json!({ "numbers": [3, 1, 2.5, 10, 0.25], "order": "descending", "digits": 2 });
        let result = host.call("stats", args).await.unwrap();
        let structured = result.structured_content.clone().expect("structured content");
        assert_eq!(structured["count"], 5, "{component}: {structured}");
        assert_eq!(structured["total"], 16.75);
        assert_eq!(structured["mean"], 3.35);
        assert_eq!(structured["median"], 2.5);
        let order: Vec<f64> = serde_json::from_value(structured["order"].clone()).unwrap();
        assert_eq!(order, [10.0, 3.0, 2.5, 1.0, 0.25]);
        assert_eq!(serde_json::from_str::<Value>(&text_of(&result)).unwrap(), structured);
        // The host validated it against the output schema; a wrong type is refused before the tool runs.
        let refused = host.call("stats", json!({ "numbers": ["one"] })).await;
        assert!(refused.is_err() || refused.unwrap().is_error == Some(true));
        seen.push((input, output));
    }
    let orders: Vec<&Value> = seen.iter().map(|(input, _)| &input["properties"]["order"]).collect();
    assert_eq!(orders[0], orders[1]);
}

/// The Python and JavaScript helpers serve resources, templates, prompts
/// and completion as the Rust SDK does: each example's own, read through
/// rmcp's client.
#[tokio::test]
async fn python_and_javascript_offer_resources_templates_prompts_and_completion() {
    use rmcp::model::{
        ArgumentInfo, CompleteRequestParams, GetPromptRequestParams, ReadResourceRequestParams, Reference,
        ResourceContents,
    };
    let text = |contents: &ResourceContents| match contents {
        ResourceContents::TextResourceContents { text, .. } => text.clone(),
        other => panic!("not text: {other:?}"),
    };
    for (component, scheme, template, value, prompt, arguments) in [
        (
            "python-tool",
            "py",
            "py://tables/{table}",
            "orders",
            "py_review_table",
            json!({ "table": "orders" }),
        ),
        ("js-tool", "js", "js://snapshots/{id}", "2024-02-29", "js_plan_prune", json!({ "keep": "2" })),
    ] {
        let host = serve(component, &[]).await;
        let peer = host.client.peer();
        let uris: Vec<String> =
            peer.list_all_resources().await.unwrap().into_iter().map(|resource| resource.uri).collect();
        assert!(uris.contains(&format!("{scheme}://examples/about")), "{component}: {uris:?}");
        let about =
            peer.read_resource(ReadResourceRequestParams::new(format!("{scheme}://examples/about"))).await;
        assert!(text(&about.unwrap().contents[0]).contains("example tools"), "{component}");
        let templates = peer.list_all_resource_templates().await.unwrap();
        assert_eq!(templates[0].uri_template, template, "{component}");
        // The template's one variable, filled in.
        let (open, close) = (template.find('{').unwrap(), template.find('}').unwrap());
        let variable = &template[open + 1..close];
        let fill = |with: &str| format!("{}{with}{}", &template[..open], &template[close + 1..]);
        let read = peer.read_resource(ReadResourceRequestParams::new(fill(value))).await.unwrap();
        assert!(text(&read.contents[0]).contains(value), "{component}: {}", fill(value));
        let err = peer.read_resource(ReadResourceRequestParams::new(fill("nothing"))).await.unwrap_err();
        assert!(format!("{err:?}").contains("no resource"), "{component}: {err:?}");
        let first = &value[..2];
        let completed = peer
            .complete(CompleteRequestParams::new(
                Reference::for_resource(template),
                ArgumentInfo::new(variable, first),
            ))
            .await
            .unwrap();
        assert!(completed.completion.values.contains(&value.to_string()), "{component}: {completed:?}");
        let mut get = GetPromptRequestParams::new(prompt);
        get.arguments = Some(arguments.as_object().unwrap().clone());
        let got = serde_json::to_value(peer.get_prompt(get).await.unwrap()).unwrap();
        let messages = got["messages"].as_array().unwrap();
        assert!(
            messages.iter().any(|message| message["content"]["type"] == "resource"),
            "{component}: {got}"
        );
        let refused = peer.get_prompt(GetPromptRequestParams::new(prompt)).await.unwrap_err();
        assert!(format!("{refused:?}").contains("needs argument"), "{component}: {refused:?}");
    }
}
