//! Hostile guests: each misbehaviour gets a clear error, the host survives,
//! a call running at the same time is unaffected and the next call is served.

use std::time::{Duration, Instant};

use rmcp::model::{
    ArgumentInfo, CallToolResult, ClientCapabilities, CompleteRequestParams, GetPromptRequestParams,
    Reference,
};
use serde_json::{Value, json};

use crate::harness::{Host, PATIENCE, Start, TestClient, TestServer, guest, no_args, rss_kib, text_of};
use crate::offers::{read as offer_read, text as offer_text};

/// The hostile component beside the demo (for well-behaved neighbour calls).
fn hostile(extra: &[&str]) -> Start {
    let mut start = Start::new("hostile", extra);
    start.args.extend(["--component".to_string(), guest("demo").display().to_string()]);
    start
}

/// Runs `tool` while a well-behaved call runs beside it; returns the hostile
/// call's error text after checking the neighbour and the next call are fine.
async fn survive(host: &Host, tool: &str, args: Value) -> String {
    let hostile = beside_a_neighbour(host, tool, args).await;
    assert_eq!(hostile.is_error, Some(true), "{hostile:?}");
    text_of(&hostile)
}

/// Runs `tool` while a well-behaved call runs beside it; returns the hostile
/// call's result after checking the neighbour and the next call are fine.
async fn beside_a_neighbour(host: &Host, tool: &str, args: Value) -> CallToolResult {
    let neighbour = host.client.peer().call_tool({
        let mut p = rmcp::model::CallToolRequestParams::new("countdown");
        p.arguments = json!({ "steps": 5, "step_ms": 10 }).as_object().cloned();
        p
    });
    let (hostile, neighbour) = tokio::join!(host.call(tool, args), neighbour);
    let hostile = hostile.expect("the hostile call gets a result, not a protocol error");
    assert_eq!(text_of(&neighbour.unwrap()), "counted down from 5", "the neighbour call is unaffected");
    let next = host.call("echo", json!({ "text": "next" })).await.unwrap();
    assert_eq!(text_of(&next), "next", "the next call is served");
    hostile
}

/// The host's resident memory, sampled every few milliseconds while a
/// test runs something, to see how far a bomb pushed it.
struct RssWatch {
    before_kib: u64,
    peak: tokio::task::JoinHandle<u64>,
    stop: tokio_util::sync::CancellationToken,
}

impl RssWatch {
    fn start(host: &Host) -> Self {
        let pid = host.child.id().expect("the host is running");
        let before_kib = rss_kib(pid);
        let stop = tokio_util::sync::CancellationToken::new();
        let stopped = stop.clone();
        let peak = tokio::spawn(async move {
            let mut peak = before_kib;
            while !stopped.is_cancelled() {
                peak = peak.max(rss_kib(pid));
                tokio::time::sleep(Duration::from_millis(2)).await;
            }
            peak
        });
        RssWatch { before_kib, peak, stop }
    }

    /// How far above its starting point the host's RSS went, in MiB.
    async fn growth_mib(self) -> u64 {
        self.stop.cancel();
        let peak = self.peak.await.unwrap();
        let growth = peak.saturating_sub(self.before_kib) / 1024;
        eprintln!(
            "rss: {} MiB before, {} MiB at the peak (+{growth} MiB)",
            self.before_kib / 1024,
            peak / 1024
        );
        growth
    }
}

/// The `Threads:` count of process `pid`, from /proc.
fn threads_of(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|line| line.strip_prefix("Threads:"))
        .and_then(|rest| rest.trim().parse().ok())
        .unwrap_or(0)
}

#[tokio::test]
async fn a_memory_bomb_hits_the_memory_limit() {
    let host = Host::start(hostile(&["--max-memory", "64MiB"])).await;
    let message = survive(&host, "memory_bomb", no_args()).await;
    assert!(message.contains("memory limit of 64 MiB (--max-memory)"), "{message}");
}

#[tokio::test]
async fn endless_recursion_is_stopped() {
    let host = Host::start(hostile(&[])).await;
    let message = survive(&host, "recurse", no_args()).await;
    assert!(message.contains("stack"), "{message}");
}

#[tokio::test]
async fn a_panic_is_reported_as_a_crash() {
    let host = Host::start(hostile(&[])).await;
    let message = survive(&host, "panic", no_args()).await;
    assert!(message.contains("tool `panic` crashed") && message.contains("panicked"), "{message}");
    host.stderr
        .wait_for_event("the guest's panic message on stderr", |e| {
            e.target == "tool"
                && e.str("stream") == Some("stderr")
                && e.message().contains("hostile tool panics")
        })
        .await;
}

#[tokio::test]
async fn a_huge_result_is_refused_at_the_output_cap() {
    let host = Host::start(hostile(&["--max-output", "1MiB"])).await;
    let message = survive(&host, "huge_output", json!({ "mib": 8 })).await;
    assert!(message.contains("8 MiB is larger than its output limit of 1 MiB (--max-output)"), "{message}");
}

#[tokio::test]
async fn malformed_structured_content_is_an_error_naming_the_tool() {
    let host = Host::start(hostile(&[])).await;
    let message = survive(&host, "bad_json", no_args()).await;
    assert!(message.contains("tool `bad_json`") && message.contains("not valid JSON"), "{message}");
}

#[tokio::test]
async fn floods_of_logs_and_progress_are_thinned() {
    let host = Host::start(hostile(&[])).await;
    // rmcp's client puts a progress token on every request, so both floods
    // would reach it unthrottled.
    // The budgets are a burst then a rate (50 + 50/s for logs, 20 + 20/s
    // for progress): on a loaded machine a flood takes longer and earns
    // a little more, never thousands.
    let started = Instant::now();
    let logs = host.call("log_flood", no_args()).await.unwrap();
    let log_seconds = started.elapsed().as_secs_f64();
    assert_eq!(text_of(&logs), "flooded the log");
    let started = Instant::now();
    let progress = host.call("progress_flood", no_args()).await.unwrap();
    let progress_seconds = started.elapsed().as_secs_f64();
    assert_eq!(text_of(&progress), "flooded progress");
    let events = host.test_client.events.all();
    let logs = events.iter().filter(|e| e.starts_with("log")).count();
    let progress = events.iter().filter(|e| e.starts_with("progress")).count();
    let log_bound = (100.0f64).max(50.0 + 50.0 * log_seconds.ceil()) as usize;
    let progress_bound = (100.0f64).max(20.0 + 20.0 * progress_seconds.ceil()) as usize;
    assert!(logs <= log_bound, "{logs} of 100 000 log records reached the client in {log_seconds:.1} s");
    assert!(
        progress <= progress_bound,
        "{progress} of 100 000 progress reports reached the client in {progress_seconds:.1} s"
    );
    let ended = host.call_ended("log_flood").await;
    assert!(ended.u64("dropped_notes").is_some(), "{ended}");
    let stderr_lines = host.stderr.all().iter().filter(|l| l.text().contains("flood ")).count();
    assert!(stderr_lines <= log_bound, "{stderr_lines} flood lines reached the host's stderr");
}

#[tokio::test]
async fn files_outside_the_grant_are_out_of_reach() {
    let granted = tempfile::tempdir().unwrap();
    std::fs::write(granted.path().join("ok.txt"), "fine").unwrap();
    std::os::unix::fs::symlink("/etc/passwd", granted.path().join("escape")).unwrap();
    let grant = format!("{}::/data", granted.path().display());
    let host = Host::start(hostile(&["--dir", &grant])).await;
    let read = |path: &str| {
        let path = path.to_string();
        let host = &host;
        async move { text_of(&host.call("read_file", json!({ "path": path })).await.unwrap()) }
    };
    assert_eq!(read("/data/ok.txt").await, "read 4 bytes");
    for outside in ["/etc/passwd", "/data/../etc/passwd", "/data/escape", "../etc/passwd"] {
        let answer = read(outside).await;
        assert!(answer.starts_with("refused"), "{outside}: {answer}");
    }
}

#[tokio::test]
async fn only_granted_environment_variables_are_visible() {
    let host = Host::start(hostile(&["--env", "ONLY_THIS=1"])).await;
    let env = host.call("list_env", no_args()).await.unwrap();
    assert_eq!(text_of(&env), "ONLY_THIS=1");
}

/// A call's memory is reset before the next instance gets its slot: the
/// data image restored and the heap it dirtied (in more separate runs than
/// one pass of the reset handles) gone, one call after another and with
/// calls side by side.
#[tokio::test]
async fn a_call_finds_nothing_an_earlier_call_left_in_memory() {
    let host = Host::start(hostile(&["--max-concurrent-calls", "2"])).await;
    let clean = json!({ "image_words_changed": 0, "heap_marks": 0 });
    for round in 0..4 {
        let one = host.call("snoop", no_args()).await.unwrap();
        assert_eq!(serde_json::from_str::<Value>(&text_of(&one)).unwrap(), clean, "call {round}");
    }
    for round in 0..4 {
        let (a, b) = tokio::join!(host.call("snoop", no_args()), host.call("snoop", no_args()));
        for found in [a.unwrap(), b.unwrap()] {
            assert_eq!(serde_json::from_str::<Value>(&text_of(&found)).unwrap(), clean, "pair {round}");
        }
    }
}

#[tokio::test]
async fn a_cleanup_that_traps_is_logged_and_the_host_carries_on() {
    let host = Host::start(hostile(&["--timeout", "200ms"])).await;
    let message = survive(&host, "trap_in_cleanup", no_args()).await;
    assert!(message.contains("--timeout"), "{message}");
    let ended = host.call_ended("trap_in_cleanup").await;
    assert_eq!(ended.str("cleanup"), Some("failed"), "{ended}");
    host.stderr
        .wait_for_event("the cleanup trap in the log", |e| e.message().starts_with("cleanup trapped"))
        .await;
}

#[tokio::test]
async fn a_cleanup_that_never_returns_is_stopped() {
    // No fuel metering, so only the cleanup's deadline can stop it (with
    // fuel, --cleanup-fuel usually stops it first, as a trap).
    let host = Host::start(hostile(&[
        "--fuel",
        "0",
        "--timeout",
        "200ms",
        "--cleanup-timeout",
        "200ms",
        "--env",
        "HOSTILE_CLEANUP=loop",
    ]))
    .await;
    let message = survive(&host, "loop_in_cleanup", no_args()).await;
    assert!(message.contains("--timeout"), "{message}");
    let ended = host.call_ended("loop_in_cleanup").await;
    assert_eq!(ended.str("cleanup"), Some("failed"), "{ended}");
    host.stderr
        .wait_for_event("the stopped cleanup in the log", |e| e.message().contains("cleanup did not finish"))
        .await;
}

#[tokio::test]
async fn a_tool_cannot_pester_the_user_with_questions() {
    let host = Host::start(hostile(&["--max-questions", "5"])).await;
    let result = host.call("elicit_spam", no_args()).await.unwrap();
    let message = text_of(&result);
    assert!(
        message.starts_with("stopped after 5 questions") && message.contains("--max-questions"),
        "{message}"
    );
    let asked = host.test_client.events.all().iter().filter(|e| e.starts_with("elicit")).count();
    assert_eq!(asked, 5, "the client saw only the allowed questions");
    assert_eq!(host.wait_until_idle().await["open_client_requests"], 0);
}

/// A port on 127.0.0.1 other than `port` (nothing needs to listen there: a
/// request to it is refused before any connection).
fn other_port(port: u16) -> u16 {
    if port == u16::MAX { port - 1 } else { port + 1 }
}

#[tokio::test]
async fn a_granted_host_is_reached_over_wasi_http() {
    let server = TestServer::answering("hello from loopback").await;
    let grant = format!("127.0.0.1:{}", server.port);
    let host = Host::start(hostile(&["--allow-host", &grant])).await;
    let url = format!("http://127.0.0.1:{}/greeting", server.port);
    let fetched = host.call("fetch", json!({ "url": url })).await.unwrap();
    assert_eq!(text_of(&fetched), "status 200: hello from loopback", "{fetched:?}");
    server.events.wait_for("the request at the server", |e| e == "request 1: GET /greeting HTTP/1.1").await;
    // The grant is for that port only: the same host on another port is refused.
    let elsewhere = format!("http://127.0.0.1:{}/", other_port(server.port));
    let refused = host.call("fetch", json!({ "url": elsewhere })).await.unwrap();
    assert_eq!(refused.is_error, Some(true), "{refused:?}");
    assert_eq!(server.connections(), 1);
}

#[tokio::test]
async fn contacting_a_host_not_allowed_is_refused_before_any_connection() {
    let server = TestServer::answering("must not be served").await;
    let target = format!("127.0.0.1:{}", server.port);
    let other_port = format!("127.0.0.1:{}", other_port(server.port));
    let same_port_by_name = format!("localhost:{}", server.port);
    for grants in
        [vec![], vec!["--allow-host", other_port.as_str()], vec!["--allow-host", same_port_by_name.as_str()]]
    {
        let host = Host::start(hostile(&grants)).await;
        let message = survive(&host, "fetch", json!({ "url": format!("http://{target}/secret") })).await;
        assert!(message.contains("HttpRequestDenied"), "{grants:?}: {message}");
        let refusal = format!("{target} is not granted (allow it with --allow-host HOST[:PORT])");
        host.stderr.wait_for_event("the refusal in the host's log", |e| e.message().contains(&refusal)).await;
    }
    // Every call above has ended: a connection would have been made by now.
    assert_eq!(server.events.all(), Vec::<String>::new(), "a refused request reached the server");
}

#[tokio::test]
async fn raw_sockets_and_name_lookups_are_refused_even_with_an_http_grant() {
    let server = TestServer::answering("must not be served").await;
    let grant = format!("127.0.0.1:{}", server.port);
    let host = Host::start(hostile(&["--allow-host", &grant])).await;
    for addr in [grant.clone(), format!("localhost:{}", server.port)] {
        let result = host.call("connect_tcp", json!({ "addr": addr })).await.unwrap();
        let message = text_of(&result);
        assert!(message.starts_with("refused: "), "{addr}: {message}");
    }
    let next = host.call("echo", json!({ "text": "next" })).await.unwrap();
    assert_eq!(text_of(&next), "next");
    assert_eq!(server.events.all(), Vec::<String>::new(), "a raw socket reached the server");
}

#[tokio::test]
async fn cancelling_a_call_drops_its_outgoing_request() {
    let server = TestServer::silent().await;
    let grant = format!("127.0.0.1:{}", server.port);
    let host = Host::start(hostile(&["--allow-host", &grant])).await;
    let url = format!("http://{grant}/never-answered");
    let handle = host.start_call("fetch", json!({ "url": url })).await;
    server.events.wait_for("the request at the server", |e| e.starts_with("request 1:")).await;
    handle.cancel(Some("test cancels".into())).await.unwrap();
    let ended = host.call_ended("fetch").await;
    assert_eq!(ended.str("stop_reason"), Some("client-cancelled"), "{ended}");
    // The store is gone, and with it the request's task and its connection.
    server.events.wait_for("the connection to close", |e| e == "closed 1").await;
    let next = host.call("echo", json!({ "text": "next" })).await.unwrap();
    assert_eq!(text_of(&next), "next");
    assert_eq!(host.wait_until_idle().await["live_stores"], 0);
}

#[tokio::test]
async fn a_log_bomb_is_cut_to_size_and_bounded_in_bytes_time_and_memory() {
    let host = Host::start(hostile(&["--max-output", "1MiB", "--timeout", "10s"])).await;
    host.call("echo", json!({ "text": "warm" })).await.unwrap();
    let rss = RssWatch::start(&host);
    let started = Instant::now();
    let result = beside_a_neighbour(&host, "log_bomb", json!({ "mib": 16 })).await;
    let elapsed = started.elapsed();
    let growth = rss.growth_mib().await;
    let logs: Vec<String> = host
        .test_client
        .events
        .all()
        .into_iter()
        .filter(|e| e.starts_with("log info") && e.contains("xxxx"))
        .collect();
    let sent: usize = logs.iter().map(String::len).sum();
    eprintln!("log_bomb: {} records, {sent} bytes reached the client in {elapsed:?}", logs.len());
    assert_eq!(text_of(&result), "logged 50 records of 16 MiB", "{result:?}");

    // Each record reached the client cut to --max-log-record (16 KiB by
    // default), marked, and all of them within --max-notification-bytes.
    assert!(!logs.is_empty(), "some records reach the client");
    for log in &logs {
        assert!(log.len() < (16 << 10) + 100, "a record of {} bytes reached the client", log.len());
        let end = log.len().saturating_sub(40);
        assert!(log.contains("[cut 16760834 bytes]"), "the cut is marked: {}", log.get(end..).unwrap_or(log));
    }
    assert!(sent <= 1 << 20, "{sent} bytes of records reached the client (--max-notification-bytes 1MiB)");
    let ended = host.call_ended("log_bomb").await;
    assert!(ended.u64("dropped_notes") > Some(0), "notes past the budget are dropped and counted: {ended}");
    assert!(elapsed < Duration::from_secs(10), "the call took {elapsed:?}, past its --timeout of 10s");
    assert!(growth < 100, "the host's RSS grew by {growth} MiB");
}

#[tokio::test]
async fn an_error_result_counts_against_the_output_cap() {
    let host = Host::start(hostile(&["--max-output", "1MiB"])).await;
    host.call("echo", json!({ "text": "warm" })).await.unwrap();
    let rss = RssWatch::start(&host);
    let message = survive(&host, "error_bomb", json!({ "mib": 64 })).await;
    let growth = rss.growth_mib().await;
    assert!(
        message.contains("64 MiB is larger than its output limit of 1 MiB (--max-output)"),
        "{}",
        &message[..200]
    );
    // The guest's own 64 MiB and the host's one copy of it, lifted out of the
    // guest, are unavoidable; nothing more.
    assert!(growth < 2 * 64 + 40, "the host's RSS grew by {growth} MiB");
    let biggest = host.wire.all().iter().map(String::len).max().unwrap_or(0);
    assert!(biggest < 1 << 20, "a frame of {biggest} bytes went over the wire");
}

#[tokio::test]
async fn guest_stdout_is_capped_tagged_and_cannot_pose_as_a_host_log_line() {
    // The text log, the default: what a person reads, and where a forged
    // line could pass for one of the host's (in JSON it sits in `fields`).
    let host = Host::start(hostile(&[]).text_log()).await;
    let rss = RssWatch::start(&host);
    let result = beside_a_neighbour(&host, "stdout_bomb", json!({ "mib": 8 })).await;
    let growth = rss.growth_mib().await;
    // The guest's writes all succeeded: past the cap they are discarded.
    assert_eq!(text_of(&result), "printed 8 MiB", "{result:?}");
    let dropped = host
        .stderr
        .wait_for("the line saying how much output was dropped", |l| l.text().contains("--max-guest-output"))
        .await
        .to_string();
    assert!(dropped.contains("call_id=") && dropped.contains("64 KiB"), "{dropped}");
    let lines: Vec<String> = host.stderr.all().iter().map(ToString::to_string).collect();
    let guest_lines: Vec<&String> = lines.iter().filter(|l| l.contains("stream=")).collect();
    let guest_bytes: usize = guest_lines.iter().map(|l| l.len()).sum();
    // Each line carries its tags; 64 KiB of output plus ~100 bytes of tags per line.
    assert!(guest_bytes < 200 << 10, "{guest_bytes} bytes of guest output reached the host's stderr");
    for line in &lines {
        assert!(!line.contains(['\x1b', '\r', '\u{9b}']), "a raw control character reached stderr: {line:?}");
        if line.contains("FORGED") || line.contains("hostile line") {
            assert!(
                line.contains(" tool: ") && line.contains("call_id="),
                "an untagged guest line: {line:?}"
            );
        }
    }
    let escaped = r"hostile line 2\u{1b}[1A\u{1b}[2KFORGED cursor\rFORGED return\u{9b}2J";
    assert!(lines.iter().any(|l| l.contains(escaped)), "the control characters are escaped");
    host.assert_clean_stdout();
    assert!(growth < 50, "the host's RSS grew by {growth} MiB");
}

#[tokio::test]
async fn an_oversized_question_fails_before_it_reaches_the_client() {
    let capabilities: ClientCapabilities =
        serde_json::from_value(json!({ "elicitation": { "form": {}, "url": {} }, "sampling": {} })).unwrap();
    let host = Host::start(hostile(&[]).client(TestClient::declaring(capabilities))).await;
    for kind in ["message", "schema", "url", "sample"] {
        let rss = RssWatch::start(&host);
        let result = beside_a_neighbour(&host, "question_bomb", json!({ "kind": kind })).await;
        let growth = rss.growth_mib().await;
        let answer = text_of(&result);
        assert!(answer.contains("Failed(") && answer.contains("(--max-question)"), "{kind}: {answer}");
        assert!(growth < 50, "{kind}: the host's RSS grew by {growth} MiB");
    }
    let asked: Vec<String> = host
        .test_client
        .events
        .all()
        .into_iter()
        .filter(|e| e.starts_with("elicit") || e.starts_with("sample"))
        .map(|e| e.chars().take(80).collect())
        .collect();
    assert!(asked.is_empty(), "questions reached the client: {asked:?}");
    assert_eq!(host.wait_until_idle().await["open_client_requests"], 0);
}

#[tokio::test]
async fn opening_a_fifo_in_a_grant_is_refused_and_leaves_no_thread_behind() {
    let granted = tempfile::tempdir().unwrap();
    std::fs::write(granted.path().join("ok.txt"), "fine").unwrap();
    // Two FIFOs: opens for reading and for writing would meet in one and
    // unblock each other.
    for name in ["readers", "writers"] {
        let status = std::process::Command::new("mkfifo")
            .arg(granted.path().join(name))
            .status()
            .expect("running mkfifo");
        assert!(status.success(), "mkfifo failed");
    }
    let grant = format!("{}::/data", granted.path().display());
    let host = Host::start(hostile(&["--dir", &grant, "--timeout", "1s"])).await;
    let pid = host.child.id().unwrap();
    // A regular file opens as before (and warms the runtime's blocking pool).
    let read = host.call("read_file", json!({ "path": "/data/ok.txt" })).await.unwrap();
    assert_eq!(text_of(&read), "read 4 bytes");
    let baseline = threads_of(pid);
    let mut answers = Vec::new();
    for write in [false, false, true, true] {
        let started = Instant::now();
        let path = if write { "/data/writers" } else { "/data/readers" };
        let result = host.call("open_fifo", json!({ "path": path, "write": write })).await.unwrap();
        answers.push((write, text_of(&result), started.elapsed()));
    }
    // Every call has ended; no thread may be left blocked in the open.
    let wait = async {
        loop {
            if threads_of(pid) <= baseline {
                return;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    };
    let settled = tokio::time::timeout(PATIENCE, wait).await.is_ok();
    eprintln!("threads: {baseline} before the calls, {} after", threads_of(pid));
    for (write, answer, elapsed) in answers {
        assert!(answer.starts_with("refused: "), "write={write}: {answer}");
        assert!(elapsed < Duration::from_secs(1), "write={write}: took {elapsed:?}");
    }
    assert!(settled, "the host has {} threads, {baseline} before the calls", threads_of(pid));
    host.stderr
        .wait_for_event("the refusal in the host's log", |e| {
            e.message() == "refused to open a file that is not a regular file or a directory"
        })
        .await;
    let next = host.call("echo", json!({ "text": "next" })).await.unwrap();
    assert_eq!(text_of(&next), "next");
}

// ---- A grant by name reaches only public addresses (finding 5) ----
//
// On main, `--allow-host localhost:PORT` passed the name check and
// wasmtime-wasi-http resolved `localhost` again and connected to
// 127.0.0.1: the first test below got "status 200" and the server saw a
// connection.

#[tokio::test]
async fn a_name_grant_does_not_reach_a_loopback_address_it_resolves_to() {
    let server = TestServer::answering("must not be served").await;
    let grant = format!("localhost:{}", server.port);
    let host = Host::start(hostile(&["--allow-host", &grant])).await;
    let url = format!("http://localhost:{}/metadata", server.port);
    let message = survive(&host, "fetch", json!({ "url": url })).await;
    assert!(message.contains("HttpRequestDenied"), "{message}");
    let refusal = host
        .stderr
        .wait_for_event("the refusal in the host's log", |e| {
            e.message().contains("refused: localhost:") && e.message().contains("(loopback)")
        })
        .await;
    assert!(refusal.message().contains("--allow-private-addresses"), "the log names the opt-in: {refusal}");
    // Every call has ended: a connection would have been made by now.
    assert_eq!(server.events.all(), Vec::<String>::new(), "a refused request reached the server");
}

#[tokio::test]
async fn allow_private_addresses_lets_a_name_grant_reach_loopback() {
    let server = TestServer::answering("hello by name").await;
    let grant = format!("localhost:{}", server.port);
    let host = Host::start(hostile(&["--allow-host", &grant, "--allow-private-addresses"])).await;
    let url = format!("http://localhost:{}/greeting", server.port);
    let fetched = host.call("fetch", json!({ "url": url })).await.unwrap();
    assert_eq!(text_of(&fetched), "status 200: hello by name", "{fetched:?}");
    server.events.wait_for("the request at the server", |e| e == "request 1: GET /greeting HTTP/1.1").await;
}

#[tokio::test]
async fn allow_private_addresses_in_the_config_file_counts_per_component() {
    let server = TestServer::answering("hello from the config").await;
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("tools.toml");
    let toml = format!(
        "[[component]]\npath = {:?}\nallow_hosts = [\"localhost:{}\"]\nallow_private_addresses = true\n",
        guest("hostile").display().to_string(),
        server.port
    );
    std::fs::write(&config, toml).unwrap();
    let mut start = Start::new("demo", &[]);
    start.args.extend(["--config".to_string(), config.display().to_string()]);
    let host = Host::start(start).await;
    let url = format!("http://localhost:{}/", server.port);
    let fetched = host.call("fetch", json!({ "url": url })).await.unwrap();
    assert_eq!(text_of(&fetched), "status 200: hello from the config", "{fetched:?}");
}

#[tokio::test]
async fn a_literal_ip_grant_reaches_that_address_without_opting_in() {
    let server = TestServer::answering("hello by address").await;
    let grant = format!("127.0.0.1:{}", server.port);
    let host = Host::start(hostile(&["--allow-host", &grant])).await;
    let url = format!("http://127.0.0.1:{}/", server.port);
    let neighbour = host.call("echo", json!({ "text": "beside" }));
    let (fetched, neighbour) = tokio::join!(host.call("fetch", json!({ "url": url })), neighbour);
    assert_eq!(text_of(&fetched.unwrap()), "status 200: hello by address");
    assert_eq!(text_of(&neighbour.unwrap()), "beside");
}

#[tokio::test]
async fn https_to_a_name_goes_to_the_checked_address_and_names_the_host_for_tls() {
    // A raw listener: it records what the client sends first (a TLS
    // ClientHello) and closes; the handshake fails, which is fine here.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let hello = tokio::spawn(async move {
        let (mut socket, _) = listener.accept().await.unwrap();
        let mut buf = vec![0u8; 4096];
        let n = tokio::io::AsyncReadExt::read(&mut socket, &mut buf).await.unwrap();
        buf.truncate(n);
        buf
    });
    let grant = format!("localhost:{port}");
    let host = Host::start(hostile(&["--allow-host", &grant, "--allow-private-addresses"])).await;
    let url = format!("https://localhost:{port}/");
    let failed = host.call("fetch", json!({ "url": url })).await.unwrap();
    assert_eq!(failed.is_error, Some(true), "{failed:?}");
    let hello = tokio::time::timeout(crate::harness::PATIENCE, hello).await.unwrap().unwrap();
    assert_eq!(hello.first(), Some(&0x16), "a TLS handshake record");
    assert!(hello.windows(9).any(|w| w == b"localhost"), "SNI names the URI's host");
}

/// Calls take turns to start (two per guest thread), and a guest gives its
/// turn back when it first blocks or has computed for `TURN_FOR` (5 ms): more
/// guests blocked in a host call and more spinning than there are turns
/// all get their instances, and a call behind them is still served.
#[tokio::test]
async fn guests_that_block_or_spin_do_not_hold_up_the_calls_behind_them() {
    let locks = tempfile::tempdir().unwrap();
    let dir = locks.path().display().to_string();
    let host = Host::start(Start::new("demo", &["--dir", &dir, "--max-concurrent-calls", "64"])).await;
    // More of each than the host has turns, on any machine.
    let each = 2 * std::thread::available_parallelism().map_or(2, |n| n.get()) + 2;
    let mut running = Vec::new();
    for _ in 0..each {
        running.push(host.start_call("wait_for_cancel", no_args()).await);
        running.push(host.start_call("spin", no_args()).await);
    }
    let all_started = async {
        while host.status().await["live_stores"].as_u64() < Some(2 * each as u64) {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    };
    if tokio::time::timeout(PATIENCE, all_started).await.is_err() {
        panic!("{} calls never all got their instances: {}", 2 * each, host.status().await);
    }
    let behind = host.call("echo", json!({ "text": "behind them" })).await.unwrap();
    assert_eq!(text_of(&behind), "behind them");
    for call in running {
        call.cancel(Some("test is done".into())).await.unwrap();
    }
    host.wait_until_idle().await;
}

/// Resources, templates, prompts and completion (mcp:tool 0.2.1) that
/// misbehave: lists past the caps, forged URIs and names, endless and huge
/// reads, 100 000 completions. Each is bounded; the demo beside is served.
#[tokio::test]
async fn hostile_offers_are_bounded_and_a_neighbour_is_unaffected() {
    let demo = guest("demo").display().to_string();
    let host = Host::start(Start::new(
        "hostile",
        &["--component", &demo, "--timeout", "2s", "--fuel", "0", "--max-output", "1MiB"],
    ))
    .await;
    let peer = host.client.peer();
    // 5000 listed: the first 1024 served, the forged and oversized left out.
    let resources = peer.list_all_resources().await.unwrap();
    // (6 odd ones first: only `ok` of them passes.)
    assert_eq!(resources.len(), 1 + 1 + 1018, "status, ok and the many within the cap: {}", resources.len());
    assert!(
        resources
            .iter()
            .all(|resource| !resource.uri.chars().any(char::is_control) && resource.uri.len() <= 2048)
    );
    assert!(resources.iter().all(|resource| !resource.name.chars().any(char::is_control)));
    let left_out = host.stderr.events().iter().filter(|event| event.message() == "left out").count();
    assert!((1..=33).contains(&left_out), "left-out items are logged, boundedly: {left_out}");
    let templates = peer.list_all_resource_templates().await.unwrap();
    assert_eq!(templates.len(), 4, "two variables in a row are refused: {templates:?}");
    let prompts = peer.list_all_prompts().await.unwrap();
    assert!(
        prompts.len() <= 256 && prompts.iter().all(|prompt| !prompt.name.contains('\n')),
        "{}",
        prompts.len()
    );

    // An endless read is stopped at the deadline; a huge one at the output cap;
    // contents with a forged URI are refused.
    let err = peer.read_resource(offer_read("hostile://spin/1")).await.unwrap_err();
    assert!(format!("{err:?}").contains("--timeout"), "{err:?}");
    let err = peer.read_resource(offer_read("hostile://huge/4")).await.unwrap_err();
    assert!(format!("{err:?}").contains("--max-output"), "{err:?}");
    let err = peer.read_resource(offer_read("hostile://pieces/100000")).await.unwrap_err();
    assert!(format!("{err:?}").contains("stopped"), "{err:?}");
    let err = peer.read_resource(offer_read("hostile://bad-uri/1")).await.unwrap_err();
    let shown = format!("{err:?}");
    assert!(shown.contains("control characters") && !shown.contains('\u{1b}'), "{shown}");
    let err = peer.get_prompt(GetPromptRequestParams::new("hostile_huge")).await.unwrap_err();
    assert!(format!("{err:?}").contains("stopped"), "{err:?}");
    // 100 000 completions: 100 reach the client, marked as more.
    let many = peer
        .complete(CompleteRequestParams::new(
            Reference::for_prompt("hostile_spin"),
            ArgumentInfo::new("x", ""),
        ))
        .await
        .unwrap();
    assert_eq!(many.completion.values.len(), 100);
    assert_eq!(many.completion.has_more, Some(true));
    let ok = peer.read_resource(offer_read("hostile://ok")).await.unwrap();
    assert_eq!(offer_text(&ok.contents[0]), "fine");
    // The neighbour's tools were never held up.
    let echoed = host.call("echo", json!({ "text": "neighbour" })).await.unwrap();
    assert_eq!(text_of(&echoed), "neighbour");
}

/// `client.ask` is bounded like one question at a time: keys are checked
/// before anything is sent (length, characters, once each), a list longer
/// than the call's `--max-questions` is refused whole, and the questions of
/// one `ask` share one `--max-question`. The client sees only what passed.
#[tokio::test]
async fn questions_asked_at_once_are_bounded_before_any_reaches_the_client() {
    let host = Host::start(hostile(&["--max-questions", "5"])).await;
    let asked =
        |host: &Host| host.test_client.events.all().iter().filter(|e| e.starts_with("elicit")).count();

    let keys = text_of(&host.call("ask_badly", json!({ "kind": "keys" })).await.unwrap());
    let lines: Vec<&str> = keys.lines().collect();
    assert_eq!(lines[..2], ["4 answers", "answered"], "{keys}");
    assert!(lines[2].contains("is not 1 to 64"), "{keys}");
    assert!(lines[3].contains("used twice"), "{keys}");
    assert!(lines[4].contains("is not 1 to 64") && lines[4].contains("line\\\\nbreak"), "{keys}");
    assert_eq!(asked(&host), 1, "only the fair question reached the client");

    let many = text_of(&host.call("ask_badly", json!({ "kind": "many" })).await.unwrap());
    assert!(many.starts_with("1000 answers\n"), "{}", &many[..200]);
    assert!(many.lines().skip(1).all(|line| line.contains("--max-questions")), "{}", &many[..400]);
    assert_eq!(asked(&host), 1, "nothing more reached the client");
    assert_eq!(host.wait_until_idle().await["open_client_requests"], 0);

    // 16 questions of 64 KiB: within the default 20 questions, over the one
    // 64 KiB --max-question they share.
    let host = Host::start(hostile(&[])).await;
    let bulk = text_of(&host.call("ask_badly", json!({ "kind": "bulk" })).await.unwrap());
    assert!(bulk.starts_with("16 answers\n"), "{}", &bulk[..200]);
    assert!(bulk.lines().skip(1).all(|line| line.contains("--max-question)")), "{}", &bulk[..400]);
    assert_eq!(asked(&host), 0, "none reached the client");
}
