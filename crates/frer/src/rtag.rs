//! The R-TAG (IEEE 802.1CB 7.8): 6 octets inserted after the source MAC and any 802.1Q
//! tags:
//!
//! ```text
//! DA(6) SA(6) [0x8100 TCI]… | 0xF1C1 | reserved (2) = 0 | sequence number (2) | EtherType | payload
//! ```

/// The R-TAG EtherType.
pub const ETHERTYPE: u16 = 0xF1C1;
/// Octets the tag adds to a frame.
pub const LEN: usize = 6;
const VLAN: u16 = 0x8100;
const QINQ: u16 = 0x88A8;

fn ethertype_at(frame: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_be_bytes([*frame.get(at)?, *frame.get(at + 1)?]))
}

/// Where the EtherType after the MACs and any VLAN tags (802.1Q / 802.1ad) sits.
fn tag_offset(frame: &[u8]) -> Option<usize> {
    let mut at = 12;
    while matches!(ethertype_at(frame, at)?, VLAN | QINQ) {
        at += 4;
    }
    Some(at)
}

/// The sequence number of an R-tagged frame and the offset of its tag; `None` for a frame
/// without an R-TAG (or too short to hold one). Never panics.
pub fn decode(frame: &[u8]) -> Option<(u16, usize)> {
    let at = tag_offset(frame)?;
    if ethertype_at(frame, at)? != ETHERTYPE || frame.len() < at + LEN + 2 {
        return None;
    }
    Some((ethertype_at(frame, at + 4)?, at))
}

/// Writes `frame` with an R-TAG carrying `seq` into `out` (which must hold
/// `frame.len() + LEN` octets) and returns the new length; `None` when `frame` is not an
/// Ethernet frame or `out` is too short. An existing R-TAG is replaced, not stacked.
pub fn encode(frame: &[u8], seq: u16, out: &mut [u8]) -> Option<usize> {
    let at = tag_offset(frame)?;
    if let Some((_, _)) = decode(frame) {
        let n = frame.len();
        let dst = out.get_mut(..n)?;
        dst.copy_from_slice(frame);
        dst[at + 4..at + 6].copy_from_slice(&seq.to_be_bytes());
        return Some(n);
    }
    let n = frame.len() + LEN;
    let dst = out.get_mut(..n)?;
    dst[..at].copy_from_slice(&frame[..at]);
    dst[at..at + 2].copy_from_slice(&ETHERTYPE.to_be_bytes());
    dst[at + 2..at + 4].copy_from_slice(&[0, 0]);
    dst[at + 4..at + 6].copy_from_slice(&seq.to_be_bytes());
    dst[at + LEN..].copy_from_slice(&frame[at..]);
    Some(n)
}

/// Writes `frame` without its R-TAG into `out` and returns (new length, sequence number);
/// `None` when the frame has no R-TAG or `out` is too short.
pub fn strip(frame: &[u8], out: &mut [u8]) -> Option<(usize, u16)> {
    let (seq, at) = decode(frame)?;
    let n = frame.len() - LEN;
    let dst = out.get_mut(..n)?;
    dst[..at].copy_from_slice(&frame[..at]);
    dst[at..].copy_from_slice(&frame[at + LEN..]);
    Some((n, seq))
}

#[cfg(test)]
mod test {
    use super::*;

    const PLAIN: [u8; 18] = [
        1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2, 0x08, 0x00, 0x45, 0, 0, 20,
    ];

    #[test]
    fn encode_after_the_macs_and_round_trip() {
        let mut out = [0u8; 64];
        let n = encode(&PLAIN, 0xBEEF, &mut out).unwrap();
        assert_eq!(n, PLAIN.len() + 6);
        assert_eq!(&out[12..20], &[0xF1, 0xC1, 0, 0, 0xBE, 0xEF, 0x08, 0x00]);
        assert_eq!(decode(&out[..n]), Some((0xBEEF, 12)));
        let mut back = [0u8; 64];
        assert_eq!(strip(&out[..n], &mut back), Some((PLAIN.len(), 0xBEEF)));
        assert_eq!(&back[..PLAIN.len()], &PLAIN);
    }

    #[test]
    fn the_tag_goes_after_vlan_tags_and_is_not_stacked() {
        let mut tagged = [0u8; 22];
        tagged[..12].copy_from_slice(&PLAIN[..12]);
        tagged[12..16].copy_from_slice(&[0x81, 0x00, 0x20, 0x64]);
        tagged[16..].copy_from_slice(&PLAIN[12..]);
        let mut out = [0u8; 64];
        let n = encode(&tagged, 7, &mut out).unwrap();
        assert_eq!(&out[12..16], &[0x81, 0x00, 0x20, 0x64]);
        assert_eq!(decode(&out[..n]), Some((7, 16)));
        let mut again = [0u8; 64];
        let m = encode(&out[..n], 9, &mut again).unwrap();
        assert_eq!(m, n, "re-tagging rewrites the number");
        assert_eq!(decode(&again[..m]), Some((9, 16)));
    }

    #[test]
    fn short_and_foreign_frames_are_not_tags() {
        assert_eq!(decode(&PLAIN), None);
        assert_eq!(decode(&[0u8; 5]), None);
        assert_eq!(decode(&[0xff; 13]), None);
        // An R-TAG EtherType without the rest of the tag.
        let mut t = [0u8; 16];
        t[12..14].copy_from_slice(&[0xF1, 0xC1]);
        assert_eq!(decode(&t), None);
        let mut small = [0u8; 10];
        assert_eq!(encode(&PLAIN, 1, &mut small), None);
        // Endless VLAN tags: stops at the end of the frame.
        assert_eq!(decode(&[0x81, 0x00].repeat(20)), None);
    }
}
