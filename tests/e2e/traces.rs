//! OpenTelemetry traces (`--otlp-endpoint`), received by an OTLP endpoint
//! the test serves on loopback and decoded with the official proto types:
//! the host's spans join the client's trace (its `traceparent` in
//! `params._meta`), are named and described as the MCP semantic
//! conventions say, and a call's approval, guest run and cleanup are its
//! children.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTraceServiceRequest, ExportTraceServiceResponse,
};
use opentelemetry_proto::tonic::common::v1::any_value::Value as AnyValue;
use opentelemetry_proto::tonic::trace::v1::Span;
use prost::Message as _;
use rmcp::model::{MetaObject, RequestMetaObject};
use serde_json::json;

use crate::harness::{Host, PATIENCE, Start, params, serve_posts, text_of};

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

    /// Serves OTLP/gRPC (the official `TraceService`) on a free loopback
    /// port; returns its URL.
    async fn start_grpc(&self) -> String {
        use hyper_util::rt::{TokioExecutor, TokioIo};
        use hyper_util::service::TowerToHyperService;
        use opentelemetry_proto::tonic::collector::trace::v1::trace_service_server::TraceServiceServer;

        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let service = TraceServiceServer::new(self.clone());
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let service = TowerToHyperService::new(service.clone());
                tokio::spawn(async move {
                    let http2 = hyper::server::conn::http2::Builder::new(TokioExecutor::new());
                    let _ = http2.serve_connection(TokioIo::new(stream), service).await;
                });
            }
        });
        url
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

    /// Waits until `count` spans named `name` have arrived; returns them.
    async fn at_least(&self, count: usize, name: &str) -> Vec<Span> {
        let deadline = tokio::time::Instant::now() + PATIENCE;
        loop {
            let named: Vec<Span> =
                self.spans.lock().unwrap().iter().filter(|span| span.name == name).cloned().collect();
            if named.len() >= count {
                return named;
            }
            assert!(tokio::time::Instant::now() < deadline, "{count} of {name}: {:?}", self.names());
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

#[tonic::async_trait]
impl opentelemetry_proto::tonic::collector::trace::v1::trace_service_server::TraceService for Receiver {
    async fn export(
        &self,
        request: tonic::Request<ExportTraceServiceRequest>,
    ) -> Result<tonic::Response<ExportTraceServiceResponse>, tonic::Status> {
        let received = request
            .into_inner()
            .resource_spans
            .into_iter()
            .flat_map(|resource| resource.scope_spans)
            .flat_map(|scope| scope.spans);
        self.spans.lock().unwrap().extend(received);
        Ok(tonic::Response::new(ExportTraceServiceResponse { partial_success: None }))
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
    let spans = receiver.at_least(2, "tools/call echo").await;
    let second = &spans[1];
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
    assert_eq!(attribute(&call, "error.type").as_deref(), Some("cancelled"), "the client cancelled it");
    let guest = receiver.span("guest").await;
    assert_eq!(guest.parent_span_id, call.span_id);
    assert_eq!(attribute(&guest, "forced").as_deref(), Some("true"), "the host stopped it");
    let forced = receiver.span("forced stop").await;
    assert_eq!(forced.parent_span_id, guest.span_id, "the forced stop is the guest run's child");
    assert_eq!(attribute(&forced, "reason").as_deref(), Some("client-cancelled"));
    assert!(attribute(&guest, "fuel_used").is_some_and(|fuel| fuel.parse::<u64>().unwrap() > 0), "{guest:?}");
    let cleanup = receiver.span("cleanup").await;
    assert_eq!(cleanup.parent_span_id, call.span_id, "the cleanup is the call's child");
    assert_eq!(attribute(&cleanup, "reason").as_deref(), Some("client-cancelled"));
    assert!(!receiver.children(&call).contains_key("wait for a slot"), "it had no wait for a slot");

    // An unknown tool: refused, the span an error, named by the method alone.
    host.call("no_such_tool", json!({})).await.unwrap_err();
    let refused = receiver.span("tools/call").await;
    assert_eq!(attribute(&refused, "error.type").as_deref(), Some("-32602"));
    assert_eq!(refused.status.as_ref().map(|status| status.code), Some(2), "status Error");
}

/// A call that waits for a slot (`--max-concurrent-calls 1`, the slot held
/// by another call) has a `wait for a slot` span, ending when the slot came.
#[tokio::test]
async fn a_call_that_waits_for_a_slot_shows_the_wait() {
    let receiver = Receiver::default();
    let host = traced(&receiver, &["--max-concurrent-calls", "1", "--cancel-grace", "100ms"]).await;
    let holding = host.start_call("wait_for_cancel", json!({})).await;
    host.stderr.wait_for_event("the first call started", |event| event.message() == "call started").await;
    let waiting = tokio::spawn({
        let peer = host.client.peer().clone();
        async move { peer.call_tool(params("echo", json!({ "text": "after the wait" }))).await }
    });
    // The second call is in (it counts from before its wait) before the first makes room.
    let both_in = async {
        while host.status().await["live_calls"].as_u64() < Some(2) {
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        }
    };
    tokio::time::timeout(PATIENCE, both_in).await.expect("the second call never came in");
    holding.cancel(Some("make room".into())).await.unwrap();
    let answered = waiting.await.unwrap().unwrap();
    assert_eq!(answered.is_error, Some(false), "{answered:?}");
    let call = receiver.span("tools/call echo").await;
    let wait = receiver.span("wait for a slot").await;
    assert_eq!(wait.parent_span_id, call.span_id, "the wait is the waiting call's child");
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

/// A question a tool asks is a client span under its guest run, named by
/// its method, with how it ended. The guest span is made with the
/// OpenTelemetry API and the question's through the `tracing` bridge, on
/// the guest's own thread: the context carries the parent there.
#[tokio::test]
async fn a_tools_question_is_a_client_span_under_its_guest_run() {
    let receiver = Receiver::default();
    let host = traced(&receiver, &[]).await;
    let result = host.call("survey", json!({ "questions": 1 })).await.unwrap();
    assert_eq!(result.is_error, Some(false), "{result:?}");

    let call = receiver.span("tools/call survey").await;
    let guest = receiver.span("guest").await;
    assert_eq!(guest.parent_span_id, call.span_id);
    let question = receiver.span("elicitation/create").await;
    assert_eq!(question.parent_span_id, guest.span_id, "the question is the guest run's");
    assert_eq!(question.trace_id, call.trace_id);
    assert_eq!(question.kind, 3, "a client span");
    assert_eq!(attribute(&question, "outcome").as_deref(), Some("answered"));
}

/// Over Streamable HTTP the trace context may come in the request's
/// headers; when `params._meta` carries one too, `_meta` wins (it is per
/// message), and the span says `network.transport` `tcp` and its session
/// by digest (the raw `Mcp-Session-Id` is the only secret that separates
/// sessions without authorization). A `tracestate` holding ESC, BEL or a
/// line feed is dropped, not exported into every span.
#[tokio::test]
async fn over_http_the_headers_carry_the_trace_context_and_meta_wins() {
    let receiver = Receiver::default();
    let url = receiver.start().await;
    let host = crate::http_limits::HttpHost::start(&["--otlp-endpoint", &url]).await;
    let session = host.open_session(json!({})).await;
    let header = format!("00-{TRACE_ID}-{CLIENT_SPAN}-01");
    let call = |id: u64, text: &str, meta: Option<&str>| {
        let mut params = json!({ "name": "echo", "arguments": { "text": text } });
        if let Some(traceparent) = meta {
            let forged = "evil=\u{1b}]0;owned\u{7}\nINFO forged";
            params["_meta"] = json!({ "traceparent": traceparent, "tracestate": forged });
        }
        json!({ "jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params })
    };
    let by_header =
        host.post_with(Some(&session), call(1, "header", None), &[("traceparent", &header)]).await;
    assert_eq!(by_header.answer(1)["result"]["isError"], false, "{by_header:?}");
    let meta_trace = "0af7651916cd43dd8448eb211c80319c";
    let meta = format!("00-{meta_trace}-b7ad6b7169203331-01");
    let both =
        host.post_with(Some(&session), call(2, "both", Some(&meta)), &[("traceparent", &header)]).await;
    assert_eq!(both.answer(2)["result"]["isError"], false, "{both:?}");

    // The batch goes at the SDK's default delay (5 s) here.
    let spans = receiver.at_least(2, "tools/call echo").await;
    let from_header = spans.iter().find(|span| hex(&span.trace_id) == TRACE_ID).expect("the header's trace");
    assert_eq!(hex(&from_header.parent_span_id), CLIENT_SPAN);
    assert_eq!(attribute(from_header, "network.transport").as_deref(), Some("tcp"));
    let shown = attribute(from_header, "mcp.session.id").expect("the session's digest");
    assert_ne!(shown, session, "the raw session id was exported");
    assert!(shown.len() == 16 && shown.bytes().all(|b| b.is_ascii_hexdigit()), "{shown}");
    let from_meta = spans.iter().find(|span| span.span_id != from_header.span_id).unwrap();
    assert_eq!(hex(&from_meta.trace_id), meta_trace, "_meta wins over the header");
    assert_eq!(hex(&from_meta.parent_span_id), "b7ad6b7169203331");
    // Before: `evil=\x1b]0;owned\x07\nINFO forged`, verbatim.
    assert_eq!(from_meta.trace_state, "", "a forged tracestate was exported");
    let log = host.stderr.dump();
    assert!(!log.contains(&session), "the raw session id is in the log:\n{log}");
}

/// `OTEL_EXPORTER_OTLP_PROTOCOL=grpc`: the same spans reach a collector
/// over OTLP/gRPC, with the service name from `OTEL_SERVICE_NAME`; an
/// unknown protocol stops the start, saying which it can use.
#[tokio::test]
async fn spans_go_over_grpc_when_the_standard_variable_asks() {
    let receiver = Receiver::default();
    let url = receiver.start_grpc().await;
    let mut start = Start::new("demo", &[]);
    for (name, value) in [
        ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"),
        ("OTEL_EXPORTER_OTLP_ENDPOINT", url.as_str()),
        ("OTEL_BSP_SCHEDULE_DELAY", "50"),
    ] {
        start.env.push((name.into(), value.into()));
    }
    let host = Host::start(start).await;
    host.client
        .peer()
        .call_tool(with_traceparent(params("echo", json!({ "text": "over gRPC" }))))
        .await
        .unwrap();
    let request = receiver.span("tools/call echo").await;
    assert_eq!(hex(&request.trace_id), TRACE_ID);
    assert_eq!(receiver.span("guest").await.parent_span_id, request.span_id);

    let refused = std::process::Command::new(env!("CARGO_BIN_EXE_mcp-wasm-host"))
        .args(["--component", "/nonexistent.wasm"])
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", &url)
        .env("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json")
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert!(!refused.status.success());
    let said = String::from_utf8_lossy(&refused.stderr);
    assert!(said.contains("OTEL_EXPORTER_OTLP_PROTOCOL=http/json") && said.contains("`grpc`"), "{said}");
}

/// An OTLP endpoint that accepts connections and never answers: its URL,
/// and the connections it holds.
async fn never_answering_collector() -> (String, Arc<Mutex<Vec<tokio::net::TcpStream>>>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let held = Arc::new(Mutex::new(Vec::new()));
    let holding = held.clone();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            holding.lock().unwrap().push(stream);
        }
    });
    (url, held)
}

/// A collector that accepts connections and never answers: calls go on as
/// usual, and the host's memory does not grow with the spans it cannot send
/// (the batch queue is bounded; spans past it are dropped).
#[tokio::test]
async fn a_collector_that_never_answers_slows_no_call_and_grows_no_memory() {
    let (url, held) = never_answering_collector().await;
    ten_thousand_calls_in_flat_memory(&url).await;
    assert!(!held.lock().unwrap().is_empty(), "the host did try to export");
}

/// A tool that floods its log, traced to a collector that never answers:
/// each record is a span event, and the spans wait in the export queue.
/// Before, a record of U+0001 was an event of five times its size, 128 to a
/// span and 2 048 spans queued: 64 calls of a log flood took the host to
/// 2.8 GB (56 MB untraced). Now a span keeps 16 events of at most 6 KiB and
/// the queue 512 spans: tracing adds little to what the same calls cost
/// untraced, measured side by side.
#[tokio::test]
async fn a_log_flood_traced_to_a_collector_that_never_answers_grows_the_host_boundedly() {
    let (url, held) = never_answering_collector().await;
    let untraced = log_flood_growth_kib(&[]).await;
    let traced = log_flood_growth_kib(&["--otlp-endpoint", &url]).await;
    eprintln!("64 log floods: +{} MiB untraced, +{} MiB traced", untraced >> 10, traced >> 10);
    // Before: some 250 MB more (64 spans of 50 events of 80 KiB).
    assert!(traced < untraced + (96 << 10), "traced +{traced} KiB, untraced +{untraced} KiB");
    assert!(!held.lock().unwrap().is_empty(), "the host did try to export");
}

/// How far the host's resident memory grows over 64 calls of a log flood
/// (50 records of 1 MiB of U+0001 each), in KiB.
async fn log_flood_growth_kib(extra: &[&str]) -> u64 {
    let mut args = vec!["--timeout", "20s"];
    args.extend_from_slice(extra);
    let mut start = Start::new("hostile", &args);
    start.env.push(("OTEL_BSP_SCHEDULE_DELAY".into(), "50".into()));
    // The default filter: the tool's records are logged, and become events.
    let host = Host::start(start).await;
    let pid = host.child.id().unwrap();
    let flood = || host.call("log_bomb", json!({ "mib": 1, "fill": "controls" }));
    assert_eq!(text_of(&flood().await.unwrap()), "logged 50 records of 1 MiB");
    let warmed = crate::harness::rss_kib(pid);
    for _ in 0..64 {
        assert_eq!(text_of(&flood().await.unwrap()), "logged 50 records of 1 MiB");
    }
    crate::harness::rss_kib(pid).saturating_sub(warmed)
}

/// A collector that is down (nothing listens on its port): the same.
#[tokio::test]
async fn a_collector_that_is_down_slows_no_call_and_grows_no_memory() {
    let port = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap().local_addr().unwrap().port();
    // The listener is dropped: connections to the port are refused.
    ten_thousand_calls_in_flat_memory(&format!("http://127.0.0.1:{port}")).await;
}

/// 10 000 calls with spans exported to `url` every 10 ms: each succeeds,
/// and resident memory after the first 500 grows by less than 16 MiB.
async fn ten_thousand_calls_in_flat_memory(url: &str) {
    let mut start = Start::new("demo", &["--otlp-endpoint", url]);
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
    calls(9500).await;
    let after = crate::harness::rss_kib(pid);
    assert!(after < warmed + 16 * 1024, "resident memory grew from {warmed} KiB to {after} KiB");
}

/// A paused call's follow-up lands on another replica (the same state key):
/// its span joins the trace of the request that paused the call, sealed in
/// the `requestState`: a child of that request's span when the follow-up
/// brings no trace context, else the client's child, linked to it.
#[tokio::test]
async fn a_follow_up_on_another_replica_joins_the_trace_of_the_paused_request() {
    use crate::request_state::{KEY, key_file};
    use rmcp::model::CallToolResponse;

    let dir = tempfile::tempdir().unwrap();
    let key = key_file(dir.path(), "state.key", &[KEY]);
    let receiver = Receiver::default();
    let url = receiver.start().await;
    let replica = || {
        let mut start =
            Start::new("demo", &["--state-key-file", key.to_str().unwrap(), "--otlp-endpoint", &url])
                .discover();
        start.env.push(("OTEL_BSP_SCHEDULE_DELAY".into(), "50".into()));
        Host::start(start)
    };
    let (asking, answering) = (replica().await, replica().await);
    let call = || params("delete_records", json!({ "table": "users" }));
    let pause = |response: CallToolResponse| {
        let CallToolResponse::InputRequired(paused) = response else {
            panic!("expected a pause: {response:?}")
        };
        let (question, _) = paused.input_requests.unwrap().into_iter().next().unwrap();
        (question, paused.request_state.unwrap())
    };

    // Paused in the client's trace; the follow-up brings no context.
    let (question, state) = pause(asking.client.call_tool_once(with_traceparent(call())).await.unwrap());
    let follow_up = call()
        .with_input_responses(crate::harness::approval_answer(&question, true))
        .with_request_state(state);
    let done = answering.client.call_tool_once(follow_up).await.unwrap();
    assert!(matches!(done, CallToolResponse::Complete(_)), "{done:?}");
    let spans = receiver.at_least(2, "tools/call delete_records").await;
    let paused =
        spans.iter().find(|span| hex(&span.parent_span_id) == CLIENT_SPAN).expect("the pausing span");
    let resumed = spans.iter().find(|span| span.span_id != paused.span_id).unwrap();
    assert_eq!(hex(&resumed.trace_id), TRACE_ID, "the follow-up joins the paused call's trace");
    assert_eq!(resumed.parent_span_id, paused.span_id, "as the pausing request's child");
    // The call ran on the answering replica, under the follow-up's span.
    let guest = receiver.span("guest").await;
    assert_eq!(guest.parent_span_id, resumed.span_id);

    // A follow-up with a trace context of its own keeps it and links to the pause.
    let (question, state) = pause(asking.client.call_tool_once(call()).await.unwrap());
    let own_trace = "0af7651916cd43dd8448eb211c80319c";
    let mut follow_up = call()
        .with_input_responses(crate::harness::approval_answer(&question, true))
        .with_request_state(state);
    let mut meta = serde_json::Map::new();
    meta.insert("traceparent".into(), json!(format!("00-{own_trace}-b7ad6b7169203331-01")));
    follow_up.meta = Some(RequestMetaObject(MetaObject(meta)));
    answering.client.call_tool_once(follow_up).await.unwrap();
    let spans = receiver.at_least(4, "tools/call delete_records").await;
    let linked = spans.iter().find(|span| hex(&span.trace_id) == own_trace).expect("the follow-up's span");
    let link = linked.links.first().expect("a link to the pausing request");
    let pausing =
        spans.iter().find(|span| span.span_id == link.span_id).expect("the linked span was exported");
    assert_eq!(link.trace_id, pausing.trace_id);
    assert!(pausing.parent_span_id.is_empty(), "the pause was a root span of its own trace");
}
