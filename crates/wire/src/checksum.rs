//! The Internet checksum (RFC 1071) and the IPv4/IPv6 pseudo-header sums.
//!
//! The functions here return the **folded one's-complement sum, not complemented**; a header
//! checksum field holds `!combine(&[..])`. A buffer whose stored checksum is right sums to
//! `0xffff`, so verification is `!combine(..) == 0`.

use crate::{IpAddress, IpProtocol, Ipv4Address, Ipv6Address};

/// Folds a wide one's-complement accumulator down to 16 bits.
#[inline]
const fn fold(mut acc: u64) -> u16 {
    while acc > 0xffff {
        acc = (acc & 0xffff) + (acc >> 16);
    }
    acc as u16
}

/// The folded one's-complement sum of `data`, read as big-endian 16-bit words; an odd trailing
/// byte is padded with a zero byte (RFC 1071 §4.1).
///
/// Sums 32-bit words into a `u64`: since 2^16 ≡ 1 (mod 0xffff), that is the same sum and takes
/// half the additions; the accumulator cannot overflow for slices below 16 GiB.
pub fn data(data: &[u8]) -> u16 {
    let mut acc: u64 = 0;
    let mut words = data.chunks_exact(4);
    for w in &mut words {
        acc += u64::from(u32::from_be_bytes([w[0], w[1], w[2], w[3]]));
    }
    let rest = words.remainder();
    let mut pairs = rest.chunks_exact(2);
    for p in &mut pairs {
        acc += u64::from(u16::from_be_bytes([p[0], p[1]]));
    }
    if let [last] = pairs.remainder() {
        acc += u64::from(*last) << 8;
    }
    fold(acc)
}

/// Adds partial sums (from [`data`] or the pseudo-header functions) in one's complement.
pub fn combine(sums: &[u16]) -> u16 {
    fold(sums.iter().map(|&s| u64::from(s)).sum())
}

/// The sum of the IPv4 pseudo-header for UDP/TCP (RFC 768, RFC 9293 §3.1): source, destination,
/// zero, protocol and the L4 length.
pub fn pseudo_header_v4(
    src: &Ipv4Address,
    dst: &Ipv4Address,
    protocol: IpProtocol,
    length: u16,
) -> u16 {
    combine(&[data(&src.0), data(&dst.0), u16::from(protocol.0), length])
}

/// The sum of the IPv6 pseudo-header (RFC 8200 §8.1): source, destination, 32-bit upper-layer
/// length, three zero bytes and the next header.
pub fn pseudo_header_v6(
    src: &Ipv6Address,
    dst: &Ipv6Address,
    next_header: IpProtocol,
    length: u32,
) -> u16 {
    combine(&[
        data(&src.0),
        data(&dst.0),
        (length >> 16) as u16,
        length as u16,
        u16::from(next_header.0),
    ])
}

/// The pseudo-header sum for either family.
///
/// Mixed families never occur in one packet; so that this function is total, such a pair is
/// summed as IPv6 with the IPv4 address mapped (`::ffff:a.b.c.d`).
pub fn pseudo_header(src: &IpAddress, dst: &IpAddress, protocol: IpProtocol, length: u32) -> u16 {
    match (src, dst) {
        (IpAddress::V4(s), IpAddress::V4(d)) => pseudo_header_v4(s, d, protocol, length as u16),
        _ => pseudo_header_v6(&src.to_v6_mapped(), &dst.to_v6_mapped(), protocol, length),
    }
}

/// The value to store in a checksum field for a header + payload whose checksum field is zero:
/// `!combine(&[pseudo, data(buf)])`.
#[inline]
pub(crate) fn finish(sums: &[u16]) -> u16 {
    !combine(sums)
}

#[cfg(test)]
mod test {
    use super::*;
    use proptest::prelude::*;

    /// The naive RFC 1071 loop, as the reference for the fast one.
    fn naive(bytes: &[u8]) -> u16 {
        let mut sum: u32 = 0;
        for c in bytes.chunks(2) {
            let w = if c.len() == 2 {
                u16::from_be_bytes([c[0], c[1]])
            } else {
                u16::from(c[0]) << 8
            };
            sum += u32::from(w);
            sum = (sum & 0xffff) + (sum >> 16);
        }
        sum as u16
    }

    #[test]
    fn test_rfc1071_example() {
        // RFC 1071 §3: 00 01 f2 03 f4 f5 f6 f7 sums to ddf2.
        assert_eq!(
            data(&[0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7]),
            0xddf2
        );
        assert_eq!(data(&[]), 0);
        assert_eq!(data(&[0xab]), 0xab00);
        assert_eq!(data(&[0xff, 0xff, 0x00, 0x01]), 0x0001);
    }

    #[test]
    fn test_pseudo_v6_length_split() {
        let a = Ipv6Address([0; 16]);
        assert_eq!(
            pseudo_header_v6(&a, &a, IpProtocol::UDP, 0x0001_0002),
            0x0014
        );
    }

    proptest! {
        #[test]
        fn fast_equals_naive(bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
            prop_assert_eq!(data(&bytes), naive(&bytes));
        }

        #[test]
        fn split_at_even_offset_combines(bytes in proptest::collection::vec(any::<u8>(), 0..300), cut in 0usize..150) {
            let cut = (cut * 2).min(bytes.len() & !1);
            let (a, b) = bytes.split_at(cut);
            prop_assert_eq!(combine(&[data(a), data(b)]), data(&bytes));
        }
    }
}
