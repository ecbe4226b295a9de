//! Ethernet II frames (IEEE 802.3 clause 3.2.6 with an EtherType, RFC 894), without the FCS.
//!
//! The 4-byte frame check sequence is appended and stripped by the NIC, so it is not part of
//! any buffer this module sees; RFC 2544 frame sizes do count it (see [`crate::frame`]).

use core::fmt;

use crate::{read_u16, write_u16, Error, Result};

open_enum! {
    /// An EtherType (IEEE 802 numbers); unknown values are kept as they are.
    EtherType(u16) {
        /// Internet Protocol version 4.
        IPV4 = 0x0800 => "IPv4",
        /// Address Resolution Protocol.
        ARP = 0x0806 => "ARP",
        /// IEEE 802.1Q customer VLAN tag.
        VLAN = 0x8100 => "802.1Q",
        /// Internet Protocol version 6.
        IPV6 = 0x86DD => "IPv6",
        /// IEEE 802.1ad service VLAN tag (QinQ).
        QINQ = 0x88A8 => "802.1ad",
        /// IEEE 802 local experimental EtherType 1; wirebench raw-L2 test frames use it.
        EXPERIMENTAL = 0x88B5 => "experimental",
        /// IEEE 802.1CB redundancy tag (R-TAG), used by FRER.
        RTAG = 0xF1C1 => "R-TAG",
    }
}

/// A 48-bit IEEE 802 MAC address.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct EthernetAddress(pub [u8; 6]);

impl EthernetAddress {
    /// The broadcast address `ff:ff:ff:ff:ff:ff`.
    pub const BROADCAST: Self = Self([0xff; 6]);

    /// The six octets.
    pub const fn octets(&self) -> [u8; 6] {
        self.0
    }

    /// True for an individual (not group) address.
    pub const fn is_unicast(&self) -> bool {
        self.0[0] & 0x01 == 0
    }

    /// True for a group address (the I/G bit is set); broadcast is one.
    pub const fn is_multicast(&self) -> bool {
        self.0[0] & 0x01 != 0
    }

    /// True for `ff:ff:ff:ff:ff:ff`.
    pub fn is_broadcast(&self) -> bool {
        *self == Self::BROADCAST
    }

    /// Parses `02:77:62:00:01:02` (or with `-` separators); `None` for anything else.
    pub fn parse_str(s: &str) -> Option<Self> {
        let mut m = [0u8; 6];
        let mut parts = s.trim().split([':', '-']);
        for b in &mut m {
            let p = parts.next()?;
            if p.is_empty() || p.len() > 2 {
                return None;
            }
            *b = u8::from_str_radix(p, 16).ok()?;
        }
        parts.next().is_none().then_some(Self(m))
    }

    /// True for a locally administered address (the U/L bit is set).
    pub const fn is_local(&self) -> bool {
        self.0[0] & 0x02 != 0
    }
}

impl From<[u8; 6]> for EthernetAddress {
    fn from(octets: [u8; 6]) -> Self {
        Self(octets)
    }
}

impl fmt::Display for EthernetAddress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let b = &self.0;
        write!(
            f,
            "{:02x}:{:02x}:{:02x}:{:02x}:{:02x}:{:02x}",
            b[0], b[1], b[2], b[3], b[4], b[5]
        )
    }
}

impl fmt::Debug for EthernetAddress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

mod field {
    use crate::Field;

    pub(crate) const DESTINATION: Field = 0..6;
    pub(crate) const SOURCE: Field = 6..12;
    pub(crate) const ETHERTYPE: Field = 12..14;
    pub(crate) const PAYLOAD: usize = 14;
}

/// Length of the Ethernet II header (two addresses and the EtherType).
pub const HEADER_LEN: usize = field::PAYLOAD;

/// A read/write view of an Ethernet II frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Frame<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Frame<T> {
    /// Wraps a buffer without checking its length (for emission into a sized buffer).
    pub const fn new_unchecked(buffer: T) -> Self {
        Self { buffer }
    }

    /// Wraps a buffer and checks that accessors cannot panic.
    ///
    /// # Errors
    /// [`Error::Truncated`] if the buffer is shorter than [`HEADER_LEN`].
    pub fn new_checked(buffer: T) -> Result<Self> {
        let frame = Self::new_unchecked(buffer);
        frame.check_len()?;
        Ok(frame)
    }

    /// Checks that the buffer holds the whole header.
    ///
    /// # Errors
    /// [`Error::Truncated`] if it does not.
    pub fn check_len(&self) -> Result<()> {
        if self.buffer.as_ref().len() < HEADER_LEN {
            Err(Error::Truncated)
        } else {
            Ok(())
        }
    }

    /// Gives the buffer back.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// The destination address.
    pub fn dst_addr(&self) -> EthernetAddress {
        let mut a = [0; 6];
        a.copy_from_slice(&self.buffer.as_ref()[field::DESTINATION]);
        EthernetAddress(a)
    }

    /// The source address.
    pub fn src_addr(&self) -> EthernetAddress {
        let mut a = [0; 6];
        a.copy_from_slice(&self.buffer.as_ref()[field::SOURCE]);
        EthernetAddress(a)
    }

    /// The EtherType.
    pub fn ethertype(&self) -> EtherType {
        EtherType(read_u16(self.buffer.as_ref(), field::ETHERTYPE))
    }
}

impl<'a, T: AsRef<[u8]> + ?Sized> Frame<&'a T> {
    /// Everything after the header.
    pub fn payload(&self) -> &'a [u8] {
        &self.buffer.as_ref()[field::PAYLOAD..]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Frame<T> {
    /// Sets the destination address.
    pub fn set_dst_addr(&mut self, addr: EthernetAddress) {
        self.buffer.as_mut()[field::DESTINATION].copy_from_slice(&addr.0);
    }

    /// Sets the source address.
    pub fn set_src_addr(&mut self, addr: EthernetAddress) {
        self.buffer.as_mut()[field::SOURCE].copy_from_slice(&addr.0);
    }

    /// Sets the EtherType.
    pub fn set_ethertype(&mut self, ethertype: EtherType) {
        write_u16(self.buffer.as_mut(), field::ETHERTYPE, ethertype.0);
    }

    /// Everything after the header, writable.
    pub fn payload_mut(&mut self) -> &mut [u8] {
        &mut self.buffer.as_mut()[field::PAYLOAD..]
    }
}

/// The meaning of an Ethernet II header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct EthernetRepr {
    /// Source MAC address.
    pub src_addr: EthernetAddress,
    /// Destination MAC address.
    pub dst_addr: EthernetAddress,
    /// Type of the payload.
    pub ethertype: EtherType,
}

impl EthernetRepr {
    /// Reads the header of a frame.
    ///
    /// # Errors
    /// [`Error::Truncated`] if the frame is shorter than the header.
    pub fn parse<T: AsRef<[u8]> + ?Sized>(frame: &Frame<&T>) -> Result<Self> {
        frame.check_len()?;
        Ok(Self {
            src_addr: frame.src_addr(),
            dst_addr: frame.dst_addr(),
            ethertype: frame.ethertype(),
        })
    }

    /// Length of the emitted header.
    pub const fn header_len(&self) -> usize {
        HEADER_LEN
    }

    /// Length of a frame with `payload_len` bytes of payload (no FCS).
    pub const fn buffer_len(&self, payload_len: usize) -> usize {
        HEADER_LEN + payload_len
    }

    /// Writes the header.
    ///
    /// # Panics
    /// If the buffer is shorter than [`HEADER_LEN`].
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]> + ?Sized>(&self, frame: &mut Frame<&mut T>) {
        frame.set_dst_addr(self.dst_addr);
        frame.set_src_addr(self.src_addr);
        frame.set_ethertype(self.ethertype);
    }
}

impl fmt::Display for EthernetRepr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} > {}, ethertype {} ({:#06x})",
            self.src_addr, self.dst_addr, self.ethertype, self.ethertype.0
        )
    }
}

#[cfg(test)]
mod test {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn mac_addresses_parse_from_text() {
        let m = EthernetAddress([0x02, 0x77, 0x62, 0, 1, 0x0a]);
        assert_eq!(EthernetAddress::parse_str("02:77:62:00:01:0a"), Some(m));
        assert_eq!(EthernetAddress::parse_str("02-77-62-00-01-0A"), Some(m));
        for bad in [
            "",
            "02:77:62:00:01",
            "02:77:62:00:01:0a:ff",
            "02:77:62:00:01:0g",
            "2:77:62:00:01:100",
            "02::62:00:01:0a",
        ] {
            assert_eq!(EthernetAddress::parse_str(bad), None, "{bad}");
        }
    }

    // A broadcast frame from a QEMU-style locally administered MAC, type IPv4, 4 payload bytes.
    static FRAME_BYTES: [u8; 18] = [
        0xff, 0xff, 0xff, 0xff, 0xff, 0xff, // dst
        0x52, 0x54, 0x00, 0x12, 0x34, 0x56, // src
        0x08, 0x00, // IPv4
        0xaa, 0xbb, 0xcc, 0xdd,
    ];

    static PAYLOAD_BYTES: [u8; 4] = [0xaa, 0xbb, 0xcc, 0xdd];

    fn repr() -> EthernetRepr {
        EthernetRepr {
            src_addr: EthernetAddress([0x52, 0x54, 0x00, 0x12, 0x34, 0x56]),
            dst_addr: EthernetAddress::BROADCAST,
            ethertype: EtherType::IPV4,
        }
    }

    #[test]
    fn test_deconstruct() {
        let frame = Frame::new_checked(&FRAME_BYTES[..]).unwrap();
        assert_eq!(frame.dst_addr(), EthernetAddress::BROADCAST);
        assert_eq!(frame.src_addr().to_string(), "52:54:00:12:34:56");
        assert_eq!(frame.ethertype(), EtherType::IPV4);
        assert_eq!(frame.payload(), &PAYLOAD_BYTES[..]);
    }

    #[test]
    fn test_construct() {
        let mut bytes = [0xa5u8; 18];
        let mut frame = Frame::new_unchecked(&mut bytes[..]);
        frame.set_dst_addr(EthernetAddress::BROADCAST);
        frame.set_src_addr(EthernetAddress([0x52, 0x54, 0x00, 0x12, 0x34, 0x56]));
        frame.set_ethertype(EtherType::IPV4);
        frame.payload_mut().copy_from_slice(&PAYLOAD_BYTES);
        assert_eq!(bytes, FRAME_BYTES);
    }

    #[test]
    fn test_impossible_len() {
        assert_eq!(
            Frame::new_checked(&FRAME_BYTES[..13]).err(),
            Some(Error::Truncated)
        );
        assert!(Frame::new_checked(&FRAME_BYTES[..14])
            .unwrap()
            .payload()
            .is_empty());
    }

    #[test]
    fn test_parse() {
        let frame = Frame::new_checked(&FRAME_BYTES[..]).unwrap();
        assert_eq!(EthernetRepr::parse(&frame), Ok(repr()));
        let unchecked = Frame::new_unchecked(&FRAME_BYTES[..3]);
        assert_eq!(EthernetRepr::parse(&unchecked), Err(Error::Truncated));
    }

    #[test]
    fn test_emit() {
        let r = repr();
        let mut bytes = [0u8; 18];
        let mut frame = Frame::new_unchecked(&mut bytes[..]);
        r.emit(&mut frame);
        frame.payload_mut().copy_from_slice(&PAYLOAD_BYTES);
        assert_eq!(bytes, FRAME_BYTES);
        assert_eq!(r.buffer_len(4), 18);
    }

    #[test]
    fn test_address_classes() {
        let b = EthernetAddress::BROADCAST;
        assert!(b.is_broadcast() && b.is_multicast() && !b.is_unicast());
        let m = EthernetAddress([0x01, 0x00, 0x5e, 0, 0, 1]);
        assert!(m.is_multicast() && !m.is_broadcast() && !m.is_local());
        let l = EthernetAddress([0x52, 0x54, 0, 0, 0, 1]);
        assert!(l.is_unicast() && l.is_local());
    }

    #[test]
    fn test_display() {
        assert_eq!(
            repr().to_string(),
            "52:54:00:12:34:56 > ff:ff:ff:ff:ff:ff, ethertype IPv4 (0x0800)"
        );
        assert_eq!(EtherType(0x1234).to_string(), "0x1234");
        assert_eq!(format!("{:?}", EtherType::RTAG), "EtherType::RTAG");
        assert_eq!(format!("{:?}", EtherType(0x1234)), "EtherType(0x1234)");
        assert_eq!(EtherType::VLAN.0, 0x8100);
        assert_eq!(EtherType::EXPERIMENTAL.name(), Some("experimental"));
    }

    proptest! {
        #[test]
        fn roundtrip(src in any::<[u8; 6]>(), dst in any::<[u8; 6]>(), et in any::<u16>()) {
            let r = EthernetRepr {
                src_addr: EthernetAddress(src),
                dst_addr: EthernetAddress(dst),
                ethertype: EtherType(et),
            };
            let mut bytes = [0u8; HEADER_LEN];
            r.emit(&mut Frame::new_unchecked(&mut bytes[..]));
            prop_assert_eq!(EthernetRepr::parse(&Frame::new_checked(&bytes[..]).unwrap()), Ok(r));
        }

        #[test]
        fn parse_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..40)) {
            if let Ok(frame) = Frame::new_checked(&bytes[..]) {
                let _ = EthernetRepr::parse(&frame);
                let _ = frame.payload();
            }
        }
    }
}
