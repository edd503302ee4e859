//! A cancelled call always stops: cooperative, computing and blocked guests
//! alike; cleanup runs; no response goes out; the next call is served.

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::harness::{Event, Host, Start, files_in, no_args, text_of, wait_for_lock};

/// Starts `tool`, waits until it is running (its lock exists, or 100 ms for
/// tools without one), cancels it, and checks everything the promise covers.
async fn cancel_and_check(
    component: &str,
    tool: &str,
    args: Value,
    holds_lock: bool,
    extra: &[&str],
) -> Event {
    let locks = tempfile::tempdir().unwrap();
    let dir = locks.path().display().to_string();
    let mut flags = vec!["--dir", dir.as_str()];
    flags.extend_from_slice(extra);
    let host = Host::start(Start::new(component, &flags)).await;

    let started = Instant::now();
    let handle = host.start_call(tool, args).await;
    let id = handle.id.clone();
    if holds_lock {
        wait_for_lock(locks.path()).await;
    }
    // The scenario: the user gives up 100 ms into the call.
    tokio::time::sleep(Duration::from_millis(100).saturating_sub(started.elapsed())).await;
    handle.cancel(Some("test cancels".into())).await.unwrap();

    let ended = host.call_ended(tool).await;
    assert_eq!(ended.str("stop_reason"), Some("client-cancelled"), "{ended}");
    assert_eq!(ended.str("cleanup"), Some("done"), "cleanup ran: {ended}");
    assert_no_locks(locks.path());

    // The next call is served at once, and nothing was sent for the cancelled one.
    let next = host.call("echo", json!({ "text": "next" })).await.unwrap();
    assert_eq!(text_of(&next), "next");
    assert_eq!(host.responses_to(&id), 0, "a cancelled request got a response");
    host.assert_clean_stdout();
    ended
}

fn assert_no_locks(dir: &Path) {
    let left = files_in(dir);
    assert!(left.is_empty(), "cleanup left {left:?} behind");
}

#[tokio::test]
async fn cancel_stops_a_cooperative_guest_that_checks_between_steps() {
    let ended =
        cancel_and_check("demo", "countdown", json!({ "steps": 10000, "step_ms": 10 }), false, &[]).await;
    assert_eq!(ended.bool("forced"), Some(false), "countdown stopped by itself: {ended}");
}

#[tokio::test]
async fn cancel_wakes_a_guest_waiting_on_its_cancelled_pollable() {
    let ended = cancel_and_check("demo", "wait_for_cancel", no_args(), false, &[]).await;
    assert_eq!(ended.bool("forced"), Some(false), "the pollable woke the guest: {ended}");
}

#[tokio::test]
async fn cancel_stops_a_spinning_guest_and_runs_cleanup() {
    let ended = cancel_and_check("demo", "spin", no_args(), true, &[]).await;
    assert_eq!(ended.bool("forced"), Some(true), "spin never stops by itself: {ended}");
}

#[tokio::test]
async fn cancel_stops_a_guest_blocked_in_a_host_call_and_runs_cleanup() {
    let ended = cancel_and_check("demo", "stall", no_args(), true, &[]).await;
    assert_eq!(ended.bool("forced"), Some(true), "stall never stops by itself: {ended}");
}

#[tokio::test]
async fn cancel_with_zero_grace_stops_at_once() {
    let ended = cancel_and_check("demo", "spin", no_args(), true, &["--cancel-grace", "0"]).await;
    assert_eq!(ended.bool("forced"), Some(true), "{ended}");
}

#[tokio::test]
async fn a_component_built_the_cargo_component_way_cancels_the_same() {
    // wasm32-wasip1 + the preview1 adapter, importing wasi:*@0.2.3.
    let ended = cancel_and_check("demo-wasip1", "spin", no_args(), true, &[]).await;
    assert_eq!(ended.bool("forced"), Some(true), "{ended}");
    let ended = cancel_and_check("demo-wasip1", "stall", no_args(), true, &[]).await;
    assert_eq!(ended.bool("forced"), Some(true), "{ended}");
}
