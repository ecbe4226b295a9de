//! Any frame through the R-TAG functions (802.1CB 7.8): decode, encode and strip never
//! panic; an encoded frame decodes to the number written, and stripping it gives back the
//! frame it was made from (when that frame had no R-TAG).
#![no_main]

use frer::rtag;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if data.len() < 2 {
        return;
    }
    let seq = u16::from_le_bytes([data[0], data[1]]);
    let frame = &data[2..];
    let had = rtag::decode(frame);
    let mut out = vec![0u8; frame.len() + 6];
    if let Some(n) = rtag::encode(frame, seq, &mut out) {
        let tagged = &out[..n];
        let (got, _) = rtag::decode(tagged).expect("an encoded frame has an R-TAG");
        assert_eq!(got, seq);
        let mut back = vec![0u8; n];
        let (m, s) = rtag::strip(tagged, &mut back).expect("strip");
        assert_eq!(s, seq);
        if had.is_none() {
            assert_eq!(&back[..m], frame);
        }
    }
    // A buffer one octet short is refused, not overrun.
    if !out.is_empty() {
        let mut short = vec![0u8; frame.len().saturating_sub(1)];
        let _ = rtag::strip(frame, &mut short);
        let _ = rtag::encode(frame, seq, &mut short);
    }
});
