//! Which IP addresses `http-fetch` may connect to.
//!
//! Only public unicast addresses pass by default. Refused: loopback, private, link-local,
//! shared (CGNAT), multicast, broadcast, unspecified, reserved, documentation and benchmarking
//! ranges, IETF protocol assignments, cloud metadata addresses, IPv6 unique-local and
//! site-local, and the IPv6 forms that carry an IPv4 address (IPv4-mapped, IPv4-compatible,
//! NAT64, 6to4, Teredo) whenever the carried address would be refused.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// What an address is, for the policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Class {
    /// A public unicast address.
    Public,
    /// `127.0.0.0/8`, `::1` (or `::ffff:127.x.y.z`): allowed only when the policy says so.
    Loopback,
    /// Never connected to; the reason names the range.
    Forbidden(&'static str),
}

/// Cloud metadata endpoints, named before their ranges for a clearer error.
const METADATA: &[IpAddr] = &[
    IpAddr::V4(Ipv4Addr::new(169, 254, 169, 254)),
    IpAddr::V4(Ipv4Addr::new(169, 254, 170, 2)),
    IpAddr::V4(Ipv4Addr::new(100, 100, 100, 200)),
    IpAddr::V4(Ipv4Addr::new(192, 0, 0, 192)),
    IpAddr::V6(Ipv6Addr::new(0xfd00, 0x0ec2, 0, 0, 0, 0, 0, 0x0254)),
];

/// Classifies `ip`.
pub(crate) fn classify(ip: IpAddr) -> Class {
    if METADATA.contains(&ip) {
        return Class::Forbidden("a cloud metadata address");
    }
    match ip {
        IpAddr::V4(v4) => classify_v4(v4),
        IpAddr::V6(v6) => classify_v6(v6),
    }
}

fn in_v4(ip: Ipv4Addr, net: [u8; 4], prefix: u32) -> bool {
    let mask = if prefix == 0 {
        0
    } else {
        u32::MAX << (32 - prefix)
    };
    (u32::from(ip) & mask) == (u32::from(Ipv4Addr::from(net)) & mask)
}

fn classify_v4(ip: Ipv4Addr) -> Class {
    const RANGES: &[([u8; 4], u32, &str)] = &[
        ([0, 0, 0, 0], 8, "\"this network\" (0.0.0.0/8)"),
        ([10, 0, 0, 0], 8, "a private address (10.0.0.0/8)"),
        (
            [100, 64, 0, 0],
            10,
            "a shared CGNAT address (100.64.0.0/10)",
        ),
        (
            [169, 254, 0, 0],
            16,
            "a link-local address (169.254.0.0/16)",
        ),
        ([172, 16, 0, 0], 12, "a private address (172.16.0.0/12)"),
        (
            [192, 0, 0, 0],
            24,
            "an IETF protocol assignment (192.0.0.0/24)",
        ),
        ([192, 0, 2, 0], 24, "a documentation address (192.0.2.0/24)"),
        (
            [192, 88, 99, 0],
            24,
            "a 6to4 relay address (192.88.99.0/24)",
        ),
        ([192, 168, 0, 0], 16, "a private address (192.168.0.0/16)"),
        (
            [198, 18, 0, 0],
            15,
            "a benchmarking address (198.18.0.0/15)",
        ),
        (
            [198, 51, 100, 0],
            24,
            "a documentation address (198.51.100.0/24)",
        ),
        (
            [203, 0, 113, 0],
            24,
            "a documentation address (203.0.113.0/24)",
        ),
        ([224, 0, 0, 0], 4, "a multicast address (224.0.0.0/4)"),
        ([240, 0, 0, 0], 4, "a reserved address (240.0.0.0/4)"),
    ];
    if ip.is_loopback() {
        return Class::Loopback;
    }
    for (net, prefix, why) in RANGES {
        if in_v4(ip, *net, *prefix) {
            return Class::Forbidden(why);
        }
    }
    Class::Public
}

fn classify_v6(ip: Ipv6Addr) -> Class {
    let s = ip.segments();
    if ip.is_unspecified() {
        return Class::Forbidden("the unspecified address (::)");
    }
    if ip.is_loopback() {
        return Class::Loopback;
    }
    if let Some(v4) = ip.to_ipv4_mapped() {
        // `::ffff:a.b.c.d` is a.b.c.d.
        return match classify(IpAddr::V4(v4)) {
            Class::Forbidden(_) => Class::Forbidden("an IPv4-mapped form of a refused address"),
            other => other,
        };
    }
    let embedded = |why: &'static str, v4: Ipv4Addr| match classify(IpAddr::V4(v4)) {
        Class::Public => Class::Public,
        _ => Class::Forbidden(why),
    };
    let v4_at = |hi: u16, lo: u16| Ipv4Addr::from((u32::from(hi) << 16) | u32::from(lo));
    match s {
        // IPv4-compatible `::a.b.c.d` (deprecated): nothing legitimate uses it.
        [0, 0, 0, 0, 0, 0, _, _] => Class::Forbidden("an IPv4-compatible address (::/96)"),
        [0x64, 0xff9b, 0, 0, 0, 0, hi, lo] => embedded(
            "a NAT64 form of a refused address (64:ff9b::/96)",
            v4_at(hi, lo),
        ),
        [0x64, 0xff9b, 1, ..] => Class::Forbidden("a local-use NAT64 address (64:ff9b:1::/48)"),
        [0x2002, hi, lo, ..] => embedded(
            "a 6to4 form of a refused address (2002::/16)",
            v4_at(hi, lo),
        ),
        [0x2001, 0, ..] => Class::Forbidden("a Teredo address (2001::/32)"),
        [0x2001, 0x0db8, ..] => Class::Forbidden("a documentation address (2001:db8::/32)"),
        [0x2001, x, ..] if x < 0x0200 => {
            Class::Forbidden("an IETF protocol assignment (2001::/23)")
        }
        [0x0100, 0, 0, 0, ..] => Class::Forbidden("a discard-only address (100::/64)"),
        [x, ..] if x & 0xfff0 == 0x3ff0 => Class::Forbidden("a documentation address (3fff::/20)"),
        [x, ..] if x & 0xfe00 == 0xfc00 => Class::Forbidden("a unique-local address (fc00::/7)"),
        [x, ..] if x & 0xffc0 == 0xfe80 => Class::Forbidden("a link-local address (fe80::/10)"),
        [x, ..] if x & 0xffc0 == 0xfec0 => Class::Forbidden("a site-local address (fec0::/10)"),
        [x, ..] if x & 0xff00 == 0xff00 => Class::Forbidden("a multicast address (ff00::/8)"),
        // Only 2000::/3 is global unicast today.
        [x, ..] if x & 0xe000 != 0x2000 => Class::Forbidden("a reserved IPv6 address"),
        _ => Class::Public,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The class of the address `s`; a string that is not an address fails the test rather
    /// than being checked as some other address.
    fn class(s: &str) -> Class {
        let ip: IpAddr = s
            .parse()
            .unwrap_or_else(|e| panic!("`{s}` is not an IP address: {e}"));
        classify(ip)
    }

    #[test]
    #[should_panic(expected = "is not an IP address")]
    fn the_class_helper_refuses_a_string_that_is_not_an_address() {
        // A typo in one of the lists below must fail the test, not pass as `0.0.0.0`.
        let _ = class("10.1.2.3x");
    }

    #[test]
    fn public_addresses_pass() {
        for ip in [
            "93.184.216.34",
            "8.8.8.8",
            "1.1.1.1",
            "2606:4700::1111",
            "64:ff9b::808:808",
            "2002:0808:0808::1",
        ] {
            assert_eq!(class(ip), Class::Public, "{ip}");
        }
    }

    #[test]
    fn loopback_is_its_own_class() {
        for ip in ["127.0.0.1", "127.255.0.9", "::1", "::ffff:127.0.0.1"] {
            assert_eq!(class(ip), Class::Loopback, "{ip}");
        }
    }

    #[test]
    fn refused_ranges() {
        for ip in [
            "0.0.0.0",
            "10.1.2.3",
            "100.64.0.1",
            "169.254.169.254",
            "172.16.0.1",
            "172.31.255.255",
            "192.0.0.192",
            "192.0.2.1",
            "192.168.1.1",
            "198.18.0.1",
            "203.0.113.5",
            "224.0.0.1",
            "239.255.255.250",
            "240.0.0.1",
            "255.255.255.255",
            "100.100.100.200",
            "::",
            "::ffff:10.0.0.1",
            "::ffff:169.254.169.254",
            "::127.0.0.1",
            "64:ff9b::7f00:1",
            "64:ff9b::a9fe:a9fe",
            "64:ff9b:1::1",
            "2002:7f00:0001::",
            "2002:a9fe:a9fe::1",
            "2001::1",
            "2001:db8::1",
            "fc00::1",
            "fd00:ec2::254",
            "fe80::1",
            "fec0::1",
            "ff02::1",
            "100::1",
            "3fff::1",
            "::2",
        ] {
            assert!(
                matches!(class(ip), Class::Forbidden(_)),
                "{ip} should be refused"
            );
        }
    }
}
