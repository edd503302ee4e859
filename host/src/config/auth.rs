//! `[server.auth]` and `--auth-*`, merged: the command line wins per key.

use std::path::{Path, PathBuf};

use anyhow::Result;
use serde::Deserialize;

use super::ComponentSettings;
use crate::auth::{AuthSettings, IntrospectionSettings};
use crate::cli::ServeArgs;

/// The largest client secret file read.
const MAX_SECRET: u64 = 4 << 10;

/// `[server.auth]`: the authorization server and this resource.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct AuthTable {
    issuer: Option<String>,
    resource: Option<String>,
    scopes: Option<Vec<String>>,
    max_calls_per_principal: Option<u32>,
    max_paused_per_principal: Option<u32>,
    introspection_url: Option<String>,
    client_id: Option<String>,
    /// Relative to the config file.
    client_secret_file: Option<PathBuf>,
}

/// `--auth-*` over `[server.auth]`: none unless an issuer is named, and
/// then the resource is required. `base` is the config file's folder.
pub(super) fn resolve(
    args: &ServeArgs,
    table: Option<&AuthTable>,
    given: &dyn Fn(&str) -> bool,
    base: &Path,
) -> Result<Option<AuthSettings>> {
    let table = table.cloned().unwrap_or_default();
    let issuer = args.access.auth_issuer.clone().or(table.issuer);
    let resource = args.access.auth_resource.clone().or(table.resource);
    let scopes =
        if given("auth_scopes") { args.access.auth_scopes.clone() } else { table.scopes.unwrap_or_default() };
    let introspection =
        introspection(args, table.introspection_url, table.client_id, table.client_secret_file, base)?;
    match (issuer, resource) {
        (None, None) if scopes.is_empty() && introspection.is_none() => Ok(None),
        (None, _) => anyhow::bail!(
            "--auth-resource, --auth-scopes and --auth-client-id need --auth-issuer (or `issuer` in [server.auth])"
        ),
        (Some(_), None) => anyhow::bail!(
            "--auth-issuer needs --auth-resource: this server's URL as clients use it \
             (e.g. https://mcp.example.com/mcp); it is never guessed from the Host header"
        ),
        (Some(issuer), Some(resource)) => {
            let mut settings = AuthSettings::new(issuer, resource, scopes)?;
            settings.introspection = introspection;
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

/// `--auth-client-id`, `--auth-client-secret-file` and
/// `--auth-introspection-url` over their keys: none without a client id.
fn introspection(
    args: &ServeArgs,
    url: Option<String>,
    client_id: Option<String>,
    secret_file: Option<PathBuf>,
    base: &Path,
) -> Result<Option<IntrospectionSettings>> {
    let access = &args.access;
    let url = access.auth_introspection_url.clone().or(url);
    let client_id = access.auth_client_id.clone().or(client_id);
    let secret_file =
        access.auth_client_secret_file.clone().or_else(|| secret_file.map(|path| base.join(path)));
    match (client_id, secret_file) {
        (None, None) if url.is_none() => Ok(None),
        (Some(client_id), Some(file)) => {
            IntrospectionSettings::new(url, client_id, read_secret(&file)?).map(Some)
        }
        _ => anyhow::bail!(
            "opaque tokens need all of --auth-client-id and --auth-client-secret-file \
             (--auth-introspection-url is optional: the issuer's discovery document names its endpoint)"
        ),
    }
}

/// The secret in `path` (at most [`MAX_SECRET`] bytes), without the
/// trailing newline an editor leaves.
fn read_secret(path: &Path) -> Result<String> {
    let text = crate::secret_file::read(path, "--auth-client-secret-file", MAX_SECRET)?;
    Ok(text.trim_end_matches(['\n', '\r']).to_string())
}
