//! `mcp-wasm-host new`: a new project builds as it is, outside the
//! repository, with the commands the README and the project's own README
//! give, and its tool lists and answers.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::json;

use crate::harness::{Host, Start, host_binary, text_of};

/// Where scaffolded projects are built: a target dir of their own (sharing
/// the host's would deadlock on its build lock), kept between runs so only
/// the first build is cold.
fn scaffold_target_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/scaffold-test")
}

/// `cargo ARGS` in `dir`, isolated from the cargo running these tests: none
/// of the inherited variables that would override the project's settings,
/// and at the lowest priority, so the build does not starve the tests that
/// run beside it.
fn cargo(dir: &Path, args: &[&str]) -> std::process::Output {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut command = Command::new("nice");
    command
        .args(["-n", "19", &cargo])
        .args(args)
        .current_dir(dir)
        .env("CARGO_TARGET_DIR", scaffold_target_dir())
        .stdin(Stdio::null());
    for inherited in [
        "CARGO_ENCODED_RUSTFLAGS",
        "RUSTFLAGS",
        "CARGO_BUILD_RUSTFLAGS",
        "CARGO_BUILD_TARGET",
        "RUSTC_WRAPPER",
        "RUSTC_WORKSPACE_WRAPPER",
        "CARGO_MAKEFLAGS",
        "RUST_BACKTRACE",
    ] {
        command.env_remove(inherited);
    }
    command.output().expect("cargo runs")
}

#[tokio::test]
async fn a_new_rust_project_builds_with_plain_cargo_and_serves_its_echo_tool() {
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().join("hello-tool");
    let made = Command::new(host_binary())
        .args(["new", "--lang", "rust", project.to_str().unwrap()])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&made.stderr);
    assert!(made.status.success(), "{said}");
    assert!(said.contains("cargo build --release --target wasm32-wasip2"), "says how to build it: {said}");

    // The commands the project's README gives.
    let built = cargo(&project, &["build", "--release", "--target", "wasm32-wasip2"]);
    assert!(built.status.success(), "the new project builds:\n{}", String::from_utf8_lossy(&built.stderr));
    let component = scaffold_target_dir().join("wasm32-wasip2/release/hello_tool.wasm");
    let inspected =
        Command::new(host_binary()).args(["inspect", component.to_str().unwrap()]).output().unwrap();
    assert!(inspected.status.success(), "{}", String::from_utf8_lossy(&inspected.stderr));
    let listed: serde_json::Value = serde_json::from_slice(&inspected.stdout).unwrap();
    let echo = &listed["tools"][0];
    assert_eq!(echo["name"], "echo", "{listed}");
    assert_eq!(echo["inputSchema"]["required"], json!(["text"]), "{listed}");
    assert_eq!(echo["outputSchema"]["properties"]["text"]["type"], "string", "{listed}");
    assert_eq!(echo["annotations"]["readOnlyHint"], true, "{listed}");

    let start = Start {
        args: vec!["--component".into(), component.display().to_string()],
        ..Start::new("demo", &[])
    };
    let host = Host::start(start).await;
    let result = host.call("echo", json!({ "text": "from a new project" })).await.unwrap();
    assert_eq!(text_of(&result), "from a new project");
    assert_eq!(result.structured_content, Some(json!({ "text": "from a new project" })));
}

#[test]
fn new_refuses_a_folder_that_is_not_empty() {
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().join("my-tool");
    std::fs::create_dir(&project).unwrap();
    std::fs::write(project.join("keep.txt"), "mine").unwrap();
    let made = Command::new(host_binary())
        .args(["new", "--lang", "rust", project.to_str().unwrap()])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(!made.status.success());
    assert!(String::from_utf8_lossy(&made.stderr).contains("not empty"));
    assert_eq!(std::fs::read_dir(&project).unwrap().count(), 1, "nothing written");
}

/// The README's "Writing a tool" shows the commands and the code the test
/// above builds, so they cannot drift apart.
#[test]
fn the_readme_shows_what_new_writes_and_the_commands_that_build_it() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    for command in [
        "mcp-wasm-host new --lang rust my-tool && cd my-tool",
        "cargo build --release --target wasm32-wasip2",
        "mcp-wasm-host inspect target/wasm32-wasip2/release/my_tool.wasm",
    ] {
        assert!(readme.contains(command), "README lacks `{command}`");
    }
    let template = std::fs::read_to_string(root.join("guest-tools/templates/rust/src/lib.rs")).unwrap();
    // The code after the module's doc comment.
    let (_, code) = template.split_once("\n\n").unwrap();
    assert!(readme.contains(code), "README lacks the template's code:\n{code}");
}
