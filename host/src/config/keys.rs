//! Where each command-line option is set in the config file, read from the
//! tables' own serde definitions (the field names serde asks for), so the
//! reference in `docs/cli.md` cannot name a key the file does not take,
//! and a new flag with no key and no reason fails a test.

use serde::Deserialize;
use serde::de::{self, Deserializer, Visitor};

use super::ServerTable;
use super::auth::AuthTable;
use super::component::ComponentTable;

/// Where one option is set in the config file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FileKey {
    /// A key of `[server]`.
    Server(&'static str),
    /// A key of `[server.auth]`.
    Auth(&'static str),
    /// A key of `[defaults]` and of each `[[component]]`.
    Component(&'static str),
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

/// Where the option with clap id `id` (the `ServeArgs` field name) is set
/// in the file; `None` for an option nobody has placed yet.
pub fn file_key(id: &str) -> Option<FileKey> {
    match id {
        // One `[[component]]` a component: `path` or `oci` names it.
        "components" => return Some(FileKey::Component("path")),
        "config_vars" => return Some(FileKey::Component("config")),
        _ => {}
    }
    if let Some((_, why)) = NOWHERE.iter().find(|(flag, _)| *flag == id) {
        return Some(FileKey::Nowhere(why));
    }
    let find = |keys: &'static [&'static str], key: &str| keys.iter().copied().find(|known| *known == key);
    // Command-line ids and keys share their names (`config::resolve` relies
    // on it), but for `--auth-*`, which drop their prefix in `[server.auth]`.
    (find(fields::<ServerTable>(), id).map(FileKey::Server))
        .or_else(|| find(fields::<ComponentTable>(), id).map(FileKey::Component))
        .or_else(|| find(fields::<AuthTable>(), id.strip_prefix("auth_").unwrap_or(id)).map(FileKey::Auth))
}

/// The field names `T`'s derived `Deserialize` asks for.
fn fields<T: for<'de> Deserialize<'de>>() -> &'static [&'static str] {
    let mut fields: &'static [&'static str] = &[];
    // Every table is a struct: the probe records its fields and stops there.
    let _ = T::deserialize(Probe(&mut fields));
    fields
}

/// A deserializer that only records the fields of the struct asked of it.
struct Probe<'a>(&'a mut &'static [&'static str]);

impl<'de> Deserializer<'de> for Probe<'_> {
    type Error = de::value::Error;

    fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Self::Error> {
        Err(de::Error::custom("only a struct's fields are probed"))
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        fields: &'static [&'static str],
        _: V,
    ) -> Result<V::Value, Self::Error> {
        *self.0 = fields;
        Err(de::Error::custom("probed"))
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf option
        unit unit_struct newtype_struct seq tuple tuple_struct map enum identifier ignored_any
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_probe_reads_the_tables_keys() {
        assert!(fields::<ServerTable>().contains(&"max_sessions"));
        assert!(fields::<ComponentTable>().contains(&"allow_hosts"));
        assert_eq!(file_key("auth_issuer"), Some(FileKey::Auth("issuer")));
        assert_eq!(file_key("max_calls_per_principal"), Some(FileKey::Auth("max_calls_per_principal")));
        assert_eq!(file_key("timeout"), Some(FileKey::Component("timeout")));
        assert_eq!(file_key("http"), Some(FileKey::Server("http")));
        assert_eq!(file_key("no_such_flag"), None);
    }

    /// Every serving option is settable in the file, or says why not.
    #[test]
    fn every_serving_option_has_a_key_or_a_reason() {
        use clap::CommandFactory as _;
        let command = crate::cli::Cli::command();
        let unplaced: Vec<String> = (command.get_arguments())
            .filter(|arg| !arg.is_hide_set() && arg.get_long().is_some())
            .filter(|arg| !matches!(arg.get_id().as_str(), "help" | "version"))
            .filter(|arg| file_key(arg.get_id().as_str()).is_none())
            .map(|arg| format!("--{}", arg.get_long().unwrap_or_default()))
            .collect();
        assert!(unplaced.is_empty(), "give these a config-file key, or a reason in NOWHERE: {unplaced:?}");
    }
}
