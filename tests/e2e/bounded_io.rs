//! Bounded as a whole (issue 22), what a tool sends and what it is told: a
//! result is measured as the client receives it, and an answer is checked
//! before the tool sees it. Each attack gets its answer, and the call beside
//! it or after it is served.

use rmcp::model::{CallToolResult, ClientCapabilities};
use serde_json::{Value, json};

use crate::harness::{Host, Start, TestClient, guest, no_args, text_of};

/// The hostile component beside the demo (for well-behaved neighbour calls).
fn hostile(extra: &[&str]) -> Start {
    let mut start = Start::new("hostile", extra);
    start.args.extend(["--component".to_string(), guest("demo").display().to_string()]);
    start
}

/// Calls `tool` while a well-behaved call runs beside it; returns the
/// hostile call's result once the neighbour and the next call are served.
async fn beside_a_neighbour(host: &Host, tool: &str, args: Value) -> CallToolResult {
    let neighbour = host.call("countdown", json!({ "steps": 3, "step_ms": 5 }));
    let (hostile, neighbour) = tokio::join!(host.call(tool, args), neighbour);
    assert_eq!(text_of(&neighbour.unwrap()), "counted down from 3", "the neighbour call is unaffected");
    let next = host.call("echo", json!({ "text": "next" })).await.unwrap();
    assert_eq!(text_of(&next), "next", "the next call is served");
    hostile.expect("the hostile call gets a result, not a protocol error")
}

/// The `isError` text of `tool`'s call, beside a neighbour.
async fn refused(host: &Host, tool: &str, args: Value) -> String {
    let result = beside_a_neighbour(host, tool, args).await;
    assert_eq!(result.is_error, Some(true), "{:.300}", text_of(&result));
    text_of(&result)
}

// ---- Finding 5: --max-output measures what the client receives ----

#[tokio::test]
async fn every_field_of_a_result_counts_against_the_output_cap_as_sent() {
    let host = Host::start(hostile(&["--max-output", "1MiB"])).await;
    // 16 MiB hidden in each field a size check could skip.
    for field in
        ["image_mime", "audio_mime", "resource_uri", "resource_mime", "link_title", "link_description"]
    {
        let message = refused(&host, "media_bomb", json!({ "field": field, "kib": 16 << 10 })).await;
        assert!(
            message.contains("is larger than its output limit of 1 MiB (--max-output)"),
            "{field}: {message}"
        );
    }
    // Media counts as base64: 900 KiB of image data is 1.2 MiB as sent.
    let message = refused(&host, "media_bomb", json!({ "field": "image_data", "kib": 900 })).await;
    assert!(message.contains("its result of 1.2 MiB"), "{message}");
    // Escapes count: 256 KiB of control characters is 1.5 MiB of JSON.
    let message = refused(&host, "media_bomb", json!({ "field": "text_controls", "kib": 256 })).await;
    assert!(message.contains("its result of 1.5 MiB"), "{message}");
    // Under the cap as sent, the result goes out whole.
    let fits = beside_a_neighbour(&host, "media_bomb", json!({ "field": "image_data", "kib": 600 })).await;
    assert_eq!(fits.is_error, Some(false), "800 KiB of base64 fits under 1 MiB");
    let biggest = host.wire.all().iter().map(String::len).max().unwrap_or(0);
    assert!(biggest < (1 << 20) + 4096, "a frame of {biggest} bytes went over the wire");
    host.assert_clean_stdout();
}

#[tokio::test]
async fn a_result_of_too_many_blocks_is_refused_naming_the_flag() {
    let host = Host::start(hostile(&[])).await;
    let message = refused(&host, "many_blocks", json!({ "count": 500_000 })).await;
    assert!(
        message.contains("500000 content blocks") && message.contains("(--max-content-blocks)"),
        "{message}"
    );
    let fits = beside_a_neighbour(&host, "many_blocks", json!({ "count": 1024 })).await;
    assert_eq!((fits.is_error, fits.content.len()), (Some(false), 1024), "the default allows 1 024 blocks");
    let host = Host::start(hostile(&["--max-content-blocks", "8"])).await;
    let message = refused(&host, "many_blocks", json!({ "count": 9 })).await;
    assert!(message.contains("limit of 8 (--max-content-blocks)"), "{message}");
}

// ---- Finding 9: answers are checked before the tool sees them ----

#[tokio::test]
async fn an_elicitation_answer_off_the_schema_asked_reaches_the_tool_as_an_error() {
    let host = Host::start(hostile(&[])).await;
    let offs = [
        (json!({ "ok": "yes", "injected": { "run": "rm -rf /" } }), "is not of type"),
        (json!({ "other": 1 }), "is a required property"),
        (json!({ "ok": "y".repeat(8 << 20) }), "larger than the limit of 1 MiB (--max-answer)"),
    ];
    for (answer, why) in offs {
        host.test_client.answer_forms_with(answer);
        let got = text_of(&beside_a_neighbour(&host, "elicit_ok", no_args()).await);
        assert!(got.starts_with("Err(") && got.contains("Failed") && got.contains(why), "{got:.300}");
        assert!(
            !got.contains("injected") && !got.contains("yyyy"),
            "the answer itself never reached the tool"
        );
    }
    let logged = host
        .stderr
        .wait_for_events("a warning per refused answer", 3, |e| {
            e.level == "WARN" && e.message().contains("answer refused") && e.str("call_id").is_some()
        })
        .await;
    assert!(logged.iter().all(|e| e.message().len() < 1024), "the log quotes a bounded account");
    // An answer that fits the schema goes through as given.
    host.test_client.answer_forms_with(json!({ "ok": true }));
    let got = text_of(&host.call("elicit_ok", no_args()).await.unwrap());
    assert!(got.starts_with("Ok(") && got.contains("Accept") && got.contains(r#"\"ok\":true"#), "{got}");
}

#[tokio::test]
async fn a_sampling_answer_past_the_answer_cap_never_reaches_the_tool() {
    let capabilities: ClientCapabilities =
        serde_json::from_value(json!({ "elicitation": {}, "sampling": {} })).unwrap();
    let start = hostile(&["--max-answer", "4KiB"]).client(TestClient::declaring(capabilities));
    let host = Host::start(start).await;
    // The test client answers `sampled: PROMPT`: an 8 KiB prompt, an 8 KiB answer.
    let got = text_of(&beside_a_neighbour(&host, "sample_echo", json!({ "kib": 8 })).await);
    assert!(got.starts_with("refused: ") && got.contains("(--max-answer)"), "{got}");
    host.stderr
        .wait_for_event("the refusal in the log", |e| {
            e.level == "WARN" && e.message().contains("--max-answer")
        })
        .await;
    let got = text_of(&host.call("sample_echo", json!({ "kib": 1 })).await.unwrap());
    assert!(got.starts_with("answered: "), "{got}");
}
