//! `--auth-*` (or `[server.auth]`), merged, made into the resource
//! server's settings.

use std::path::Path;

use anyhow::Result;

use super::{AuthFlags, ComponentSettings};
use crate::auth::{AuthSettings, IntrospectionSettings};

/// The largest client secret file read.
const MAX_SECRET: u64 = 4 << 10;

/// The merged `--auth-*` flags (or `[server.auth]`): none unless an issuer
/// is named, and then the resource is required.
pub(super) fn resolve(flags: &AuthFlags) -> Result<Option<AuthSettings>> {
    let introspection = introspection(flags)?;
    match (flags.auth_issuer.clone(), flags.auth_resource.clone()) {
        (None, None) if flags.auth_scopes.is_empty() && introspection.is_none() => Ok(None),
        (None, _) => anyhow::bail!(
            "--auth-resource, --auth-scopes and --auth-client-id need --auth-issuer (or `issuer` in [server.auth])"
        ),
        (Some(_), None) => anyhow::bail!(
            "--auth-issuer needs --auth-resource: this server's URL as clients use it \
             (e.g. https://mcp.example.com/mcp); it is never guessed from the Host header"
        ),
        (Some(issuer), Some(resource)) => {
            let mut settings = AuthSettings::new(issuer, resource, flags.auth_scopes.clone())?;
            settings.introspection = introspection;
            settings.max_calls_per_principal = flags.max_calls_per_principal;
            settings.max_paused_per_principal = flags.max_paused_per_principal;
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
/// `--auth-introspection-url`: none without a client id.
fn introspection(flags: &AuthFlags) -> Result<Option<IntrospectionSettings>> {
    match (&flags.auth_client_id, &flags.auth_client_secret_file) {
        (None, None) if flags.auth_introspection_url.is_none() => Ok(None),
        (Some(client_id), Some(file)) => IntrospectionSettings::new(
            flags.auth_introspection_url.clone(),
            client_id.clone(),
            read_secret(file)?,
        )
        .map(Some),
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
