//! URIs from a client or a guest, as the third security review attacked
//! them: matching is one pass and a URI is bounded before anything is
//! matched or kept, so a long URI against long templates costs the protocol
//! runtime nothing, a tool's `client.resource-updated` cannot hold a
//! thread past its deadline, subscriptions cannot grow the host without
//! bound, and one component's fixed URI cannot shadow another's template.

use std::time::{Duration, Instant};

use rmcp::model::{ReadResourceRequestParams, SubscribeRequestParams};
use serde_json::json;

use crate::harness::{Host, PATIENCE, Start, guest, host_binary, rss_kib, run_with_stdin_open, text_of};

/// The CPU time the process `pid` has used, user and system.
fn cpu_time(pid: u32) -> Duration {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    // Fields after the command's closing parenthesis: utime and stime are
    // the 12th and 13th, in clock ticks (100 a second on Linux).
    let fields: Vec<&str> = stat.rsplit_once(')').unwrap().1.split_whitespace().collect();
    let ticks: u64 = fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap();
    Duration::from_millis(ticks * 10)
}

/// `resources/read` of a 1 MiB URI against 250 templates whose literals
/// nearly match it everywhere: before, 6.2 CPU-seconds on the protocol
/// runtime and pings delayed by half a second; now refused at once.
#[tokio::test]
async fn a_long_uri_against_long_templates_costs_the_protocol_runtime_nothing() {
    let host = Host::start(Start::new("hostile-long-templates", &[])).await;
    let pid = host.child.id().unwrap();
    let peer = host.client.peer();
    let before = cpu_time(pid);
    let uri = format!("hostile://{}", "ab".repeat(512 << 10));
    let reads = (0..4).map(|_| peer.read_resource(ReadResourceRequestParams::new(uri.clone())));
    let started = Instant::now();
    for refused in futures_util::future::join_all(reads).await {
        let err = format!("{:?}", refused.unwrap_err());
        assert!(err.contains("more than the 8192"), "{err}");
        assert!(err.len() < 4096, "the URI was echoed back: {} bytes", err.len());
    }
    let spent = cpu_time(pid) - before;
    assert!(spent < Duration::from_secs(1), "4 reads cost {spent:?} of CPU (was 25 s)");
    assert!(started.elapsed() < Duration::from_secs(5), "{:?}", started.elapsed());

    // Within the bound, matching is linear: 250 templates, 8 KiB of near misses.
    let uri = format!("hostile://{}", "ab".repeat(4000));
    let err = format!("{:?}", peer.read_resource(ReadResourceRequestParams::new(uri)).await.unwrap_err());
    assert!(err.contains("no resource"), "{err}");
    assert!(cpu_time(pid) - before < Duration::from_secs(2));
}

/// A tool's `client.resource-updated` with an 8 MiB URI: before, matching
/// it ignored `--timeout 3s` and a cancel (no answer after 16 s, a guest
/// thread held); now it is dropped unmatched and the call ends at once.
#[tokio::test]
async fn a_long_uri_announced_by_a_tool_is_dropped_within_the_calls_deadline() {
    let host = Host::start(Start::new("hostile-long-templates", &["--timeout", "3s"])).await;
    // A call past its `--timeout` would be stopped and answered as an error:
    // its own result says it ended within the deadline.
    let result = host.call("announce_long_uri", json!({ "kib": 8 << 10 })).await.unwrap();
    assert_eq!(text_of(&result), "announced", "{result:?}");
    host.stderr
        .wait_for_event("the dropped update", |event| event.message().contains("too long to be a resource"))
        .await;
    let next = host.call("announce_long_uri", json!({ "kib": 1 })).await.unwrap();
    assert_eq!(text_of(&next), "announced", "the next call is served");
}

/// Subscriptions keep their URIs, so they are charged: a URI past 8 KiB is
/// refused before it is kept, and a session's URIs together stay within
/// 256 KiB. Before: 743 subscriptions of 4 MiB reached 3 GB in 13 s.
// `resources/subscribe` is how the 2025 protocol versions subscribe.
#[allow(deprecated)]
#[tokio::test]
async fn a_sessions_subscriptions_are_bounded_in_bytes() {
    let host = Host::start(Start::new("everything", &[])).await;
    let pid = host.child.id().unwrap();
    let peer = host.client.peer();
    let baseline = rss_kib(pid);
    let huge = format!("test://template/{}/data", "x".repeat(1 << 20));
    for _ in 0..64 {
        let err = peer.subscribe(SubscribeRequestParams::new(huge.clone())).await.unwrap_err();
        assert!(format!("{err:?}").contains("more than the 8192"), "{err:?}");
    }
    // 8 KiB URIs the template matches: 31 fit in 256 KiB, the rest are refused.
    let mut followed = 0;
    let mut refused = 0;
    for n in 0..64 {
        let uri = format!("test://template/{n}{}/data", "y".repeat(8100));
        match peer.subscribe(SubscribeRequestParams::new(uri)).await {
            Ok(()) => followed += 1,
            Err(err) => {
                assert!(format!("{err:?}").contains("256 KiB of URIs together"), "{err:?}");
                refused += 1;
            }
        }
    }
    assert_eq!((followed, refused), (32, 32), "followed {followed}, refused {refused}");
    let grown = rss_kib(pid).saturating_sub(baseline);
    assert!(grown < 64 << 10, "the host grew by {grown} KiB");
}

/// One component's fixed URI that another's template matches is refused at
/// load, naming both, as a URI offered twice is.
#[test]
fn a_fixed_uri_that_shadows_another_components_template_is_refused_at_load() {
    let everything = guest("everything").display().to_string();
    let shadow = guest("hostile-shadow").display().to_string();
    let started = Instant::now();
    let output = run_with_stdin_open(std::process::Command::new(host_binary()).args([
        "--component",
        &everything,
        "--component",
        &shadow,
    ]));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "both were served: {stderr}");
    // Before: `test://template/secret/data` went to hostile, silently.
    assert!(
        stderr.contains("resource `test://template/secret/data` of")
            && stderr.contains("is also matched by the resource template `test://template/{id}/data`"),
        "{stderr}"
    );
    assert!(started.elapsed() < PATIENCE, "{:?}", started.elapsed());
}
