//! Tiered compilation (issue 14): for each component, process start →
//! first `tools/list` answered and → first `tools/call` (`echo`) answered,
//! on a cold compile cache with tiering (baseline code first) and with
//! `--no-tiering` (optimized code compiled before serving: the behaviour
//! before tiering), and on a warm cache; then `echo` latency on baseline
//! code, after the swap to optimized code, and with `--no-tiering`.

use std::time::{Duration, Instant};

use serde_json::json;

use crate::harness::Host;
use crate::{Samples, echo_times, ms, start_component};

/// Start → first `tools/list` and → first `echo` answered.
struct StartTimes {
    list: Duration,
    call: Duration,
}

/// Starts `component` with `args`, lists its tools, calls `echo` once;
/// returns the host (still running) and the times.
async fn start_and_call(component: &str, args: &[&str]) -> (Host, StartTimes) {
    let started = Instant::now();
    // Only tiering's own lines: no per-call logging in the echo figures.
    let host = start_component(component, args, "mcp_wasm_host::loader=info,warn").await;
    host.client.peer().list_all_tools().await.unwrap();
    let list = started.elapsed();
    host.call("echo", json!({ "text": "first" })).await.unwrap();
    (host, StartTimes { list, call: started.elapsed() })
}

fn swapped(host: &Host) -> bool {
    host.stderr.events().iter().any(|e| e.message().starts_with("optimized code replaced"))
}

/// Waits until the host logs that optimized code replaced the baseline code.
async fn wait_for_swap(host: &Host) {
    let deadline = Instant::now() + Duration::from_secs(120);
    while !swapped(host) {
        assert!(Instant::now() < deadline, "no swap to optimized code:\n{}", host.stderr.dump());
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn p50s(times: &[StartTimes]) -> (Duration, Duration) {
    let list = Samples::new(times.iter().map(|t| t.list).collect());
    let call = Samples::new(times.iter().map(|t| t.call).collect());
    (list.p50(), call.p50())
}

/// The section: `--only tiering` (`--components a,b` picks other fixtures).
pub async fn tiering(start_trials: usize, echo_calls: usize) {
    let args: Vec<String> = std::env::args().collect();
    let components: Vec<String> = match args.iter().position(|a| a == "--components") {
        Some(i) => args[i + 1].split(',').map(str::to_string).collect(),
        None => ["demo", "python-tool", "js-tool"].map(str::to_string).to_vec(),
    };
    println!(
        "## tiered compilation: start → first tools/list / first tools/call answered (median of \
         {start_trials} starts each; cold = empty cache directory), echo p50 ({echo_calls} calls)\n"
    );
    println!(
        "| component | cold, tiered: list / call | cold, --no-tiering: list / call | warm: list / call | \
         echo on baseline | echo after swap | echo --no-tiering |"
    );
    println!("|---|---|---|---|---|---|---|");
    for component in &components {
        let (mut tiered, mut untiered, mut warm) = (Vec::new(), Vec::new(), Vec::new());
        let (mut on_baseline, mut after_swap, mut no_tiering) = (Vec::new(), Vec::new(), Vec::new());
        for trial in 0..start_trials {
            // Cold, tiered: a fresh cache each time; the optimized code it
            // caches in the background makes the warm start below.
            let cache = tempfile::tempdir().unwrap();
            let cache_arg = cache.path().display().to_string();
            let (host, times) = start_and_call(component, &["--cache-dir", &cache_arg]).await;
            tiered.push(times);
            if trial == 0 {
                // Echo on baseline code, for as long as the swap leaves room.
                while on_baseline.len() < echo_calls && !swapped(&host) {
                    on_baseline.extend(echo_times(&host, 10).await.0);
                }
                wait_for_swap(&host).await;
                echo_times(&host, 50).await;
                after_swap.extend(echo_times(&host, echo_calls).await.0);
            } else {
                wait_for_swap(&host).await;
            }
            host.disconnect().await;
            let (host, times) = start_and_call(component, &["--cache-dir", &cache_arg]).await;
            warm.push(times);
            host.disconnect().await;

            let (host, times) = start_and_call(component, &["--no-cache", "--no-tiering"]).await;
            untiered.push(times);
            if trial == 0 {
                echo_times(&host, 50).await;
                no_tiering.extend(echo_times(&host, echo_calls).await.0);
            }
            host.disconnect().await;
        }
        let pair = |times: &[StartTimes]| {
            let (list, call) = p50s(times);
            format!("{} / {}", ms(list), ms(call))
        };
        println!(
            "| {component} | {} | {} | {} | {} | {} | {} |",
            pair(&tiered),
            pair(&untiered),
            pair(&warm),
            ms(Samples::new(on_baseline).p50()),
            ms(Samples::new(after_swap).p50()),
            ms(Samples::new(no_tiering).p50()),
        );
    }
    println!();
}
