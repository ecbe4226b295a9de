//! Any frame through the impairment stage's router-mode rewrite: it never panics; a frame
//! it forwards keeps its length, leaves with the outside MACs and one TTL less, and its
//! IPv4 header checksum is valid.
#![no_main]

use lab::impair::stage::{route, RouterSide, Verdict};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let inside = RouterSide {
        mac: [2, 0x77, 0x62, 0, 1, 1],
        neighbour: [2, 0x77, 0x62, 0, 1, 2],
        local: [198, 18, 1, 254].into(),
    };
    let outside = RouterSide {
        mac: [2, 0x77, 0x62, 0, 2, 1],
        neighbour: [2, 0x77, 0x62, 0, 2, 2],
        local: [198, 18, 2, 254].into(),
    };
    let mut frame = data.to_vec();
    // Half the inputs addressed to the stage, so the IPv4 path is reached.
    if frame.len() >= 14 && frame[0] & 1 == 0 {
        frame[0..6].copy_from_slice(&inside.mac);
        frame[12..14].copy_from_slice(&[8, 0]);
    }
    let before = frame.clone();
    if route(&mut frame, &inside, &outside) == Verdict::Forward {
        assert_eq!(frame.len(), before.len());
        assert_eq!(frame[0..6], outside.neighbour);
        assert_eq!(frame[6..12], outside.mac);
        assert_eq!(frame[14 + 8], before[14 + 8] - 1);
        let ip = wire::ipv4::Packet::new_checked(&frame[14..]).expect("still IPv4");
        assert!(ip.verify_checksum());
    } else {
        assert_eq!(frame, before, "a frame not forwarded is not changed");
    }
});
