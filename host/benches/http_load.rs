//! Load over Streamable HTTP on protocol 2026-07-28: 64 clients (rmcp's),
//! each calling `echo` back to back, against the host (`--http`, the demo
//! component) and against a native rmcp HTTP server, alternated in one
//! run. Prints requests/s and latency percentiles.
//!
//! Twice over, for the two ways clients use their connections: rmcp's
//! default client keeps none (`pool_max_idle_per_host(0)`), so every call
//! opens a TCP connection and the servers accept, serve and close one per
//! call; the TypeScript and Python SDKs' clients keep theirs, as the
//! second pass does (rmcp's transport with a pooling `reqwest` client):
//! 64 connections, each kept for the whole run.
//!
//! The native server runs twice: with rmcp's defaults (each answer a
//! one-event SSE stream), and with `json_response` on, as the host serves
//! (a one-message answer as `application/json`). The ratios are against
//! both.

use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rmcp::model::ProtocolVersion;
use rmcp::service::RunningService;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ClientLifecycleMode, ClientServiceExt as _, RoleClient};
use serde_json::json;
use tokio::io::{AsyncBufReadExt as _, BufReader};
use tokio::process::{Child, Command};

use crate::harness::{guest, params};
use crate::{Samples, ms, native};

/// Connections at once.
const CONNECTIONS: usize = 64;

/// A server over HTTP: the child and its `/mcp` URL.
pub(crate) struct Server {
    _child: Child,
    pub(crate) url: String,
}

/// Starts `command` and waits for the address it announces on stderr.
pub(crate) async fn announced(mut command: Command) -> Server {
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("spawning the server");
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let url = loop {
        let line = lines.next_line().await.unwrap().expect("the server announces its address");
        if let Some(at) = line.find("http://") {
            break line[at..].trim().to_string();
        }
    };
    // Keep draining stderr so the server never blocks on it.
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    Server { _child: child, url }
}

async fn start_host() -> Server {
    let mut command = Command::new(crate::host_under_test());
    command
        .args(["--http", "127.0.0.1:0", "--component"])
        .arg(guest("demo"))
        .args(["--max-connections", "1024", "--max-concurrent-calls", "128"])
        .env("RUST_LOG", "warn");
    announced(command).await
}

async fn start_native(mode: &str) -> Server {
    let mut command = Command::new(std::env::current_exe().unwrap());
    command.env(native::SERVE_ENV, mode).env("RUST_LOG", "warn");
    announced(command).await
}

/// A 2026-07-28 client: rmcp's default (a new connection for every
/// request), or, `kept`, one keeping its connection between requests.
async fn client(url: &str, kept: bool) -> RunningService<RoleClient, ()> {
    let transport =
        if kept { kept_transport(url) } else { StreamableHttpClientTransport::from_uri(url.to_string()) };
    let lifecycle = ClientLifecycleMode::Discover { preferred_versions: vec![ProtocolVersion::V_2026_07_28] };
    ().serve_with_lifecycle(transport, lifecycle).await.expect("MCP client start")
}

/// rmcp's transport with a pooling `reqwest` client: it keeps its
/// connection between requests, as the TypeScript and Python SDKs' clients
/// do (rmcp's default keeps none).
fn kept_transport(url: &str) -> StreamableHttpClientTransport<reqwest::Client> {
    let config = StreamableHttpClientTransportConfig::with_uri(url.to_string());
    StreamableHttpClientTransport::with_client(reqwest::Client::new(), config)
}

/// Every client calls `echo` back to back for `span`: the calls per second
/// over all of them, and each call's latency.
pub(crate) async fn load(clients: &[Arc<RunningService<RoleClient, ()>>], span: Duration) -> (f64, Samples) {
    let started = Instant::now();
    let tasks: Vec<_> = clients
        .iter()
        .map(|client| {
            let client = client.clone();
            tokio::spawn(async move {
                let mut times = Vec::new();
                while started.elapsed() < span {
                    let call = Instant::now();
                    let result = client.call_tool(params("echo", json!({ "text": "hello" }))).await.unwrap();
                    times.push(call.elapsed());
                    assert_eq!(result.is_error, Some(false));
                }
                times
            })
        })
        .collect();
    let mut times = Vec::new();
    for task in tasks {
        times.extend(task.await.unwrap());
    }
    let rate = times.len() as f64 / started.elapsed().as_secs_f64();
    (rate, Samples::new(times))
}

/// The section: for each kind of client, alternated rounds, the host then
/// both native servers, after a warm-up each; then one session's calls
/// over SSE.
pub async fn http_load(rounds: usize, span: Duration) {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let servers = [start_host().await, start_native("http").await, start_native("http-json").await];
    session_calls(&servers[0], &servers[1], rounds).await;
    for kept in [false, true] {
        let clients = if kept { "each keeping its connection" } else { "a new connection a call" };
        println!(
            "## Load over Streamable HTTP, protocol 2026-07-28 ({CONNECTIONS} clients, {clients}, `echo`)\n"
        );
        load_rounds(&servers, kept, rounds, span).await;
    }
}

/// One kind of client against the three servers: the rounds and the table.
async fn load_rounds(servers: &[Server; 3], kept: bool, rounds: usize, span: Duration) {
    let mut pools = Vec::new();
    for server in servers {
        let mut clients = Vec::with_capacity(CONNECTIONS);
        for _ in 0..CONNECTIONS {
            clients.push(Arc::new(client(&server.url, kept).await));
        }
        load(&clients, Duration::from_millis(500)).await;
        pools.push(clients);
    }
    let (mut rates, mut p50s, mut p99s) =
        ([(); 3].map(|()| vec![]), [(); 3].map(|()| vec![]), [(); 3].map(|()| vec![]));
    for _ in 0..rounds {
        for (n, clients) in pools.iter().enumerate() {
            let (rate, times) = load(clients, span).await;
            rates[n].push(rate);
            p50s[n].push(times.p50());
            p99s[n].push(times.p99());
        }
    }
    let median = |values: &mut Vec<f64>| {
        values.sort_by(f64::total_cmp);
        values[values.len() / 2]
    };
    let median_time = |values: &[Duration]| Samples::new(values.to_vec()).p50();
    println!("| server | calls/s (median of {rounds}) | p50 | p99 |\n|---|---|---|---|");
    let mut figures = Vec::new();
    let names = ["mcp-wasm-host --http", "native rmcp HTTP server", "native rmcp, `json_response` on"];
    for (n, name) in names.iter().enumerate() {
        let rate = median(&mut rates[n]);
        let (p50, p99) = (median_time(&p50s[n]), median_time(&p99s[n]));
        println!("| {name} | {rate:.0} | {} | {} |", ms(p50), ms(p99));
        figures.push((rate, p99));
    }
    for (n, against) in [(1, "native"), (2, "native, `json_response` on")] {
        println!(
            "\nratio (wasm / {against}): calls/s {:.2}x, p99 {:.2}x",
            figures[0].0 / figures[n].0,
            figures[0].1.as_secs_f64() / figures[n].1.as_secs_f64()
        );
    }
    println!();
}

/// Calls in one session.
const SESSION_CALLS: usize = 100;

/// One 2025-11-25 session (`initialize`, as most clients still open one)
/// calling `echo` back to back: each answer is an SSE stream written in
/// pieces (a priming event, then the result), the way a call that logs or
/// reports progress is answered on 2026-07-28 too. The host, the native
/// server as rmcp's examples serve it (hyper or axum as they come: Nagle's
/// algorithm on) and the same with `TCP_NODELAY`, in alternated rounds.
async fn session_calls(host: &Server, native: &Server, rounds: usize) {
    let nodelay = start_native("http-nodelay").await;
    let mut sessions = Vec::new();
    for server in [host, native, &nodelay] {
        let transport = kept_transport(&server.url);
        // rmcp's client asks for its newest version unless told.
        let asks = rmcp::model::ClientConfig::default().with_protocol_version(ProtocolVersion::V_2025_11_25);
        let session =
            asks.serve_with_lifecycle(transport, ClientLifecycleMode::Initialize).await.expect("MCP session");
        let agreed = session.peer_info().map(|info| info.protocol_version.clone());
        assert_eq!(agreed, Some(ProtocolVersion::V_2025_11_25), "the session's protocol version");
        session.call_tool(params("echo", json!({ "text": "hello" }))).await.unwrap();
        sessions.push(session);
    }
    let mut times = [(); 3].map(|()| Vec::new());
    let rounds = rounds.max(1);
    for _ in 0..rounds {
        for (session, times) in sessions.iter().zip(&mut times) {
            for _ in 0..SESSION_CALLS.div_ceil(rounds) {
                let call = Instant::now();
                let result = session.call_tool(params("echo", json!({ "text": "hello" }))).await.unwrap();
                times.push(call.elapsed());
                assert_eq!(result.is_error, Some(false));
            }
        }
    }
    println!(
        "## One session over Streamable HTTP, protocol 2025-11-25 ({} sequential `echo` calls each, answered \
         over SSE, in {rounds} alternated rounds)\n",
        times[0].len()
    );
    println!("| server | p50 | p99 |\n|---|---|---|");
    let names = ["mcp-wasm-host --http", "native rmcp HTTP server", "native rmcp, `TCP_NODELAY` set"];
    let samples: Vec<Samples> = times.into_iter().map(Samples::new).collect();
    for (name, s) in names.iter().zip(&samples) {
        println!("| {name} | {} | {} |", ms(s.p50()), ms(s.p99()));
    }
    let p50 = |n: usize| samples[n].p50().as_secs_f64();
    println!(
        "\nratio (wasm / native): p50 {:.3}x; (wasm / native with `TCP_NODELAY`): p50 {:.2}x\n",
        p50(0) / p50(1),
        p50(0) / p50(2)
    );
}
