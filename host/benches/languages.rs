//! The same `echo` tool as a guest in each language, each against what a
//! user would run instead: a native server on that language's official MCP
//! SDK (`--only languages`). The Rust demo against the native rmcp server
//! (`native.rs`), the Python example against the Python SDK's `MCPServer`
//! (`native_sdk_echo.py`), the JavaScript example against the TypeScript
//! SDK's `McpServer` (`native_sdk_echo.mjs`); every server has the same
//! `echo` (same input schema, the text plus a structured result).
//!
//! All six servers stay up and are driven by the TypeScript SDK's client
//! (`node_echo.mjs`) in interleaved rounds: each round, each server in turn
//! answers sequential calls (p50, p99), then calls at 32 in flight (calls/s,
//! median of the rounds), then its resident memory is read (median of the
//! rounds). Then the hosts alone: RSS once started, and start → first
//! `tools/list` with a cold and a warm compile cache.
//!
//! The SDKs come from `scripts/setup.sh --with-node`; without them the
//! section fails and says so. `--components a,b` picks some of the three
//! (or `js-tool-interpreter`: the JavaScript example built for the
//! interpreter and put in target/guests by hand, to compare in one run).

use std::time::Duration;

use serde_json::Value;

use super::harness::{self, rss_kib};
use super::{
    Samples, Scale, components, host_knows, ms, node_client, start_component, time_component_to_list,
};

/// Interleaved rounds (the rates and memory are medians over them).
const ROUNDS: usize = 5;

/// The native baseline of a guest: its label and how the driver starts it.
fn baseline(component: &str) -> (&'static str, Value) {
    let name = format!("{component} (native)");
    match component {
        "demo" => ("native rmcp (Rust)", node_client::native_server(&name, "1")),
        "python-tool" => ("Python SDK MCPServer", node_client::python_sdk_server(&name)),
        // `js-tool-interpreter`: the same example built for the interpreter
        // (`node guest-tools/js/build.mjs --interpreter`), beside the
        // ahead-of-time one in the same rounds.
        "js-tool" | "js-tool-interpreter" => {
            ("TypeScript SDK McpServer", node_client::typescript_sdk_server(&name))
        }
        other => {
            panic!("no native baseline for {other}: the languages section knows demo, python-tool, js-tool")
        }
    }
}

pub(super) async fn languages(scale: Scale) {
    if let Some(why) = node_client::sdks_missing() {
        panic!(
            "the languages section measures each guest against a native server on its language's official \
             MCP SDK, and {why}: run `scripts/setup.sh --with-node`"
        );
    }
    let components = components(&["demo", "python-tool", "js-tool"]);
    // The big components compile cold in seconds: fewer cold starts, and
    // a quarter of the throughput calls.
    let (cold_trials, warm_trials) = (scale.start_trials.div_ceil(5), scale.start_trials);
    let concurrent = scale.concurrent_calls / 4;
    let cache = tempfile::tempdir().unwrap();
    let cache_dir = cache.path().display().to_string();
    let cached = ["--cache-dir", cache_dir.as_str()];

    let mut servers = Vec::new();
    let mut rss_idle = Vec::new();
    for component in &components {
        // Compile into the cache first: a host that compiled the component
        // itself keeps the compiler's memory, which is not the tool's cost.
        // `--no-tiering`: a tiered host answers on baseline code and may be
        // gone before its optimized code is cached (a build from before
        // tiering has no such flag, and needs none).
        let mut prime = cached.to_vec();
        if host_knows("--no-tiering") {
            prime.push("--no-tiering");
        }
        time_component_to_list(component, &prime).await;
        let host = start_component(component, &cached, "warn").await;
        host.client.peer().list_all_tools().await.unwrap();
        rss_idle.push(rss_kib(host.child.id().unwrap()));
        host.disconnect().await;
        servers.push(node_client::host_server(component, component, &cached));
        servers.push(baseline(component).1);
    }
    let mut figures = node_client::rounds(&servers, scale.echo_calls, concurrent, ROUNDS)
        .await
        .unwrap_or_else(|why| panic!("the languages section: {why}"));

    let mut starts = Vec::new();
    for component in &components {
        let (mut cold, mut warm) = (Vec::new(), Vec::new());
        for _ in 0..cold_trials {
            cold.push(time_component_to_list(component, &["--no-cache"]).await);
        }
        for _ in 0..warm_trials {
            warm.push(time_component_to_list(component, &cached).await);
        }
        starts.push((Samples::new(cold), Samples::new(warm)));
    }

    println!(
        "## each language's guest against a native server on its official SDK: TypeScript SDK client, \
         {ROUNDS} interleaved rounds of {} sequential echo calls and {} at 32 in flight each\n",
        scale.echo_calls / ROUNDS,
        concurrent / ROUNDS
    );
    println!("| server | echo p50 | echo p99 | calls/s (32 in flight) | RSS after | Pss after |");
    println!("|---|---|---|---|---|---|");
    let mut ratios = Vec::new();
    for component in &components {
        let (label, _) = baseline(component);
        let guest = summary(figures.remove(component.as_str()).expect("the guest's figures"));
        let native =
            summary(figures.remove(&format!("{component} (native)")).expect("the baseline's figures"));
        for (name, s) in [(format!("mcp-wasm-host, {component}"), &guest), (label.to_string(), &native)] {
            println!(
                "| {name} | {} | {} | {:.0} | {:.1} MiB | {:.1} MiB |",
                ms(s.echo.p50()),
                ms(s.echo.p99()),
                s.rate,
                s.rss_kib / 1024.0,
                s.pss_kib / 1024.0
            );
        }
        ratios.push(format!(
            "| {component} / {label} | {:.2}× | {:.2}× | {:.2}× | {:.2}× |",
            guest.echo.p50().as_secs_f64() / native.echo.p50().as_secs_f64(),
            guest.echo.p99().as_secs_f64() / native.echo.p99().as_secs_f64(),
            guest.rate / native.rate,
            guest.rss_kib / native.rss_kib,
        ));
    }
    println!("\nratio (guest / native SDK server; p50 and p99 lower is better, calls/s higher):\n");
    println!("| pair | p50 | p99 | calls/s at 32 | RSS |\n|---|---|---|---|---|");
    println!("{}\n", ratios.join("\n"));

    println!(
        "the hosts alone: start → first tools/list ({cold_trials} cold, {warm_trials} warm), RSS once started\n"
    );
    println!("| component | size | RSS idle | cold start | warm start |\n|---|---|---|---|---|");
    for (i, component) in components.iter().enumerate() {
        let size = std::fs::metadata(harness::guest(component)).map(|m| m.len()).unwrap_or(0);
        let (cold, warm) = &starts[i];
        println!(
            "| {component} | {:.1} MB | {:.1} MiB | {} | {} |",
            size as f64 / 1e6,
            rss_idle[i] as f64 / 1024.0,
            ms(cold.p50()),
            ms(warm.p50()),
        );
    }
    println!();
}

/// One server's figures, summarised: latencies, the median round's rate,
/// the median round's memory.
struct Summary {
    echo: Samples,
    rate: f64,
    rss_kib: f64,
    pss_kib: f64,
}

fn summary(m: node_client::Measured) -> Summary {
    Summary {
        echo: Samples::new(m.latencies.iter().map(|us| Duration::from_secs_f64(us / 1e6)).collect()),
        rate: node_client::median(&m.rates),
        rss_kib: node_client::median(&m.rss_kib),
        pss_kib: node_client::median(&m.pss_kib),
    }
}
