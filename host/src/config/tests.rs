//! The config file's parsing and merging, checked.

use super::*;
use std::path::PathBuf;
use std::time::Duration;

use crate::approval::ApprovalRule;

/// The serving options of `mcp-wasm-host [lead...] --config CONFIG [extra...]`.
fn serve_args(lead: &[&str], config: &std::path::Path, extra: &[&str]) -> ServeArgs {
    let mut argv = vec!["mcp-wasm-host"];
    argv.extend_from_slice(lead);
    argv.extend_from_slice(&["--config", config.to_str().unwrap()]);
    argv.extend_from_slice(extra);
    crate::cli::Cli::parse_args(argv).unwrap().serve
}

/// `text` as a config file, resolved with no flags but `lead`; or the error.
fn resolved(text: &str, lead: &[&str]) -> Result<Settings, String> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tools.toml");
    std::fs::write(&path, text).unwrap();
    resolve(&serve_args(lead, &path, &[])).map_err(|err| format!("{err:#}"))
}

#[test]
fn a_full_file_parses() {
    let settings = resolved(
        r#"
        [server]
        max_concurrent_calls = 8
        approval_timeout = "30s"
        max_sessions = 4
        http_header_timeout = "2s"
        max_component_size = "64MiB"

        [defaults]
        timeout = "5s"
        fuel = 0

        [[component]]
        path = "a.wasm"
        dirs = ["/tmp::/work:ro"]
        env = ["A=1"]
        allow_hosts = ["example.com:443", "127.0.0.1"]
        allow_private_addresses = true
        max_memory = "64MiB"
        max_log_record = "4KiB"
        max_guest_output = "1MiB"
        require_approval = ["destructive", "wipe"]
        tool_scopes = { wipe = ["files:write", "admin"] }
        config = { region = "eu", "api.key" = "k" }
        annotations.wipe = { destructive = true }
        "#,
        &[],
    )
    .unwrap();
    let server = &settings.server;
    assert_eq!((server.max_concurrent_calls, server.max_sessions), (8, 4));
    assert_eq!(server.http_header_timeout, Duration::from_secs(2));
    assert_eq!(server.approval_timeout, Duration::from_secs(30));
    assert_eq!(server.max_component_size, 64 << 20);
    let entry = &settings.components[0];
    assert!(entry.origin.as_deref().unwrap().ends_with("tools.toml line 13"), "{:?}", entry.origin);
    assert_eq!(entry.limits.timeout, Duration::from_secs(5));
    assert_eq!(entry.limits.metered_fuel(), None);
    assert_eq!(entry.limits.max_memory, 64 << 20);
    assert_eq!((entry.limits.max_log_record, entry.limits.max_guest_output), (4 << 10, 1 << 20));
    assert_eq!(entry.approvals.require[1], ApprovalRule::Tool("wipe".into()));
    assert_eq!(entry.scopes.per_tool["wipe"], ["files:write", "admin"]);
    assert_eq!(entry.selection.hints["wipe"].destructive, Some(true));
    let debug = format!("{:?}", entry.grants);
    assert!(debug.contains("/work") && debug.contains("example.com"), "{debug}");
}

#[test]
fn mistakes_name_their_line() {
    let err = resolved("[defaults]\ntimeout = \"5 parsecs\"\n", &["-c", "a.wasm"]).unwrap_err();
    assert!(err.contains("line 2") && err.contains("timeout"), "{err}");
    let err = resolved("[[component]]\npath = \"a.wasm\"\nfule = 3\n", &[]).unwrap_err();
    assert!(err.contains("line 3") && err.contains("unknown key `fule`"), "{err}");
    let err = resolved("[server\n", &["-c", "a.wasm"]).unwrap_err();
    assert!(err.contains("line 1"), "{err}");
    let err = resolved("[[component]]\ndirs = [\"::x\"]\npath = \"a.wasm\"\n", &[]).unwrap_err();
    assert!(err.contains("line 2") && err.contains("dirs"), "{err}");
    // A key in the wrong table says where it goes.
    let err = resolved("[server]\nfuel = 3\n", &["-c", "a.wasm"]).unwrap_err();
    assert!(err.contains("put it in [defaults] or a [[component]]"), "{err}");
    let err = resolved("[defaults]\nmax_sessions = 3\n", &["-c", "a.wasm"]).unwrap_err();
    assert!(err.contains("put it in [server]"), "{err}");
    let err = resolved("[server]\nissuer = \"https://x\"\n", &["-c", "a.wasm"]).unwrap_err();
    assert!(err.contains("put it in [server.auth]"), "{err}");
    let err = resolved("[server]\nwatch = \"yes\"\n", &["-c", "a.wasm"]).unwrap_err();
    assert!(err.contains("true or false"), "{err}");
}

#[test]
fn a_component_s_own_table_wins_over_defaults_and_a_flag_over_both() {
    let text = "[defaults]\ntimeout = \"5s\"\nallow_private_addresses = true\n\
                [[component]]\npath = \"a.wasm\"\ntimeout = \"7s\"\nallow_private_addresses = false\n\
                [[component]]\npath = \"b.wasm\"\n";
    let settings = resolved(text, &[]).unwrap();
    let timeouts: Vec<_> = settings.components.iter().map(|c| c.limits.timeout).collect();
    assert_eq!(timeouts, [Duration::from_secs(7), Duration::from_secs(5)]);
    let settings = resolved(text, &["--timeout", "9s", "-c", "c.wasm"]).unwrap();
    let timeouts: Vec<_> = settings.components.iter().map(|c| c.limits.timeout).collect();
    assert_eq!(timeouts, [Duration::from_secs(9); 3]);
}

#[test]
fn server_settings_come_from_the_file_unless_a_flag_names_them() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tools.toml");
    std::fs::write(
        &path,
        "[server]\nwatch = true\nwatch_interval = \"250ms\"\nstate_key_file = \"keys/state.key\"\n",
    )
    .unwrap();
    let args = |extra: &[&str]| serve_args(&[], &path, extra);
    let server = resolve(&args(&[])).unwrap().server;
    assert!(server.watch);
    assert_eq!(server.watch_interval, Duration::from_millis(250));
    assert_eq!(server.state_key_file, Some(dir.path().join("keys/state.key")));
    let server = resolve(&args(&["--watch-interval", "2s", "--state-key-file", "/k"])).unwrap().server;
    assert_eq!(server.watch_interval, Duration::from_secs(2));
    assert_eq!(server.state_key_file, Some(PathBuf::from("/k")));
}

#[test]
fn server_auth_comes_from_the_file_and_flags_win_per_key() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tools.toml");
    let write = |text: &str| std::fs::write(&path, text).unwrap();
    let args = |extra: &[&str]| serve_args(&["--http", "127.0.0.1:0"], &path, extra);
    write(
        "[server.auth]\nissuer = \"https://login.example.com\"\nresource = \"https://mcp.example.com/mcp\"\n\
         scopes = [\"tools:call\"]\n",
    );
    let auth = resolve(&args(&[])).unwrap().server.auth.unwrap();
    assert_eq!(auth.issuer, "https://login.example.com");
    assert_eq!(auth.scopes, ["tools:call"]);
    let auth = resolve(&args(&["--auth-scopes", "a,b"])).unwrap().server.auth.unwrap();
    assert_eq!(auth.scopes, ["a", "b"]);
    write("[server.auth]\nissuer = \"https://login.example.com\"\n");
    let err = format!("{:#}", resolve(&args(&[])).unwrap_err());
    assert!(err.contains("--auth-resource"), "{err}");
    write("[server.auth]\nissuer = \"https://login.example.com\"\naudience = \"x\"\n");
    assert!(resolve(&args(&[])).is_err());
    write("");
    assert!(resolve(&args(&[])).unwrap().server.auth.is_none());
}

#[test]
fn where_and_how_it_serves_can_be_set_in_the_file_too() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tools.toml");
    std::fs::write(
        &path,
        "[server]\nhttp = \"127.0.0.1:8080\"\nhttp_allowed_hosts = [\"mcp.example.com\"]\n\
         http_allowed_origins = [\"https://app.example.com\"]\ncache_dir = \"cache\"\n\
         cache_max_size = \"64MiB\"\nno_cache = true\ninsecure_registries = [\"registry.lan:5000\"]\n\
         registry_timeout = \"20s\"\n",
    )
    .unwrap();
    let args = |extra: &[&str]| serve_args(&[], &path, extra);
    let settings = resolve(&args(&[])).unwrap();
    assert_eq!(settings.config_file.as_deref(), Some(path.as_path()));
    let server = settings.server;
    assert_eq!(server.http, Some("127.0.0.1:8080".parse().unwrap()));
    assert_eq!(server.http_allowed_hosts, ["mcp.example.com"]);
    assert_eq!(server.http_allowed_origins, ["https://app.example.com"]);
    assert_eq!(server.cache_dir, Some(dir.path().join("cache")));
    assert_eq!((server.cache_max_size, server.no_cache), (64 << 20, true));
    assert_eq!(server.insecure_registries, ["registry.lan:5000"]);
    assert_eq!(server.registry_timeout, Duration::from_secs(20));
    // A flag on the command line wins, a list as a whole.
    let server =
        resolve(&args(&["--http", "127.0.0.1:9", "--insecure-registry", "a:1", "--cache-dir", "/c"]))
            .unwrap()
            .server;
    assert_eq!(server.http, Some("127.0.0.1:9".parse().unwrap()));
    assert_eq!(server.insecure_registries, ["a:1"]);
    assert_eq!(server.cache_dir, Some(PathBuf::from("/c")));
}

/// The example in docs/config.md names only keys the file takes, each with
/// a value its flag accepts.
#[test]
fn the_documented_example_is_a_valid_file() {
    let guide = include_str!("../../../docs/config.md");
    let example = guide.split("```toml\n").nth(1).and_then(|rest| rest.split("```").next()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tools.toml");
    std::fs::write(&path, example).unwrap();
    let file = file::ConfigFile::read(&path).unwrap_or_else(|err| panic!("{err:#}"));
    assert_eq!(file.components.len(), 3);
}
