//! Descriptors under a low hard limit (issue 22, finding 11): `--max-handles`
//! is fitted to the open-file limit at start, and calls hoarding files leave
//! a neighbour the descriptors it needs to make its sandbox.

use serde_json::json;

use crate::harness::{Host, Start, guest, host_binary, text_of};

/// The hostile component beside the demo.
fn hostile(extra: &[&str]) -> Start {
    let mut start = Start::new("hostile", extra);
    start.args.extend(["--component".to_string(), guest("demo").display().to_string()]);
    start
}

#[tokio::test]
async fn calls_hoarding_descriptors_leave_a_neighbour_enough_to_make_its_sandbox() {
    let root = tempfile::tempdir().unwrap();
    std::fs::write(root.path().join("f"), "x").unwrap();
    let grant = format!("{}::/data", root.path().display());
    // A hard limit the host cannot raise, under the default --max-handles.
    let mut start = hostile(&["--dir", &grant]);
    let host_args = std::mem::take(&mut start.args);
    start.args = ["--nofile=4096:4096", host_binary().to_str().unwrap(), "--log-format", "json"]
        .into_iter()
        .map(String::from)
        .chain(host_args)
        .collect();
    start.program = "prlimit".into();
    start.json_log = false;
    let host = Host::start(start).await;
    let lowered = host
        .stderr
        .wait_for_event("--max-handles fitted to the limit", |e| {
            e.message().contains("--max-handles lowered")
        })
        .await;
    assert_eq!(
        (lowered.u64("requested"), lowered.u64("open_file_limit")),
        (Some(4096), Some(4096)),
        "{lowered}"
    );
    let fitted = lowered.u64("fitted").unwrap();
    assert!(fitted <= 4096 / 4, "{lowered}");

    // Five hogs at once, each opening until refused and holding on.
    let hogs: Vec<_> =
        (0..5).map(|_| host.call("hoard_files", json!({ "path": "/data/f", "hold_ms": 3000 }))).collect();
    let hogs = futures_util::future::join_all(hogs);
    tokio::pin!(hogs);
    let holding = async {
        host.stderr
            .wait_until("every hog holding its files or stopped", |lines| {
                let events = lines.iter().filter_map(|line| line.event());
                let done = events
                    .filter(|e| e.message().contains("holding") || e.is_call_ended("hoard_files"))
                    .count();
                (done >= 5).then_some(())
            })
            .await
    };
    tokio::select! {
        () = holding => {}
        _ = &mut hogs => panic!("the hogs ended before holding"),
    }
    // While they hold: a neighbour makes its sandbox, with its grant.
    let neighbour = host.call("read_file", json!({ "path": "/data/f" })).await.unwrap();
    let said = text_of(&neighbour);
    assert_eq!(neighbour.is_error, Some(false), "{said}");
    assert!(!said.contains("cannot create the sandbox"), "{said}");
    for hog in hogs.await {
        let hog = hog.unwrap();
        let said = text_of(&hog);
        if hog.is_error == Some(true) {
            assert!(said.contains(&format!("limit of {fitted} open handles (--max-handles)")), "{said}");
        } else {
            let held: u64 = said.split(' ').nth(1).and_then(|n| n.parse().ok()).unwrap_or(u64::MAX);
            assert!(held <= fitted, "{said}");
        }
    }
    // After them, calls open files again.
    host.wait_until_idle().await;
    let after = host.call("read_file", json!({ "path": "/data/f" })).await.unwrap();
    assert_eq!(text_of(&after), "read 1 bytes");
}
