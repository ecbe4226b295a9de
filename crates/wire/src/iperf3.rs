//! The iperf3 UDP datagram header (esnet/iperf `iperf_udp.c`): the send time in seconds
//! and microseconds, then the datagram's sequence number, 32 bits or, when the test asked
//! for `udp_counters_64bit`, 64 bits; all big-endian, at the start of every UDP payload.
//!
//! ```text
//!  0                   1                   2                   3
//!  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |                        send time, seconds                     |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |                      send time, microseconds                  |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |            packet count (32 bits, or 64 with 64-bit counters) |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! ```
//!
//! The count starts at 1. Nothing else identifies a stream: each stream has a socket of its
//! own. Parsing never panics on any input.

/// Header length with 32-bit counters.
pub const HEADER_LEN_32: usize = 12;
/// Header length with 64-bit counters.
pub const HEADER_LEN_64: usize = 16;

/// One datagram's header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Iperf3Header {
    /// Send time, seconds (of the sender's realtime clock; wraps in 2106).
    pub sec: u32,
    /// Send time, microseconds within the second.
    pub usec: u32,
    /// Sequence number, from 1.
    pub count: u64,
}

impl Iperf3Header {
    /// The header length for the counter width.
    pub fn len(counters_64bit: bool) -> usize {
        if counters_64bit {
            HEADER_LEN_64
        } else {
            HEADER_LEN_32
        }
    }

    /// Reads a header; `None` when the payload is shorter than one.
    pub fn parse(payload: &[u8], counters_64bit: bool) -> Option<Self> {
        let word = |i: usize| -> Option<u32> {
            Some(u32::from_be_bytes(payload.get(i..i + 4)?.try_into().ok()?))
        };
        let count = if counters_64bit {
            u64::from_be_bytes(payload.get(8..16)?.try_into().ok()?)
        } else {
            u64::from(word(8)?)
        };
        Some(Self {
            sec: word(0)?,
            usec: word(4)?,
            count,
        })
    }

    /// Writes the header at the start of `buf` (a 32-bit counter keeps the low 32 bits).
    ///
    /// # Panics
    /// When `buf` is shorter than the header (a caller's sizing bug).
    pub fn emit(&self, buf: &mut [u8], counters_64bit: bool) {
        buf[0..4].copy_from_slice(&self.sec.to_be_bytes());
        buf[4..8].copy_from_slice(&self.usec.to_be_bytes());
        if counters_64bit {
            buf[8..16].copy_from_slice(&self.count.to_be_bytes());
        } else {
            buf[8..12].copy_from_slice(&(self.count as u32).to_be_bytes());
        }
    }

    /// The send time in nanoseconds since the Unix epoch.
    pub fn unix_nanos(&self) -> u64 {
        u64::from(self.sec) * 1_000_000_000 + u64::from(self.usec.min(999_999)) * 1_000
    }
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn both_widths_round_trip_big_endian() {
        let h = Iperf3Header {
            sec: 1_700_000_000,
            usec: 123_456,
            count: 7,
        };
        let mut b = [0u8; 16];
        h.emit(&mut b, false);
        assert_eq!(
            &b[..12],
            &[0x65, 0x53, 0xf1, 0x00, 0, 1, 0xe2, 0x40, 0, 0, 0, 7]
        );
        assert_eq!(Iperf3Header::parse(&b, false), Some(h));
        h.emit(&mut b, true);
        assert_eq!(&b[8..16], &[0, 0, 0, 0, 0, 0, 0, 7]);
        assert_eq!(Iperf3Header::parse(&b, true), Some(h));
        assert_eq!(h.unix_nanos(), 1_700_000_000_123_456_000);
    }

    #[test]
    fn short_payloads_are_refused_and_any_bytes_parse_without_panic() {
        assert_eq!(Iperf3Header::parse(&[0; 11], false), None);
        assert_eq!(Iperf3Header::parse(&[0; 15], true), None);
        for n in 0..40 {
            let b: Vec<u8> = (0..n).map(|i| (i * 37) as u8).collect();
            let _ = Iperf3Header::parse(&b, n % 2 == 0);
        }
    }
}
