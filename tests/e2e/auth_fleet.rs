//! The fleet with `--auth-issuer` on: three replicas sharing a
//! `--state-key-file` and one authorization server, behind HAProxy
//! (`deploy/haproxy/haproxy.cfg`). A caller's paused calls continue on
//! whichever replica the follow-up lands, with a refreshed token too;
//! another caller's follow-up is refused on every replica, and another
//! caller's session is not found through the balancer either.

use serde_json::json;

use crate::auth::{Issuer, Key, RESOURCE, send};
use crate::auth_access::{asks, client, completed, error_text, open, paused, request, token};
use crate::balanced::Balancer;
use crate::harness::{approval_answer, params, text_of};
use crate::http_limits::HttpHost;

#[tokio::test]
async fn three_replicas_with_auth_continue_a_callers_paused_calls_and_refuse_everyone_else() {
    let dir = tempfile::tempdir().unwrap();
    let key_file = dir.path().join("state.key");
    std::fs::write(&key_file, "fleet-auth-state-key-forty-bytes-at-least!\n").unwrap();
    let key = Key::new("k1");
    let issuer = Issuer::start(&[&key]).await;
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
