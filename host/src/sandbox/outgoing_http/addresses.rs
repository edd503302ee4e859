//! Which IP addresses a request granted by name may connect to.
//!
//! A grant by name (`--allow-host api.example.com`) is a grant to a service
//! out on the network, not to whatever the name resolves to at the time: a
//! tool author who controls the name's DNS could point it at this machine
//! (loopback), the LAN, or a cloud metadata service (`169.254.169.254`). So
//! the host resolves a granted name itself, refuses the addresses classified
//! here unless the user opted in with `--allow-private-addresses`, and
//! connects to an address it checked. A grant of an IP literal
//! (`--allow-host 127.0.0.1:8080`) names its destination and is not
//! classified at all.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// A kind of address a name grant does not reach unless the user opted in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Restricted {
    /// `127.0.0.0/8`, `::1`: this machine.
    Loopback,
    /// RFC 1918 (`10/8`, `172.16/12`, `192.168/16`), IPv6 unique local
    /// (`fc00::/7`) and the deprecated site-local (`fec0::/10`).
    Private,
    /// `169.254/16` (cloud metadata services live here), `fe80::/10`.
    LinkLocal,
    /// Carrier-grade NAT, `100.64/10`.
    SharedNat,
    /// `224/4`, `ff00::/8`.
    Multicast,
    /// `0.0.0.0`, `::` (connecting to it reaches this machine).
    Unspecified,
    /// `255.255.255.255`.
    Broadcast,
    /// `0.0.0.0/8`, "this network".
    ThisNetwork,
}

impl fmt::Display for Restricted {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Restricted::Loopback => "loopback",
            Restricted::Private => "private network",
            Restricted::LinkLocal => "link-local",
            Restricted::SharedNat => "shared (carrier-grade NAT)",
            Restricted::Multicast => "multicast",
            Restricted::Unspecified => "unspecified",
            Restricted::Broadcast => "broadcast",
            Restricted::ThisNetwork => "\"this network\" (0.0.0.0/8)",
        })
    }
}

/// Why `ip` is not reachable through a name grant, or `None` if it is.
/// IPv6 forms that carry an IPv4 address (mapped, compatible, NAT64, 6to4)
/// are judged by that IPv4 address.
pub fn restriction(ip: IpAddr) -> Option<Restricted> {
    match ip {
        IpAddr::V4(ip) => restriction_v4(ip),
        IpAddr::V6(ip) => restriction_v6(ip),
    }
}

fn restriction_v4(ip: Ipv4Addr) -> Option<Restricted> {
    let [a, b, ..] = ip.octets();
    Some(match () {
        () if ip.is_unspecified() => Restricted::Unspecified,
        () if a == 0 => Restricted::ThisNetwork,
        () if ip.is_loopback() => Restricted::Loopback,
        () if ip.is_private() => Restricted::Private,
        () if ip.is_link_local() => Restricted::LinkLocal,
        () if a == 100 && (64..128).contains(&b) => Restricted::SharedNat,
        () if ip.is_multicast() => Restricted::Multicast,
        () if ip.is_broadcast() => Restricted::Broadcast,
        () => return None,
    })
}

fn restriction_v6(ip: Ipv6Addr) -> Option<Restricted> {
    if ip.is_unspecified() {
        return Some(Restricted::Unspecified);
    }
    if ip.is_loopback() {
        return Some(Restricted::Loopback);
    }
    if let Some(v4) = embedded_v4(ip) {
        return restriction_v4(v4);
    }
    let first = ip.segments()[0];
    Some(match () {
        () if first & 0xfe00 == 0xfc00 => Restricted::Private,
        () if first & 0xffc0 == 0xfec0 => Restricted::Private,
        () if first & 0xffc0 == 0xfe80 => Restricted::LinkLocal,
        () if first & 0xff00 == 0xff00 => Restricted::Multicast,
        () => return None,
    })
}

/// The IPv4 address an IPv6 address stands for, in the forms that route to
/// it: IPv4-mapped (`::ffff:a.b.c.d`), IPv4-compatible (`::a.b.c.d`), the
/// NAT64 well-known prefix (`64:ff9b::a.b.c.d`) and 6to4 (`2002:AABB:CCDD::`).
fn embedded_v4(ip: Ipv6Addr) -> Option<Ipv4Addr> {
    let s = ip.segments();
    let low = Ipv4Addr::new((s[6] >> 8) as u8, s[6] as u8, (s[7] >> 8) as u8, s[7] as u8);
    match s {
        [0, 0, 0, 0, 0, 0xffff, _, _] | [0, 0, 0, 0, 0, 0, _, _] => Some(low),
        [0x64, 0xff9b, 0, 0, 0, 0, _, _] => Some(low),
        [0x2002, hi, lo, ..] => Some(Ipv4Addr::new((hi >> 8) as u8, hi as u8, (lo >> 8) as u8, lo as u8)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn class(ip: &str) -> Option<Restricted> {
        restriction(ip.parse().unwrap())
    }

    #[test]
    fn public_addresses_are_reachable() {
        for ip in
            ["93.184.215.14", "8.8.8.8", "100.63.255.255", "100.128.0.0", "172.32.0.1", "2606:4700::1111"]
        {
            assert_eq!(class(ip), None, "{ip}");
        }
    }

    #[test]
    fn each_restricted_ipv4_range_is_named() {
        use Restricted::*;
        for (ip, expected) in [
            ("127.0.0.1", Loopback),
            ("127.255.255.254", Loopback),
            ("10.0.0.1", Private),
            ("172.16.0.1", Private),
            ("172.31.255.255", Private),
            ("192.168.1.1", Private),
            ("169.254.169.254", LinkLocal),
            ("100.64.0.1", SharedNat),
            ("100.127.255.255", SharedNat),
            ("224.0.0.1", Multicast),
            ("239.255.255.250", Multicast),
            ("0.0.0.0", Unspecified),
            ("0.1.2.3", ThisNetwork),
            ("255.255.255.255", Broadcast),
        ] {
            assert_eq!(class(ip), Some(expected), "{ip}");
        }
    }

    #[test]
    fn each_restricted_ipv6_range_is_named() {
        use Restricted::*;
        for (ip, expected) in [
            ("::1", Loopback),
            ("::", Unspecified),
            ("fc00::1", Private),
            ("fd12:3456::1", Private),
            ("fec0::1", Private),
            ("fe80::1", LinkLocal),
            ("febf::1", LinkLocal),
            ("ff02::1", Multicast),
        ] {
            assert_eq!(class(ip), Some(expected), "{ip}");
        }
    }

    #[test]
    fn ipv6_forms_of_an_ipv4_address_are_judged_by_it() {
        use Restricted::*;
        for (ip, expected) in [
            ("::ffff:127.0.0.1", Some(Loopback)),
            ("::ffff:7f00:1", Some(Loopback)),
            ("::ffff:169.254.169.254", Some(LinkLocal)),
            ("::ffff:10.1.2.3", Some(Private)),
            ("::ffff:0.0.0.0", Some(Unspecified)),
            ("::127.0.0.1", Some(Loopback)),
            ("::192.168.0.1", Some(Private)),
            ("64:ff9b::127.0.0.1", Some(Loopback)),
            ("64:ff9b::a9fe:a9fe", Some(LinkLocal)),
            ("2002:7f00:1::", Some(Loopback)),
            ("2002:a00:1::1", Some(Private)),
            ("::ffff:8.8.8.8", None),
            ("64:ff9b::8.8.8.8", None),
            ("2002:808:808::1", None),
        ] {
            assert_eq!(class(ip), expected, "{ip}");
        }
    }
}
