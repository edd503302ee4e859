//! Tiered compilation: on a cold compile cache a component serves its first
//! calls from baseline code (Winch) at once, optimized code replaces it for
//! later calls, and only optimized code is cached; every stop holds on
//! baseline code as on optimized code.

use std::time::{Duration, Instant};

use serde_json::json;

use crate::harness::{Event, Host, Start, files_in, no_args, text_of};

/// The optimizing compile of the Python component takes 8-14 s on a small
/// machine, longer beside other tests: the wait for the swap is longer than
/// the harness's.
const SWAP_PATIENCE: Duration = Duration::from_secs(180);

/// Waits (up to [`SWAP_PATIENCE`]) until the host logs that optimized code
/// replaced the baseline code.
async fn wait_for_swap(host: &Host) -> Event {
    host.stderr
        .wait_for_event_within("a swap to optimized code", SWAP_PATIENCE, |e| {
            e.message().starts_with("optimized code replaced")
        })
        .await
}

/// The `call ended` event of the `n`th call of `tool` (from 1).
async fn nth_call_ended(host: &Host, tool: &str, n: usize) -> Event {
    host.stderr
        .wait_until(&format!("call {n} of {tool} ended"), |lines| {
            lines.iter().filter_map(|line| line.event()).filter(|e| e.is_call_ended(tool)).nth(n - 1).cloned()
        })
        .await
}

#[tokio::test]
async fn a_cold_python_component_serves_baseline_code_first_then_optimized_code() {
    let cache = tempfile::tempdir().unwrap();
    let cache_arg = cache.path().display().to_string();
    let started = Instant::now();
    let host = Host::start(Start::new("python-tool", &["--cache-dir", &cache_arg])).await;
    let first = host.call("echo", json!({ "text": "first" })).await.unwrap();
    let first_call_at = started.elapsed();
    assert!(text_of(&first).contains("first"), "{first:?}");
    let baseline = host
        .stderr
        .wait_for_event("the baseline compile", |e| {
            e.message().starts_with("compiled with the baseline compiler")
        })
        .await;
    assert_eq!(baseline.str("tier"), Some("baseline"), "{baseline}");
    let ended = nth_call_ended(&host, "echo", 1).await;
    assert_eq!(ended.str("tier"), Some("baseline"), "the first call ran baseline code: {ended}");
    eprintln!("cold start → first call answered from baseline code: {first_call_at:?}");

    let swap = wait_for_swap(&host).await;
    assert_eq!(swap.str("tier"), Some("optimized"), "{swap}");
    // The optimizing compiler's code is unmapped once its work is done,
    // as start-up's was once the component loaded (`code_pages`).
    host.stderr
        .wait_for_events("start-up's and the compiler's code unmapped", 2, |e| {
            e.message().starts_with("unmapped the code run once")
        })
        .await;
    let next = host.call("echo", json!({ "text": "next" })).await.unwrap();
    assert!(text_of(&next).contains("next"), "{next:?}");
    let ended = nth_call_ended(&host, "echo", 2).await;
    assert_eq!(ended.str("tier"), Some("optimized"), "a call after the swap runs optimized code: {ended}");
    // The baseline engine goes once nothing holds it.
    host.stderr
        .wait_for_event("the baseline engine's release", |e| {
            e.message().starts_with("the baseline engine was released")
        })
        .await;
    host.assert_clean_stdout();
    drop(host);

    // Only optimized code was cached: a warm start serves it from the first call.
    let artifacts = files_in(cache.path());
    assert_eq!(artifacts.len(), 1, "one artifact, the optimized one: {artifacts:?}");
    let host = Host::start(Start::new("python-tool", &["--cache-dir", &cache_arg])).await;
    host.call("echo", json!({ "text": "warm" })).await.unwrap();
    let ended = nth_call_ended(&host, "echo", 1).await;
    assert_eq!(ended.str("tier"), Some("optimized"), "a warm start runs cached optimized code: {ended}");
    let events = host.stderr.events();
    assert!(
        !events.iter().any(|e| e.message().starts_with("compiled with the baseline")),
        "no baseline compile"
    );
}

#[tokio::test]
async fn cancel_stops_a_spinning_guest_running_baseline_code() {
    let host = Host::start(Start::new("demo", &["--no-cache"])).await;
    // Baseline code is ready when the host says `loaded`: a cancel before
    // that stops a call still waiting for the load, which never runs (and
    // on a busy machine Winch takes over 100 ms).
    host.stderr.wait_for_event("the baseline code to load", |e| e.message() == "loaded").await;
    let handle = host.start_call("spin", no_args()).await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    handle.cancel(Some("test cancels".into())).await.unwrap();
    let ended = host.call_ended("spin").await;
    assert_eq!(ended.str("tier"), Some("baseline"), "the spin ran baseline code: {ended}");
    assert_eq!(ended.str("stop_reason"), Some("client-cancelled"), "{ended}");
    assert_eq!(ended.bool("forced"), Some(true), "spin never stops by itself: {ended}");
    assert_eq!(ended.str("cleanup"), Some("done"), "{ended}");
    let next = host.call("echo", json!({ "text": "next" })).await.unwrap();
    assert_eq!(text_of(&next), "next");
}

#[tokio::test]
async fn fuel_memory_and_deadline_limits_hold_on_baseline_code() {
    let host =
        Host::start(Start::new("demo", &["--no-cache", "--fuel", "50000000", "--max-memory", "32MiB"])).await;
    // Both calls start at once, before the optimized code can be ready:
    // one after the other, the second started only when 50 million units
    // of fuel had burnt on baseline code, by which time an idle machine
    // had the demo's optimized code swapped in.
    let (spin, allocate) =
        tokio::join!(host.call("spin", no_args()), host.call("allocate", json!({ "mib": 64 })));
    let result = spin.unwrap();
    assert_eq!(result.is_error, Some(true), "{result:?}");
    assert!(text_of(&result).contains("--fuel"), "{}", text_of(&result));
    let result = allocate.unwrap();
    assert!(text_of(&result).contains("memory limit of 32 MiB (--max-memory)"), "{}", text_of(&result));
    for tool in ["spin", "allocate"] {
        let ended = host.call_ended(tool).await;
        assert_eq!(ended.str("tier"), Some("baseline"), "{tool} ran baseline code: {ended}");
    }

    let host = Host::start(Start::new("demo", &["--no-cache", "--fuel", "0", "--timeout", "300ms"])).await;
    let result = host.call("spin", no_args()).await.unwrap();
    assert!(text_of(&result).contains("--timeout"), "{}", text_of(&result));
    let ended = host.call_ended("spin").await;
    assert_eq!(ended.str("tier"), Some("baseline"), "the spin ran baseline code: {ended}");
    assert_eq!(ended.str("stop_reason"), Some("deadline-exceeded"), "{ended}");
}

#[tokio::test]
async fn no_tiering_serves_optimized_code_from_the_first_call() {
    let host = Host::start(Start::new("demo", &["--no-cache", "--no-tiering"])).await;
    host.call("echo", json!({ "text": "x" })).await.unwrap();
    let ended = host.call_ended("echo").await;
    assert_eq!(ended.str("tier"), Some("optimized"), "{ended}");
}
