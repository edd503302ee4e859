//! Streamable HTTP against careless or hostile network peers: a task is
//! visible only to the session that created it.
//!
//! These speak raw HTTP/1.1 (hyper's client, one connection per request
//! unless a test needs otherwise) and JSON-RPC, so each test controls
//! exactly which session, header and byte goes out.

use std::net::SocketAddr;
use std::process::Stdio;
use std::sync::Arc;

use http_body_util::{BodyExt as _, Full};
use hyper::body::{Bytes, Incoming};
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt as _, BufReader};
use tokio::net::TcpStream;
use tokio::process::{Child, Command};

use crate::harness::{Lines, PATIENCE, guest, host_binary};

/// The protocol version the raw client speaks (sessions, tasks extension).
const VERSION: &str = "2025-11-25";

/// A host serving the demo component over `--http 127.0.0.1:0`.
struct HttpHost {
    /// Killed when dropped.
    #[allow(dead_code)]
    child: Child,
    addr: SocketAddr,
    stderr: Arc<Lines>,
}

/// What came back for one POST.
#[derive(Debug)]
struct Reply {
    status: u16,
    /// The `Mcp-Session-Id` the server assigned, on `initialize`.
    session: Option<String>,
    /// The JSON-RPC messages in the body (an SSE stream or plain JSON).
    messages: Vec<Value>,
}

impl Reply {
    /// The message that answers request `id`.
    fn answer(&self, id: u64) -> &Value {
        self.messages
            .iter()
            .find(|m| m["id"] == id && m.get("method").is_none())
            .unwrap_or_else(|| panic!("no answer to request {id}: {self:?}"))
    }
}

impl HttpHost {
    async fn start(args: &[&str]) -> HttpHost {
        let mut child = Command::new(host_binary())
            .args(["--http", "127.0.0.1:0", "--component"])
            .arg(guest("demo"))
            .args(args)
            .env("RUST_LOG", "mcp_wasm_host=debug,warn")
            .env("NO_COLOR", "1")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("spawning mcp-wasm-host");
        let stderr = Arc::new(Lines::default());
        {
            let (lines, pipe) = (stderr.clone(), child.stderr.take().unwrap());
            tokio::spawn(async move {
                let mut pipe = BufReader::new(pipe).lines();
                while let Ok(Some(line)) = pipe.next_line().await {
                    lines.push(line);
                }
            });
        }
        const SERVING: &str = "serving MCP over Streamable HTTP at http://";
        let line = stderr.wait_for("the host to announce its address", |l| l.contains(SERVING)).await;
        let addr = line.split(SERVING).nth(1).unwrap().trim_end_matches("/mcp").parse().unwrap();
        HttpHost { child, addr, stderr }
    }

    /// Sends `message` on a new connection, in `session` if given; returns
    /// as soon as the response head is in (the body may still stream).
    async fn send(&self, session: Option<&str>, message: &Value) -> hyper::Response<Incoming> {
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
        let request = request.body(Full::new(Bytes::from(message.to_string()))).unwrap();
        tokio::time::timeout(PATIENCE, sender.send_request(request))
            .await
            .expect("the host answered in time")
            .expect("an HTTP response")
    }

    /// Sends `message` and reads the whole reply.
    async fn post(&self, session: Option<&str>, message: Value) -> Reply {
        let response = self.send(session, &message).await;
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
    async fn initialize(&self, capabilities: Value) -> Reply {
        let message = json!({ "jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": VERSION,
            "capabilities": capabilities,
            "clientInfo": { "name": "http-limits", "version": "1" },
        }});
        self.post(None, message).await
    }

    /// Opens a session ready for requests, and returns its id.
    async fn open_session(&self, capabilities: Value) -> String {
        let reply = self.initialize(capabilities).await;
        assert_eq!(reply.status, 200, "{reply:?}");
        let session = reply.session.expect("a session id");
        let initialized = json!({ "jsonrpc": "2.0", "method": "notifications/initialized" });
        assert_eq!(self.post(Some(&session), initialized).await.status, 202);
        session
    }

    /// Ends `session` (HTTP DELETE); returns the status.
    async fn close_session(&self, session: &str) -> u16 {
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
    async fn request(&self, session: &str, id: u64, method: &str, params: Value) -> Reply {
        self.post(Some(session), json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params }))
            .await
    }
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
    host.stderr
        .wait_for("the task's call to stop", |l| l.contains("call ended") && l.contains("wait_for_cancel"))
        .await;
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
    let ended = host
        .stderr
        .wait_for("the task's call to stop", |l| l.contains("call ended") && l.contains("wait_for_cancel"))
        .await;
    assert!(ended.contains("stop_reason=\"client-cancelled\""), "{ended}");
}
