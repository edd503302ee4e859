//! Who may call over `--http`, and the record of who did: the OAuth
//! resource server's flags (`--auth-*`). `[server.auth]` in `--config`
//! says the same (see `config/auth.rs`).

use clap::Args;

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

    /// Append an audit trail to FILE: one JSON line per tool call (who,
    /// which tool, a SHA-256 of its arguments, how it ended, the approval
    /// verdict, how long it took) and per lifecycle event (start, reload,
    /// drain, stop). Never a token or an argument's value. Opened
    /// append-only, created 0600; reopened when renamed (logrotate).
    #[arg(long, value_name = "FILE")]
    pub audit_log: Option<std::path::PathBuf>,
}
