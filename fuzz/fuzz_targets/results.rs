//! Any text as a stored result: a campaign's results.json (any version `report` reads) and
//! a single result document with its interval rows. Loading says why it cannot, never
//! panics; a campaign that loads renders its Markdown report without panicking.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(c) = report::campaign::load_any(text) {
        let _ = report::campaign::markdown(&c);
    }
    if let Ok(r) = serde_json::from_str::<model::results::RunResult>(text) {
        let _ = report::text::intervals(&r);
    }
});
