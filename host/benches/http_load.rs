//! Load over Streamable HTTP on protocol 2026-07-28: 64 clients (rmcp's, one
//! connection each), each calling `echo` back to back, against the host
//! (`--http`, the demo component) and against a native rmcp HTTP server,
//! alternated in one run. Prints requests/s and latency percentiles.

use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rmcp::model::ProtocolVersion;
use rmcp::service::RunningService;
use rmcp::transport::StreamableHttpClientTransport;
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

async fn start_native() -> Server {
    let mut command = Command::new(std::env::current_exe().unwrap());
    command.env(native::SERVE_ENV, "http").env("RUST_LOG", "warn");
    announced(command).await
}

/// A 2026-07-28 client on its own connection.
async fn client(url: &str) -> RunningService<RoleClient, ()> {
    let transport = StreamableHttpClientTransport::from_uri(url.to_string());
    let lifecycle = ClientLifecycleMode::Discover { preferred_versions: vec![ProtocolVersion::V_2026_07_28] };
    ().serve_with_lifecycle(transport, lifecycle).await.expect("MCP client start")
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

/// The section: alternated rounds, host then native, after a warm-up each.
pub async fn http_load(rounds: usize, span: Duration) {
    let _ = rustls::crypto::ring::default_provider().install_default();
    println!("## Load over Streamable HTTP, protocol 2026-07-28 ({CONNECTIONS} connections, `echo`)\n");
    let (host, native) = (start_host().await, start_native().await);
    let mut pools = Vec::new();
    for server in [&host, &native] {
        let mut clients = Vec::with_capacity(CONNECTIONS);
        for _ in 0..CONNECTIONS {
            clients.push(Arc::new(client(&server.url).await));
        }
        load(&clients, Duration::from_millis(500)).await;
        pools.push(clients);
    }
    let (mut rates, mut p50s, mut p99s) = ([vec![], vec![]], [vec![], vec![]], [vec![], vec![]]);
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
    for (n, name) in ["mcp-wasm-host --http", "native rmcp HTTP server"].iter().enumerate() {
        let rate = median(&mut rates[n]);
        let (p50, p99) = (median_time(&p50s[n]), median_time(&p99s[n]));
        println!("| {name} | {rate:.0} | {} | {} |", ms(p50), ms(p99));
        figures.push((rate, p99));
    }
    println!(
        "\nratio (wasm / native): calls/s {:.2}x, p99 {:.2}x\n",
        figures[0].0 / figures[1].0,
        figures[0].1.as_secs_f64() / figures[1].1.as_secs_f64()
    );
}
