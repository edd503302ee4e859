//! Who may call over `--http`, and the record of who did: the OAuth
//! resource server's flags (`--auth-*`), and the TLS that keeps tokens
//! secret on the wire (`--tls-*`, `--behind-tls-proxy`). `[server.auth]`
//! and `[server]` in `--config` say the same (see `config/auth.rs`,
//! `config/tls.rs`).

use std::path::PathBuf;

use clap::Args;

use crate::auth::ToolScope;

/// The access flags of `serve` (flattened into [`super::ServeArgs`]; clap
/// ids are the field names, as `--config` merging expects).
#[derive(Debug, Default, Args)]
pub struct AccessArgs {
    /// With --http: require an OAuth 2.1 access token from this
    /// authorization server on every request to /mcp (the host is a
    /// resource server: JWT access tokens, checked against the issuer's
    /// keys found through its discovery document). Needs --auth-resource.
    #[arg(long, value_name = "URL", requires = "http")]
    pub auth_issuer: Option<String>,

    /// With --auth-issuer: this server's URL as clients use it, e.g.
    /// https://mcp.example.com/mcp. Tokens must name it in `aud`; it is
    /// never guessed from the Host header.
    #[arg(long, value_name = "URL")]
    pub auth_resource: Option<String>,

    /// With --auth-issuer: the scopes to advertise in the resource
    /// metadata (scopes_supported). Comma-separated or repeated.
    #[arg(long, value_name = "SCOPE", value_delimiter = ',')]
    pub auth_scopes: Vec<String>,

    /// With --auth-issuer: scopes every tool of the --component files
    /// needs (a `[[component]]` says its own with `required_scopes`). A
    /// caller whose token lacks one does not see the tool in tools/list,
    /// and its call is answered 403 insufficient_scope naming the scopes
    /// to step up to. Comma-separated or repeated.
    #[arg(long, value_name = "SCOPE", value_delimiter = ',')]
    pub required_scopes: Vec<String>,

    /// With --auth-issuer: one more scope one tool needs, e.g.
    /// `delete_file=files:write`. Repeatable (a `[[component]]` says its
    /// own with `tool_scopes = { delete_file = ["files:write"] }`).
    #[arg(long = "tool-scope", value_name = "TOOL=SCOPE")]
    pub tool_scopes: Vec<ToolScope>,

    /// With --auth-issuer: calls one caller (the token's issuer and
    /// subject) may have running or waiting at once; one more is refused
    /// with an error naming this flag, so no caller takes every
    /// --max-concurrent-calls slot from the others.
    #[arg(long, value_name = "N", default_value_t = 32)]
    pub max_calls_per_principal: u32,

    /// With --auth-issuer: calls one caller may have waiting for the user
    /// at once (its share of --max-paused); one more is declined at once.
    #[arg(long, value_name = "N", default_value_t = 4)]
    pub max_paused_per_principal: u32,

    /// With --auth-issuer: accept opaque (non-JWT) access tokens too,
    /// checking each by token introspection (RFC 7662) as this OAuth
    /// client of the issuer. Needs --auth-client-secret-file.
    #[arg(long, value_name = "ID")]
    pub auth_client_id: Option<String>,

    /// With --auth-client-id: the file holding its client secret (never
    /// on the command line).
    #[arg(long, value_name = "FILE")]
    pub auth_client_secret_file: Option<PathBuf>,

    /// With --auth-client-id: the introspection endpoint, if the issuer's
    /// discovery document names none (or another is wanted).
    #[arg(long, value_name = "URL")]
    pub auth_introspection_url: Option<String>,

    /// With --http: serve HTTPS with this certificate chain (PEM), reloaded
    /// when the file changes. Needs --tls-key.
    #[arg(long, value_name = "FILE")]
    pub tls_cert: Option<PathBuf>,

    /// With --tls-cert: its private key (PEM).
    #[arg(long, value_name = "FILE")]
    pub tls_key: Option<PathBuf>,

    /// With --http: TLS is terminated in front of the host (an ingress, a
    /// proxy, a mesh). Without it or --tls-cert, --auth-issuer is refused
    /// on an address beyond loopback (tokens would travel in clear).
    #[arg(long)]
    pub behind_tls_proxy: bool,
}
