//! What the user granted the tools: directories (`--dir`), environment
//! variables (`--env`) and hosts for outgoing HTTP (`--allow-host`), parsed
//! and checked at start, and turned into each call's WASI context.
//!
//! Deny by default: without a grant a tool sees no files, no environment and
//! no network. Raw sockets and name lookups are never granted; the network
//! is reachable only through `wasi:http`, host by host.

mod dirs;
mod hosts;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context as _, Result, bail};
use wasmtime_wasi::{FsPerms, WasiCtx, WasiCtxBuilder};

use super::ConfigVars;
use super::guest_output::GuestOutput;
use dirs::CapturedDir;

pub use dirs::check_layout;
pub use hosts::{HostGrant, HostGrants, ip_literal};

/// A host directory the user made visible to tools (`--dir HOST[::GUEST][:ro]`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DirGrant {
    /// The directory on the host.
    pub host: PathBuf,
    /// Where the guest sees it.
    pub guest: String,
    /// Whether the guest may only read.
    pub read_only: bool,
}

impl std::str::FromStr for DirGrant {
    type Err = String;

    /// `HOST`, `HOST::GUEST`, either with a `:ro` suffix for read-only.
    /// Anything else with a `:` in the guest path is refused rather than
    /// read as a path: `/d::/mnt:RO` must not become a writable grant at
    /// `/mnt:RO`.
    fn from_str(whole: &str) -> Result<Self, String> {
        const FORM: &str =
            "expected HOST[::GUEST][:ro], with `:ro` (lowercase) at the very end for read-only";
        let (spec, read_only) = match whole.strip_suffix(":ro") {
            Some(rest) => (rest, true),
            None => (whole, false),
        };
        let (host, guest) = match spec.split_once("::") {
            Some((host, guest)) => (host, guest.to_string()),
            None => (spec, spec.to_string()),
        };
        if host.is_empty() || guest.is_empty() {
            return Err(format!("`{whole}`: {FORM}"));
        }
        if guest.contains(':') {
            return Err(format!("`{whole}`: a guest path cannot contain `:` (`{guest}`); {FORM}"));
        }
        Ok(DirGrant { host: PathBuf::from(host), guest, read_only })
    }
}

/// An environment variable the user made visible to tools (`--env KEY[=VALUE]`;
/// a bare `KEY` passes the host's value through).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EnvGrant {
    /// The variable's name.
    pub key: String,
    /// Its value inside the sandbox.
    pub value: String,
}

impl std::str::FromStr for EnvGrant {
    type Err = String;

    fn from_str(spec: &str) -> Result<Self, String> {
        match spec.split_once('=') {
            Some(("", _)) => Err(format!("`{spec}`: empty variable name")),
            Some((key, value)) => Ok(EnvGrant { key: key.into(), value: value.into() }),
            None => match std::env::var(spec) {
                Ok(value) => Ok(EnvGrant { key: spec.into(), value }),
                Err(_) => Err(format!("`{spec}` is not set in the host environment")),
            },
        }
    }
}

impl EnvGrant {
    /// The variables in an env file (`--env-file`; see [`key_values`]).
    pub fn from_file(path: &Path) -> Result<Vec<EnvGrant>> {
        let is_name = |key: &str| key.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
        let pairs = key_values(path, "--env-file", is_name)?;
        Ok(pairs.into_iter().map(|(key, value)| EnvGrant { key, value }).collect())
    }
}

/// A `KEY=VALUE` setting given on the command line (`--config-var`), for
/// `wasi:config`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigVar {
    /// The key.
    pub key: String,
    /// Its value.
    pub value: String,
}

impl std::str::FromStr for ConfigVar {
    type Err = String;

    fn from_str(spec: &str) -> Result<Self, String> {
        match spec.split_once('=') {
            Some((key, value)) if is_config_key(key) => {
                Ok(ConfigVar { key: key.into(), value: value.into() })
            }
            _ => Err(format!(
                "`{}`: expected KEY=VALUE, the key of A-Z a-z 0-9 _ - .",
                crate::log_text::escaped(spec)
            )),
        }
    }
}

impl ConfigVar {
    /// The settings in a file (`--config-var-file`; see [`key_values`]).
    pub fn from_file(path: &Path) -> Result<Vec<ConfigVar>> {
        let pairs = key_values(path, "--config-var-file", is_config_key)?;
        Ok(pairs.into_iter().map(|(key, value)| ConfigVar { key, value }).collect())
    }
}

fn is_config_key(key: &str) -> bool {
    !key.is_empty() && key.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'))
}

/// The `KEY=VALUE` lines of a file given by `flag`, which keeps secrets
/// out of the process list: blank lines, `#` comments and an `export `
/// prefix are allowed, and a value in matching quotes loses them. The file
/// is read bounded ([`crate::secret_file`]). A mistake names the file and
/// line, never what the line holds: a line without `=` may be a bare
/// secret, and in a secret's line everything before its first `=` (base64
/// ends in `=`) may be most of it.
fn key_values(path: &Path, flag: &str, valid_key: impl Fn(&str) -> bool) -> Result<Vec<(String, String)>> {
    let text = crate::secret_file::read(path, flag, crate::secret_file::MAX_SECRETS_FILE)?;
    let mut pairs = Vec::new();
    for (number, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let line = line.strip_prefix("export ").unwrap_or(line);
        let Some((key, value)) = line.split_once('=') else {
            bail!("{flag} {} line {}: expected KEY=VALUE", path.display(), number + 1);
        };
        let key = key.trim();
        if key.is_empty() || !valid_key(key) {
            bail!("{flag} {} line {}: what comes before `=` is not a valid name", path.display(), number + 1);
        }
        let unquoted = [('"', '"'), ('\'', '\'')]
            .iter()
            .find_map(|(open, close)| value.strip_prefix(*open).and_then(|rest| rest.strip_suffix(*close)));
        pairs.push((key.to_string(), unquoted.unwrap_or(value).to_string()));
    }
    Ok(pairs)
}

/// Everything the user granted to the tools, applied to every call.
#[derive(Clone, Debug, Default)]
pub struct Grants {
    /// Directories tools may see.
    pub dirs: Vec<DirGrant>,
    /// The directories, opened at start by [`Grants::capture`].
    captured: Arc<[CapturedDir]>,
    /// Environment variables tools may see.
    pub env: Vec<EnvGrant>,
    /// Hosts tools may reach over `wasi:http`; none means no network at all.
    pub hosts: HostGrants,
    /// What `wasi:config/store` answers.
    pub config: ConfigVars,
}

impl Grants {
    /// These grants; directories are opened by [`Grants::capture`].
    pub fn new(dirs: Vec<DirGrant>, env: Vec<EnvGrant>, hosts: HostGrants) -> Self {
        Grants { dirs, env, hosts, captured: Arc::default(), config: ConfigVars::default() }
    }

    /// The same grants, with `config` for `wasi:config/store`.
    pub fn with_config(self, config: ConfigVars) -> Self {
        Grants { config, ..self }
    }

    /// Opens every granted directory now, once: calls get these handles,
    /// so a typo fails at start and a path changed later changes nothing.
    pub fn capture(&mut self) -> Result<()> {
        self.captured = self.dirs.iter().map(CapturedDir::open).collect::<Result<Vec<_>>>()?.into();
        Ok(())
    }

    /// A fresh WASI context holding exactly these grants, writing the
    /// guest's stdout and stderr to `output`.
    pub(crate) fn wasi_ctx(&self, output: &GuestOutput) -> Result<WasiCtx> {
        let mut builder = WasiCtxBuilder::new();
        // Guest output must never reach stdout: that is the protocol stream.
        // It goes to the host's log, capped and tagged (`guest_output`).
        // No raw sockets and no name lookups, whatever is granted: the network
        // is reachable only through wasi:http, host by host (`outgoing_http`).
        builder
            .stdout(output.stdout())
            .stderr(output.stderr())
            .allow_tcp(false)
            .allow_udp(false)
            .allow_ip_name_lookup(false);
        for env in &self.env {
            builder.env(&env.key, &env.value);
        }
        assert_eq!(self.captured.len(), self.dirs.len(), "directory grants are captured at start");
        for dir in self.captured.iter() {
            let grant = &dir.grant;
            let perms = if grant.read_only { FsPerms::ReadOnly } else { FsPerms::ReadWrite };
            builder
                .preopened_dir(dir.reopen_path(), &grant.guest, perms)
                .map_err(anyhow::Error::from)
                .with_context(|| format!("cannot open --dir {}", grant.host.display()))?;
        }
        Ok(builder.build())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dir_grants_parse_host_guest_and_read_only() {
        let grant: DirGrant = "/data::/mnt:ro".parse().unwrap();
        assert_eq!(grant, DirGrant { host: "/data".into(), guest: "/mnt".into(), read_only: true });
        let grant: DirGrant = "/data".parse().unwrap();
        assert_eq!(grant.guest, "/data");
        assert!(!grant.read_only);
        assert!("::/mnt".parse::<DirGrant>().is_err());
    }

    #[test]
    fn dir_grants_that_look_like_typos_are_refused_not_widened() {
        for spec in ["/d::/mnt:RO", "/d::/mnt:Ro", "/d:RO", "/d::/mnt:rw", "/d::C:/x"] {
            let err = spec.parse::<DirGrant>().unwrap_err();
            assert!(err.contains("cannot contain `:`") && err.contains(":ro"), "{spec}: {err}");
        }
    }

    #[test]
    fn env_files_hold_secrets_out_of_the_process_list() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("secrets.env");
        std::fs::write(&path, "# tokens\nAPI_TOKEN=abc=def\n\nexport MODE=\"fast\"\n").unwrap();
        let grants = EnvGrant::from_file(&path).unwrap();
        assert_eq!(grants[0], EnvGrant { key: "API_TOKEN".into(), value: "abc=def".into() });
        assert_eq!(grants[1], EnvGrant { key: "MODE".into(), value: "fast".into() });
        std::fs::write(&path, "OK=1\nnot a line\n").unwrap();
        let err = EnvGrant::from_file(&path).unwrap_err().to_string();
        assert!(err.contains("line 2"), "{err}");
    }

    #[test]
    fn env_grants_take_a_value_or_pass_the_hosts_through() {
        let grant: EnvGrant = "MODE=fast".parse().unwrap();
        assert_eq!(grant, EnvGrant { key: "MODE".into(), value: "fast".into() });
        assert!("MCP_WASM_HOST_SURELY_UNSET_VAR".parse::<EnvGrant>().is_err());
        assert!("=x".parse::<EnvGrant>().is_err());
    }
}
