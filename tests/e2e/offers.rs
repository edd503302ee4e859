//! Resources, prompts and completion served from components (mcp:tool
//! 0.2.1), through rmcp's client: lists merged across components, reads
//! and prompts run like calls (cancelled, stopped, bounded), subscriptions,
//! a component built against 0.2.0 served beside them, and
//! `subscriptions/listen` on 2026-07-28. The hostile component's offers are
//! in the hostile zoo (`hostile.rs`). The TypeScript and Python SDK clients
//! do the same in tests/ts/offers.test.mjs and tests/py/test_offers.py.

use rmcp::model::{
    ArgumentInfo, ClientRequest, CompleteRequestParams, GetPromptRequestParams, ReadResourceRequestParams,
    Reference, Request, ResourceContents, SubscribeRequestParams,
};
use rmcp::service::PeerRequestOptions;
use serde_json::json;

use crate::harness::{Host, Start, guest, host_binary, no_args, run_with_stdin_open, text_of};

pub(crate) fn read(uri: &str) -> ReadResourceRequestParams {
    ReadResourceRequestParams::new(uri)
}

pub(crate) fn text(contents: &ResourceContents) -> &str {
    match contents {
        ResourceContents::TextResourceContents { text, .. } => text,
        other => panic!("not text: {other:?}"),
    }
}

#[tokio::test]
async fn resources_templates_prompts_and_completion_are_served() {
    let host = Host::start(Start::new("everything", &[])).await;
    let peer = host.client.peer();
    let info = peer.peer_info().unwrap();
    let capabilities = serde_json::to_value(&info.capabilities).unwrap();
    assert_eq!(capabilities["resources"]["subscribe"], json!(true), "{capabilities}");
    assert!(
        capabilities.get("prompts").is_some() && capabilities.get("completions").is_some(),
        "{capabilities}"
    );

    let resources = peer.list_all_resources().await.unwrap();
    let uris: Vec<&str> = resources.iter().map(|resource| resource.uri.as_str()).collect();
    assert_eq!(
        uris,
        [
            "mcp-wasm-host://status",
            "test://static-text",
            "test://static-binary",
            "test://watched-resource",
            "test://spinning-resource",
            "skill://release-notes/SKILL.md",
            "skill://release-notes/references/STYLE.md"
        ]
    );
    let read_text = peer.read_resource(read("test://static-text")).await.unwrap();
    assert_eq!(text(&read_text.contents[0]), "This is the content of the static text resource.");
    let binary = peer.read_resource(read("test://static-binary")).await.unwrap();
    let ResourceContents::BlobResourceContents { blob, mime_type, .. } = &binary.contents[0] else {
        panic!("not a blob: {binary:?}")
    };
    assert_eq!(mime_type.as_deref(), Some("image/png"));
    assert!(blob.starts_with("iVBORw0KGgo"), "a base64 PNG: {blob}");

    let templates = peer.list_all_resource_templates().await.unwrap();
    assert_eq!(templates[0].uri_template, "test://template/{id}/data");
    let data = peer.read_resource(read("test://template/123/data")).await.unwrap();
    let data: serde_json::Value = serde_json::from_str(text(&data.contents[0])).unwrap();
    assert_eq!(data, json!({ "id": "123", "templateTest": true, "data": "Data for ID: 123" }));
    let missing = peer.read_resource(read("test://nothing-here")).await.unwrap_err();
    assert!(
        format!("{missing:?}").contains("-32002")
            || format!("{missing:?}").contains("ResourceNotFound")
            || format!("{missing:?}").contains("no resource"),
        "{missing:?}"
    );

    let prompts = peer.list_all_prompts().await.unwrap();
    let names: Vec<&str> = prompts.iter().map(|prompt| prompt.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "test_simple_prompt",
            "test_prompt_with_arguments",
            "test_prompt_with_embedded_resource",
            "test_prompt_with_image",
            "test_input_required_result_prompt"
        ]
    );
    let mut with_args = GetPromptRequestParams::new("test_prompt_with_arguments");
    with_args.arguments = Some(json!({ "arg1": "hello", "arg2": "world" }).as_object().unwrap().clone());
    let got = peer.get_prompt(with_args).await.unwrap();
    let got = serde_json::to_value(&got).unwrap();
    assert_eq!(got["messages"][0]["role"], "user");
    assert_eq!(got["messages"][0]["content"]["text"], "Prompt with arguments: arg1='hello', arg2='world'");
    let mut embedded = GetPromptRequestParams::new("test_prompt_with_embedded_resource");
    embedded.arguments = Some(json!({ "resourceUri": "test://example" }).as_object().unwrap().clone());
    let got = serde_json::to_value(peer.get_prompt(embedded).await.unwrap()).unwrap();
    assert_eq!(got["messages"][0]["content"]["type"], "resource");
    assert_eq!(got["messages"][0]["content"]["resource"]["uri"], "test://example");
    let image = serde_json::to_value(
        peer.get_prompt(GetPromptRequestParams::new("test_prompt_with_image")).await.unwrap(),
    )
    .unwrap();
    assert_eq!(image["messages"][0]["content"]["type"], "image");
    assert_eq!(image["messages"][0]["content"]["mimeType"], "image/png");

    // A missing required argument and an unknown one are refused before any guest runs.
    let err = peer.get_prompt(GetPromptRequestParams::new("test_prompt_with_arguments")).await.unwrap_err();
    assert!(format!("{err:?}").contains("needs argument `arg1`"), "{err:?}");
    let mut unknown = GetPromptRequestParams::new("test_simple_prompt");
    unknown.arguments = Some(json!({ "nope": "x" }).as_object().unwrap().clone());
    let err = peer.get_prompt(unknown).await.unwrap_err();
    assert!(format!("{err:?}").contains("has no argument `nope`"), "{err:?}");

    let complete = |reference: Reference, name: &str, value: &str| {
        CompleteRequestParams::new(reference, ArgumentInfo::new(name, value))
    };
    let paris = peer
        .complete(complete(Reference::for_prompt("test_prompt_with_arguments"), "arg1", "par"))
        .await
        .unwrap();
    assert_eq!(paris.completion.values, ["paris", "park", "party"]);
    let ids = peer
        .complete(complete(Reference::for_resource("test://template/{id}/data"), "id", "1"))
        .await
        .unwrap();
    assert_eq!(ids.completion.values, ["100", "123"]);
}

#[tokio::test]
// `resources/subscribe` is how the 2025 protocol versions subscribe.
#[allow(deprecated)]
async fn a_subscriber_is_told_when_a_call_changes_a_resource_and_not_after_unsubscribing() {
    let host = Host::start(Start::new("everything", &[])).await;
    let peer = host.client.peer();
    peer.subscribe(SubscribeRequestParams::new("test://watched-resource")).await.unwrap();
    host.call("update_watched_resource", no_args()).await.unwrap();
    host.test_client.events.wait_for("the update", |event| event == "updated test://watched-resource").await;
    peer.unsubscribe(rmcp::model::UnsubscribeRequestParams::new("test://watched-resource")).await.unwrap();
    host.call("update_watched_resource", no_args()).await.unwrap();
    // The second call's notification would precede its result; none came.
    let updates = host.test_client.events.all().iter().filter(|event| event.starts_with("updated")).count();
    assert_eq!(updates, 1, "{}", host.test_client.events.dump());
    let err = peer.subscribe(SubscribeRequestParams::new("test://unknown")).await.unwrap_err();
    assert!(format!("{err:?}").contains("no resource"), "{err:?}");
}

#[tokio::test]
async fn a_read_that_spins_is_stopped_on_cancel_and_the_next_read_is_served() {
    let host = Host::start(Start::new("everything", &["--cancel-grace", "100ms"])).await;
    let request = ClientRequest::ReadResourceRequest(Request::new(read("test://spinning-resource")));
    let handle =
        host.client.peer().send_request_with_option(request, PeerRequestOptions::no_options()).await.unwrap();
    host.stderr.wait_for_event("the read started", |event| event.message() == "call started").await;
    handle.cancel(Some("test cancels".into())).await.unwrap();
    let ended = host.call_ended("resources/read").await;
    assert_eq!(ended.str("stop_reason"), Some("client-cancelled"), "{ended}");
    assert_eq!(ended.bool("forced"), Some(true), "{ended}");
    assert_eq!(ended.str("subject"), Some("test://spinning-resource"), "{ended}");
    assert_eq!(
        ended.str("cleanup"),
        Some("done"),
        "the component exports `tool`, so its cleanup ran: {ended}"
    );
    let next = host.client.peer().read_resource(read("test://static-text")).await.unwrap();
    assert_eq!(text(&next.contents[0]), "This is the content of the static text resource.");

    // And at its deadline.
    let host = Host::start(Start::new("everything", &["--timeout", "1s", "--fuel", "0"])).await;
    let err = host.client.peer().read_resource(read("test://spinning-resource")).await.unwrap_err();
    assert!(format!("{err:?}").contains("--timeout"), "{err:?}");
}

#[tokio::test]
async fn a_component_built_against_0_2_0_is_served_beside_a_0_2_1_one() {
    let old = guest("contract-0-2").display().to_string();
    let host = Host::start(Start::new("everything", &["--component", &old])).await;
    let result = host.call("old_echo", json!({ "text": "from 0.2.0" })).await.unwrap();
    assert_ne!(result.is_error, Some(true), "{result:?}");
    assert_eq!(text_of(&result), r#"{"text":"from 0.2.0"}"#);
    // Its neighbour's resources are served as usual.
    let read_text = host.client.peer().read_resource(read("test://static-text")).await.unwrap();
    assert_eq!(text(&read_text.contents[0]), "This is the content of the static text resource.");
}

#[tokio::test]
async fn a_uri_offered_twice_is_refused_at_load_even_when_prefixes_keep_names_apart() {
    let everything = guest("everything").display().to_string();
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("twice.toml");
    let text = format!(
        "[[component]]\npath = {everything:?}\nprefix = \"a_\"\n[[component]]\npath = {everything:?}\nprefix = \"b_\"\n"
    );
    std::fs::write(&config, text).unwrap();
    // stdin stays open (a closed one ends the host before it loads).
    let refused = run_with_stdin_open(
        std::process::Command::new(host_binary()).args(["--config", config.to_str().unwrap()]),
    );
    assert!(!refused.status.success());
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(stderr.contains("resource `test://static-text` is offered by both"), "{stderr}");
}

#[tokio::test]
async fn on_2026_07_28_a_listen_stream_follows_a_resource() {
    use rmcp::model::{ServerNotification, SubscriptionFilter};
    let host = Host::start(Start::new("everything", &[]).discover()).await;
    let peer = host.client.peer();
    // Once loaded (a listen before that follows every URI it names).
    peer.list_all_tools().await.unwrap();
    let mut filter = SubscriptionFilter::new();
    filter.resource_subscriptions = Some(vec!["test://watched-resource".into(), "test://not-offered".into()]);
    let mut stream = peer.listen(filter).await.unwrap();
    // Only what a component serves is accepted.
    assert_eq!(
        stream.acknowledged().resource_subscriptions.as_deref(),
        Some(&["test://watched-resource".to_string()][..])
    );
    host.call("update_watched_resource", no_args()).await.unwrap();
    let next = tokio::time::timeout(crate::harness::PATIENCE, stream.next()).await.unwrap().unwrap();
    let Some(ServerNotification::ResourceUpdatedNotification(updated)) = next else { panic!("{next:?}") };
    assert_eq!(updated.params.uri, "test://watched-resource");
    // The list results of this version say how long they stay fresh.
    let listed = peer.list_resources(None).await.unwrap();
    assert_eq!(listed.ttl_ms, Some(60_000));
    assert_eq!(listed.cache_scope, Some(rmcp::model::CacheScope::Public));
}
