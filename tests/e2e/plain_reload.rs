//! Plain components reach the host the other ways components do: `--watch`
//! swaps a plain component for a new version, here another toolchain's
//! build with other tools, and `oci://` serves one pulled from a registry.

use std::time::Duration;

use serde_json::{Value, json};

use crate::harness::{Host, Start, guest};
use crate::registry_harness::TestRegistry;
use crate::watch::{replace, tool_names};

/// How long a reload that compiles a big component may take.
const COMPILE_PATIENCE: Duration = Duration::from_secs(120);

/// Calls `tool` and returns its structured `result`; an error result fails the test.
async fn result_of(host: &Host, tool: &str, arguments: Value) -> Value {
    let result = host.call(tool, arguments.clone()).await.unwrap();
    assert_ne!(result.is_error, Some(true), "{tool}({arguments}): {result:?}");
    let structured = result.structured_content.unwrap_or(Value::Null);
    structured["result"].clone()
}

#[tokio::test]
async fn a_watched_plain_component_becomes_another_toolchains_build_and_the_server_keeps_serving() {
    let dir = tempfile::tempdir().unwrap();
    let tool = dir.path().join("tool.wasm");
    std::fs::copy(guest("plain-python"), &tool).unwrap();
    let args = ["--component", &tool.display().to_string(), "--watch", "--watch-interval", "20ms"]
        .map(String::from)
        .to_vec();
    let host = Host::start(Start { args, ..Start::new("plain-python", &[]) }).await;
    assert_eq!(result_of(&host, "text-tools.reverse", json!({ "text": "ab🦀" })).await, json!("🦀ba"));
    // The watcher notes each file's version when it starts: a change made
    // before then would be its first version, not a new one.
    host.stderr
        .wait_for_event("the watcher", |e| e.message() == "watching components for new versions")
        .await;

    // The componentize-py build becomes the componentize-js one.
    replace(&tool, &std::fs::read(guest("plain-js")).unwrap());
    // The new version compiles on a cold cache first (14 MiB of
    // componentize-js): on two loaded cores that took more than PATIENCE.
    let reloaded = host
        .stderr
        .wait_for_event_within("the reload", COMPILE_PATIENCE, |e| e.message() == "component reloaded")
        .await;
    assert!(reloaded.str("tools").unwrap().contains("calc.run"), "{reloaded}");
    host.test_client.events.wait_for("tools/list_changed", |event| event == "tools/list_changed").await;
    let mut names = tool_names(&host).await;
    names.sort();
    assert_eq!(names, ["calc.join", "calc.run", "calc.same", "calc.setting"]);
    let steps = json!([{ "op": "add", "value": 2 }, { "op": "mul", "value": -3 }]);
    assert_eq!(result_of(&host, "calc.run", json!({ "start": 1, "steps": steps })).await, json!(-9));
    assert!(host.call("text-tools.reverse", json!({ "text": "x" })).await.is_err(), "the old tools are gone");
    assert_eq!(
        result_of(&host, "calc.join", json!({ "words": ["still", "serving"] })).await,
        json!("still serving")
    );
}

#[tokio::test]
async fn a_plain_component_is_served_from_a_registry() {
    let registry = TestRegistry::start().await;
    let digest =
        registry.push("tools/plain-types", "0.1.0", &std::fs::read(guest("plain-types")).unwrap()).await;
    let cache = tempfile::tempdir().unwrap();
    let args = [
        "--component",
        &registry.reference("tools/plain-types:0.1.0"),
        "--cache-dir",
        &cache.path().display().to_string(),
    ]
    .map(String::from)
    .to_vec();
    let host = Host::start(Start { args, ..Start::new("plain-types", &[]) }).await;
    let resolved = host.stderr.wait_for_event("tag resolved", |e| e.message() == "tag resolved").await;
    assert_eq!(resolved.str("digest"), Some(digest.as_str()));
    assert_eq!(
        result_of(&host, "echo", json!({ "text": "from a registry 🦀" })).await,
        json!("from a registry 🦀")
    );
    // Pulled, it is still plain: the function returning a handle is left out.
    let names = tool_names(&host).await;
    assert!(
        names.iter().any(|name| name == "counters.describe")
            && !names.iter().any(|name| name.contains("make")),
        "{names:?}"
    );
}
