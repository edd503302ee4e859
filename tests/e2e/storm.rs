//! A cancel storm: many calls, cancelled at random moments — before they
//! start, while they compute, while they sleep in a host call, while they
//! wait on a question or an approval, and racing their own completion.
//! Afterwards every request got exactly one of (a response, a stop with
//! cleanup), and the host holds nothing: no call, store, open question,
//! paused call or lease. `STORM_CALLS` scales it (`just soak` runs 10 000).

use std::time::Duration;

use futures_util::StreamExt as _;
use serde_json::{Value, json};

use crate::harness::{Event, Host, PATIENCE, Start, files_in, rss_kib};

/// A small deterministic generator, so a failing storm can be replayed.
struct Lcg(u64);

impl Lcg {
    fn next(&mut self, below: u64) -> u64 {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (self.0 >> 33) % below
    }
}

/// The JSON-RPC id of the `tools/call` request an event was logged in.
fn request_id(event: &Event) -> Value {
    let id = event.span.get("request").and_then(Value::as_str).expect("call events carry the request id");
    // The span shows the id as text: a number, or a string as is.
    serde_json::from_str(id).unwrap_or_else(|_| Value::String(id.to_string()))
}

/// Whether an event ends a call: after it ran, or before it started.
fn ends_a_call(event: &Event) -> bool {
    matches!(event.message(), "call ended" | "call ended before it started")
}

#[tokio::test]
async fn a_cancel_storm_leaves_nothing_behind() {
    let calls: u64 = std::env::var("STORM_CALLS").ok().and_then(|v| v.parse().ok()).unwrap_or(300);
    let locks = tempfile::tempdir().unwrap();
    let dir = locks.path().display().to_string();
    let host = Host::start(
        Start::new("demo", &["--dir", &dir, "--cancel-grace", "20ms"]).log("mcp_wasm_host=info,warn"),
    )
    .await;
    let pid = host.child.id().unwrap();
    // Warm up, then take the resident size the storm must come back to.
    for _ in 0..50 {
        host.call("echo", json!({ "text": "warm" })).await.unwrap();
    }
    let rss_before = rss_kib(pid);

    let mut rng = Lcg(0x5eed);
    let rss_before = if calls >= 5_000 {
        // A soak compares memory after the storm with memory after a short
        // storm: the pooling allocator keeps each used slot's memory resident,
        // so the first storm grows the process to its working size.
        storm(&host, &mut rng, 3_000).await;
        host.wait_until_idle().await;
        rss_kib(pid)
    } else {
        rss_before
    };
    let warm_calls = count_ended(&host);
    let cleanups_before = host.status().await["cleanups_total"].as_u64().unwrap();
    // In chunks, so a soak shows how resident memory moves.
    let mut left = calls;
    while left > 0 {
        let chunk = left.min(2_000);
        storm(&host, &mut rng, chunk).await;
        left -= chunk;
        if calls >= 5_000 {
            let now = host.status().await;
            eprintln!(
                "storm: {} calls done, rss {} KiB, live calls {}",
                calls - left,
                rss_kib(pid),
                now["live_calls"]
            );
        }
    }
    let idle = host.wait_until_idle().await;

    let log = host.stderr.events();
    let ended: Vec<&Event> = log.iter().filter(|e| ends_a_call(e)).skip(warm_calls as usize).collect();
    let storm_ended = ended.len() as u64;
    assert_eq!(storm_ended, calls, "every storm call ended exactly once");
    // Stopped: cancelled before it returned (a call that returned within the
    // grace period after its cancel has finished, and owes no cleanup).
    let stopped: Vec<&Event> =
        ended.iter().copied().filter(|e| e.str("outcome") == Some("stopped")).collect();
    for event in &stopped {
        assert_eq!(event.str("stop_reason"), Some("client-cancelled"), "{event}");
    }
    // A request the host stopped got no response. (One that finished before
    // its cancel was seen may or may not have: rmcp drops the response of a
    // request it knows is cancelled, as the spec asks.)
    let answered: Vec<Value> = host
        .wire
        .all()
        .iter()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|m| m.get("method").is_none())
        .filter_map(|m| m.get("id").cloned())
        .collect();
    for event in &stopped {
        let id = request_id(event);
        assert!(!answered.contains(&id), "request {id} was stopped yet answered: {event}");
    }
    // Cleanup ran exactly once for every stopped call that had started (one
    // cancelled while waiting for a free slot never ran), and finished.
    let stopped: Vec<&Event> = stopped.into_iter().filter(|e| e.message() == "call ended").collect();
    for event in &stopped {
        let call_id = event.str("call_id");
        let about: Vec<String> =
            log.iter().filter(|e| e.str("call_id") == call_id).map(ToString::to_string).collect();
        assert_eq!(event.str("cleanup"), Some("done"), "{about:#?}");
    }
    assert_eq!(idle["cleanups_total"].as_u64().unwrap() - cleanups_before, stopped.len() as u64);
    assert!(files_in(locks.path()).is_empty(), "locks left: {:?}", files_in(locks.path()));
    host.assert_clean_stdout();

    let rss_after = rss_kib(pid);
    eprintln!("storm: {calls} calls, {} stopped, rss {rss_before} KiB -> {rss_after} KiB", stopped.len());
    if calls >= 5_000 {
        assert!(
            rss_after <= rss_before + rss_before / 10,
            "resident memory grew: {rss_before} -> {rss_after} KiB"
        );
    }
}

/// Starts `calls` calls (16 at a time) and cancels each at a random moment.
async fn storm(host: &Host, rng: &mut Lcg, calls: u64) {
    let plan: Vec<(&str, Value, u64)> = (0..calls)
        .map(|_| {
            let pick = match std::env::var("STORM_ONLY").ok().as_deref() {
                Some("echo") => 0,
                Some("countdown") => 1,
                Some("spin") => 2,
                Some("stall") => 3,
                Some("survey") => 4,
                Some("wait_for_cancel") => 5,
                Some("delete_records") => 6,
                Some("prune") => 7,
                _ => rng.next(8),
            };
            let (tool, args) = match pick {
                0 => ("echo", json!({ "text": "storm" })),
                1 => ("countdown", json!({ "steps": 3, "step_ms": 2, "quiet": true })),
                2 => ("spin", json!({})),
                3 => ("stall", json!({})),
                4 => ("survey", json!({ "questions": 2 })),
                5 => ("wait_for_cancel", json!({})),
                // Approval before the call, then mid-call (holding a lock).
                6 => ("delete_records", json!({ "table": "storm" })),
                _ => ("prune", json!({ "count": 1 })),
            };
            // Cancel right away (before it starts), soon, later; spin, stall
            // and wait_for_cancel never finish, so they are always cancelled.
            let delay_us = [0, 200, 1_000, 5_000][rng.next(4) as usize];
            (tool, args, delay_us)
        })
        .collect();

    let storm = futures_util::stream::iter(plan).map(|(tool, args, delay_us)| async move {
        let call = host.start_call(tool, args).await;
        tokio::time::sleep(Duration::from_micros(delay_us)).await;
        call.cancel(Some("storm".into())).await.unwrap();
    });
    tokio::time::timeout(PATIENCE * 6, storm.buffer_unordered(16).collect::<Vec<()>>())
        .await
        .expect("the storm finished");
}

fn count_ended(host: &Host) -> u64 {
    host.stderr.events().iter().filter(|e| ends_a_call(e)).count() as u64
}
