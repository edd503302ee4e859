//! The fleet with `--auth-issuer` on: three replicas sharing a
//! `--state-key-file` and one authorization server, behind HAProxy
//! (`deploy/haproxy/haproxy.cfg`). A caller's paused calls continue on
//! whichever replica the follow-up lands, with a refreshed token too;
//! another caller's follow-up is refused on every replica, another
//! caller's session is not found through the balancer either, and another
//! caller's task is answered, on every replica, as one never issued.

use std::path::Path;

use rmcp::model::{CancelTaskParams, GetTaskParams, TaskPayload, UpdateTaskParams};
use serde_json::json;

use crate::auth::{Issuer, Key, RESOURCE, send};
use crate::auth_access::{
    asks, client, completed, error_text, open, paused, poll, prune, request, tasks, token, uuid_like,
};
use crate::balanced::Balancer;
use crate::harness::{approval_answer, params, task_id, text_of};
use crate::http_limits::HttpHost;

/// Three replicas sharing `key_file`, their tokens from `issuer`.
async fn replicas(issuer: &Issuer, key_file: &Path) -> Vec<HttpHost> {
    let mut replicas = Vec::new();
    for _ in 0..3 {
        let args = [
            "--state-key-file",
            key_file.to_str().unwrap(),
            "--auth-issuer",
            &issuer.url,
            "--auth-resource",
            RESOURCE,
        ];
        replicas.push(HttpHost::start(&args).await);
    }
    replicas
}

#[tokio::test]
async fn three_replicas_with_auth_continue_a_callers_paused_calls_and_refuse_everyone_else() {
    let dir = tempfile::tempdir().unwrap();
    let key_file = dir.path().join("state.key");
    std::fs::write(&key_file, "fleet-auth-state-key-forty-bytes-at-least!\n").unwrap();
    let key = Key::new("k1");
    let issuer = Issuer::start(&[&key]).await;
    let replicas = replicas(&issuer, &key_file).await;
    let balancer = Balancer::start(&replicas.iter().collect::<Vec<_>>()).await;
    let front = &balancer;
    let alice = client(front, &token(&key, &issuer, "alice", "tools:call", 0), asks()).await;
    let bob = client(front, &token(&key, &issuer, "bob", "tools:call", 0), asks()).await;

    for n in 0..30u64 {
        let call = || params("delete_records", json!({ "table": format!("t{n}") }));
        let (question, _, state) = paused(alice.call_tool_once(call()).await.unwrap());
        let follow_up = || {
            call().with_input_responses(approval_answer(&question, true)).with_request_state(state.clone())
        };
        // Round-robin: Bob's tries land on each replica in turn; all refuse.
        for _ in 0..3 {
            let refused = error_text(bob.call_tool_once(follow_up()).await, &state);
            assert!(refused.contains("requestState failed verification"), "call {n}: {refused}");
        }
        // Alice continues it, every other call with a refreshed token.
        let done = if n % 2 == 0 {
            alice.call_tool_once(follow_up()).await.unwrap()
        } else {
            let refreshed = client(front, &token(&key, &issuer, "alice", "tools:call", n), asks()).await;
            refreshed.call_tool_once(follow_up()).await.unwrap()
        };
        assert_eq!(completed(done), format!("deleted every record of t{n}"));
        let echo = alice.call_tool(params("echo", json!({ "text": format!("call {n}") }))).await.unwrap();
        assert_eq!(text_of(&echo), format!("call {n}"));
    }

    // A 2025-11-25 session sticks to its replica; Bob's requests with its
    // id follow it there and are not found.
    let alice_token = token(&key, &issuer, "alice", "tools:call", 0);
    let session = open(front, &alice_token).await;
    let bob_token = token(&key, &issuer, "bob", "tools:call", 0);
    let list = request(1, "tools/list", json!({}));
    let answer = send(front, "POST", "/mcp", Some(&bob_token), Some(&session), Some(list.clone())).await;
    assert_eq!((answer.status, answer.body.as_str()), (404, "Not Found: Session not found"));
    let answer = send(front, "POST", "/mcp", Some(&alice_token), Some(&session), Some(list)).await;
    assert_eq!(answer.status, 200, "{answer:?}");
}

#[tokio::test]
async fn through_the_fleet_another_callers_task_is_answered_as_one_never_issued() {
    let dir = tempfile::tempdir().unwrap();
    let key_file = dir.path().join("state.key");
    std::fs::write(&key_file, "fleet-auth-state-key-forty-bytes-at-least!\n").unwrap();
    let key = Key::new("k1");
    let issuer = Issuer::start(&[&key]).await;
    let replicas = replicas(&issuer, &key_file).await;
    let balancer = Balancer::start(&replicas.iter().collect::<Vec<_>>()).await;
    let alice_token = token(&key, &issuer, "alice", "tools:call", 0);
    let bob_token = token(&key, &issuer, "bob", "tools:call", 0);

    // Alice starts a call through the balancer: it becomes a task, then
    // waits for her approval.
    let alice = client(&balancer, &alice_token, tasks()).await;
    let id = task_id(alice.call_tool_once(prune()).await.unwrap());
    let never = uuid_like(&id);

    // A task lives only in the replica that runs it (docs/fleet.md: serve clients that use tasks from one replica, or with
    // client-IP affinity), and `tasks/get` names nothing HAProxy could
    // stick on. So what the fleet guarantees is asserted replica by
    // replica. Alice reads her task on the one replica that runs it; the
    // others do not know it.
    let mut alices = Vec::new();
    for replica in &replicas {
        alices.push(client(replica, &alice_token, tasks()).await);
    }
    let (mut runs_it, mut elsewhere) = (Vec::new(), Vec::new());
    for (n, alice) in alices.iter().enumerate() {
        match alice.peer().get_task(GetTaskParams::new(id.clone())).await {
            Ok(_) => runs_it.push(n),
            Err(err) => elsewhere.push((n, error_text::<()>(Err(err), &id))),
        }
    }
    assert_eq!(runs_it.len(), 1, "one replica runs the task: {runs_it:?}");
    let there = &alices[runs_it[0]];
    let waiting = poll(there, &id, |payload| matches!(payload, TaskPayload::InputRequired { .. })).await;
    let TaskPayload::InputRequired { input_requests } = waiting else { unreachable!() };
    let question = input_requests.keys().next().unwrap().clone();

    // Bob's `tasks/get`, `tasks/update` (this protocol's way to answer a
    // task, with the right key and a yes; there is no `tasks/result`) and
    // `tasks/cancel` of her id get, on every replica, the answer for an id
    // never issued: the one that runs it says no more than the others.
    for (n, replica) in replicas.iter().enumerate() {
        let bob = client(replica, &bob_token, tasks()).await;
        let unknown = error_text(bob.peer().get_task(GetTaskParams::new(never.clone())).await, &never);
        assert_eq!(error_text(bob.peer().get_task(GetTaskParams::new(id.clone())).await, &id), unknown);
        let answer = UpdateTaskParams::new(id.clone(), approval_answer(&question, true));
        assert_eq!(error_text(bob.peer().update_task(answer).await, &id), unknown, "replica {n}");
        let cancel = CancelTaskParams::new(id.clone());
        assert_eq!(error_text(bob.peer().cancel_task(cancel).await, &id), unknown, "replica {n}");
        if let Some((_, alices_answer)) = elsewhere.iter().find(|(m, _)| *m == n) {
            assert_eq!(alices_answer, &unknown, "replica {n}");
        }
    }

    // Through the balancer, wherever round-robin sends each of Bob's tries
    // (three of each: as many as replicas), the answer for an id never issued.
    let bob = client(&balancer, &bob_token, tasks()).await;
    let unknown = error_text(bob.peer().get_task(GetTaskParams::new(never.clone())).await, &never);
    for _ in 0..3 {
        assert_eq!(error_text(bob.peer().get_task(GetTaskParams::new(id.clone())).await, &id), unknown);
    }
    for _ in 0..3 {
        let answer = UpdateTaskParams::new(id.clone(), approval_answer(&question, true));
        assert_eq!(error_text(bob.peer().update_task(answer).await, &id), unknown);
    }
    for _ in 0..3 {
        let cancel = CancelTaskParams::new(id.clone());
        assert_eq!(error_text(bob.peer().cancel_task(cancel).await, &id), unknown);
    }

    // Alice's task is where it was, still waiting for her, and her answer completes it.
    poll(there, &id, |payload| matches!(payload, TaskPayload::InputRequired { .. })).await;
    let answer = UpdateTaskParams::new(id.clone(), approval_answer(&question, true));
    there.peer().update_task(answer).await.unwrap();
    let done = poll(there, &id, |payload| matches!(payload, TaskPayload::Completed { .. })).await;
    let TaskPayload::Completed { result } = done else { unreachable!() };
    assert_eq!(result["content"][0]["text"], "pruned 3 snapshots");
}
