//! Any sequence of frames, ports and times through the FRER relay's per-frame path, with
//! a configuration the input picks (replication and elimination, vector or match
//! recovery, individual recovery, a history of 2 to 2048, frames without a sequence
//! number taken or not, IP or MAC identification):
//! `on_frame` never panics, emits frames only to its ports and never longer than a frame
//! plus one R-TAG, and its counters only grow.
#![no_main]

use lab::relay::config::RelayConfig;
use lab::relay::core::Relay;
use libfuzzer_sys::fuzz_target;

/// The relay's largest frame plus the 6-octet R-TAG it may push.
const MAX_OUT: usize = 16 * 1024 + 6;

fn config(pick: u8, history: u16) -> Option<RelayConfig> {
    let history = 2 + history % 2047;
    let take_no_sequence = pick & 8 != 0;
    let algorithm = if pick & 1 == 0 { "vector" } else { "match" };
    let individual = pick & 2 != 0;
    let ident = if pick & 4 == 0 {
        r#"{ dst_mac = "02:77:62:00:1f:02" }"#
    } else {
        r#"{ proto = "udp", dst_port = 7 }"#
    };
    let text = format!(
        r#"
pass = {{ a = "b", b = "a" }}
[[stream]]
name = "split"
match = {ident}
replicate = {{ from = "a", to = ["c", "d"] }}
[[stream]]
name = "merge"
match = {ident}
eliminate = {{ from = ["c", "d"], to = "b", history = {history}, reset_ms = 100, algorithm = "{algorithm}", individual = {individual}, take_no_sequence = {take_no_sequence} }}
"#
    );
    RelayConfig::from_toml(&text).ok()
}

fuzz_target!(|data: &[u8]| {
    if data.len() < 3 {
        return;
    }
    let Some(cfg) = config(data[0], u16::from_le_bytes([data[1], data[2]])) else {
        return;
    };
    let Ok(mut relay) = Relay::new(&cfg, 0) else {
        return;
    };
    let ports = relay.ports().len();
    let mut now = 0u64;
    let mut rest = &data[3..];
    // Records: port (1 byte), time step in ms (1 byte), length (2 bytes), frame.
    while rest.len() >= 4 {
        let port = usize::from(rest[0]) % (ports + 1);
        now += u64::from(rest[1]);
        let len = usize::from(u16::from_le_bytes([rest[2], rest[3]])).min(rest.len() - 4);
        let frame = &rest[4..4 + len];
        rest = &rest[4 + len..];
        relay.on_frame(now, port, frame, &mut |out, f| {
            assert!(out < ports, "emitted to port {out} of {ports}");
            assert!(f.len() <= MAX_OUT, "emitted {} octets", f.len());
        });
    }
});
