//! `mcp-wasm-host call`: one tool call from the shell. Each test runs the
//! real binary as a user would — stdin not a terminal unless a test gives
//! it a pseudo-terminal — and reads its stdout, stderr and exit status.

use std::process::{Output, Stdio};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::process::Command;

use crate::harness::{Event, PATIENCE, files_in, guest, host_binary, wait_for_lock};

/// `mcp-wasm-host call --component demo.wasm ARGS…`, not on a terminal.
fn call(args: &[&str]) -> Command {
    let mut command = Command::new(host_binary());
    command
        .arg("call")
        .arg("--component")
        .arg(guest("demo"))
        .args(args)
        .env_remove("RUST_LOG")
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    command
}

/// Runs `call ARGS…` to its end.
async fn run(args: &[&str]) -> Output {
    let output = call(args).output();
    tokio::time::timeout(PATIENCE, output).await.expect("`call` ended in time").expect("running `call`")
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// Asserts `output` ended with exit status `code`, showing what it printed if not.
fn assert_status(output: &Output, code: i32) {
    assert_eq!(output.status.code(), Some(code), "stdout:\n{}\nstderr:\n{}", stdout(output), stderr(output));
}

#[tokio::test]
async fn call_prints_a_tools_text_and_nothing_else() {
    let output = run(&["echo", r#"{"text":"hi"}"#]).await;
    assert_status(&output, 0);
    assert_eq!(stdout(&output), "hi\n");
    // Quiet by default: no log lines beside the result.
    assert_eq!(stderr(&output), "");
}

#[tokio::test]
async fn call_prints_structured_content_as_json_with_json() {
    let output = run(&["echo", r#"{"text":"hi"}"#, "--json"]).await;
    assert_status(&output, 0);
    let printed: Value = serde_json::from_str(&stdout(&output)).expect("stdout is JSON");
    assert_eq!(printed, json!({ "text": "hi" }));
}

/// `--json` shows a tool's words to a person: the same JSON, with no raw
/// C1 control (CSI U+009B, OSC U+009D) or bidi override in it.
#[tokio::test]
async fn call_json_writes_no_raw_c1_or_bidi_control() {
    let text = "a\u{9b}2J\u{9d}0;owned\u{7}\u{202e}txt.exe";
    let arguments = json!({ "text": text }).to_string();
    let output = run(&["echo", &arguments, "--json"]).await;
    assert_status(&output, 0);
    let printed = stdout(&output);
    // Before: U+009B, U+009D and U+202E went out raw.
    assert!(!printed.contains(['\u{9b}', '\u{9d}', '\u{202e}', '\u{7}']), "{printed:?}");
    assert!(printed.contains(r"\u009b2J\u009d0;owned\u0007\u202etxt.exe"), "{printed}");
    let parsed: Value = serde_json::from_str(&printed).expect("stdout is JSON");
    assert_eq!(parsed, json!({ "text": text }), "the same value");
}

/// A result just under `--max-output` is a frame past rmcp's 16 MiB line
/// cap: `call` takes it whole instead of waiting for ever.
#[tokio::test]
async fn a_result_just_under_max_output_is_printed_not_waited_for() {
    let hostile = guest("hostile").display().to_string();
    // 13 056 KiB of image data: 17 MiB of base64, under --max-output 20MiB.
    let arguments = json!({ "field": "image_data", "kib": 13056 }).to_string();
    let output = call(&["--component", &hostile, "media_bomb", &arguments, "--max-output", "20MiB"]).output();
    // Before: no answer, ever.
    let output = tokio::time::timeout(Duration::from_secs(120), output)
        .await
        .expect("`call` ended (it used to hang)")
        .expect("running `call`");
    assert_status(&output, 0);
    assert!(stderr(&output).contains("image/png"), "{}", stderr(&output));
}

#[tokio::test]
async fn arg_values_are_typed_by_the_tools_schema_and_set_over_args() {
    // `text` is a string in echo's schema: 007 stays the text typed.
    let output = run(&["echo", r#"{"text":"old"}"#, "--arg", "text=007"]).await;
    assert_status(&output, 0);
    assert_eq!(stdout(&output), "007\n");
    // `iterations` is an integer: the value is read as JSON.
    let output = run(&["compute", "--arg", "iterations=3"]).await;
    assert_status(&output, 0);
}

#[tokio::test]
async fn an_is_error_result_goes_to_stderr_with_exit_status_1() {
    let output = run(&["compute", "--fuel", "1000000", "--arg", "iterations=1000000000"]).await;
    assert_status(&output, 1);
    assert_eq!(stdout(&output), "");
    let said = stderr(&output);
    assert!(said.starts_with("error: tool `compute` was stopped") && said.contains("--fuel"), "{said}");
}

#[tokio::test]
async fn a_refused_call_says_why_with_exit_status_1() {
    let output = run(&["nope"]).await;
    assert_status(&output, 1);
    let said = stderr(&output);
    assert!(said.contains("unknown tool `nope`") && said.contains("echo"), "{said}");

    let output = run(&["echo", r#"{"wrong":1}"#]).await;
    assert_status(&output, 1);
    let said = stderr(&output);
    assert!(said.contains("arguments do not match the input schema of `echo`"), "{said}");
}

#[tokio::test]
async fn bad_command_lines_are_usage_errors() {
    for args in
        [&["echo", "[1]"][..], &["echo", "{"], &["echo", "--arg", "text"], &["echo", "--http", "127.0.0.1:0"]]
    {
        let output = run(args).await;
        assert_status(&output, 2);
        let said = stderr(&output);
        assert!(said.starts_with("error: "), "{args:?}: {said}");
    }
    let said = stderr(&run(&["echo", "--watch"]).await);
    assert!(said.contains("--watch is for serving"), "{said}");
}

#[tokio::test]
async fn off_a_terminal_approval_is_declined_unless_yes() {
    let output = run(&["--require-approval", "echo", "echo", r#"{"text":"hi"}"#]).await;
    assert_status(&output, 1);
    assert_eq!(stdout(&output), "", "the tool did not run");
    let said = stderr(&output);
    assert!(said.contains("Allow the tool `echo` to run?") && said.contains("give --yes"), "{said}");
    assert!(said.contains("did not run: it needs the user's approval, and the user declined"), "{said}");

    let output = run(&["delete_records", "--arg", "table=users", "--yes"]).await;
    assert_status(&output, 0);
    assert_eq!(stdout(&output), "deleted every record of users\n");
    assert!(stderr(&output).contains("approved (--yes)"), "{}", stderr(&output));
}

#[tokio::test]
async fn off_a_terminal_a_form_is_declined() {
    // `survey` asks a form with a required field and no default.
    let output = run(&["survey", "--arg", "questions=1", "--yes"]).await;
    assert_status(&output, 0);
    assert_eq!(stdout(&output), "the user stopped after 0 answers\n");
    assert!(stderr(&output).contains("some field has no default"), "{}", stderr(&output));
}

/// Ctrl-C (SIGINT) in the middle of a call that ignores cancellation: the
/// call is cancelled as a client's cancel would, the host stops it and
/// runs its cleanup (which removes its lock file), and `call` exits 130.
#[tokio::test]
async fn ctrl_c_stops_a_spinning_tool_and_runs_its_cleanup() {
    let locks = tempfile::tempdir().unwrap();
    let dir = locks.path().display().to_string();
    // Unmetered, so only the cancel can stop it (fuel runs out in seconds).
    let mut child = call(&["--dir", &dir, "--fuel", "0", "--log-format", "json", "spin"])
        .env("RUST_LOG", "mcp_wasm_host=info")
        .spawn()
        .expect("running `call`");
    // The tool is running once its lock file is there.
    wait_for_lock(locks.path()).await;
    let pid = child.id().unwrap().to_string();
    assert!(std::process::Command::new("kill").args(["-INT", &pid]).status().unwrap().success());
    let status =
        tokio::time::timeout(Duration::from_secs(10), child.wait()).await.expect("`call` exits").unwrap();
    assert_eq!(status.code(), Some(130));
    assert!(files_in(locks.path()).is_empty(), "cleanup removed the lock: {:?}", files_in(locks.path()));
    let mut log = String::new();
    child.stderr.take().unwrap().read_to_string(&mut log).await.unwrap();
    assert!(log.contains("cancelled; stopping the call…"), "{log}");
    let ended = log.lines().filter_map(Event::parse).find(|e| e.is_call_ended("spin"));
    let ended = ended.unwrap_or_else(|| panic!("no `call ended` line:\n{log}"));
    assert_eq!(ended.str("stop_reason"), Some("client-cancelled"), "{ended}");
    assert_eq!(ended.str("cleanup"), Some("done"), "{ended}");
}

/// `call ARGS…` run in a real pseudo-terminal (util-linux `script`): what
/// the user types goes to `input`, what the terminal shows comes back.
struct Terminal {
    child: tokio::process::Child,
    input: tokio::process::ChildStdin,
    shown: String,
    screen: tokio::process::ChildStdout,
}

impl Terminal {
    async fn start(args: &[&str]) -> Terminal {
        let quote = |arg: &str| format!("'{}'", arg.replace('\'', r"'\''"));
        let mut line = vec![quote(&host_binary().display().to_string()), "call".into(), "--component".into()];
        line.push(quote(&guest("demo").display().to_string()));
        line.extend(args.iter().map(|arg| quote(arg)));
        let mut child = Command::new("script")
            .args(["-qec", &line.join(" "), "/dev/null"])
            .env_remove("RUST_LOG")
            .env("NO_COLOR", "1")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .expect("running `script` (util-linux)");
        let input = child.stdin.take().unwrap();
        let screen = child.stdout.take().unwrap();
        Terminal { child, input, shown: String::new(), screen }
    }

    /// Waits until the terminal shows `text`.
    async fn wait_for(&mut self, text: &str) {
        let read = async {
            let mut buffer = [0u8; 4096];
            while !self.shown.contains(text) {
                let read = self.screen.read(&mut buffer).await.unwrap();
                assert!(read > 0, "the terminal closed before showing {text:?}:\n{}", self.shown);
                self.shown.push_str(&String::from_utf8_lossy(&buffer[..read]));
            }
        };
        if tokio::time::timeout(PATIENCE, read).await.is_err() {
            panic!("the terminal did not show {text:?}:\n{}", self.shown);
        }
    }

    async fn type_line(&mut self, line: &str) {
        self.input.write_all(format!("{line}\n").as_bytes()).await.unwrap();
        self.input.flush().await.unwrap();
    }

    /// Waits for `call` to exit; its status and everything the terminal showed.
    async fn finish(mut self) -> (Option<i32>, String) {
        let mut rest = Vec::new();
        let read = self.screen.read_to_end(&mut rest);
        tokio::time::timeout(PATIENCE, read).await.expect("the terminal closed").unwrap();
        self.shown.push_str(&String::from_utf8_lossy(&rest));
        let status = tokio::time::timeout(PATIENCE, self.child.wait()).await.expect("`call` exits").unwrap();
        (status.code(), self.shown)
    }
}

#[tokio::test]
async fn on_a_terminal_the_user_approves_or_declines() {
    let mut terminal = Terminal::start(&["delete_records", "--arg", "table=users"]).await;
    terminal.wait_for("Approve? [y/N]").await;
    assert!(terminal.shown.contains("Allow the tool `delete_records` to run?"), "{}", terminal.shown);
    terminal.type_line("y").await;
    let (status, shown) = terminal.finish().await;
    assert_eq!(status, Some(0), "{shown}");
    assert!(shown.contains("deleted every record of users"), "{shown}");

    let mut terminal = Terminal::start(&["delete_records", "--arg", "table=users"]).await;
    terminal.wait_for("Approve? [y/N]").await;
    terminal.type_line("n").await;
    let (status, shown) = terminal.finish().await;
    assert_eq!(status, Some(1), "{shown}");
    assert!(shown.contains("the user declined") && !shown.contains("deleted every record"), "{shown}");
}

#[tokio::test]
async fn on_a_terminal_the_user_fills_in_a_form() {
    let mut terminal = Terminal::start(&["survey", "--arg", "questions=2"]).await;
    terminal.wait_for("Question 1 of 2").await;
    terminal.wait_for("Answer (string; required): ").await;
    terminal.type_line("blue").await;
    terminal.wait_for("Question 2 of 2").await;
    terminal.wait_for("Answer (string; required): ").await;
    terminal.type_line("green").await;
    let (status, shown) = terminal.finish().await;
    assert_eq!(status, Some(0), "{shown}");
    assert!(shown.contains("blue\r\ngreen"), "{shown}");
}
