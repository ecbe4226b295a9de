//! Ethernet line-rate arithmetic: the theoretical frame rate and the bit rates at each layer
//! for a frame size and a link speed, so loads can be given as a percentage of line rate
//! and results can show theoretical vs measured.
//!
//! Frame size `L` counts from the destination MAC to the FCS (RFC 1242 §3.5, RFC 2544 §9).
//! Each frame also occupies 20 bytes of wire time that are not part of it: 7 bytes of
//! preamble, 1 byte SFD and the 12-byte minimum inter-frame gap (IEEE 802.3; RFC 6349
//! §4.1.1 spells out 1538 wire bytes for a 1500-byte MTU). So at `R` bit/s:
//!
//! ```text
//! max_fps    = R / (8 (L + 20))          # RFC 2544 §20 upper search limit
//! L1 bit/s   = fps · 8 (L + 20)          # = R at 100 % of line rate
//! L2 bit/s   = fps · 8 L                 # frame incl. FCS
//! ```
//! Percent of line rate is always relative to `max_fps` (the L1 view). The arithmetic is
//! exact in integers where it can be (`max_fps` as a rational), f64 for display.

/// Preamble (7) + SFD (1) + minimum inter-frame gap (12), bytes per frame on the wire.
pub const L1_OVERHEAD: u64 = 20;

/// The smallest legal Ethernet frame (FCS included), untagged.
pub const MIN_FRAME: u64 = 64;

/// The largest standard untagged frame; 1522 with one 802.1Q tag.
pub const MAX_STANDARD_FRAME: u64 = 1518;

/// The RFC 2544 §9 frame sizes for Ethernet.
pub const RFC2544_SIZES: [u64; 7] = [64, 128, 256, 512, 1024, 1280, 1518];

/// A link speed in bit/s (the nominal MAC rate: 1e9 for 1GbE).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct LineRate(pub u64);

/// The rates of one frame size at one load.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rates {
    /// Frames per second.
    pub fps: f64,
    /// Wire bits per second including preamble, SFD and IFG.
    pub l1_bps: f64,
    /// Frame bits per second (FCS included).
    pub l2_bps: f64,
}

impl LineRate {
    /// Theoretical maximum frames per second for frames of `len` bytes (FCS included).
    pub fn max_fps(self, len: u64) -> f64 {
        self.0 as f64 / (8.0 * (len + L1_OVERHEAD) as f64)
    }

    /// Whole frames per second at line rate, truncated as RFC 2544 Appendix B lists them.
    pub fn max_fps_whole(self, len: u64) -> u64 {
        self.0 / (8 * (len + L1_OVERHEAD))
    }

    /// Rates at `fps` frames/s of `len` bytes.
    pub fn rates_at(len: u64, fps: f64) -> Rates {
        Rates {
            fps,
            l1_bps: fps * 8.0 * (len + L1_OVERHEAD) as f64,
            l2_bps: fps * 8.0 * len as f64,
        }
    }

    /// Frames/s for `percent` (0..=100) of line rate.
    pub fn fps_at_percent(self, len: u64, percent: f64) -> f64 {
        self.max_fps(len) * percent / 100.0
    }

    /// `fps` as a percentage of line rate.
    pub fn percent_of(self, len: u64, fps: f64) -> f64 {
        fps / self.max_fps(len) * 100.0
    }

    /// Frames/s that carry `bps` bits/s of L2 frames of `len` bytes.
    pub fn fps_for_l2_bps(len: u64, bps: f64) -> f64 {
        bps / (8.0 * len as f64)
    }

    /// Nanoseconds from the start of one frame to the next at line rate.
    pub fn frame_period_ns(self, len: u64) -> f64 {
        8.0 * (len + L1_OVERHEAD) as f64 * 1e9 / self.0 as f64
    }
}

#[cfg(test)]
mod test {
    use super::*;

    const GIG: LineRate = LineRate(1_000_000_000);

    #[test]
    fn rfc2544_appendix_b_at_10_mbit() {
        // RFC 2544 Appendix B, 10 Mb/s Ethernet.
        let ten = LineRate(10_000_000);
        let want = [
            (64, 14880),
            (128, 8445),
            (256, 4528),
            (512, 2349),
            (768, 1586),
            (1024, 1197),
            (1280, 961),
            (1518, 812),
        ];
        for (len, fps) in want {
            assert_eq!(ten.max_fps_whole(len), fps, "{len} bytes");
        }
    }

    #[test]
    fn gigabit_table() {
        assert_eq!(GIG.max_fps_whole(64), 1_488_095);
        assert_eq!(GIG.max_fps_whole(1518), 81_274);
        assert_eq!(GIG.max_fps_whole(9000), 13_858);
        let r = LineRate::rates_at(64, GIG.max_fps(64));
        assert!((r.l1_bps - 1e9).abs() < 1e-3);
        assert!((r.l2_bps / 1e6 - 761.90).abs() < 0.01);
        assert!((GIG.frame_period_ns(64) - 672.0).abs() < 1e-9);
        assert_eq!(
            LineRate(10_000_000_000).max_fps_whole(1518),
            812_743,
            "RFC 6349's 10 GbE figure"
        );
    }

    #[test]
    fn percent_round_trips() {
        let fps = GIG.fps_at_percent(512, 37.5);
        assert!((GIG.percent_of(512, fps) - 37.5).abs() < 1e-9);
        assert!((LineRate::fps_for_l2_bps(1518, 100e6) - 8234.519).abs() < 1e-3);
    }
}
