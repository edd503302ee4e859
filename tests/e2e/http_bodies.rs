//! Request bodies over Streamable HTTP share one server-wide budget
//! (`--max-request-memory`): many connections each sending a large
//! `tools/call` cannot add up past it, whatever `--max-connections` allows.

use serde_json::json;

use crate::harness::rss_kib;
use crate::http_limits::HttpHost;

/// A host with one call slot and a 64 MiB body budget, its slot held by a
/// call that waits for a cancel (kept while the response lives): every
/// other call waits with its arguments in memory.
async fn one_call_holds_the_only_slot() -> (HttpHost, String, hyper::Response<hyper::body::Incoming>) {
    let host = HttpHost::start(&["--max-concurrent-calls", "1", "--max-request-memory", "64MiB"]).await;
    let session = host.open_session(json!({})).await;
    let hold = json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call",
                       "params": { "name": "wait_for_cancel", "arguments": {} } });
    let holder = host.send(Some(&session), &hold).await;
    assert_eq!(holder.status(), 200);
    (host, session, holder)
}

/// One call holds the only slot (`--max-concurrent-calls 1`), so every
/// other call waits with its arguments in memory. Forty connections each
/// send a 4 MiB `tools/call` under a 64 MiB budget: a few are admitted,
/// the rest get `503` with `Retry-After` naming the flag, and the host
/// grows by about the budget, not by forty bodies (before: 11.5 MB per
/// admitted request, 3 GB from 300 connections). A small request is still
/// served.
#[tokio::test]
async fn request_bodies_share_one_memory_budget() {
    let (host, session, _holder) = one_call_holds_the_only_slot().await;
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

/// A body's cost is in its values as much as its bytes: a `tools/call`
/// whose arguments are an array of zeros is two bytes a value as text and
/// over forty parsed. Before, it was charged three times its size, so 40 of
/// them queued behind one call reached 3 GB; now each is charged what its
/// values cost before rmcp parses it, and with a 64 MiB budget one that
/// could never fit is `413`, the rest `503`, and the host grows by less
/// than the budget.
#[tokio::test]
async fn a_body_of_many_small_values_is_charged_for_them_before_it_is_parsed() {
    let (host, session, _holder) = one_call_holds_the_only_slot().await;
    let before = rss_kib(host.pid()) / 1024;
    // 2 MiB of zeros: a million values, 96 MB charged parsed.
    let zeros = format!("[{}0]", "0,".repeat((1 << 20) - 1));
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{{"name":"echo","arguments":{{"text":"x","pad":{zeros}}}}}}}"#
    );
    let call: serde_json::Value = serde_json::from_str(&body).unwrap();
    for _ in 0..40 {
        // An error: refused before the whole body was sent, the connection closed.
        if let Ok(response) = host.try_send(Some(&session), &call).await {
            assert_eq!(response.status(), 413, "admitted");
            let body = http_body_util::BodyExt::collect(response.into_body()).await.unwrap().to_bytes();
            let text = String::from_utf8_lossy(&body);
            assert!(text.contains("once parsed") && text.contains("--max-request-memory"), "{text}");
        }
    }
    let grown = (rss_kib(host.pid()) / 1024).saturating_sub(before);
    assert!(grown < 64, "the host grew by {grown} MiB with a 64 MiB budget");
    let listed = host.request(&session, 2, "tools/list", json!({})).await;
    assert_eq!(listed.status, 200, "a small request is served: {listed:?}");
}
