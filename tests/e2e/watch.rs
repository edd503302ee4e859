//! `--watch`: a component file that changes is loaded beside the old one
//! and swapped in for new calls; calls in flight finish on the old version;
//! the client is told the tool list changed; a new version that does not
//! load or clashes on tool names is refused and the old one keeps serving.

use std::path::Path;

use serde_json::json;

use crate::harness::{Host, Start, guest, text_of};

/// Replaces `path` with `bytes` at once (write beside, then rename), as an
/// editor or a build's final copy does.
pub(crate) fn replace(path: &Path, bytes: &[u8]) {
    let beside = path.with_extension("new");
    std::fs::write(&beside, bytes).unwrap();
    std::fs::rename(&beside, path).unwrap();
}

/// The names of the tools the host lists now.
pub(crate) async fn tool_names(host: &Host) -> Vec<String> {
    let tools = host.client.peer().list_all_tools().await.unwrap();
    tools.into_iter().map(|tool| tool.name.to_string()).collect()
}

#[tokio::test]
async fn a_new_version_is_swapped_in_while_calls_in_flight_finish_on_the_old_one() {
    let dir = tempfile::tempdir().unwrap();
    let tool = dir.path().join("tool.wasm");
    std::fs::copy(guest("demo"), &tool).unwrap();
    let args = [
        "--component",
        &tool.display().to_string(),
        "--component",
        &guest("everything").display().to_string(),
    ]
    .map(String::from);
    let mut args = args.to_vec();
    args.extend(["--watch", "--watch-interval", "20ms"].map(String::from));
    let host = Host::start(Start { args, ..Start::new("demo", &[]) }).await;
    assert!(tool_names(&host).await.contains(&"countdown".to_string()));
    // The watcher notes each file's version when it starts: a change made
    // before then would be its first version, not a new one.
    host.stderr
        .wait_for_event("the watcher", |e| e.message() == "watching components for new versions")
        .await;

    // A call is running on the demo when the file becomes another component.
    let in_flight = host.start_call("countdown", json!({ "steps": 30, "step_ms": 100, "quiet": true })).await;
    host.stderr.wait_for_event("the countdown to run", |e| e.message().starts_with("countdown:")).await;
    replace(&tool, &std::fs::read(guest("hostile")).unwrap());
    let reloaded = host.stderr.wait_for_event("the reload", |e| e.message() == "component reloaded").await;
    assert!(reloaded.str("tools").unwrap().contains("list_env"), "{reloaded}");
    host.test_client.events.wait_for("tools/list_changed", |event| event == "tools/list_changed").await;
    // The new version offers resources and prompts too: their lists changed.
    host.test_client
        .events
        .wait_for("resources/list_changed", |event| event == "resources/list_changed")
        .await;
    host.test_client.events.wait_for("prompts/list_changed", |event| event == "prompts/list_changed").await;
    let resources = host.client.peer().list_all_resources().await.unwrap();
    assert!(resources.iter().any(|resource| resource.uri == "hostile://ok"), "{resources:?}");
    let names = tool_names(&host).await;
    assert!(
        names.contains(&"list_env".to_string()) && !names.contains(&"countdown".to_string()),
        "{names:?}"
    );
    assert!(names.contains(&"test_simple_text".to_string()), "the other component still serves: {names:?}");

    // The call in flight finishes on the old version, after the swap.
    let result =
        tokio::time::timeout(crate::harness::PATIENCE, in_flight.await_response()).await.unwrap().unwrap();
    let rmcp::model::ServerResult::CallToolResult(result) = result else { panic!("{result:?}") };
    assert_eq!(text_of(&result), "counted down from 30");
    let ended = host.call_ended("countdown").await;
    assert_eq!(ended.str("outcome"), Some("ok"), "{ended}");
    let log = host.stderr.events();
    let reloaded_at = log.iter().position(|e| e.message() == "component reloaded").unwrap();
    let ended_at = log.iter().position(|e| e.is_call_ended("countdown")).unwrap();
    assert!(reloaded_at < ended_at, "the swap came while the call ran");
    // New calls go to the new version.
    assert_eq!(host.call("list_env", json!({})).await.unwrap().is_error, Some(false));
    assert!(host.call("echo", json!({ "text": "gone" })).await.is_err(), "the old tool is gone");

    // A version that does not load is refused; the current one keeps serving.
    replace(&tool, b"not a component");
    let refused =
        host.stderr.wait_for_event("a refusal", |e| e.message().starts_with("reload refused")).await;
    assert!(refused.str("reason").unwrap().contains("not a WebAssembly file"), "{refused}");
    assert_eq!(host.call("list_env", json!({})).await.unwrap().is_error, Some(false));

    // So is one whose tools clash with another component's.
    replace(&tool, &std::fs::read(guest("everything")).unwrap());
    host.stderr
        .wait_until("a second refusal", |lines| {
            let refusals =
                lines.iter().filter_map(|l| l.event()).filter(|e| e.message().starts_with("reload refused"));
            refusals
                .filter_map(|e| e.str("reason").map(String::from))
                .find(|reason| reason.contains("offered by both"))
        })
        .await;
    assert_eq!(host.call("list_env", json!({})).await.unwrap().is_error, Some(false));
    let changes = host.test_client.events.all().iter().filter(|e| *e == "tools/list_changed").count();
    assert_eq!(changes, 1, "refused versions change nothing");
}

#[tokio::test]
async fn a_moved_tag_is_pulled_and_swapped_in_only_when_its_signature_verifies() {
    let registry = crate::registry_harness::TestRegistry::start().await;
    let keys = tempfile::tempdir().unwrap();
    let (ours, ours_pub) = crate::registry_harness::cosign_key(keys.path(), "ours", 7);
    let first = registry.push("tools/moving", "stable", &std::fs::read(guest("demo")).unwrap()).await;
    registry.sign("tools/moving", &first, &ours).await;
    let cache = tempfile::tempdir().unwrap();
    let args = [
        "--component",
        &registry.reference("tools/moving:stable"),
        "--require-signature",
        &ours_pub.display().to_string(),
        "--cache-dir",
        &cache.path().display().to_string(),
        "--watch",
        "--watch-tag-interval",
        "50ms",
    ]
    .map(String::from)
    .to_vec();
    let host = Host::start(Start { args, ..Start::new("demo", &[]) }).await;
    assert_eq!(text_of(&host.call("echo", json!({ "text": "v1" })).await.unwrap()), "v1");
    host.stderr
        .wait_for_event("the watcher", |e| e.message() == "watching components for new versions")
        .await;

    // The tag moves to an unsigned component: refused, the signed one keeps serving.
    let unsigned = registry.push("tools/moving", "stable", &std::fs::read(guest("hostile")).unwrap()).await;
    let refused = host
        .stderr
        .wait_for_event("a refusal", |e| {
            e.message().starts_with("reload refused")
                && e.str("reason").is_some_and(|r| r.contains("not signed"))
        })
        .await;
    assert!(refused.str("reason").unwrap().contains(&unsigned), "{refused}");
    assert_eq!(text_of(&host.call("echo", json!({ "text": "still v1" })).await.unwrap()), "still v1");

    // Once it is signed, the next check swaps it in.
    registry.sign("tools/moving", &unsigned, &ours).await;
    let moved = host.stderr.wait_for_event("the tag to move", |e| e.message() == "the tag moved").await;
    assert_eq!(moved.str("digest"), Some(unsigned.as_str()));
    host.stderr.wait_for_event("the reload", |e| e.message() == "component reloaded").await;
    host.test_client.events.wait_for("tools/list_changed", |event| event == "tools/list_changed").await;
    assert_eq!(host.call("list_env", json!({})).await.unwrap().is_error, Some(false));
}
