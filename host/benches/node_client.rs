//! Servers driven by the TypeScript SDK's client (the client most MCP hosts
//! use), through `node_echo.mjs`: it starts the servers, alternates blocks
//! between them and prints its figures as JSON, which this module reads
//! back. The servers: the host, the native rmcp server (`native.rs`), and
//! for the `languages` section native servers on the official Python and
//! TypeScript SDKs (`native_sdk_echo.py`, `native_sdk_echo.mjs`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
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

/// The workspace root (the SDKs live under it: `tests/ts/node_modules`,
/// `.tools/py`).
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

/// The host serving `component` with `args`, as the rmcp-driven sections
/// start it (logging at warn, `BENCH_HOST_BINARY` honoured), as the
/// driver's JSON.
pub fn host_server(name: &str, component: &str, args: &[&str]) -> Value {
    let mut start = Start::new(component, args).log("warn");
    if let Some(binary) = std::env::var_os("BENCH_HOST_BINARY") {
        start.program = binary.into();
    }
    let mut all = vec!["--log-format".to_string(), "json".to_string()];
    all.append(&mut start.args);
    json!({
        "name": name,
        "command": start.program,
        "args": all,
        "env": { "RUST_LOG": start.rust_log, "NO_COLOR": "1" },
    })
}

/// This bench binary, told by its environment to serve natively (`how`:
/// `1` on rmcp's `stdio()`, `reactor` on the host's stdio streams).
pub fn native_server(name: &str, how: &str) -> Value {
    json!({
        "name": name,
        "command": std::env::current_exe().unwrap(),
        "args": [],
        "env": { (native::SERVE_ENV): how, "RUST_LOG": "warn" },
    })
}

/// The Python interpreter of the virtualenv holding the Python MCP SDK.
fn python() -> PathBuf {
    root().join(".tools/py/bin/python")
}

/// The TypeScript SDK's package (the client and `McpServer`).
fn typescript_sdk() -> PathBuf {
    root().join("tests/ts/node_modules/@modelcontextprotocol/sdk")
}

/// `native_sdk_echo.py`: the official Python SDK's `MCPServer`.
pub fn python_sdk_server(name: &str) -> Value {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/native_sdk_echo.py");
    json!({ "name": name, "command": python(), "args": [script], "env": { "PYTHONDONTWRITEBYTECODE": "1" } })
}

/// `native_sdk_echo.mjs`: the official TypeScript SDK's `McpServer`.
pub fn typescript_sdk_server(name: &str) -> Value {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/native_sdk_echo.mjs");
    json!({ "name": name, "command": "node", "args": [script], "env": {} })
}

/// Why the native SDK servers cannot run, if they cannot: no `node`, no
/// TypeScript SDK, no virtualenv, or no `mcp` in it.
pub fn sdks_missing() -> Option<String> {
    let runs = |program: &Path, args: &[&str]| {
        std::process::Command::new(program)
            .args(args)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status()
            .is_ok_and(|status| status.success())
    };
    if !runs(Path::new("node"), &["--version"]) {
        return Some("`node` is not on PATH".into());
    }
    if !typescript_sdk().join("package.json").exists() {
        return Some(format!("no TypeScript SDK at {}", typescript_sdk().display()));
    }
    if !runs(&python(), &["-c", "import mcp.server"]) {
        return Some(format!("no Python MCP SDK in {}", python().display()));
    }
    None
}

/// Runs the driver with `config` (its mode, sizes and servers); its JSON
/// figures, or why there are none (no `node`, or the SDK is not installed:
/// `just setup --with-node`).
async fn drive(config: Value) -> Result<Value, String> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/node_echo.mjs");
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

/// The host on the demo and the two native rmcp servers, in that order.
fn echo_servers() -> [Value; 3] {
    [host_server(HOST, "demo", &[]), native_server(NATIVE, "1"), native_server(NATIVE_REACTOR, "reactor")]
}

/// Per-call latencies of `calls` sequential `echo` calls (plus 200 warm-up
/// calls each, not counted), in 10 interleaved blocks: host, native,
/// native on the host's stdio streams.
pub async fn echo_latencies(calls: usize) -> Result<[Vec<Duration>; 3], String> {
    let figures = drive(json!({ "mode": "echo", "calls": calls, "servers": echo_servers() })).await?;
    let figures: BTreeMap<String, Vec<f64>> =
        serde_json::from_value(figures).map_err(|e| format!("unreadable driver output: {e}"))?;
    let take = |name: &str| -> Vec<Duration> {
        let micros = figures.get(name).cloned().unwrap_or_default();
        micros.into_iter().map(|us| Duration::from_secs_f64(us / 1e6)).collect()
    };
    Ok([take(HOST), take(NATIVE), take(NATIVE_REACTOR)])
}

/// The median of `values` (NaN if empty).
pub fn median(values: &[f64]) -> f64 {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    sorted.get(sorted.len() / 2).copied().unwrap_or(f64::NAN)
}

/// Calls/s at 32 in flight over 5 alternating rounds of `calls / 5` calls
/// (after a 500-call warm-up each): the median round of each server, in
/// the order of [`echo_latencies`].
pub async fn calls_per_second(calls: usize) -> Result<[f64; 3], String> {
    let figures = drive(json!({ "mode": "throughput", "calls": calls, "servers": echo_servers() })).await?;
    let figures: BTreeMap<String, Vec<f64>> =
        serde_json::from_value(figures).map_err(|e| format!("unreadable driver output: {e}"))?;
    let median_of = |name: &str| median(figures.get(name).map_or(&[][..], Vec::as_slice));
    Ok([median_of(HOST), median_of(NATIVE), median_of(NATIVE_REACTOR)])
}

/// One server's figures from [`rounds`].
#[derive(serde::Deserialize)]
pub struct Measured {
    /// Each sequential call's latency, µs.
    pub latencies: Vec<f64>,
    /// Calls/s at 32 in flight, one per round.
    pub rates: Vec<f64>,
    /// VmRSS right after each round's calls at 32 in flight, KiB.
    pub rss_kib: Vec<f64>,
    /// Pss at the same moments, KiB.
    pub pss_kib: Vec<f64>,
}

/// `rounds` rounds over `servers`, each server in turn: `calls / rounds`
/// sequential `echo` calls, then `concurrent / rounds` at 32 in flight,
/// then its memory read (after a warm-up of 200 sequential and 500
/// concurrent calls each). Figures by server name.
pub async fn rounds(
    servers: &[Value],
    calls: usize,
    concurrent: usize,
    rounds: usize,
) -> Result<BTreeMap<String, Measured>, String> {
    let config = json!({
        "mode": "rounds", "calls": calls, "concurrent": concurrent, "rounds": rounds, "servers": servers,
    });
    serde_json::from_value(drive(config).await?).map_err(|e| format!("unreadable driver output: {e}"))
}
