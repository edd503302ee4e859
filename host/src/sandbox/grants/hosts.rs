//! `--allow-host`: the hosts tools may reach over `wasi:http`, by name or
//! address, on one port or any.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::sync::Arc;

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

#[cfg(test)]
mod tests {
    use super::*;

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
}
