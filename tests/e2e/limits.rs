//! Limits: a call that runs out of fuel, time or memory gets an isError result
//! naming the limit, its cleanup runs, and the server keeps serving. A
//! spinning guest stopped by its fuel or its deadline is in `languages.rs`
//! (`a_spinning_tool_is_stopped_by_its_fuel_and_by_its_deadline`), for the
//! guest of every language; here, the rest.

use serde_json::json;

use crate::harness::{Host, Start, files_in, no_args, text_of, wait_for_lock};

async fn assert_still_serving(host: &Host) {
    let next = host.call("echo", json!({ "text": "still here" })).await.unwrap();
    assert_eq!(text_of(&next), "still here");
}

#[tokio::test]
async fn passing_the_deadline_is_an_error_result_and_cleanup_runs() {
    let locks = tempfile::tempdir().unwrap();
    let dir = locks.path().display().to_string();
    let host = Host::start(Start::new("demo", &["--timeout", "300ms", "--dir", &dir])).await;
    let result = host.call("stall", no_args()).await.unwrap();
    assert_eq!(result.is_error, Some(true));
    let message = text_of(&result);
    assert!(message.contains("time limit of 300ms (--timeout)"), "{message}");
    let ended = host.call_ended("stall").await;
    assert_eq!(ended.str("cleanup"), Some("done"), "{ended}");
    assert!(files_in(locks.path()).is_empty(), "cleanup removed the lock");
    assert_still_serving(&host).await;
}

#[tokio::test]
async fn exceeding_the_memory_limit_is_an_error_result_naming_the_limit() {
    let host = Host::start(Start::new("demo", &["--max-memory", "32MiB"])).await;
    let result = host.call("allocate", json!({ "mib": 64 })).await.unwrap();
    assert_eq!(result.is_error, Some(true));
    let message = text_of(&result);
    assert!(message.contains("memory limit of 32 MiB (--max-memory)"), "{message}");
    // Within the limit, the same tool works.
    let result = host.call("allocate", json!({ "mib": 8 })).await.unwrap();
    assert_eq!(text_of(&result), "held 8 MiB");
}

#[tokio::test]
async fn the_lock_is_held_while_a_call_runs() {
    // Guards the other tests: the lock they see removed was really created.
    let locks = tempfile::tempdir().unwrap();
    let dir = locks.path().display().to_string();
    let host = Host::start(Start::new("demo", &["--dir", &dir])).await;
    let handle = host.start_call("stall", no_args()).await;
    let lock = wait_for_lock(locks.path()).await;
    assert!(lock.starts_with("call-") && lock.ends_with(".lock"), "{lock}");
    handle.cancel(None).await.unwrap();
    host.call_ended("stall").await;
    assert!(files_in(locks.path()).is_empty());
}
