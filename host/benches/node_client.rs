//! The host and the native server driven by the TypeScript SDK's client (the
//! client most MCP hosts use), through `node_echo.mjs`: it starts both
//! servers, alternates blocks between them and prints its figures as JSON,
//! which this module reads back.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use serde_json::{Value, json};

use crate::harness::Start;
use crate::native;

/// The names the driver reports its figures under.
pub const HOST: &str = "host";
/// See [`HOST`].
pub const NATIVE: &str = "native";
/// See [`HOST`]: the native server on the host's stdio streams.
pub const NATIVE_REACTOR: &str = "native-reactor";

/// How to start the host as the rmcp-driven sections do (the demo component,
/// logging at warn, `BENCH_HOST_BINARY` honoured), as the driver's JSON.
fn host_server() -> Value {
    let mut start = Start::new("demo", &[]).log("warn");
    if let Some(binary) = std::env::var_os("BENCH_HOST_BINARY") {
        start.program = binary.into();
    }
    let mut args = vec!["--log-format".to_string(), "json".to_string()];
    args.append(&mut start.args);
    json!({
        "name": HOST,
        "command": start.program,
        "args": args,
        "env": { "RUST_LOG": start.rust_log, "NO_COLOR": "1" },
    })
}

/// This bench binary, told by its environment to serve natively (`how`:
/// `1` on rmcp's `stdio()`, `reactor` on the host's stdio streams).
fn native_server(name: &str, how: &str) -> Value {
    json!({
        "name": name,
        "command": std::env::current_exe().unwrap(),
        "args": [],
        "env": { (native::SERVE_ENV): how, "RUST_LOG": "warn" },
    })
}

/// Runs the driver in `mode` (`echo` or `throughput`) for `calls` calls per
/// server; its figures by server name, or why there are none (no `node`, or
/// the SDK is not installed: `just setup --with-node`).
async fn drive(mode: &str, calls: usize) -> Result<BTreeMap<String, Vec<f64>>, String> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/node_echo.mjs");
    let servers = [host_server(), native_server(NATIVE, "1"), native_server(NATIVE_REACTOR, "reactor")];
    let config = json!({ "mode": mode, "calls": calls, "servers": servers });
    let output = tokio::process::Command::new("node")
        .arg(script)
        .arg(config.to_string())
        .stderr(std::process::Stdio::inherit())
        .output()
        .await
        .map_err(|e| format!("cannot run node: {e}"))?;
    if !output.status.success() {
        return Err(format!("the node driver failed ({})", output.status));
    }
    serde_json::from_slice(&output.stdout).map_err(|e| format!("unreadable driver output: {e}"))
}

/// Per-call latencies of `calls` sequential `echo` calls (plus 200 warm-up
/// calls each, not counted), in 10 interleaved blocks: host, native,
/// native on the host's stdio streams.
pub async fn echo_latencies(calls: usize) -> Result<[Vec<Duration>; 3], String> {
    let mut figures = drive("echo", calls).await?;
    let mut take = |name: &str| -> Vec<Duration> {
        let micros = figures.remove(name).unwrap_or_default();
        micros.into_iter().map(|us| Duration::from_secs_f64(us / 1e6)).collect()
    };
    Ok([take(HOST), take(NATIVE), take(NATIVE_REACTOR)])
}

/// Calls/s at 32 in flight over 5 alternating rounds of `calls / 5` calls
/// (after a 500-call warm-up each): the median round of each server, in
/// the order of [`echo_latencies`].
pub async fn calls_per_second(calls: usize) -> Result<[f64; 3], String> {
    let figures = drive("throughput", calls).await?;
    let median = |name: &str| {
        let mut rounds = figures.get(name).cloned().unwrap_or_default();
        rounds.sort_by(f64::total_cmp);
        rounds.get(rounds.len() / 2).copied().unwrap_or(f64::NAN)
    };
    Ok([median(HOST), median(NATIVE), median(NATIVE_REACTOR)])
}
