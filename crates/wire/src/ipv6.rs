//! The IPv6 fixed header (RFC 8200 §3).
//!
//! Extension headers are not walked: the view reports the first next-header value and treats
//! everything after the 40-byte header as payload.

use core::fmt;
use std::net::Ipv6Addr;

use crate::{read_u16, read_u32, write_u16, write_u32, Error, IpProtocol, Result};

/// A 128-bit IPv6 address.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct Ipv6Address(pub [u8; 16]);

impl Ipv6Address {
    /// `::`.
    pub const UNSPECIFIED: Self = Self([0; 16]);

    /// The sixteen octets.
    pub const fn octets(&self) -> [u8; 16] {
        self.0
    }
}

impl From<Ipv6Addr> for Ipv6Address {
    fn from(a: Ipv6Addr) -> Self {
        Self(a.octets())
    }
}

impl From<Ipv6Address> for Ipv6Addr {
    fn from(a: Ipv6Address) -> Self {
        Ipv6Addr::from(a.0)
    }
}

impl fmt::Display for Ipv6Address {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        Ipv6Addr::from(self.0).fmt(f)
    }
}

impl fmt::Debug for Ipv6Address {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

mod field {
    use crate::Field;

    pub(crate) const VER_TC_FLOW: Field = 0..4;
    pub(crate) const LENGTH: Field = 4..6;
    pub(crate) const NXT_HDR: usize = 6;
    pub(crate) const HOP_LIMIT: usize = 7;
    pub(crate) const SRC_ADDR: Field = 8..24;
    pub(crate) const DST_ADDR: Field = 24..40;
}

/// Length of the IPv6 fixed header.
pub const HEADER_LEN: usize = field::DST_ADDR.end;

/// Largest flow label (20 bits).
pub const FLOW_LABEL_MAX: u32 = 0x000f_ffff;

/// A read/write view of an IPv6 packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Packet<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Packet<T> {
    /// Wraps a buffer without checking it (for emission into a sized buffer).
    pub const fn new_unchecked(buffer: T) -> Self {
        Self { buffer }
    }

    /// Wraps a buffer and checks that accessors cannot panic.
    ///
    /// # Errors
    /// See [`check_len`](Self::check_len).
    pub fn new_checked(buffer: T) -> Result<Self> {
        let packet = Self::new_unchecked(buffer);
        packet.check_len()?;
        Ok(packet)
    }

    /// Checks that the buffer holds the header and the payload length it announces. The
    /// buffer may be longer (Ethernet padding); [`payload`](Packet::payload) stops at it.
    ///
    /// # Errors
    /// [`Error::Truncated`] if it does not.
    pub fn check_len(&self) -> Result<()> {
        let len = self.buffer.as_ref().len();
        if len < HEADER_LEN || len < HEADER_LEN + usize::from(self.payload_len()) {
            Err(Error::Truncated)
        } else {
            Ok(())
        }
    }

    /// Gives the buffer back.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    fn first_word(&self) -> u32 {
        read_u32(self.buffer.as_ref(), field::VER_TC_FLOW)
    }

    /// The version field (6 for IPv6).
    pub fn version(&self) -> u8 {
        (self.first_word() >> 28) as u8
    }

    /// Traffic class (DSCP << 2 | ECN).
    pub fn traffic_class(&self) -> u8 {
        (self.first_word() >> 20) as u8
    }

    /// Flow label (20 bits).
    pub fn flow_label(&self) -> u32 {
        self.first_word() & FLOW_LABEL_MAX
    }

    /// Payload length (everything after the fixed header, extension headers included).
    pub fn payload_len(&self) -> u16 {
        read_u16(self.buffer.as_ref(), field::LENGTH)
    }

    /// Next header.
    pub fn next_header(&self) -> IpProtocol {
        IpProtocol(self.buffer.as_ref()[field::NXT_HDR])
    }

    /// Hop limit.
    pub fn hop_limit(&self) -> u8 {
        self.buffer.as_ref()[field::HOP_LIMIT]
    }

    /// Source address.
    pub fn src_addr(&self) -> Ipv6Address {
        let mut a = [0; 16];
        a.copy_from_slice(&self.buffer.as_ref()[field::SRC_ADDR]);
        Ipv6Address(a)
    }

    /// Destination address.
    pub fn dst_addr(&self) -> Ipv6Address {
        let mut a = [0; 16];
        a.copy_from_slice(&self.buffer.as_ref()[field::DST_ADDR]);
        Ipv6Address(a)
    }
}

impl<'a, T: AsRef<[u8]> + ?Sized> Packet<&'a T> {
    /// The payload, as long as the payload-length field says.
    pub fn payload(&self) -> &'a [u8] {
        &self.buffer.as_ref()[HEADER_LEN..HEADER_LEN + usize::from(self.payload_len())]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    fn set_first_word(&mut self, mask: u32, value: u32) {
        let old = self.first_word();
        write_u32(
            self.buffer.as_mut(),
            field::VER_TC_FLOW,
            old & !mask | value & mask,
        );
    }

    /// Sets the version field.
    pub fn set_version(&mut self, version: u8) {
        self.set_first_word(0xf000_0000, u32::from(version) << 28);
    }

    /// Sets the traffic class.
    pub fn set_traffic_class(&mut self, tc: u8) {
        self.set_first_word(0x0ff0_0000, u32::from(tc) << 20);
    }

    /// Sets the flow label (masked to 20 bits).
    pub fn set_flow_label(&mut self, label: u32) {
        self.set_first_word(FLOW_LABEL_MAX, label);
    }

    /// Sets the payload length.
    pub fn set_payload_len(&mut self, len: u16) {
        write_u16(self.buffer.as_mut(), field::LENGTH, len);
    }

    /// Sets the next header.
    pub fn set_next_header(&mut self, next: IpProtocol) {
        self.buffer.as_mut()[field::NXT_HDR] = next.0;
    }

    /// Sets the hop limit.
    pub fn set_hop_limit(&mut self, hop_limit: u8) {
        self.buffer.as_mut()[field::HOP_LIMIT] = hop_limit;
    }

    /// Sets the source address.
    pub fn set_src_addr(&mut self, addr: Ipv6Address) {
        self.buffer.as_mut()[field::SRC_ADDR].copy_from_slice(&addr.0);
    }

    /// Sets the destination address.
    pub fn set_dst_addr(&mut self, addr: Ipv6Address) {
        self.buffer.as_mut()[field::DST_ADDR].copy_from_slice(&addr.0);
    }

    /// The payload, writable.
    pub fn payload_mut(&mut self) -> &mut [u8] {
        let end = HEADER_LEN + usize::from(self.payload_len());
        &mut self.buffer.as_mut()[HEADER_LEN..end]
    }
}

/// The meaning of an IPv6 fixed header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Ipv6Repr {
    /// Source address.
    pub src_addr: Ipv6Address,
    /// Destination address.
    pub dst_addr: Ipv6Address,
    /// Next header.
    pub next_header: IpProtocol,
    /// Payload length in bytes.
    pub payload_len: usize,
    /// Hop limit.
    pub hop_limit: u8,
    /// Traffic class (DSCP << 2 | ECN).
    pub traffic_class: u8,
    /// Flow label, 0..=0xFFFFF.
    pub flow_label: u32,
}

impl Ipv6Repr {
    /// Largest `payload_len` the field can describe (no jumbograms).
    pub const MAX_PAYLOAD_LEN: usize = 0xffff;

    /// Reads a fixed header.
    ///
    /// # Errors
    /// [`Error::Truncated`] from [`Packet::check_len`]; [`Error::Malformed`] if the version
    /// is not 6.
    pub fn parse<T: AsRef<[u8]> + ?Sized>(packet: &Packet<&T>) -> Result<Self> {
        packet.check_len()?;
        if packet.version() != 6 {
            return Err(Error::Malformed);
        }
        Ok(Self {
            src_addr: packet.src_addr(),
            dst_addr: packet.dst_addr(),
            next_header: packet.next_header(),
            payload_len: usize::from(packet.payload_len()),
            hop_limit: packet.hop_limit(),
            traffic_class: packet.traffic_class(),
            flow_label: packet.flow_label(),
        })
    }

    /// True when the flow label and payload length fit their fields.
    pub const fn is_valid(&self) -> bool {
        self.flow_label <= FLOW_LABEL_MAX && self.payload_len <= Self::MAX_PAYLOAD_LEN
    }

    /// Length of the emitted header (40).
    pub const fn header_len(&self) -> usize {
        HEADER_LEN
    }

    /// Length of the emitted packet.
    pub const fn buffer_len(&self) -> usize {
        HEADER_LEN + self.payload_len
    }

    /// Writes the header; the payload is left as is. Out-of-range fields are masked (and
    /// assert in debug builds).
    ///
    /// # Panics
    /// If the buffer is shorter than [`HEADER_LEN`].
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]> + ?Sized>(&self, packet: &mut Packet<&mut T>) {
        debug_assert!(self.is_valid(), "IPv6 field out of range: {self:?}");
        packet.set_version(6);
        packet.set_traffic_class(self.traffic_class);
        packet.set_flow_label(self.flow_label);
        packet.set_payload_len(self.payload_len as u16);
        packet.set_next_header(self.next_header);
        packet.set_hop_limit(self.hop_limit);
        packet.set_src_addr(self.src_addr);
        packet.set_dst_addr(self.dst_addr);
    }
}

impl fmt::Display for Ipv6Repr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "IP6 {} > {}: {}, class {:#04x}, flowlabel {:#07x}, hlim {}, payload length {}",
            self.src_addr,
            self.dst_addr,
            self.next_header,
            self.traffic_class,
            self.flow_label,
            self.hop_limit,
            self.payload_len
        )
    }
}

#[cfg(test)]
mod test {
    use super::*;
    use crate::test_util::any_ipv6;
    use proptest::prelude::*;

    // 2001:db8::1 > 2001:db8::2, class 0xb8 (EF), flow label 0x12345, hlim 64,
    // UDP 40000 > 5201 "ping" (checksum 0x14ff, computed with the RFC 8200 pseudo-header).
    static PACKET_BYTES: [u8; 52] = [
        0x6b, 0x81, 0x23, 0x45, 0x00, 0x0c, 0x11, 0x40, // ver/tc/flow, length, next, hlim
        0x20, 0x01, 0x0d, 0xb8, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
        0x01, // src
        0x20, 0x01, 0x0d, 0xb8, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
        0x02, // dst
        0x9c, 0x40, 0x14, 0x51, 0x00, 0x0c, 0x14, 0xff, 0x70, 0x69, 0x6e, 0x67, // UDP "ping"
    ];

    fn addr(last: u8) -> Ipv6Address {
        let mut a = [0; 16];
        a[..4].copy_from_slice(&[0x20, 0x01, 0x0d, 0xb8]);
        a[15] = last;
        Ipv6Address(a)
    }

    fn repr() -> Ipv6Repr {
        Ipv6Repr {
            src_addr: addr(1),
            dst_addr: addr(2),
            next_header: IpProtocol::UDP,
            payload_len: 12,
            hop_limit: 64,
            traffic_class: 0xb8,
            flow_label: 0x12345,
        }
    }

    #[test]
    fn test_deconstruct() {
        let p = Packet::new_checked(&PACKET_BYTES[..]).unwrap();
        assert_eq!(p.version(), 6);
        assert_eq!(p.traffic_class(), 0xb8);
        assert_eq!(p.flow_label(), 0x12345);
        assert_eq!(p.payload_len(), 12);
        assert_eq!(p.next_header(), IpProtocol::UDP);
        assert_eq!(p.hop_limit(), 64);
        assert_eq!(p.src_addr().to_string(), "2001:db8::1");
        assert_eq!(p.dst_addr(), addr(2));
        assert_eq!(p.payload(), &PACKET_BYTES[40..]);
    }

    #[test]
    fn test_construct() {
        let mut bytes = [0xa5u8; 52];
        let mut p = Packet::new_unchecked(&mut bytes[..]);
        p.set_version(6);
        p.set_traffic_class(0xb8);
        p.set_flow_label(0x12345);
        p.set_payload_len(12);
        p.set_next_header(IpProtocol::UDP);
        p.set_hop_limit(64);
        p.set_src_addr(addr(1));
        p.set_dst_addr(addr(2));
        p.payload_mut().copy_from_slice(&PACKET_BYTES[40..]);
        assert_eq!(bytes, PACKET_BYTES);
    }

    #[test]
    fn test_impossible_len() {
        assert_eq!(
            Packet::new_checked(&PACKET_BYTES[..39]).err(),
            Some(Error::Truncated)
        );
        assert_eq!(
            Packet::new_checked(&PACKET_BYTES[..51]).err(),
            Some(Error::Truncated)
        );
    }

    #[test]
    fn test_parse() {
        let p = Packet::new_checked(&PACKET_BYTES[..]).unwrap();
        assert_eq!(Ipv6Repr::parse(&p), Ok(repr()));
        let mut bytes = PACKET_BYTES;
        bytes[0] = 0x4b;
        assert_eq!(
            Ipv6Repr::parse(&Packet::new_unchecked(&bytes[..])),
            Err(Error::Malformed)
        );
    }

    #[test]
    fn test_emit() {
        let mut bytes = [0u8; 52];
        let mut p = Packet::new_unchecked(&mut bytes[..]);
        repr().emit(&mut p);
        p.payload_mut().copy_from_slice(&PACKET_BYTES[40..]);
        assert_eq!(bytes, PACKET_BYTES);
    }

    #[test]
    fn test_display() {
        assert_eq!(
            repr().to_string(),
            "IP6 2001:db8::1 > 2001:db8::2: UDP, class 0xb8, flowlabel 0x12345, hlim 64, payload length 12"
        );
    }

    prop_compose! {
        fn any_repr()(
            src_addr in any_ipv6(), dst_addr in any_ipv6(), next in any::<u8>(),
            payload_len in 0usize..64, hop_limit in any::<u8>(), traffic_class in any::<u8>(),
            flow_label in 0u32..=FLOW_LABEL_MAX,
        ) -> Ipv6Repr {
            Ipv6Repr {
                src_addr, dst_addr, next_header: IpProtocol(next), payload_len, hop_limit,
                traffic_class, flow_label,
            }
        }
    }

    proptest! {
        #[test]
        fn roundtrip(r in any_repr()) {
            let mut bytes = vec![0u8; r.buffer_len()];
            r.emit(&mut Packet::new_unchecked(&mut bytes[..]));
            prop_assert_eq!(Ipv6Repr::parse(&Packet::new_checked(&bytes[..]).unwrap()), Ok(r));
        }

        #[test]
        fn parse_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..80)) {
            let p = Packet::new_unchecked(&bytes[..]);
            let _ = Ipv6Repr::parse(&p);
            if p.check_len().is_ok() {
                let _ = p.payload();
            }
        }
    }
}
