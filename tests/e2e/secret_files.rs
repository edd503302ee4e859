//! Files of secrets (`--config-var-file`, `--env-file`) are read bounded
//! and only when they are regular files, and a mistake in one never shows
//! what the file holds: a FIFO does not hang the start, `/dev/zero` does
//! not fill the memory, and a malformed line's error names the line and
//! the right flag, not the secret on it.

use std::time::{Duration, Instant};

use crate::harness::{guest, host_binary, run_with_stdin_open};

/// The host's start with `flag FILE`, which must fail: what it printed.
fn refused_start(flag: &str, file: &std::path::Path) -> String {
    let output = run_with_stdin_open(std::process::Command::new(host_binary()).args([
        "--component",
        &guest("demo").display().to_string(),
        flag,
        &file.display().to_string(),
    ]));
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert!(!output.status.success(), "the host started: {stderr}");
    stderr
}

#[test]
fn a_malformed_line_names_the_line_and_the_flag_never_the_secret() {
    let dir = tempfile::tempdir().unwrap();
    // A pasted API key without its name: base64, so it ends in `=`, and
    // everything before that `=` used to be quoted as "the key".
    let secret = "c2stbGl2ZS0xMjM0NTY3ODkwYWJjZGVm/+Zm9vYmFy";
    for flag in ["--config-var-file", "--env-file"] {
        let file = dir.path().join("secrets");
        std::fs::write(&file, format!("# keys\nGOOD=1\n{secret}==\n")).unwrap();
        let stderr = refused_start(flag, &file);
        assert!(!stderr.contains(secret) && !stderr.contains("c2stbGl2"), "the secret was printed: {stderr}");
        // Before: `--config-file … line 3: `c2st…` is not a valid name`.
        assert!(stderr.contains(&format!("{flag} {} line 3", file.display())), "{stderr}");
        assert!(!stderr.contains("--config-file"), "the wrong flag is named: {stderr}");
    }
}

#[test]
fn a_fifo_or_a_device_is_refused_at_once_not_read() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("fifo");
    assert!(std::process::Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    let started = Instant::now();
    // Before: the open blocked for ever waiting for a writer (the harness
    // closes stdin after a minute, which did not help).
    let stderr = refused_start("--config-var-file", &fifo);
    assert!(stderr.contains("is not a regular file"), "{stderr}");
    assert!(started.elapsed() < Duration::from_secs(30), "took {:?}", started.elapsed());

    // Before: /dev/zero was read whole, growing the host past 3 GB.
    let stderr = refused_start("--config-var-file", std::path::Path::new("/dev/zero"));
    assert!(stderr.contains("/dev/zero is not a regular file"), "{stderr}");
}
