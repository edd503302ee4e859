//! The config file's parsing and merging, checked.

use super::*;
use crate::approval::ApprovalRule;

fn parse(text: &str) -> Result<ConfigFile, String> {
    toml::from_str(text).map_err(|err| located(&err, text))
}

/// The serving options of `mcp-wasm-host [lead...] --config CONFIG [extra...]`.
fn serve_args(lead: &[&str], config: &std::path::Path, extra: &[&str]) -> crate::cli::ServeArgs {
    let mut argv = vec!["mcp-wasm-host"];
    argv.extend_from_slice(lead);
    argv.extend_from_slice(&["--config", config.to_str().unwrap()]);
    argv.extend_from_slice(extra);
    crate::cli::Cli::parse_args(argv).unwrap().serve
}

#[test]
fn a_full_file_parses() {
    let file = parse(
        r#"
        [server]
        max_concurrent_calls = 8
        approval_timeout = "30s"
        max_sessions = 4
        http_header_timeout = "2s"

        [defaults]
        timeout = "5s"

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
        "#,
    )
    .unwrap();
    assert_eq!(file.server.max_concurrent_calls, Some(8));
    assert_eq!(file.server.max_sessions, Some(4));
    assert_eq!(file.server.http_header_timeout, Some(Duration::from_secs(2)));
    assert_eq!(file.defaults.timeout, Some(Duration::from_secs(5)));
    let entry = file.components[0].get_ref();
    assert_eq!(entry.max_memory, Some(64 << 20));
    assert_eq!((entry.max_log_record, entry.max_guest_output), (Some(4 << 10), Some(1 << 20)));
    assert!(entry.dirs.as_ref().unwrap()[0].read_only);
    assert_eq!(entry.allow_hosts.as_ref().unwrap().len(), 2);
    assert_eq!(entry.allow_private_addresses, Some(true));
    assert_eq!(entry.require_approval.as_ref().unwrap()[1], ApprovalRule::Tool("wipe".into()));
}

#[test]
fn mistakes_name_their_line() {
    let err = parse("[defaults]\ntimeout = \"5 parsecs\"\n").unwrap_err();
    assert!(err.starts_with("line 2"), "{err}");
    let err = parse("[[component]]\npath = \"a.wasm\"\nfule = 3\n").unwrap_err();
    assert!(err.starts_with("line 3") && err.contains("fule"), "{err}");
    let err = parse("[server\n").unwrap_err();
    assert!(err.starts_with("line 1"), "{err}");
    let err = parse("[[component]]\ndirs = [\"::x\"]\n").unwrap_err();
    assert!(err.starts_with("line 2"), "{err}");
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
