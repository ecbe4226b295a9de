//! Types shared by IPv4 and IPv6: protocol numbers (IANA "Assigned Internet Protocol
//! Numbers", RFC 791 / RFC 8200), an address of either family and a header of either family.

use core::fmt;
use std::net::IpAddr;

use crate::ipv4::Ipv4Repr;
use crate::ipv6::Ipv6Repr;
use crate::{EtherType, Ipv4Address, Ipv6Address};

open_enum! {
    /// An IP protocol / IPv6 next-header number; unknown values are kept as they are.
    IpProtocol(u8) {
        /// Internet Control Message Protocol (RFC 792).
        ICMP = 1 => "ICMP",
        /// Transmission Control Protocol (RFC 9293).
        TCP = 6 => "TCP",
        /// User Datagram Protocol (RFC 768).
        UDP = 17 => "UDP",
        /// ICMP for IPv6 (RFC 4443).
        ICMPV6 = 58 => "ICMPv6",
    }
}

/// An IPv4 or IPv6 address.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum IpAddress {
    /// An IPv4 address.
    V4(Ipv4Address),
    /// An IPv6 address.
    V6(Ipv6Address),
}

impl IpAddress {
    /// The address as IPv6; an IPv4 address becomes `::ffff:a.b.c.d` (RFC 4291 §2.5.5.2).
    pub fn to_v6_mapped(&self) -> Ipv6Address {
        match self {
            IpAddress::V4(a) => {
                let mut b = [0; 16];
                b[10] = 0xff;
                b[11] = 0xff;
                b[12..].copy_from_slice(&a.0);
                Ipv6Address(b)
            }
            IpAddress::V6(a) => *a,
        }
    }
}

impl From<Ipv4Address> for IpAddress {
    fn from(a: Ipv4Address) -> Self {
        IpAddress::V4(a)
    }
}

impl From<Ipv6Address> for IpAddress {
    fn from(a: Ipv6Address) -> Self {
        IpAddress::V6(a)
    }
}

impl From<IpAddr> for IpAddress {
    fn from(a: IpAddr) -> Self {
        match a {
            IpAddr::V4(a) => IpAddress::V4(a.into()),
            IpAddr::V6(a) => IpAddress::V6(a.into()),
        }
    }
}

impl From<IpAddress> for IpAddr {
    fn from(a: IpAddress) -> Self {
        match a {
            IpAddress::V4(a) => IpAddr::V4(a.into()),
            IpAddress::V6(a) => IpAddr::V6(a.into()),
        }
    }
}

impl fmt::Display for IpAddress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            IpAddress::V4(a) => a.fmt(f),
            IpAddress::V6(a) => a.fmt(f),
        }
    }
}

/// An IPv4 or IPv6 header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum IpRepr {
    /// An IPv4 header.
    V4(Ipv4Repr),
    /// An IPv6 header.
    V6(Ipv6Repr),
}

impl IpRepr {
    /// Source address.
    pub fn src_addr(&self) -> IpAddress {
        match self {
            IpRepr::V4(r) => IpAddress::V4(r.src_addr),
            IpRepr::V6(r) => IpAddress::V6(r.src_addr),
        }
    }

    /// Destination address.
    pub fn dst_addr(&self) -> IpAddress {
        match self {
            IpRepr::V4(r) => IpAddress::V4(r.dst_addr),
            IpRepr::V6(r) => IpAddress::V6(r.dst_addr),
        }
    }

    /// Protocol (IPv4) or next header (IPv6).
    pub fn protocol(&self) -> IpProtocol {
        match self {
            IpRepr::V4(r) => r.protocol,
            IpRepr::V6(r) => r.next_header,
        }
    }

    /// Length of the IP payload in bytes.
    pub fn payload_len(&self) -> usize {
        match self {
            IpRepr::V4(r) => r.payload_len,
            IpRepr::V6(r) => r.payload_len,
        }
    }

    /// Length of the emitted header (20 or 40 bytes).
    pub fn header_len(&self) -> usize {
        match self {
            IpRepr::V4(r) => r.header_len(),
            IpRepr::V6(r) => r.header_len(),
        }
    }

    /// The EtherType that announces this header.
    pub fn ethertype(&self) -> EtherType {
        match self {
            IpRepr::V4(_) => EtherType::IPV4,
            IpRepr::V6(_) => EtherType::IPV6,
        }
    }
}

impl fmt::Display for IpRepr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            IpRepr::V4(r) => r.fmt(f),
            IpRepr::V6(r) => r.fmt(f),
        }
    }
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn test_protocol_names() {
        assert_eq!(IpProtocol::UDP.to_string(), "UDP");
        assert_eq!(IpProtocol(253).to_string(), "0xfd");
        assert_eq!(format!("{:?}", IpProtocol::ICMPV6), "IpProtocol::ICMPV6");
        assert_eq!(u8::from(IpProtocol::TCP), 6);
    }

    #[test]
    fn test_address_conversions() {
        let a: IpAddr = "192.0.2.1".parse().unwrap();
        let w = IpAddress::from(a);
        assert_eq!(w, IpAddress::V4(Ipv4Address([192, 0, 2, 1])));
        assert_eq!(IpAddr::from(w), a);
        assert_eq!(w.to_v6_mapped().to_string(), "::ffff:192.0.2.1");
        let b: IpAddr = "2001:db8::1".parse().unwrap();
        assert_eq!(IpAddress::from(b).to_string(), "2001:db8::1");
    }
}
