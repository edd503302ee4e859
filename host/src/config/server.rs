//! `[server]`: what is one per server — the engine, the call and
//! question limits of the whole process, HTTP, TLS, the audit trail,
//! reloading, the compile cache and registries. Each field is its own
//! flag and its own `[server]` key; start-up reads this struct as resolved
//! (command line over file over default) with the two settings derived
//! from other groups, [`ServerSettings::auth`] and [`ServerSettings::tls`].

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, ValueHint};

use super::TlsFiles;
use super::heading;
use crate::auth::AuthSettings;
use crate::limits::{parse_bytes, parse_duration};

/// What the whole server runs with.
#[derive(Clone, Debug, Args)]
pub struct ServerSettings {
    /// Memory of every call together.
    ///
    /// Their memories and tables, what the host holds for them, and what
    /// ended calls leave resident in the pool. A call that needs more while
    /// the rest hold it all gets an isError result naming this flag.
    /// Default: three quarters of the process's cgroup limit or, without
    /// one, of the machine's memory.
    #[arg(long, value_name = "SIZE", value_parser = parse_bytes, help_heading = heading::LIMITS)]
    pub max_total_memory: Option<usize>,

    /// Wasm stack per call.
    ///
    /// E.g. 512KiB.
    #[arg(
        long,
        value_name = "SIZE",
        default_value = "512KiB",
        value_parser = parse_bytes,
        help_heading = heading::LIMITS
    )]
    pub max_stack: usize,

    /// How long a question to the client may stay unanswered.
    ///
    /// A question is an elicitation or sampling request; unanswered in
    /// time, it is withdrawn and the tool is told it timed out. The call's
    /// own --timeout still applies.
    #[arg(
        long,
        value_name = "DURATION",
        default_value = "5m",
        value_parser = parse_duration,
        help_heading = heading::LIMITS
    )]
    pub elicitation_timeout: Duration,

    /// Questions one call may send to the client.
    ///
    /// Questions are elicitation and sampling requests; further ones fail
    /// without reaching the user.
    #[arg(long, value_name = "N", default_value_t = 20, help_heading = heading::LIMITS)]
    pub max_questions: u32,

    /// How long a call waits for the user's approval.
    ///
    /// No answer in time is a decline, the question is withdrawn and what
    /// the call held is released. Also bounds every call paused for an
    /// answer that comes in a later request (2026-07-28 sessions, tasks).
    #[arg(
        long,
        value_name = "DURATION",
        default_value = "2m",
        value_parser = parse_duration,
        help_heading = heading::APPROVAL
    )]
    pub approval_timeout: Duration,

    /// Calls that may wait for the user at once.
    ///
    /// Approvals and paused calls count; further ones are declined at once.
    #[arg(long, value_name = "N", default_value_t = 16, help_heading = heading::APPROVAL)]
    pub max_paused: u32,

    /// Calls that may run at once.
    ///
    /// Further calls wait for a free slot, and can be cancelled while they
    /// wait.
    #[arg(long, value_name = "N", default_value_t = 128, help_heading = heading::LIMITS)]
    pub max_concurrent_calls: u32,

    /// Serve Streamable HTTP at http://ADDR/mcp instead of stdio.
    ///
    /// E.g. 127.0.0.1:8080 (port 0 picks a free port, printed on stderr).
    #[arg(long, value_name = "ADDR", help_heading = heading::HTTP)]
    pub http: Option<std::net::SocketAddr>,

    /// With --http: also accept this inbound Host header.
    ///
    /// Loopback names are always accepted; anything else is refused against
    /// DNS rebinding. Repeatable. (--allow-host is for the tools' outgoing
    /// requests.)
    #[arg(long = "http-allow-host", value_name = "HOST[:PORT]", help_heading = heading::HTTP)]
    pub http_allowed_hosts: Vec<String>,

    /// With --http: also accept browser requests from this origin.
    ///
    /// E.g. `https://app.example.com:443` (loopback origins are always
    /// accepted). Repeatable.
    #[arg(long = "http-allow-origin", value_name = "ORIGIN", help_heading = heading::HTTP)]
    pub http_allowed_origins: Vec<String>,

    /// With --http: sessions that may exist at once.
    ///
    /// When all are taken, a new session closes the one idle the longest
    /// (no request being answered); if every session is answering a
    /// request, it gets 503 with a JSON-RPC error.
    #[arg(long, value_name = "N", default_value_t = 256, help_heading = heading::HTTP)]
    pub max_sessions: u32,

    /// With --http: close a session after this long without a request.
    ///
    /// The calls it still runs, as tasks or paused calls, stop and clean
    /// up.
    #[arg(
        long,
        value_name = "DURATION",
        default_value = "5m",
        value_parser = parse_duration,
        help_heading = heading::HTTP
    )]
    pub http_idle_timeout: Duration,

    /// With --http: how long a request's headers may take to arrive.
    ///
    /// Slower connections (and kept-alive ones idle this long) are closed.
    #[arg(
        long,
        value_name = "DURATION",
        default_value = "10s",
        value_parser = parse_duration,
        help_heading = heading::HTTP
    )]
    pub http_header_timeout: Duration,

    /// With --http: how long a request's body may take to arrive.
    ///
    /// Counted from its headers; a slower one is answered 408.
    #[arg(
        long,
        value_name = "DURATION",
        default_value = "30s",
        value_parser = parse_duration,
        help_heading = heading::HTTP
    )]
    pub http_body_timeout: Duration,

    /// With --http: connections open at once.
    ///
    /// One more is answered 503 and closed at once (it does not wait).
    #[arg(long, value_name = "N", default_value_t = 512, help_heading = heading::HTTP)]
    pub max_connections: u32,

    /// Memory that requests may hold at once, all together.
    ///
    /// Held from a request's first byte until its answer is written: an
    /// HTTP body is charged three times its size (the bytes, the parsed
    /// message, the call's arguments), a stdio frame twice, and each 96
    /// bytes for every JSON value in it, before it is parsed. Past it an
    /// HTTP request is answered 503 with Retry-After, a stdio frame -32000.
    #[arg(
        long,
        value_name = "SIZE",
        default_value = "512MiB",
        value_parser = parse_bytes,
        help_heading = heading::LIMITS
    )]
    pub max_request_memory: usize,

    /// With --http: how long calls in flight may take to finish on a stop.
    ///
    /// After SIGTERM or SIGINT, calls in flight may take this long to
    /// finish (new calls get 503 and /readyz fails meanwhile); then the
    /// rest are stopped and cleaned up. See docs/fleet.md.
    #[arg(
        long,
        value_name = "DURATION",
        default_value = "30s",
        value_parser = parse_duration,
        help_heading = heading::HTTP
    )]
    pub drain_timeout: Duration,

    /// Over stdio: how long to answer pending requests once stdin closes.
    ///
    /// Once stdin closes (the client will send nothing more), how long the
    /// requests already received may take to be answered, counted from
    /// when the components have loaded. Then the calls still running are
    /// stopped and cleaned up. A cancel or a signal stops a call at once,
    /// whatever this says. See docs/operating.md.
    #[arg(
        long,
        value_name = "DURATION",
        default_value = "5s",
        value_parser = parse_duration,
        help_heading = heading::SERVING
    )]
    pub eof_drain: Duration,

    /// Keys that seal a paused call's state, so any replica can resume it.
    ///
    /// On protocol 2026-07-28: seal a paused call's state into its
    /// `requestState` with the keys in FILE (one secret of 32+ bytes per
    /// line; the first seals, all open), so the follow-up can land on any
    /// replica holding the same file; the call runs again there, its
    /// questions answered from the state. Without it, paused calls stay
    /// parked in this process.
    #[arg(value_hint = ValueHint::FilePath, long, value_name = "FILE", help_heading = heading::HTTP)]
    pub state_key_file: Option<PathBuf>,

    /// A Redis server that keeps tasks for every replica.
    ///
    /// With --http: tasks of protocol 2026-07-28 clients (the tasks
    /// extension) are kept in the Redis server at URL (`redis://` or
    /// `rediss://` for TLS; `redis://user:password@host:6379/0` with an ACL
    /// user), so any replica sharing it answers `tasks/get`, `tasks/update`
    /// and `tasks/cancel`, and a replica that stops leaves its tasks
    /// `failed`. The call itself runs where it started. Without it, tasks
    /// stay in the process that runs them. See docs/fleet.md. A password
    /// in URL shows in the process list: set it in the config file or
    /// `MCP_WASM_HOST_TASK_STORE` instead.
    #[arg(long, value_name = "URL", env = "MCP_WASM_HOST_TASK_STORE", hide_env_values = true, help_heading = heading::HTTP)]
    pub task_store: Option<String>,

    /// Where compiled components are cached.
    ///
    /// Compiled components are keyed by their content and the engine's
    /// settings; oci:// components are kept there by digest too (in
    /// DIR/oci, also with --no-cache). The directory is made 0700 and its
    /// artifacts 0600, and it is not used at all unless you own it and
    /// others cannot write to it. Each artifact carries an XXH3-128 checksum
    /// that is verified before it is loaded; a damaged one is logged
    /// (`ignoring damaged cached artifact`, with its `path`), compiled
    /// again and rewritten.
    ///
    /// [default: $XDG_CACHE_HOME/mcp-wasm-host or ~/.cache/mcp-wasm-host]
    #[arg(value_hint = ValueHint::DirPath, long, value_name = "DIR", help_heading = heading::SERVING)]
    pub cache_dir: Option<PathBuf>,

    /// Compiled components the cache keeps, in all.
    ///
    /// When a new one is written, the least recently used (loaded or
    /// written longest ago) are removed until the rest fit; the one just
    /// written always stays. The log line `compile cache pruned` says so
    /// (`removed`, `freed_bytes`). DIR/oci is not counted or touched. A
    /// half-written artifact is removed when the write fails (a full disk),
    /// and one left by a host that died writing is removed after an hour.
    /// The default holds a few dozen CPython-sized artifacts (~43 MB each).
    #[arg(
        long,
        value_name = "SIZE",
        default_value = "2GiB",
        value_parser = parse_bytes,
        help_heading = heading::SERVING
    )]
    pub cache_max_size: usize,

    /// Compile components on every start instead of caching them.
    ///
    /// oci:// components are still kept by digest in the cache directory
    /// (DIR/oci).
    #[arg(long, help_heading = heading::SERVING)]
    pub no_cache: bool,

    /// Compile with the optimizing compiler before serving.
    ///
    /// Compile a component that is not in the compile cache with the
    /// optimizing compiler (Cranelift) before serving it. By default it is
    /// served at once from baseline code (Winch: compiled in a fraction of
    /// the time, runs slower) while optimized code compiles in the
    /// background and replaces it for later calls; calls in flight finish
    /// on the baseline code, and only optimized code is cached. Every
    /// limit and stop applies to baseline code alike. The log lines
    /// `compiled with the baseline compiler` and `optimized code replaced
    /// the baseline code` (with `compile_ms`) say when each serves; the
    /// `call ended` line has `tier`. Config key: `no_tiering` under
    /// `[server]`.
    #[arg(long, help_heading = heading::SERVING)]
    pub no_tiering: bool,

    /// Speak plain HTTP to this registry.
    ///
    /// HOST[:PORT], although it is not on loopback. Repeatable. Loopback
    /// registries always get plain HTTP; every other registry gets HTTPS.
    #[arg(long = "insecure-registry", value_name = "HOST[:PORT]", help_heading = heading::REGISTRY)]
    pub insecure_registries: Vec<String>,

    /// The longest one pull from a registry may take.
    ///
    /// All of it: the token, the manifest, the signatures and the
    /// component. A registry that sends its bytes too slowly is given up
    /// on after this, which stops the start (with --watch: the reload is
    /// refused). Every registry body is read under a bound; progress is
    /// logged every 5 s (`still pulling`).
    #[arg(
        long,
        value_name = "DURATION",
        default_value = "5m",
        value_parser = parse_duration,
        help_heading = heading::REGISTRY
    )]
    pub registry_timeout: Duration,

    /// Largest component pulled from a registry.
    ///
    /// A component layer that declares more is refused before any byte of
    /// it is read; a pulled component is held in memory until it is stored.
    /// A CPython component is about 18 MB.
    #[arg(
        long,
        value_name = "SIZE",
        default_value = "128MiB",
        value_parser = parse_bytes,
        help_heading = heading::REGISTRY
    )]
    pub max_component_size: usize,

    /// Load a new version of a component without a restart.
    ///
    /// A file when it changes, an oci:// tag when it moves. The new version
    /// is loaded and checked beside the old one, then swapped in for new
    /// calls; calls in flight finish on the old one, and clients get
    /// notifications/tools/list_changed. A version that fails to load,
    /// breaks the contract or clashes on tool names is refused (logged),
    /// and the old one keeps serving. See docs/reloading.md.
    #[arg(long, help_heading = heading::SERVING)]
    pub watch: bool,

    /// With --watch: how often component files are checked for changes.
    #[arg(
        long,
        value_name = "DURATION",
        default_value = "1s",
        value_parser = parse_duration,
        help_heading = heading::SERVING
    )]
    pub watch_interval: Duration,

    /// With --watch: how often oci:// tags are resolved.
    ///
    /// How often the registry is asked where an oci:// tag points.
    #[arg(
        long,
        value_name = "DURATION",
        default_value = "5m",
        value_parser = parse_duration,
        help_heading = heading::SERVING
    )]
    pub watch_tag_interval: Duration,

    /// With --http: serve HTTPS with this certificate chain (PEM).
    ///
    /// HTTP/1.1. Reloaded when the file changes; a bad new pair is logged
    /// and the old one kept. Needs --tls-key.
    #[arg(value_hint = ValueHint::FilePath, long, value_name = "FILE", help_heading = heading::HTTP)]
    pub tls_cert: Option<PathBuf>,

    /// With --tls-cert: its private key (PEM).
    ///
    /// Reloaded when the file changes; a bad new pair is logged and the old
    /// one kept.
    #[arg(value_hint = ValueHint::FilePath, long, value_name = "FILE", help_heading = heading::HTTP)]
    pub tls_key: Option<PathBuf>,

    /// With --http: TLS is terminated in front of the host.
    ///
    /// By an ingress, a proxy, a mesh. Without it or --tls-cert,
    /// --auth-issuer is refused on an address beyond loopback (tokens would
    /// travel in clear), and so is a plain http:// --auth-resource beyond
    /// loopback.
    #[arg(long, help_heading = heading::HTTP)]
    pub behind_tls_proxy: bool,

    /// Append an audit trail to FILE, one JSON line per event.
    ///
    /// One line per tool call (who, which tool, a SHA-256 of its arguments,
    /// how it ended, the approval verdict, how long it took) and per
    /// lifecycle event (start, reload, drain, stop). Never a token or an
    /// argument's value. Opened append-only, created 0600; reopened when
    /// renamed (logrotate). In a config file: `audit_log` in `[server]`.
    /// See docs/audit.md.
    #[arg(value_hint = ValueHint::FilePath, long, value_name = "FILE", help_heading = heading::OBSERVABILITY)]
    pub audit_log: Option<PathBuf>,

    /// With `--http`: the token every request needs, from [`super::AuthFlags`]
    /// (`--auth-issuer` or `[server.auth]`); `None` without an issuer.
    #[arg(skip)]
    pub auth: Option<AuthSettings>,

    /// With `--http`: serve HTTPS with these files (`--tls-cert`, `--tls-key`).
    #[arg(skip)]
    pub tls: Option<TlsFiles>,
}
