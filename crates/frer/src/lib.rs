//! IEEE 802.1CB Frame Replication and Elimination for Reliability (FRER), pure: no I/O,
//! no clock (time comes in as milliseconds), no allocation on the per-frame path, so a
//! switch model, a software relay or a test tool can embed it.
//!
//! - [`rtag`]: the R-TAG (802.1CB 7.8): EtherType 0xF1C1, 2 reserved octets, the 16-bit
//!   sequence number, the encapsulated EtherType; after any VLAN tags.
//! - [`generation`]: sequence generation (7.4.1).
//! - [`recovery`]: sequence recovery and individual recovery (7.4.2, 7.4.3, 7.5) with the
//!   Vector (7.4.3.4) and Match (7.4.3.5) algorithms, the reset timer (7.4.3.3) and the
//!   per-stream counters under their 802.1CB / YANG names (10.8).
//! - [`latent`]: latent error detection (7.4.4).
//!
//! The 802.1CB-2017 text was not at hand; the algorithms follow the clause structure as
//! reconstructed in `../shared/spec/frer-8021cb.md` (the 802.1CBcv-2021 YANG descriptions
//! and two open implementations), and are tested on its vectors.
#![no_std]
#![warn(missing_docs, unreachable_pub)]
#![forbid(unsafe_code)]

pub mod generation;
pub mod latent;
pub mod recovery;
pub mod rtag;

/// The sequence number space of the R-TAG, HSR tag and PRP trailer: 2^16.
pub const SEQ_SPACE: u32 = 1 << 16;

/// `s − base` as a signed distance in the 16-bit sequence space (−32768..=32767).
pub fn signed_delta(s: u16, base: u16) -> i32 {
    let d = s.wrapping_sub(base) as i32;
    if d >= (SEQ_SPACE / 2) as i32 {
        d - SEQ_SPACE as i32
    } else {
        d
    }
}
