//! Request bodies over Streamable HTTP share one server-wide budget
//! (`--max-request-memory`): many connections each sending a large
//! `tools/call` cannot add up past it, whatever `--max-connections` allows.

use serde_json::json;

use crate::harness::rss_kib;
use crate::http_limits::HttpHost;

/// One call holds the only slot (`--max-concurrent-calls 1`), so every
/// other call waits with its arguments in memory. Forty connections each
/// send a 4 MiB `tools/call` under a 64 MiB budget: a few are admitted,
/// the rest get `503` with `Retry-After` naming the flag, and the host
/// grows by about the budget, not by forty bodies (before: 11.5 MB per
/// admitted request, 3 GB from 300 connections). A small request is still
/// served.
#[tokio::test]
async fn request_bodies_share_one_memory_budget() {
    let host = HttpHost::start(&["--max-concurrent-calls", "1", "--max-request-memory", "64MiB"]).await;
    let session = host.open_session(json!({})).await;
    let hold = json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call",
                       "params": { "name": "wait_for_cancel", "arguments": {} } });
    let holder = host.send(Some(&session), &hold).await;
    assert_eq!(holder.status(), 200);
    let before = rss_kib(host.pid()) / 1024;

    // Just under the 4 MiB cap, with the JSON around it.
    let big = "x".repeat((4 << 20) - 1024);
    let mut admitted = Vec::new();
    let mut refused = 0;
    for id in 0..40u64 {
        let call = json!({ "jsonrpc": "2.0", "id": 100 + id, "method": "tools/call",
                           "params": { "name": "echo", "arguments": { "text": big } } });
        match host.try_send(Some(&session), &call).await {
            Ok(response) if response.status() == 200 => admitted.push(response),
            Ok(response) => {
                assert_eq!(response.status(), 503);
                let retry = response.headers().get("retry-after").expect("a Retry-After header");
                assert_eq!(retry, "1");
                let body = http_body_util::BodyExt::collect(response.into_body()).await.unwrap().to_bytes();
                let text = String::from_utf8_lossy(&body);
                assert!(text.contains("--max-request-memory"), "{text}");
                refused += 1;
            }
            // Refused before the whole body was sent: the connection closed.
            Err(_) => refused += 1,
        }
    }
    let grown = (rss_kib(host.pid()) / 1024).saturating_sub(before);
    assert!(!admitted.is_empty() && admitted.len() <= 6, "{} admitted", admitted.len());
    assert_eq!(refused + admitted.len(), 40);
    assert!(grown < 64 + 48, "the host grew by {grown} MiB with a 64 MiB budget");
    let listed = host.request(&session, 2, "tools/list", json!({})).await;
    assert_eq!(listed.status, 200, "a small request is served: {listed:?}");
}
