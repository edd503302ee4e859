//! How a 2026-07-28 request is answered over Streamable HTTP: a call whose
//! first message is its answer gets it as `application/json`, and the
//! connection stays open for the next request; a call that reports
//! progress first gets an SSE stream, progress then the answer, so nothing
//! it sent is lost. A body that comes in several pieces is read whole.
//!
//! The host answers such a call itself, not through rmcp's service
//! (`transport::http::direct`): a client that goes mid-call still stops
//! the call and has its cleanup run, and log records the request asked
//! for still come down its answer.

use http_body_util::{BodyExt as _, Full};
use hyper::body::Bytes;
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};
use tokio::io::AsyncWriteExt as _;
use tokio::net::TcpStream;

use crate::harness::PATIENCE;
use crate::http_limits::{HttpHost, until_closed};

const VERSION: &str = "2026-07-28";

/// A 2026-07-28 `tools/call` of `tool`, its `_meta` with `extra` added.
fn call(id: u64, tool: &str, arguments: Value, extra: Value) -> Value {
    let mut meta = json!({
        "io.modelcontextprotocol/protocolVersion": VERSION,
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": { "name": "http-answers", "version": "1" },
    });
    meta.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
    json!({ "jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": { "name": tool, "arguments": arguments, "_meta": meta } })
}

/// `message` POSTed on `sender`'s connection: the content type and body.
async fn post(
    sender: &mut hyper::client::conn::http1::SendRequest<Full<Bytes>>,
    host: &HttpHost,
    message: &Value,
) -> (String, String) {
    let tool = message["params"]["name"].as_str().unwrap();
    let request = hyper::Request::post("/mcp")
        .header("host", host.addr.to_string())
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", VERSION)
        .header("mcp-method", "tools/call")
        .header("mcp-name", tool)
        .body(Full::new(Bytes::from(message.to_string())))
        .unwrap();
    let response = tokio::time::timeout(PATIENCE, sender.send_request(request))
        .await
        .expect("the host answered in time")
        .expect("the connection is still open");
    assert_eq!(response.status(), 200);
    let kind = response.headers()["content-type"].to_str().unwrap().to_string();
    let body = tokio::time::timeout(PATIENCE, response.into_body().collect())
        .await
        .expect("the answer ended in time")
        .expect("a readable body")
        .to_bytes();
    (kind, String::from_utf8(body.to_vec()).unwrap())
}

/// A kept connection to `host`: its sender, and the task driving it.
async fn connect(
    host: &HttpHost,
) -> (hyper::client::conn::http1::SendRequest<Full<Bytes>>, tokio::task::JoinHandle<hyper::Result<()>>) {
    let stream = TcpStream::connect(host.addr).await.unwrap();
    let (sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream)).await.unwrap();
    (sender, tokio::spawn(connection))
}

/// The JSON-RPC messages of an SSE answer's `data:` lines, in order.
fn events(body: &str) -> Vec<Value> {
    body.lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .map(|data| serde_json::from_str(data.trim()).unwrap())
        .collect()
}

#[tokio::test]
async fn a_one_message_answer_is_json_on_a_kept_connection_and_progress_first_is_sse() {
    let host = HttpHost::start(&[]).await;
    let (mut sender, connection) = connect(&host).await;

    // Three calls, one connection: each answer is the JSON-RPC response itself.
    for id in 1..=3 {
        let text = format!("hello {id}");
        let (kind, body) =
            post(&mut sender, &host, &call(id, "echo", json!({ "text": text }), json!({}))).await;
        assert_eq!(kind, "application/json", "{body}");
        let answer: Value = serde_json::from_str(&body).unwrap();
        assert_eq!(answer["id"], id);
        assert_eq!(answer["result"]["content"][0]["text"], text.as_str(), "{body}");
    }

    // Progress before the answer: an event stream with every message, in order.
    let counting = call(4, "countdown", json!({ "steps": 2 }), json!({ "progressToken": "p" }));
    let (kind, body) = post(&mut sender, &host, &counting).await;
    assert!(kind.starts_with("text/event-stream"), "{kind}: {body}");
    let messages = events(&body);
    let methods: Vec<&str> = messages.iter().filter_map(|m| m["method"].as_str()).collect();
    assert_eq!(methods, ["notifications/progress"; 2], "{body}");
    let last = messages.last().unwrap();
    assert_eq!((last["id"].as_u64(), last["result"]["isError"].as_bool()), (Some(4), Some(false)), "{body}");

    // And the connection still serves after the stream.
    let (kind, _) = post(&mut sender, &host, &call(5, "echo", json!({ "text": "again" }), json!({}))).await;
    assert_eq!(kind, "application/json");
    assert!(!connection.is_finished(), "the host closed the connection");
}

#[tokio::test]
async fn a_body_sent_in_chunks_is_read_whole() {
    // The host keeps a body of one frame as hyper read it and joins one of
    // several: chunked transfer coding hands hyper's reader each chunk as a
    // frame of its own, however they arrive.
    let host = HttpHost::start(&[]).await;
    let text = "pieces of one request";
    let body = call(7, "echo", json!({ "text": text }), json!({})).to_string();
    let (first, rest) = body.split_at(body.len() / 3);
    let (second, third) = rest.split_at(rest.len() / 2);
    let mut request = format!(
        "POST /mcp HTTP/1.1\r\nhost: {}\r\ncontent-type: application/json\r\n\
         accept: application/json, text/event-stream\r\nmcp-protocol-version: {VERSION}\r\n\
         mcp-method: tools/call\r\nmcp-name: echo\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n",
        host.addr
    );
    for chunk in [first, second, third] {
        request.push_str(&format!("{:x}\r\n{chunk}\r\n", chunk.len()));
    }
    request.push_str("0\r\n\r\n");
    let mut socket = TcpStream::connect(host.addr).await.unwrap();
    socket.write_all(request.as_bytes()).await.unwrap();
    let answer = until_closed(&mut socket, "the host answered and closed the connection").await;
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    let (_, json) = answer.split_once("\r\n\r\n").expect("a head and a body");
    let message: Value = serde_json::from_str(json).unwrap_or_else(|err| panic!("{err}: {answer}"));
    assert_eq!(message["id"], 7, "{answer}");
    assert_eq!(message["result"]["content"][0]["text"], text, "{answer}");
}

/// `message` as a raw HTTP/1.1 POST, with the headers of a 2026-07-28 call.
fn raw_post(host: &HttpHost, message: &Value) -> String {
    let body = message.to_string();
    let tool = message["params"]["name"].as_str().unwrap();
    format!(
        "POST /mcp HTTP/1.1\r\nhost: {}\r\ncontent-type: application/json\r\n\
         accept: application/json, text/event-stream\r\nmcp-protocol-version: {VERSION}\r\n\
         mcp-method: tools/call\r\nmcp-name: {tool}\r\ncontent-length: {}\r\n\r\n{body}",
        host.addr,
        body.len()
    )
}

#[tokio::test]
async fn a_call_whose_client_goes_is_stopped_and_cleaned_up_and_the_next_is_served() {
    let locks = tempfile::tempdir().unwrap();
    let dir = locks.path().to_str().unwrap();
    let host = HttpHost::start(&["--dir", dir]).await;
    // Before any message is written (JSON would come), and after one (an
    // SSE stream of progress): either way the client's leaving stops it.
    let cases = [
        ("spin", json!({}), json!({}), true),
        ("countdown", json!({ "steps": 100000, "step_ms": 20 }), json!({ "progressToken": "p" }), false),
    ];
    for (n, (tool, arguments, extra, forced)) in cases.into_iter().enumerate() {
        let mut socket = TcpStream::connect(host.addr).await.unwrap();
        let request = raw_post(&host, &call(10 + n as u64, tool, arguments, extra));
        socket.write_all(request.as_bytes()).await.unwrap();
        host.stderr
            .wait_for_event("the call to start", |e| {
                e.message() == "call started" && e.str("tool") == Some(tool)
            })
            .await;
        if !forced {
            // The stream is open: its head and a first progress event came.
            let mut head = [0u8; 512];
            let read = tokio::time::timeout(PATIENCE, tokio::io::AsyncReadExt::read(&mut socket, &mut head))
                .await
                .expect("the stream's head in time")
                .unwrap();
            let head = String::from_utf8_lossy(&head[..read]);
            assert!(head.contains("text/event-stream"), "{head}");
        }
        drop(socket);
        let ended = host.stderr.wait_for_event("the call's end", |e| e.is_call_ended(tool)).await;
        assert_eq!(ended.str("stop_reason"), Some("client-cancelled"), "{ended}");
        assert_eq!(ended.bool("forced"), Some(forced), "{ended}");
        assert_eq!(ended.str("cleanup"), Some("done"), "cleanup ran: {ended}");
    }
    let left: Vec<_> =
        std::fs::read_dir(locks.path()).unwrap().map(|entry| entry.unwrap().file_name()).collect();
    assert!(left.is_empty(), "cleanup left {left:?} behind");

    // And the next call is served.
    let mut sender = connect(&host).await.0;
    let (kind, body) =
        post(&mut sender, &host, &call(20, "echo", json!({ "text": "next" }), json!({}))).await;
    assert_eq!(kind, "application/json", "{body}");
    assert!(body.contains("next"), "{body}");
}

#[tokio::test]
async fn log_records_the_request_asks_for_come_down_its_answer() {
    let host = HttpHost::start(&[]).await;
    let mut sender = connect(&host).await.0;
    // No progress token: the one notification is the log record the tool
    // writes just before it returns, queued as the call ends.
    let arguments = json!({ "steps": 1, "step_ms": 1 });
    let asked = json!({ "io.modelcontextprotocol/logLevel": "info" });
    let (kind, body) = post(&mut sender, &host, &call(30, "countdown", arguments.clone(), asked)).await;
    assert!(kind.starts_with("text/event-stream"), "{kind}: {body}");
    let messages = events(&body);
    assert_eq!(messages.len(), 2, "{body}");
    assert_eq!(messages[0]["method"], "notifications/message", "{body}");
    assert_eq!(messages[0]["params"]["data"], "counted down from 1", "{body}");
    assert_eq!(messages[1]["id"], 30, "{body}");

    // Not asked for: none, and the answer is JSON.
    let (kind, body) = post(&mut sender, &host, &call(31, "countdown", arguments, json!({}))).await;
    assert_eq!(kind, "application/json", "{body}");
}
