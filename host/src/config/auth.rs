//! `[server.auth]` and `--auth-*`, merged: the command line wins per key.

use anyhow::Result;
use serde::Deserialize;

use crate::auth::AuthSettings;
use crate::cli::ServeArgs;

/// `[server.auth]`: the authorization server and this resource.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct AuthTable {
    issuer: Option<String>,
    resource: Option<String>,
    scopes: Option<Vec<String>>,
}

/// `--auth-*` over `[server.auth]`: none unless an issuer is named, and
/// then the resource is required.
pub(super) fn resolve(
    args: &ServeArgs,
    table: Option<&AuthTable>,
    given: &dyn Fn(&str) -> bool,
) -> Result<Option<AuthSettings>> {
    let table = table.cloned().unwrap_or_default();
    let issuer = args.access.auth_issuer.clone().or(table.issuer);
    let resource = args.access.auth_resource.clone().or(table.resource);
    let scopes =
        if given("auth_scopes") { args.access.auth_scopes.clone() } else { table.scopes.unwrap_or_default() };
    match (issuer, resource) {
        (None, None) if scopes.is_empty() => Ok(None),
        (None, _) => anyhow::bail!(
            "--auth-resource and --auth-scopes need --auth-issuer (or `issuer` in [server.auth])"
        ),
        (Some(_), None) => anyhow::bail!(
            "--auth-issuer needs --auth-resource: this server's URL as clients use it \
             (e.g. https://mcp.example.com/mcp); it is never guessed from the Host header"
        ),
        (Some(issuer), Some(resource)) => AuthSettings::new(issuer, resource, scopes).map(Some),
    }
}
