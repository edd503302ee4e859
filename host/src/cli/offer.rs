//! What the `--component` files offer, and under which names: a tool
//! selection (`--tools`), a name prefix (`--prefix`), and the values a
//! component reads through `wasi:config/store` (`--config-var`,
//! `--config-var-file`). `[[component]]` says the same per component with
//! `tools`, `prefix` and `[component.config]` (see `config/component.rs`).

use std::path::PathBuf;

use clap::Args;

use crate::sandbox::grants::ConfigVar;

use super::heading;

/// The offer flags of `serve` (flattened into [`super::ServeArgs`]; clap
/// ids are the field names, as `--config` merging expects).
#[derive(Debug, Default, Args)]
pub struct OfferArgs {
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

    /// The wasi:config values in this file.
    ///
    /// KEY=VALUE lines (`#` comments, blank lines and an `export ` prefix
    /// allowed). For API keys: unlike --config-var, the values never appear
    /// in the process list. Repeatable; added to every component's values.
    #[arg(long = "config-var-file", value_name = "FILE", help_heading = heading::GRANTS)]
    pub config_var_files: Vec<PathBuf>,
}
