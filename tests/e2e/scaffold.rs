//! `mcp-wasm-host new`: a new project builds as it is, outside the
//! repository, with the commands docs/writing-tools.md and the project's own README
//! give, and its tools list and answer. One test per language; a missing
//! toolchain (`scripts/setup.sh` installs them) fails the test.

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

/// `mcp-wasm-host new --lang LANG PROJECT`, checking it succeeds and that
/// it tells the user `build`, the command that builds the project.
fn new_project(lang: &str, project: &Path, build: &str) {
    let made = Command::new(host_binary())
        .args(["new", "--lang", lang, project.to_str().unwrap()])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&made.stderr);
    assert!(made.status.success(), "{said}");
    assert!(said.contains(build), "says how to build it: {said}");
}

/// Runs a build `command` (at the lowest priority, see [`cargo`]), failing
/// the test with its output if it fails; returns what it said on stderr.
fn build(command: &mut Command, what: &str) -> String {
    let program = command.get_program().to_os_string();
    let built = command.stdin(Stdio::null()).output().unwrap_or_else(|err| panic!("{program:?}: {err}"));
    let said = String::from_utf8_lossy(&built.stderr).into_owned();
    assert!(
        built.status.success(),
        "{what} does not build:\n{}\n{said}",
        String::from_utf8_lossy(&built.stdout),
    );
    said
}

/// `mcp-wasm-host inspect COMPONENT`: its tool list (this also puts the
/// component in the compile cache, so serving it next starts at once).
fn inspect(component: &Path) -> serde_json::Value {
    let inspected = Command::new(host_binary())
        .args(["inspect", component.to_str().unwrap()])
        .env("RUST_LOG", "warn")
        .output()
        .unwrap();
    assert!(inspected.status.success(), "{}", String::from_utf8_lossy(&inspected.stderr));
    serde_json::from_slice(&inspected.stdout).unwrap()
}

/// Serves `component` alone.
async fn serve(component: &Path) -> Host {
    let start = Start {
        args: vec!["--component".into(), component.display().to_string()],
        ..Start::new("demo", &[])
    };
    Host::start(start).await
}

/// The names of the tools `inspect` listed.
fn tool_names(listed: &serde_json::Value) -> Vec<&str> {
    listed["tools"].as_array().unwrap().iter().filter_map(|tool| tool["name"].as_str()).collect()
}

/// A Python or JavaScript project's tools, as its `app` defines them: `greet`
/// with a required `name`, and `count` with progress; and its skill.
async fn check_greet_and_count(component: &Path) {
    let listed = inspect(component);
    assert_eq!(tool_names(&listed), ["greet", "count"], "{listed}");
    let greet = &listed["tools"][0];
    assert_eq!(greet["inputSchema"]["required"], json!(["name"]), "{listed}");
    assert_eq!(greet["inputSchema"]["properties"]["style"]["enum"], json!(["plain", "excited"]), "{listed}");
    assert_eq!(greet["annotations"]["readOnlyHint"], true, "{listed}");
    assert_eq!(listed["tools"][1]["inputSchema"]["properties"]["to"]["minimum"], 1, "{listed}");

    let host = serve(component).await;
    let result = host.call("greet", json!({ "name": "Ada", "style": "excited" })).await.unwrap();
    assert_eq!(text_of(&result), "Hello, Ada!");
    let result = host.call("count", json!({ "to": 1 })).await.unwrap();
    assert_eq!(text_of(&result), "counted to 1");
    assert_eq!(skill_uris(&host).await, ["skill://greeting/SKILL.md"]);
}

/// The repository's root, where `scripts/setup.sh` installs the toolchains.
fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

#[tokio::test]
async fn a_new_rust_project_builds_with_plain_cargo_and_serves_its_echo_tool() {
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().join("hello-tool");
    new_project("rust", &project, "cargo build --release --target wasm32-wasip2");

    // The commands the project's README gives.
    let built = cargo(&project, &["build", "--release", "--target", "wasm32-wasip2"]);
    assert!(built.status.success(), "the new project builds:\n{}", String::from_utf8_lossy(&built.stderr));
    let component = scaffold_target_dir().join("wasm32-wasip2/release/hello_tool.wasm");
    let listed = inspect(&component);
    let echo = &listed["tools"][0];
    assert_eq!(echo["name"], "echo", "{listed}");
    assert_eq!(echo["inputSchema"]["required"], json!(["text"]), "{listed}");
    assert_eq!(echo["outputSchema"]["properties"]["text"]["type"], "string", "{listed}");
    assert_eq!(echo["annotations"]["readOnlyHint"], true, "{listed}");

    let host = serve(&component).await;
    let result = host.call("echo", json!({ "text": "from a new project" })).await.unwrap();
    assert_eq!(text_of(&result), "from a new project");
    assert_eq!(result.structured_content, Some(json!({ "text": "from a new project" })));
    assert_eq!(skill_uris(&host).await, ["skill://echo-text/SKILL.md"]);
}

/// The skills a host serves, by URI.
async fn skill_uris(host: &Host) -> Vec<String> {
    let skills = host.client.peer().list_all_skills().await.unwrap();
    skills.into_iter().map(|skill| skill.uri).collect()
}

/// Built with the componentize-py `scripts/setup.sh` installs (the
/// project's README installs the same version into `.venv`).
#[tokio::test]
async fn a_new_python_project_builds_with_componentize_py_and_serves_greet_and_count() {
    let componentize = repo().join(".tools/componentize-py/bin/componentize-py");
    assert!(componentize.is_file(), "{} is missing: run scripts/setup.sh", componentize.display());
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().join("hello-py");
    new_project("python", &project, "componentize-py -d wit -w tool componentize app -o hello-py.wasm");

    build(
        Command::new("nice")
            .args(["-n", "19"])
            .arg(&componentize)
            .args(["-d", "wit", "-w", "tool", "componentize", "app", "-o", "hello-py.wasm"])
            .current_dir(&project)
            .env("RUST_BACKTRACE", "0")
            .env_remove("VIRTUAL_ENV"),
        "the new Python project",
    );
    check_greet_and_count(&project.join("hello-py.wasm")).await;
}

/// Built with the project's own `npm ci` and `build.mjs`, ahead of time
/// (weval), as a user with weval installed builds it. `--prefer-offline`
/// takes the packages from npm's cache when it has them (`scripts/setup.sh`
/// filled it with the same versions, pinned by the same lock file), so the
/// test needs the network only on a machine that never ran setup.
#[tokio::test]
async fn a_new_js_project_builds_with_npm_ci_and_componentize_js_and_serves_greet_and_count() {
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().join("hello-js");
    new_project("js", &project, "npm ci && node build.mjs --wit wit --world tool hello-js.wasm");

    build(
        Command::new("nice")
            .args([
                "-n",
                "19",
                "npm",
                "ci",
                "--prefer-offline",
                "--no-audit",
                "--no-fund",
                "--loglevel=error",
            ])
            .current_dir(&project),
        "npm ci in the new JavaScript project",
    );
    // Ahead of time, with the weval `scripts/setup.sh` installed (a user's
    // comes from `cargo install weval` onto PATH; WEVAL_BIN names another).
    let weval = Path::new(env!("CARGO_MANIFEST_DIR")).join("../.tools/weval/bin/weval");
    assert!(weval.is_file(), "{} is missing: run scripts/setup.sh", weval.display());
    let said = build(
        Command::new("nice")
            .args(["-n", "19", "node", "build.mjs", "--wit", "wit", "--world", "tool", "hello-js.wasm"])
            .env("WEVAL_BIN", &weval)
            .current_dir(&project),
        "the new JavaScript project",
    );
    assert!(said.contains("ahead of time"), "built ahead of time: {said}");
    check_greet_and_count(&project.join("hello-js.wasm")).await;
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

/// The guide to writing a tool, `docs/writing-tools.md` (moved there from the
/// README), shows the commands and the code the test above builds, so they
/// cannot drift apart.
#[test]
fn the_guide_shows_what_new_writes_and_the_commands_that_build_it() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let guide = std::fs::read_to_string(root.join("docs/writing-tools.md")).unwrap();
    for command in [
        "mcp-wasm-host new --lang rust my-tool && cd my-tool",
        "cargo build --release --target wasm32-wasip2",
        "mcp-wasm-host inspect target/wasm32-wasip2/release/my_tool.wasm",
        "mcp-wasm-host new --lang python my-tool",
        "componentize-py -d wit -w tool componentize app -o my-tool.wasm",
        "mcp-wasm-host new --lang js my-tool",
        "npm ci && node build.mjs --wit wit --world tool my-tool.wasm",
    ] {
        assert!(guide.contains(command), "docs/writing-tools.md lacks `{command}`");
    }
    for app in ["rust/src/lib.rs", "python/app.py", "js/app.js"] {
        let template = std::fs::read_to_string(root.join("guest-tools/templates").join(app)).unwrap();
        // The code after the module's doc comment.
        let (_, code) = template.split_once("\n\n").unwrap();
        assert!(guide.contains(code), "docs/writing-tools.md lacks the code of {app}:\n{code}");
    }
}
