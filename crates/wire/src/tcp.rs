//! TCP segment headers (RFC 9293 §3.1, formerly RFC 793; ECE/CWR per RFC 3168).
//!
//! Options are skipped on parse (any data offset ≥ 5 is accepted) and never emitted (data
//! offset 5). TCP has no length field: the segment is the whole buffer, so hand the view a
//! buffer cut to the IP payload.

use core::fmt;

use crate::{
    checksum, read_u16, read_u32, write_u16, write_u32, Error, IpAddress, IpProtocol, Result,
};

/// TCP control bits, an open newtype over the low 12 bits of header word 6 (unknown and
/// reserved bits are kept).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct TcpFlags(pub u16);

impl TcpFlags {
    /// No more data from sender.
    pub const FIN: Self = Self(0x001);
    /// Synchronize sequence numbers.
    pub const SYN: Self = Self(0x002);
    /// Reset the connection.
    pub const RST: Self = Self(0x004);
    /// Push function.
    pub const PSH: Self = Self(0x008);
    /// Acknowledgment field is significant.
    pub const ACK: Self = Self(0x010);
    /// Urgent pointer field is significant.
    pub const URG: Self = Self(0x020);
    /// ECN-Echo (RFC 3168).
    pub const ECE: Self = Self(0x040);
    /// Congestion window reduced (RFC 3168).
    pub const CWR: Self = Self(0x080);
    /// Accurate-ECN bit, formerly NS (RFC 3540, historic).
    pub const AE: Self = Self(0x100);

    /// The empty set.
    pub const fn empty() -> Self {
        Self(0)
    }

    /// True if every bit of `other` is set here.
    pub const fn contains(self, other: Self) -> bool {
        self.0 & other.0 == other.0
    }

    /// True if no bit is set.
    pub const fn is_empty(self) -> bool {
        self.0 == 0
    }
}

impl core::ops::BitOr for TcpFlags {
    type Output = Self;
    fn bitor(self, rhs: Self) -> Self {
        Self(self.0 | rhs.0)
    }
}

impl core::ops::BitOrAssign for TcpFlags {
    fn bitor_assign(&mut self, rhs: Self) {
        self.0 |= rhs.0;
    }
}

/// Like tcpdump: `[S.]` for SYN+ACK, `[P.]`, `[F.]`, `[none]`.
impl fmt::Display for TcpFlags {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // tcpdump's order (print-tcp.c tcp_flag_values): F S R P . U E W e
        const CHARS: [(TcpFlags, char); 9] = [
            (TcpFlags::FIN, 'F'),
            (TcpFlags::SYN, 'S'),
            (TcpFlags::RST, 'R'),
            (TcpFlags::PSH, 'P'),
            (TcpFlags::ACK, '.'),
            (TcpFlags::URG, 'U'),
            (TcpFlags::ECE, 'E'),
            (TcpFlags::CWR, 'W'),
            (TcpFlags::AE, 'e'),
        ];
        f.write_str("[")?;
        let mut any = false;
        for (flag, c) in CHARS {
            if self.contains(flag) {
                write!(f, "{c}")?;
                any = true;
            }
        }
        if !any {
            f.write_str("none")?;
        }
        f.write_str("]")
    }
}

impl fmt::Debug for TcpFlags {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "TcpFlags({:#05x} {})", self.0, self)
    }
}

mod field {
    use crate::Field;

    pub(crate) const SRC_PORT: Field = 0..2;
    pub(crate) const DST_PORT: Field = 2..4;
    pub(crate) const SEQ_NUM: Field = 4..8;
    pub(crate) const ACK_NUM: Field = 8..12;
    pub(crate) const OFF_FLAGS: Field = 12..14;
    pub(crate) const WINDOW: Field = 14..16;
    pub(crate) const CHECKSUM: Field = 16..18;
    pub(crate) const URGENT: Field = 18..20;
}

/// Length of a TCP header without options.
pub const HEADER_LEN: usize = field::URGENT.end;

const FLAGS_MASK: u16 = 0x0fff;

/// A read/write view of a TCP segment.
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

    /// Checks the data offset against the buffer.
    ///
    /// # Errors
    /// [`Error::Truncated`] if the buffer is shorter than 20 bytes or the data offset;
    /// [`Error::Malformed`] if the data offset is below 5 words.
    pub fn check_len(&self) -> Result<()> {
        let len = self.buffer.as_ref().len();
        if len < HEADER_LEN {
            return Err(Error::Truncated);
        }
        let header_len = usize::from(self.header_len());
        if header_len < HEADER_LEN {
            Err(Error::Malformed)
        } else if header_len > len {
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

    /// Sequence number.
    pub fn seq_number(&self) -> u32 {
        read_u32(self.buffer.as_ref(), field::SEQ_NUM)
    }

    /// Acknowledgment number.
    pub fn ack_number(&self) -> u32 {
        read_u32(self.buffer.as_ref(), field::ACK_NUM)
    }

    /// Header length in bytes (data offset × 4).
    pub fn header_len(&self) -> u8 {
        (self.buffer.as_ref()[field::OFF_FLAGS.start] >> 4) * 4
    }

    /// Control bits.
    pub fn flags(&self) -> TcpFlags {
        TcpFlags(read_u16(self.buffer.as_ref(), field::OFF_FLAGS) & FLAGS_MASK)
    }

    /// Window size.
    pub fn window_len(&self) -> u16 {
        read_u16(self.buffer.as_ref(), field::WINDOW)
    }

    /// Checksum field.
    pub fn checksum(&self) -> u16 {
        read_u16(self.buffer.as_ref(), field::CHECKSUM)
    }

    /// Urgent pointer.
    pub fn urgent_at(&self) -> u16 {
        read_u16(self.buffer.as_ref(), field::URGENT)
    }

    /// True if the checksum over the pseudo-header and the whole buffer is right.
    /// Always true under `cfg(fuzzing)`.
    pub fn verify_checksum(&self, src_addr: &IpAddress, dst_addr: &IpAddress) -> bool {
        if cfg!(fuzzing) {
            return true;
        }
        let data = self.buffer.as_ref();
        let pseudo =
            checksum::pseudo_header(src_addr, dst_addr, IpProtocol::TCP, data.len() as u32);
        checksum::combine(&[pseudo, checksum::data(data)]) == 0xffff
    }
}

impl<'a, T: AsRef<[u8]> + ?Sized> Packet<&'a T> {
    /// Options (between the fixed header and the data offset), unparsed.
    pub fn options(&self) -> &'a [u8] {
        &self.buffer.as_ref()[HEADER_LEN..usize::from(self.header_len())]
    }

    /// The payload: everything after the data offset.
    pub fn payload(&self) -> &'a [u8] {
        &self.buffer.as_ref()[usize::from(self.header_len())..]
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

    /// Sets the sequence number.
    pub fn set_seq_number(&mut self, seq: u32) {
        write_u32(self.buffer.as_mut(), field::SEQ_NUM, seq);
    }

    /// Sets the acknowledgment number.
    pub fn set_ack_number(&mut self, ack: u32) {
        write_u32(self.buffer.as_mut(), field::ACK_NUM, ack);
    }

    /// Sets the header length in bytes (a multiple of 4, at most 60).
    pub fn set_header_len(&mut self, len: u8) {
        let b = &mut self.buffer.as_mut()[field::OFF_FLAGS.start];
        *b = (*b & 0x0f) | ((len / 4) << 4);
    }

    /// Sets the control bits (the low 12 bits of `flags`).
    pub fn set_flags(&mut self, flags: TcpFlags) {
        let old = read_u16(self.buffer.as_ref(), field::OFF_FLAGS);
        let new = old & !FLAGS_MASK | flags.0 & FLAGS_MASK;
        write_u16(self.buffer.as_mut(), field::OFF_FLAGS, new);
    }

    /// Sets the window size.
    pub fn set_window_len(&mut self, window: u16) {
        write_u16(self.buffer.as_mut(), field::WINDOW, window);
    }

    /// Sets the checksum field.
    pub fn set_checksum(&mut self, value: u16) {
        write_u16(self.buffer.as_mut(), field::CHECKSUM, value);
    }

    /// Sets the urgent pointer.
    pub fn set_urgent_at(&mut self, value: u16) {
        write_u16(self.buffer.as_mut(), field::URGENT, value);
    }

    /// Computes and stores the checksum over the pseudo-header and the whole buffer.
    pub fn fill_checksum(&mut self, src_addr: &IpAddress, dst_addr: &IpAddress) {
        self.set_checksum(0);
        let data = self.buffer.as_ref();
        let pseudo =
            checksum::pseudo_header(src_addr, dst_addr, IpProtocol::TCP, data.len() as u32);
        let sum = checksum::finish(&[pseudo, checksum::data(data)]);
        self.set_checksum(sum);
    }

    /// The payload, writable.
    pub fn payload_mut(&mut self) -> &mut [u8] {
        let start = usize::from(self.header_len());
        &mut self.buffer.as_mut()[start..]
    }
}

/// The meaning of a TCP header without options.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TcpRepr {
    /// Source port.
    pub src_port: u16,
    /// Destination port.
    pub dst_port: u16,
    /// Sequence number.
    pub seq: u32,
    /// Acknowledgment number (kept even when ACK is not set).
    pub ack: u32,
    /// Control bits.
    pub flags: TcpFlags,
    /// Window size.
    pub window: u16,
}

impl TcpRepr {
    /// Reads a header (options skipped) and checks the checksum over the whole buffer.
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
            seq: packet.seq_number(),
            ack: packet.ack_number(),
            flags: packet.flags(),
            window: packet.window_len(),
        })
    }

    /// Length of the emitted header (20).
    pub const fn header_len(&self) -> usize {
        HEADER_LEN
    }

    /// Length of a segment with `payload_len` bytes of payload.
    pub const fn buffer_len(&self, payload_len: usize) -> usize {
        HEADER_LEN + payload_len
    }

    /// Writes the header (data offset 5, urgent pointer 0), lets `emit_payload` fill the
    /// payload, then computes the checksum. The buffer must be exactly
    /// [`buffer_len`](Self::buffer_len)`(payload_len)` long, since the checksum covers all of
    /// it (asserted in debug builds).
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
        packet.set_src_port(self.src_port);
        packet.set_dst_port(self.dst_port);
        packet.set_seq_number(self.seq);
        packet.set_ack_number(self.ack);
        packet.set_header_len(HEADER_LEN as u8);
        packet.set_flags(self.flags);
        packet.set_window_len(self.window);
        packet.set_urgent_at(0);
        emit_payload(&mut packet.payload_mut()[..payload_len]);
        packet.fill_checksum(src_addr, dst_addr);
    }
}

impl fmt::Display for TcpRepr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "TCP {} > {}: Flags {}, seq {}, ack {}, win {}",
            self.src_port, self.dst_port, self.flags, self.seq, self.ack, self.window
        )
    }
}

#[cfg(test)]
mod test {
    use super::*;
    use crate::test_util::any_ip_pair;
    use crate::Ipv4Address;
    use proptest::prelude::*;

    // 10.0.0.1:43210 > 10.0.0.2:80, Flags [P.], seq 0x12345678, ack 0x9abcdef0, win 64240,
    // payload "hi!\n"; checksum 0x8bed computed with the RFC 9293 pseudo-header.
    static PACKET_BYTES: [u8; 24] = [
        0xa8, 0xca, 0x00, 0x50, 0x12, 0x34, 0x56, 0x78, 0x9a, 0xbc, 0xde, 0xf0, 0x50, 0x18, 0xfa,
        0xf0, 0x8b, 0xed, 0x00, 0x00, 0x68, 0x69, 0x21, 0x0a,
    ];

    const SRC: IpAddress = IpAddress::V4(Ipv4Address::new(10, 0, 0, 1));
    const DST: IpAddress = IpAddress::V4(Ipv4Address::new(10, 0, 0, 2));

    fn repr() -> TcpRepr {
        TcpRepr {
            src_port: 43210,
            dst_port: 80,
            seq: 0x1234_5678,
            ack: 0x9abc_def0,
            flags: TcpFlags::PSH | TcpFlags::ACK,
            window: 64240,
        }
    }

    #[test]
    fn test_deconstruct() {
        let p = Packet::new_checked(&PACKET_BYTES[..]).unwrap();
        assert_eq!(p.src_port(), 43210);
        assert_eq!(p.dst_port(), 80);
        assert_eq!(p.seq_number(), 0x1234_5678);
        assert_eq!(p.ack_number(), 0x9abc_def0);
        assert_eq!(p.header_len(), 20);
        assert_eq!(p.flags(), TcpFlags::PSH | TcpFlags::ACK);
        assert_eq!(p.window_len(), 64240);
        assert_eq!(p.checksum(), 0x8bed);
        assert_eq!(p.urgent_at(), 0);
        assert!(p.options().is_empty());
        assert_eq!(p.payload(), b"hi!\n");
        assert!(p.verify_checksum(&SRC, &DST));
    }

    #[test]
    fn test_construct() {
        let mut bytes = [0xa5u8; 24];
        let mut p = Packet::new_unchecked(&mut bytes[..]);
        p.set_src_port(43210);
        p.set_dst_port(80);
        p.set_seq_number(0x1234_5678);
        p.set_ack_number(0x9abc_def0);
        p.set_header_len(20);
        p.set_flags(TcpFlags::PSH | TcpFlags::ACK);
        p.set_window_len(64240);
        p.set_urgent_at(0);
        p.payload_mut().copy_from_slice(b"hi!\n");
        p.fill_checksum(&SRC, &DST);
        assert_eq!(bytes, PACKET_BYTES);
    }

    #[test]
    fn test_impossible_len() {
        assert_eq!(
            Packet::new_checked(&PACKET_BYTES[..19]).err(),
            Some(Error::Truncated)
        );
        let mut bytes = PACKET_BYTES;
        bytes[12] = 0x40; // data offset 4
        assert_eq!(
            Packet::new_checked(&bytes[..]).err(),
            Some(Error::Malformed)
        );
        bytes[12] = 0x70; // 28-byte header in 24 bytes
        assert_eq!(
            Packet::new_checked(&bytes[..]).err(),
            Some(Error::Truncated)
        );
    }

    #[test]
    fn test_parse() {
        let p = Packet::new_checked(&PACKET_BYTES[..]).unwrap();
        assert_eq!(TcpRepr::parse(&p, &SRC, &DST), Ok(repr()));
        assert_eq!(TcpRepr::parse(&p, &SRC, &SRC), Err(Error::Checksum));
    }

    #[test]
    fn test_parse_options() {
        // Data offset 6 with an MSS option (kind 2, len 4, 1460); payload follows it.
        let mut bytes = [0u8; 28];
        bytes[..20].copy_from_slice(&PACKET_BYTES[..20]);
        bytes[20..24].copy_from_slice(&[2, 4, 0x05, 0xb4]);
        bytes[24..].copy_from_slice(b"hi!\n");
        let mut p = Packet::new_unchecked(&mut bytes[..]);
        p.set_header_len(24);
        p.fill_checksum(&SRC, &DST);
        let p = Packet::new_checked(&bytes[..]).unwrap();
        assert_eq!(TcpRepr::parse(&p, &SRC, &DST), Ok(repr()));
        assert_eq!(p.options(), &[2, 4, 0x05, 0xb4]);
        assert_eq!(p.payload(), b"hi!\n");
    }

    #[test]
    fn test_emit() {
        let mut bytes = [0u8; 24];
        repr().emit(
            &mut Packet::new_unchecked(&mut bytes[..]),
            &SRC,
            &DST,
            4,
            |p| p.copy_from_slice(b"hi!\n"),
        );
        assert_eq!(bytes, PACKET_BYTES);
    }

    #[test]
    fn test_display() {
        assert_eq!(
            repr().to_string(),
            "TCP 43210 > 80: Flags [P.], seq 305419896, ack 2596069104, win 64240"
        );
        assert_eq!((TcpFlags::SYN | TcpFlags::ACK).to_string(), "[S.]");
        assert_eq!(TcpFlags::empty().to_string(), "[none]");
        assert_eq!(
            (TcpFlags::FIN | TcpFlags::ECE | TcpFlags::CWR).to_string(),
            "[FEW]"
        );
        assert_eq!(format!("{:?}", TcpFlags::SYN), "TcpFlags(0x002 [S])");
    }

    proptest! {
        #[test]
        fn roundtrip(
            src_port in any::<u16>(), dst_port in any::<u16>(), seq in any::<u32>(),
            ack in any::<u32>(), flags in 0u16..0x1000, window in any::<u16>(),
            (src, dst) in any_ip_pair(), payload in proptest::collection::vec(any::<u8>(), 0..64),
        ) {
            let r = TcpRepr { src_port, dst_port, seq, ack, flags: TcpFlags(flags), window };
            let mut bytes = vec![0u8; r.buffer_len(payload.len())];
            r.emit(&mut Packet::new_unchecked(&mut bytes[..]), &src, &dst, payload.len(), |p| {
                p.copy_from_slice(&payload)
            });
            let p = Packet::new_checked(&bytes[..]).unwrap();
            prop_assert_eq!(TcpRepr::parse(&p, &src, &dst), Ok(r));
            prop_assert_eq!(p.payload(), &payload[..]);
        }

        #[test]
        fn parse_never_panics(
            bytes in proptest::collection::vec(any::<u8>(), 0..80), (src, dst) in any_ip_pair(),
        ) {
            let p = Packet::new_unchecked(&bytes[..]);
            if TcpRepr::parse(&p, &src, &dst).is_ok() {
                let _ = (p.payload(), p.options());
            }
        }
    }
}
