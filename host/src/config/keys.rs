//! Where each command-line option is set in the config file: the group
//! that defines it says the table (`flags.rs`), and the key is its clap
//! id, the very name `file.rs` reads. So the reference in `docs/cli.md`
//! cannot name a key the file does not take, and a new flag outside the
//! groups with no reason fails a test.

use clap::{Args, Command};

use super::{AuthFlags, ComponentFlags, ServerSettings};

/// Where one option is set in the config file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FileKey {
    /// A key of `[server]`.
    Server(String),
    /// A key of `[server.auth]`.
    Auth(String),
    /// A key of `[defaults]` and of each `[[component]]`.
    Component(String),
    /// Not in the file, for this reason.
    Nowhere(&'static str),
}

/// Options the file does not take, and why.
const NOWHERE: &[(&str, &str)] = &[
    ("config", "it names the file"),
    ("log_format", "logging starts before the file is read"),
    (
        "otlp_endpoint",
        "tracing starts before the file is read; the standard OTEL_EXPORTER_OTLP_ENDPOINT variable works as well",
    ),
    ("env_files", "a component's `env` list in the file holds the same KEY=VALUE lines"),
    ("config_var_files", "`[component.config]` in the file holds the same values"),
];

/// Where the option with clap id `id` (its field name) is set in the
/// file; `None` for an option nobody has placed yet.
pub fn file_key(id: &str) -> Option<FileKey> {
    match id {
        // One `[[component]]` a component: `path` or `oci` names it.
        "components" => return Some(FileKey::Component("path".into())),
        // `[component.config]`, a table of the flag's KEY=VALUE.
        "config_vars" => return Some(FileKey::Component("config".into())),
        _ => {}
    }
    if let Some((_, why)) = NOWHERE.iter().find(|(flag, _)| *flag == id) {
        return Some(FileKey::Nowhere(why));
    }
    let key = id.to_string();
    match table_of(id)? {
        Table::Server => Some(FileKey::Server(key)),
        Table::Component => Some(FileKey::Component(key)),
        // `[server.auth]` drops the `auth_` of `--auth-*`.
        Table::Auth => Some(FileKey::Auth(id.strip_prefix("auth_").unwrap_or(id).to_string())),
    }
}

/// The tables the groups of flags are set in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Table {
    /// `[server]`: [`ServerSettings`].
    Server,
    /// `[server.auth]`: [`AuthFlags`].
    Auth,
    /// `[defaults]` and each `[[component]]`: [`ComponentFlags`].
    Component,
}

impl Table {
    /// The table as the file writes it, for messages.
    pub(super) fn written(self) -> &'static str {
        match self {
            Table::Server => "[server]",
            Table::Auth => "[server.auth]",
            Table::Component => "[defaults] or a [[component]]",
        }
    }
}

/// The table whose group defines the flag with clap id `id`; `None` for an
/// option outside the groups.
pub(super) fn table_of(id: &str) -> Option<Table> {
    let defines = |command: Command| command.get_arguments().any(|arg| arg.get_id() == id);
    if defines(flags::<ServerSettings>()) {
        Some(Table::Server)
    } else if defines(flags::<AuthFlags>()) {
        Some(Table::Auth)
    } else if defines(flags::<ComponentFlags>()) {
        Some(Table::Component)
    } else {
        None
    }
}

/// The options `T` defines, by clap id.
pub(super) fn flags<T: Args>() -> Command {
    T::augment_args(Command::new("flags"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_groups_say_the_tables() {
        assert_eq!(file_key("max_sessions"), Some(FileKey::Server("max_sessions".into())));
        assert_eq!(file_key("allow_hosts"), Some(FileKey::Component("allow_hosts".into())));
        assert_eq!(file_key("auth_issuer"), Some(FileKey::Auth("issuer".into())));
        assert_eq!(
            file_key("max_calls_per_principal"),
            Some(FileKey::Auth("max_calls_per_principal".into()))
        );
        assert_eq!(file_key("timeout"), Some(FileKey::Component("timeout".into())));
        assert_eq!(file_key("http"), Some(FileKey::Server("http".into())));
        assert_eq!(file_key("no_such_flag"), None);
    }

    /// Every serving option is settable in the file, or says why not.
    #[test]
    fn every_serving_option_has_a_key_or_a_reason() {
        let command = flags::<super::super::ServeArgs>();
        let unplaced: Vec<String> = (command.get_arguments())
            .filter(|arg| !arg.is_hide_set() && arg.get_long().is_some())
            .filter(|arg| !matches!(arg.get_id().as_str(), "help" | "version"))
            .filter(|arg| file_key(arg.get_id().as_str()).is_none())
            .map(|arg| format!("--{}", arg.get_long().unwrap_or_default()))
            .collect();
        assert!(unplaced.is_empty(), "give these a config-file key, or a reason in NOWHERE: {unplaced:?}");
    }
}
