//! `--config tools.toml`: per-component grants, limits and approval rules in
//! one file, so an MCP client's config stays one line
//! (`mcp-wasm-host --config tools.toml`).
//!
//! ```toml
//! [server]                      # settings for the whole server
//! max_concurrent_calls = 32
//! max_total_memory = "8GiB"     # memory of all calls together (default: fitted to the machine)
//! approval_timeout = "1m"
//! max_sessions = 64             # with --http; also http_idle_timeout, http_header_timeout,
//!                               # http_body_timeout, max_connections, max_request_memory, drain_timeout
//! state_key_file = "state.key"  # relative to this file; see --state-key-file
//! audit_log = "audit.jsonl"     # relative to this file; see --audit-log
//! watch = true                  # as --watch; also watch_interval, watch_tag_interval
//! no_tiering = true             # as --no-tiering
//! eof_drain = "5s"              # over stdio: answering what was received once stdin closes
//! tls_cert = "cert.pem"         # with --http: HTTPS, as --tls-cert, --tls-key (relative to this
//! tls_key = "key.pem"           # file); or behind_tls_proxy = true, as --behind-tls-proxy
//! http = "127.0.0.1:8080"       # as --http; also http_allowed_hosts, http_allowed_origins
//! cache_dir = "cache"           # relative to this file; also cache_max_size, no_cache
//! insecure_registries = ["registry.local:5000"]   # also registry_timeout
//!
//! [server.auth]                 # with --http: as --auth-issuer, --auth-resource, --auth-scopes
//! issuer = "https://login.example.com/realms/tools"
//! resource = "https://mcp.example.com/mcp"
//! scopes = ["tools:call"]      # advertised besides the tools' own
//! max_calls_per_principal = 32  # as --max-calls-per-principal
//! max_paused_per_principal = 4  # as --max-paused-per-principal
//! client_id = "mcp-host"        # opaque tokens, by introspection: as --auth-client-id,
//! client_secret_file = "secret" # --auth-client-secret-file (relative), --auth-introspection-url
//!
//! [defaults]                    # every component, unless it says otherwise
//! timeout = "30s"
//! max_memory = "128MiB"
//!
//! [[component]]
//! path = "tools/files.wasm"     # relative to this file
//! dirs = ["/srv/data::/data:ro"]
//! env = ["LANG=C"]
//! allow_hosts = ["api.example.com:443"]   # outgoing HTTP, as --allow-host
//! allow_private_addresses = false         # as --allow-private-addresses
//! require_approval = ["destructive"]
//! required_scopes = ["files"]             # with --auth-issuer: every tool needs these
//! tool_scopes = { delete_file = ["files:write"] }   # and this tool this too
//!
//! [[component]]
//! path = "tools/search.wasm"
//! fuel = 0
//!
//! [[component]]
//! oci = "oci://ghcr.io/me/fetch:1.2"        # from a registry, instead of `path`
//! require_signature = "keys/cosign.pub"     # refused unless signed with this key
//! ```
//!
//! Precedence, per setting: a flag given on the command line, then the
//! component's entry, then `[defaults]`, then the flag's default. A flag on
//! the command line replaces the setting for every component (a `--dir`
//! replaces every component's `dirs`). Components named with `--component`
//! get `[defaults]` too. Every mistake in the file — bad syntax, an unknown
//! key, a value that does not parse — is an error at start naming the line.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context as _, Result, anyhow};
use serde::Deserialize;

use crate::approval::ApprovalRules;
use crate::auth::{AuthSettings, ToolScopes};
use crate::cli::ServeArgs;
use crate::limits::CallLimits;
use crate::sandbox::grants::{ConfigVar, EnvGrant, Grants};
use component::{ComponentTable, SecretFiles, component};
use text::{line_of, located};

/// The file as written.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct ConfigFile {
    #[serde(default)]
    server: ServerTable,
    #[serde(default)]
    defaults: ComponentTable,
    #[serde(default, rename = "component")]
    components: Vec<toml::Spanned<ComponentTable>>,
}

/// `[server]`: settings that are one per server.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct ServerTable {
    #[serde(default, deserialize_with = "text::bytes")]
    max_stack: Option<usize>,
    #[serde(default, deserialize_with = "text::bytes")]
    max_total_memory: Option<usize>,
    max_concurrent_calls: Option<u32>,
    #[serde(default, deserialize_with = "text::duration")]
    approval_timeout: Option<Duration>,
    max_paused: Option<u32>,
    #[serde(default, deserialize_with = "text::duration")]
    elicitation_timeout: Option<Duration>,
    max_questions: Option<u32>,
    max_sessions: Option<u32>,
    #[serde(default, deserialize_with = "text::duration")]
    http_idle_timeout: Option<Duration>,
    #[serde(default, deserialize_with = "text::duration")]
    http_header_timeout: Option<Duration>,
    #[serde(default, deserialize_with = "text::duration")]
    http_body_timeout: Option<Duration>,
    max_connections: Option<u32>,
    #[serde(default, deserialize_with = "text::bytes")]
    max_request_memory: Option<usize>,
    #[serde(default, deserialize_with = "text::duration")]
    drain_timeout: Option<Duration>,
    #[serde(default, deserialize_with = "text::duration")]
    eof_drain: Option<Duration>,
    state_key_file: Option<PathBuf>,
    audit_log: Option<PathBuf>,
    watch: Option<bool>,
    no_tiering: Option<bool>,
    #[serde(default, deserialize_with = "text::duration")]
    watch_interval: Option<Duration>,
    #[serde(default, deserialize_with = "text::duration")]
    watch_tag_interval: Option<Duration>,
    auth: Option<auth::AuthTable>,
    tls_cert: Option<PathBuf>,
    tls_key: Option<PathBuf>,
    behind_tls_proxy: Option<bool>,
    http: Option<std::net::SocketAddr>,
    http_allowed_hosts: Option<Vec<String>>,
    http_allowed_origins: Option<Vec<String>>,
    cache_dir: Option<PathBuf>,
    #[serde(default, deserialize_with = "text::bytes")]
    cache_max_size: Option<usize>,
    no_cache: Option<bool>,
    insecure_registries: Option<Vec<String>>,
    #[serde(default, deserialize_with = "text::duration")]
    registry_timeout: Option<Duration>,
}

/// What the whole server runs with.
#[derive(Clone, Debug)]
pub struct ServerSettings {
    /// Wasm stack per call (engine-wide).
    pub max_stack: usize,
    /// Memory of every call together (`--max-total-memory`); `None`: the
    /// default fitted to the machine.
    pub max_total_memory: Option<usize>,
    /// Calls running at once.
    pub max_concurrent_calls: u32,
    /// How long a call waits for approval; the longest pause.
    pub approval_timeout: Duration,
    /// Calls that may wait for the user at once.
    pub max_paused: u32,
    /// How long a question to the client may wait.
    pub elicitation_timeout: Duration,
    /// Questions one call may ask.
    pub max_questions: u32,
    /// With `--http`: sessions at once.
    pub max_sessions: u32,
    /// With `--http`: how long a session may stay idle.
    pub http_idle_timeout: Duration,
    /// With `--http`: how long a request's headers may take.
    pub http_header_timeout: Duration,
    /// With `--http`: how long a request's body may take.
    pub http_body_timeout: Duration,
    /// With `--http`: connections at once.
    pub max_connections: u32,
    /// With `--http`: bytes request bodies may hold at once.
    pub max_request_memory: usize,
    /// With `--http`: how long calls in flight may take to finish after a signal.
    pub drain_timeout: Duration,
    /// Over stdio: how long requests received before stdin closed may take.
    pub eof_drain: Duration,
    /// The keys that seal paused calls' state, so any replica can continue them.
    pub state_key_file: Option<PathBuf>,
    /// Reload components when they change (`--watch`).
    pub watch: bool,
    /// With `watch`: between two checks of the component files.
    pub watch_interval: Duration,
    /// With `watch`: between two resolutions of each `oci://` tag.
    pub watch_tag_interval: Duration,
    /// Compile cold components with the optimizing compiler before serving
    /// them, instead of serving baseline code first (`--no-tiering`).
    pub no_tiering: bool,
    /// With `--http`: the token every request needs (`--auth-issuer`).
    pub auth: Option<AuthSettings>,
    /// With `--http`: serve HTTPS with these files (`--tls-cert`, `--tls-key`).
    pub tls: Option<TlsFiles>,
    /// Where the audit trail is appended (`--audit-log`).
    pub audit_log: Option<PathBuf>,
    /// Serve Streamable HTTP here instead of stdio (`--http`).
    pub http: Option<std::net::SocketAddr>,
    /// With `http`: inbound Host values accepted besides loopback names.
    pub http_allowed_hosts: Vec<String>,
    /// With `http`: browser origins accepted besides loopback ones.
    pub http_allowed_origins: Vec<String>,
    /// Where compiled components are cached (`--cache-dir`); `None`: the
    /// default directory.
    pub cache_dir: Option<PathBuf>,
    /// What the compile cache keeps in all (`--cache-max-size`).
    pub cache_max_size: usize,
    /// Compile on every start (`--no-cache`).
    pub no_cache: bool,
    /// Registries spoken to in plain HTTP beyond loopback (`--insecure-registry`).
    pub insecure_registries: Vec<String>,
    /// The longest one pull may take (`--registry-timeout`).
    pub registry_timeout: Duration,
}

/// What one component runs with.
#[derive(Clone, Debug)]
pub struct ComponentSettings {
    /// The component file (for an `oci://` component, its file in the
    /// store once pulled).
    pub path: PathBuf,
    /// The `oci://` reference it is pulled from, if it comes from a registry.
    pub oci: Option<String>,
    /// The cosign public key its signature must verify with.
    pub signature_key: Option<PathBuf>,
    /// Where it was configured, for messages (`tools.toml line 12`), if in a file.
    pub origin: Option<String>,
    /// Its grants.
    pub grants: Grants,
    /// Its per-call limits.
    pub limits: CallLimits,
    /// Its approval rules.
    pub approvals: ApprovalRules,
    /// The scopes its tools need (with `--auth-issuer`).
    pub scopes: ToolScopes,
    /// Which of its tools are served, under which names, with which hints.
    pub offer: Offer,
}

/// The command line and the config file, merged: what start-up reads,
/// instead of the command line.
#[derive(Clone, Debug)]
pub struct Settings {
    /// The `--config` file, if any (nothing a tool may write can be it).
    pub config_file: Option<PathBuf>,
    /// Server-wide settings.
    pub server: ServerSettings,
    /// One entry per component, command-line components first.
    pub components: Vec<ComponentSettings>,
}

/// Merges `args` with the file it names (if any).
pub fn resolve(args: &ServeArgs) -> Result<Settings> {
    let (file, text, base, name) = match &args.config {
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("cannot read --config {}", path.display()))?;
            let file: ConfigFile = toml::from_str(&text)
                .map_err(|err| anyhow!("{}: {}", path.display(), located(&err, &text)))?;
            let base = path.parent().map(Path::to_path_buf).unwrap_or_default();
            (file, text, base, path.display().to_string())
        }
        None => (ConfigFile::default(), String::new(), PathBuf::new(), String::new()),
    };
    let given = |id: &str| args.given.contains(id);
    // Command-line ids, `ServeArgs` fields and table keys share their names.
    let s = &file.server;
    macro_rules! pick {
        ($field:ident) => {
            if given(stringify!($field)) { args.$field } else { s.$field.unwrap_or(args.$field) }
        };
    }
    // The same for what is not `Copy`: lists and paths (relative to the file).
    macro_rules! pick_list {
        ($field:ident) => {
            if given(stringify!($field)) {
                args.$field.clone()
            } else {
                s.$field.clone().unwrap_or_else(|| args.$field.clone())
            }
        };
    }
    let pick_path = |id: &str, arg: &Option<PathBuf>, key: &Option<PathBuf>| -> Option<PathBuf> {
        if given(id) { arg.clone() } else { key.as_ref().map(|path| base.join(path)).or_else(|| arg.clone()) }
    };
    let server = ServerSettings {
        max_stack: pick!(max_stack),
        max_total_memory: if given("max_total_memory") {
            args.max_total_memory
        } else {
            s.max_total_memory.or(args.max_total_memory)
        },
        max_concurrent_calls: pick!(max_concurrent_calls),
        approval_timeout: pick!(approval_timeout),
        max_paused: pick!(max_paused),
        elicitation_timeout: pick!(elicitation_timeout),
        max_questions: pick!(max_questions),
        max_sessions: pick!(max_sessions),
        http_idle_timeout: pick!(http_idle_timeout),
        http_header_timeout: pick!(http_header_timeout),
        http_body_timeout: pick!(http_body_timeout),
        max_connections: pick!(max_connections),
        max_request_memory: pick!(max_request_memory),
        drain_timeout: pick!(drain_timeout),
        eof_drain: pick!(eof_drain),
        watch: pick!(watch),
        watch_interval: pick!(watch_interval),
        watch_tag_interval: pick!(watch_tag_interval),
        no_tiering: pick!(no_tiering),
        state_key_file: pick_path("state_key_file", &args.state_key_file, &s.state_key_file),
        audit_log: pick_path("audit_log", &args.access.audit_log, &s.audit_log),
        http: if given("http") { args.http } else { s.http.or(args.http) },
        http_allowed_hosts: pick_list!(http_allowed_hosts),
        http_allowed_origins: pick_list!(http_allowed_origins),
        cache_dir: pick_path("cache_dir", &args.cache_dir, &s.cache_dir),
        cache_max_size: pick!(cache_max_size),
        no_cache: pick!(no_cache),
        insecure_registries: pick_list!(insecure_registries),
        registry_timeout: pick!(registry_timeout),
        auth: auth::resolve(args, s.auth.as_ref(), &given, &base).with_context(|| match &args.config {
            Some(path) => format!("{}: [server.auth]", path.display()),
            None => "--auth-issuer".to_string(),
        })?,
        tls: tls::files(args, s.tls_cert.as_ref(), s.tls_key.as_ref(), &base)?,
    };
    if server.http.is_none()
        && !(server.http_allowed_hosts.is_empty() && server.http_allowed_origins.is_empty())
    {
        anyhow::bail!(
            "--http-allow-host and --http-allow-origin work only with --http (or `http` in [server])"
        );
    }
    let behind_tls_proxy = args.access.behind_tls_proxy || s.behind_tls_proxy.unwrap_or(false);
    tls::check_exposure(server.http, server.tls.as_ref(), behind_tls_proxy, server.auth.as_ref())?;

    let secrets = SecretFiles {
        env: args
            .env_files
            .iter()
            .map(|path| EnvGrant::from_file(path))
            .collect::<Result<Vec<_>>>()?
            .concat(),
        config: (args.offer.config_var_files.iter())
            .map(|path| ConfigVar::from_file(path))
            .collect::<Result<Vec<_>>>()?
            .concat(),
    };
    if file.defaults.path.is_some() || file.defaults.oci.is_some() {
        anyhow::bail!(
            "{name}: [defaults] cannot name a `path` or `oci`; put each component in a [[component]] table"
        );
    }
    let mut components: Vec<ComponentSettings> = args
        .components
        .iter()
        .map(|path| {
            component(
                args,
                &secrets,
                &given,
                path.clone(),
                None,
                &ComponentTable::default(),
                &file.defaults,
                &base,
            )
        })
        .collect();
    for entry in &file.components {
        let line = line_of(&text, entry.span().start);
        let origin = format!("{name} line {line}");
        let table = entry.get_ref();
        let path = match (&table.path, &table.oci) {
            (Some(path), None) => base.join(path),
            (None, Some(reference)) => PathBuf::from(reference),
            (Some(_), Some(_)) => anyhow::bail!("{origin}: this [[component]] has both `path` and `oci`"),
            (None, None) => anyhow::bail!("{origin}: this [[component]] has no `path` (or `oci`)"),
        };
        components.push(component(args, &secrets, &given, path, Some(origin), table, &file.defaults, &base));
    }
    let mut server = server;
    auth::add_tool_scopes(server.auth.as_mut(), &components);
    Ok(Settings { config_file: args.config.clone(), server, components })
}

mod auth;
mod component;
mod keys;
pub use keys::{FileKey, file_key};
mod offer;
pub use offer::{Hints, Offer};
#[cfg(test)]
mod tests;
mod text;
mod tls;
pub use tls::TlsFiles;
