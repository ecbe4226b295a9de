//! Any bytes as an Ethernet frame: the frame walker and the test-header fast path must
//! never panic, and whatever parses must re-emit to bytes that parse the same.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(f) = wire::frame::parse_frame(data) {
        if let Some(t) = f.test {
            let bytes = t.to_bytes();
            assert_eq!(wire::testhdr::parse_fast(&bytes), Some(t));
        }
    }
    let _ = wire::testhdr::parse_fast(data);
});
