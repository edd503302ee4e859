//! `--config tools.toml`: each component gets its own grants, limits and
//! approval rules; flags on the command line override the file; a broken
//! file is refused at start, naming the line.

use std::path::Path;

use serde_json::json;

use crate::harness::{Host, Start, guest, host_binary, text_of};

/// Writes `toml` to `tools.toml` in `dir` and returns its path.
fn write_config(dir: &Path, toml: &str) -> String {
    let path = dir.join("tools.toml");
    std::fs::write(&path, toml).unwrap();
    path.display().to_string()
}

fn start_with(config: &str, extra: &[&str]) -> Start {
    let mut args = vec!["--config".to_string(), config.to_string()];
    args.extend(extra.iter().map(|a| a.to_string()));
    Start { args, ..Start::new("demo", &[]) }
}

#[tokio::test]
async fn each_component_gets_its_own_grants_limits_and_approval_rules() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    std::fs::create_dir(&data).unwrap();
    std::fs::write(data.join("note.txt"), "twelve bytes").unwrap();
    let config = write_config(
        dir.path(),
        &format!(
            r#"
            [defaults]
            timeout = "30s"

            [[component]]
            path = "{demo}"
            timeout = "150ms"
            require_approval = ["echo"]
            no_approval = ["delete_records"]

            [[component]]
            path = "{hostile}"
            dirs = ["data::/data:ro"]   # relative to this file
            env = ["MODE=strict"]
            "#,
            demo = guest("demo").display(),
            hostile = guest("hostile").display(),
        ),
    );
    let host = Host::start(start_with(&config, &[])).await;

    // The hostile component sees its own grants, and only those.
    let read = host.call("read_file", json!({ "path": "/data/note.txt" })).await.unwrap();
    assert_eq!(text_of(&read), "read 12 bytes");
    assert_eq!(text_of(&host.call("list_env", json!({})).await.unwrap()), "MODE=strict");

    // The demo component has its own deadline...
    let slow = host.call("countdown", json!({ "steps": 100, "step_ms": 50, "quiet": true })).await.unwrap();
    assert!(text_of(&slow).contains("150ms"), "{}", text_of(&slow));
    // ...and its own approval rules: echo asks (and is declined), delete_records does not.
    host.test_client.answer_approvals(crate::harness::Approval::Decline);
    let echo = host.call("echo", json!({ "text": "hi" })).await.unwrap();
    assert!(text_of(&echo).contains("the user declined"), "{}", text_of(&echo));
    let deleted = host.call("delete_records", json!({ "table": "t" })).await.unwrap();
    assert_eq!(deleted.is_error, Some(false));
    host.wait_until_idle().await;
}

#[tokio::test]
async fn a_flag_on_the_command_line_overrides_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(
        dir.path(),
        &format!(
            "[[component]]\npath = \"{}\"\ntimeout = \"100ms\"\nenv = [\"A=file\"]\n",
            guest("hostile").display()
        ),
    );
    let host = Host::start(start_with(&config, &["--timeout", "30s", "--env", "A=flag"])).await;
    assert_eq!(text_of(&host.call("list_env", json!({})).await.unwrap()), "A=flag");
    host.wait_until_idle().await;
    // The `--component` given beside the file is served too, with [defaults].
    let config = write_config(dir.path(), "[defaults]\nenv = [\"B=2\"]\n");
    let mut start = start_with(&config, &[]);
    start.args.extend(["--component".into(), guest("hostile").display().to_string()]);
    let host = Host::start(start).await;
    assert_eq!(text_of(&host.call("list_env", json!({})).await.unwrap()), "B=2");
}

/// Runs the host with `--config` and no client; returns its stderr.
fn refused(toml: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(dir.path(), toml);
    let output = crate::harness::run_with_stdin_open(
        std::process::Command::new(host_binary()).args(["--config", &config]),
    );
    assert!(!output.status.success(), "the host started with a broken config");
    assert!(output.stdout.is_empty());
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[test]
fn a_broken_config_is_refused_at_start_naming_the_line() {
    let demo = guest("demo").display().to_string();
    let unknown_key = refused(&format!("[[component]]\npath = \"{demo}\"\ntimeuot = \"1s\"\n"));
    assert!(unknown_key.contains("tools.toml line 3") && unknown_key.contains("timeuot"), "{unknown_key}");
    let bad_value = refused(&format!("[[component]]\npath = \"{demo}\"\n\nmax_memory = \"lots\"\n"));
    assert!(bad_value.contains("line 4") && bad_value.contains("lots"), "{bad_value}");
    let bad_syntax = refused("[[component]\n");
    assert!(bad_syntax.contains("line 1"), "{bad_syntax}");
    let missing = refused("\n\n[[component]]\npath = \"nope.wasm\"\n");
    assert!(missing.contains("tools.toml line 3") && missing.contains("nope.wasm"), "{missing}");
    let no_path = refused("[[component]]\nfuel = 5\n");
    assert!(no_path.contains("line 1") && no_path.contains("no `path`"), "{no_path}");
}

/// `[server]` says where to serve as the flags do: `http` (with its allowed
/// origins) serves Streamable HTTP with no `--http` on the command line.
#[tokio::test]
async fn the_file_can_say_where_to_serve() {
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(
        dir.path(),
        &format!(
            "[server]\nhttp = \"127.0.0.1:0\"\nhttp_allowed_origins = [\"https://app.example.com:443\"]\n\n\
             [[component]]\npath = \"{}\"\n",
            guest("demo").display()
        ),
    );
    let host = crate::http_limits::HttpHost::start_exactly(&["--config", &config]).await;
    let hello = json!({ "jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": { "name": "config", "version": "1" },
    }});
    // The origin the file allows is served; another is refused.
    let allowed = host.post_with(None, hello.clone(), &[("origin", "https://app.example.com")]).await;
    assert_eq!(allowed.status, 200, "{allowed:?}");
    assert!(allowed.answer(0)["result"]["serverInfo"].is_object(), "{allowed:?}");
    let refused = host.post_with(None, hello, &[("origin", "https://evil.example.com")]).await;
    assert_eq!(refused.status, 403, "{refused:?}");
}

/// The command line written out: completions for each shell and the man
/// page come from the binary itself.
#[test]
fn completions_and_the_man_page_come_from_the_binary() {
    for shell in ["bash", "zsh", "fish"] {
        let out = std::process::Command::new(host_binary()).args(["completions", shell]).output().unwrap();
        assert!(out.status.success(), "{shell}: {}", String::from_utf8_lossy(&out.stderr));
        let script = String::from_utf8_lossy(&out.stdout);
        assert!(script.contains("max-concurrent-calls"), "{shell}: {script}");
    }
    let out = std::process::Command::new(host_binary()).arg("man").output().unwrap();
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains(".TH"), "not a man page");
}
