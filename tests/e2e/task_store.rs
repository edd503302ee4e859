//! Tasks across a fleet: three `--http` replicas sharing a `--task-store`
//! (Debian's `redis-server`, started here on a free port) and a
//! `--state-key-file`, and rmcp's client on protocol 2026-07-28 talking
//! to each replica directly, as round-robin would send it. A task made on
//! one replica is read on another and answered or cancelled through a
//! third; a replica that dies leaves its tasks `failed`; another caller's
//! task is, on every replica, a task never issued.

use rmcp::model::{CancelTaskParams, GetTaskParams, TaskPayload, UpdateTaskParams};
use serde_json::json;

use crate::auth::{Issuer, Key};
use crate::auth_access::{client, error_text, poll, prune, tasks, token, uuid_like};
use crate::harness::{PATIENCE, Redis, approval_answer, files_in, params, task_id, wait_for_lock};
use crate::http_limits::HttpHost;

/// Three replicas sharing `redis` and a state key, with `extra` arguments.
async fn replicas(redis: &Redis, dir: &tempfile::TempDir, extra: &[&str]) -> Vec<HttpHost> {
    let key_file = dir.path().join("state.key");
    std::fs::write(&key_file, "fleet-task-state-key-forty-bytes-at-least!\n").unwrap();
    let mut args = vec!["--task-store", &redis.url, "--state-key-file", key_file.to_str().unwrap()];
    args.extend_from_slice(extra);
    let mut replicas = Vec::new();
    for _ in 0..3 {
        replicas.push(HttpHost::start(&args).await);
    }
    replicas
}

#[tokio::test]
async fn a_task_made_on_one_replica_is_read_on_another_and_answered_or_cancelled_through_a_third() {
    let redis = Redis::start().await;
    let dir = tempfile::tempdir().unwrap();
    let grant = tempfile::tempdir().unwrap();
    let replicas = replicas(&redis, &dir, &["--dir", grant.path().to_str().unwrap()]).await;
    // Without auth the token is not read; each client talks to one replica.
    let mut clients = Vec::new();
    for replica in &replicas {
        clients.push(client(replica, "none", tasks()).await);
    }

    // A call that becomes a task on replica 1, then asks for approval:
    // seen on 2, answered through 3.
    let id = task_id(clients[0].call_tool_once(prune()).await.unwrap());
    let waiting =
        poll(&clients[1], &id, |payload| matches!(payload, TaskPayload::InputRequired { .. })).await;
    let TaskPayload::InputRequired { input_requests } = waiting else { unreachable!() };
    let key = input_requests.keys().next().unwrap().clone();
    clients[2]
        .peer()
        .update_task(UpdateTaskParams::new(id.clone(), approval_answer(&key, true)))
        .await
        .unwrap();
    let done = poll(&clients[1], &id, |payload| matches!(payload, TaskPayload::Completed { .. })).await;
    let TaskPayload::Completed { result } = done else { unreachable!() };
    assert_eq!(result["content"][0]["text"], "pruned 3 snapshots");

    // A guest that ignores the cancel and spins, holding a lock: started
    // on 1, cancelled through 3. Replica 1 stops it by force and runs its
    // cleanup, which releases the lock; 2 sees the task cancelled.
    let id = task_id(clients[0].call_tool_once(params("spin", json!({}))).await.unwrap());
    wait_for_lock(grant.path()).await;
    poll(&clients[1], &id, |payload| matches!(payload, TaskPayload::Working)).await;
    clients[2].peer().cancel_task(CancelTaskParams::new(id.clone())).await.unwrap();
    poll(&clients[1], &id, |payload| matches!(payload, TaskPayload::Cancelled)).await;
    let ended = replicas[0]
        .stderr
        .wait_for_event("the cancelled call to end", |event| event.is_call_ended("spin"))
        .await;
    assert_eq!(
        (ended.str("stop_reason"), ended.str("cleanup")),
        (Some("client-cancelled"), Some("done")),
        "{ended}"
    );
    assert!(files_in(grant.path()).is_empty(), "cleanup left {:?}", files_in(grant.path()));

    // A task id never issued is unknown everywhere.
    let never = uuid_like(&id);
    for client in &clients {
        let error = error_text(client.peer().get_task(GetTaskParams::new(never.clone())).await, &never);
        assert!(error.contains("unknown task: ID"), "{error}");
    }
}

#[tokio::test]
async fn a_replica_that_dies_leaves_its_tasks_failed_on_the_others() {
    let redis = Redis::start().await;
    let dir = tempfile::tempdir().unwrap();
    let mut replicas = replicas(&redis, &dir, &[]).await;
    let first = client(&replicas[0], "none", tasks()).await;
    let second = client(&replicas[1], "none", tasks()).await;

    let long = params("countdown", json!({ "steps": 600, "step_ms": 100, "quiet": true }));
    let id = task_id(first.call_tool_once(long).await.unwrap());
    poll(&second, &id, |payload| matches!(payload, TaskPayload::Working)).await;

    replicas[0].child.kill().await.unwrap();
    // Its lease lapses within ten seconds; the task then reads as failed.
    let failed = async {
        loop {
            let task = second.peer().get_task(GetTaskParams::new(id.clone())).await.unwrap().task;
            if let TaskPayload::Failed { error } = task.payload {
                return error;
            }
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
    };
    let error = tokio::time::timeout(PATIENCE, failed).await.expect("the task reads as failed in time");
    let message = error["message"].as_str().unwrap();
    assert!(message.contains("replica running this task stopped"), "{message}");
}

#[tokio::test]
async fn through_the_store_another_callers_task_is_one_never_issued_on_every_replica() {
    let redis = Redis::start().await;
    let dir = tempfile::tempdir().unwrap();
    let key = Key::new("k1");
    let issuer = Issuer::start(&[&key]).await;
    let auth = [
        "--auth-issuer",
        &issuer.url,
        "--auth-resource",
        crate::auth::RESOURCE,
        "--auth-scopes",
        "tools:call",
    ];
    let replicas = replicas(&redis, &dir, &auth).await;
    let alice_token = token(&key, &issuer, "alice", "tools:call", 0);
    let bob_token = token(&key, &issuer, "bob", "tools:call", 0);

    let alice = client(&replicas[0], &alice_token, tasks()).await;
    let id = task_id(alice.call_tool_once(prune()).await.unwrap());
    let waiting = poll(&alice, &id, |payload| matches!(payload, TaskPayload::InputRequired { .. })).await;
    let TaskPayload::InputRequired { input_requests } = waiting else { unreachable!() };
    let question = input_requests.keys().next().unwrap().clone();

    let never = uuid_like(&id);
    for (n, replica) in replicas.iter().enumerate() {
        let bob = client(replica, &bob_token, tasks()).await;
        let unknown = error_text(bob.peer().get_task(GetTaskParams::new(never.clone())).await, &never);
        assert_eq!(
            error_text(bob.peer().get_task(GetTaskParams::new(id.clone())).await, &id),
            unknown,
            "replica {n}"
        );
        let answer = UpdateTaskParams::new(id.clone(), approval_answer(&question, true));
        assert_eq!(error_text(bob.peer().update_task(answer).await, &id), unknown, "replica {n}");
        let cancel = CancelTaskParams::new(id.clone());
        assert_eq!(error_text(bob.peer().cancel_task(cancel).await, &id), unknown, "replica {n}");
    }

    // Alice answers through the third replica, and reads the end on the second.
    let there = client(&replicas[2], &alice_token, tasks()).await;
    there
        .peer()
        .update_task(UpdateTaskParams::new(id.clone(), approval_answer(&question, true)))
        .await
        .unwrap();
    let second = client(&replicas[1], &alice_token, tasks()).await;
    let done = poll(&second, &id, |payload| matches!(payload, TaskPayload::Completed { .. })).await;
    let TaskPayload::Completed { result } = done else { unreachable!() };
    assert_eq!(result["content"][0]["text"], "pruned 3 snapshots");
}

#[tokio::test]
async fn a_broken_record_in_the_store_is_a_clear_error_and_the_host_serves_on() {
    let redis = Redis::start().await;
    let host = HttpHost::start(&["--task-store", &redis.url]).await;
    let client = client(&host, "none", tasks()).await;
    // Whoever can write the store put something that is no task under a
    // task's key: not JSON, then JSON of another shape.
    let id = "6f1c1f9e-2b7a-4c55-9d0e-3a1b2c3d4e5f";
    for junk in ["{not json", r#"{"replica":1,"task":[]}"#] {
        let set = std::process::Command::new("redis-cli")
            .args(["-u", &redis.url, "SET", &format!("mcp-wasm-host:task:{id}"), junk])
            .output()
            .expect("redis-cli (Debian's redis-tools, with redis-server)");
        assert!(set.status.success(), "{set:?}");
        let error = client.peer().get_task(GetTaskParams::new(id)).await.unwrap_err().to_string();
        assert!(error.contains("the task store holds a task this host cannot read"), "{error}");
    }
    // An id that is not one of ours never reaches the store: unknown.
    let error = client.peer().get_task(GetTaskParams::new("../../etc")).await.unwrap_err().to_string();
    assert!(error.contains("unknown task: ../../etc"), "{error}");
    // The host serves on.
    let echoed = client.call_tool(params("echo", json!({ "text": "still here" }))).await.unwrap();
    assert_eq!(crate::harness::text_of(&echoed), "still here");
}
