//! The host's memory as a whole (`--only memory`): resident memory over
//! sequential and concurrent calls that each touch 200 MiB, at the default
//! flags, and the idle memory after the Python example's 32-in-flight run.
//! Run it once with this build and once with `BENCH_HOST_BINARY` set to an
//! older build to compare.

use std::time::{Duration, Instant};

use serde_json::json;

use super::harness::{Host, rss_kib};
use super::{calls_per_second, start_component};

fn rss_mib(host: &Host) -> f64 {
    rss_kib(host.child.id().unwrap()) as f64 / 1024.0
}

/// How long the bench waits after the last call before reading idle RSS.
const SETTLE: Duration = Duration::from_secs(2);

pub(super) async fn memory() {
    println!("## the host's memory as a whole (RSS, MiB)\n");
    sequential().await;
    concurrent().await;
    python_idle().await;
}

/// Twelve `grow_touch 200` calls one after another, each answer awaited.
async fn sequential() {
    let host = start_component("hostile", &[], "warn").await;
    host.call("grow_touch", json!({ "mib": 1 })).await.unwrap();
    let start = rss_mib(&host);
    let mut after = Vec::new();
    for _ in 0..12 {
        let result = host.call("grow_touch", json!({ "mib": 200 })).await.unwrap();
        assert_eq!(result.is_error, Some(false), "{result:?}");
        after.push(rss_mib(&host));
    }
    tokio::time::sleep(SETTLE).await;
    let settled = rss_mib(&host);
    let shown: Vec<String> = after.iter().map(|mib| format!("{mib:.0}")).collect();
    println!(
        "sequential 200 MiB calls: start {start:.0}; after each call {}; {SETTLE:?} later {settled:.0}\n",
        shown.join(", ")
    );
}

/// 32 `grow_touch 200` calls at once; RSS sampled every 20 ms.
async fn concurrent() {
    use futures_util::StreamExt as _;
    let host = start_component("hostile", &[], "warn").await;
    host.call("grow_touch", json!({ "mib": 1 })).await.unwrap();
    let start = rss_mib(&host);
    let pid = host.child.id().unwrap();
    let sampling = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(true));
    let sampler = {
        let sampling = sampling.clone();
        tokio::spawn(async move {
            let mut peak = 0u64;
            while sampling.load(std::sync::atomic::Ordering::Relaxed) {
                peak = peak.max(rss_kib(pid));
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            peak as f64 / 1024.0
        })
    };
    let started = Instant::now();
    let results: Vec<_> = futures_util::stream::iter(0..32)
        .map(|_| host.call("grow_touch", json!({ "mib": 200 })))
        .buffer_unordered(32)
        .collect()
        .await;
    let took = started.elapsed();
    sampling.store(false, std::sync::atomic::Ordering::Relaxed);
    let peak = sampler.await.unwrap();
    let ok = results.iter().filter(|r| r.as_ref().is_ok_and(|r| r.is_error == Some(false))).count();
    let after = rss_mib(&host);
    tokio::time::sleep(SETTLE).await;
    let settled = rss_mib(&host);
    println!(
        "32 concurrent 200 MiB calls: start {start:.0}; peak {peak:.0}; {ok} answered ok, {} refused, in {took:.2?}; \
         after {after:.0}; {SETTLE:?} later {settled:.0}\n",
        32 - ok
    );
}

/// The Python example at 32 in flight, then idle.
async fn python_idle() {
    let host = start_component("python-tool", &[], "warn").await;
    host.client.peer().list_all_tools().await.unwrap();
    calls_per_second(&host, 100, 1).await;
    let start = rss_mib(&host);
    let rate = calls_per_second(&host, 3000, 32).await;
    let after = rss_mib(&host);
    tokio::time::sleep(SETTLE).await;
    let settled = rss_mib(&host);
    println!(
        "python-tool, 3000 echo calls at 32 in flight ({rate:.0} calls/s): idle before {start:.0}; \
         right after {after:.0}; {SETTLE:?} later {settled:.0}\n"
    );
}
