//! A task's round trip through a fleet, against a direct call, in one run:
//! three `--http` replicas sharing a `--task-store` (a `redis-server` of
//! the bench's own) and a `--state-key-file`, and rmcp's client on
//! protocol 2026-07-28 talking to each replica directly, as round-robin
//! would send it. Rounds alternate between the ways, so the machine's
//! noise falls on all of them alike. Polls every 2 ms (the figures carry
//! up to that much of it).

use std::time::{Duration, Instant};

use rmcp::model::{
    CallToolRequestParams, ClientCapabilities, GetTaskParams, ProtocolVersion, TaskPayload, UpdateTaskParams,
};
use rmcp::service::RunningService;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::{ClientLifecycleMode, ClientServiceExt as _, RoleClient};
use serde_json::json;
use tokio::process::Command;

use crate::harness::{Redis, TestClient, approval_answer, guest, params, task_id};
use crate::http_load::{Server, announced};
use crate::{Samples, Scale, ms};

type Client = RunningService<RoleClient, TestClient>;

/// How often a task is polled.
const POLL: Duration = Duration::from_millis(2);

async fn replica(redis: &Redis, key_file: &std::path::Path) -> Server {
    let mut command = Command::new(crate::host_under_test());
    command
        .args(["--http", "127.0.0.1:0", "--drain-timeout", "0s", "--component"])
        .arg(guest("demo"))
        .args(["--task-store", &redis.url, "--state-key-file"])
        .arg(key_file)
        .env("RUST_LOG", "warn");
    announced(command).await
}

async fn client(server: &Server, capabilities: ClientCapabilities) -> Client {
    let transport = StreamableHttpClientTransport::from_uri(server.url.clone());
    let lifecycle = ClientLifecycleMode::Discover { preferred_versions: vec![ProtocolVersion::V_2026_07_28] };
    TestClient::declaring(capabilities)
        .serve_with_lifecycle(transport, lifecycle)
        .await
        .expect("MCP client start")
}

/// Polls task `id` through `client` until `done` says so.
async fn until(client: &Client, id: &str, done: impl Fn(&TaskPayload) -> bool) {
    loop {
        let task = client.peer().get_task(GetTaskParams::new(id)).await.unwrap().task;
        if done(&task.payload) {
            return;
        }
        tokio::time::sleep(POLL).await;
    }
}

/// A call of `countdown` (three steps of 50 ms) started through `start` and
/// polled to its end through `poll`: from the call to the result seen.
async fn task_round_trip(start: &Client, poll: &Client, call: CallToolRequestParams) -> Duration {
    let began = Instant::now();
    let id = task_id(start.call_tool_once(call).await.unwrap());
    until(poll, &id, |payload| matches!(payload, TaskPayload::Completed { .. })).await;
    began.elapsed()
}

/// A call that becomes a task on `start`'s replica and then asks for an
/// approval, seen through `poll`, answered through `answer`: from the
/// answer sent to the end seen.
async fn answer_round_trip(start: &Client, poll: &Client, answer: &Client) -> Duration {
    let id = task_id(start.call_tool_once(params("prune", json!({ "find_ms": 120 }))).await.unwrap());
    let mut key = None;
    while key.is_none() {
        let task = poll.peer().get_task(GetTaskParams::new(id.clone())).await.unwrap().task;
        if let TaskPayload::InputRequired { input_requests } = task.payload {
            key = input_requests.keys().next().cloned();
        } else {
            tokio::time::sleep(POLL).await;
        }
    }
    let began = Instant::now();
    let responses = approval_answer(&key.unwrap(), true);
    answer.peer().update_task(UpdateTaskParams::new(id.clone(), responses)).await.unwrap();
    until(poll, &id, |payload| matches!(payload, TaskPayload::Completed { .. })).await;
    began.elapsed()
}

/// The section.
pub async fn tasks(scale: Scale) {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let rounds = scale.start_trials * 2;
    println!("## Tasks through a fleet (three replicas sharing --task-store), protocol 2026-07-28\n");
    let redis = Redis::start().await;
    let dir = tempfile::tempdir().unwrap();
    let key_file = dir.path().join("state.key");
    std::fs::write(&key_file, "bench-task-state-key-of-forty-bytes-long!\n").unwrap();
    let mut replicas = Vec::new();
    for _ in 0..3 {
        replicas.push(replica(&redis, &key_file).await);
    }
    let tasks = ClientCapabilities::builder().enable_elicitation().enable_tasks().build();
    let mut clients = Vec::new();
    for server in &replicas {
        clients.push(client(server, tasks.clone()).await);
    }
    let direct = client(&replicas[0], ClientCapabilities::builder().enable_elicitation().build()).await;
    // 150 ms: a call becomes a task once it runs past the host's quick
    // moment (100 ms). Two steps of 50 ms ended on the very timer tick
    // that moment did, so the order the runtime saw the two in decided
    // (answered at once, with no task, in every build since `7ada2e4`).
    let work = || params("countdown", json!({ "steps": 3, "step_ms": 50, "quiet": true }));

    // Warm-up: the components load, every connection is open.
    direct.call_tool(work()).await.unwrap();
    task_round_trip(&clients[0], &clients[1], work()).await;
    answer_round_trip(&clients[0], &clients[1], &clients[2]).await;

    let (mut plain, mut here, mut fleet) = (vec![], vec![], vec![]);
    let (mut answered_here, mut answered_fleet) = (vec![], vec![]);
    for _ in 0..rounds {
        let began = Instant::now();
        direct.call_tool(work()).await.unwrap();
        plain.push(began.elapsed());
        here.push(task_round_trip(&clients[0], &clients[0], work()).await);
        fleet.push(task_round_trip(&clients[0], &clients[1], work()).await);
        answered_here.push(answer_round_trip(&clients[0], &clients[0], &clients[0]).await);
        answered_fleet.push(answer_round_trip(&clients[0], &clients[1], &clients[2]).await);
    }

    // `tasks/get` of a running task: on the replica running it (its own
    // table) and on another (the store).
    let long = params("countdown", json!({ "steps": 600, "step_ms": 100, "quiet": true }));
    let id = task_id(clients[0].call_tool_once(long).await.unwrap());
    let (mut read_here, mut read_there) = (vec![], vec![]);
    for _ in 0..rounds * 10 {
        for (reader, times) in [(&clients[0], &mut read_here), (&clients[1], &mut read_there)] {
            let began = Instant::now();
            reader.peer().get_task(GetTaskParams::new(id.clone())).await.unwrap();
            times.push(began.elapsed());
        }
    }
    clients[0].peer().cancel_task(rmcp::model::CancelTaskParams::new(id)).await.unwrap();

    let row = |name: &str, times: Vec<Duration>, base: Option<Duration>| {
        let samples = Samples::new(times);
        let ratio = base.map(|base| format!("{:.2}x", samples.p50().as_secs_f64() / base.as_secs_f64()));
        println!(
            "| {name} | {} | {} | {} |",
            ms(samples.p50()),
            ms(samples.p99()),
            ratio.unwrap_or_default()
        );
        samples.p50()
    };
    println!("`countdown`, three steps of 50 ms, {rounds} rounds each:\n");
    println!("| how | p50 | p99 | against the direct call |\n|---|---|---|---|");
    let base = row("direct call (a client without the tasks extension)", plain, None);
    row("task, created and polled on one replica", here, Some(base));
    row("task, created on replica 1, polled on replica 2", fleet, Some(base));
    println!("\nAn approval inside a task (`prune`), from `tasks/update` to the end seen:\n");
    println!("| how | p50 | p99 | against one replica |\n|---|---|---|---|");
    let base = row("answered and polled on the replica running it", answered_here, None);
    row("answered through replica 3, polled on replica 2", answered_fleet, Some(base));
    println!("\n`tasks/get` of a running task, {} reads each:\n", rounds * 10);
    println!("| where | p50 | p99 | against its own replica |\n|---|---|---|---|");
    let base = row("the replica running it (its table)", read_here, None);
    row("another replica (the store)", read_there, Some(base));
    println!();
}
