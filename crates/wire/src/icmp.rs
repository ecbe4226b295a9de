//! ICMP messages: a generic view (type, code, checksum, rest of header) and echo
//! request/reply for ICMPv4 (RFC 792) and ICMPv6 (RFC 4443 §4.1).
//!
//! The ICMPv4 checksum covers the message only; the ICMPv6 checksum also covers the IPv6
//! pseudo-header (RFC 8200 §8.1). Functions that need the family take the IP source and
//! destination: IPv4 addresses select ICMPv4, IPv6 addresses ICMPv6. ICMP has no length
//! field, so the message is the whole buffer: hand the view a buffer cut to the IP payload.

use core::fmt;

use crate::{
    checksum, read_u16, read_u32, write_u16, write_u32, Error, IpAddress, IpProtocol, Result,
};

open_enum! {
    /// An ICMPv4 message type (RFC 792); unknown values are kept as they are.
    Icmpv4Type(u8) {
        /// Echo reply.
        ECHO_REPLY = 0 => "echo reply",
        /// Destination unreachable.
        DEST_UNREACHABLE = 3 => "unreachable",
        /// Echo request.
        ECHO_REQUEST = 8 => "echo request",
        /// Time exceeded.
        TIME_EXCEEDED = 11 => "time exceeded",
    }
}

open_enum! {
    /// An ICMPv6 message type (RFC 4443); unknown values are kept as they are.
    Icmpv6Type(u8) {
        /// Destination unreachable.
        DEST_UNREACHABLE = 1 => "unreachable",
        /// Packet too big.
        PACKET_TOO_BIG = 2 => "packet too big",
        /// Time exceeded.
        TIME_EXCEEDED = 3 => "time exceeded",
        /// Echo request.
        ECHO_REQUEST = 128 => "echo request",
        /// Echo reply.
        ECHO_REPLY = 129 => "echo reply",
    }
}

mod field {
    use crate::Field;

    pub(crate) const TYPE: usize = 0;
    pub(crate) const CODE: usize = 1;
    pub(crate) const CHECKSUM: Field = 2..4;
    pub(crate) const REST: Field = 4..8;
    pub(crate) const ECHO_IDENT: Field = 4..6;
    pub(crate) const ECHO_SEQNO: Field = 6..8;
}

/// Length of the ICMP header this crate reads (type, code, checksum and 4 more bytes).
pub const HEADER_LEN: usize = field::REST.end;

fn is_v4(src_addr: &IpAddress, dst_addr: &IpAddress) -> bool {
    matches!((src_addr, dst_addr), (IpAddress::V4(_), IpAddress::V4(_)))
}

fn sum(data: &[u8], src_addr: &IpAddress, dst_addr: &IpAddress) -> u16 {
    if is_v4(src_addr, dst_addr) {
        checksum::data(data)
    } else {
        let pseudo =
            checksum::pseudo_header(src_addr, dst_addr, IpProtocol::ICMPV6, data.len() as u32);
        checksum::combine(&[pseudo, checksum::data(data)])
    }
}

/// A read/write view of an ICMP message of any type.
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
    /// [`Error::Truncated`] if the buffer is shorter than [`HEADER_LEN`].
    pub fn new_checked(buffer: T) -> Result<Self> {
        let packet = Self::new_unchecked(buffer);
        packet.check_len()?;
        Ok(packet)
    }

    /// Checks that the buffer holds the 8-byte header.
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

    /// Message type (see [`Icmpv4Type`], [`Icmpv6Type`]).
    pub fn msg_type(&self) -> u8 {
        self.buffer.as_ref()[field::TYPE]
    }

    /// Message code.
    pub fn msg_code(&self) -> u8 {
        self.buffer.as_ref()[field::CODE]
    }

    /// Checksum field.
    pub fn checksum(&self) -> u16 {
        read_u16(self.buffer.as_ref(), field::CHECKSUM)
    }

    /// The 4 header bytes after the checksum, whatever the type.
    pub fn rest_of_header(&self) -> u32 {
        read_u32(self.buffer.as_ref(), field::REST)
    }

    /// Echo identifier (meaningful for echo messages).
    pub fn echo_ident(&self) -> u16 {
        read_u16(self.buffer.as_ref(), field::ECHO_IDENT)
    }

    /// Echo sequence number (meaningful for echo messages).
    pub fn echo_seq_no(&self) -> u16 {
        read_u16(self.buffer.as_ref(), field::ECHO_SEQNO)
    }

    /// True if the checksum is right: over the message for IPv4 addresses, over the IPv6
    /// pseudo-header and the message otherwise. Always true under `cfg(fuzzing)`.
    pub fn verify_checksum(&self, src_addr: &IpAddress, dst_addr: &IpAddress) -> bool {
        cfg!(fuzzing) || sum(self.buffer.as_ref(), src_addr, dst_addr) == 0xffff
    }
}

impl<'a, T: AsRef<[u8]> + ?Sized> Packet<&'a T> {
    /// Everything after the 8-byte header (echo data, or the quoted packet of an error).
    pub fn payload(&self) -> &'a [u8] {
        &self.buffer.as_ref()[HEADER_LEN..]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    /// Sets the message type.
    pub fn set_msg_type(&mut self, value: u8) {
        self.buffer.as_mut()[field::TYPE] = value;
    }

    /// Sets the message code.
    pub fn set_msg_code(&mut self, value: u8) {
        self.buffer.as_mut()[field::CODE] = value;
    }

    /// Sets the checksum field.
    pub fn set_checksum(&mut self, value: u16) {
        write_u16(self.buffer.as_mut(), field::CHECKSUM, value);
    }

    /// Sets the 4 header bytes after the checksum.
    pub fn set_rest_of_header(&mut self, value: u32) {
        write_u32(self.buffer.as_mut(), field::REST, value);
    }

    /// Sets the echo identifier.
    pub fn set_echo_ident(&mut self, value: u16) {
        write_u16(self.buffer.as_mut(), field::ECHO_IDENT, value);
    }

    /// Sets the echo sequence number.
    pub fn set_echo_seq_no(&mut self, value: u16) {
        write_u16(self.buffer.as_mut(), field::ECHO_SEQNO, value);
    }

    /// Computes and stores the checksum over the whole buffer (see
    /// [`verify_checksum`](Packet::verify_checksum) for the family rule).
    pub fn fill_checksum(&mut self, src_addr: &IpAddress, dst_addr: &IpAddress) {
        self.set_checksum(0);
        let s = sum(self.buffer.as_ref(), src_addr, dst_addr);
        self.set_checksum(!s);
    }

    /// Everything after the header, writable.
    pub fn payload_mut(&mut self) -> &mut [u8] {
        &mut self.buffer.as_mut()[HEADER_LEN..]
    }
}

/// Echo request or reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EchoKind {
    /// Echo request ("ping").
    Request,
    /// Echo reply ("pong").
    Reply,
}

impl EchoKind {
    /// The message type for this kind in the given family.
    pub fn msg_type(self, v4: bool) -> u8 {
        match (self, v4) {
            (EchoKind::Request, true) => Icmpv4Type::ECHO_REQUEST.0,
            (EchoKind::Reply, true) => Icmpv4Type::ECHO_REPLY.0,
            (EchoKind::Request, false) => Icmpv6Type::ECHO_REQUEST.0,
            (EchoKind::Reply, false) => Icmpv6Type::ECHO_REPLY.0,
        }
    }
}

/// The meaning of an ICMP echo header (ICMPv4 or ICMPv6, chosen by the addresses).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct IcmpEchoRepr {
    /// Request or reply.
    pub kind: EchoKind,
    /// Identifier.
    pub ident: u16,
    /// Sequence number.
    pub seq: u16,
}

impl IcmpEchoRepr {
    /// Reads an echo header and checks the checksum over the whole buffer.
    ///
    /// # Errors
    /// [`Error::Truncated`] if shorter than 8 bytes; [`Error::Checksum`] on a bad checksum;
    /// [`Error::Unsupported`] for a message that is not an echo of the addresses' family;
    /// [`Error::Malformed`] for an echo with a non-zero code.
    pub fn parse<T: AsRef<[u8]> + ?Sized>(
        packet: &Packet<&T>,
        src_addr: &IpAddress,
        dst_addr: &IpAddress,
    ) -> Result<Self> {
        packet.check_len()?;
        if !packet.verify_checksum(src_addr, dst_addr) {
            return Err(Error::Checksum);
        }
        let v4 = is_v4(src_addr, dst_addr);
        let kind = match packet.msg_type() {
            t if t == EchoKind::Request.msg_type(v4) => EchoKind::Request,
            t if t == EchoKind::Reply.msg_type(v4) => EchoKind::Reply,
            _ => return Err(Error::Unsupported),
        };
        if packet.msg_code() != 0 {
            return Err(Error::Malformed);
        }
        Ok(Self {
            kind,
            ident: packet.echo_ident(),
            seq: packet.echo_seq_no(),
        })
    }

    /// Length of the header (8).
    pub const fn header_len(&self) -> usize {
        HEADER_LEN
    }

    /// Length of a message with `payload_len` bytes of data.
    pub const fn buffer_len(&self, payload_len: usize) -> usize {
        HEADER_LEN + payload_len
    }

    /// Writes the header, lets `emit_payload` fill the data, then computes the checksum. The
    /// buffer must be exactly [`buffer_len`](Self::buffer_len)`(payload_len)` long, since the
    /// checksum covers all of it (asserted in debug builds).
    ///
    /// # Panics
    /// If the buffer is shorter than `buffer_len(payload_len)`.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]> + ?Sized>(
        &self,
        packet: &mut Packet<&mut T>,
        src_addr: &IpAddress,
        dst_addr: &IpAddress,
        payload_len: usize,
        emit_payload: impl FnOnce(&mut [u8]),
    ) {
        debug_assert_eq!(packet.buffer.as_ref().len(), self.buffer_len(payload_len));
        packet.set_msg_type(self.kind.msg_type(is_v4(src_addr, dst_addr)));
        packet.set_msg_code(0);
        packet.set_echo_ident(self.ident);
        packet.set_echo_seq_no(self.seq);
        emit_payload(&mut packet.payload_mut()[..payload_len]);
        packet.fill_checksum(src_addr, dst_addr);
    }
}

impl fmt::Display for IcmpEchoRepr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = match self.kind {
            EchoKind::Request => "request",
            EchoKind::Reply => "reply",
        };
        write!(f, "ICMP echo {kind}, id {}, seq {}", self.ident, self.seq)
    }
}

#[cfg(test)]
mod test {
    use super::*;
    use crate::test_util::any_ip_pair;
    use crate::{Ipv4Address, Ipv6Address};
    use proptest::prelude::*;

    // ICMPv4 echo request, id 0x1234, seq 1, data "abcdefgh"; checksum 0x5435 (RFC 1071).
    static ECHO_BYTES: [u8; 16] = [
        0x08, 0x00, 0x54, 0x35, 0x12, 0x34, 0x00, 0x01, 0x61, 0x62, 0x63, 0x64, 0x65, 0x66, 0x67,
        0x68,
    ];

    // ICMPv6 echo reply 2001:db8::1 > 2001:db8::2, same id/seq/data; checksum 0x7f75 with the
    // RFC 8200 pseudo-header.
    static ECHO_V6_BYTES: [u8; 16] = [
        0x81, 0x00, 0x7f, 0x75, 0x12, 0x34, 0x00, 0x01, 0x61, 0x62, 0x63, 0x64, 0x65, 0x66, 0x67,
        0x68,
    ];

    const V4: IpAddress = IpAddress::V4(Ipv4Address::new(192, 0, 2, 1));

    fn v6(last: u8) -> IpAddress {
        let mut a = [0; 16];
        a[..4].copy_from_slice(&[0x20, 0x01, 0x0d, 0xb8]);
        a[15] = last;
        IpAddress::V6(Ipv6Address(a))
    }

    fn repr() -> IcmpEchoRepr {
        IcmpEchoRepr {
            kind: EchoKind::Request,
            ident: 0x1234,
            seq: 1,
        }
    }

    #[test]
    fn test_deconstruct() {
        let p = Packet::new_checked(&ECHO_BYTES[..]).unwrap();
        assert_eq!(Icmpv4Type(p.msg_type()), Icmpv4Type::ECHO_REQUEST);
        assert_eq!(p.msg_code(), 0);
        assert_eq!(p.checksum(), 0x5435);
        assert_eq!(p.rest_of_header(), 0x1234_0001);
        assert_eq!(p.echo_ident(), 0x1234);
        assert_eq!(p.echo_seq_no(), 1);
        assert_eq!(p.payload(), b"abcdefgh");
        assert!(p.verify_checksum(&V4, &V4));
    }

    #[test]
    fn test_construct() {
        let mut bytes = [0xa5u8; 16];
        let mut p = Packet::new_unchecked(&mut bytes[..]);
        p.set_msg_type(8);
        p.set_msg_code(0);
        p.set_rest_of_header(0x1234_0001);
        p.payload_mut().copy_from_slice(b"abcdefgh");
        p.fill_checksum(&V4, &V4);
        assert_eq!(bytes, ECHO_BYTES);
    }

    #[test]
    fn test_impossible_len() {
        assert_eq!(
            Packet::new_checked(&ECHO_BYTES[..7]).err(),
            Some(Error::Truncated)
        );
        let p = Packet::new_unchecked(&ECHO_BYTES[..3]);
        assert_eq!(IcmpEchoRepr::parse(&p, &V4, &V4), Err(Error::Truncated));
    }

    #[test]
    fn test_parse() {
        let p = Packet::new_checked(&ECHO_BYTES[..]).unwrap();
        assert_eq!(IcmpEchoRepr::parse(&p, &V4, &V4), Ok(repr()));
        let p6 = Packet::new_checked(&ECHO_V6_BYTES[..]).unwrap();
        let reply = IcmpEchoRepr {
            kind: EchoKind::Reply,
            ..repr()
        };
        assert_eq!(IcmpEchoRepr::parse(&p6, &v6(1), &v6(2)), Ok(reply));
        assert_eq!(
            IcmpEchoRepr::parse(&p6, &v6(1), &v6(9)),
            Err(Error::Checksum)
        );
    }

    #[test]
    fn test_parse_not_echo() {
        // Destination unreachable (port), code 3, unused rest, no quoted data.
        let mut bytes = [3u8, 3, 0, 0, 0, 0, 0, 0];
        Packet::new_unchecked(&mut bytes[..]).fill_checksum(&V4, &V4);
        let p = Packet::new_checked(&bytes[..]).unwrap();
        assert_eq!(IcmpEchoRepr::parse(&p, &V4, &V4), Err(Error::Unsupported));
        let mut bytes = ECHO_BYTES;
        bytes[1] = 1;
        Packet::new_unchecked(&mut bytes[..]).fill_checksum(&V4, &V4);
        let p = Packet::new_checked(&bytes[..]).unwrap();
        assert_eq!(IcmpEchoRepr::parse(&p, &V4, &V4), Err(Error::Malformed));
    }

    #[test]
    fn test_emit() {
        let mut bytes = [0u8; 16];
        repr().emit(
            &mut Packet::new_unchecked(&mut bytes[..]),
            &V4,
            &V4,
            8,
            |d| d.copy_from_slice(b"abcdefgh"),
        );
        assert_eq!(bytes, ECHO_BYTES);
        let reply = IcmpEchoRepr {
            kind: EchoKind::Reply,
            ..repr()
        };
        let mut bytes = [0u8; 16];
        reply.emit(
            &mut Packet::new_unchecked(&mut bytes[..]),
            &v6(1),
            &v6(2),
            8,
            |d| d.copy_from_slice(b"abcdefgh"),
        );
        assert_eq!(bytes, ECHO_V6_BYTES);
    }

    #[test]
    fn test_display() {
        assert_eq!(repr().to_string(), "ICMP echo request, id 4660, seq 1");
        assert_eq!(Icmpv6Type(129).to_string(), "echo reply");
    }

    proptest! {
        #[test]
        fn roundtrip(
            reply in any::<bool>(), ident in any::<u16>(), seq in any::<u16>(),
            (src, dst) in any_ip_pair(), payload in proptest::collection::vec(any::<u8>(), 0..64),
        ) {
            let kind = if reply { EchoKind::Reply } else { EchoKind::Request };
            let r = IcmpEchoRepr { kind, ident, seq };
            let mut bytes = vec![0u8; r.buffer_len(payload.len())];
            r.emit(&mut Packet::new_unchecked(&mut bytes[..]), &src, &dst, payload.len(), |d| {
                d.copy_from_slice(&payload)
            });
            let p = Packet::new_checked(&bytes[..]).unwrap();
            prop_assert_eq!(IcmpEchoRepr::parse(&p, &src, &dst), Ok(r));
            prop_assert_eq!(p.payload(), &payload[..]);
        }

        #[test]
        fn parse_never_panics(
            bytes in proptest::collection::vec(any::<u8>(), 0..40), (src, dst) in any_ip_pair(),
        ) {
            let p = Packet::new_unchecked(&bytes[..]);
            if IcmpEchoRepr::parse(&p, &src, &dst).is_ok() {
                let _ = p.payload();
            }
        }
    }
}
