//! RFC 3550 interarrival jitter (§6.4.1, reference code in Appendix A.8).
//!
//! What this module does: [`Rfc3550Jitter`] keeps the smoothed mean of |D|, where
//! `D(i−1, i) = (R_i − S_i) − (R_{i−1} − S_{i−1})` is the change in transit time between two
//! consecutive *arrivals*, and `J += (|D| − J) / 16` (the fixed gain of the RFC, so figures are
//! comparable with RTP stacks). `S` is the sender's timestamp from the packet and `R` the
//! receive timestamp, both in nanoseconds; a constant offset between the two clocks cancels in
//! `D`, so unsynchronised hosts are fine.
//!
//! What it does not do: this is not PDV, IPDV or a percentile (see delay-metrics.md §2); it does
//! not reorder packets by sequence number (RFC 3550 computes it in arrival order, and so do we);
//! it does not use the A.8 integer variant (it keeps `J` as an `f64` in ns, as the A.8
//! floating-point code does).

use std::time::Duration;

use crate::clock::UnixNanos;

/// RFC 3550 §6.4.1 interarrival jitter of one stream, in nanoseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Rfc3550Jitter {
    /// Transit time `R − S` of the previous arrival (ns); `None` before the first packet.
    last_transit: Option<i128>,
    /// The estimate `J`, in ns.
    jitter_ns: f64,
    /// Number of |D| samples folded into `J` (arrivals − 1).
    samples: u64,
}

impl Rfc3550Jitter {
    /// A fresh estimator (`J = 0`, no packet seen).
    pub fn new() -> Rfc3550Jitter {
        Rfc3550Jitter::default()
    }

    /// Folds in one packet, in arrival order: `tx` is the sender's timestamp carried in the
    /// packet, `rx` the receive timestamp. The first packet only initialises the transit time.
    pub fn on_packet(&mut self, tx: UnixNanos, rx: UnixNanos) {
        // RFC 3550 A.8: transit = arrival − timestamp; d = transit − s->transit;
        let transit = rx.signed_diff_ns(tx);
        if let Some(prev) = self.last_transit {
            // |D(i−1, i)|; i128 of two u64 differences cannot overflow.
            let d = (transit - prev).unsigned_abs() as f64;
            // J(i) = J(i−1) + (|D(i−1, i)| − J(i−1)) / 16
            self.jitter_ns += (d - self.jitter_ns) / 16.0;
            self.samples += 1;
        }
        self.last_transit = Some(transit);
    }

    /// The current estimate in nanoseconds.
    pub fn jitter_ns(&self) -> f64 {
        self.jitter_ns
    }

    /// The current estimate in microseconds.
    pub fn jitter_us(&self) -> f64 {
        self.jitter_ns / 1_000.0
    }

    /// The current estimate, rounded to the nearest nanosecond.
    pub fn jitter(&self) -> Duration {
        // J is a weighted mean of |D| values, so it is finite and ≥ 0; `as` saturates anyway.
        Duration::from_nanos(self.jitter_ns.round() as u64)
    }

    /// Number of |D| samples folded in (0 until the second packet).
    pub fn samples(&self) -> u64 {
        self.samples
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const T0: u64 = 1_700_000_000_000_000_000;

    /// Packets sent every 1 ms; `transit(i)` gives packet i's one-way transit in ns.
    fn run(n: u64, transit: impl Fn(u64) -> u64) -> Rfc3550Jitter {
        let mut j = Rfc3550Jitter::new();
        for i in 0..n {
            let tx = T0 + i * 1_000_000;
            j.on_packet(UnixNanos(tx), UnixNanos(tx + transit(i)));
        }
        j
    }

    #[test]
    fn first_packet_only_initialises() {
        let j = run(1, |_| 5_000_000);
        assert_eq!(j.jitter_ns(), 0.0);
        assert_eq!(j.samples(), 0);
        let j = run(2, |i| if i == 0 { 0 } else { 1_600 });
        assert_eq!(j.jitter_ns(), 100.0); // 1600 / 16
        assert_eq!(j.samples(), 1);
    }

    #[test]
    fn constant_transit_is_zero_jitter() {
        let j = run(1_000, |_| 123_456);
        assert_eq!(j.jitter(), Duration::ZERO);
        assert_eq!(j.samples(), 999);
    }

    #[test]
    fn clock_offset_cancels() {
        // Receiver clock 3 s behind the sender: transit is negative but constant.
        let mut j = Rfc3550Jitter::new();
        for i in 0..100u64 {
            let tx = T0 + i * 1_000;
            j.on_packet(UnixNanos(tx), UnixNanos(tx + 50 - 3_000_000_000));
        }
        assert_eq!(j.jitter_ns(), 0.0);
    }

    #[test]
    fn alternating_transit_converges_to_the_step() {
        // Transit alternates between 1 ms and 1.1 ms: every |D| is 100 µs.
        let j = run(2, |i| 1_000_000 + (i % 2) * 100_000);
        assert!((j.jitter_us() - 100.0 / 16.0).abs() < 1e-9);
        let j = run(1_000, |i| 1_000_000 + (i % 2) * 100_000);
        // J_n = 100 µs · (1 − (15/16)^n) after n samples.
        let expected = 100.0 * (1.0 - (15.0f64 / 16.0).powi(999));
        assert!((j.jitter_us() - expected).abs() < 1e-6);
        assert_eq!(j.jitter(), Duration::from_micros(100));
        // After 16 samples it is about 64 % of the way there (1 − (15/16)^16 ≈ 0.644).
        let j = run(17, |i| 1_000_000 + (i % 2) * 100_000);
        assert!((j.jitter_us() - 64.4).abs() < 0.1, "{}", j.jitter_us());
    }

    #[test]
    fn one_late_packet_decays() {
        // One packet 1.6 ms late among constant transits: J jumps by 100 µs twice (late, then
        // back) and then decays geometrically.
        let j = run(3, |i| if i == 1 { 1_600_000 } else { 0 });
        let after_two = 100_000.0 + (1_600_000.0 - 100_000.0) / 16.0;
        assert!((j.jitter_ns() - after_two).abs() < 1e-6);
        let j = run(200, |i| if i == 1 { 1_600_000 } else { 0 });
        assert!(j.jitter_ns() < 1_000.0);
    }

    #[test]
    fn extreme_timestamps_do_not_overflow() {
        let mut j = Rfc3550Jitter::new();
        j.on_packet(UnixNanos(0), UnixNanos(u64::MAX));
        j.on_packet(UnixNanos(u64::MAX), UnixNanos(0));
        assert!(j.jitter_ns().is_finite());
        assert!(j.jitter_ns() > 0.0);
        let _ = j.jitter();
    }
}
