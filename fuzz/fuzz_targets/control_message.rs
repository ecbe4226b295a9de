//! Any bytes on a control connection, from either side: framing and decoding return an
//! error or a message, never a panic or an unbounded allocation.
#![no_main]

use control::messages::{ClientMsg, ServerMsg};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut r = data;
    while let Ok(m) = control::frame::read_msg::<ClientMsg>(&mut r) {
        // A decoded message encodes again.
        let mut out = Vec::new();
        control::frame::write_msg(&mut out, &m).expect("re-encode");
    }
    let mut r = data;
    while control::frame::read_msg::<ServerMsg>(&mut r).is_ok() {}
});
