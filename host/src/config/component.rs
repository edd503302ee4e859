//! One component's settings, merged: the command line, then its
//! `[[component]]` table, then `[defaults]`, then the flag's default.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

use super::{ComponentSettings, text};
use super::{Hints, Offer};
use crate::approval::{ApprovalRule, ApprovalRules};
use crate::auth::{ToolScopes, scopes_by_tool};
use crate::cli::ServeArgs;
use crate::limits::CallLimits;
use crate::sandbox::ConfigVars;
use crate::sandbox::grants::{ConfigVar, DirGrant, EnvGrant, Grants, HostGrant, HostGrants};

/// What the command line's `--env-file` and `--config-var-file` hold, read
/// once and added to every component's.
pub(in crate::config) struct SecretFiles {
    /// `--env-file` variables.
    pub(in crate::config) env: Vec<EnvGrant>,
    /// `--config-var-file` values.
    pub(in crate::config) config: Vec<ConfigVar>,
}

/// `[defaults]` and each `[[component]]`: what one component gets.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct ComponentTable {
    /// Only in `[[component]]`: the component file.
    pub(super) path: Option<PathBuf>,
    /// Only in `[[component]]`, instead of `path`: `oci://REGISTRY/REPOSITORY:TAG`.
    pub(super) oci: Option<String>,
    /// The cosign public key its signature must verify with (relative to the file).
    pub(super) require_signature: Option<PathBuf>,
    #[serde(default, deserialize_with = "text::parsed_list")]
    pub(super) dirs: Option<Vec<DirGrant>>,
    #[serde(default, deserialize_with = "text::parsed_list")]
    pub(super) env: Option<Vec<EnvGrant>>,
    #[serde(default, deserialize_with = "text::parsed_list")]
    pub(super) allow_hosts: Option<Vec<HostGrant>>,
    pub(super) allow_private_addresses: Option<bool>,
    pub(super) fuel: Option<u64>,
    #[serde(default, deserialize_with = "text::duration")]
    pub(super) timeout: Option<Duration>,
    #[serde(default, deserialize_with = "text::bytes")]
    pub(super) max_memory: Option<usize>,
    #[serde(default, deserialize_with = "text::bytes")]
    pub(super) max_output: Option<usize>,
    pub(super) max_content_blocks: Option<usize>,
    pub(super) max_handles: Option<usize>,
    #[serde(default, deserialize_with = "text::bytes")]
    pub(super) max_log_record: Option<usize>,
    #[serde(default, deserialize_with = "text::bytes")]
    pub(super) max_question: Option<usize>,
    #[serde(default, deserialize_with = "text::bytes")]
    pub(super) max_answer: Option<usize>,
    #[serde(default, deserialize_with = "text::bytes")]
    pub(super) max_notification_bytes: Option<usize>,
    #[serde(default, deserialize_with = "text::bytes")]
    pub(super) max_guest_output: Option<usize>,
    #[serde(default, deserialize_with = "text::duration")]
    pub(super) cancel_grace: Option<Duration>,
    #[serde(default, deserialize_with = "text::duration")]
    pub(super) cleanup_timeout: Option<Duration>,
    pub(super) cleanup_fuel: Option<u64>,
    #[serde(default, deserialize_with = "text::parsed_list")]
    pub(super) require_approval: Option<Vec<ApprovalRule>>,
    #[serde(default, deserialize_with = "text::parsed_list")]
    pub(super) no_approval: Option<Vec<ApprovalRule>>,
    /// With `--auth-issuer`: scopes every tool of the component needs.
    pub(super) required_scopes: Option<Vec<String>>,
    /// With `--auth-issuer`: scopes single tools need besides.
    pub(super) tool_scopes: Option<BTreeMap<String, Vec<String>>>,
    /// Only these of its tools are served (by the component's names).
    pub(super) tools: Option<Vec<String>>,
    /// Put before each of its tool names.
    pub(super) prefix: Option<String>,
    /// `[component.config]`: what it reads through `wasi:config/store`.
    pub(super) config: Option<BTreeMap<String, String>>,
    /// `[component.annotations.TOOL]`: behaviour hints per tool.
    pub(super) annotations: Option<BTreeMap<String, Hints>>,
}

/// One component's settings: command line, then its table, then `[defaults]`.
#[allow(clippy::too_many_arguments)]
pub(super) fn component(
    args: &ServeArgs,
    secrets: &SecretFiles,
    given: &dyn Fn(&str) -> bool,
    path: PathBuf,
    origin: Option<String>,
    own: &ComponentTable,
    defaults: &ComponentTable,
    base: &Path,
) -> ComponentSettings {
    macro_rules! pick {
        ($field:ident) => {
            if given(stringify!($field)) {
                args.$field.clone()
            } else {
                own.$field.clone().or_else(|| defaults.$field.clone()).unwrap_or_else(|| args.$field.clone())
            }
        };
    }
    // Directories in the file are relative to the file.
    let in_file = |dirs: Vec<DirGrant>| -> Vec<DirGrant> {
        dirs.into_iter().map(|dir| DirGrant { host: base.join(&dir.host), ..dir }).collect()
    };
    let dirs = if given("dirs") {
        args.dirs.clone()
    } else {
        own.dirs.clone().or_else(|| defaults.dirs.clone()).map(in_file).unwrap_or_else(|| args.dirs.clone())
    };
    let fuel = pick!(fuel);
    let mut env = pick!(env);
    env.extend(secrets.env.iter().cloned());
    // A key named in the file is relative to the file.
    let signature_key = if given("require_signature") {
        args.require_signature.clone()
    } else {
        own.require_signature
            .clone()
            .or_else(|| defaults.require_signature.clone())
            .map(|key| base.join(key))
            .or_else(|| args.require_signature.clone())
    };
    let access = &args.access;
    let scopes = ToolScopes {
        every_tool: if given("required_scopes") {
            access.required_scopes.clone()
        } else {
            own.required_scopes
                .clone()
                .or_else(|| defaults.required_scopes.clone())
                .unwrap_or_else(|| access.required_scopes.clone())
        },
        per_tool: if given("tool_scopes") {
            scopes_by_tool(&access.tool_scopes)
        } else {
            own.tool_scopes
                .clone()
                .or_else(|| defaults.tool_scopes.clone())
                .unwrap_or_else(|| scopes_by_tool(&access.tool_scopes))
        },
    };
    let offer = &args.offer;
    let mut config: Vec<(String, String)> = if given("config_vars") {
        offer.config_vars.iter().map(|var| (var.key.clone(), var.value.clone())).collect()
    } else {
        match own.config.as_ref().or(defaults.config.as_ref()) {
            Some(table) => table.iter().map(|(key, value)| (key.clone(), value.clone())).collect(),
            None => offer.config_vars.iter().map(|var| (var.key.clone(), var.value.clone())).collect(),
        }
    };
    config.extend(secrets.config.iter().map(|var| (var.key.clone(), var.value.clone())));
    let in_file = own.tools.clone().or_else(|| defaults.tools.clone());
    let shared = given("tools") || in_file.is_none();
    let tools = if shared { Some(offer.tools.clone()) } else { in_file }.filter(|tools| !tools.is_empty());
    let prefix = if given("prefix") {
        offer.prefix.clone()
    } else {
        own.prefix.clone().or_else(|| defaults.prefix.clone()).or_else(|| offer.prefix.clone())
    };
    let oci = path.to_str().filter(|text| text.starts_with("oci://")).map(String::from);
    ComponentSettings {
        path,
        oci,
        signature_key,
        origin,
        grants: Grants::new(
            dirs,
            env,
            HostGrants::new(pick!(allow_hosts)).with_private_addresses(pick!(allow_private_addresses)),
        )
        .with_config(ConfigVars::new(config)),
        limits: CallLimits {
            fuel: (fuel > 0).then_some(fuel),
            timeout: pick!(timeout),
            max_memory: pick!(max_memory),
            cancel_grace: pick!(cancel_grace),
            cleanup_fuel: pick!(cleanup_fuel),
            cleanup_timeout: pick!(cleanup_timeout),
            max_output: pick!(max_output),
            max_content_blocks: pick!(max_content_blocks),
            max_handles: pick!(max_handles),
            max_log_record: pick!(max_log_record),
            max_question: pick!(max_question),
            max_answer: pick!(max_answer),
            max_notification_bytes: pick!(max_notification_bytes),
            max_guest_output: pick!(max_guest_output),
        },
        approvals: ApprovalRules { require: pick!(require_approval), no_approval: pick!(no_approval) },
        scopes,
        offer: Offer {
            tools,
            shared,
            prefix: prefix.unwrap_or_default(),
            // Only the component's own: tool names differ between components.
            hints: own.annotations.clone().unwrap_or_default(),
        },
    }
}
