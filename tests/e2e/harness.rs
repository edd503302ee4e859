//! Drives a real `mcp-wasm-host` process over stdio with rmcp's client.
//!
//! The host's stdout is tapped on its way to the client: every line must be
//! a JSON-RPC message (guest output must never reach it), and tests can ask
//! which responses went over the wire. The host logs with `--log-format
//! json`; its stderr is collected, each line parsed into an [`Event`], so
//! tests wait for events such as "call ended" and read their fields
//! instead of sleeping or matching text.
//!
//! The benchmarks include this file too; each uses only part of it.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResult, ClientCapabilities, ClientConfig, ClientRequest,
    ElicitRequestParams, ElicitResult, ElicitationAction, Implementation, JsonObject,
    ProgressNotificationParam, ProtocolVersion, Request, RequestId,
};
use rmcp::service::{
    NotificationContext, PeerRequestOptions, RequestContext, RequestHandle, RunningService, ServiceError,
};
use rmcp::{ClientHandler, ClientLifecycleMode, ClientServiceExt as _, ErrorData as McpError, RoleClient};
use serde_json::{Map, Value};
use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _, BufReader};
use tokio::process::{Child, Command};
use tokio::sync::Notify;

/// How long any single wait in a test may take before the test fails. Generous:
/// it only bounds a hang, it is not a performance assertion.
pub const PATIENCE: Duration = Duration::from_secs(20);

/// Path of the host binary cargo built for these tests.
pub fn host_binary() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_mcp-wasm-host"))
}

/// A guest component built by `just guests`. A missing fixture fails the test.
pub fn guest(name: &str) -> PathBuf {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("../target/guests/{name}.wasm"));
    assert!(
        path.is_file(),
        "missing test fixture {}: build it with `just guests` (cargo run -p xtask -- guests)",
        path.display()
    );
    path
}

/// Lines a process printed (or a client saw), shared with the tasks that
/// read them: text, or the host's log lines (see [`Log`]).
pub struct Lines<T = String> {
    lines: Mutex<Vec<T>>,
    changed: Notify,
}

impl<T> Default for Lines<T> {
    fn default() -> Self {
        Lines { lines: Mutex::default(), changed: Notify::new() }
    }
}

impl<T: Clone + std::fmt::Display> Lines<T> {
    /// Adds a line and wakes whoever waits for one.
    pub fn push(&self, line: T) {
        self.lines.lock().unwrap().push(line);
        self.changed.notify_waiters();
    }

    /// A copy of every line so far.
    pub fn all(&self) -> Vec<T> {
        self.lines.lock().unwrap().clone()
    }

    /// Waits until a line satisfies `pred`, and returns it.
    pub async fn wait_for(&self, what: &str, pred: impl Fn(&T) -> bool) -> T {
        self.wait_until(what, |lines| lines.iter().find(|l| pred(l)).cloned()).await
    }

    /// Waits until `check` over all lines so far returns something.
    pub async fn wait_until<R>(&self, what: &str, check: impl Fn(&[T]) -> Option<R>) -> R {
        self.wait_until_within(what, PATIENCE, check).await
    }

    /// [`Self::wait_until`], for up to `patience` (for what waits on a
    /// cold compile, whose time grows with the machine's load).
    pub async fn wait_until_within<R>(
        &self,
        what: &str,
        patience: Duration,
        check: impl Fn(&[T]) -> Option<R>,
    ) -> R {
        let wait = async {
            loop {
                let notified = self.changed.notified();
                if let Some(found) = check(&self.lines.lock().unwrap()) {
                    return found;
                }
                notified.await;
            }
        };
        match tokio::time::timeout(patience, wait).await {
            Ok(found) => found,
            Err(_) => panic!("timed out waiting for {what}; lines so far:\n{}", self.dump()),
        }
    }

    /// Every line so far, one per line, for a failure message.
    pub fn dump(&self) -> String {
        self.all().iter().map(ToString::to_string).collect::<Vec<_>>().join("\n")
    }
}

/// What the host wrote to stderr, line by line.
pub type Log = Lines<LogLine>;

/// One line of the host's stderr.
#[derive(Clone, Debug)]
pub enum LogLine {
    /// A log event (`--log-format json`).
    Event(Event),
    /// Anything else, kept as is: a panic, a fatal error, the `--http`
    /// address, or any line of `--log-format text`.
    Text(String),
}

impl LogLine {
    /// Parses a line: a JSON object with `fields` is an event.
    pub fn parse(line: String) -> LogLine {
        Event::parse(&line).map_or(LogLine::Text(line), LogLine::Event)
    }

    /// The event, if the line is one.
    pub fn event(&self) -> Option<&Event> {
        match self {
            LogLine::Event(event) => Some(event),
            LogLine::Text(_) => None,
        }
    }

    /// The line as the host wrote it.
    pub fn text(&self) -> &str {
        match self {
            LogLine::Event(event) => &event.line,
            LogLine::Text(text) => text,
        }
    }
}

impl std::fmt::Display for LogLine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.text())
    }
}

/// One event from the host's log: a line of `--log-format json`,
/// `{"timestamp", "level", "fields": {"message", ...}, "target", "span"}`.
#[derive(Clone, Debug)]
pub struct Event {
    /// `ERROR`, `WARN`, `INFO`, `DEBUG` or `TRACE`.
    pub level: String,
    /// The module that logged it, or `tool` for a tool's own output.
    pub target: String,
    /// The event's fields, its message under `message`.
    pub fields: Map<String, Value>,
    /// The fields of the span it was logged in (and its `name`), if any.
    pub span: Map<String, Value>,
    /// The line as the host wrote it, for failure messages.
    line: String,
}

impl Event {
    /// The event on `line`, if it is one.
    pub fn parse(line: &str) -> Option<Event> {
        let Ok(Value::Object(mut map)) = serde_json::from_str::<Value>(line) else { return None };
        let Some(Value::Object(fields)) = map.remove("fields") else { return None };
        let string =
            |value: Option<Value>| value.and_then(|v| v.as_str().map(str::to_string)).unwrap_or_default();
        let span = match map.remove("span") {
            Some(Value::Object(span)) => span,
            _ => Map::new(),
        };
        Some(Event {
            level: string(map.remove("level")),
            target: string(map.remove("target")),
            fields,
            span,
            line: line.to_string(),
        })
    }

    /// Its message.
    pub fn message(&self) -> &str {
        self.str("message").unwrap_or_default()
    }

    /// A field's value, if it is a string.
    pub fn str(&self, field: &str) -> Option<&str> {
        self.fields.get(field).and_then(Value::as_str)
    }

    /// A field's value, if it is a whole number.
    pub fn u64(&self, field: &str) -> Option<u64> {
        self.fields.get(field).and_then(Value::as_u64)
    }

    /// A field's value, if it is true or false.
    pub fn bool(&self, field: &str) -> Option<bool> {
        self.fields.get(field).and_then(Value::as_bool)
    }

    /// Whether this is the host's `call ended` event for a call of `tool`.
    pub fn is_call_ended(&self, tool: &str) -> bool {
        self.message() == "call ended" && self.str("tool") == Some(tool)
    }
}

impl std::fmt::Display for Event {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.line)
    }
}

impl Lines<LogLine> {
    /// Adds a line the host wrote, parsed.
    pub fn push_line(&self, line: String) {
        self.push(LogLine::parse(line));
    }

    /// Every event so far.
    pub fn events(&self) -> Vec<Event> {
        self.lines.lock().unwrap().iter().filter_map(LogLine::event).cloned().collect()
    }

    /// How many `message` events so far were about `tool`.
    pub fn count_for_tool(&self, message: &str, tool: &str) -> usize {
        self.events().iter().filter(|e| e.message() == message && e.str("tool") == Some(tool)).count()
    }

    /// Waits until an event satisfies `pred`, and returns it.
    pub async fn wait_for_event(&self, what: &str, pred: impl Fn(&Event) -> bool) -> Event {
        self.wait_for_event_within(what, PATIENCE, pred).await
    }

    /// [`Self::wait_for_event`], for up to `patience`.
    pub async fn wait_for_event_within(
        &self,
        what: &str,
        patience: Duration,
        pred: impl Fn(&Event) -> bool,
    ) -> Event {
        self.wait_until_within(what, patience, |lines| {
            lines.iter().filter_map(LogLine::event).find(|e| pred(e)).cloned()
        })
        .await
    }

    /// Waits until at least `count` events satisfy `pred`, and returns them all.
    pub async fn wait_for_events(
        &self,
        what: &str,
        count: usize,
        pred: impl Fn(&Event) -> bool,
    ) -> Vec<Event> {
        self.wait_until(what, |lines| {
            // Counted before copied: benchmarks time this wait.
            let matching = || lines.iter().filter_map(LogLine::event).filter(|e| pred(e));
            (matching().count() >= count).then(|| matching().cloned().collect())
        })
        .await
    }
}

/// What the test client says to an approval request (a form with an
/// `approve` field).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Approval {
    /// Accept the form with `approve: true`.
    #[default]
    Approve,
    /// Accept the form with `approve: false`.
    Deny,
    /// The `decline` action.
    Decline,
}

/// The test's MCP client: declares elicitation, answers each question with
/// `answer N` and each approval request as `approval` says (or, from
/// question `hold_from` on, never answers and waits to be told the question
/// was withdrawn), and records what it sees in `events`: `elicit N:
/// MESSAGE`, `withdrawn N`, `progress P/T`, `log LEVEL DATA`, `tools/list_changed`,
/// `resources/list_changed`, `prompts/list_changed`, `updated URI`.
#[derive(Clone)]
pub struct TestClient {
    /// What the client saw, one line per event.
    pub events: Arc<Lines>,
    questions: Arc<AtomicUsize>,
    hold_from: Arc<AtomicUsize>,
    approval: Arc<Mutex<Approval>>,
    /// The content it accepts forms with, instead of `answer N`.
    form_content: Arc<Mutex<Option<Value>>>,
    /// Capabilities it declares.
    capabilities: ClientCapabilities,
}

impl Default for TestClient {
    fn default() -> Self {
        TestClient::declaring(ClientCapabilities::builder().enable_elicitation().build())
    }
}

impl TestClient {
    /// A client that declares `capabilities`.
    pub fn declaring(capabilities: ClientCapabilities) -> Self {
        TestClient {
            events: Arc::default(),
            questions: Arc::default(),
            hold_from: Arc::default(),
            approval: Arc::default(),
            form_content: Arc::default(),
            capabilities,
        }
    }

    /// Accept every form (but approvals) with `content` from now on.
    pub fn answer_forms_with(&self, content: Value) {
        *self.form_content.lock().unwrap() = Some(content);
    }

    /// From question `n` (1-based) on, hold the question open until withdrawn.
    pub fn hold_from(&self, n: usize) {
        self.hold_from.store(n, Ordering::SeqCst);
    }

    /// How to answer approval requests from now on.
    pub fn answer_approvals(&self, approval: Approval) {
        *self.approval.lock().unwrap() = approval;
    }

    /// The answer to elicitation `request` (numbered `n`), as scripted.
    pub fn answer(&self, n: usize, request: &ElicitRequestParams) -> ElicitResult {
        let is_approval = match request {
            ElicitRequestParams::FormElicitationParams { requested_schema, .. } => {
                serde_json::to_value(requested_schema).unwrap()["properties"].get("approve").is_some()
            }
            _ => false,
        };
        if !is_approval {
            let mut result = ElicitResult::new(ElicitationAction::Accept);
            let scripted = self.form_content.lock().unwrap().clone();
            result.content =
                Some(scripted.unwrap_or_else(|| serde_json::json!({ "answer": format!("answer {n}") })));
            return result;
        }
        match *self.approval.lock().unwrap() {
            Approval::Decline => ElicitResult::new(ElicitationAction::Decline),
            verdict => {
                let mut result = ElicitResult::new(ElicitationAction::Accept);
                result.content = Some(serde_json::json!({ "approve": verdict == Approval::Approve }));
                result
            }
        }
    }

    /// Records elicitation `request` as `elicit N: MESSAGE` and returns N.
    pub fn record(&self, request: &ElicitRequestParams) -> usize {
        let n = self.questions.fetch_add(1, Ordering::SeqCst) + 1;
        let message = match request {
            ElicitRequestParams::FormElicitationParams { message, .. } => message.clone(),
            ElicitRequestParams::UrlElicitationParams { message, .. } => message.clone(),
            _ => String::new(),
        };
        self.events.push(format!("elicit {n}: {message}"));
        n
    }
}

impl ClientHandler for TestClient {
    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(self.capabilities.clone(), Implementation::new("mcp-wasm-host-e2e", "1.0.0"))
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, McpError> {
        let n = self.record(&request);
        let hold_from = self.hold_from.load(Ordering::SeqCst);
        if hold_from != 0 && n >= hold_from {
            // rmcp cancels this token when the server sends notifications/cancelled.
            context.ct.cancelled().await;
            self.events.push(format!("withdrawn {n}"));
            return Err(McpError::internal_error("withdrawn", None));
        }
        Ok(self.answer(n, &request))
    }

    /// Sampling: answers `sampled: PROMPT` as the model `test-model`.
    #[allow(deprecated)]
    async fn create_message(
        &self,
        params: rmcp::model::CreateMessageRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<rmcp::model::CreateMessageResult, McpError> {
        let asked = serde_json::to_value(&params).unwrap();
        let prompt = asked["messages"][0]["content"]["text"].as_str().unwrap_or_default();
        self.events.push(format!("sample: {prompt}"));
        let answer = serde_json::json!({
            "model": "test-model",
            "role": "assistant",
            "content": { "type": "text", "text": format!("sampled: {prompt}") }
        });
        Ok(serde_json::from_value(answer).unwrap())
    }

    /// Roots: one, `file:///work/project`, named `project`.
    #[allow(deprecated)]
    async fn list_roots(
        &self,
        _context: RequestContext<RoleClient>,
    ) -> Result<rmcp::model::ListRootsResult, McpError> {
        self.events.push("roots".into());
        Ok(serde_json::from_value(serde_json::json!({
            "roots": [{ "uri": "file:///work/project", "name": "project" }]
        }))
        .unwrap())
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.events.push("tools/list_changed".into());
    }

    async fn on_resource_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.events.push("resources/list_changed".into());
    }

    async fn on_prompt_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.events.push("prompts/list_changed".into());
    }

    async fn on_resource_updated(
        &self,
        params: rmcp::model::ResourceUpdatedNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.events.push(format!("updated {}", params.uri));
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let total = params.total.map(|t| t.to_string()).unwrap_or_default();
        self.events.push(format!("progress {}/{total}", params.progress));
    }

    #[allow(deprecated)]
    async fn on_logging_message(
        &self,
        params: rmcp::model::LoggingMessageNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let level = serde_json::to_value(params.level).unwrap_or_default();
        self.events.push(format!("log {} {}", level.as_str().unwrap_or("?"), params.data));
    }
}

/// A running host and an rmcp client connected to it.
pub struct Host {
    /// The MCP client session.
    pub client: RunningService<RoleClient, TestClient>,
    /// The client's handler: its script and what it saw.
    pub test_client: TestClient,
    /// The host process.
    pub child: Child,
    /// Every JSON message the host wrote to stdout.
    pub wire: Arc<Lines>,
    /// Every line the host wrote to stderr.
    pub stderr: Arc<Log>,
    /// Lines on stdout that were not JSON-RPC (must stay empty).
    pub garbage: Arc<Lines>,
}

/// Options for starting a host.
pub struct Start {
    /// Arguments after the binary name.
    pub args: Vec<String>,
    /// `RUST_LOG` for the host.
    pub rust_log: String,
    /// Log with `--log-format json`, so `Host::stderr` holds events (off
    /// for a program that does not take the flag, or a test of the text log).
    pub json_log: bool,
    /// More environment variables for the child.
    pub env: Vec<(String, String)>,
    /// Run this program instead of the host (a baseline server in benchmarks).
    pub program: PathBuf,
    /// Record stdout frames for assertions (benchmarks turn it off to time
    /// the bare pipe).
    pub tap_stdout: bool,
    /// The client: what it declares and how it answers.
    pub client: TestClient,
    /// How the client opens the session: `initialize` (up to 2025-11-25) or
    /// `server/discover` on 2026-07-28.
    pub discover: bool,
}

impl Start {
    /// Serve `component` with extra `args`.
    pub fn new(component: &str, args: &[&str]) -> Self {
        let mut all = vec!["--component".to_string(), guest(component).display().to_string()];
        all.extend(args.iter().map(|a| a.to_string()));
        Start {
            args: all,
            rust_log: "mcp_wasm_host=debug,info".into(),
            json_log: true,
            env: Vec::new(),
            program: host_binary(),
            tap_stdout: true,
            client: TestClient::default(),
            discover: false,
        }
    }

    /// Connects with `client` instead of the default one.
    pub fn client(mut self, client: TestClient) -> Self {
        self.client = client;
        self
    }

    /// Opens a 2026-07-28 session with `server/discover` (no `initialize`).
    pub fn discover(mut self) -> Self {
        self.discover = true;
        self
    }

    /// Logs at `filter` instead (benchmarks keep logging off the hot path).
    pub fn log(mut self, filter: &str) -> Self {
        self.rust_log = filter.into();
        self
    }

    /// Logs as text (`--log-format text`, the default) instead of JSON.
    pub fn text_log(mut self) -> Self {
        self.json_log = false;
        self
    }
}

impl Host {
    /// Starts the host with `start.args` and connects a client.
    pub async fn start(start: Start) -> Host {
        let log_format: &[&str] = if start.json_log { &["--log-format", "json"] } else { &[] };
        let mut child = Command::new(&start.program)
            .args(log_format)
            .args(&start.args)
            .env("RUST_LOG", &start.rust_log)
            .env("NO_COLOR", "1")
            .envs(start.env.iter().map(|(key, value)| (key, value)))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("spawning mcp-wasm-host");
        let stdin = child.stdin.take().unwrap();
        let stdout = child.stdout.take().unwrap();
        let stderr = child.stderr.take().unwrap();

        let wire = Arc::new(Lines::default());
        let garbage = Arc::new(Lines::default());
        let stderr_lines = Arc::new(Log::default());

        {
            let stderr_lines = stderr_lines.clone();
            tokio::spawn(async move {
                let mut lines = BufReader::new(stderr).lines();
                while let Ok(Some(line)) = lines.next_line().await {
                    stderr_lines.push_line(line);
                }
            });
        }
        let test_client = start.client.clone();
        let lifecycle = if start.discover {
            ClientLifecycleMode::Discover { preferred_versions: vec![ProtocolVersion::V_2026_07_28] }
        } else {
            ClientLifecycleMode::Initialize
        };
        let client = if start.tap_stdout {
            Self::tapped(test_client.clone(), stdout, stdin, &wire, &garbage, lifecycle).await
        } else {
            test_client
                .clone()
                .serve_with_lifecycle((stdout, stdin), lifecycle)
                .await
                .expect("MCP session start")
        };
        Host { client, test_client, child, wire, stderr: stderr_lines, garbage }
    }

    /// Connects a client through a tap on stdout: each frame is recorded,
    /// then handed to the client.
    async fn tapped(
        handler: TestClient,
        stdout: tokio::process::ChildStdout,
        stdin: tokio::process::ChildStdin,
        wire: &Arc<Lines>,
        garbage: &Arc<Lines>,
        lifecycle: ClientLifecycleMode,
    ) -> RunningService<RoleClient, TestClient> {
        let (client_read, mut tap_write) = tokio::io::duplex(1 << 20);
        {
            let (wire, garbage) = (wire.clone(), garbage.clone());
            tokio::spawn(async move {
                let mut lines = BufReader::new(stdout).lines();
                while let Ok(Some(line)) = lines.next_line().await {
                    match serde_json::from_str::<Value>(&line) {
                        Ok(Value::Object(map)) if map.get("jsonrpc").is_some() => wire.push(line.clone()),
                        _ => garbage.push(line.clone()),
                    }
                    if tap_write.write_all(format!("{line}\n").as_bytes()).await.is_err() {
                        break;
                    }
                }
            });
        }
        handler.serve_with_lifecycle((client_read, stdin), lifecycle).await.expect("MCP session start")
    }

    /// Calls `tool` and waits for its result.
    pub async fn call(&self, tool: &str, arguments: Value) -> Result<CallToolResult, ServiceError> {
        let params = params(tool, arguments);
        tokio::time::timeout(PATIENCE, self.client.peer().call_tool(params))
            .await
            .expect("tools/call did not answer in time")
    }

    /// Sends a `tools/call` without waiting; the handle can cancel it.
    pub async fn start_call(&self, tool: &str, arguments: Value) -> RequestHandle<RoleClient> {
        let request = ClientRequest::CallToolRequest(Request::new(params(tool, arguments)));
        self.client
            .peer()
            .send_request_with_option(request, PeerRequestOptions::no_options())
            .await
            .expect("sending tools/call")
    }

    /// Waits for the host's "call ended" event for a call of `tool`, and returns it.
    pub async fn call_ended(&self, tool: &str) -> Event {
        self.stderr.wait_for_event(&format!("the end of a `{tool}` call"), |e| e.is_call_ended(tool)).await
    }

    /// How many responses (results or errors) the host sent for request `id`.
    pub fn responses_to(&self, id: &RequestId) -> usize {
        let id = serde_json::to_value(id).unwrap();
        self.wire
            .all()
            .iter()
            .filter_map(|line| serde_json::from_str::<Value>(line).ok())
            .filter(|msg| msg.get("method").is_none() && msg.get("id") == Some(&id))
            .count()
    }

    /// Closes the session from the client side (the host's stdin closes) and
    /// returns the process and its stderr lines.
    pub async fn disconnect(self) -> (Child, Arc<Log>) {
        self.client.cancel().await.expect("closing the client");
        (self.child, self.stderr)
    }

    /// Reads the host's `mcp-wasm-host://status` resource (live counts).
    pub async fn status(&self) -> Value {
        let read = self
            .client
            .peer()
            .read_resource(rmcp::model::ReadResourceRequestParams::new("mcp-wasm-host://status"))
            .await
            .expect("reading the status resource");
        match &read.contents[0] {
            rmcp::model::ResourceContents::TextResourceContents { text, .. } => {
                serde_json::from_str(text).expect("status is JSON")
            }
            other => panic!("status is text, got {other:?}"),
        }
    }

    /// Waits until no call, store or client request is live; returns the status.
    pub async fn wait_until_idle(&self) -> Value {
        let wait = async {
            loop {
                let now = self.status().await;
                if now["live_calls"] == 0
                    && now["live_stores"] == 0
                    && now["open_client_requests"] == 0
                    && now["paused_calls"] == 0
                    && now["leases"] == 0
                {
                    return now;
                }
                // A returned call's store is reset in the background.
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        };
        tokio::time::timeout(PATIENCE, wait).await.expect("the host went back to idle")
    }

    /// Asserts stdout carried nothing but JSON-RPC messages.
    pub fn assert_clean_stdout(&self) {
        let garbage = self.garbage.all();
        assert!(garbage.is_empty(), "non-protocol lines on stdout: {garbage:?}");
    }
}

/// The resident memory of process `pid`, in KiB, from /proc.
pub fn rss_kib(pid: u32) -> u64 {
    proc_kib(pid, "status", "VmRSS:")
}

/// The figure after `field` in `/proc/<pid>/<file>` (in KiB there), or 0.
pub fn proc_kib(pid: u32, file: &str, field: &str) -> u64 {
    let text = std::fs::read_to_string(format!("/proc/{pid}/{file}")).unwrap_or_default();
    text.lines()
        .find_map(|line| line.strip_prefix(field))
        .and_then(|rest| rest.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

/// The `inputResponses` a client sends to answer approval question `key`.
pub fn approval_answer(key: &str, approve: bool) -> rmcp::model::InputResponses {
    rmcp::model::InputResponses::from([(
        key.to_string(),
        serde_json::json!({ "action": "accept", "content": { "approve": approve } }),
    )])
}

/// The id of the task a `tools/call` became (the tasks extension).
pub fn task_id(response: rmcp::model::CallToolResponse) -> String {
    match response {
        rmcp::model::CallToolResponse::Task(created) => created.task.task_id,
        other => panic!("expected a task, got {other:?}"),
    }
}

/// `tools/call` params for `tool` with `arguments` (an object, or null for none).
pub fn params(tool: &str, arguments: Value) -> CallToolRequestParams {
    let mut params = CallToolRequestParams::new(tool.to_string());
    params.arguments = match arguments {
        Value::Object(map) => Some(map),
        Value::Null => None,
        other => panic!("arguments must be an object, got {other}"),
    };
    params
}

/// The text of the first content block of a result.
pub fn text_of(result: &CallToolResult) -> String {
    result.content.first().and_then(|c| c.as_text()).map(|t| t.text.clone()).unwrap_or_default()
}

/// Waits until the guest has created a lock file in `dir`, and returns its name.
pub async fn wait_for_lock(dir: &Path) -> String {
    let wait = async {
        loop {
            if let Some(lock) = files_in(dir).into_iter().find(|f| f.ends_with(".lock")) {
                return lock;
            }
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    };
    tokio::time::timeout(PATIENCE, wait)
        .await
        .unwrap_or_else(|_| panic!("no lock file appeared in {}", dir.display()))
}

/// Files in `dir`, sorted.
pub fn files_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// A loopback HTTP/1.1 server for tests of tools' outgoing requests. It
/// records every connection in `events` (`connected N`, `request N: LINE`,
/// `closed N`), so a test can tell whether a request reached it at all.
pub struct TestServer {
    /// The port it listens on, at 127.0.0.1.
    pub port: u16,
    /// What it saw, one line per event.
    pub events: Arc<Lines>,
    accept: tokio::task::JoinHandle<()>,
}

impl TestServer {
    /// Answers every request with `200 OK` and `body`.
    pub async fn answering(body: &str) -> TestServer {
        Self::start(Some(body.to_string())).await
    }

    /// Reads requests and never answers, until the client goes away.
    pub async fn silent() -> TestServer {
        Self::start(None).await
    }

    async fn start(body: Option<String>) -> TestServer {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("binding a test server");
        let port = listener.local_addr().unwrap().port();
        let events = Arc::new(Lines::default());
        let seen = events.clone();
        let accept = tokio::spawn(async move {
            for n in 1.. {
                let Ok((socket, _)) = listener.accept().await else { return };
                seen.push(format!("connected {n}"));
                tokio::spawn(Self::serve(n, socket, body.clone(), seen.clone()));
            }
        });
        TestServer { port, events, accept }
    }

    async fn serve(n: usize, socket: tokio::net::TcpStream, body: Option<String>, seen: Arc<Lines>) {
        let (read, mut write) = socket.into_split();
        let mut read = BufReader::new(read);
        let mut line = String::new();
        if read.read_line(&mut line).await.unwrap_or(0) == 0 {
            seen.push(format!("closed {n}"));
            return;
        }
        seen.push(format!("request {n}: {}", line.trim_end()));
        // Skip the headers; the tools under test send no body.
        loop {
            line.clear();
            if read.read_line(&mut line).await.unwrap_or(0) == 0 || line == "\r\n" {
                break;
            }
        }
        if let Some(body) = body {
            let response = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = write.write_all(response.as_bytes()).await;
        }
        // Wait for the client to close its side (EOF or a reset).
        let mut rest = Vec::new();
        let _ = tokio::io::AsyncReadExt::read_to_end(&mut read, &mut rest).await;
        seen.push(format!("closed {n}"));
    }

    /// How many connections it accepted.
    pub fn connections(&self) -> usize {
        self.events.all().iter().filter(|e| e.starts_with("connected")).count()
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.accept.abort();
    }
}

/// An unused JSON object, for tools without arguments.
/// Runs `command` to its end with stdin held open, as a connected client
/// that never writes does; returns what it printed.
///
/// The host answers the protocol while its components load, so with stdin
/// closed it would stop for the closed input before a broken component is
/// found: a client that is still there hears about the component.
pub fn run_with_stdin_open(command: &mut std::process::Command) -> std::process::Output {
    let mut child = command
        .env("NO_COLOR", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("running mcp-wasm-host");
    // Held open, then closed after a minute: a host that went on serving
    // when it should have stopped ends at its closed input, and the test
    // fails on what it printed rather than hanging.
    let stdin = child.stdin.take();
    std::thread::spawn(move || {
        std::thread::sleep(Duration::from_secs(60));
        drop(stdin);
    });
    child.wait_with_output().expect("waiting for mcp-wasm-host")
}

pub fn no_args() -> Value {
    Value::Object(JsonObject::new())
}

/// An HTTP/1.1 endpoint on a free loopback port that hands the body of
/// every request to `take` and answers `200` with no body, request after
/// request on kept-alive connections (an OTLP/HTTP collector, as far as an
/// exporter can tell). Returns its base URL.
pub async fn serve_posts(take: impl Fn(Vec<u8>) + Clone + Send + Sync + 'static) -> String {
    use tokio::io::AsyncReadExt as _;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let take = take.clone();
            tokio::spawn(async move {
                let mut stream = BufReader::new(stream);
                loop {
                    let (mut length, mut line) = (0usize, String::new());
                    loop {
                        line.clear();
                        if stream.read_line(&mut line).await.unwrap_or(0) == 0 {
                            return;
                        }
                        if line == "\r\n" {
                            break;
                        }
                        if let Some((name, value)) = line.split_once(':')
                            && name.eq_ignore_ascii_case("content-length")
                        {
                            length = value.trim().parse().unwrap_or(0);
                        }
                    }
                    let mut body = vec![0; length];
                    if stream.read_exact(&mut body).await.is_err() {
                        return;
                    }
                    take(body);
                    let answer = "HTTP/1.1 200 OK\r\ncontent-type: application/x-protobuf\r\ncontent-length: 0\r\n\r\n";
                    if stream.get_mut().write_all(answer.as_bytes()).await.is_err() {
                        return;
                    }
                }
            });
        }
    });
    url
}

/// Waits until something listens at `addr` (a server `what` just started).
pub async fn listening(addr: std::net::SocketAddr, what: &str) {
    let up = async {
        while tokio::net::TcpStream::connect(addr).await.is_err() {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    };
    tokio::time::timeout(PATIENCE, up).await.unwrap_or_else(|_| panic!("{what} listens at {addr}"));
}

/// A `redis-server` of a test's (or a bench's) own, on loopback, keeping
/// nothing on disk: the task store replicas share (`--task-store`).
pub struct Redis {
    child: Child,
    /// The URL `--task-store` takes.
    pub url: String,
}

impl Redis {
    /// Starts one on a free port and waits until it listens.
    pub async fn start() -> Redis {
        let server = ["/usr/bin/redis-server", "/usr/local/bin/redis-server"]
            .into_iter()
            .map(PathBuf::from)
            .find(|path| path.exists())
            .expect("redis-server is not installed: run scripts/setup.sh --with-node (it installs Debian's redis-server)");
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let child = Command::new(server)
            .args(["--bind", "127.0.0.1", "--port", &port.to_string(), "--save", "", "--appendonly", "no"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("spawning redis-server");
        listening(([127, 0, 0, 1], port).into(), "redis-server").await;
        Redis { child, url: format!("redis://127.0.0.1:{port}/0") }
    }
}

impl Drop for Redis {
    fn drop(&mut self) {
        let _ = self.child.start_kill();
    }
}
