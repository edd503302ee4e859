//! Streamable HTTP against careless or hostile network peers: sessions are
//! capped (the least recently used idle one makes room), slow clients are
//! cut off, a client that stops reading its call's notifications holds no
//! store or turn, connections are capped, and a task is visible only to the
//! session that created it.
//!
//! These speak raw HTTP/1.1 (hyper's client, one connection per request
//! unless a test needs otherwise) and JSON-RPC, so each test controls
//! exactly which session, header and byte goes out.

use std::net::SocketAddr;
use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant};

use http_body_util::{BodyExt as _, Full};
use hyper::body::{Bytes, Incoming};
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt as _, AsyncReadExt as _, AsyncWriteExt as _, BufReader};
use tokio::net::TcpStream;
use tokio::process::{Child, Command};

use crate::harness::{Log, PATIENCE, guest, host_binary, rss_kib};

/// The protocol version the raw client speaks (sessions, tasks extension).
const VERSION: &str = "2025-11-25";

/// A host serving the demo component over `--http 127.0.0.1:0`.
pub(crate) struct HttpHost {
    pub(crate) child: Child,
    pub(crate) addr: SocketAddr,
    pub(crate) stderr: Arc<Log>,
}

/// What came back for one POST.
#[derive(Debug)]
pub(crate) struct Reply {
    pub(crate) status: u16,
    /// The `Mcp-Session-Id` the server assigned, on `initialize`.
    pub(crate) session: Option<String>,
    /// The JSON-RPC messages in the body (an SSE stream or plain JSON).
    pub(crate) messages: Vec<Value>,
}

impl Reply {
    /// The message that answers request `id`.
    pub(crate) fn answer(&self, id: u64) -> &Value {
        self.messages
            .iter()
            .find(|m| m["id"] == id && m.get("method").is_none())
            .unwrap_or_else(|| panic!("no answer to request {id}: {self:?}"))
    }
}

impl HttpHost {
    pub(crate) async fn start(args: &[&str]) -> HttpHost {
        let demo = guest("demo");
        let mut all = vec!["--http", "127.0.0.1:0", "--component", demo.to_str().unwrap()];
        all.extend_from_slice(args);
        HttpHost::start_exactly(&all).await
    }

    /// A host started with `args` alone (they must make it serve HTTP, on
    /// the command line or in a `--config` file).
    pub(crate) async fn start_exactly(args: &[&str]) -> HttpHost {
        let mut child = Command::new(host_binary())
            .args(["--log-format", "json"])
            .args(args)
            .env("RUST_LOG", "mcp_wasm_host=debug,warn")
            .env("NO_COLOR", "1")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("spawning mcp-wasm-host");
        let stderr = Arc::new(Log::default());
        {
            let (lines, pipe) = (stderr.clone(), child.stderr.take().unwrap());
            tokio::spawn(async move {
                let mut pipe = BufReader::new(pipe).lines();
                while let Ok(Some(line)) = pipe.next_line().await {
                    lines.push_line(line);
                }
            });
        }
        // `http://` or, with --tls-cert, `https://`.
        const SERVING: &str = "serving MCP over Streamable HTTP at ";
        // Printed as is, not a log event.
        let line = stderr.wait_for("the host to announce its address", |l| l.text().contains(SERVING)).await;
        let url = line.text().split(SERVING).nth(1).unwrap().trim_end_matches("/mcp");
        let addr = url.split("://").nth(1).unwrap().parse().unwrap();
        // The address comes before the components are loaded; the tests
        // here want a host that is ready.
        stderr.wait_for_event("the components to load", |e| e.message() == "loaded").await;
        HttpHost { child, addr, stderr }
    }

    pub(crate) fn pid(&self) -> u32 {
        self.child.id().expect("the host is running")
    }

    /// Sends `message` on a new connection, in `session` if given; returns
    /// as soon as the response head is in (the body may still stream).
    pub(crate) async fn send(&self, session: Option<&str>, message: &Value) -> hyper::Response<Incoming> {
        self.try_send(session, message).await.expect("an HTTP response")
    }

    /// [`Self::send`], but a connection the host refuses (it may write its
    /// 503 and close before the request is even sent) is an `Err`, not a panic.
    pub(crate) async fn try_send(
        &self,
        session: Option<&str>,
        message: &Value,
    ) -> Result<hyper::Response<Incoming>, hyper::Error> {
        self.try_send_with(session, message, &[]).await
    }

    /// [`Self::try_send`] with `headers` added to the request.
    async fn try_send_with(
        &self,
        session: Option<&str>,
        message: &Value,
        headers: &[(&str, &str)],
    ) -> Result<hyper::Response<Incoming>, hyper::Error> {
        let stream = TcpStream::connect(self.addr).await.expect("connecting to the host");
        let (mut sender, connection) =
            hyper::client::conn::http1::handshake(TokioIo::new(stream)).await.expect("HTTP handshake");
        tokio::spawn(connection);
        let mut request = hyper::Request::post("/mcp")
            .header("host", self.addr.to_string())
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream");
        if let Some(session) = session {
            request = request.header("mcp-session-id", session).header("mcp-protocol-version", VERSION);
        }
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        let request = request.body(Full::new(Bytes::from(message.to_string()))).unwrap();
        tokio::time::timeout(PATIENCE, sender.send_request(request)).await.expect("the host answered in time")
    }

    /// Sends `message` and reads the whole reply.
    pub(crate) async fn post(&self, session: Option<&str>, message: Value) -> Reply {
        self.post_with(session, message, &[]).await
    }

    /// [`Self::post`] with `headers` added to the request.
    pub(crate) async fn post_with(
        &self,
        session: Option<&str>,
        message: Value,
        headers: &[(&str, &str)],
    ) -> Reply {
        let response = self.try_send_with(session, &message, headers).await.expect("an HTTP response");
        let status = response.status().as_u16();
        let session = response.headers().get("mcp-session-id").map(|v| v.to_str().unwrap().to_string());
        let body = tokio::time::timeout(PATIENCE, response.into_body().collect())
            .await
            .expect("the reply ended in time")
            .expect("a readable body")
            .to_bytes();
        let text = String::from_utf8_lossy(&body);
        let messages = match serde_json::from_str::<Value>(&text) {
            Ok(json) => vec![json],
            Err(_) => text
                .lines()
                .filter_map(|line| line.strip_prefix("data:"))
                .filter_map(|data| serde_json::from_str(data.trim()).ok())
                .collect(),
        };
        Reply { status, session, messages }
    }

    /// `initialize` with `capabilities`: the reply (a new session's id in it).
    pub(crate) async fn initialize(&self, capabilities: Value) -> Reply {
        let message = json!({ "jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": VERSION,
            "capabilities": capabilities,
            "clientInfo": { "name": "http-limits", "version": "1" },
        }});
        self.post(None, message).await
    }

    /// Opens a session ready for requests, and returns its id.
    pub(crate) async fn open_session(&self, capabilities: Value) -> String {
        let reply = self.initialize(capabilities).await;
        assert_eq!(reply.status, 200, "{reply:?}");
        let session = reply.session.expect("a session id");
        let initialized = json!({ "jsonrpc": "2.0", "method": "notifications/initialized" });
        assert_eq!(self.post(Some(&session), initialized).await.status, 202);
        session
    }

    /// Ends `session` (HTTP DELETE); returns the status.
    pub(crate) async fn close_session(&self, session: &str) -> u16 {
        let stream = TcpStream::connect(self.addr).await.expect("connecting to the host");
        let (mut sender, connection) =
            hyper::client::conn::http1::handshake(TokioIo::new(stream)).await.expect("HTTP handshake");
        tokio::spawn(connection);
        let request = hyper::Request::delete("/mcp")
            .header("host", self.addr.to_string())
            .header("mcp-session-id", session)
            .header("mcp-protocol-version", VERSION)
            .body(Full::new(Bytes::new()))
            .unwrap();
        sender.send_request(request).await.expect("an HTTP response").status().as_u16()
    }

    /// Request `id` calling `method` in `session`.
    pub(crate) async fn request(&self, session: &str, id: u64, method: &str, params: Value) -> Reply {
        self.post(Some(session), json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params }))
            .await
    }

    /// The host's `mcp-wasm-host://status` resource (live counts), read as
    /// request `id` in `session`: what `Host::status` reads over stdio.
    pub(crate) async fn status(&self, session: &str, id: u64) -> Value {
        let reply =
            self.request(session, id, "resources/read", json!({ "uri": "mcp-wasm-host://status" })).await;
        let text = reply.answer(id)["result"]["contents"][0]["text"].as_str().expect("status is text");
        serde_json::from_str(text).expect("status is JSON")
    }
}

// ---- Sessions ----

#[tokio::test]
async fn sessions_are_capped_and_the_least_recently_used_idle_one_makes_room() {
    // On main there was no cap: all 2 000 sessions stayed (rmcp's 5-minute
    // keep-alive), the host's RSS grew by about 100 MiB, and the first
    // session still answered.
    let host = HttpHost::start(&["--max-sessions", "4"]).await;
    let first = host.open_session(json!({})).await;
    let listed = host.request(&first, 1, "tools/list", json!({})).await;
    assert!(listed.answer(1)["result"]["tools"][0].is_object(), "{listed:?}");
    for _ in 0..100 {
        assert_eq!(host.initialize(json!({})).await.status, 200);
    }
    let warm = rss_kib(host.pid());
    for _ in 0..2_000 {
        assert_eq!(host.initialize(json!({})).await.status, 200);
    }
    let grown = rss_kib(host.pid()).saturating_sub(warm);
    eprintln!("RSS grew by {grown} KiB over 2 000 sessions (from {warm} KiB)");
    assert!(grown < 24 * 1024, "2 000 sessions grew the host by {grown} KiB");
    // The first session, idle the longest, was closed to make room.
    let stale = host.request(&first, 2, "tools/list", json!({})).await;
    assert_eq!(stale.status, 404, "{stale:?}");
    let newest = host.open_session(json!({})).await;
    let listed = host.request(&newest, 3, "tools/list", json!({})).await;
    assert_eq!(listed.status, 200, "{listed:?}");
    assert!(listed.answer(3)["result"]["tools"].is_array(), "{listed:?}");
}

#[tokio::test]
async fn when_every_session_is_busy_a_new_one_gets_503() {
    // On main there was no cap: the third session was created (200).
    let host = HttpHost::start(&["--max-sessions", "2"]).await;
    let mut held = Vec::new();
    for id in 1..=2 {
        let session = host.open_session(json!({})).await;
        let call = json!({ "jsonrpc": "2.0", "id": id, "method": "tools/call",
                           "params": { "name": "wait_for_cancel", "arguments": {} } });
        // The response head is in; its stream stays open while the call waits.
        let response = host.send(Some(&session), &call).await;
        assert_eq!(response.status(), 200);
        held.push((session, response));
    }
    let refused = host.initialize(json!({})).await;
    assert_eq!(refused.status, 503, "{refused:?}");
    let error = &refused.answer(0)["error"];
    assert!(error["message"].as_str().unwrap().contains("--max-sessions"), "{refused:?}");
    assert!(refused.session.is_none());
    // The busy sessions are untouched.
    for (n, (session, _call)) in held.iter().enumerate() {
        let listed = host.request(session, 10 + n as u64, "tools/list", json!({})).await;
        assert_eq!(listed.status, 200, "{listed:?}");
    }
}

/// How the host's log and spans name session `id`: its SHA-256, 16 hex digits.
pub(crate) fn session_digest(id: &str) -> String {
    use sha2::Digest as _;
    let digest = sha2::Sha256::digest(id.as_bytes());
    digest.iter().take(8).map(|byte| format!("{byte:02x}")).collect()
}

/// Everything the host writes on `socket` until it closes it, read within
/// `PATIENCE` (else the test fails saying `what`), as text.
pub(crate) async fn until_closed(socket: &mut TcpStream, what: &str) -> String {
    let mut answer = Vec::new();
    tokio::time::timeout(PATIENCE, socket.read_to_end(&mut answer)).await.expect(what).unwrap();
    String::from_utf8_lossy(&answer).into_owned()
}

#[tokio::test]
async fn an_idle_session_is_closed_after_the_idle_timeout_and_a_busy_one_is_not() {
    // On main sessions lived for rmcp's fixed 5-minute keep-alive, and that
    // timer also ended a session whose call ran silently for that long.
    let host = HttpHost::start(&["--http-idle-timeout", "300ms"]).await;
    let idle = host.open_session(json!({})).await;
    let busy = host.open_session(json!({})).await;
    let call = json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call",
                       "params": { "name": "wait_for_cancel", "arguments": {} } });
    let _held = host.send(Some(&busy), &call).await;
    // The log names a session by its digest (as the audit log does), never by the id.
    let digest = session_digest(&idle);
    host.stderr
        .wait_for_event("the idle session to be closed", |e| {
            e.message() == "closing a session idle for --http-idle-timeout"
                && e.str("session") == Some(&digest)
        })
        .await;
    assert!(!host.stderr.dump().contains(&idle), "the raw session id is in the log");
    let stale = host.request(&idle, 2, "tools/list", json!({})).await;
    assert_eq!(stale.status, 404, "{stale:?}");
    let listed = host.request(&busy, 3, "tools/list", json!({})).await;
    assert_eq!(listed.status, 200, "the session with a call in flight stays: {listed:?}");
}

// ---- Slow clients ----

#[tokio::test]
async fn a_client_that_trickles_its_headers_is_cut_off() {
    // On main (axum::serve, no header timeout) the trickle went on until the
    // test gave up.
    let host = HttpHost::start(&["--http-header-timeout", "500ms"]).await;
    let mut socket = TcpStream::connect(host.addr).await.unwrap();
    let started = Instant::now();
    let (mut read, mut write) = socket.split();
    write.write_all(b"POST /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\n").await.unwrap();
    let mut tick = tokio::time::interval(Duration::from_millis(50));
    let mut buf = [0u8; 256];
    let closed = async {
        loop {
            tokio::select! {
                read = read.read(&mut buf) => return read.map_or(0, |n| n),
                _ = tick.tick() => {
                    if write.write_all(b"x-slow: 1\r\n").await.is_err() {
                        return 0;
                    }
                }
            }
        }
    };
    let answered = tokio::time::timeout(PATIENCE, closed).await.expect("the host closed the connection");
    let after = started.elapsed();
    assert!(after >= Duration::from_millis(400), "closed after {after:?}, before the timeout");
    // hyper closes without a response, or with a 408; nothing else.
    assert!(answered == 0 || buf.starts_with(b"HTTP/1.1 408"), "{:?}", String::from_utf8_lossy(&buf));
    // The host goes on serving.
    host.open_session(json!({})).await;
}

#[tokio::test]
async fn a_client_that_never_finishes_its_body_gets_408() {
    // On main rmcp waited for the rest of the body for ever.
    let host = HttpHost::start(&["--http-body-timeout", "500ms"]).await;
    let mut socket = TcpStream::connect(host.addr).await.unwrap();
    let head = "POST /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n\
                accept: application/json, text/event-stream\r\ncontent-length: 1000\r\n\r\n{\"jsonrpc\":";
    socket.write_all(head.as_bytes()).await.unwrap();
    let answer = until_closed(&mut socket, "the host answered and closed the connection").await;
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(answer.contains("--http-body-timeout"), "{answer}");
    host.open_session(json!({})).await;
}

#[tokio::test]
async fn clients_that_stop_reading_their_calls_notifications_hold_no_store_or_turn() {
    // A call's store (its memory slot) and its turn to start once lasted
    // until its progress and log notifications had been written to the
    // client: a client that stopped reading held both until the call's
    // --timeout. Calls take turns to start, two per guest thread (one
    // thread per core, `sandbox::guest_pool`): as many stalled calls as
    // there are turns.
    let turns = 2 * std::thread::available_parallelism().map_or(2, |n| n.get());
    let (hostile, demo) = (guest("hostile"), guest("demo"));
    let host = HttpHost::start_exactly(&[
        "--http",
        "127.0.0.1:0",
        "--component",
        hostile.to_str().unwrap(),
        "--component",
        demo.to_str().unwrap(),
        // Longer than the test waits, so nothing here ends by timing out.
        "--timeout",
        "10m",
        // 64 notifications of 1 MiB a call (50 log records and, asked for
        // with a progress token, 20 progress reports let through by their
        // rate limits; then the budget is spent): more than rmcp's queues,
        // hyper's and the sockets take in before the client reads (63 of
        // 256 KiB still all went in).
        "--max-log-record",
        "1MiB",
        "--max-notification-bytes",
        "64MiB",
    ])
    .await;
    let mut stalled = Vec::new();
    for n in 0..turns {
        let session = host.open_session(json!({})).await;
        let call = json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call",
                           "params": { "name": "log_bomb", "arguments": { "mib": 1 },
                                       "_meta": { "progressToken": "stalled" } } });
        let body = call.to_string();
        let request = format!(
            "POST /mcp HTTP/1.1\r\nhost: {}\r\ncontent-type: application/json\r\n\
             accept: application/json, text/event-stream\r\nmcp-session-id: {session}\r\n\
             mcp-protocol-version: {VERSION}\r\ncontent-length: {}\r\n\r\n{body}",
            host.addr,
            body.len(),
        );
        // A small receive window, and nothing read from it: the host's
        // writes to this connection stop within a few kilobytes.
        let socket = tokio::net::TcpSocket::new_v4().unwrap();
        socket.set_recv_buffer_size(4096).unwrap();
        let mut stream = socket.connect(host.addr).await.unwrap();
        stream.write_all(request.as_bytes()).await.unwrap();
        stalled.push(stream);
        // Its guest has run to the end of its notification budget.
        host.stderr
            .wait_for_events(&format!("log_bomb {n} to spend its notification budget"), n + 1, |e| {
                e.message().contains("--max-notification-bytes")
            })
            .await;
    }

    // Every stalled call's guest has returned; the calls are still in
    // flight, their notifications on the way to clients that do not read
    // them, and their stores are gone (a store may be dropped behind its
    // call, on an idle guest thread: wait for it).
    let session = host.open_session(json!({})).await;
    let mut id = 100;
    let started = Instant::now();
    let idle = loop {
        id += 1;
        let now = host.status(&session, id).await;
        assert_eq!(now["live_calls"], turns, "the stalled calls are in flight: {now}");
        if now["live_stores"] == 0 {
            break now;
        }
        assert!(started.elapsed() < PATIENCE, "the stalled calls still hold their stores: {now}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    eprintln!("{turns} stalled calls, no store: {idle}");

    // And the turns are free: another call is served at once.
    let echo = host
        .request(&session, 2, "tools/call", json!({ "name": "echo", "arguments": { "text": "through" } }))
        .await;
    assert_eq!(echo.answer(2)["result"]["content"][0]["text"], "through", "{echo:?}");
    assert_eq!(
        host.stderr.count_for_tool("call ended", "log_bomb"),
        0,
        "the stalled calls are still in flight"
    );
    drop(stalled);
}

#[tokio::test]
async fn connections_beyond_the_cap_are_refused_at_once() {
    // On main there was no cap: the third connection was served like the others.
    let host = HttpHost::start(&["--max-connections", "2"]).await;
    let held = [TcpStream::connect(host.addr).await.unwrap(), TcpStream::connect(host.addr).await.unwrap()];
    let mut third = TcpStream::connect(host.addr).await.unwrap();
    let answer = until_closed(&mut third, "the extra connection was closed at once").await;
    assert!(answer.starts_with("HTTP/1.1 503"), "{answer}");
    host.stderr.wait_for_event("the cap in the log", |e| e.message().contains("--max-connections")).await;
    // A slot frees when a connection closes; then new ones are served.
    drop(held);
    // The host notices the closes asynchronously: until it has, a new
    // connection is still refused, sometimes before the request is written.
    let initialize = json!({ "jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": VERSION,
        "capabilities": {},
        "clientInfo": { "name": "http-limits", "version": "1" },
    }});
    let retry = async {
        loop {
            if let Ok(response) = host.try_send(None, &initialize).await
                && response.status() == 200
            {
                return response;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    };
    tokio::time::timeout(PATIENCE, retry).await.expect("served once the held connections closed");
}

// ---- Tasks belong to their session ----

#[tokio::test]
async fn a_task_is_visible_only_to_the_session_that_created_it() {
    // On main tasks were server-wide: session B read, and could cancel,
    // session A's task.
    let host = HttpHost::start(&[]).await;
    let tasks = json!({ "extensions": { "io.modelcontextprotocol/tasks": {} } });
    let a = host.open_session(tasks.clone()).await;
    let b = host.open_session(tasks).await;
    let call = json!({ "name": "wait_for_cancel", "arguments": {} });
    let created = host.request(&a, 1, "tools/call", call).await;
    let task_id = created.answer(1)["result"]["taskId"]
        .as_str()
        .unwrap_or_else(|| panic!("a task: {created:?}"))
        .to_string();

    let own = host.request(&a, 2, "tasks/get", json!({ "taskId": task_id })).await;
    assert_eq!(own.answer(2)["result"]["status"], "working", "{own:?}");

    // To session B the task does not exist: the same error as an id never issued.
    let never = "00000000-0000-4000-8000-000000000000";
    let unknown = host.request(&b, 3, "tasks/get", json!({ "taskId": never })).await;
    let unknown = unknown.answer(3)["error"].clone();
    for (id, method) in [(4, "tasks/get"), (5, "tasks/cancel")] {
        let foreign = host.request(&b, id, method, json!({ "taskId": task_id })).await;
        let error = &foreign.answer(id)["error"];
        assert_eq!(error["code"], unknown["code"], "{method}: {foreign:?}");
        let message = error["message"].as_str().unwrap().replace(&task_id, never);
        assert_eq!(message, unknown["message"].as_str().unwrap(), "{method}");
    }
    let update = json!({ "taskId": task_id, "inputResponses": {} });
    let foreign = host.request(&b, 6, "tasks/update", update).await;
    assert_eq!(foreign.answer(6)["error"]["code"], unknown["code"], "{foreign:?}");

    // B's cancel did nothing; A's own does.
    let own = host.request(&a, 7, "tasks/get", json!({ "taskId": task_id })).await;
    assert_eq!(own.answer(7)["result"]["status"], "working", "{own:?}");
    let cancelled = host.request(&a, 8, "tasks/cancel", json!({ "taskId": task_id })).await;
    assert!(cancelled.answer(8).get("error").is_none(), "{cancelled:?}");
    host.stderr.wait_for_event("the task's call to stop", |e| e.is_call_ended("wait_for_cancel")).await;
}

#[tokio::test]
async fn a_sessions_tasks_stop_when_the_session_ends() {
    // On main tasks were server-wide: closing the session left its task's
    // call running until its own timeout.
    let host = HttpHost::start(&[]).await;
    let tasks = json!({ "extensions": { "io.modelcontextprotocol/tasks": {} } });
    let session = host.open_session(tasks).await;
    let call = json!({ "name": "wait_for_cancel", "arguments": {} });
    let created = host.request(&session, 1, "tools/call", call).await;
    assert_eq!(created.answer(1)["result"]["status"], "working", "{created:?}");
    assert_eq!(host.close_session(&session).await, 202);
    let ended =
        host.stderr.wait_for_event("the task's call to stop", |e| e.is_call_ended("wait_for_cancel")).await;
    assert_eq!(ended.str("stop_reason"), Some("client-cancelled"), "{ended}");
}
