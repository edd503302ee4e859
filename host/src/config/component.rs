//! One component's settings, from its merged flags: the command line,
//! then its `[[component]]` table, then `[defaults]`, then each flag's
//! default (merged by `file.rs`), plus the secret files every component gets.

use std::path::PathBuf;

use super::{ComponentFlags, ComponentSettings, Given, Selection};
use crate::approval::ApprovalRules;
use crate::auth::{ToolScopes, scopes_by_tool};
use crate::sandbox::ConfigVars;
use crate::sandbox::grants::{ConfigVar, EnvGrant, Grants, HostGrants};

/// What the command line's `--env-file` and `--config-var-file` hold, read
/// once and added to every component's.
pub(in crate::config) struct SecretFiles {
    /// `--env-file` variables.
    pub(in crate::config) env: Vec<EnvGrant>,
    /// `--config-var-file` values.
    pub(in crate::config) config: Vec<ConfigVar>,
}

/// One component's settings, from its merged flags (`flags`: the command
/// line, then its table, then `[defaults]`, then the defaults), the secret
/// files every component gets, and where it is. `tools_in_file`: its
/// `tools` come from the file (its table or `[defaults]`), so they are its
/// own selection rather than the command line's shared one.
pub(super) fn settings(
    flags: &ComponentFlags,
    given: &Given,
    secrets: &SecretFiles,
    path: PathBuf,
    origin: Option<String>,
    tools_in_file: bool,
) -> ComponentSettings {
    let mut env = flags.env.clone();
    env.extend(secrets.env.iter().cloned());
    let mut config: Vec<(String, String)> =
        flags.config_vars.iter().map(|var| (var.key.clone(), var.value.clone())).collect();
    config.extend(secrets.config.iter().map(|var| (var.key.clone(), var.value.clone())));
    let shared = given.contains_key("tools") || !tools_in_file;
    let tools = Some(flags.tools.clone()).filter(|tools| !tools.is_empty());
    let oci = path.to_str().filter(|text| text.starts_with("oci://")).map(String::from);
    ComponentSettings {
        path,
        oci,
        signature_key: flags.require_signature.clone(),
        origin,
        grants: Grants::new(
            flags.dirs.clone(),
            env,
            HostGrants::new(flags.allow_hosts.clone()).with_private_addresses(flags.allow_private_addresses),
        )
        .with_config(ConfigVars::new(config)),
        limits: flags.limits.clone(),
        approvals: ApprovalRules {
            require: flags.require_approval.clone(),
            no_approval: flags.no_approval.clone(),
        },
        scopes: ToolScopes {
            every_tool: flags.required_scopes.clone(),
            per_tool: scopes_by_tool(&flags.tool_scopes),
        },
        selection: Selection {
            tools,
            shared,
            prefix: flags.prefix.clone().unwrap_or_default(),
            hints: Default::default(),
        },
    }
}
