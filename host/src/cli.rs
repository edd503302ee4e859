//! The command line: what a user types to serve tools, and what `--help` teaches.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser};

use crate::approval::ApprovalRule;
use crate::limits::{parse_bytes, parse_duration};
use crate::sandbox::grants::{DirGrant, EnvGrant, HostGrant};

mod access;
mod call;
mod command;
pub mod heading;
mod offer;
pub use access::AccessArgs;
pub use call::CallArgs;
pub use command::Command;
pub use offer::OfferArgs;

/// Serve WebAssembly component tools to any MCP client, each call sandboxed.
///
/// Every tool call runs in a fresh, isolated instance with no files, network
/// or environment beyond what you grant here. A cancelled call always stops:
/// the tool is told, then stopped by force after --cancel-grace, then its
/// `cleanup` export runs.
///
/// Example MCP client config:
///   {"command": "mcp-wasm-host", "args": ["--component", "/path/tool.wasm", "--dir", "/tmp/work"]}
///
/// Logs go to stderr, as text or JSON (--log-format); set RUST_LOG (e.g.
/// RUST_LOG=mcp_wasm_host=debug).
#[derive(Debug, Parser)]
#[command(name = "mcp-wasm-host", version, max_term_width = 100)]
#[command(subcommand_negates_reqs = true, args_conflicts_with_subcommands = true)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,

    #[command(flatten)]
    pub serve: ServeArgs,

    /// How log lines on stderr are written.
    ///
    /// `json` is for programs reading them: one object per line, the
    /// event's message and fields under `fields`, e.g.
    /// {"timestamp":"…","level":"INFO","fields":{"message":"call
    /// ended","tool":"spin","outcome":"stopped","stop_reason":"client-cancelled",…},
    /// "target":"…","span":{"name":"tools/call","request":"3"}}. A tool's
    /// own output has target `tool`. Fatal errors stay plain text.
    #[arg(
        long,
        value_enum,
        value_name = "FORMAT",
        default_value_t = LogFormat::Text,
        global = true,
        help_heading = heading::OBSERVABILITY
    )]
    pub log_format: LogFormat,
}

/// How log lines on stderr are written (--log-format).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    /// For people: `LEVEL target: message key=value …`.
    #[default]
    Text,
    /// For programs: one JSON object per line.
    Json,
}

impl Cli {
    /// Parses `args` (the program name first), remembering which options
    /// were given on the command line, so they can win over `--config`.
    pub fn parse_args<I, T>(args: I) -> Result<Self, clap::Error>
    where
        I: IntoIterator<Item = T>,
        T: Into<std::ffi::OsString> + Clone,
    {
        use clap::{CommandFactory as _, FromArgMatches as _};
        let matches = Cli::command().try_get_matches_from(args)?;
        let mut cli = Cli::from_arg_matches(&matches)?;
        cli.serve.given = given_on_command_line(&matches);
        if let (Some(Command::Call(call)), Some((_, sub))) = (&mut cli.command, matches.subcommand()) {
            call.finish(sub)?;
        }
        Ok(cli)
    }
}

/// The names of the options given on the command line, by clap id.
fn given_on_command_line(matches: &clap::ArgMatches) -> std::collections::BTreeSet<String> {
    matches
        .ids()
        .filter(|id| matches.value_source(id.as_str()) == Some(clap::parser::ValueSource::CommandLine))
        .map(|id| id.to_string())
        .collect()
}

/// Options for serving tools over stdio.
#[derive(Debug, Args)]
pub struct ServeArgs {
    /// A tool component to serve: a .wasm file or oci://REF.
    ///
    /// A .wasm file, or a component in an OCI registry,
    /// oci://REGISTRY/REPOSITORY:TAG or oci://REGISTRY/REPOSITORY@sha256:DIGEST
    /// (pulled into the cache; a digest-pinned one starts from the cache
    /// without the registry; see docs/registries.md). Repeat to serve several; tool names must not clash.
    /// Required unless --config is given.
    #[arg(
        short,
        long = "component",
        value_name = "PATH|oci://REF",
        required_unless_present = "config",
        help_heading = heading::SERVING
    )]
    pub components: Vec<PathBuf>,

    /// A TOML file of components and their settings.
    ///
    /// A TOML file with components and their grants, limits and approval
    /// rules (see docs/config.md). A flag given on
    /// the command line overrides the file's setting for every component.
    #[arg(long, value_name = "FILE", help_heading = heading::SERVING)]
    pub config: Option<PathBuf>,

    /// The options given on the command line (clap ids), which win over --config.
    #[arg(skip)]
    pub given: std::collections::BTreeSet<String>,

    /// Let tools see a host directory.
    ///
    /// HOST, or HOST::GUEST (seen at GUEST in the sandbox), with `:ro`
    /// appended for read-only (lowercase, at the end); a guest path with
    /// any other `:` is refused. Repeatable. Each directory is opened once,
    /// at start; a grant inside a writable grant is refused. Default: no
    /// files.
    #[arg(long = "dir", value_name = "HOST[::GUEST][:ro]", help_heading = heading::GRANTS)]
    pub dirs: Vec<DirGrant>,

    /// Let tools see an environment variable.
    ///
    /// KEY=VALUE, or KEY to pass the host's value. Repeatable. Default: an
    /// empty environment.
    #[arg(long = "env", value_name = "KEY[=VALUE]", help_heading = heading::GRANTS)]
    pub env: Vec<EnvGrant>,

    /// Let tools see the variables in a file.
    ///
    /// KEY=VALUE lines (`#` comments, blank lines and an `export ` prefix
    /// allowed). For secrets: unlike --env KEY=VALUE, the values never
    /// appear in the process list. Repeatable; added to every component's
    /// environment.
    #[arg(long = "env-file", value_name = "FILE", help_heading = heading::GRANTS)]
    pub env_files: Vec<PathBuf>,

    /// Let tools send HTTP(S) requests to this host.
    ///
    /// Requests through wasi:http: HOST for any port, HOST:PORT for one
    /// port; IPv6 in brackets (`[::1]:8080`). Names match
    /// case-insensitively, with no implicit subdomains. Repeatable.
    /// Default: no network; other requests fail with `http-request-denied`,
    /// and a log line names the host. Raw sockets (TCP, UDP, name lookup)
    /// are never granted.
    #[arg(long = "allow-host", value_name = "HOST[:PORT]", help_heading = heading::GRANTS)]
    pub allow_hosts: Vec<HostGrant>,

    /// Let hosts granted by name resolve to private addresses.
    ///
    /// Let a host granted by name (--allow-host api.example.com) resolve to
    /// loopback, private (RFC 1918, fc00::/7), link-local (169.254/16, where
    /// cloud metadata services answer, and fe80::/10), shared-NAT
    /// (100.64/10), multicast, broadcast or unspecified addresses, and to
    /// their IPv4-mapped IPv6 forms. Default: such requests fail with
    /// `http-request-denied` and a log line naming the address, since
    /// whoever controls the name's DNS would choose where they go. A grant
    /// of the IP address itself (--allow-host 127.0.0.1:8080) needs no
    /// opt-in.
    #[arg(long, help_heading = heading::GRANTS)]
    pub allow_private_addresses: bool,

    /// Fuel per call (about one unit per wasm instruction).
    ///
    /// 0 = unmetered (epoch deadlines still apply). A call that runs out
    /// gets an isError result.
    #[arg(long, value_name = "N", default_value_t = 10_000_000_000, help_heading = heading::LIMITS)]
    pub fuel: u64,

    /// Wall-clock limit per call.
    ///
    /// E.g. 30s, 500ms. The call is cancelled, cleaned up, and answered
    /// with an isError result.
    #[arg(
        long,
        value_name = "DURATION",
        default_value = "60s",
        value_parser = parse_duration,
        help_heading = heading::LIMITS
    )]
    pub timeout: Duration,

    /// Memory per call.
    ///
    /// Every linear memory and table of the call together, and the
    /// wasi:http header fields the host holds for it (e.g. 256MiB).
    #[arg(
        long,
        value_name = "SIZE",
        default_value = "256MiB",
        value_parser = parse_bytes,
        help_heading = heading::LIMITS
    )]
    pub max_memory: usize,

    /// Memory of every call together.
    ///
    /// Their memories and tables, what the host holds for them, and what
    /// ended calls leave resident in the pool. A call that needs more while
    /// the rest hold it all gets an isError result naming this flag.
    /// Default: three quarters of the process's cgroup limit or, without
    /// one, of the machine's memory.
    #[arg(long, value_name = "SIZE", value_parser = parse_bytes, help_heading = heading::LIMITS)]
    pub max_total_memory: Option<usize>,

    /// Largest result a call may return, as the client receives it.
    ///
    /// Measured as its JSON: every field, media in base64. A larger one
    /// becomes an isError result naming the limit.
    #[arg(
        long,
        value_name = "SIZE",
        default_value = "16MiB",
        value_parser = parse_bytes,
        help_heading = heading::LIMITS
    )]
    pub max_output: usize,

    /// Content blocks a call's result may hold.
    ///
    /// More is an isError result naming the limit.
    #[arg(long, value_name = "N", default_value_t = 1024, help_heading = heading::LIMITS)]
    pub max_content_blocks: usize,

    /// Largest log record or progress message a tool may send.
    ///
    /// A log record is measured by its data. A longer one is cut, with a
    /// marker saying how much was cut (`…[cut N bytes]`); cut JSON data
    /// goes out as a string.
    #[arg(
        long,
        value_name = "SIZE",
        default_value = "16KiB",
        value_parser = parse_bytes,
        help_heading = heading::LIMITS
    )]
    pub max_log_record: usize,

    /// Largest question a tool may put to the user.
    ///
    /// An elicitation's message and schema, a URL elicitation's message and
    /// URL, or a sampling request. A larger one fails in the tool with
    /// `request-error::failed` naming this flag, without reaching the
    /// client.
    #[arg(
        long,
        value_name = "SIZE",
        default_value = "64KiB",
        value_parser = parse_bytes,
        help_heading = heading::LIMITS
    )]
    pub max_question: usize,

    /// Largest answer a tool may get from the client.
    ///
    /// An elicitation's result or a sampling result, as JSON. A larger one
    /// fails in the tool with `request-error::failed` naming this flag, as
    /// an accepted form that breaks its requested schema does; both are
    /// logged.
    #[arg(
        long,
        value_name = "SIZE",
        default_value = "1MiB",
        value_parser = parse_bytes,
        help_heading = heading::LIMITS
    )]
    pub max_answer: usize,

    /// Log records and progress one call may send to the client, in bytes.
    ///
    /// Past it they are dropped, and counted (`dropped_notes` in the `call
    /// ended` line). Those still queued when the call's --timeout runs out
    /// are dropped too.
    #[arg(
        long,
        value_name = "SIZE",
        default_value = "1MiB",
        value_parser = parse_bytes,
        help_heading = heading::LIMITS
    )]
    pub max_notification_bytes: usize,

    /// What one call may write to stdout and stderr together.
    ///
    /// It goes to the host's log line by line, tagged with the call (target
    /// `tool`, with `call_id` and `stream`; control characters escaped).
    /// The rest is discarded (the tool's writes still succeed) and one line
    /// says how much.
    #[arg(
        long,
        value_name = "SIZE",
        default_value = "64KiB",
        value_parser = parse_bytes,
        help_heading = heading::LIMITS
    )]
    pub max_guest_output: usize,

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

    /// Host handles one call may hold at once.
    ///
    /// Open files and directories, streams, pollables, HTTP requests and
    /// bodies. A call past it is stopped with an isError result naming the
    /// limit. When the open-file limit is low, this is lowered at start
    /// (with a warning) to a quarter of the descriptors left to calls.
    #[arg(long, value_name = "N", default_value_t = 4096, help_heading = heading::LIMITS)]
    pub max_handles: usize,

    /// How long a cancelled tool may take to stop by itself.
    ///
    /// After a cancel, the time a tool has to stop by itself before the
    /// host stops it (e.g. 100ms; 0 stops it at once).
    #[arg(
        long,
        value_name = "DURATION",
        default_value = "100ms",
        value_parser = parse_duration,
        help_heading = heading::LIMITS
    )]
    pub cancel_grace: Duration,

    /// Wall-clock limit for a component's `cleanup` export.
    #[arg(
        long,
        value_name = "DURATION",
        default_value = "500ms",
        value_parser = parse_duration,
        help_heading = heading::LIMITS
    )]
    pub cleanup_timeout: Duration,

    /// Fuel for a component's `cleanup` export.
    #[arg(long, value_name = "N", default_value_t = 100_000_000, help_heading = heading::LIMITS)]
    pub cleanup_fuel: u64,

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

    /// Ask the user before every call of this tool.
    ///
    /// A tool name, `destructive` (tools marked destructive) or `all`.
    /// Repeatable. By default a tool is asked about when its component says
    /// so, or when it is marked destructive and says nothing (see
    /// docs/approval.md).
    #[arg(long = "require-approval", value_name = "TOOL|destructive|all", help_heading = heading::APPROVAL)]
    pub require_approval: Vec<ApprovalRule>,

    /// Approve this tool up front.
    ///
    /// It runs without asking, and what it asks approval for mid-call is
    /// granted. A tool name, `destructive` or `all`; a rule naming a tool
    /// beats one about a class. Repeatable.
    #[arg(long = "no-approval", value_name = "TOOL|destructive|all", help_heading = heading::APPROVAL)]
    pub no_approval: Vec<ApprovalRule>,

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

    /// Who may call over --http, and the record of who did.
    #[command(flatten)]
    pub access: AccessArgs,

    /// Which tools the components offer, under which names, with which
    /// wasi:config values.
    #[command(flatten)]
    pub offer: OfferArgs,

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
    #[arg(long, value_name = "FILE", help_heading = heading::HTTP)]
    pub state_key_file: Option<PathBuf>,

    /// Where compiled components are cached.
    ///
    /// Compiled components are keyed by their content and the engine's
    /// settings; oci:// components are kept there by digest too (in
    /// DIR/oci, also with --no-cache). The directory is made 0700 and its
    /// artifacts 0600, and it is not used at all unless you own it and
    /// others cannot write to it. Each artifact carries a SHA-256 checksum
    /// that is verified before it is loaded; a damaged one is logged
    /// (`ignoring damaged cached artifact`, with its `path`), compiled
    /// again and rewritten.
    ///
    /// [default: $XDG_CACHE_HOME/mcp-wasm-host or ~/.cache/mcp-wasm-host]
    #[arg(long, value_name = "DIR", help_heading = heading::SERVING)]
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

    /// Load oci:// components only if their cosign signature verifies.
    ///
    /// The signature over their digest must verify with this public key
    /// (cosign.pub, from `cosign generate-key-pair`). An unsigned, wrongly
    /// signed or altered component is refused at start. See
    /// docs/registries.md.
    #[arg(long, value_name = "KEY.pub", help_heading = heading::REGISTRY)]
    pub require_signature: Option<PathBuf>,

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

    /// Export traces over OTLP/HTTP to this collector.
    ///
    /// OTLP over HTTP/protobuf, e.g. http://localhost:4318 (`/v1/traces` is
    /// added). Off by default; the standard OTEL_EXPORTER_OTLP_ENDPOINT and
    /// OTEL_* variables work too. See docs/tracing.md.
    #[arg(long, value_name = "URL", help_heading = heading::OBSERVABILITY)]
    pub otlp_endpoint: Option<String>,
}
