//! UDP datagrams (RFC 768), with the IPv6 checksum rules of RFC 8200 §8.1.
//!
//! The checksum covers a pseudo-header of the enclosing IP header. Over IPv4 a zero checksum
//! field means "not computed" and is accepted; over IPv6 it is mandatory. A computed zero is
//! sent as `0xffff` in both.

use core::fmt;

use crate::{checksum, read_u16, write_u16, Error, IpAddress, IpProtocol, Result};

mod field {
    use crate::Field;

    pub(crate) const SRC_PORT: Field = 0..2;
    pub(crate) const DST_PORT: Field = 2..4;
    pub(crate) const LENGTH: Field = 4..6;
    pub(crate) const CHECKSUM: Field = 6..8;
}

/// Length of the UDP header.
pub const HEADER_LEN: usize = field::CHECKSUM.end;

/// A read/write view of a UDP datagram.
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

    /// Checks the length field against the buffer; the buffer may be longer.
    ///
    /// # Errors
    /// [`Error::Truncated`] if the buffer is shorter than the header or the length field;
    /// [`Error::Malformed`] if the length field is below 8.
    pub fn check_len(&self) -> Result<()> {
        let len = self.buffer.as_ref().len();
        if len < HEADER_LEN {
            return Err(Error::Truncated);
        }
        let field_len = usize::from(self.len());
        if field_len < HEADER_LEN {
            Err(Error::Malformed)
        } else if field_len > len {
            Err(Error::Truncated)
        } else {
            Ok(())
        }
    }

    /// Gives the buffer back.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// Source port.
    pub fn src_port(&self) -> u16 {
        read_u16(self.buffer.as_ref(), field::SRC_PORT)
    }

    /// Destination port.
    pub fn dst_port(&self) -> u16 {
        read_u16(self.buffer.as_ref(), field::DST_PORT)
    }

    /// Length field (header and payload).
    #[allow(clippy::len_without_is_empty)]
    pub fn len(&self) -> u16 {
        read_u16(self.buffer.as_ref(), field::LENGTH)
    }

    /// Checksum field.
    pub fn checksum(&self) -> u16 {
        read_u16(self.buffer.as_ref(), field::CHECKSUM)
    }

    /// True if the checksum is right for these pseudo-header addresses (a zero field over
    /// IPv4 counts as right, over IPv6 as wrong). Always true under `cfg(fuzzing)`.
    pub fn verify_checksum(&self, src_addr: &IpAddress, dst_addr: &IpAddress) -> bool {
        if cfg!(fuzzing) {
            return true;
        }
        if self.checksum() == 0 {
            return matches!((src_addr, dst_addr), (IpAddress::V4(_), IpAddress::V4(_)));
        }
        let len = self.len();
        let data = &self.buffer.as_ref()[..usize::from(len)];
        let pseudo = checksum::pseudo_header(src_addr, dst_addr, IpProtocol::UDP, u32::from(len));
        checksum::combine(&[pseudo, checksum::data(data)]) == 0xffff
    }
}

impl<'a, T: AsRef<[u8]> + ?Sized> Packet<&'a T> {
    /// The payload, as long as the length field says.
    pub fn payload(&self) -> &'a [u8] {
        &self.buffer.as_ref()[HEADER_LEN..usize::from(self.len())]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    /// Sets the source port.
    pub fn set_src_port(&mut self, port: u16) {
        write_u16(self.buffer.as_mut(), field::SRC_PORT, port);
    }

    /// Sets the destination port.
    pub fn set_dst_port(&mut self, port: u16) {
        write_u16(self.buffer.as_mut(), field::DST_PORT, port);
    }

    /// Sets the length field.
    pub fn set_len(&mut self, len: u16) {
        write_u16(self.buffer.as_mut(), field::LENGTH, len);
    }

    /// Sets the checksum field.
    pub fn set_checksum(&mut self, value: u16) {
        write_u16(self.buffer.as_mut(), field::CHECKSUM, value);
    }

    /// Computes and stores the checksum over the pseudo-header and the datagram (as long as
    /// the length field says); a computed zero is stored as `0xffff`.
    pub fn fill_checksum(&mut self, src_addr: &IpAddress, dst_addr: &IpAddress) {
        self.set_checksum(0);
        let len = self.len();
        let pseudo = checksum::pseudo_header(src_addr, dst_addr, IpProtocol::UDP, u32::from(len));
        let data = &self.buffer.as_ref()[..usize::from(len)];
        let sum = checksum::finish(&[pseudo, checksum::data(data)]);
        self.set_checksum(if sum == 0 { 0xffff } else { sum });
    }

    /// The payload, writable.
    pub fn payload_mut(&mut self) -> &mut [u8] {
        let end = usize::from(self.len());
        &mut self.buffer.as_mut()[HEADER_LEN..end]
    }
}

/// The meaning of a UDP header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct UdpRepr {
    /// Source port.
    pub src_port: u16,
    /// Destination port.
    pub dst_port: u16,
}

impl UdpRepr {
    /// Largest payload the length field can describe.
    pub const MAX_PAYLOAD_LEN: usize = 0xffff - HEADER_LEN;

    /// Reads a header, checking lengths and the checksum against the pseudo-header addresses.
    ///
    /// # Errors
    /// [`Error::Truncated`]/[`Error::Malformed`] from [`Packet::check_len`];
    /// [`Error::Checksum`] if the checksum is wrong.
    pub fn parse<T: AsRef<[u8]> + ?Sized>(
        packet: &Packet<&T>,
        src_addr: &IpAddress,
        dst_addr: &IpAddress,
    ) -> Result<Self> {
        packet.check_len()?;
        if !packet.verify_checksum(src_addr, dst_addr) {
            return Err(Error::Checksum);
        }
        Ok(Self {
            src_port: packet.src_port(),
            dst_port: packet.dst_port(),
        })
    }

    /// Length of the header (8).
    pub const fn header_len(&self) -> usize {
        HEADER_LEN
    }

    /// Length of a datagram with `payload_len` bytes of payload.
    pub const fn buffer_len(&self, payload_len: usize) -> usize {
        HEADER_LEN + payload_len
    }

    /// Writes the header, lets `emit_payload` fill the `payload_len` payload bytes, then
    /// computes the checksum. `payload_len` above [`Self::MAX_PAYLOAD_LEN`] asserts in debug
    /// builds (the length field would wrap).
    ///
    /// # Panics
    /// If the buffer is shorter than [`buffer_len`](Self::buffer_len)`(payload_len)`.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]> + ?Sized>(
        &self,
        packet: &mut Packet<&mut T>,
        src_addr: &IpAddress,
        dst_addr: &IpAddress,
        payload_len: usize,
        emit_payload: impl FnOnce(&mut [u8]),
    ) {
        debug_assert!(payload_len <= Self::MAX_PAYLOAD_LEN);
        packet.set_src_port(self.src_port);
        packet.set_dst_port(self.dst_port);
        packet.set_len((HEADER_LEN + payload_len) as u16);
        emit_payload(packet.payload_mut());
        packet.fill_checksum(src_addr, dst_addr);
    }
}

impl fmt::Display for UdpRepr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "UDP {} > {}", self.src_port, self.dst_port)
    }
}

#[cfg(test)]
mod test {
    use super::*;
    use crate::test_util::any_ip_pair;
    use crate::{Ipv4Address, Ipv6Address};
    use proptest::prelude::*;

    // From the IPv4 vector in ipv4.rs: 192.168.1.10:54321 > 192.168.1.20:5201, "wirebnch".
    static PACKET_BYTES: [u8; 16] = [
        0xd4, 0x31, 0x14, 0x51, 0x00, 0x10, 0xe4, 0x36, 0x77, 0x69, 0x72, 0x65, 0x62, 0x6e, 0x63,
        0x68,
    ];
    static PAYLOAD_BYTES: &[u8; 8] = b"wirebnch";

    // From the IPv6 vector in ipv6.rs: [2001:db8::1]:40000 > [2001:db8::2]:5201, "ping".
    static PACKET_BYTES_V6: [u8; 12] = [
        0x9c, 0x40, 0x14, 0x51, 0x00, 0x0c, 0x14, 0xff, 0x70, 0x69, 0x6e, 0x67,
    ];

    const SRC: IpAddress = IpAddress::V4(Ipv4Address::new(192, 168, 1, 10));
    const DST: IpAddress = IpAddress::V4(Ipv4Address::new(192, 168, 1, 20));

    fn v6(last: u8) -> IpAddress {
        let mut a = [0; 16];
        a[..4].copy_from_slice(&[0x20, 0x01, 0x0d, 0xb8]);
        a[15] = last;
        IpAddress::V6(Ipv6Address(a))
    }

    fn repr() -> UdpRepr {
        UdpRepr {
            src_port: 54321,
            dst_port: 5201,
        }
    }

    #[test]
    fn test_deconstruct() {
        let p = Packet::new_checked(&PACKET_BYTES[..]).unwrap();
        assert_eq!(p.src_port(), 54321);
        assert_eq!(p.dst_port(), 5201);
        assert_eq!(p.len(), 16);
        assert_eq!(p.checksum(), 0xe436);
        assert_eq!(p.payload(), PAYLOAD_BYTES);
        assert!(p.verify_checksum(&SRC, &DST));
        assert!(!p.verify_checksum(&DST, &DST));
    }

    #[test]
    fn test_construct() {
        let mut bytes = [0xa5u8; 16];
        let mut p = Packet::new_unchecked(&mut bytes[..]);
        p.set_src_port(54321);
        p.set_dst_port(5201);
        p.set_len(16);
        p.payload_mut().copy_from_slice(PAYLOAD_BYTES);
        p.fill_checksum(&SRC, &DST);
        assert_eq!(bytes, PACKET_BYTES);
    }

    #[test]
    fn test_impossible_len() {
        assert_eq!(
            Packet::new_checked(&PACKET_BYTES[..7]).err(),
            Some(Error::Truncated)
        );
        assert_eq!(
            Packet::new_checked(&PACKET_BYTES[..15]).err(),
            Some(Error::Truncated)
        );
        let mut bytes = PACKET_BYTES;
        bytes[5] = 7;
        assert_eq!(
            Packet::new_checked(&bytes[..]).err(),
            Some(Error::Malformed)
        );
    }

    #[test]
    fn test_parse() {
        let p = Packet::new_checked(&PACKET_BYTES[..]).unwrap();
        assert_eq!(UdpRepr::parse(&p, &SRC, &DST), Ok(repr()));
        let p6 = Packet::new_checked(&PACKET_BYTES_V6[..]).unwrap();
        let r6 = UdpRepr {
            src_port: 40000,
            dst_port: 5201,
        };
        assert_eq!(UdpRepr::parse(&p6, &v6(1), &v6(2)), Ok(r6));
        assert_eq!(UdpRepr::parse(&p6, &v6(2), &v6(1)), Ok(r6)); // the sum is symmetric
        assert_eq!(UdpRepr::parse(&p6, &v6(1), &v6(3)), Err(Error::Checksum));
    }

    #[test]
    fn test_zero_checksum() {
        let mut bytes = PACKET_BYTES;
        bytes[6..8].copy_from_slice(&[0, 0]);
        let p = Packet::new_checked(&bytes[..]).unwrap();
        assert_eq!(UdpRepr::parse(&p, &SRC, &DST), Ok(repr()));
        let mut bytes = PACKET_BYTES_V6;
        bytes[6..8].copy_from_slice(&[0, 0]);
        let p = Packet::new_checked(&bytes[..]).unwrap();
        assert_eq!(UdpRepr::parse(&p, &v6(1), &v6(2)), Err(Error::Checksum));
    }

    #[test]
    fn test_computed_zero_is_sent_as_ffff() {
        // Find a payload word that makes the checksum come out as zero.
        let mut bytes = [0u8; 10];
        let mut p = Packet::new_unchecked(&mut bytes[..]);
        p.set_src_port(1);
        p.set_dst_port(2);
        p.set_len(10);
        p.fill_checksum(&SRC, &DST);
        let c = p.checksum();
        // Adding the current checksum as payload makes the data sum to 0xffff -> field 0.
        p.payload_mut().copy_from_slice(&c.to_be_bytes());
        p.fill_checksum(&SRC, &DST);
        assert_eq!(p.checksum(), 0xffff);
        assert!(p.verify_checksum(&SRC, &DST));
    }

    #[test]
    fn test_emit() {
        let mut bytes = [0u8; 16];
        repr().emit(
            &mut Packet::new_unchecked(&mut bytes[..]),
            &SRC,
            &DST,
            8,
            |p| p.copy_from_slice(PAYLOAD_BYTES),
        );
        assert_eq!(bytes, PACKET_BYTES);
        let mut bytes = [0u8; 12];
        let r6 = UdpRepr {
            src_port: 40000,
            dst_port: 5201,
        };
        r6.emit(
            &mut Packet::new_unchecked(&mut bytes[..]),
            &v6(1),
            &v6(2),
            4,
            |p| p.copy_from_slice(b"ping"),
        );
        assert_eq!(bytes, PACKET_BYTES_V6);
    }

    #[test]
    fn test_display() {
        assert_eq!(repr().to_string(), "UDP 54321 > 5201");
    }

    proptest! {
        #[test]
        fn roundtrip(
            src_port in any::<u16>(), dst_port in any::<u16>(), (src, dst) in any_ip_pair(),
            payload in proptest::collection::vec(any::<u8>(), 0..64),
        ) {
            let r = UdpRepr { src_port, dst_port };
            let mut bytes = vec![0u8; r.buffer_len(payload.len())];
            r.emit(&mut Packet::new_unchecked(&mut bytes[..]), &src, &dst, payload.len(), |p| {
                p.copy_from_slice(&payload)
            });
            let p = Packet::new_checked(&bytes[..]).unwrap();
            prop_assert_eq!(UdpRepr::parse(&p, &src, &dst), Ok(r));
            prop_assert_eq!(p.payload(), &payload[..]);
        }

        #[test]
        fn parse_never_panics(
            bytes in proptest::collection::vec(any::<u8>(), 0..40), (src, dst) in any_ip_pair(),
        ) {
            let p = Packet::new_unchecked(&bytes[..]);
            if UdpRepr::parse(&p, &src, &dst).is_ok() {
                let _ = p.payload();
            }
        }
    }
}
