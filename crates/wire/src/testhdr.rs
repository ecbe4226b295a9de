//! The wirebench test header: 18 bytes carried right after the L4 header (or right after
//! the EtherType [`EXPERIMENTAL`](crate::EtherType::EXPERIMENTAL) in raw L2 frames).
//!
//! ```text
//!  0        1        2        4        5                  10                         18
//! +--------+--------+--------+--------+------------------+--------------------------+
//! | 0x57   |ver|flg | test id| stream | sequence (u40)   | tx timestamp, ns (u64)    |
//! +--------+--------+--------+--------+------------------+--------------------------+
//! ```
//!
//! All fields are big-endian. The version is the high nibble of byte 1 (currently 1); the low
//! nibble holds [`TestFlags`] (bit 3 is reserved: written as 0, ignored on parse). The
//! timestamp is nanoseconds since the Unix epoch (`CLOCK_REALTIME`). 18 bytes let a 64-byte
//! Ethernet frame (FCS included) with IPv4 and UDP carry the header: 14 + 20 + 8 + 18 + 4 = 64.
//!
//! Senders emit a header once per buffer and then only rewrite sequence and timestamp with
//! [`write_seq_ts`]; receivers use [`parse_fast`]. Both are branch-light and copy-only.

use core::fmt;

use crate::{read_u16, write_u16, Error, Result};

/// The magic byte, ASCII `W`.
pub const MAGIC: u8 = 0x57;
/// The header version this crate writes and reads.
pub const VERSION: u8 = 1;
/// Length of the test header.
pub const HEADER_LEN: usize = 18;
/// Largest sequence number (40 bits).
pub const SEQ_MAX: u64 = (1 << 40) - 1;

/// Test header flags (the low nibble of byte 1), an open newtype.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct TestFlags(pub u8);

impl TestFlags {
    /// The receiver must send this packet back (with [`ECHO_REPLY`](Self::ECHO_REPLY)).
    pub const ECHO_REQUEST: Self = Self(0x1);
    /// This packet is an echoed packet.
    pub const ECHO_REPLY: Self = Self(0x2);
    /// A registration/handshake datagram, not test data.
    pub const CONTROL: Self = Self(0x4);
    /// The bits defined by version 1; the fourth bit is reserved.
    pub const DEFINED: Self = Self(0x7);

    const NAMES: [(TestFlags, &'static str); 3] = [
        (TestFlags::ECHO_REQUEST, "ECHO_REQUEST"),
        (TestFlags::ECHO_REPLY, "ECHO_REPLY"),
        (TestFlags::CONTROL, "CONTROL"),
    ];

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

impl core::ops::BitOr for TestFlags {
    type Output = Self;
    fn bitor(self, rhs: Self) -> Self {
        Self(self.0 | rhs.0)
    }
}

impl core::ops::BitOrAssign for TestFlags {
    fn bitor_assign(&mut self, rhs: Self) {
        self.0 |= rhs.0;
    }
}

/// `ECHO_REQUEST|CONTROL`, `none`, unknown bits as hex (`ECHO_REPLY|0x8`).
impl fmt::Display for TestFlags {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_empty() {
            return f.write_str("none");
        }
        let mut sep = "";
        for (flag, name) in Self::NAMES {
            if self.contains(flag) {
                write!(f, "{sep}{name}")?;
                sep = "|";
            }
        }
        let unknown = self.0 & !Self::DEFINED.0;
        if unknown != 0 {
            write!(f, "{sep}{unknown:#x}")?;
        }
        Ok(())
    }
}

impl fmt::Debug for TestFlags {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "TestFlags({self})")
    }
}

mod field {
    use crate::Field;

    pub(crate) const MAGIC: usize = 0;
    pub(crate) const VER_FLAGS: usize = 1;
    pub(crate) const TEST_ID: Field = 2..4;
    pub(crate) const STREAM_ID: usize = 4;
    pub(crate) const SEQ: Field = 5..10;
    pub(crate) const TX_NS: Field = 10..18;
    pub(crate) const PAYLOAD: usize = 18;
}

/// A read/write view of a test header and what follows it (padding).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TestHeader<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> TestHeader<T> {
    /// Wraps a buffer without checking its length (for emission into a sized buffer).
    pub const fn new_unchecked(buffer: T) -> Self {
        Self { buffer }
    }

    /// Wraps a buffer and checks that accessors cannot panic.
    ///
    /// # Errors
    /// [`Error::Truncated`] if the buffer is shorter than [`HEADER_LEN`].
    pub fn new_checked(buffer: T) -> Result<Self> {
        let hdr = Self::new_unchecked(buffer);
        hdr.check_len()?;
        Ok(hdr)
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

    /// The magic byte ([`MAGIC`] in a valid header).
    pub fn magic(&self) -> u8 {
        self.buffer.as_ref()[field::MAGIC]
    }

    /// The version nibble.
    pub fn version(&self) -> u8 {
        self.buffer.as_ref()[field::VER_FLAGS] >> 4
    }

    /// The flags nibble as it is on the wire (reserved bit included).
    pub fn flags(&self) -> TestFlags {
        TestFlags(self.buffer.as_ref()[field::VER_FLAGS] & 0x0f)
    }

    /// Test id.
    pub fn test_id(&self) -> u16 {
        read_u16(self.buffer.as_ref(), field::TEST_ID)
    }

    /// Stream id.
    pub fn stream_id(&self) -> u8 {
        self.buffer.as_ref()[field::STREAM_ID]
    }

    /// Sequence number (40 bits).
    pub fn seq(&self) -> u64 {
        let mut b = [0; 8];
        b[3..].copy_from_slice(&self.buffer.as_ref()[field::SEQ]);
        u64::from_be_bytes(b)
    }

    /// Transmit timestamp, ns since the Unix epoch.
    pub fn tx_ns(&self) -> u64 {
        let mut b = [0; 8];
        b.copy_from_slice(&self.buffer.as_ref()[field::TX_NS]);
        u64::from_be_bytes(b)
    }
}

impl<'a, T: AsRef<[u8]> + ?Sized> TestHeader<&'a T> {
    /// Everything after the header (padding).
    pub fn payload(&self) -> &'a [u8] {
        &self.buffer.as_ref()[field::PAYLOAD..]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> TestHeader<T> {
    /// Sets the magic byte.
    pub fn set_magic(&mut self, magic: u8) {
        self.buffer.as_mut()[field::MAGIC] = magic;
    }

    /// Sets the version nibble.
    pub fn set_version(&mut self, version: u8) {
        let b = &mut self.buffer.as_mut()[field::VER_FLAGS];
        *b = (*b & 0x0f) | (version << 4);
    }

    /// Sets the flags nibble (all four bits as given).
    pub fn set_flags(&mut self, flags: TestFlags) {
        let b = &mut self.buffer.as_mut()[field::VER_FLAGS];
        *b = (*b & 0xf0) | (flags.0 & 0x0f);
    }

    /// Sets the test id.
    pub fn set_test_id(&mut self, id: u16) {
        write_u16(self.buffer.as_mut(), field::TEST_ID, id);
    }

    /// Sets the stream id.
    pub fn set_stream_id(&mut self, id: u8) {
        self.buffer.as_mut()[field::STREAM_ID] = id;
    }

    /// Sets the sequence number (the low 40 bits of `seq`).
    pub fn set_seq(&mut self, seq: u64) {
        self.buffer.as_mut()[field::SEQ].copy_from_slice(&seq.to_be_bytes()[3..]);
    }

    /// Sets the transmit timestamp.
    pub fn set_tx_ns(&mut self, tx_ns: u64) {
        self.buffer.as_mut()[field::TX_NS].copy_from_slice(&tx_ns.to_be_bytes());
    }

    /// Everything after the header, writable.
    pub fn payload_mut(&mut self) -> &mut [u8] {
        &mut self.buffer.as_mut()[field::PAYLOAD..]
    }
}

/// The meaning of a test header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct TestHeaderRepr {
    /// Flags (only [`TestFlags::DEFINED`] bits are emitted; parse drops the reserved bit).
    pub flags: TestFlags,
    /// Test id, shared by all streams of one test.
    pub test_id: u16,
    /// Stream id within the test.
    pub stream_id: u8,
    /// Sequence number, 0..=[`SEQ_MAX`].
    pub seq: u64,
    /// Transmit timestamp, ns since the Unix epoch (`CLOCK_REALTIME`).
    pub tx_ns: u64,
}

impl TestHeaderRepr {
    /// The header a stream's frames are built from: no flags, sequence number and
    /// transmit time 0 (a sender patches both into each copy).
    pub fn template(test_id: u16, stream_id: u8) -> Self {
        Self {
            flags: TestFlags::empty(),
            test_id,
            stream_id,
            seq: 0,
            tx_ns: 0,
        }
    }

    /// Reads a header.
    ///
    /// # Errors
    /// [`Error::Truncated`] if shorter than 18 bytes, [`Error::Malformed`] if the magic byte
    /// is wrong, [`Error::Unsupported`] if the version is not [`VERSION`].
    pub fn parse<T: AsRef<[u8]> + ?Sized>(hdr: &TestHeader<&T>) -> Result<Self> {
        hdr.check_len()?;
        if hdr.magic() != MAGIC {
            return Err(Error::Malformed);
        }
        if hdr.version() != VERSION {
            return Err(Error::Unsupported);
        }
        Ok(Self {
            flags: TestFlags(hdr.flags().0 & TestFlags::DEFINED.0),
            test_id: hdr.test_id(),
            stream_id: hdr.stream_id(),
            seq: hdr.seq(),
            tx_ns: hdr.tx_ns(),
        })
    }

    /// Length of the header (18).
    pub const fn header_len(&self) -> usize {
        HEADER_LEN
    }

    /// Length of a header followed by `padding_len` bytes.
    pub const fn buffer_len(&self, padding_len: usize) -> usize {
        HEADER_LEN + padding_len
    }

    /// The 18 header bytes.
    ///
    /// A `seq` above [`SEQ_MAX`] panics in debug builds and keeps its low 40 bits (wraps) in
    /// release builds; [`FrameSpec::build`](crate::frame::FrameSpec::build) returns
    /// [`Error::OutOfRange`] instead. Reserved flag bits are cleared.
    #[inline]
    pub fn to_bytes(&self) -> [u8; HEADER_LEN] {
        debug_assert!(
            self.seq <= SEQ_MAX,
            "test header seq {} > SEQ_MAX",
            self.seq
        );
        let mut b = [0u8; HEADER_LEN];
        b[field::MAGIC] = MAGIC;
        b[field::VER_FLAGS] = (VERSION << 4) | (self.flags.0 & TestFlags::DEFINED.0);
        b[field::TEST_ID].copy_from_slice(&self.test_id.to_be_bytes());
        b[field::STREAM_ID] = self.stream_id;
        b[field::SEQ].copy_from_slice(&self.seq.to_be_bytes()[3..]);
        b[field::TX_NS].copy_from_slice(&self.tx_ns.to_be_bytes());
        b
    }

    /// Writes the header with one 18-byte copy (see [`to_bytes`](Self::to_bytes) for `seq`).
    ///
    /// # Panics
    /// If the buffer is shorter than [`HEADER_LEN`].
    #[inline]
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]> + ?Sized>(&self, hdr: &mut TestHeader<&mut T>) {
        hdr.buffer.as_mut()[..HEADER_LEN].copy_from_slice(&self.to_bytes());
    }

    #[inline]
    fn from_bytes(b: &[u8; HEADER_LEN]) -> Self {
        let mut seq = [0u8; 8];
        seq[3..].copy_from_slice(&b[field::SEQ]);
        let mut ts = [0u8; 8];
        ts.copy_from_slice(&b[field::TX_NS]);
        Self {
            flags: TestFlags(b[field::VER_FLAGS] & TestFlags::DEFINED.0),
            test_id: u16::from_be_bytes([b[2], b[3]]),
            stream_id: b[field::STREAM_ID],
            seq: u64::from_be_bytes(seq),
            tx_ns: u64::from_be_bytes(ts),
        }
    }
}

impl fmt::Display for TestHeaderRepr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "wirebench v{VERSION} test {} stream {} seq {} tx {}.{:09} [{}]",
            self.test_id,
            self.stream_id,
            self.seq,
            self.tx_ns / 1_000_000_000,
            self.tx_ns % 1_000_000_000,
            self.flags
        )
    }
}

/// Rewrites sequence number and timestamp of a header already emitted at the start of `buf`
/// (hot path: one 13-byte copy). `seq` keeps its low 40 bits; debug builds assert
/// `seq <= SEQ_MAX`.
///
/// # Panics
/// If `buf` is shorter than [`HEADER_LEN`].
#[inline]
pub fn write_seq_ts(buf: &mut [u8], seq: u64, tx_ns: u64) {
    debug_assert!(seq <= SEQ_MAX, "test header seq {seq} > SEQ_MAX");
    let mut b = [0u8; HEADER_LEN - field::SEQ.start];
    b[..5].copy_from_slice(&seq.to_be_bytes()[3..]);
    b[5..].copy_from_slice(&tx_ns.to_be_bytes());
    buf[field::SEQ.start..HEADER_LEN].copy_from_slice(&b);
}

/// Replaces the flags of an already emitted header in place (hot path: turning a received
/// datagram into its echo, marking a probe), keeping the version nibble.
///
/// # Panics
/// If `buf` is shorter than 2 bytes.
#[inline]
pub fn write_flags(buf: &mut [u8], flags: TestFlags) {
    buf[field::VER_FLAGS] = (buf[field::VER_FLAGS] & 0xf0) | (flags.0 & 0x0f);
}

/// Reads a header from the start of `buf` for the hot path: `None` unless `buf` holds at
/// least 18 bytes starting with [`MAGIC`] and version [`VERSION`]. Never panics.
#[inline]
pub fn parse_fast(buf: &[u8]) -> Option<TestHeaderRepr> {
    let b: &[u8; HEADER_LEN] = buf.get(..HEADER_LEN)?.try_into().ok()?;
    if b[field::MAGIC] != MAGIC || b[field::VER_FLAGS] >> 4 != VERSION {
        return None;
    }
    Some(TestHeaderRepr::from_bytes(b))
}

#[cfg(test)]
mod test {
    use super::*;
    use proptest::prelude::*;

    // Flags ECHO_REQUEST, test 0x0102, stream 3, seq 0x01_2345_6789,
    // tx 1_700_000_000_123_456_789 ns, then 2 padding bytes.
    static HEADER_BYTES: [u8; 20] = [
        0x57, 0x11, 0x01, 0x02, 0x03, 0x01, 0x23, 0x45, 0x67, 0x89, 0x17, 0x97, 0x9c, 0xfe, 0x3d,
        0x85, 0xcd, 0x15, 0x00, 0x00,
    ];

    fn repr() -> TestHeaderRepr {
        TestHeaderRepr {
            flags: TestFlags::ECHO_REQUEST,
            test_id: 0x0102,
            stream_id: 3,
            seq: 0x01_2345_6789,
            tx_ns: 1_700_000_000_123_456_789,
        }
    }

    #[test]
    fn test_deconstruct() {
        let h = TestHeader::new_checked(&HEADER_BYTES[..]).unwrap();
        assert_eq!(h.magic(), MAGIC);
        assert_eq!(h.version(), 1);
        assert_eq!(h.flags(), TestFlags::ECHO_REQUEST);
        assert_eq!(h.test_id(), 0x0102);
        assert_eq!(h.stream_id(), 3);
        assert_eq!(h.seq(), 0x01_2345_6789);
        assert_eq!(h.tx_ns(), 1_700_000_000_123_456_789);
        assert_eq!(h.payload(), &[0, 0]);
    }

    #[test]
    fn test_construct() {
        let mut bytes = [0u8; 20];
        let mut h = TestHeader::new_unchecked(&mut bytes[..]);
        h.set_magic(MAGIC);
        h.set_version(1);
        h.set_flags(TestFlags::ECHO_REQUEST);
        h.set_test_id(0x0102);
        h.set_stream_id(3);
        h.set_seq(0x01_2345_6789);
        h.set_tx_ns(1_700_000_000_123_456_789);
        h.payload_mut().fill(0);
        assert_eq!(bytes, HEADER_BYTES);
    }

    #[test]
    fn test_impossible_len() {
        assert_eq!(
            TestHeader::new_checked(&HEADER_BYTES[..17]).err(),
            Some(Error::Truncated)
        );
        let h = TestHeader::new_unchecked(&HEADER_BYTES[..17]);
        assert_eq!(TestHeaderRepr::parse(&h), Err(Error::Truncated));
        assert_eq!(parse_fast(&HEADER_BYTES[..17]), None);
    }

    #[test]
    fn test_parse() {
        let h = TestHeader::new_checked(&HEADER_BYTES[..]).unwrap();
        assert_eq!(TestHeaderRepr::parse(&h), Ok(repr()));
        assert_eq!(parse_fast(&HEADER_BYTES), Some(repr()));
    }

    #[test]
    fn test_parse_errors() {
        let mut bytes = HEADER_BYTES;
        bytes[0] = b'X';
        let parse = |b: &[u8]| TestHeaderRepr::parse(&TestHeader::new_unchecked(b));
        assert_eq!(parse(&bytes), Err(Error::Malformed));
        assert_eq!(parse_fast(&bytes), None);
        let mut bytes = HEADER_BYTES;
        bytes[1] = 0x21; // version 2
        assert_eq!(parse(&bytes), Err(Error::Unsupported));
        assert_eq!(parse_fast(&bytes), None);
        // The reserved flag bit is ignored.
        let mut bytes = HEADER_BYTES;
        bytes[1] = 0x19;
        assert_eq!(parse(&bytes), Ok(repr()));
        assert_eq!(parse_fast(&bytes), Some(repr()));
    }

    #[test]
    fn test_emit() {
        let mut bytes = [0u8; 20];
        repr().emit(&mut TestHeader::new_unchecked(&mut bytes[..]));
        assert_eq!(bytes, HEADER_BYTES);
        // The reserved bit is never emitted.
        let r = TestHeaderRepr {
            flags: TestFlags(0xf),
            ..repr()
        };
        assert_eq!(r.to_bytes()[1], 0x17);
    }

    #[test]
    fn test_write_seq_ts() {
        let mut bytes = HEADER_BYTES;
        write_seq_ts(&mut bytes, SEQ_MAX, u64::MAX);
        let r = parse_fast(&bytes).unwrap();
        assert_eq!((r.seq, r.tx_ns), (SEQ_MAX, u64::MAX));
        assert_eq!(
            (r.test_id, r.stream_id, r.flags),
            (0x0102, 3, TestFlags::ECHO_REQUEST)
        );
        assert_eq!(&bytes[18..], &[0, 0]);
    }

    #[test]
    fn test_display() {
        assert_eq!(
            repr().to_string(),
            "wirebench v1 test 258 stream 3 seq 4886718345 tx 1700000000.123456789 [ECHO_REQUEST]"
        );
        assert_eq!(
            (TestFlags::ECHO_REPLY | TestFlags::CONTROL).to_string(),
            "ECHO_REPLY|CONTROL"
        );
        assert_eq!(TestFlags(0xa).to_string(), "ECHO_REPLY|0x8");
        assert_eq!(TestFlags::empty().to_string(), "none");
    }

    prop_compose! {
        fn any_repr()(
            flags in 0u8..8, test_id in any::<u16>(), stream_id in any::<u8>(),
            seq in 0..=SEQ_MAX, tx_ns in any::<u64>(),
        ) -> TestHeaderRepr {
            TestHeaderRepr { flags: TestFlags(flags), test_id, stream_id, seq, tx_ns }
        }
    }

    proptest! {
        #[test]
        fn roundtrip(r in any_repr(), padding in 0usize..8) {
            let mut bytes = vec![0xeeu8; r.buffer_len(padding)];
            r.emit(&mut TestHeader::new_unchecked(&mut bytes[..]));
            let h = TestHeader::new_checked(&bytes[..]).unwrap();
            prop_assert_eq!(TestHeaderRepr::parse(&h), Ok(r));
            prop_assert_eq!(parse_fast(&bytes), Some(r));
            prop_assert_eq!(h.seq(), r.seq);
            prop_assert_eq!(h.tx_ns(), r.tx_ns);
        }

        #[test]
        fn fast_path_agrees_with_view(r in any_repr(), seq in 0..=SEQ_MAX, tx_ns in any::<u64>()) {
            let mut fast = r.to_bytes();
            write_seq_ts(&mut fast, seq, tx_ns);
            let mut slow = [0u8; HEADER_LEN];
            let mut h = TestHeader::new_unchecked(&mut slow[..]);
            r.emit(&mut h);
            h.set_seq(seq);
            h.set_tx_ns(tx_ns);
            prop_assert_eq!(fast, slow);
            prop_assert_eq!(parse_fast(&fast), Some(TestHeaderRepr { seq, tx_ns, ..r }));
        }

        #[test]
        fn parse_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..24)) {
            let fast = parse_fast(&bytes);
            let slow = TestHeaderRepr::parse(&TestHeader::new_unchecked(&bytes[..]));
            prop_assert_eq!(fast, slow.ok());
        }
    }

    #[test]
    fn write_flags_keeps_version_and_fields() {
        let repr = TestHeaderRepr {
            flags: TestFlags::ECHO_REQUEST,
            test_id: 0x1234,
            stream_id: 9,
            seq: 77,
            tx_ns: 5,
        };
        let mut b = repr.to_bytes();
        write_flags(&mut b, TestFlags::ECHO_REPLY);
        let back = parse_fast(&b).unwrap();
        assert_eq!(
            back,
            TestHeaderRepr {
                flags: TestFlags::ECHO_REPLY,
                ..repr
            }
        );
        write_flags(&mut b, TestFlags::empty());
        assert_eq!(parse_fast(&b).unwrap().flags, TestFlags::empty());
    }
}
