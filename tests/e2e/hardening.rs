//! The sandbox gaps a purpose-built attack found (issue 9), each closed and
//! held closed over the wire: grants that could be redirected, schemas that
//! burned the host, memory counted per linear memory, handle exhaustion, a
//! compile cache trusted blindly, and grant typos that widened access.
//! Each test names what the host did before the fix.

use std::os::unix::fs::PermissionsExt as _;
use std::path::Path;

use serde_json::{Value, json};

use crate::harness::{Host, Start, guest, host_binary, rss_kib, text_of};

/// The hostile component beside the demo (for well-behaved neighbour calls).
fn hostile(extra: &[&str]) -> Start {
    let mut start = Start::new("hostile", extra);
    start.args.extend(["--component".to_string(), guest("demo").display().to_string()]);
    start
}

/// Runs the host with `args` and a client that says nothing, expecting it
/// to refuse to start; returns what it said on stderr.
fn refused_at_start(args: &[&str]) -> String {
    let output = crate::harness::run_with_stdin_open(
        std::process::Command::new(host_binary()).args(args).env("RUST_LOG", "warn"),
    );
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert!(!output.status.success(), "the host started with {args:?}: {stderr}");
    assert!(output.stdout.is_empty(), "nothing on stdout");
    stderr
}

/// Runs a hostile call while a well-behaved call runs beside it; checks the
/// neighbour and the next call are served and the host's resident memory
/// grew by less than `max_growth_mib`. Returns the hostile call's answer.
async fn contained(host: &Host, tool: &str, args: Value, max_growth_mib: u64) -> Result<String, String> {
    let pid = host.child.id().unwrap();
    let before = rss_kib(pid);
    let neighbour = host.call("countdown", json!({ "steps": 5, "step_ms": 10 }));
    let (hostile, neighbour) = tokio::join!(host.call(tool, args), neighbour);
    assert_eq!(text_of(&neighbour.unwrap()), "counted down from 5", "the neighbour call is unaffected");
    let next = host.call("echo", json!({ "text": "next" })).await.unwrap();
    assert_eq!(text_of(&next), "next", "the next call is served");
    let growth_mib = rss_kib(pid).saturating_sub(before) / 1024;
    assert!(growth_mib < max_growth_mib, "the host grew by {growth_mib} MiB during `{tool}`");
    match hostile {
        Ok(result) => {
            assert_eq!(result.is_error, Some(true), "{result:?}");
            Ok(text_of(&result))
        }
        Err(err) => Err(err.to_string()),
    }
}

// ---- Finding 1: nested grants, and grants opened again by path ----

#[test]
fn a_grant_nested_in_a_writable_grant_is_refused_at_start() {
    // Before: both were granted, and a call replacing `rw/sub` with a
    // symlink made the next call's `/sub` any directory the host can read.
    let root = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(root.path().join("rw/sub")).unwrap();
    let outer = format!("{}::/rw", root.path().join("rw").display());
    let inner = format!("{}::/sub:ro", root.path().join("rw/sub").display());
    let hostile = guest("hostile").display().to_string();
    let said = refused_at_start(&["--component", &hostile, "--dir", &outer, "--dir", &inner]);
    assert!(said.contains("is inside the writable grant"), "{said}");

    // The same across the components of one --config.
    let config = root.path().join("tools.toml");
    std::fs::write(
        &config,
        format!(
            "[[component]]\npath = \"{hostile}\"\ndirs = [\"rw::/rw\"]\n\n\
             [[component]]\npath = \"{}\"\ndirs = [\"rw/sub::/sub:ro\"]\n",
            guest("demo").display()
        ),
    )
    .unwrap();
    let said = refused_at_start(&["--config", &config.display().to_string()]);
    assert!(said.contains("is inside the writable grant"), "{said}");
}

#[tokio::test]
async fn a_grant_is_the_directory_opened_at_start_whatever_its_path_names_later() {
    // Before: each call opened the grant's path again, following whatever
    // it had become.
    let root = tempfile::tempdir().unwrap();
    let (granted, secret) = grant_beside_a_secret(root.path(), "granted");
    std::fs::write(granted.join("ok.txt"), "fine").unwrap();
    let grant = format!("{}::/data", granted.display());
    let host = Host::start(hostile(&["--dir", &grant])).await;
    let read = |path: &'static str| {
        let host = &host;
        async move { text_of(&host.call("read_file", json!({ "path": path })).await.unwrap()) }
    };
    assert_eq!(read("/data/ok.txt").await, "read 4 bytes");

    // Someone swaps the granted path for a symlink to the secret.
    std::fs::rename(&granted, root.path().join("moved")).unwrap();
    std::os::unix::fs::symlink(&secret, &granted).unwrap();
    assert_eq!(read("/data/ok.txt").await, "read 4 bytes", "still the directory granted at start");
    assert!(read("/data/key.txt").await.starts_with("refused"), "the secret stays out of reach");
}

#[tokio::test]
async fn a_symlink_a_tool_plants_in_its_grant_leads_nowhere_outside() {
    // Held up before the fix too; kept tested: the sandbox's own path walk
    // refuses to follow a link out of the grant, relative or absolute.
    let root = tempfile::tempdir().unwrap();
    let (rw, secret) = grant_beside_a_secret(root.path(), "rw");
    let grant = format!("{}::/rw", rw.display());
    let host = Host::start(hostile(&["--dir", &grant])).await;
    for (name, target) in [("up", "../secret"), ("abs", secret.to_str().unwrap()), ("etc", "/etc")] {
        let planted = host
            .call("plant_symlink", json!({ "dir": "/rw", "name": name, "target": target }))
            .await
            .unwrap();
        let planted = text_of(&planted);
        assert!(planted.starts_with("planted") || planted.starts_with("refused"), "{planted}");
        for path in [format!("/rw/{name}/key.txt"), format!("/rw/{name}/passwd")] {
            let read = text_of(&host.call("read_file", json!({ "path": path })).await.unwrap());
            assert!(read.starts_with("refused"), "{path} through {name} -> {target}: {read}");
        }
    }
}

#[test]
fn a_writable_grant_may_not_hold_the_compile_cache_or_a_component() {
    // Before: a tool could plant native code in the cache (run by the host
    // at its next start) or rewrite the component it is served from.
    let root = tempfile::tempdir().unwrap();
    let cache = root.path().join("cache");
    let grant = format!("{}::/data", root.path().display());
    let demo = guest("demo").display().to_string();
    let said = refused_at_start(&[
        "--component",
        &demo,
        "--cache-dir",
        &cache.display().to_string(),
        "--dir",
        &grant,
    ]);
    assert!(said.contains("which the host trusts") && said.contains("cache"), "{said}");
    let guests = guest("demo").parent().unwrap().display().to_string();
    let said = refused_at_start(&["--component", &demo, "--no-cache", "--dir", &format!("{guests}::/g")]);
    assert!(said.contains("demo.wasm"), "{said}");
}

#[tokio::test]
async fn a_read_only_grant_may_hold_what_the_host_trusts() {
    let guests = guest("demo").parent().unwrap().display().to_string();
    let host = Host::start(Start::new("demo", &["--no-cache", "--dir", &format!("{guests}::/g:ro")])).await;
    assert_eq!(text_of(&host.call("echo", json!({ "text": "served" })).await.unwrap()), "served");
}

// ---- Finding 10: typos that widen a grant; secrets in the process list ----

#[test]
fn a_mis_cased_read_only_suffix_is_refused_not_granted_writable() {
    // Before: `/d::/mnt:RO` was a read-write grant at guest path `/mnt:RO`.
    let root = tempfile::tempdir().unwrap();
    let demo = guest("demo").display().to_string();
    let spec = format!("{}::/mnt:RO", root.path().display());
    let said = refused_at_start(&["--component", &demo, "--dir", &spec]);
    assert!(said.contains("cannot contain `:`") && said.contains("`:ro`"), "{said}");
}

#[tokio::test]
async fn env_file_values_reach_the_tool_but_not_the_process_list() {
    let root = tempfile::tempdir().unwrap();
    let file = root.path().join("secrets.env");
    std::fs::write(&file, "# for the tool\nAPI_TOKEN=s3cr3t-value\n").unwrap();
    let host = Host::start(hostile(&["--env-file", &file.display().to_string()])).await;
    let env = host.call("list_env", json!({})).await.unwrap();
    assert_eq!(text_of(&env), "API_TOKEN=s3cr3t-value");
    let pid = host.child.id().unwrap();
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap();
    assert!(!String::from_utf8_lossy(&cmdline).contains("s3cr3t"), "the value is not in the arguments");
}

// ---- Finding 2: schemas that burn the host ----

#[test]
fn a_schema_beyond_the_limits_is_refused_when_the_component_loads() {
    // Before: it loaded, and one call returning 8 000 zeros cost 35 s of
    // host CPU and 6.4 GB, after the call's slot was released.
    let bomb = guest("hostile-schema-bomb").display().to_string();
    let said = refused_at_start(&["--component", &bomb, "--no-cache"]);
    assert!(said.contains("tool `schema_bomb`") && said.contains("output-schema"), "{said}");
    assert!(said.contains("`anyOf`") && said.contains("2000") && said.contains("64"), "{said}");
}

#[test]
fn a_component_whose_tool_list_never_comes_is_refused_at_start_within_its_bound() {
    // Listing a component's tools runs its code before any call: a list that
    // is computed forever must stop the start with a message, not hang it.
    // Fuel stops it first; without fuel (`--fuel 0`), the 5 s deadline.
    let spins = guest("hostile-list-spins").display().to_string();
    for (fuel, bound) in [(None, "all fuel consumed"), (Some("0"), "did not return within 5s")] {
        let mut args = vec!["--component", &spins, "--no-cache"];
        args.extend(fuel.iter().flat_map(|fuel| ["--fuel", fuel]));
        let started = std::time::Instant::now();
        let said = refused_at_start(&args);
        let took = started.elapsed();
        assert!(said.contains("hostile-list-spins.wasm") && said.contains("list-tools"), "{said}");
        assert!(said.contains(bound), "{bound}: {said}");
        assert!(took < std::time::Duration::from_secs(30), "the refusal took {took:?}");
    }
}

#[tokio::test]
async fn output_at_the_schema_limits_is_checked_to_the_first_error_within_bounds() {
    let host = Host::start(hostile(&["--timeout", "20s"])).await;
    let answer = contained(&host, "schema_at_limit", json!({}), 64).await.unwrap();
    assert!(answer.contains("breaks its output schema") && answer.contains("/items/0"), "{answer}");
    assert!(answer.len() < 4096, "one violation, not every one: {} bytes", answer.len());
}

#[tokio::test]
async fn arguments_are_checked_to_the_first_error_within_bounds() {
    // Before: every violation of every item was collected and sent back.
    let host = Host::start(hostile(&[])).await;
    let zeros = json!({ "items": vec![0; 8000] });
    let refusal = contained(&host, "input_at_limit", zeros, 64).await.unwrap_err();
    assert!(
        refusal.contains("input schema of `input_at_limit`") && refusal.contains("/items/0"),
        "{refusal}"
    );
    assert!(refusal.len() < 4096, "one violation, not every one: {} bytes", refusal.len());
    let fine = host.call("input_at_limit", json!({ "items": [1, 2, 64] })).await.unwrap();
    assert_eq!(text_of(&fine), "arguments passed");
}

// ---- Finding 3: memory per linear memory ----

#[test]
fn a_component_with_more_memories_than_a_call_may_hold_is_refused_at_load() {
    // Before: a component with 12 memories reached 2.4 GB in one call under
    // a 256 MiB limit. Each memory still counts against one per-call budget
    // (see `sandbox`'s tests); beyond the per-component caps it never loads.
    let root = tempfile::tempdir().unwrap();
    let modules: String = (0..12)
        .map(|n| format!("(core module $m{n} (memory 1)) (core instance (instantiate $m{n}))\n"))
        .collect();
    let path = root.path().join("memories.wasm");
    std::fs::write(&path, wat::parse_str(format!("(component {modules})")).unwrap()).unwrap();
    let said = refused_at_start(&["--component", &path.display().to_string(), "--no-cache"]);
    assert!(said.contains("12") && said.contains("memories"), "{said}");
    assert!(said.contains("at most 4 memories"), "{said}");
}

// ---- Finding 6: handle exhaustion ----

#[tokio::test]
async fn a_call_that_hoards_handles_is_stopped_at_its_own_limit() {
    // Before: one call held ~20 000 descriptors and a concurrent call could
    // not create its sandbox ("Too many open files").
    let root = tempfile::tempdir().unwrap();
    std::fs::write(root.path().join("f"), "x").unwrap();
    let grant = format!("{}::/data", root.path().display());
    let host = Host::start(hostile(&["--dir", &grant, "--max-handles", "256"])).await;
    let pid = host.child.id().unwrap();
    let before = rss_kib(pid);
    let hoard = host.call("open_many", json!({ "path": "/data/f", "count": 100_000 }));
    let neighbour = host.call("read_file", json!({ "path": "/data/f" }));
    let (hoard, neighbour) = tokio::join!(hoard, neighbour);
    assert_eq!(text_of(&neighbour.unwrap()), "read 1 bytes", "a neighbour's sandbox still opens files");
    let hoard = hoard.unwrap();
    assert_eq!(hoard.is_error, Some(true), "{hoard:?}");
    assert!(text_of(&hoard).contains("limit of 256 open handles (--max-handles)"), "{}", text_of(&hoard));
    let growth_mib = rss_kib(pid).saturating_sub(before) / 1024;
    assert!(growth_mib < 64, "the host grew by {growth_mib} MiB");
    // Every handle went with the call's store.
    host.wait_until_idle().await;
    let open = std::fs::read_dir(format!("/proc/{pid}/fd")).unwrap().count();
    assert!(open < 200, "{open} descriptors still open");
}

// ---- Finding 9: a compile cache trusted blindly ----

#[tokio::test]
async fn the_compile_cache_is_private_and_refused_when_others_can_write_it() {
    let root = tempfile::tempdir().unwrap();
    let cache = root.path().join("cache");
    let cache_arg = cache.display().to_string();
    let host = Host::start(Start::new("demo", &["--cache-dir", &cache_arg])).await;
    host.call("echo", json!({ "text": "warm" })).await.unwrap();
    // Optimized code is cached in the background (tiering) before it is swapped in.
    host.stderr.wait_for_event("the swap", |e| e.message().starts_with("optimized code replaced")).await;
    drop(host);
    assert_eq!(mode(&cache), 0o700);
    let artifacts: Vec<_> = std::fs::read_dir(&cache).unwrap().map(|e| e.unwrap().path()).collect();
    assert!(!artifacts.is_empty());
    for artifact in &artifacts {
        assert_eq!(mode(artifact), 0o600, "{}", artifact.display());
    }

    // Before: anything in the directory was loaded as native code. Now a
    // directory others can write is not used at all, and the host says so.
    std::fs::set_permissions(&cache, std::fs::Permissions::from_mode(0o777)).unwrap();
    let host = Host::start(Start::new("demo", &["--cache-dir", &cache_arg])).await;
    host.stderr
        .wait_for_event("the refusal", |e| e.message().starts_with("not using the compile cache"))
        .await;
    assert_eq!(text_of(&host.call("echo", json!({ "text": "served" })).await.unwrap()), "served");
}

/// Makes `root/NAME` (to grant) and `root/secret/key.txt` (never granted)
/// beside it; returns both directories.
fn grant_beside_a_secret(root: &Path, name: &str) -> (std::path::PathBuf, std::path::PathBuf) {
    let (granted, secret) = (root.join(name), root.join("secret"));
    std::fs::create_dir_all(&granted).unwrap();
    std::fs::create_dir_all(&secret).unwrap();
    std::fs::write(secret.join("key.txt"), "never granted").unwrap();
    (granted, secret)
}

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}
