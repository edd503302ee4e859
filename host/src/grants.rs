//! What the user granted the tools: directories (`--dir`), environment
//! variables (`--env`) and hosts for outgoing HTTP (`--allow-host`), parsed
//! and checked at start, and turned into each call's WASI context.
//!
//! Deny by default: without a grant a tool sees no files, no environment and
//! no network. Raw sockets and name lookups are never granted; the network
//! is reachable only through `wasi:http`, host by host.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context as _, Result, bail};
use wasmtime_wasi::{FsPerms, WasiCtx, WasiCtxBuilder};

use crate::guest_output::GuestOutput;

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
    /// The variables in an env file: `KEY=VALUE` lines; blank lines, `#`
    /// comments and an `export ` prefix are allowed, and a value in matching
    /// quotes loses them. A mistake names the file and line, never a value.
    pub fn from_file(path: &Path) -> Result<Vec<EnvGrant>> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read --env-file {}", path.display()))?;
        let mut grants = Vec::new();
        for (number, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let line = line.strip_prefix("export ").unwrap_or(line);
            let Some((key, value)) = line.split_once('=') else {
                bail!("--env-file {} line {}: expected KEY=VALUE", path.display(), number + 1);
            };
            let key = key.trim();
            let valid_key = !key.is_empty() && key.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
            if !valid_key {
                bail!("--env-file {} line {}: `{key}` is not a variable name", path.display(), number + 1);
            }
            let unquoted = [('"', '"'), ('\'', '\'')].iter().find_map(|(open, close)| {
                value.strip_prefix(*open).and_then(|rest| rest.strip_suffix(*close))
            });
            grants.push(EnvGrant { key: key.into(), value: unquoted.unwrap_or(value).into() });
        }
        Ok(grants)
    }
}

/// A host tools may send HTTP requests to (`--allow-host HOST[:PORT]`): a
/// name or an IP address, on one port or on any.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HostGrant {
    host: HostName,
    /// `None` allows every port.
    port: Option<u16>,
}

/// A host as it appears in a URI authority, normalised so that grants and
/// requests compare equal whenever they name the same host.
#[derive(Clone, Debug, PartialEq, Eq)]
enum HostName {
    /// A DNS name, lowercased (names are case-insensitive), without a trailing dot.
    Name(String),
    /// An IP address, compared as an address: `[::1]` and `[0:0::1]` are one host.
    Ip(IpAddr),
}

impl HostName {
    /// Reads a name, an IPv4 address or a bracketed IPv6 address; `None` for
    /// anything else (a request naming such a host is never allowed).
    fn parse(host: &str) -> Option<HostName> {
        if let Some(inner) = host.strip_prefix('[').and_then(|h| h.strip_suffix(']')) {
            return inner.parse::<Ipv6Addr>().ok().map(|ip| HostName::Ip(ip.into()));
        }
        if let Ok(ip) = host.parse::<Ipv4Addr>() {
            return Some(HostName::Ip(ip.into()));
        }
        let name = host.strip_suffix('.').unwrap_or(host).to_ascii_lowercase();
        let label_ok = |label: &str| {
            (1..=63).contains(&label.len())
                && label.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        };
        name.split('.').all(label_ok).then_some(HostName::Name(name))
    }
}

impl fmt::Display for HostName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HostName::Name(name) => f.write_str(name),
            HostName::Ip(IpAddr::V4(ip)) => write!(f, "{ip}"),
            HostName::Ip(IpAddr::V6(ip)) => write!(f, "[{ip}]"),
        }
    }
}

impl fmt::Display for HostGrant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.port {
            Some(port) => write!(f, "{}:{port}", self.host),
            None => write!(f, "{}", self.host),
        }
    }
}

impl std::str::FromStr for HostGrant {
    type Err = String;

    /// `HOST` (any port) or `HOST:PORT`; an IPv6 address goes in brackets.
    fn from_str(spec: &str) -> Result<Self, String> {
        const EXAMPLES: &str = "e.g. api.example.com, api.example.com:443, 127.0.0.1:8080 or [::1]:8080";
        if spec.contains("://") || spec.contains(['/', '@', '?', '#']) {
            return Err(format!("`{spec}`: give a host and optional port, not a URL ({EXAMPLES})"));
        }
        let (host, port) = if spec.starts_with('[') {
            // A bracketed host ends at `]`; only `:PORT` may follow.
            let bracketed = spec.find(']').map(|i| spec.split_at(i + 1));
            match bracketed {
                Some((host, "")) => (host, None),
                Some((host, rest)) if rest.starts_with(':') => (host, Some(&rest[1..])),
                _ => return Err(format!("`{spec}`: expected [IPV6] or [IPV6]:PORT")),
            }
        } else {
            match spec.split_once(':') {
                Some((_, port)) if port.contains(':') => {
                    return Err(format!("`{spec}`: write an IPv6 address in brackets ({EXAMPLES})"));
                }
                Some((host, port)) => (host, Some(port)),
                None => (spec, None),
            }
        };
        let port = match port {
            None => None,
            Some(port) => match port.parse::<u16>() {
                Ok(port) if port > 0 => Some(port),
                _ => return Err(format!("`{spec}`: `{port}` is not a port (1-65535)")),
            },
        };
        match HostName::parse(host) {
            Some(host) => Ok(HostGrant { host, port }),
            None => Err(format!("`{spec}`: `{host}` is not a host name or IP address ({EXAMPLES})")),
        }
    }
}

/// A granted directory, opened once when the host starts. Every call's
/// preopen is made from this handle, never from the path again, so nothing
/// a guest (or anyone) does to the path later redirects the grant.
#[derive(Debug)]
struct CapturedDir {
    grant: DirGrant,
    handle: std::fs::File,
}

impl CapturedDir {
    fn open(grant: &DirGrant) -> Result<CapturedDir> {
        let handle = std::fs::File::open(&grant.host).map_err(|err| {
            anyhow::anyhow!("--dir {}: not a directory the host can open ({err})", grant.host.display())
        })?;
        if !handle.metadata()?.is_dir() {
            bail!("--dir {}: not a directory", grant.host.display());
        }
        let captured = CapturedDir { grant: grant.clone(), handle };
        // Every call opens the grant through this path: if it cannot (no
        // /proc in a minimal container), say so now, not on every call.
        std::fs::read_dir(captured.reopen_path()).with_context(|| {
            format!(
                "--dir {}: cannot reopen it through {} (is /proc mounted?)",
                grant.host.display(),
                captured.reopen_path().display()
            )
        })?;
        Ok(captured)
    }

    /// A path that opens the captured directory itself: on Linux the
    /// handle's `/proc/self/fd` entry, which names the open directory, not
    /// whatever the original path names now.
    #[cfg(target_os = "linux")]
    fn reopen_path(&self) -> PathBuf {
        use std::os::fd::AsRawFd as _;
        PathBuf::from(format!("/proc/self/fd/{}", self.handle.as_raw_fd()))
    }

    /// Elsewhere, the path: the handle then only pins the directory, and a
    /// path replaced after start is followed (SECURITY.md says so).
    #[cfg(not(target_os = "linux"))]
    fn reopen_path(&self) -> PathBuf {
        self.grant.host.clone()
    }
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
}

/// Every `--allow-host` grant, and whether a grant by name may reach
/// private addresses. Cheap to clone: each call's store holds them.
#[derive(Clone, Debug, Default)]
pub struct HostGrants {
    grants: Arc<[HostGrant]>,
    /// `--allow-private-addresses`: a name may resolve to loopback, private,
    /// link-local and the like (see `outgoing_http`); off by default.
    allow_private_addresses: bool,
}

impl HostGrants {
    /// The hosts in `grants`, reached only at public addresses when granted
    /// by name.
    pub fn new(grants: Vec<HostGrant>) -> Self {
        HostGrants { grants: grants.into(), allow_private_addresses: false }
    }

    /// The same grants; with `allow`, a name may also resolve to private,
    /// loopback and link-local addresses.
    pub fn with_private_addresses(mut self, allow: bool) -> Self {
        self.allow_private_addresses = allow;
        self
    }

    /// Whether a grant by name may reach private addresses.
    pub fn allow_private_addresses(&self) -> bool {
        self.allow_private_addresses
    }

    /// Whether an outgoing request to `host` on `port` is granted. `host` is
    /// as written in the request's URI authority (a name, an IPv4 address or
    /// a bracketed IPv6 address); names compare case-insensitively.
    pub fn allows(&self, host: &str, port: u16) -> bool {
        let Some(host) = HostName::parse(host) else { return false };
        self.grants.iter().any(|grant| grant.host == host && grant.port.is_none_or(|p| p == port))
    }

    /// The grants, for logs.
    pub fn iter(&self) -> impl Iterator<Item = &HostGrant> {
        self.grants.iter()
    }
}

/// The address `host` (as in a URI authority) is, if it is an IP literal:
/// `127.0.0.1` or a bracketed IPv6 address. `None` for a name.
pub fn ip_literal(host: &str) -> Option<IpAddr> {
    match HostName::parse(host)? {
        HostName::Ip(ip) => Some(ip),
        HostName::Name(_) => None,
    }
}

impl Grants {
    /// These grants; directories are opened by [`Grants::capture`].
    pub fn new(dirs: Vec<DirGrant>, env: Vec<EnvGrant>, hosts: HostGrants) -> Self {
        Grants { dirs, env, hosts, captured: Arc::default() }
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

/// Refuses, at start, directory grants that would let a tool reach beyond
/// them or change what the host runs: a grant inside (or equal to, with
/// other permissions) a writable grant, across every component served, and
/// a writable grant holding a file the host trusts (`protected`: the
/// components, the `--config` file, the compile cache).
pub fn check_layout<'a>(grants: impl IntoIterator<Item = &'a DirGrant>, protected: &[PathBuf]) -> Result<()> {
    let dirs: Vec<(&DirGrant, PathBuf)> = grants
        .into_iter()
        .map(|grant| {
            let real = grant
                .host
                .canonicalize()
                .with_context(|| format!("--dir {}: cannot resolve it", grant.host.display()))?;
            Ok((grant, real))
        })
        .collect::<Result<_>>()?;
    for (outer, outer_real) in dirs.iter().filter(|(grant, _)| !grant.read_only) {
        for (inner, inner_real) in &dirs {
            let nested = inner_real != outer_real && inner_real.starts_with(outer_real);
            let same_but_other = inner_real == outer_real && inner.read_only;
            if nested || same_but_other {
                bail!(
                    "--dir {} is inside the writable grant --dir {}: a tool could rewrite it through the \
                     outer grant. Grant only the outer directory, or make the outer one read-only (:ro)",
                    inner.host.display(),
                    outer.host.display()
                );
            }
        }
        for file in protected {
            if real_path(file).starts_with(outer_real) {
                bail!(
                    "--dir {} is writable and holds {}, which the host trusts: a tool could change what \
                     the host runs. Grant a directory that does not contain it, or make the grant read-only \
                     (:ro); for the compile cache, --cache-dir DIR elsewhere or --no-cache also do",
                    outer.host.display(),
                    file.display()
                );
            }
        }
    }
    Ok(())
}

/// `path` with symlinks resolved, or, for a path that does not exist yet
/// (a cache directory not made yet), its nearest existing ancestor resolved
/// and the rest appended.
fn real_path(path: &Path) -> PathBuf {
    let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let mut rest = Vec::new();
    let mut at = absolute.as_path();
    loop {
        if let Ok(real) = at.canonicalize() {
            return rest.iter().rev().fold(real, |path, part| path.join(part));
        }
        match (at.parent(), at.file_name()) {
            (Some(parent), Some(name)) => {
                rest.push(name.to_os_string());
                at = parent;
            }
            _ => return absolute,
        }
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

    fn grant(host: &Path, read_only: bool) -> DirGrant {
        DirGrant { host: host.to_path_buf(), guest: "/g".into(), read_only }
    }

    #[test]
    fn grants_nested_in_a_writable_grant_are_refused() {
        let root = tempfile::tempdir().unwrap();
        let (rw, sub) = (root.path().join("rw"), root.path().join("rw/sub"));
        std::fs::create_dir_all(&sub).unwrap();
        let nested = [grant(&rw, false), grant(&sub, true)];
        let err = check_layout(&nested, &[]).unwrap_err().to_string();
        assert!(err.contains("inside the writable grant"), "{err}");
        // Inside a read-only grant is fine, and so is the same grant twice
        // (two components of one --config sharing [defaults]).
        assert!(check_layout(&[grant(&rw, true), grant(&sub, false)], &[]).is_ok());
        assert!(check_layout(&[grant(&rw, false), grant(&rw, false)], &[]).is_ok());
        assert!(check_layout(&[grant(&rw, false), grant(&rw, true)], &[]).is_err());
    }

    #[test]
    fn a_writable_grant_may_not_hold_what_the_host_trusts() {
        let root = tempfile::tempdir().unwrap();
        let cache = root.path().join("not-yet/cache");
        let err =
            check_layout(&[grant(root.path(), false)], std::slice::from_ref(&cache)).unwrap_err().to_string();
        assert!(err.contains("which the host trusts"), "{err}");
        assert!(check_layout(&[grant(root.path(), true)], &[cache]).is_ok());
    }

    fn grants(specs: &[&str]) -> HostGrants {
        HostGrants::new(specs.iter().map(|spec| spec.parse().unwrap()).collect())
    }

    #[test]
    fn a_host_grant_without_a_port_allows_every_port() {
        let grants = grants(&["api.example.com"]);
        assert!(grants.allows("api.example.com", 443));
        assert!(grants.allows("api.example.com", 8080));
        assert!(!grants.allows("example.com", 443));
        assert!(!grants.allows("evil.api.example.com", 443), "no implicit subdomains");
        assert!(!grants.allows("api.example.com.evil.net", 443));
    }

    #[test]
    fn a_host_grant_with_a_port_allows_only_that_port() {
        let grants = grants(&["127.0.0.1:8080"]);
        assert!(grants.allows("127.0.0.1", 8080));
        assert!(!grants.allows("127.0.0.1", 8081));
        assert!(!grants.allows("127.0.0.2", 8080));
        assert!(!grants.allows("localhost", 8080), "a name is not its address");
    }

    #[test]
    fn host_names_match_case_insensitively_and_ignore_a_trailing_dot() {
        let grants = grants(&["API.Example.com:443"]);
        assert!(grants.allows("api.example.COM", 443));
        assert!(grants.allows("api.example.com.", 443));
    }

    #[test]
    fn ipv6_grants_are_written_in_brackets_and_compared_as_addresses() {
        let grants = grants(&["[::1]:8080", "[2001:DB8::1]"]);
        assert!(grants.allows("[::1]", 8080));
        assert!(grants.allows("[0:0:0:0:0:0:0:1]", 8080));
        assert!(!grants.allows("[::1]", 80));
        assert!(grants.allows("[2001:db8::1]", 1));
        assert!(!grants.allows("::1", 8080), "a request authority always brackets IPv6");
    }

    #[test]
    fn ip_literals_are_told_from_names() {
        assert_eq!(ip_literal("127.0.0.1"), Some(Ipv4Addr::LOCALHOST.into()));
        assert_eq!(ip_literal("[::1]"), Some(Ipv6Addr::LOCALHOST.into()));
        assert_eq!(ip_literal("localhost"), None);
        assert_eq!(ip_literal("::1"), None, "a URI authority brackets IPv6");
    }

    #[test]
    fn no_host_grants_allow_nothing() {
        let none = HostGrants::default();
        assert!(!none.allows("localhost", 80));
        assert!(!none.allows("127.0.0.1", 80));
        assert!(!grants(&["example.com"]).allows("", 80));
    }

    #[test]
    fn malformed_host_grants_are_refused_with_the_reason() {
        for (spec, says) in [
            ("", "not a host name"),
            ("https://example.com", "not a URL"),
            ("example.com/path", "not a URL"),
            ("user@example.com", "not a URL"),
            ("example.com:", "not a port"),
            ("example.com:0", "not a port"),
            ("example.com:65536", "not a port"),
            ("example.com:http", "not a port"),
            ("::1", "in brackets"),
            ("::1:8080", "in brackets"),
            ("[::1", "expected [IPV6]"),
            ("[::1]8080", "expected [IPV6]"),
            ("[example.com]:80", "not a host name"),
            ("exa mple.com", "not a host name"),
            ("a..b", "not a host name"),
        ] {
            let err = spec.parse::<HostGrant>().unwrap_err();
            assert!(err.contains(says), "{spec:?}: {err}");
        }
    }

    #[test]
    fn host_grants_display_as_written_but_normalised() {
        for (spec, shown) in
            [("Example.COM", "example.com"), ("10.0.0.1:80", "10.0.0.1:80"), ("[0::1]:8080", "[::1]:8080")]
        {
            assert_eq!(spec.parse::<HostGrant>().unwrap().to_string(), shown);
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
