//! Which addresses are internal, judged by class rather than by spelling.
//!
//! An IPv6 address can carry an IPv4 address inside it (IPv4-mapped and -compatible, SIIT, NAT64,
//! 6to4); a packet to it may end up at that IPv4 address, so such an address is judged by the IPv4
//! address it carries. Every other IPv6 address is public only inside global unicast (`2000::/3`)
//! and outside the special ranges carved from it: a list of what *is* allowed cannot miss a
//! reserved range the way a list of what is forbidden did (site-local, the local-use NAT64 prefix
//! and Teredo all passed once).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// What an address is, for the callback check.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Class {
    /// Reachable on the internet.
    Public,
    /// Loopback, private, link-local, reserved, documentation, multicast and the like.
    Internal,
    /// An IPv6 address carrying this IPv4 address, to be judged by it.
    Carries(Ipv4Addr),
}

/// `ip`'s class.
pub(super) fn class(ip: IpAddr) -> Class {
    match ip {
        IpAddr::V4(v4) => v4_class(v4),
        IpAddr::V6(v6) => match embedded_v4(v6) {
            Some(v4) => Class::Carries(v4),
            None if v6_is_public(v6) => Class::Public,
            None => Class::Internal,
        },
    }
}

/// Is `ip` internal, judging an IPv4 address carried in IPv6 by itself?
pub(super) fn is_internal(ip: IpAddr) -> bool {
    match class(ip) {
        Class::Public => false,
        Class::Internal => true,
        Class::Carries(v4) => v4_class(v4) == Class::Internal,
    }
}

/// The IPv4 address an IPv6 address stands for or tunnels to, when it has one.
pub(super) fn embedded_v4(v6: Ipv6Addr) -> Option<Ipv4Addr> {
    let bits = u128::from(v6);
    let low32 = Ipv4Addr::from((bits & 0xffff_ffff) as u32);
    let carrying_low32: [(u128, u8); 4] = [
        // IPv4-compatible (`::a.b.c.d`, deprecated, still parsed), which holds `::` and `::1`.
        (0, 96),
        // IPv4-mapped (`::ffff:a.b.c.d`).
        (0xffff << 32, 96),
        // SIIT IPv4-translated (`::ffff:0:a.b.c.d`).
        (0xffff << 48, 96),
        // NAT64 well-known prefix (`64:ff9b::a.b.c.d`).
        (0x0064_ff9b << 96, 96),
    ];
    if carrying_low32
        .iter()
        .any(|(net, len)| in_prefix(bits, *net, *len))
    {
        return Some(low32);
    }
    // 6to4: `2002:AABB:CCDD::/48` tunnels to AA.BB.CC.DD.
    if in_prefix(bits, 0x2002 << 112, 16) {
        return Some(Ipv4Addr::from(((bits >> 80) & 0xffff_ffff) as u32));
    }
    None
}

fn in_prefix(bits: u128, net: u128, len: u8) -> bool {
    let mask = u128::MAX.checked_shl(128 - u32::from(len)).unwrap_or(0);
    bits & mask == net & mask
}

fn v6_is_public(v6: Ipv6Addr) -> bool {
    let bits = u128::from(v6);
    // Carved out of global unicast: IETF protocol assignments (Teredo, benchmarking, ORCHID...),
    // and the two documentation prefixes.
    let special: [(u128, u8); 3] = [
        (0x2001 << 112, 23),
        (0x2001_0db8 << 96, 32),
        (0x3fff << 112, 20),
    ];
    in_prefix(bits, 0x2000 << 112, 3)
        && !special.iter().any(|(net, len)| in_prefix(bits, *net, *len))
}

/// Loopback, private, link-local (cloud metadata), shared, multicast, reserved, unspecified.
fn v4_class(ip: Ipv4Addr) -> Class {
    const INTERNAL: [(u32, u8); 12] = [
        (0x0000_0000, 8),
        (0x0a00_0000, 8),
        (0x6440_0000, 10),
        (0x7f00_0000, 8),
        (0xa9fe_0000, 16),
        (0xac10_0000, 12),
        (0xc000_0000, 24),
        (0xc0a8_0000, 16),
        (0xc612_0000, 15),
        (0xe000_0000, 4),
        (0xf000_0000, 4),
        (0xffff_ffff, 32),
    ];
    let bits = u32::from(ip);
    let inside = |(net, len): &(u32, u8)| {
        let mask = u32::MAX.checked_shl(32 - u32::from(*len)).unwrap_or(0);
        bits & mask == net & mask
    };
    if INTERNAL.iter().any(inside) {
        Class::Internal
    } else {
        Class::Public
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn internal(ip: &str) -> bool {
        is_internal(ip.parse().unwrap())
    }

    #[test]
    fn ipv4_compatible_addresses_are_their_ipv4_address() {
        for ip in [
            "::127.0.0.1",
            "::7f00:1",
            "::a00:1",
            "::169.254.169.254",
            "::",
            "::1",
        ] {
            assert!(internal(ip), "{ip} passed");
        }
        assert!(!internal("::93.184.216.34"));
    }

    #[test]
    fn ipv4_mapped_and_translated_addresses_are_their_ipv4_address() {
        for ip in [
            "::ffff:127.0.0.1",
            "::ffff:7f00:1",
            "::ffff:10.0.0.1",
            "::ffff:0:127.0.0.1",
        ] {
            assert!(internal(ip), "{ip} passed");
        }
        assert!(!internal("::ffff:93.184.216.34"));
    }

    #[test]
    fn nat64_addresses_are_their_ipv4_address_and_local_use_nat64_is_internal() {
        for ip in [
            "64:ff9b::127.0.0.1",
            "64:ff9b::7f00:1",
            "64:ff9b::a9fe:a9fe",
        ] {
            assert!(internal(ip), "{ip} passed");
        }
        assert!(!internal("64:ff9b::93.184.216.34"));
        for ip in [
            "64:ff9b:1::7f00:1",
            "64:ff9b:1::5db8:d822",
            "64:ff9b:1:ffff::1",
        ] {
            assert!(internal(ip), "{ip} passed");
        }
    }

    #[test]
    fn six_to_four_addresses_are_their_ipv4_address() {
        for ip in [
            "2002:7f00:1::",
            "2002:7f00:1::1",
            "2002:a00:1::1",
            "2002:c0a8:1:1::1",
        ] {
            assert!(internal(ip), "{ip} passed");
        }
        // 93.184.216.34 in 6to4 is public.
        assert!(!internal("2002:5db8:d822::1"));
    }

    #[test]
    fn teredo_and_the_other_protocol_assignments_are_internal() {
        // Teredo tunnels to an obfuscated IPv4 address (here 127.0.0.1 xor ffff:ffff).
        for ip in [
            "2001::1",
            "2001:0:4136:e378:8000:63bf:80ff:fffe",
            "2001:2::1",
            "2001:1ff::1",
        ] {
            assert!(internal(ip), "{ip} passed");
        }
    }

    #[test]
    fn site_local_and_other_non_global_ipv6_ranges_are_internal() {
        for ip in [
            "fec0::1",
            "feff::1",
            "fe80::1",
            "fd00:ec2::254",
            "fc00::1",
            "ff02::1",
            "100::1",
            "5f00::1",
            "2001:db8::1",
            "3fff::1",
            "::2:0:0:1",
            "4000::1",
        ] {
            assert!(internal(ip), "{ip} passed");
        }
    }

    #[test]
    fn global_unicast_is_public() {
        for ip in [
            "2606:4700::1111",
            "2a00:1450:4001:80b::200e",
            "2001:4860:4860::8888",
        ] {
            assert!(!internal(ip), "{ip} refused");
        }
    }
}
