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
//! Every key is a flag's name (its clap id: `--max-sessions` is
//! `max_sessions`; `[server.auth]` drops the `auth_` of `--auth-*`), and
//! the file is read through the flags' own definitions (`file.rs`): one
//! definition a setting, in `flags.rs` or `server.rs`.
//!
//! Precedence, per setting: a flag given on the command line, then the
//! component's entry, then `[defaults]`, then the flag's default. A flag on
//! the command line replaces the setting for every component (a `--dir`
//! replaces every component's `dirs`). Components named with `--component`
//! get `[defaults]` too. Every mistake in the file — bad syntax, an unknown
//! key, a value that does not parse — is an error at start naming the line.

use std::path::PathBuf;

use anyhow::{Context as _, Result};

use crate::approval::ApprovalRules;
use crate::auth::ToolScopes;
use crate::limits::CallLimits;
use crate::sandbox::grants::{ConfigVar, EnvGrant, Grants};
use component::SecretFiles;
use file::ConfigFile;

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
    /// Which of its tools are served, under which names, with which hints
    /// (the user's selection; what a component offers is `component::Offers`).
    pub selection: Selection,
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
    let file = args.config.as_deref().map(ConfigFile::read).transpose()?;
    let serve_args = |entry| match &file {
        Some(file) => file.serve_args(entry, &args.given),
        None => Ok(args.clone()),
    };
    let merged = serve_args(None)?;
    let mut server = merged.server.clone();
    server.auth = auth::resolve(&merged.auth).with_context(|| match &args.config {
        Some(path) => format!("{}: [server.auth]", path.display()),
        None => "--auth-issuer".to_string(),
    })?;
    server.tls = tls::files(&server)?;
    if server.http.is_none()
        && !(server.http_allowed_hosts.is_empty() && server.http_allowed_origins.is_empty())
    {
        anyhow::bail!(
            "--http-allow-host and --http-allow-origin work only with --http (or `http` in [server])"
        );
    }
    tls::check_exposure(server.http, server.tls.as_ref(), server.behind_tls_proxy, server.auth.as_ref())?;

    // Named on the command line only: read once, added to every component's.
    let secrets = SecretFiles {
        env: (args.env_files.iter())
            .map(|path| EnvGrant::from_file(path))
            .collect::<Result<Vec<_>>>()?
            .concat(),
        config: (args.config_var_files.iter())
            .map(|path| ConfigVar::from_file(path))
            .collect::<Result<Vec<_>>>()?
            .concat(),
    };
    let tools_in_file = file.as_ref().is_some_and(ConfigFile::default_tools);
    let mut components = Vec::new();
    // Components named on the command line get `[defaults]` under it: the
    // merge already made for the server.
    for path in &args.components {
        components.push(component::settings(
            &merged.component,
            &args.given,
            &secrets,
            path.clone(),
            None,
            tools_in_file,
        ));
    }
    for entry in file.iter().flat_map(|file| &file.components) {
        let flags = serve_args(Some(entry))?.component;
        let path = entry.path.clone().expect("checked when read");
        let mut settings = component::settings(
            &flags,
            &args.given,
            &secrets,
            path,
            Some(entry.origin.clone()),
            tools_in_file || entry.names_tools,
        );
        // Only the component's own: tool names differ between components.
        settings.selection.hints = entry.hints.clone();
        components.push(settings);
    }
    auth::add_tool_scopes(server.auth.as_mut(), &components);
    Ok(Settings { config_file: args.config.clone(), server, components })
}

mod auth;
mod component;
mod file;
mod flags;
pub use flags::{AuthFlags, ComponentFlags, Given, ServeArgs};
pub mod heading;
mod keys;
pub use keys::{FileKey, file_key};
mod selection;
pub use selection::{Hints, Selection};
mod server;
pub use server::ServerSettings;
#[cfg(test)]
mod tests;
mod text;
mod tls;
pub use tls::TlsFiles;
