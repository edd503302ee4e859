//! Randomised fuzzing of the host's input paths over the real wire:
//! JSON-RPC frames (valid, mutated, truncated, nested, oversized, binary)
//! and tool arguments against the tools' schemas (among them one at the
//! host's schema limits). After every few frames a
//! `ping` must still be answered; at the end an `echo` must still work, the
//! host must exit cleanly when its input closes, and stdout must have carried
//! nothing but JSON-RPC.
//!
//! Not coverage-guided (cargo-fuzz needs a nightly toolchain, and this
//! project builds with stable Rust 1.95 only): a seeded generator instead, so
//! any failure is replayed with `FUZZ_SEED`. The suite runs a short round;
//! `just fuzz` runs `FUZZ_FRAMES=200000`. Guest results are fuzzed in
//! `host/src/content.rs`'s unit tests.

use std::process::Stdio;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _, BufReader};
use tokio::process::Command;

use crate::harness::{PATIENCE, guest, host_binary};

/// xorshift64*: small, seeded, good enough to pick and mutate frames.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545F4914F6CDD1D)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len() as u64) as usize]
    }
}

/// A random JSON value, `depth` levels deep at most.
fn value(rng: &mut Rng, depth: u32) -> Value {
    match rng.below(if depth == 0 { 6 } else { 8 }) {
        0 => Value::Null,
        1 => json!(rng.below(2) == 0),
        2 => json!(rng.next() as i64),
        3 => json!((rng.next() as f64) / 7.0),
        4 => json!(rng.pick(&["", "text", "ünïcødé", "\u{0}", "a\nb", "🦀"]).to_string()),
        5 => json!("x".repeat(rng.below(5_000) as usize)),
        6 => Value::Array((0..rng.below(5)).map(|_| value(rng, depth - 1)).collect()),
        _ => {
            let keys =
                ["text", "steps", "step_ms", "questions", "iterations", "mib", "quiet", "name", "items", "x"];
            Value::Object(
                (0..rng.below(5)).map(|_| (rng.pick(&keys).to_string(), value(rng, depth - 1))).collect(),
            )
        }
    }
}

/// A frame: usually well-formed JSON-RPC with random parts, sometimes broken.
fn frame(rng: &mut Rng, id: u64) -> Vec<u8> {
    let tools = [
        "echo",
        "countdown",
        "survey",
        "compute",
        "allocate",
        "sign_in",
        "delete_records",
        "prune",
        "input_at_limit",
        "nope",
        "",
    ];
    let methods = [
        "tools/call",
        "tools/list",
        "ping",
        "resources/read",
        "logging/setLevel",
        "initialize",
        "server/discover",
        "tasks/get",
        "tasks/update",
        "tasks/cancel",
        "x/y",
    ];
    let request_id = match rng.below(6) {
        0 => json!(rng.next() as i64),
        1 => json!(format!("s{id}")),
        2 => Value::Null,
        3 => json!({ "nested": id }),
        _ => json!(1_000_000 + id),
    };
    let message = match rng.below(10) {
        0..=2 => {
            // Well-formed calls with valid arguments: these reach a guest.
            let (name, arguments) = match rng.below(8) {
                0 => ("echo", json!({ "text": value(rng, 0).to_string() })),
                // Need approval; this client cannot be asked, so they fail closed.
                6 => ("delete_records", json!({ "table": value(rng, 0).to_string() })),
                7 => ("prune", json!({ "count": 1 + rng.below(3) })),
                1 => ("countdown", json!({ "steps": rng.below(4), "step_ms": rng.below(3), "quiet": true })),
                2 => ("compute", json!({ "iterations": rng.below(1000) })),
                3 => ("allocate", json!({ "mib": rng.below(5) })),
                4 => ("survey", json!({ "questions": 1 })),
                // A schema at the host's limits (64-branch anyOf items),
                // against random and large item lists.
                5 if rng.below(2) == 0 => {
                    let items: Vec<Value> = (0..rng.below(3000)).map(|_| json!(rng.below(70))).collect();
                    ("input_at_limit", json!({ "items": items }))
                }
                _ => ("sign_in", json!({})),
            };
            json!({ "jsonrpc": "2.0", "id": 2_000_000 + id, "method": "tools/call",
                    "params": { "name": name, "arguments": arguments } })
        }
        3..=4 => {
            let mut arguments = value(rng, 3);
            // Keep calls short: the fuzzer is after the input paths, not the tools.
            if let Value::Object(map) = &mut arguments {
                for (key, cap) in
                    [("steps", 3), ("step_ms", 2), ("questions", 1), ("iterations", 1000), ("mib", 4)]
                {
                    if map.get(key).is_some_and(|v| v.is_u64()) {
                        map.insert(key.into(), json!(rng.below(cap + 1)));
                    }
                }
            }
            let mut params = json!({ "name": rng.pick(&tools), "arguments": arguments });
            // Now and then a follow-up to a paused call that never was (2026-07-28).
            if rng.below(3) == 0 {
                params["requestState"] = value(rng, 1);
                params["inputResponses"] = value(rng, 2);
            }
            json!({ "jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params })
        }
        5 => json!({ "jsonrpc": "2.0", "method": "notifications/cancelled",
                     "params": { "requestId": value(rng, 1), "reason": value(rng, 0) } }),
        6 => {
            json!({ "jsonrpc": "2.0", "id": request_id, "method": rng.pick(&methods), "params": value(rng, 3) })
        }
        7 => json!([{ "jsonrpc": "2.0", "id": request_id, "method": "ping" }, value(rng, 2)]),
        8 => {
            // Deep nesting, past serde_json's recursion limit.
            let depth = 10 + rng.below(400) as usize;
            return format!("{}{}", "[".repeat(depth), "]".repeat(depth)).into_bytes();
        }
        _ => value(rng, 4),
    };
    let mut bytes = serde_json::to_vec(&message).unwrap();
    // Mutate a third of the frames at the byte level.
    if rng.below(3) == 0 && !bytes.is_empty() {
        for _ in 0..=rng.below(4) {
            let at = rng.below(bytes.len() as u64) as usize;
            match rng.below(4) {
                0 => bytes[at] = rng.next() as u8,
                1 => bytes.truncate(at),
                2 => bytes.insert(at, *rng.pick(b"{}[]\",:\\\0\xff")),
                _ => {
                    bytes.remove(at);
                }
            }
            if bytes.is_empty() {
                break;
            }
        }
    }
    // One frame per line: a stray newline would just split it into two.
    bytes.retain(|b| *b != b'\n');
    bytes
}

#[tokio::test]
async fn random_frames_never_break_the_server() {
    let frames: u64 = std::env::var("FUZZ_FRAMES").ok().and_then(|v| v.parse().ok()).unwrap_or(3_000);
    let seed: u64 = std::env::var("FUZZ_SEED").ok().and_then(|v| v.parse().ok()).unwrap_or(0x00f0_0d5e_ed00);
    eprintln!("fuzz: {frames} frames, FUZZ_SEED={seed}");
    let mut rng = Rng(seed | 1);

    let (demo, hostile) = (guest("demo"), guest("hostile"));
    let mut child = Command::new(host_binary())
        .args(["--component", demo.to_str().unwrap(), "--timeout", "200ms", "--elicitation-timeout", "50ms"])
        .args(["--component", hostile.to_str().unwrap()])
        .env("RUST_LOG", "error")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut input = child.stdin.take().unwrap();
    // stdout is read all the time, as a client does: read only at the
    // probes, the host's answers filled the pipe, the host waited to write
    // and stopped reading, and this test's next write waited for it.
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let (lines_tx, mut output) = tokio::sync::mpsc::unbounded_channel();
    tokio::spawn(async move {
        while let Ok(Some(line)) = lines.next_line().await {
            if lines_tx.send(line).is_err() {
                break;
            }
        }
    });

    // Reads lines until the answer to `id`; every line must be JSON-RPC.
    async fn answer_to(output: &mut tokio::sync::mpsc::UnboundedReceiver<String>, id: &Value) -> Value {
        let read = async {
            loop {
                let line = output.recv().await.expect("the host is still running");
                let message: Value = serde_json::from_str(&line)
                    .unwrap_or_else(|_| panic!("stdout carried a non-JSON line: {line:.200}"));
                assert_eq!(message["jsonrpc"], "2.0", "stdout carried a non-JSON-RPC line: {line:.200}");
                if &message["id"] == id {
                    return message;
                }
            }
        };
        tokio::time::timeout(PATIENCE, read).await.expect("the host answered in time")
    }

    let init = json!({ "jsonrpc": "2.0", "id": "init", "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": { "name": "fuzz", "version": "1" } } });
    input.write_all(format!("{init}\n").as_bytes()).await.unwrap();
    answer_to(&mut output, &json!("init")).await;
    input.write_all(b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n").await.unwrap();

    for n in 0..frames {
        let mut bytes = frame(&mut rng, n);
        bytes.push(b'\n');
        input.write_all(&bytes).await.unwrap();
        if n % 100 == 99 {
            let probe = json!(format!("probe-{n}"));
            let ping = json!({ "jsonrpc": "2.0", "id": probe, "method": "ping" });
            input.write_all(format!("{ping}\n").as_bytes()).await.unwrap();
            let answer = answer_to(&mut output, &probe).await;
            assert_eq!(answer["result"], json!({}), "after frame {n} (FUZZ_SEED={seed})");
        }
    }

    let echo = json!({ "jsonrpc": "2.0", "id": "last", "method": "tools/call",
                       "params": { "name": "echo", "arguments": { "text": "still here" } } });
    input.write_all(format!("{echo}\n").as_bytes()).await.unwrap();
    let answer = answer_to(&mut output, &json!("last")).await;
    assert_eq!(answer["result"]["content"][0]["text"], "still here", "FUZZ_SEED={seed}");

    // How far the frames got: calls that reached a guest.
    let read = json!({ "jsonrpc": "2.0", "id": "status", "method": "resources/read",
                       "params": { "uri": "mcp-wasm-host://status" } });
    input.write_all(format!("{read}\n").as_bytes()).await.unwrap();
    let answer = answer_to(&mut output, &json!("status")).await;
    let counts: Value =
        serde_json::from_str(answer["result"]["contents"][0]["text"].as_str().unwrap()).unwrap();
    eprintln!("fuzz: {} of {frames} frames ran a tool call in a guest", counts["calls_total"]);
    assert!(
        counts["calls_total"].as_u64().unwrap() > frames / 20,
        "too few frames reached a guest: {counts}"
    );

    drop(input);
    let status = tokio::time::timeout(Duration::from_secs(10), child.wait()).await.expect("exit").unwrap();
    assert!(status.success(), "the host exits cleanly after the fuzz (FUZZ_SEED={seed}): {status:?}");
}
