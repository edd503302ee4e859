//! The config file, read through the flags' own definitions: each key of
//! `[server]`, `[server.auth]`, `[defaults]` and `[[component]]` is the
//! flag of the same name (its clap id), and its value goes through that
//! flag's own parser. So the file takes exactly what the command line
//! takes, checked the same way, and a new flag is a new key with nothing
//! else to write. Merging is one more parse: the file's keys as arguments,
//! the command line's options (as typed) after them, each flag set by the
//! first layer that names it.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

use anyhow::{Context as _, Result, anyhow, bail};
use clap::builder::ValueHint;
use clap::{Arg, ArgAction, Command, FromArgMatches as _};
use toml::{Spanned, Value};

use super::keys::{flags, table_of};
use super::text::{line_of, located};
use super::{AuthFlags, ComponentFlags, Given, Hints, ServeArgs, ServerSettings};

/// The largest config file read: far more than any hand-written one.
const MAX_CONFIG: u64 = 1 << 20;

/// A table as written: each key's value, spanned where its key is.
type Table = BTreeMap<String, Spanned<Value>>;

/// The file as TOML: the three kinds of table, nothing else. Read with
/// `toml_edit`, which knows where every key is, dotted ones too (serde's
/// `Spanned` refuses a dotted key such as `annotations.wipe = {…}`).
#[derive(Default)]
struct Raw {
    server: Table,
    defaults: Table,
    components: Vec<(usize, Table)>,
}

impl Raw {
    /// Parses `text` (named `name` in messages).
    fn parse(name: &str, text: &str) -> Result<Raw> {
        let doc =
            toml_edit::ImDocument::parse(text).map_err(|err| anyhow!("{name} {}", located(&err, text)))?;
        let mut raw = Raw::default();
        let root = doc.as_table();
        for (key, item) in root.iter() {
            let at = root.key(key).and_then(toml_edit::Key::span).map_or(0, |span| span.start);
            let table_like = || {
                item.as_table_like()
                    .ok_or_else(|| anyhow!("{name} line {}: `{key}` is a table", line_of(text, at)))
            };
            match key {
                "server" => raw.server = table(table_like()?, at),
                "defaults" => raw.defaults = table(table_like()?, at),
                "component" => {
                    let Some(entries) = item.as_array_of_tables() else {
                        bail!("{name} line {}: each component is a [[component]] table", line_of(text, at));
                    };
                    for entry in entries.iter() {
                        let start = entry.span().map_or(at, |span| span.start);
                        raw.components.push((start, table(entry, start)));
                    }
                }
                other => bail!(
                    "{name} line {}: unknown table `{other}`; the file holds [server], [defaults] and [[component]]",
                    line_of(text, at)
                ),
            }
        }
        Ok(raw)
    }
}

/// A table's keys and values, each spanned where its key is (or, for a
/// key with no place of its own, at `at`).
fn table(table: &dyn toml_edit::TableLike, at: usize) -> Table {
    let mut read = Table::new();
    for (key, item) in table.iter() {
        let start = table.key(key).and_then(toml_edit::Key::span).map_or(at, |span| span.start);
        if let Some(value) = value_of(item) {
            read.insert(key.to_string(), Spanned::new(start..start, value));
        }
    }
    read
}

/// An item as a plain TOML value (`None`: an empty item).
fn value_of(item: &toml_edit::Item) -> Option<Value> {
    use toml_edit::Item;
    match item {
        Item::None => None,
        Item::Value(value) => Some(plain(value)),
        Item::Table(table) => Some(table_value(table)),
        Item::ArrayOfTables(tables) => Some(Value::Array(tables.iter().map(table_value).collect())),
    }
}

/// A `toml_edit` table as a plain TOML table.
fn table_value(table: &toml_edit::Table) -> Value {
    Value::Table(table.iter().filter_map(|(key, item)| Some((key.to_string(), value_of(item)?))).collect())
}

/// A `toml_edit` value without its formatting.
fn plain(value: &toml_edit::Value) -> Value {
    use toml_edit::Value as Edit;
    match value {
        Edit::String(text) => Value::String(text.value().clone()),
        Edit::Integer(number) => Value::Integer(*number.value()),
        Edit::Float(number) => Value::Float(*number.value()),
        Edit::Boolean(flag) => Value::Boolean(*flag.value()),
        Edit::Datetime(time) => Value::Datetime(*time.value()),
        Edit::Array(items) => Value::Array(items.iter().map(plain).collect()),
        Edit::InlineTable(table) => {
            Value::Table(table.iter().map(|(key, value)| (key.to_string(), plain(value))).collect())
        }
    }
}

/// One key, read: the flag it sets and the arguments that set it.
struct Setting {
    id: String,
    argv: Vec<OsString>,
}

/// `[defaults]` or one `[[component]]`, read.
pub(super) struct ComponentEntry {
    /// Where it is, for messages (`tools.toml line 12`).
    pub(super) origin: String,
    /// `path` (relative to the file, made absolute) or `oci`.
    pub(super) path: Option<PathBuf>,
    /// `[component.annotations.TOOL]`: hints for its own tools.
    pub(super) hints: BTreeMap<String, Hints>,
    /// Whether it names its `tools`.
    pub(super) names_tools: bool,
    settings: Vec<Setting>,
}

/// The file, read and checked: every value already went through its flag's
/// parser, so only the command line's options can still conflict.
pub(super) struct ConfigFile {
    /// `[server]` and `[server.auth]`.
    server: Vec<Setting>,
    /// `[defaults]`.
    defaults: ComponentEntry,
    /// Each `[[component]]`, in order.
    pub(super) components: Vec<ComponentEntry>,
}

impl ConfigFile {
    /// Reads and checks the file at `path` (a regular file, bounded).
    pub(super) fn read(path: &Path) -> Result<ConfigFile> {
        let text = crate::secret_file::read(path, "--config", MAX_CONFIG)?;
        let name = path.display().to_string();
        let raw = Raw::parse(&name, &text)?;
        let reader = Reader {
            name: &name,
            text: &text,
            base: path.parent().map(Path::to_path_buf).unwrap_or_default(),
            server: flags::<ServerSettings>(),
            auth: flags::<AuthFlags>(),
            component: flags::<ComponentFlags>(),
        };
        let defaults = reader.component("[defaults]", None, &raw.defaults)?;
        if defaults.path.is_some() {
            bail!(
                "{name}: [defaults] cannot name a `path` or `oci`; put each component in a [[component]] table"
            );
        }
        if !defaults.hints.is_empty() {
            bail!("{name}: [defaults] cannot hold `annotations`: they name one component's tools");
        }
        let components = (raw.components.iter())
            .map(|(start, entry)| {
                let origin = format!("{name} line {}", line_of(&text, *start));
                let read = reader.component(&origin, Some(*start), entry)?;
                if read.path.is_none() {
                    bail!("{origin}: this [[component]] has no `path` (or `oci`)");
                }
                Ok(read)
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(ConfigFile { server: reader.server(&raw.server)?, defaults, components })
    }

    /// The serving options for `entry` (`None`: the server's alone, or a
    /// component named on the command line): the command line, then the
    /// entry, then `[defaults]`, then `[server]`, then each flag's default.
    pub(super) fn serve_args(&self, entry: Option<&ComponentEntry>, given: &Given) -> Result<ServeArgs> {
        let layers = [
            entry.map(|entry| &entry.settings[..]).unwrap_or_default(),
            &self.defaults.settings,
            &self.server,
        ];
        merged(&layers, given)
    }

    /// Whether `[defaults]` names its `tools`.
    pub(super) fn default_tools(&self) -> bool {
        self.defaults.names_tools
    }
}

/// The command line as typed (`given`) over `layers` of the file, parsed
/// once: a flag is set by the command line, else by the first layer that
/// names it, else by its default.
fn merged(layers: &[&[Setting]], given: &Given) -> Result<ServeArgs> {
    let command = flags::<ServeArgs>();
    let mut argv: Vec<OsString> = vec!["mcp-wasm-host".into()];
    let mut set: Vec<&str> = given.keys().map(String::as_str).collect();
    for layer in layers {
        let named: Vec<&str> = layer.iter().map(|setting| setting.id.as_str()).collect();
        for setting in layer.iter().filter(|setting| !set.contains(&setting.id.as_str())) {
            argv.extend(setting.argv.iter().cloned());
        }
        set.extend(named);
    }
    for arg in command.get_arguments() {
        if let Some(values) = given.get(arg.get_id().as_str()) {
            argv.extend(typed(arg, values.iter().cloned()));
        }
    }
    let matches = command.try_get_matches_from(argv).map_err(|err| anyhow!("{}", clap_message(&err)))?;
    let mut args = ServeArgs::from_arg_matches(&matches).map_err(|err| anyhow!("{}", clap_message(&err)))?;
    args.given = given.clone();
    Ok(args)
}

/// The arguments that give `arg` these values, as one would type them.
fn typed(arg: &Arg, values: impl IntoIterator<Item = OsString>) -> Vec<OsString> {
    let long = arg.get_long().expect("every serving option has a long name");
    if matches!(arg.get_action(), ArgAction::SetTrue) {
        return vec![format!("--{long}").into()];
    }
    values
        .into_iter()
        .map(|value| {
            let mut typed = OsString::from(format!("--{long}="));
            typed.push(value);
            typed
        })
        .collect()
}

/// A clap error's own sentence, without its `error:` prefix and usage tip.
fn clap_message(err: &clap::Error) -> String {
    let text = err.to_string();
    let line = text.lines().next().unwrap_or_default();
    line.strip_prefix("error: ").unwrap_or(line).to_string()
}

/// What reading one file needs: where it is, and the flags by group.
struct Reader<'a> {
    name: &'a str,
    text: &'a str,
    base: PathBuf,
    server: Command,
    auth: Command,
    component: Command,
}

impl Reader<'_> {
    /// `name line N`, for the value at byte `at`.
    fn at(&self, value: &Spanned<Value>) -> String {
        format!("{} line {}", self.name, line_of(self.text, value.span().start))
    }

    /// Says where `key` belongs, when it is not in `table`.
    fn misplaced(&self, key: &str, table: &str, value: &Spanned<Value>) -> anyhow::Error {
        let at = self.at(value);
        match table_of(key).or_else(|| table_of(&format!("auth_{key}"))) {
            Some(group) => anyhow!("{at}: `{key}` is not set in {table}: put it in {}", group.written()),
            None => {
                anyhow!("{at}: unknown key `{key}` in {table} (every key is a flag's name; see docs/cli.md)")
            }
        }
    }

    /// `[server]`, with `[server.auth]` inside it.
    fn server(&self, table: &Table) -> Result<Vec<Setting>> {
        let mut settings = Vec::new();
        for (key, value) in table {
            if key == "auth" {
                let Value::Table(auth) = value.get_ref() else {
                    bail!("{}: `auth` in [server] is a table: [server.auth]", self.at(value));
                };
                for (key, inner) in auth {
                    // `[server.auth]` drops the `auth_` of `--auth-issuer`.
                    let prefixed = format!("auth_{key}");
                    let arg = (self.auth.get_arguments())
                        .find(|arg| arg.get_id() == prefixed.as_str() || arg.get_id() == key.as_str());
                    let located = Spanned::new(value.span(), inner.clone());
                    let Some(arg) = arg else { return Err(self.misplaced(key, "[server.auth]", &located)) };
                    settings.push(self.setting(arg, key, &located)?);
                }
                continue;
            }
            match self.server.get_arguments().find(|arg| arg.get_id() == key.as_str()) {
                Some(arg) => settings.push(self.setting(arg, key, value)?),
                None => return Err(self.misplaced(key, "[server]", value)),
            }
        }
        Ok(settings)
    }

    /// `[defaults]` or one `[[component]]` (at byte `start` of the file).
    fn component(&self, origin: &str, start: Option<usize>, table: &Table) -> Result<ComponentEntry> {
        let mut entry = ComponentEntry {
            origin: origin.to_string(),
            path: None,
            hints: BTreeMap::new(),
            names_tools: table.contains_key("tools"),
            settings: Vec::new(),
        };
        let what = if start.is_some() { "a [[component]]" } else { "[defaults]" };
        for (key, value) in table {
            match key.as_str() {
                "path" | "oci" => {
                    let Value::String(text) = value.get_ref() else {
                        bail!("{}: `{key}` is a string", self.at(value));
                    };
                    if entry.path.is_some() {
                        bail!("{origin}: this [[component]] has both `path` and `oci`");
                    }
                    entry.path = Some(if key == "path" { self.base.join(text) } else { PathBuf::from(text) });
                }
                "annotations" => {
                    let json = to_json(value.get_ref());
                    entry.hints = serde_json::from_value(json)
                        .with_context(|| format!("{}: `annotations`: [component.annotations.TOOL] holds read_only, destructive, idempotent and open_world, each true or false", self.at(value)))?;
                }
                // `[component.config]` and `tool_scopes = { TOOL = [...] }`
                // are tables of what the flags write `KEY=VALUE`.
                "config" | "tool_scopes" => {
                    let id = if key == "config" { "config_vars" } else { "tool_scopes" };
                    let arg = self.component.get_arguments().find(|arg| arg.get_id() == id).expect("a flag");
                    let Value::Table(pairs) = value.get_ref() else {
                        bail!("{}: `{key}` is a table", self.at(value));
                    };
                    let mut values = Vec::new();
                    for (name, inner) in pairs {
                        match inner {
                            Value::Array(items) => values.extend(
                                items.iter().map(|item| Value::String(format!("{name}={}", scalar(item)))),
                            ),
                            other => values.push(Value::String(format!("{name}={}", scalar(other)))),
                        }
                    }
                    let located = Spanned::new(value.span(), Value::Array(values));
                    entry.settings.push(self.setting(arg, key, &located)?);
                }
                _ => match self.component.get_arguments().find(|arg| arg.get_id() == key.as_str()) {
                    Some(arg) => entry.settings.push(self.setting(arg, key, value)?),
                    None => return Err(self.misplaced(key, what, value)),
                },
            }
        }
        Ok(entry)
    }

    /// The arguments that set `arg` as `key = value` says, each value
    /// checked by the flag's own parser. A path is relative to the file.
    fn setting(&self, arg: &Arg, key: &str, value: &Spanned<Value>) -> Result<Setting> {
        let at = self.at(value);
        let id = arg.get_id().to_string();
        if matches!(arg.get_action(), ArgAction::SetTrue) {
            return match value.get_ref() {
                Value::Boolean(true) => Ok(Setting { id, argv: typed(arg, []) }),
                Value::Boolean(false) => Ok(Setting { id, argv: Vec::new() }),
                _ => bail!("{at}: `{key}` is true or false"),
            };
        }
        let texts: Vec<String> = match value.get_ref() {
            Value::Array(items) if matches!(arg.get_action(), ArgAction::Append) => {
                items.iter().map(scalar).collect()
            }
            Value::Array(_) => bail!("{at}: `{key}` takes one value, not a list"),
            Value::Table(_) => bail!("{at}: `{key}` takes a value, not a table"),
            scalar_value => vec![scalar(scalar_value)],
        };
        let is_path =
            matches!(arg.get_value_hint(), ValueHint::FilePath | ValueHint::DirPath | ValueHint::AnyPath);
        let mut values = Vec::with_capacity(texts.len());
        // The flag alone, parsing one value: clap's own check and message
        // (a value parser cannot be called from outside clap).
        let check = |value: &OsString| {
            let argv = std::iter::once(OsString::from("mcp-wasm-host")).chain(typed(arg, [value.clone()]));
            (Command::new("mcp-wasm-host").arg(arg.clone()).try_get_matches_from(argv))
                .map_err(|err| anyhow!("{at}: `{key}`: {}", clap_message(&err)))
        };
        for text in texts {
            let mut value = OsString::from(&text);
            // As written first, so `dirs = ["::x"]` is refused as on the
            // command line; then relative to the file (`base.join` keeps an
            // absolute path as it is).
            check(&value)?;
            if is_path {
                value = self.base.join(&text).into();
                check(&value)?;
            }
            values.push(value);
        }
        Ok(Setting { id, argv: typed(arg, values) })
    }
}

/// A TOML value as the command line would write it.
fn scalar(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}

/// A TOML value as JSON, for what is read with serde (the hints).
fn to_json(value: &Value) -> serde_json::Value {
    match value {
        Value::String(text) => text.clone().into(),
        Value::Integer(number) => (*number).into(),
        Value::Float(number) => {
            serde_json::Number::from_f64(*number).map_or(serde_json::Value::Null, Into::into)
        }
        Value::Boolean(flag) => (*flag).into(),
        Value::Datetime(time) => time.to_string().into(),
        Value::Array(items) => items.iter().map(to_json).collect(),
        Value::Table(table) => table.iter().map(|(key, value)| (key.clone(), to_json(value))).collect(),
    }
}
