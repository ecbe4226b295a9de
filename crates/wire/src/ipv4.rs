//! IPv4 headers (RFC 791; DSCP/ECN per RFC 2474 and RFC 3168).
//!
//! Parsing accepts options (IHL > 5) and skips them; emission always writes IHL = 5.
//! Fragments are not reassembled: [`Ipv4Repr::parse`] reports them as
//! [`Error::Unsupported`], while the [`Packet`] view still reads them.

use core::fmt;
use std::net::Ipv4Addr;

use crate::{checksum, read_u16, write_u16, Error, IpProtocol, Result};

/// A 32-bit IPv4 address.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct Ipv4Address(pub [u8; 4]);

impl Ipv4Address {
    /// `0.0.0.0`.
    pub const UNSPECIFIED: Self = Self([0; 4]);
    /// `255.255.255.255`.
    pub const BROADCAST: Self = Self([255; 4]);

    /// An address from its four octets.
    pub const fn new(a: u8, b: u8, c: u8, d: u8) -> Self {
        Self([a, b, c, d])
    }

    /// The four octets.
    pub const fn octets(&self) -> [u8; 4] {
        self.0
    }
}

impl From<Ipv4Addr> for Ipv4Address {
    fn from(a: Ipv4Addr) -> Self {
        Self(a.octets())
    }
}

impl From<Ipv4Address> for Ipv4Addr {
    fn from(a: Ipv4Address) -> Self {
        Ipv4Addr::from(a.0)
    }
}

impl fmt::Display for Ipv4Address {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        Ipv4Addr::from(self.0).fmt(f)
    }
}

impl fmt::Debug for Ipv4Address {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

mod field {
    use crate::Field;

    pub(crate) const VER_IHL: usize = 0;
    pub(crate) const DSCP_ECN: usize = 1;
    pub(crate) const LENGTH: Field = 2..4;
    pub(crate) const IDENT: Field = 4..6;
    pub(crate) const FLG_OFF: Field = 6..8;
    pub(crate) const TTL: usize = 8;
    pub(crate) const PROTOCOL: usize = 9;
    pub(crate) const CHECKSUM: Field = 10..12;
    pub(crate) const SRC_ADDR: Field = 12..16;
    pub(crate) const DST_ADDR: Field = 16..20;
}

/// Length of an IPv4 header without options.
pub const HEADER_LEN: usize = field::DST_ADDR.end;

const FLAG_DF: u16 = 0x4000;
const FLAG_MF: u16 = 0x2000;
const OFFSET_MASK: u16 = 0x1fff;

/// A read/write view of an IPv4 packet.
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

    /// Checks the length fields against each other and the buffer. The buffer may be longer
    /// than the total length (Ethernet padding); [`payload`](Packet::payload) stops at it.
    ///
    /// # Errors
    /// [`Error::Truncated`] if the buffer is shorter than the fixed header, the header length
    /// or the total length; [`Error::Malformed`] if the header length is below 20 or the total
    /// length below the header length.
    pub fn check_len(&self) -> Result<()> {
        let len = self.buffer.as_ref().len();
        if len < HEADER_LEN {
            return Err(Error::Truncated);
        }
        let header_len = usize::from(self.header_len());
        let total_len = usize::from(self.total_len());
        if header_len < HEADER_LEN {
            Err(Error::Malformed)
        } else if header_len > len {
            Err(Error::Truncated)
        } else if total_len < header_len {
            Err(Error::Malformed)
        } else if total_len > len {
            Err(Error::Truncated)
        } else {
            Ok(())
        }
    }

    /// Gives the buffer back.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// The version field (4 for IPv4).
    pub fn version(&self) -> u8 {
        self.buffer.as_ref()[field::VER_IHL] >> 4
    }

    /// The header length in bytes (IHL × 4).
    pub fn header_len(&self) -> u8 {
        (self.buffer.as_ref()[field::VER_IHL] & 0x0f) * 4
    }

    /// Differentiated services code point (6 bits).
    pub fn dscp(&self) -> u8 {
        self.buffer.as_ref()[field::DSCP_ECN] >> 2
    }

    /// Explicit congestion notification (2 bits).
    pub fn ecn(&self) -> u8 {
        self.buffer.as_ref()[field::DSCP_ECN] & 0x03
    }

    /// Total length (header and payload) in bytes.
    pub fn total_len(&self) -> u16 {
        read_u16(self.buffer.as_ref(), field::LENGTH)
    }

    /// Identification.
    pub fn ident(&self) -> u16 {
        read_u16(self.buffer.as_ref(), field::IDENT)
    }

    /// The don't-fragment flag.
    pub fn dont_frag(&self) -> bool {
        read_u16(self.buffer.as_ref(), field::FLG_OFF) & FLAG_DF != 0
    }

    /// The more-fragments flag.
    pub fn more_frags(&self) -> bool {
        read_u16(self.buffer.as_ref(), field::FLG_OFF) & FLAG_MF != 0
    }

    /// Fragment offset in bytes (the field counts 8-byte units).
    pub fn frag_offset(&self) -> u16 {
        (read_u16(self.buffer.as_ref(), field::FLG_OFF) & OFFSET_MASK) << 3
    }

    /// Time to live.
    pub fn ttl(&self) -> u8 {
        self.buffer.as_ref()[field::TTL]
    }

    /// Protocol of the payload.
    pub fn protocol(&self) -> IpProtocol {
        IpProtocol(self.buffer.as_ref()[field::PROTOCOL])
    }

    /// Header checksum field.
    pub fn checksum(&self) -> u16 {
        read_u16(self.buffer.as_ref(), field::CHECKSUM)
    }

    /// Source address.
    pub fn src_addr(&self) -> Ipv4Address {
        let mut a = [0; 4];
        a.copy_from_slice(&self.buffer.as_ref()[field::SRC_ADDR]);
        Ipv4Address(a)
    }

    /// Destination address.
    pub fn dst_addr(&self) -> Ipv4Address {
        let mut a = [0; 4];
        a.copy_from_slice(&self.buffer.as_ref()[field::DST_ADDR]);
        Ipv4Address(a)
    }

    /// True if the header checksum (over the header including options) is right.
    /// Always true under `cfg(fuzzing)`.
    pub fn verify_checksum(&self) -> bool {
        if cfg!(fuzzing) {
            return true;
        }
        let data = self.buffer.as_ref();
        checksum::data(&data[..usize::from(self.header_len())]) == 0xffff
    }
}

impl<'a, T: AsRef<[u8]> + ?Sized> Packet<&'a T> {
    /// The payload: from the end of the header (options skipped) to the total length.
    pub fn payload(&self) -> &'a [u8] {
        let range = usize::from(self.header_len())..usize::from(self.total_len());
        &self.buffer.as_ref()[range]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    /// Sets the version field.
    pub fn set_version(&mut self, version: u8) {
        let b = &mut self.buffer.as_mut()[field::VER_IHL];
        *b = (*b & 0x0f) | (version << 4);
    }

    /// Sets the header length in bytes (must be a multiple of 4, at most 60).
    pub fn set_header_len(&mut self, len: u8) {
        let b = &mut self.buffer.as_mut()[field::VER_IHL];
        *b = (*b & 0xf0) | ((len / 4) & 0x0f);
    }

    /// Sets the DSCP (masked to 6 bits).
    pub fn set_dscp(&mut self, dscp: u8) {
        let b = &mut self.buffer.as_mut()[field::DSCP_ECN];
        *b = (*b & 0x03) | (dscp << 2);
    }

    /// Sets the ECN bits (masked to 2 bits).
    pub fn set_ecn(&mut self, ecn: u8) {
        let b = &mut self.buffer.as_mut()[field::DSCP_ECN];
        *b = (*b & 0xfc) | (ecn & 0x03);
    }

    /// Sets the total length.
    pub fn set_total_len(&mut self, len: u16) {
        write_u16(self.buffer.as_mut(), field::LENGTH, len);
    }

    /// Sets the identification.
    pub fn set_ident(&mut self, ident: u16) {
        write_u16(self.buffer.as_mut(), field::IDENT, ident);
    }

    fn update_flg_off(&mut self, mask: u16, value: u16) {
        let old = read_u16(self.buffer.as_ref(), field::FLG_OFF);
        write_u16(
            self.buffer.as_mut(),
            field::FLG_OFF,
            old & !mask | value & mask,
        );
    }

    /// Clears flags and fragment offset.
    pub fn clear_flags(&mut self) {
        self.update_flg_off(0xffff, 0);
    }

    /// Sets the don't-fragment flag.
    pub fn set_dont_frag(&mut self, value: bool) {
        self.update_flg_off(FLAG_DF, if value { FLAG_DF } else { 0 });
    }

    /// Sets the more-fragments flag.
    pub fn set_more_frags(&mut self, value: bool) {
        self.update_flg_off(FLAG_MF, if value { FLAG_MF } else { 0 });
    }

    /// Sets the fragment offset in bytes (a multiple of 8).
    pub fn set_frag_offset(&mut self, offset: u16) {
        self.update_flg_off(OFFSET_MASK, offset >> 3);
    }

    /// Sets the time to live.
    pub fn set_ttl(&mut self, ttl: u8) {
        self.buffer.as_mut()[field::TTL] = ttl;
    }

    /// Sets the protocol.
    pub fn set_protocol(&mut self, protocol: IpProtocol) {
        self.buffer.as_mut()[field::PROTOCOL] = protocol.0;
    }

    /// Sets the checksum field.
    pub fn set_checksum(&mut self, value: u16) {
        write_u16(self.buffer.as_mut(), field::CHECKSUM, value);
    }

    /// Sets the source address.
    pub fn set_src_addr(&mut self, addr: Ipv4Address) {
        self.buffer.as_mut()[field::SRC_ADDR].copy_from_slice(&addr.0);
    }

    /// Sets the destination address.
    pub fn set_dst_addr(&mut self, addr: Ipv4Address) {
        self.buffer.as_mut()[field::DST_ADDR].copy_from_slice(&addr.0);
    }

    /// Computes and stores the header checksum (header length must be set).
    pub fn fill_checksum(&mut self) {
        self.set_checksum(0);
        let header_len = usize::from(self.header_len());
        let sum = checksum::finish(&[checksum::data(&self.buffer.as_ref()[..header_len])]);
        self.set_checksum(sum);
    }

    /// The payload (from the header length to the total length), writable.
    pub fn payload_mut(&mut self) -> &mut [u8] {
        let range = usize::from(self.header_len())..usize::from(self.total_len());
        &mut self.buffer.as_mut()[range]
    }
}

/// The meaning of an unfragmented IPv4 header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Ipv4Repr {
    /// Source address.
    pub src_addr: Ipv4Address,
    /// Destination address.
    pub dst_addr: Ipv4Address,
    /// Protocol of the payload.
    pub protocol: IpProtocol,
    /// Payload length in bytes (total length minus header length).
    pub payload_len: usize,
    /// Time to live.
    pub ttl: u8,
    /// DSCP, 0..=63.
    pub dscp: u8,
    /// ECN, 0..=3.
    pub ecn: u8,
    /// The don't-fragment flag.
    pub dont_frag: bool,
    /// Identification.
    pub ident: u16,
}

impl Ipv4Repr {
    /// Largest `payload_len` the total-length field can describe.
    pub const MAX_PAYLOAD_LEN: usize = 0xffff - HEADER_LEN;

    /// Reads a header, checking version, lengths and checksum.
    ///
    /// # Errors
    /// [`Error::Truncated`]/[`Error::Malformed`] from [`Packet::check_len`];
    /// [`Error::Malformed`] if the version is not 4; [`Error::Checksum`] on a bad header
    /// checksum; [`Error::Unsupported`] for a fragment (MF set or non-zero offset).
    pub fn parse<T: AsRef<[u8]> + ?Sized>(packet: &Packet<&T>) -> Result<Self> {
        packet.check_len()?;
        if packet.version() != 4 {
            return Err(Error::Malformed);
        }
        if !packet.verify_checksum() {
            return Err(Error::Checksum);
        }
        if packet.more_frags() || packet.frag_offset() != 0 {
            return Err(Error::Unsupported);
        }
        Ok(Self {
            src_addr: packet.src_addr(),
            dst_addr: packet.dst_addr(),
            protocol: packet.protocol(),
            payload_len: usize::from(packet.total_len() - u16::from(packet.header_len())),
            ttl: packet.ttl(),
            dscp: packet.dscp(),
            ecn: packet.ecn(),
            dont_frag: packet.dont_frag(),
            ident: packet.ident(),
        })
    }

    /// True when `dscp`, `ecn` and `payload_len` fit their fields.
    pub const fn is_valid(&self) -> bool {
        self.dscp <= 63 && self.ecn <= 3 && self.payload_len <= Self::MAX_PAYLOAD_LEN
    }

    /// Length of the emitted header (always 20: no options).
    pub const fn header_len(&self) -> usize {
        HEADER_LEN
    }

    /// Length of the emitted packet.
    pub const fn buffer_len(&self) -> usize {
        HEADER_LEN + self.payload_len
    }

    /// Writes the header (IHL 5, no fragmentation) and its checksum; the payload is left as is.
    /// Out-of-range fields are masked (and assert in debug builds).
    ///
    /// # Panics
    /// If the buffer is shorter than [`HEADER_LEN`].
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]> + ?Sized>(&self, packet: &mut Packet<&mut T>) {
        debug_assert!(self.is_valid(), "IPv4 field out of range: {self:?}");
        packet.set_version(4);
        packet.set_header_len(HEADER_LEN as u8);
        packet.set_dscp(self.dscp & 0x3f);
        packet.set_ecn(self.ecn);
        packet.set_total_len((HEADER_LEN + self.payload_len) as u16);
        packet.set_ident(self.ident);
        packet.clear_flags();
        packet.set_dont_frag(self.dont_frag);
        packet.set_ttl(self.ttl);
        packet.set_protocol(self.protocol);
        packet.set_src_addr(self.src_addr);
        packet.set_dst_addr(self.dst_addr);
        packet.fill_checksum();
    }
}

impl fmt::Display for Ipv4Repr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "IP {} > {}: {}, tos {:#04x}, ttl {}, id {}, length {}",
            self.src_addr,
            self.dst_addr,
            self.protocol,
            self.dscp << 2 | self.ecn & 0x03,
            self.ttl,
            self.ident,
            self.buffer_len()
        )?;
        if self.dont_frag {
            f.write_str(", DF")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod test {
    use super::*;
    use crate::test_util::any_ipv4;
    use proptest::prelude::*;

    // 192.168.1.10 > 192.168.1.20, UDP 54321 > 5201, "wirebnch"; id 0x1c46, DF, ttl 64.
    // Checksums computed independently (Python, RFC 1071 loop) and checked by etherparse below.
    static PACKET_BYTES: [u8; 36] = [
        0x45, 0x00, 0x00, 0x24, 0x1c, 0x46, 0x40, 0x00, 0x40, 0x11, 0x9b, 0x14, 0xc0, 0xa8, 0x01,
        0x0a, 0xc0, 0xa8, 0x01, 0x14, // IPv4
        0xd4, 0x31, 0x14, 0x51, 0x00, 0x10, 0xe4, 0x36, // UDP
        0x77, 0x69, 0x72, 0x65, 0x62, 0x6e, 0x63, 0x68, // "wirebnch"
    ];

    fn repr() -> Ipv4Repr {
        Ipv4Repr {
            src_addr: Ipv4Address::new(192, 168, 1, 10),
            dst_addr: Ipv4Address::new(192, 168, 1, 20),
            protocol: IpProtocol::UDP,
            payload_len: 16,
            ttl: 64,
            dscp: 0,
            ecn: 0,
            dont_frag: true,
            ident: 0x1c46,
        }
    }

    #[test]
    fn test_deconstruct() {
        let p = Packet::new_checked(&PACKET_BYTES[..]).unwrap();
        assert_eq!(p.version(), 4);
        assert_eq!(p.header_len(), 20);
        assert_eq!((p.dscp(), p.ecn()), (0, 0));
        assert_eq!(p.total_len(), 36);
        assert_eq!(p.ident(), 0x1c46);
        assert!(p.dont_frag() && !p.more_frags());
        assert_eq!(p.frag_offset(), 0);
        assert_eq!(p.ttl(), 64);
        assert_eq!(p.protocol(), IpProtocol::UDP);
        assert_eq!(p.checksum(), 0x9b14);
        assert_eq!(p.src_addr(), Ipv4Address::new(192, 168, 1, 10));
        assert_eq!(p.dst_addr(), Ipv4Address::new(192, 168, 1, 20));
        assert!(p.verify_checksum());
        assert_eq!(p.payload(), &PACKET_BYTES[20..]);
    }

    #[test]
    fn test_construct() {
        let mut bytes = [0xa5u8; 36];
        let mut p = Packet::new_unchecked(&mut bytes[..]);
        p.set_version(4);
        p.set_header_len(20);
        p.set_dscp(0);
        p.set_ecn(0);
        p.set_total_len(36);
        p.set_ident(0x1c46);
        p.clear_flags();
        p.set_dont_frag(true);
        p.set_ttl(64);
        p.set_protocol(IpProtocol::UDP);
        p.set_src_addr(Ipv4Address::new(192, 168, 1, 10));
        p.set_dst_addr(Ipv4Address::new(192, 168, 1, 20));
        p.fill_checksum();
        p.payload_mut().copy_from_slice(&PACKET_BYTES[20..]);
        assert_eq!(bytes, PACKET_BYTES);
    }

    #[test]
    fn test_well_known_checksum() {
        // The header used as the worked example in many texts (e.g. Wikipedia "IPv4 header
        // checksum"): checksum 0xb861.
        let mut h = [
            0x45, 0x00, 0x00, 0x73, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11, 0x00, 0x00, 0xc0, 0xa8,
            0x00, 0x01, 0xc0, 0xa8, 0x00, 0xc7,
        ];
        Packet::new_unchecked(&mut h[..]).fill_checksum();
        assert_eq!(&h[10..12], &[0xb8, 0x61]);
    }

    #[test]
    fn test_impossible_len() {
        assert_eq!(
            Packet::new_checked(&PACKET_BYTES[..19]).err(),
            Some(Error::Truncated)
        );
        // Total length says 36 but only 30 bytes are there.
        assert_eq!(
            Packet::new_checked(&PACKET_BYTES[..30]).err(),
            Some(Error::Truncated)
        );
        let mut bytes = PACKET_BYTES;
        bytes[0] = 0x44; // IHL 4 < 5
        assert_eq!(
            Packet::new_checked(&bytes[..]).err(),
            Some(Error::Malformed)
        );
        let mut bytes = PACKET_BYTES;
        bytes[3] = 19; // total length below header length
        assert_eq!(
            Packet::new_checked(&bytes[..]).err(),
            Some(Error::Malformed)
        );
        let mut bytes = PACKET_BYTES;
        bytes[0] = 0x4f; // 60-byte header in a 36-byte buffer
        assert_eq!(
            Packet::new_checked(&bytes[..]).err(),
            Some(Error::Truncated)
        );
    }

    #[test]
    fn test_parse() {
        let p = Packet::new_checked(&PACKET_BYTES[..]).unwrap();
        assert_eq!(Ipv4Repr::parse(&p), Ok(repr()));
        // Trailing Ethernet padding is not payload.
        let mut padded = [0u8; 46];
        padded[..36].copy_from_slice(&PACKET_BYTES);
        let p = Packet::new_checked(&padded[..]).unwrap();
        assert_eq!(Ipv4Repr::parse(&p), Ok(repr()));
        assert_eq!(p.payload().len(), 16);
    }

    #[test]
    fn test_parse_errors() {
        let mut bytes = PACKET_BYTES;
        bytes[11] ^= 1;
        assert_eq!(
            Ipv4Repr::parse(&Packet::new_unchecked(&bytes[..])),
            Err(Error::Checksum)
        );
        let mut bytes = PACKET_BYTES;
        bytes[0] = 0x65;
        assert_eq!(
            Ipv4Repr::parse(&Packet::new_unchecked(&bytes[..])),
            Err(Error::Malformed)
        );
        let mut bytes = PACKET_BYTES;
        let mut p = Packet::new_unchecked(&mut bytes[..]);
        p.set_more_frags(true);
        p.fill_checksum();
        assert_eq!(
            Ipv4Repr::parse(&Packet::new_unchecked(&bytes[..])),
            Err(Error::Unsupported)
        );
    }

    #[test]
    fn test_parse_options() {
        // IHL 6: one 4-byte option (four NOPs) before the payload.
        let mut bytes = [0u8; 40];
        bytes[..20].copy_from_slice(&PACKET_BYTES[..20]);
        bytes[20..24].copy_from_slice(&[1, 1, 1, 1]);
        bytes[24..].copy_from_slice(&PACKET_BYTES[20..]);
        let mut p = Packet::new_unchecked(&mut bytes[..]);
        p.set_header_len(24);
        p.set_total_len(40);
        p.fill_checksum();
        let p = Packet::new_checked(&bytes[..]).unwrap();
        assert_eq!(Ipv4Repr::parse(&p), Ok(repr()));
        assert_eq!(p.payload(), &PACKET_BYTES[20..]);
    }

    #[test]
    fn test_emit() {
        let mut bytes = [0u8; 36];
        let mut p = Packet::new_unchecked(&mut bytes[..]);
        repr().emit(&mut p);
        p.payload_mut().copy_from_slice(&PACKET_BYTES[20..]);
        assert_eq!(bytes, PACKET_BYTES);
    }

    #[test]
    fn test_display() {
        assert_eq!(
            repr().to_string(),
            "IP 192.168.1.10 > 192.168.1.20: UDP, tos 0x00, ttl 64, id 7238, length 36, DF"
        );
        let a: Ipv4Addr = Ipv4Address::new(10, 0, 0, 1).into();
        assert_eq!(Ipv4Address::from(a), Ipv4Address::new(10, 0, 0, 1));
    }

    prop_compose! {
        fn any_repr()(
            src_addr in any_ipv4(), dst_addr in any_ipv4(), protocol in any::<u8>(),
            payload_len in 0usize..64, ttl in any::<u8>(), dscp in 0u8..64, ecn in 0u8..4,
            dont_frag in any::<bool>(), ident in any::<u16>(),
        ) -> Ipv4Repr {
            Ipv4Repr {
                src_addr, dst_addr, protocol: IpProtocol(protocol), payload_len, ttl, dscp, ecn,
                dont_frag, ident,
            }
        }
    }

    proptest! {
        #[test]
        fn roundtrip(r in any_repr()) {
            let mut bytes = vec![0u8; r.buffer_len()];
            r.emit(&mut Packet::new_unchecked(&mut bytes[..]));
            let p = Packet::new_checked(&bytes[..]).unwrap();
            prop_assert_eq!(Ipv4Repr::parse(&p), Ok(r));
        }

        #[test]
        fn parse_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..80)) {
            let p = Packet::new_unchecked(&bytes[..]);
            let _ = Ipv4Repr::parse(&p);
            if p.check_len().is_ok() {
                let _ = (p.payload(), p.verify_checksum(), p.frag_offset());
            }
        }
    }
}
