//! Benchmarks over the real wire: the host binary driven by rmcp's client
//! over stdio, compared with a native rmcp server doing the same work,
//! measured in the same run. The `echo` and `throughput` sections also drive
//! both with the TypeScript SDK's client (`node_echo.mjs`, needs `node` and
//! `just setup --with-node`). The `languages` section measures each
//! language's guest against a native server on that language's official
//! MCP SDK (`languages.rs`; it needs `just setup --with-node`). The `auth`
//! section measures what authorization costs per call over `--http`, with
//! the bench's own authorization server on loopback (`auth.rs`). The
//! `tasks` section measures a task's round trip through three replicas
//! sharing a `--task-store` (`tasks.rs`; it needs `redis-server`).
//!
//!     cargo bench --profile dist -p mcp-wasm-host --bench wire            (full run)
//!     cargo bench --profile dist -p mcp-wasm-host --bench wire -- --quick (smoke run)
//!     cargo bench --profile dist -p mcp-wasm-host --bench wire -- --unprivileged (the
//!         host runs as user nobody, through `setpriv`: what a user without
//!         CAP_SYS_NICE gets)
//!
//! `--profile dist` (what `just bench` runs) builds the host as it ships and
//! the native baselines the same way; without it both are `release` builds.
//!
//! `BENCH_HOST_BINARY=PATH` runs another build of the host (an older commit's)
//! in place of this one, so two versions can be alternated in one session.
//!
//! Prints medians, p99s and ratios; BENCHMARKS.md records the figures.

mod auth;
#[path = "../../tests/e2e/harness.rs"]
mod harness;
mod http_load;
mod languages;
mod memory;
mod native;
mod node_client;
mod plain;
mod tasks;
mod tiering;
mod traces;

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use harness::{Event, Host, Start, approval_answer, files_in, no_args, params, rss_kib, wait_for_lock};
use rmcp::model::CallToolResponse;
use serde_json::{Value, json};

fn main() {
    if std::env::var_os(native::SERVE_ENV).is_some() {
        return native::serve();
    }
    let args: Vec<String> = std::env::args().collect();
    let quick = args.iter().any(|a| a == "--quick");
    UNPRIVILEGED.store(args.iter().any(|a| a == "--unprivileged"), Ordering::Relaxed);
    // `--only NAME` runs one section: echo, throughput, cancel,
    // cancel-languages, cancel-busy,
    // client, approval, neighbour, startup, fuel, tiering, languages, http,
    // auth, memory, plain, tasks.
    let only = args.iter().position(|a| a == "--only").and_then(|i| args.get(i + 1)).cloned();
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    runtime.block_on(run(if quick { Scale::QUICK } else { Scale::FULL }, only));
}

#[derive(Clone, Copy)]
struct Scale {
    cancel_trials: usize,
    echo_calls: usize,
    concurrent_calls: usize,
    start_trials: usize,
    compute_trials: usize,
    http_rounds: usize,
    http_span: Duration,
}

impl Scale {
    const FULL: Scale = Scale {
        cancel_trials: 200,
        echo_calls: 3000,
        concurrent_calls: 20_000,
        start_trials: 20,
        compute_trials: 15,
        http_rounds: 5,
        http_span: Duration::from_secs(4),
    };
    const QUICK: Scale = Scale {
        cancel_trials: 20,
        echo_calls: 200,
        concurrent_calls: 1000,
        start_trials: 3,
        compute_trials: 3,
        http_rounds: 1,
        http_span: Duration::from_secs(1),
    };
}

async fn run(scale: Scale, only: Option<String>) {
    let wanted = |name: &str| only.as_deref().is_none_or(|only| only == name);
    println!("# mcp-wasm-host wire benchmarks\n");
    if wanted("echo") {
        echo_round_trip(scale).await;
    }
    if wanted("throughput") {
        concurrent_throughput(scale).await;
    }
    if wanted("cancel") {
        for grace in ["0", "100ms"] {
            for tool in ["spin", "stall"] {
                cancel_latency("demo", tool, grace, scale).await;
            }
        }
    }
    if wanted("cancel-languages") {
        // `spin` ignores its `cancelled` in every language: the host has to
        // stop it, then run its cleanup (which removes its lock).
        for component in components(&["demo", "python-tool", "js-tool"]) {
            cancel_latency(&component, "spin", "0", scale).await;
        }
    }
    if wanted("cancel-busy") {
        for tool in ["spin", "stall"] {
            cancel_beside_spinners(tool, scale).await;
        }
    }
    if wanted("client") {
        withdraw_latency(scale).await;
        progress_overhead(scale).await;
    }
    if wanted("approval") {
        approval_pauses(scale).await;
    }
    if wanted("neighbour") {
        noisy_neighbour(scale).await;
    }
    if wanted("startup") {
        startup(scale).await;
    }
    if wanted("fuel") {
        fuel_versus_epoch(scale).await;
    }
    if wanted("tiering") {
        tiering::tiering(scale.start_trials.div_ceil(7), scale.echo_calls).await;
    }
    if wanted("languages") {
        languages::languages(scale).await;
    }
    if wanted("http") {
        http_load::http_load(scale.http_rounds, scale.http_span).await;
    }
    if wanted("auth") {
        auth::auth(scale).await;
    }
    if wanted("plain") {
        plain::plain(scale).await;
    }
    if wanted("traces") {
        traces::traces(scale).await;
    }
    if wanted("memory") {
        memory::memory().await;
    }
    if wanted("tasks") {
        tasks::tasks(scale).await;
    }
}

/// Sorted durations with percentile lookups.
struct Samples(Vec<Duration>);

impl Samples {
    fn new(mut samples: Vec<Duration>) -> Self {
        samples.sort();
        Samples(samples)
    }
    fn pct(&self, p: f64) -> Duration {
        let index = ((self.0.len() as f64 - 1.0) * p).round() as usize;
        self.0[index]
    }
    fn p50(&self) -> Duration {
        self.pct(0.5)
    }
    fn p99(&self) -> Duration {
        self.pct(0.99)
    }
}

fn ms(d: Duration) -> String {
    format!("{:.3} ms", d.as_secs_f64() * 1e3)
}

/// Whether hosts run as user nobody (`--unprivileged`).
static UNPRIVILEGED: AtomicBool = AtomicBool::new(false);

async fn start_host(args: &[&str], log: &str) -> Host {
    start_component("demo", args, log).await
}

async fn start_component(component: &str, args: &[&str], log: &str) -> Host {
    start_component_with(component, args, &[], log).await
}

/// [`start_component`] with `env` set for the host.
async fn start_component_with(component: &str, args: &[&str], env: &[(&str, &str)], log: &str) -> Host {
    let unprivileged = UNPRIVILEGED.load(Ordering::Relaxed);
    // A host on the default cache measures optimized code from its first
    // call: the cache is warmed for the default flags, and a flag that
    // changes the code (`--fuel 0`) compiles before serving. Sections that
    // choose their cache (`--no-cache`, `--cache-dir`) choose tiering too.
    let default_cache = !args.iter().any(|arg| *arg == "--no-cache" || *arg == "--cache-dir");
    let mut args = args.to_vec();
    if default_cache && !unprivileged && host_knows("--no-tiering") {
        args.push("--no-tiering");
    }
    let mut start = Start::new(component, &args).log(log);
    start.tap_stdout = false;
    start.env.extend(env.iter().map(|(key, value)| (key.to_string(), value.to_string())));
    start.program = host_under_test();
    if unprivileged {
        start = as_nobody(start);
    } else if default_cache {
        warm_cache(&start.program, component);
    }
    Host::start(start).await
}

/// Compiles `component` into the default compile cache, once per run, so
/// the hosts the bench starts serve optimized code from their first call.
/// With a cold cache (a fresh machine, a new wasmtime, or an old artifact
/// pruned) a host serves baseline code while Cranelift compiles in the
/// background on the same two cores: a JavaScript `spin` cancel measured
/// that way read p50 6 ms, p99 52 ms, instead of 0.7 / 4.5 ms.
fn warm_cache(program: &Path, component: &str) {
    static WARMED: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());
    let mut warmed = WARMED.lock().unwrap();
    if warmed.iter().any(|done| done == component) {
        return;
    }
    // `inspect` compiles optimized code only, and caches it as `serve` would.
    let output = std::process::Command::new(program)
        .arg("inspect")
        .arg(harness::guest(component))
        .stdin(std::process::Stdio::null())
        .output()
        .expect("running inspect");
    assert!(output.status.success(), "inspect {component}: {}", String::from_utf8_lossy(&output.stderr));
    warmed.push(component.to_owned());
}

/// Runs the host as user and group nobody with no supplementary groups and
/// no capabilities, as a user without CAP_SYS_NICE would (a bench run as
/// root would otherwise measure what only root gets). The guests must be
/// readable and any granted directory writable by nobody; the compile cache
/// is off (it must be owned by the user running the host).
fn as_nobody(mut start: Start) -> Start {
    let mut args: Vec<String> = ["--reuid=65534", "--regid=65534", "--clear-groups"].map(String::from).into();
    args.push(start.program.display().to_string());
    args.append(&mut start.args);
    // No cache, so optimized code before serving: baseline code compiling
    // in the background would be measured instead.
    args.push("--no-cache".into());
    if host_knows("--no-tiering") {
        args.push("--no-tiering".into());
    }
    start.args = args;
    start.program = "setpriv".into();
    start
}

/// A directory for lock files that the host can write whoever it runs as.
fn lock_dir() -> tempfile::TempDir {
    use std::os::unix::fs::PermissionsExt as _;
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    dir
}

/// This bench binary again, told by its environment to serve natively
/// (`how`: `1` on rmcp's `stdio()`, `reactor` on the host's stdio streams).
async fn start_native(how: &str) -> Host {
    let start = Start {
        args: vec![],
        rust_log: "warn".into(),
        json_log: false,
        env: vec![(native::SERVE_ENV.into(), how.into())],
        program: std::env::current_exe().unwrap(),
        tap_stdout: false,
        client: Default::default(),
        discover: false,
    };
    Host::start(start).await
}

/// `echo` on each of `hosts`, measured interleaved so the machine's noise
/// falls on all alike: after a warm-up, `scale.echo_calls` sequential calls
/// each in ten alternating blocks, then calls/s with 32 in flight, the
/// median of five alternating rounds.
async fn echo_interleaved<const N: usize>(hosts: &[Host; N], scale: Scale) -> ([Samples; N], [f64; N]) {
    for host in hosts {
        echo_times(host, 200).await;
    }
    let mut times: [Vec<Duration>; N] = std::array::from_fn(|_| Vec::new());
    for _ in 0..10 {
        for (host, times) in hosts.iter().zip(&mut times) {
            times.extend(echo_times(host, scale.echo_calls / 10).await.0);
        }
    }
    let mut rates: [Vec<f64>; N] = std::array::from_fn(|_| Vec::new());
    for _ in 0..5 {
        for (host, rates) in hosts.iter().zip(&mut rates) {
            rates.push(calls_per_second(host, scale.concurrent_calls / 5, 32).await);
        }
    }
    let rates = rates.map(|mut rates| {
        rates.sort_by(f64::total_cmp);
        rates[rates.len() / 2]
    });
    (times.map(Samples::new), rates)
}

async fn echo_times(host: &Host, calls: usize) -> Samples {
    let mut times = Vec::with_capacity(calls);
    for _ in 0..calls {
        let started = Instant::now();
        let result = host.call("echo", json!({ "text": "hello" })).await.unwrap();
        times.push(started.elapsed());
        assert_eq!(result.is_error, Some(false));
    }
    Samples::new(times)
}

/// The servers the `echo` and `throughput` sections compare, in order.
const SERVERS: [&str; 3] = [
    "mcp-wasm-host (wasm component)",
    "native rmcp server, rmcp `stdio()`",
    "native rmcp server, the host's stdio streams",
];

/// Starts the host and the two native servers (see [`SERVERS`]).
async fn echo_servers() -> [Host; 3] {
    [start_host(&[], "warn").await, start_native("1").await, start_native("reactor").await]
}

/// The ratios of the host's figure to each native one.
fn ratios(figures: [f64; 3]) -> String {
    format!(
        "{:.2}x against rmcp `stdio()`, {:.2}x against the same streams",
        figures[0] / figures[1],
        figures[0] / figures[2]
    )
}

async fn echo_round_trip(scale: Scale) {
    let servers = echo_servers().await;
    // Warm all up, then alternate blocks so machine noise hits each alike.
    for server in &servers {
        echo_times(server, 200).await;
    }
    let mut times: [Vec<Duration>; 3] = Default::default();
    for _ in 0..10 {
        for (server, times) in servers.iter().zip(&mut times) {
            times.extend(echo_times(server, scale.echo_calls / 10).await.0);
        }
    }
    drop(servers);
    // The same with the TypeScript SDK's client, in its own interleaved run.
    let node = node_client::echo_latencies(scale.echo_calls).await;
    println!("## echo round trip over stdio ({} sequential calls each, interleaved)\n", scale.echo_calls);
    println!("| client | server | p50 | p99 |\n|---|---|---|---|");
    let mut summary = Vec::new();
    let mut rows = |client: &str, times: [Vec<Duration>; 3]| {
        let samples = times.map(Samples::new);
        for (server, s) in SERVERS.iter().zip(&samples) {
            println!("| {client} | {server} | {} | {} |", ms(s.p50()), ms(s.p99()));
        }
        summary.push(format!(
            "{client} client: p50 {}",
            ratios(samples.each_ref().map(|s| s.p50().as_secs_f64()))
        ));
        summary.push(format!(
            "{client} client: p99 {}",
            ratios(samples.each_ref().map(|s| s.p99().as_secs_f64()))
        ));
    };
    rows("rmcp", times);
    match node {
        Ok(times) => rows("TypeScript SDK", times),
        Err(why) => summary.push(format!("TypeScript SDK client skipped: {why}")),
    }
    println!("\nratio (wasm / native):\n- {}\n", summary.join("\n- "));
}

async fn calls_per_second(host: &Host, total: usize, in_flight: usize) -> f64 {
    use futures_util::StreamExt as _;
    let started = Instant::now();
    let results: Vec<_> = futures_util::stream::iter(0..total)
        .map(|_| host.call("echo", json!({ "text": "hello" })))
        .buffer_unordered(in_flight)
        .collect()
        .await;
    let elapsed = started.elapsed();
    assert!(results.iter().all(|r| r.as_ref().is_ok_and(|r| r.is_error == Some(false))));
    total as f64 / elapsed.as_secs_f64()
}

async fn concurrent_throughput(scale: Scale) {
    let servers = echo_servers().await;
    // Warm up, then alternate to share the machine's noise fairly.
    for server in &servers {
        calls_per_second(server, 500, 32).await;
    }
    let mut rounds: [Vec<f64>; 3] = Default::default();
    for _ in 0..5 {
        for (server, rounds) in servers.iter().zip(&mut rounds) {
            rounds.push(calls_per_second(server, scale.concurrent_calls / 5, 32).await);
        }
    }
    drop(servers);
    let rmcp = rounds.map(|mut r| {
        r.sort_by(f64::total_cmp);
        r[2]
    });
    let node = node_client::calls_per_second(scale.concurrent_calls).await;
    println!(
        "## echo throughput, 32 calls in flight ({} calls each, median of 5 rounds)\n",
        scale.concurrent_calls
    );
    println!("| client | server | calls/s |\n|---|---|---|");
    let mut summary = Vec::new();
    let mut rows = |client: &str, figures: [f64; 3]| {
        for (server, rate) in SERVERS.iter().zip(figures) {
            println!("| {client} | {server} | {rate:.0} |");
        }
        summary.push(format!("{client} client: {}", ratios(figures)));
    };
    rows("rmcp", rmcp);
    match node {
        Ok(figures) => rows("TypeScript SDK", figures),
        Err(why) => summary.push(format!("TypeScript SDK client skipped: {why}")),
    }
    println!("\nratio (wasm / native):\n- {}\n", summary.join("\n- "));
}

/// The host binary every section runs: `BENCH_HOST_BINARY` (another build,
/// to compare two versions in one session) or this build's.
pub(crate) fn host_under_test() -> std::path::PathBuf {
    std::env::var_os("BENCH_HOST_BINARY").map_or_else(harness::host_binary, Into::into)
}

/// Whether the host under test (`BENCH_HOST_BINARY` or this build) has
/// `flag`: another build may be older.
fn host_knows(flag: &str) -> bool {
    static HELP: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    HELP.get_or_init(|| {
        let help = std::process::Command::new(host_under_test())
            .arg("--help")
            .output()
            .expect("running the host's --help");
        String::from_utf8_lossy(&help.stdout).into_owned()
    })
    .contains(flag)
}

/// The fixtures `--components a,b` names (from target/guests), or `default`.
fn components(default: &[&str]) -> Vec<String> {
    let args: Vec<String> = std::env::args().collect();
    match args.iter().position(|a| a == "--components") {
        Some(i) => args[i + 1].split(',').map(str::to_string).collect(),
        None => default.iter().map(|c| c.to_string()).collect(),
    }
}

/// From the client sending `notifications/cancelled` to the host's "call
/// ended" event (guest stopped, store dropped, cleanup finished).
async fn cancel_latency(component: &str, tool: &str, grace: &str, scale: Scale) {
    let locks = lock_dir();
    let dir = locks.path().display().to_string();
    let args = ["--dir", &dir, "--cancel-grace", grace];
    let host = start_component(component, &args, "mcp_wasm_host=info,warn").await;
    let mut samples = Vec::with_capacity(scale.cancel_trials);
    for trial in 0..scale.cancel_trials {
        let handle = host.start_call(tool, no_args()).await;
        wait_for_lock(locks.path()).await;
        let ended_before = host.stderr.events().iter().filter(|e| is_call_ended(e)).count();
        let sent = Instant::now();
        handle.cancel(None).await.unwrap();
        host.stderr.wait_for_events("call ended", ended_before + 1, is_call_ended).await;
        samples.push(sent.elapsed());
        assert!(files_in(locks.path()).is_empty(), "trial {trial}: cleanup left a lock");
    }
    let s = Samples::new(samples);
    println!(
        "cancel → stopped + cleanup done, {component} `{tool}`, --cancel-grace {grace}{}: p50 {}, p99 {} ({} trials)\n",
        if UNPRIVILEGED.load(Ordering::Relaxed) { ", host as nobody" } else { "" },
        ms(s.p50()),
        ms(s.p99()),
        scale.cancel_trials
    );
}

fn is_call_ended(event: &Event) -> bool {
    event.message() == "call ended"
}

/// The same as [`cancel_latency`] with `--cancel-grace 0`, while two other
/// calls keep a `spin` guest computing each: on a 2-core machine every core
/// is busy with guest code, and the cancel has to get through anyway.
async fn cancel_beside_spinners(tool: &str, scale: Scale) {
    let locks = lock_dir();
    let dir = locks.path().display().to_string();
    let args = ["--dir", &dir, "--cancel-grace", "0", "--timeout", "10m", "--fuel", "1000000000000000"];
    let host = start_host(&args, "mcp_wasm_host=info,warn").await;
    let spinners = [host.start_call("spin", no_args()).await, host.start_call("spin", no_args()).await];
    wait_for_locks(locks.path(), 2).await;
    let mut samples = Vec::with_capacity(scale.cancel_trials);
    for trial in 0..scale.cancel_trials {
        let handle = host.start_call(tool, no_args()).await;
        wait_for_locks(locks.path(), 3).await;
        let ended_before = host.stderr.events().iter().filter(|e| is_call_ended(e)).count();
        let sent = Instant::now();
        handle.cancel(None).await.unwrap();
        host.stderr.wait_for_events("call ended", ended_before + 1, is_call_ended).await;
        samples.push(sent.elapsed());
        assert_eq!(files_in(locks.path()).len(), 2, "trial {trial}: cleanup left a lock");
    }
    for spinner in spinners {
        spinner.cancel(None).await.unwrap();
    }
    let s = Samples::new(samples);
    println!(
        "cancel → stopped + cleanup done, `{tool}`, --cancel-grace 0, beside 2 spinning guests{}: p50 {}, p99 {} ({} trials)\n",
        if UNPRIVILEGED.load(Ordering::Relaxed) { ", host as nobody" } else { "" },
        ms(s.p50()),
        ms(s.p99()),
        scale.cancel_trials
    );
}

/// Waits until `dir` holds `n` lock files.
async fn wait_for_locks(dir: &Path, n: usize) {
    let wait = async {
        while files_in(dir).iter().filter(|f| f.ends_with(".lock")).count() < n {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    };
    tokio::time::timeout(harness::PATIENCE, wait).await.expect("the lock files appear");
}

/// From the client cancelling a tool call to the client's elicitation handler
/// seeing the open question withdrawn (`notifications/cancelled`).
async fn withdraw_latency(scale: Scale) {
    let host = start_host(&[], "warn").await;
    host.test_client.hold_from(1);
    let events = host.test_client.events.clone();
    let mut samples = Vec::with_capacity(scale.cancel_trials);
    for n in 1..=scale.cancel_trials {
        let call = host.start_call("survey", json!({ "questions": 1 })).await;
        let asked = format!("elicit {n}:");
        events.wait_for("the question", |e| e.starts_with(&asked)).await;
        let withdrawn = format!("withdrawn {n}");
        let sent = Instant::now();
        call.cancel(None).await.unwrap();
        events.wait_for("the withdrawal", |e| *e == withdrawn).await;
        samples.push(sent.elapsed());
    }
    let s = Samples::new(samples);
    println!(
        "cancel → client sees its open elicitation withdrawn: p50 {}, p99 {} ({} trials)\n",
        ms(s.p50()),
        ms(s.p99()),
        scale.cancel_trials
    );
}

/// `countdown` with 10 steps and no sleeping, reporting progress (and one
/// log line) versus `quiet`; the difference per notification.
async fn progress_overhead(scale: Scale) {
    let host = start_host(&[], "warn").await;
    let (mut loud, mut quiet) = (Vec::new(), Vec::new());
    for _ in 0..scale.echo_calls / 3 {
        let t = Instant::now();
        host.call("countdown", json!({ "steps": 10, "step_ms": 0 })).await.unwrap();
        loud.push(t.elapsed());
        let t = Instant::now();
        host.call("countdown", json!({ "steps": 10, "step_ms": 0, "quiet": true })).await.unwrap();
        quiet.push(t.elapsed());
    }
    let (loud, quiet) = (Samples::new(loud), Samples::new(quiet));
    let per = (loud.p50().as_secs_f64() - quiet.p50().as_secs_f64()) / 11.0;
    println!(
        "progress: a call sending 10 progress notifications + 1 log p50 {}, the same call quiet p50 {}: ≈ {:.1} µs per notification\n",
        ms(loud.p50()),
        ms(quiet.p50()),
        per * 1e6
    );
}

/// `echo` latency with the host idle, and while another call spins a guest
/// (a hostile or buggy tool that computes forever).
async fn noisy_neighbour(scale: Scale) {
    let host = start_host(&["--timeout", "10m"], "warn").await;
    echo_times(&host, 200).await;
    let quiet = echo_times(&host, scale.echo_calls / 3).await;
    let spinning = host.start_call("spin", no_args()).await;
    // Let the spinning call get going before measuring beside it.
    tokio::time::sleep(Duration::from_millis(50)).await;
    let busy = echo_times(&host, scale.echo_calls / 3).await;
    spinning.cancel(None).await.unwrap();
    println!("## echo beside a spinning guest ({} calls each)\n", scale.echo_calls / 3);
    println!("| neighbour | p50 | p99 |\n|---|---|---|");
    println!("| none | {} | {} |", ms(quiet.p50()), ms(quiet.p99()));
    println!("| a guest spinning in another call | {} | {} |", ms(busy.p50()), ms(busy.p99()));
    println!(
        "\nratio (beside spin / alone): p50 {:.2}x, p99 {:.2}x\n",
        busy.p50().as_secs_f64() / quiet.p50().as_secs_f64(),
        busy.p99().as_secs_f64() / quiet.p99().as_secs_f64()
    );
}

/// Process start → first `tools/list` answered.
async fn startup(scale: Scale) {
    let cache = tempfile::tempdir().unwrap();
    let cache_dir = cache.path().display().to_string();
    let mut cold = Vec::new();
    let mut warm = Vec::new();
    // Prime with optimized code compiled before serving: a tiered host
    // answers on baseline code and may be gone before its optimized code is
    // cached, and the "warm" start would compile again.
    let mut prime = vec!["--cache-dir", &cache_dir];
    if host_knows("--no-tiering") {
        prime.push("--no-tiering");
    }
    for _ in 0..scale.start_trials {
        cold.push(time_to_list(&["--no-cache"]).await);
        // Prime once per trial so every warm start is a cache hit.
        time_to_list(&prime).await;
        warm.push(time_to_list(&["--cache-dir", &cache_dir]).await);
    }
    let (cold, warm) = (Samples::new(cold), Samples::new(warm));
    println!("## start → first tools/list answered ({} starts each)\n", scale.start_trials);
    println!("| compile cache | p50 | max |\n|---|---|---|");
    println!("| cold (compiling) | {} | {} |", ms(cold.p50()), ms(cold.pct(1.0)));
    println!("| warm (cached artifact) | {} | {} |\n", ms(warm.p50()), ms(warm.pct(1.0)));
}

async fn time_to_list(args: &[&str]) -> Duration {
    time_component_to_list("demo", args).await
}

async fn time_component_to_list(component: &str, args: &[&str]) -> Duration {
    let started = Instant::now();
    let host = start_component(component, args, "warn").await;
    host.client.peer().list_all_tools().await.unwrap();
    let elapsed = started.elapsed();
    host.disconnect().await;
    elapsed
}

/// The same compute loop with fuel metering on and with epoch interruption only.
async fn fuel_versus_epoch(scale: Scale) {
    let metered = start_host(&["--fuel", "1000000000000"], "warn").await;
    let epoch_only = start_host(&["--fuel", "0"], "warn").await;
    let args = json!({ "iterations": 200_000_000u64 });
    let (mut f, mut e) = (Vec::new(), Vec::new());
    for _ in 0..scale.compute_trials {
        let t = Instant::now();
        metered.call("compute", args.clone()).await.unwrap();
        f.push(t.elapsed());
        let t = Instant::now();
        epoch_only.call("compute", args.clone()).await.unwrap();
        e.push(t.elapsed());
    }
    let (f, e) = (Samples::new(f), Samples::new(e));
    println!("## compute loop, 2e8 iterations ({} calls each)\n", scale.compute_trials);
    println!("| metering | p50 |\n|---|---|");
    println!(
        "| fuel + epoch (`--fuel N`) | {} |\n| epoch only (`--fuel 0`) | {} |",
        ms(f.p50()),
        ms(e.p50())
    );
    println!("\nratio (fuel / epoch only): {:.2}x\n", f.p50().as_secs_f64() / e.p50().as_secs_f64());
}

/// The pause's `(key, requestState)`.
fn pause_of(response: CallToolResponse) -> (String, String) {
    let CallToolResponse::InputRequired(paused) = response else {
        panic!("expected a pause, got {response:?}")
    };
    let key = paused.input_requests.unwrap().into_keys().next().unwrap();
    (key, paused.request_state.unwrap())
}

/// The host under test serving the demo with `args`, for rmcp's client in
/// discover mode (protocol 2026-07-28).
fn discovering(args: &[&str]) -> Start {
    let mut start = Start::new("demo", args).log("warn").discover();
    start.tap_stdout = false;
    start.program = host_under_test();
    start
}

/// Approval on protocol 2026-07-28, over stdio with rmcp's client in discover
/// mode: call → pause returned, and answer → result, for an approval before
/// the call (nothing runs until the answer) and one mid-call (the guest is
/// parked in its store); the same call with approval waived as the
/// baseline; and the memory each paused execution holds. Each mid-call row
/// is measured twice: parked in this process, and sealed into its
/// `requestState` (`--state-key-file`), where the call stops at its pause
/// and runs again on the answer, so nothing of it waits here.
async fn approval_pauses(scale: Scale) {
    // Room for the memory figures below: 10 000 paused before the call,
    // 1 000 mid-call (each of those holds a call slot).
    let room = ["--max-paused", "10000", "--max-concurrent-calls", "1000"];
    let keys = tempfile::tempdir().unwrap();
    let key_file = keys.path().join("state.key");
    std::fs::write(&key_file, "bench-approval-state-key-of-forty-bytes!\n").unwrap();
    let key_file = key_file.display().to_string();
    let sealing: Vec<&str> = room.iter().copied().chain(["--state-key-file", &key_file]).collect();
    let host = Host::start(discovering(&room)).await;
    let sealed = Host::start(discovering(&sealing)).await;
    let waived = Host::start(discovering(&["--no-approval", "all"])).await;
    let trials = scale.cancel_trials;
    let arguments =
        |tool: &str| if tool == "prune" { json!({ "count": 2 }) } else { json!({ "table": "t" }) };

    println!("## approval on 2026-07-28 (pause, then a follow-up call with the answer; {trials} trials)\n");
    println!(
        "| tool | call → pause p50 | p99 | approve → result p50 | p99 | waived call p50 |\n|---|---|---|---|---|---|"
    );
    for (tool, host, how) in [
        ("delete_records", &host, "before the call"),
        ("prune", &host, "mid-call"),
        ("prune", &sealed, "mid-call, sealed"),
    ] {
        let (mut paused, mut resumed, mut plain) = (Vec::new(), Vec::new(), Vec::new());
        for _ in 0..trials {
            let started = Instant::now();
            let (key, state) =
                pause_of(host.client.call_tool_once(params(tool, arguments(tool))).await.unwrap());
            paused.push(started.elapsed());
            let follow_up = params(tool, arguments(tool))
                .with_input_responses(approval_answer(&key, true))
                .with_request_state(state);
            let started = Instant::now();
            let done = host.client.call_tool_once(follow_up).await.unwrap();
            resumed.push(started.elapsed());
            assert!(
                matches!(done, CallToolResponse::Complete(ref r) if r.is_error == Some(false)),
                "{done:?}"
            );
            let started = Instant::now();
            waived.client.call_tool_once(params(tool, arguments(tool))).await.unwrap();
            plain.push(started.elapsed());
        }
        let (p, r, w) = (Samples::new(paused), Samples::new(resumed), Samples::new(plain));
        println!(
            "| {tool} ({how}) | {} | {} | {} | {} | {} |",
            ms(p.p50()),
            ms(p.p99()),
            ms(r.p50()),
            ms(r.p99()),
            ms(w.p50())
        );
    }

    // The same question as an elicitation, on a session opened with
    // `initialize`: the whole call, with the client answering at once.
    let asking = start_host(&[], "warn").await;
    let not_asking = start_host(&["--no-approval", "all"], "warn").await;
    let (mut asked, mut plain) = (Vec::new(), Vec::new());
    for _ in 0..trials {
        let started = Instant::now();
        asking.call("delete_records", json!({ "table": "t" })).await.unwrap();
        asked.push(started.elapsed());
        let started = Instant::now();
        not_asking.call("delete_records", json!({ "table": "t" })).await.unwrap();
        plain.push(started.elapsed());
    }
    let (a, p) = (Samples::new(asked), Samples::new(plain));
    println!(
        "\n2025-11-25 session, approval by elicitation (client answers at once): whole call p50 {} / p99 {}; \
         waived p50 {} / p99 {}",
        ms(a.p50()),
        ms(a.p99()),
        ms(p.p50()),
        ms(p.p99())
    );

    // Memory: hold many paused executions at once, then let them go (the
    // issue's bound: 100 MB of host RSS for each row). A fresh host per
    // row, so no row reuses memory another freed.
    drop((host, sealed, waived));
    println!(
        "\n| paused executions held (fresh host) | RSS before | RSS with them held | per paused execution |\n|---|---|---|---|"
    );
    for (tool, held, sealed) in
        [("delete_records", 10_000, false), ("prune", 1_000, false), ("prune", 1_000, true)]
    {
        let host = Host::start(discovering(if sealed { &sealing } else { &room })).await;
        let pid = host.child.id().unwrap();
        host.wait_until_idle().await;
        let before = rss_kib(pid);
        let mut pauses = Vec::with_capacity(held);
        for _ in 0..held {
            pauses.push(pause_of(host.client.call_tool_once(params(tool, arguments(tool))).await.unwrap()));
        }
        let during = rss_kib(pid);
        // A sealed pause is the client's to carry: none is held here.
        let here = if sealed { 0 } else { held as u64 };
        assert_eq!(host.status().await["paused_calls"], here);
        for (key, state) in pauses {
            let decline = params(tool, arguments(tool))
                .with_input_responses(approval_answer(&key, false))
                .with_request_state(state);
            host.client.call_tool_once(decline).await.unwrap();
        }
        let idle: Value = host.wait_until_idle().await;
        assert_eq!(idle["leases"], 0);
        println!(
            "| {held} × {tool}{} | {:.1} MiB | {:.1} MiB | {:.2} KiB |",
            if sealed { ", sealed" } else { "" },
            before as f64 / 1024.0,
            during as f64 / 1024.0,
            during.saturating_sub(before) as f64 / held as f64
        );
    }
    println!();
}
