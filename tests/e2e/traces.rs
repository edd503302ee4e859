//! OpenTelemetry traces (`--otlp-endpoint`), received by an OTLP endpoint
//! the test serves on loopback and decoded with the official proto types:
//! the host's spans join the client's trace (its `traceparent` in
//! `params._meta`), are named and described as the MCP semantic
//! conventions say, and a call's approval, guest run and cleanup are its
//! children.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value::Value as AnyValue;
use opentelemetry_proto::tonic::trace::v1::Span;
use prost::Message as _;
use rmcp::model::{MetaObject, RequestMetaObject};
use serde_json::json;

use crate::harness::{Host, PATIENCE, Start, params, serve_posts};

/// An OTLP/HTTP receiver: every span of every `POST /v1/traces`.
#[derive(Clone, Default)]
struct Receiver {
    spans: Arc<Mutex<Vec<Span>>>,
}

impl Receiver {
    /// Serves on a free loopback port; returns its base URL.
    async fn start(&self) -> String {
        let spans = self.spans.clone();
        serve_posts(move |body| {
            let request = ExportTraceServiceRequest::decode(body.as_slice()).expect("an OTLP export");
            let received = request
                .resource_spans
                .into_iter()
                .flat_map(|resource| resource.scope_spans)
                .flat_map(|scope| scope.spans);
            spans.lock().unwrap().extend(received);
        })
        .await
    }

    /// Waits until a span named `name` has arrived; returns it.
    async fn span(&self, name: &str) -> Span {
        let deadline = tokio::time::Instant::now() + PATIENCE;
        loop {
            if let Some(span) = self.spans.lock().unwrap().iter().find(|span| span.name == name) {
                return span.clone();
            }
            assert!(tokio::time::Instant::now() < deadline, "no span {name}: {:?}", self.names());
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
    }

    fn names(&self) -> Vec<String> {
        self.spans.lock().unwrap().iter().map(|span| span.name.clone()).collect()
    }

    /// The spans whose parent is `parent`, by name.
    fn children(&self, parent: &Span) -> HashMap<String, Span> {
        let spans = self.spans.lock().unwrap();
        spans
            .iter()
            .filter(|span| span.parent_span_id == parent.span_id)
            .map(|span| (span.name.clone(), span.clone()))
            .collect()
    }
}

fn attribute(span: &Span, key: &str) -> Option<String> {
    let value =
        span.attributes.iter().find(|attribute| attribute.key == key)?.value.as_ref()?.value.as_ref()?;
    Some(match value {
        AnyValue::StringValue(text) => text.clone(),
        AnyValue::BoolValue(flag) => flag.to_string(),
        AnyValue::IntValue(number) => number.to_string(),
        other => format!("{other:?}"),
    })
}

/// The host, exporting to `receiver` every 50 ms.
async fn traced(receiver: &Receiver, extra: &[&str]) -> Host {
    let url = receiver.start().await;
    let mut args = vec!["--otlp-endpoint", &url];
    args.extend_from_slice(extra);
    let mut start = Start::new("demo", &args);
    start.env.push(("OTEL_BSP_SCHEDULE_DELAY".into(), "50".into()));
    Host::start(start).await
}

const TRACE_ID: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const CLIENT_SPAN: &str = "00f067aa0ba902b7";

fn with_traceparent(mut call: rmcp::model::CallToolRequestParams) -> rmcp::model::CallToolRequestParams {
    let mut meta = serde_json::Map::new();
    meta.insert("traceparent".into(), json!(format!("00-{TRACE_ID}-{CLIENT_SPAN}-01")));
    call.meta = Some(RequestMetaObject(MetaObject(meta)));
    call
}

#[tokio::test]
async fn a_call_joins_the_clients_trace_with_the_conventions_names_and_its_guest_as_a_child() {
    let receiver = Receiver::default();
    let host = traced(&receiver, &[]).await;
    let call = with_traceparent(params("echo", json!({ "text": "traced" })));
    host.client.peer().call_tool(call).await.unwrap();

    let request = receiver.span("tools/call echo").await;
    assert_eq!(hex(&request.trace_id), TRACE_ID, "the host's span joins the client's trace");
    assert_eq!(hex(&request.parent_span_id), CLIENT_SPAN, "its parent is the client's span");
    assert_eq!(request.kind, 2, "a server span");
    for (key, value) in [
        ("mcp.method.name", "tools/call"),
        ("gen_ai.tool.name", "echo"),
        ("gen_ai.operation.name", "execute_tool"),
        ("network.transport", "pipe"),
        ("jsonrpc.request.id", "1"),
    ] {
        assert_eq!(attribute(&request, key).as_deref(), Some(value), "{key}");
    }
    // The request's log lines carry its trace and span.
    let ended = host.call_ended("echo").await;
    assert_eq!(ended.span.get("trace_id").and_then(|id| id.as_str()), Some(TRACE_ID), "{ended}");
    assert_eq!(
        ended.span.get("span_id").and_then(|id| id.as_str()),
        Some(hex(&request.span_id).as_str()),
        "{ended}"
    );
    let guest = receiver.span("guest").await;
    assert_eq!(guest.parent_span_id, request.span_id, "the guest run is the call's child");
    assert_eq!(attribute(&guest, "outcome").as_deref(), Some("ok"));

    // A request with no traceparent starts a trace of its own.
    host.call("echo", json!({ "text": "untraced" })).await.unwrap();
    let deadline = tokio::time::Instant::now() + PATIENCE;
    while receiver.spans.lock().unwrap().iter().filter(|span| span.name == "tools/call echo").count() < 2 {
        assert!(tokio::time::Instant::now() < deadline, "{:?}", receiver.names());
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let spans = receiver.spans.lock().unwrap().clone();
    let second = spans.iter().filter(|span| span.name == "tools/call echo").nth(1).unwrap();
    assert_ne!(hex(&second.trace_id), TRACE_ID);
    assert!(second.parent_span_id.is_empty(), "a root span");
}

#[tokio::test]
async fn a_cancelled_call_shows_the_forced_stop_and_the_cleanup_and_a_refusal_is_an_error() {
    let receiver = Receiver::default();
    let host = traced(&receiver, &["--cancel-grace", "100ms"]).await;
    let request = rmcp::model::ClientRequest::CallToolRequest(rmcp::model::Request::new(with_traceparent(
        params("spin", json!({})),
    )));
    let handle = host
        .client
        .peer()
        .send_request_with_option(request, rmcp::service::PeerRequestOptions::no_options())
        .await
        .unwrap();
    host.stderr.wait_for_event("the call started", |event| event.message() == "call started").await;
    handle.cancel(Some("test cancels".into())).await.unwrap();
    host.call_ended("spin").await;
    let call = receiver.span("tools/call spin").await;
    let guest = receiver.span("guest").await;
    assert_eq!(guest.parent_span_id, call.span_id);
    assert_eq!(attribute(&guest, "forced").as_deref(), Some("true"), "the host stopped it");
    let cleanup = receiver.span("cleanup").await;
    assert_eq!(cleanup.parent_span_id, call.span_id, "the cleanup is the call's child");
    assert_eq!(attribute(&cleanup, "reason").as_deref(), Some("client-cancelled"));
    assert!(receiver.children(&call).contains_key("wait for a slot"));

    // An unknown tool: refused, the span an error, named by the method alone.
    host.call("no_such_tool", json!({})).await.unwrap_err();
    let refused = receiver.span("tools/call").await;
    assert_eq!(attribute(&refused, "error.type").as_deref(), Some("-32602"));
    assert_eq!(refused.status.as_ref().map(|status| status.code), Some(2), "status Error");
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}

#[tokio::test]
async fn a_tools_log_records_are_events_of_its_guest_span() {
    let receiver = Receiver::default();
    let host = traced(&receiver, &[]).await;
    // `countdown` logs a record as it ends.
    host.call("countdown", json!({ "steps": 2, "step_ms": 1 })).await.unwrap();
    let guest = receiver.span("guest").await;
    // The record's text is the event's name (tracing-opentelemetry's mapping of a message).
    assert!(
        guest.events.iter().any(|event| event.name.contains("counted down from 2")),
        "{:?}",
        guest.events
    );
}

/// A collector that accepts connections and never answers: calls go on as
/// usual, and the host's memory does not grow with the spans it cannot send
/// (the batch queue is bounded; spans past it are dropped).
#[tokio::test]
async fn a_collector_that_never_answers_slows_no_call_and_grows_no_memory() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let held = Arc::new(Mutex::new(Vec::new()));
    {
        let held = held.clone();
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                held.lock().unwrap().push(stream);
            }
        });
    }
    let mut start = Start::new("demo", &["--otlp-endpoint", &url]);
    start.env.push(("OTEL_BSP_SCHEDULE_DELAY".into(), "10".into()));
    let host = Host::start(start.log("warn")).await;
    let pid = host.child.id().unwrap();
    let calls = |n: usize| {
        let host = &host;
        async move {
            for i in 0..n {
                let result = host.call("echo", json!({ "text": format!("call {i}") })).await.unwrap();
                assert_ne!(result.is_error, Some(true));
            }
        }
    };
    calls(500).await;
    let warmed = crate::harness::rss_kib(pid);
    calls(2000).await;
    let after = crate::harness::rss_kib(pid);
    assert!(after < warmed + 16 * 1024, "resident memory grew from {warmed} KiB to {after} KiB");
    assert!(!held.lock().unwrap().is_empty(), "the host did try to export");
}
