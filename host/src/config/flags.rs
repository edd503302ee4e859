//! Every serving option, defined once: its flag, default, help text and
//! heading here (and in [`ServerSettings`] for what is one per server),
//! its config-file key by the same name (`config/file.rs` reads the file
//! through these very definitions), and its line in `docs/cli.md`
//! (generated from them).
//!
//! An option belongs to one group, and the group says where the file sets
//! it: [`ServerSettings`] in `[server]`, [`AuthFlags`] in `[server.auth]`
//! (without the `auth_` prefix), [`ComponentFlags`] in `[defaults]` and
//! each `[[component]]`. The few [`ServeArgs`] holds itself are not in the
//! file, each for a reason `config/keys.rs` states.
//!
//! A flag whose value is a path carries a path `value_hint`: shells
//! complete it, and the file's value is taken relative to the file.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::PathBuf;

use clap::{Args, ValueHint};

use super::ServerSettings;
use super::heading;
use crate::approval::ApprovalRule;
use crate::auth::ToolScope;
use crate::limits::CallLimits;
use crate::sandbox::grants::{ConfigVar, DirGrant, EnvGrant, HostGrant};

/// The options given on the command line: each clap id with its values as
/// typed, so the file can be read beneath them through the same parser.
pub type Given = BTreeMap<String, Vec<OsString>>;

/// Options for serving tools.
#[derive(Clone, Debug, Args)]
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
    #[arg(value_hint = ValueHint::FilePath, long, value_name = "FILE", help_heading = heading::SERVING)]
    pub config: Option<PathBuf>,

    /// The options given on the command line, by clap id, with their
    /// values as typed: they win over --config.
    #[arg(skip)]
    pub given: Given,

    /// What each component runs with.
    #[command(flatten)]
    pub component: ComponentFlags,

    /// What the server runs with.
    #[command(flatten)]
    pub server: ServerSettings,

    /// Who may call over HTTP.
    #[command(flatten)]
    pub auth: AuthFlags,

    /// Let tools see the variables in a file.
    ///
    /// KEY=VALUE lines (`#` comments, blank lines and an `export ` prefix
    /// allowed). For secrets: unlike --env KEY=VALUE, the values never
    /// appear in the process list. Repeatable; added to every component's
    /// environment.
    #[arg(value_hint = ValueHint::FilePath, long = "env-file", value_name = "FILE", help_heading = heading::GRANTS)]
    pub env_files: Vec<PathBuf>,

    /// The wasi:config values in this file.
    ///
    /// KEY=VALUE lines (`#` comments, blank lines and an `export ` prefix
    /// allowed). For API keys: unlike --config-var, the values never appear
    /// in the process list. Repeatable; added to every component's values.
    #[arg(value_hint = ValueHint::FilePath, long = "config-var-file", value_name = "FILE", help_heading = heading::GRANTS)]
    pub config_var_files: Vec<PathBuf>,

    /// Export traces over OTLP/HTTP to this collector.
    ///
    /// OTLP over HTTP/protobuf, e.g. http://localhost:4318 (`/v1/traces` is
    /// added). Off by default; the standard OTEL_EXPORTER_OTLP_ENDPOINT and
    /// OTEL_* variables work too. See docs/tracing.md.
    #[arg(long, value_name = "URL", help_heading = heading::OBSERVABILITY)]
    pub otlp_endpoint: Option<String>,
}

/// What one component runs with: its grants, limits, approval rules,
/// scopes and tool selection. Set in `[defaults]` and each
/// `[[component]]`; a flag given on the command line sets it for all.
#[derive(Clone, Debug, Args)]
pub struct ComponentFlags {
    /// Let tools see a host directory.
    ///
    /// HOST, or HOST::GUEST (seen at GUEST in the sandbox), with `:ro`
    /// appended for read-only (lowercase, at the end); a guest path with
    /// any other `:` is refused. Repeatable. Each directory is opened once,
    /// at start; a grant inside a writable grant is refused. Default: no
    /// files.
    #[arg(value_hint = ValueHint::DirPath, long = "dir", value_name = "HOST[::GUEST][:ro]", help_heading = heading::GRANTS)]
    pub dirs: Vec<DirGrant>,

    /// Let tools see an environment variable.
    ///
    /// KEY=VALUE, or KEY to pass the host's value. Repeatable. Default: an
    /// empty environment.
    #[arg(long = "env", value_name = "KEY[=VALUE]", help_heading = heading::GRANTS)]
    pub env: Vec<EnvGrant>,

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

    /// How far each call may go.
    #[command(flatten)]
    pub limits: CallLimits,

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

    /// Load oci:// components only if their cosign signature verifies.
    ///
    /// The signature over their digest must verify with this public key
    /// (cosign.pub, from `cosign generate-key-pair`). An unsigned, wrongly
    /// signed or altered component is refused at start. See
    /// docs/registries.md.
    #[arg(value_hint = ValueHint::FilePath, long, value_name = "KEY.pub", help_heading = heading::REGISTRY)]
    pub require_signature: Option<PathBuf>,

    /// With --auth-issuer: scopes every tool of the --component files needs.
    ///
    /// A `[[component]]` says its own with `required_scopes`. A caller
    /// whose token lacks one does not see the tool in tools/list, and its
    /// call is answered 403 insufficient_scope naming the scopes to step up
    /// to. Comma-separated or repeated.
    #[arg(long, value_name = "SCOPE", value_delimiter = ',', help_heading = heading::AUTHORIZATION)]
    pub required_scopes: Vec<String>,

    /// With --auth-issuer: one more scope one tool needs.
    ///
    /// E.g. `delete_file=files:write`. Repeatable (a `[[component]]` says
    /// its own with `tool_scopes = { delete_file = ["files:write"] }`).
    #[arg(long = "tool-scope", value_name = "TOOL=SCOPE", help_heading = heading::AUTHORIZATION)]
    pub tool_scopes: Vec<ToolScope>,

    /// Serve only these tools of the --component files.
    ///
    /// By the names the components give them (before --prefix); any other
    /// is not listed and cannot be called. A name no component offers
    /// stops the start. Comma-separated or repeated. Default: every tool.
    #[arg(long, value_name = "TOOL", value_delimiter = ',', help_heading = heading::SERVING)]
    pub tools: Vec<String>,

    /// Put PREFIX before the name of every tool of the --component files.
    ///
    /// `gh_` serves `search` as `gh_search`, so components whose tool names
    /// clash can be served side by side. Approval rules and scopes name
    /// tools with their prefix.
    #[arg(long, value_name = "PREFIX", help_heading = heading::SERVING)]
    pub prefix: Option<String>,

    /// A value for components that read settings through wasi:config/store.
    ///
    /// KEY=VALUE. Components written for other hosts do read them (see
    /// docs/plain-components.md). Repeatable. Default: no values.
    #[arg(long = "config-var", value_name = "KEY=VALUE", help_heading = heading::GRANTS)]
    pub config_vars: Vec<ConfigVar>,
}

/// The OAuth resource server's options (`--auth-*` and the caller's
/// share): `[server.auth]` in the file, without the `auth_` prefix.
#[derive(Clone, Debug, Args)]
pub struct AuthFlags {
    /// With --http: require OAuth access tokens from this issuer.
    ///
    /// Every request to /mcp needs an OAuth 2.1 access token from this
    /// authorization server, given exactly as its tokens' `iss` names it
    /// (HTTPS; plain HTTP only on loopback). The host is a resource server:
    /// JWT access tokens, checked against the issuer's keys found through
    /// its discovery document. Refused without --http. Needs
    /// --auth-resource. See docs/authorization.md.
    #[arg(long, value_name = "URL", help_heading = heading::AUTHORIZATION)]
    pub auth_issuer: Option<String>,

    /// With --auth-issuer: this server's URL as clients use it.
    ///
    /// E.g. https://mcp.example.com/mcp. Tokens must name it in `aud`, and
    /// the resource metadata says it; it is never guessed from the Host
    /// header.
    #[arg(long, value_name = "URL", help_heading = heading::AUTHORIZATION)]
    pub auth_resource: Option<String>,

    /// With --auth-issuer: the scopes to advertise.
    ///
    /// Advertised in the resource metadata (scopes_supported) and in the
    /// 401 challenge. Comma-separated or repeated.
    #[arg(long, value_name = "SCOPE", value_delimiter = ',', help_heading = heading::AUTHORIZATION)]
    pub auth_scopes: Vec<String>,

    /// With --auth-issuer: calls one caller may have running or waiting.
    ///
    /// A caller is the token's issuer and subject. One more call at once
    /// is refused with an error naming this flag, so no caller takes every
    /// --max-concurrent-calls slot from the others.
    #[arg(long, value_name = "N", default_value_t = 32, help_heading = heading::AUTHORIZATION)]
    pub max_calls_per_principal: u32,

    /// With --auth-issuer: calls one caller may have waiting for the user.
    ///
    /// At once: its share of --max-paused. One more is declined at once.
    #[arg(long, value_name = "N", default_value_t = 4, help_heading = heading::AUTHORIZATION)]
    pub max_paused_per_principal: u32,

    /// With --auth-issuer: accept opaque (non-JWT) access tokens too.
    ///
    /// Each is checked by token introspection (RFC 7662) as this OAuth
    /// client of the issuer. Needs --auth-client-secret-file.
    #[arg(long, value_name = "ID", help_heading = heading::AUTHORIZATION)]
    pub auth_client_id: Option<String>,

    /// With --auth-client-id: the file holding its client secret.
    ///
    /// Never on the command line. A trailing newline is ignored; at most
    /// 4 KiB.
    #[arg(value_hint = ValueHint::FilePath, long, value_name = "FILE", help_heading = heading::AUTHORIZATION)]
    pub auth_client_secret_file: Option<PathBuf>,

    /// With --auth-client-id: the introspection endpoint.
    ///
    /// For when the issuer's discovery document names none (or another is
    /// wanted). HTTPS; plain HTTP only on loopback.
    #[arg(long, value_name = "URL", help_heading = heading::AUTHORIZATION)]
    pub auth_introspection_url: Option<String>,
}
