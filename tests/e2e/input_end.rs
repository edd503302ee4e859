//! What stdin's end means (issue 23): the client will send nothing more,
//! and every request it already sent is answered. A call received before
//! the component has loaded gets to start, however slow the compile; a
//! question open at the end fails at once instead of waiting out its
//! timeout; and the whole exchange is what the README's first JSON-RPC
//! example does (`echo … | mcp-wasm-host`).

use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _, BufReader};
use tokio::process::{Child, ChildStdout, Command};

use crate::harness::{PATIENCE, guest, host_binary};

/// The handshake the README's example sends, on the 2025-06-18 protocol
/// (questions travel as `elicitation/create`), declaring elicitation.
fn handshake() -> String {
    let init = json!({ "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": { "elicitation": {} },
        "clientInfo": { "name": "input-end", "version": "1" } } });
    format!("{init}\n{{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}}\n")
}

fn call(id: u64, tool: &str, arguments: Value) -> String {
    let call = json!({ "jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": { "name": tool, "arguments": arguments } });
    format!("{call}\n")
}

/// Starts the host on `demo` with `args`, stdin and stdout piped; its log
/// (JSON) goes to the test's stderr only when RUST_LOG asks.
fn start(args: &[&str], cache: &std::path::Path) -> Child {
    Command::new(host_binary())
        .args(["--component", guest("demo").to_str().unwrap(), "--cache-dir", cache.to_str().unwrap()])
        .args(args)
        .env("RUST_LOG", std::env::var("RUST_LOG").unwrap_or_else(|_| "error".into()))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .unwrap()
}

/// Every line on stdout until it ends, each a JSON-RPC message.
async fn read_to_end(stdout: ChildStdout) -> Vec<Value> {
    let mut lines = BufReader::new(stdout).lines();
    let mut messages = Vec::new();
    while let Some(line) =
        tokio::time::timeout(PATIENCE, lines.next_line()).await.expect("stdout ends").unwrap()
    {
        messages.push(serde_json::from_str(&line).unwrap_or_else(|_| panic!("not JSON: {line:.200}")));
    }
    messages
}

fn answer(messages: &[Value], id: u64) -> &Value {
    let answers: Vec<_> =
        messages.iter().filter(|m| m.get("method").is_none() && m["id"] == json!(id)).collect();
    assert_eq!(answers.len(), 1, "one answer to request {id}: {messages:#?}");
    answers[0]
}

/// The README's example, with the slowest start there is: no compile cache
/// and optimized code only, so the call and the end of input both come long
/// before the component is ready. A drain far shorter than the compile
/// still lets the call run: it starts counting once the component loaded.
#[tokio::test]
async fn a_call_received_before_the_component_loads_is_answered_after_stdin_closes() {
    let cache = tempfile::tempdir().unwrap();
    for args in [&["--no-tiering", "--eof-drain", "100ms"][..], &["--eof-drain", "100ms"]] {
        let mut host = start(args, cache.path());
        let mut stdin = host.stdin.take().unwrap();
        let script = format!("{}{}", handshake(), call(2, "echo", json!({ "text": "hello" })));
        stdin.write_all(script.as_bytes()).await.unwrap();
        drop(stdin);
        let messages = read_to_end(host.stdout.take().unwrap()).await;
        let status = tokio::time::timeout(PATIENCE, host.wait()).await.expect("the host exits").unwrap();
        assert!(status.success(), "{status:?}");
        let echoed = &answer(&messages, 2)["result"];
        assert_eq!(echoed["isError"], false, "{args:?}: {echoed}");
        assert_eq!(echoed["content"][0]["text"], "hello", "{args:?}: {echoed}");
    }
}

/// A question to the client open when its input ends can never be
/// answered: it fails at once (an approval, declined), long before its
/// timeout or the drain, and the call's answer still goes out.
#[tokio::test]
async fn a_question_open_when_stdin_closes_fails_at_once() {
    let cache = tempfile::tempdir().unwrap();
    let mut host = start(&["--approval-timeout", "5m", "--eof-drain", "5m"], cache.path());
    let mut stdin = host.stdin.take().unwrap();
    let mut lines = BufReader::new(host.stdout.take().unwrap()).lines();
    let script = format!("{}{}", handshake(), call(2, "delete_records", json!({ "table": "users" })));
    stdin.write_all(script.as_bytes()).await.unwrap();
    // Wait for the approval question, then close the input.
    loop {
        let line =
            tokio::time::timeout(PATIENCE, lines.next_line()).await.expect("the question").unwrap().unwrap();
        let message: Value = serde_json::from_str(&line).unwrap();
        if message["method"] == "elicitation/create" {
            break;
        }
    }
    let closed = Instant::now();
    drop(stdin);
    let mut messages = Vec::new();
    while let Some(line) =
        tokio::time::timeout(PATIENCE, lines.next_line()).await.expect("stdout ends").unwrap()
    {
        messages.push(serde_json::from_str::<Value>(&line).unwrap());
    }
    let status = tokio::time::timeout(PATIENCE, host.wait()).await.expect("the host exits").unwrap();
    let took = closed.elapsed();
    assert!(status.success(), "{status:?}");
    let result = &answer(&messages, 2)["result"];
    assert_eq!(result["isError"], true, "{result}");
    let text = result["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("did not run"), "{text}");
    // Not the five minutes of either bound.
    assert!(took < Duration::from_secs(20), "took {took:?}");
}

/// Requests behind a full slot are answered too: four `countdown`s on one
/// slot after the input closed, each waiting for the one before.
#[tokio::test]
async fn calls_waiting_for_a_slot_are_answered_after_stdin_closes() {
    let cache = tempfile::tempdir().unwrap();
    let mut host = start(&["--max-concurrent-calls", "1"], cache.path());
    let mut stdin = host.stdin.take().unwrap();
    let mut script = handshake();
    for id in 2..6 {
        script.push_str(&call(id, "countdown", json!({ "steps": 2, "step_ms": 25 })));
    }
    stdin.write_all(script.as_bytes()).await.unwrap();
    drop(stdin);
    let messages = read_to_end(host.stdout.take().unwrap()).await;
    assert!(tokio::time::timeout(PATIENCE, host.wait()).await.unwrap().unwrap().success());
    for id in 2..6 {
        assert_eq!(answer(&messages, id)["result"]["isError"], false, "{messages:#?}");
    }
}
