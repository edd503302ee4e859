//! Who may call over `--http`, and the record of who did: the OAuth
//! resource server's flags (`--auth-*`), and the TLS that keeps tokens
//! secret on the wire (`--tls-*`, `--behind-tls-proxy`). `[server.auth]`
//! and `[server]` in `--config` say the same (see `config/auth.rs`,
//! `config/tls.rs`).

use std::path::PathBuf;

use clap::Args;

use crate::auth::ToolScope;

use super::heading;

/// The access flags of `serve` (flattened into [`super::ServeArgs`]; clap
/// ids are the field names, as `--config` merging expects).
#[derive(Debug, Default, Args)]
pub struct AccessArgs {
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
    #[arg(long, value_name = "FILE", help_heading = heading::AUTHORIZATION)]
    pub auth_client_secret_file: Option<PathBuf>,

    /// With --auth-client-id: the introspection endpoint.
    ///
    /// For when the issuer's discovery document names none (or another is
    /// wanted). HTTPS; plain HTTP only on loopback.
    #[arg(long, value_name = "URL", help_heading = heading::AUTHORIZATION)]
    pub auth_introspection_url: Option<String>,

    /// With --http: serve HTTPS with this certificate chain (PEM).
    ///
    /// HTTP/1.1. Reloaded when the file changes; a bad new pair is logged
    /// and the old one kept. Needs --tls-key.
    #[arg(long, value_name = "FILE", help_heading = heading::HTTP)]
    pub tls_cert: Option<PathBuf>,

    /// With --tls-cert: its private key (PEM).
    ///
    /// Reloaded when the file changes; a bad new pair is logged and the old
    /// one kept.
    #[arg(long, value_name = "FILE", help_heading = heading::HTTP)]
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
    #[arg(long, value_name = "FILE", help_heading = heading::OBSERVABILITY)]
    pub audit_log: Option<PathBuf>,
}
