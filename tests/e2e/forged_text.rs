//! Text from a component cannot forge the host's log or error lines: a tool
//! name holding a newline, a line posing as the host's, OSC and CSI escapes
//! and BEL, 10 KiB long (`hostile-forged-name.wasm`), is refused with one
//! escaped, bounded line — at start, and when it arrives through `--watch`.
//! (A registry's message: `hostile_registry.rs`.)

use crate::harness::{Host, Start, guest, host_binary, run_with_stdin_open};

/// How the forged name shows in a line once escaped.
const ESCAPED: &str = r"forged\nERROR forged host line\u{1b}]0;owned\u{7}\u{1b}[2J";

/// Checks that `stderr` holds no forged line and no raw escape.
fn nothing_forged(stderr: &str) {
    assert!(!stderr.lines().any(|line| line.starts_with("ERROR forged")), "a forged line:\n{stderr}");
    assert!(!stderr.contains(['\x1b', '\x07']), "raw escapes: {stderr:?}");
}

#[test]
fn a_forged_tool_name_is_refused_at_start_with_one_escaped_bounded_line() {
    // Before: the `error:` line echoed the name raw and whole: a forged
    // line, a cleared terminal, a new window title, 10 KiB.
    let forged = guest("hostile-forged-name").display().to_string();
    let output = run_with_stdin_open(std::process::Command::new(host_binary()).args([
        "--component",
        &forged,
        "--no-cache",
    ]));
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert!(!output.status.success(), "the host started: {stderr}");
    nothing_forged(&stderr);
    let errors: Vec<&str> = stderr.lines().filter(|line| line.starts_with("error:")).collect();
    assert_eq!(errors.len(), 1, "{stderr}");
    let said = errors[0];
    assert!(said.contains(&format!("tool `{ESCAPED}")) && said.contains("…[cut "), "{said}");
    assert!(said.contains("is declared wrongly") && said.contains("tool names must be"), "{said}");
    assert!(said.len() < 2 << 10, "{} bytes", said.len());
}

#[tokio::test]
async fn a_forged_tool_name_arriving_by_watch_is_one_escaped_bounded_warn_line() {
    // Before: the `reload refused` line of the text log carried the name's
    // newline raw (the log escapes ESC and BEL in fields, not line breaks).
    let dir = tempfile::tempdir().unwrap();
    let tool = dir.path().join("tool.wasm");
    std::fs::copy(guest("demo"), &tool).unwrap();
    let args = ["--component", &tool.display().to_string(), "--watch", "--watch-interval", "20ms"];
    let start = Start { args: args.map(String::from).to_vec(), ..Start::new("demo", &[]) };
    let host = Host::start(start.text_log()).await;
    host.stderr
        .wait_until("the watcher", |lines| {
            lines.iter().find(|line| line.text().contains("watching components for new versions")).cloned()
        })
        .await;

    let beside = tool.with_extension("new");
    std::fs::copy(guest("hostile-forged-name"), &beside).unwrap();
    std::fs::rename(&beside, &tool).unwrap();
    let refused = host
        .stderr
        .wait_until("the refusal", |lines| {
            lines
                .iter()
                .map(|line| line.text())
                .find(|text| text.contains("reload refused"))
                .map(String::from)
        })
        .await;
    assert!(refused.contains(" WARN "), "{refused}");
    assert!(refused.contains(&format!("tool `{ESCAPED}")) && refused.contains("…[cut "), "{refused}");
    assert!(refused.len() < 4 << 10, "{} bytes", refused.len());
    let all = host.stderr.dump();
    nothing_forged(&all);
    assert_eq!(all.lines().filter(|line| line.contains("reload refused")).count(), 1, "{all}");

    // The old version keeps serving.
    let echoed = host.call("echo", serde_json::json!({ "text": "still here" })).await.unwrap();
    assert_eq!(crate::harness::text_of(&echoed), "still here");
}
