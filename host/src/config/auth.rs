//! `[server.auth]` and `--auth-*`, merged: the command line wins per key.

use anyhow::Result;
use serde::Deserialize;

use super::ComponentSettings;
use crate::auth::AuthSettings;
use crate::cli::ServeArgs;

/// `[server.auth]`: the authorization server and this resource.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct AuthTable {
    issuer: Option<String>,
    resource: Option<String>,
    scopes: Option<Vec<String>>,
    max_calls_per_principal: Option<u32>,
    max_paused_per_principal: Option<u32>,
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
        (Some(issuer), Some(resource)) => {
            let mut settings = AuthSettings::new(issuer, resource, scopes)?;
            let access = &args.access;
            let pick =
                |id: &str, flag: u32, key: Option<u32>| if given(id) { flag } else { key.unwrap_or(flag) };
            settings.max_calls_per_principal = pick(
                "max_calls_per_principal",
                access.max_calls_per_principal,
                table.max_calls_per_principal,
            );
            settings.max_paused_per_principal = pick(
                "max_paused_per_principal",
                access.max_paused_per_principal,
                table.max_paused_per_principal,
            );
            Ok(Some(settings))
        }
    }
}

/// Advertises the scopes `components`' tools need beside `auth`'s own; or,
/// without auth, says they are not checked (over stdio the caller is the
/// user who started the host).
pub(super) fn add_tool_scopes(auth: Option<&mut AuthSettings>, components: &[ComponentSettings]) {
    let mut named: Vec<String> =
        components.iter().flat_map(|component| component.scopes.all()).cloned().collect();
    named.sort_unstable();
    named.dedup();
    match auth {
        Some(auth) => auth.tool_scopes = named,
        None if !named.is_empty() => tracing::warn!(
            scopes = named.join(" "),
            "tools name required scopes, but without --auth-issuer no caller has a token: not checked"
        ),
        None => {}
    }
}
