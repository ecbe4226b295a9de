//! Any text as a stored latency histogram (results from a peer or a file): an error or a
//! histogram, never a panic or a large allocation.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        if let Ok(h) = model::stats::histogram::LatencyHistogram::from_base64(text) {
            let _ = h.summary();
        }
    }
});
