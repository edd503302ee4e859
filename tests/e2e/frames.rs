//! Frames on stdin the host cannot read (issue 22, finding 12): a line over
//! the size cap, JSON nested past the parser's depth, text that is not JSON
//! and JSON that is not a message each get a JSON-RPC error, under the
//! request's id when its head names it, and the next frame is served.

use std::process::Stdio;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _, BufReader};
use tokio::process::Command;

use crate::harness::{PATIENCE, guest, host_binary};

/// The host serving the demo over stdio, written to and read from frame by
/// frame, with its session initialized.
struct RawHost {
    child: tokio::process::Child,
    input: tokio::process::ChildStdin,
    output: tokio::io::Lines<BufReader<tokio::process::ChildStdout>>,
}

impl RawHost {
    async fn start(extra: &[&str]) -> RawHost {
        let mut child = Command::new(host_binary())
            .args(["--component", guest("demo").to_str().unwrap()])
            .args(extra)
            .env("RUST_LOG", "error")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let input = child.stdin.take().unwrap();
        let output = BufReader::new(child.stdout.take().unwrap()).lines();
        let mut host = RawHost { child, input, output };
        let init = json!({ "jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": { "name": "frames", "version": "1" } } });
        host.send(&init.to_string()).await;
        assert_eq!(host.next().await["id"], 0);
        host.send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#).await;
        host
    }

    /// Writes `frame` and its line end.
    async fn send(&mut self, frame: &str) {
        self.input.write_all(frame.as_bytes()).await.unwrap();
        self.input.write_all(b"\n").await.unwrap();
    }

    /// The next answer on stdout; every line must be JSON-RPC.
    async fn next(&mut self) -> Value {
        loop {
            let line =
                tokio::time::timeout(PATIENCE, self.output.next_line()).await.expect("an answer in time");
            let line = line.unwrap().expect("the host is still running");
            let message: Value =
                serde_json::from_str(&line).unwrap_or_else(|_| panic!("not JSON: {line:.200}"));
            assert_eq!(message["jsonrpc"], "2.0", "stdout carries JSON-RPC only: {line:.200}");
            if message.get("method").is_none() {
                return message;
            }
        }
    }
}

#[tokio::test]
async fn a_frame_the_host_cannot_read_is_answered_and_the_next_is_served() {
    let mut host = RawHost::start(&[]).await;

    let deep = |n: usize| format!("{}{}", "[".repeat(n), "]".repeat(n));
    let text = "x".repeat(17 << 20);
    let frames: [(String, Value, i64); 5] = [
        // Over the 16 MiB a line may hold: skipped, answered under the id it begins with.
        (
            format!(
                r#"{{"jsonrpc":"2.0","id":41,"method":"tools/call","params":{{"name":"echo","arguments":{{"text":"{text}"}}}}}}"#
            ),
            json!(41),
            -32700,
        ),
        // Nested past the parser's depth, after its id.
        (
            format!(r#"{{"jsonrpc":"2.0","id":"deep","method":"ping","params":{{"a":{}}}}}"#, deep(1000)),
            json!("deep"),
            -32700,
        ),
        // Nested with no id to find, and not JSON at all.
        (deep(100_000), Value::Null, -32700),
        ("hello, host".to_string(), Value::Null, -32700),
        // JSON, but not a request.
        (r#"{"x":1}"#.to_string(), Value::Null, -32600),
    ];
    for (frame, id, code) in frames {
        host.send(&frame).await;
        let answer = host.next().await;
        assert_eq!((&answer["id"], &answer["error"]["code"]), (&id, &json!(code)), "{answer}");
        assert!(answer.as_object().unwrap().contains_key("id"), "`id` is present, null when unknown");
    }
    // The next frame is served.
    let echo = json!({ "jsonrpc": "2.0", "id": "after", "method": "tools/call",
                       "params": { "name": "echo", "arguments": { "text": "still here" } } });
    host.send(&echo.to_string()).await;
    let answer = host.next().await;
    assert_eq!(
        (&answer["id"], &answer["result"]["content"][0]["text"]),
        (&json!("after"), &json!("still here"))
    );
    let RawHost { mut child, input, .. } = host;
    drop(input);
    let status = tokio::time::timeout(PATIENCE, child.wait()).await.expect("the host exits").unwrap();
    assert!(status.success(), "{status:?}");
}

/// Over stdio, frames are charged against `--max-request-memory` too, for
/// their values, before they are parsed, and hold it until answered: four
/// 15 MiB frames of zeros cost 2.4 GB before; now each is answered
/// `-32000` at once, naming the flag, and the next frame is served.
#[tokio::test]
async fn a_frame_that_would_cost_more_than_the_request_memory_is_refused_before_it_is_parsed() {
    let mut host = RawHost::start(&["--max-request-memory", "256MiB"]).await;
    let pid = host.child.id().unwrap();
    let before = crate::harness::rss_kib(pid);

    let zeros = format!("[{}0]", "0,".repeat((15 << 20) / 2));
    for id in 0..4 {
        let frame = format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"echo","arguments":{{"text":"x","pad":{zeros}}}}}}}"#
        );
        host.send(&frame).await;
        let answer = host.next().await;
        assert_eq!((&answer["id"], &answer["error"]["code"]), (&json!(id), &json!(-32000)), "{answer}");
        let message = answer["error"]["message"].as_str().unwrap();
        assert!(message.contains("--max-request-memory"), "{message}");
    }
    let grown = crate::harness::rss_kib(pid).saturating_sub(before) >> 10;
    assert!(grown < 128, "the host grew by {grown} MiB");
    let echo = json!({ "jsonrpc": "2.0", "id": "after", "method": "tools/call",
                       "params": { "name": "echo", "arguments": { "text": "still here" } } });
    host.send(&echo.to_string()).await;
    assert_eq!(host.next().await["result"]["content"][0]["text"], "still here");
}
