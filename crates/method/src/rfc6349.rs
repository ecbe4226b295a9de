//! RFC 6349 (Framework for TCP Throughput Testing) as arithmetic and decisions: the path
//! MTU search, the baseline RTT, the bottleneck bandwidth from a probe's arrivals, the
//! bandwidth-delay product and the windows it asks for, and two of the three metrics
//! (transfer time ratio, buffer delay; TCP efficiency is `model::results::TcpBytes`'s).
//!
//! What it does not do: send a probe, open a connection or read `TCP_INFO`. The runner
//! feeds it what it saw (probe answers, RTT samples, byte counts), with times as inputs.

use std::time::Duration;

use serde::{Deserialize, Serialize};

/// Bytes a frame costs on an Ethernet link beyond its IP packet (RFC 6349 §4.1.1): 14 of
/// header, 4 of FCS, and the 20 of preamble, start delimiter and inter-frame gap that
/// every frame costs on the wire ([`wire::linerate::L1_OVERHEAD`]): 38.
pub const ETHERNET_OVERHEAD: u32 = 14 + 4 + wire::linerate::L1_OVERHEAD as u32;

/// Bytes a packet costs on a PPP link beyond itself (RFC 6349 §4.1.1's T3 example: 4 of
/// PPP header, 2 of flags, 2 of CRC-16).
pub const PPP_OVERHEAD: u32 = 8;

/// The largest TCP throughput a link of `bottleneck_bps` can carry (RFC 6349 §4.1.1),
/// bit/s of TCP payload: `mtu` bytes per packet, `payload` of them TCP payload (the MSS as
/// the connection uses it: MTU − 40 for IPv4 without options, less with the timestamp
/// option or IPv6), `overhead` bytes of link framing per packet ([`ETHERNET_OVERHEAD`]).
///
/// `max_fps = BB / ((MTU + overhead) × 8)`, `max = payload × 8 × max_fps`.
pub fn max_tcp_throughput(bottleneck_bps: f64, mtu: u32, payload: u32, overhead: u32) -> f64 {
    let frame_bits = f64::from(mtu + overhead) * 8.0;
    if frame_bits <= 0.0 || bottleneck_bps <= 0.0 {
        return 0.0;
    }
    bottleneck_bps / frame_bits * f64::from(payload.min(mtu)) * 8.0
}

/// The bandwidth-delay product, bytes (RFC 6349 §3.3.1): `RTT × BB / 8`, the least
/// receive window (and send buffer) that keeps the path full.
pub fn bdp_bytes(rtt: Duration, bottleneck_bps: f64) -> u64 {
    let bytes = rtt.as_secs_f64() * bottleneck_bps.max(0.0) / 8.0;
    // Up to a whole byte, but not for the last bits of a binary fraction (0.04 s x 50e6).
    (bytes - bytes * 1e-12).ceil() as u64
}

/// The throughput a window of `window` bytes allows over `rtt` (RFC 6349 §3.3.1:
/// `RWND × 8 / RTT`), bit/s; capped elsewhere by [`max_tcp_throughput`].
pub fn window_limited_bps(window: u64, rtt: Duration) -> f64 {
    if rtt.is_zero() {
        return f64::INFINITY;
    }
    window as f64 * 8.0 / rtt.as_secs_f64()
}

/// How the BDP is carried: one connection's window if it can hold it, else several
/// connections sharing it (RFC 6349 §3.3: "single- and multiple-connection" tests).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct WindowPlan {
    /// The BDP, bytes.
    pub bdp_bytes: u64,
    /// Connections.
    pub connections: u32,
    /// The window each connection needs, bytes.
    pub window_bytes: u64,
}

/// The connections and per-connection window for a BDP of `bdp` bytes when one
/// connection's window can be at most `max_window` bytes (the host's receive buffer
/// limit), at most `max_connections` of them (the window then falls short of the BDP,
/// which the result shows).
pub fn window_plan(bdp: u64, max_window: u64, max_connections: u32) -> WindowPlan {
    let max_window = max_window.max(1);
    let needed = bdp.div_ceil(max_window).max(1);
    let connections = u32::try_from(needed)
        .unwrap_or(u32::MAX)
        .clamp(1, max_connections.max(1));
    WindowPlan {
        bdp_bytes: bdp,
        connections,
        window_bytes: bdp.div_ceil(u64::from(connections)).clamp(1, max_window),
    }
}

/// The baseline RTT (RFC 6349 §3.2.1): the least of the samples taken while the path was
/// idle. `None` without samples.
pub fn baseline_rtt(samples: &[Duration]) -> Option<Duration> {
    samples.iter().copied().min()
}

/// The bottleneck bandwidth from a probe sent faster than the path carries it, bit/s of
/// link: what arrived after the first packet over the time from the first arrival to the
/// last (the train's dispersion), each packet counted with its link framing.
/// `arrivals` are (arrival time, IP packet bytes), in arrival order; `None` with fewer
/// than two packets or no time between the first and the last.
pub fn bottleneck_bps(arrivals: &[(Duration, u32)], overhead: u32) -> Option<f64> {
    let (first, rest) = arrivals.split_first()?;
    let last = rest.last()?;
    let span = last.0.checked_sub(first.0)?;
    if span.is_zero() {
        return None;
    }
    let bits: f64 = rest
        .iter()
        .map(|(_, len)| f64::from(len + overhead) * 8.0)
        .sum();
    Some(bits / span.as_secs_f64())
}

/// The median of several trains' rates (the bottleneck bandwidth of a probe of several
/// trains: one train met by a burst of cross traffic does not move it). `None` without
/// rates; of an even count, the mean of the middle two.
pub fn median(rates: &[f64]) -> Option<f64> {
    let mut v: Vec<f64> = rates.iter().copied().filter(|r| r.is_finite()).collect();
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let m = v.len() / 2;
    Some(if v.len() % 2 == 1 {
        v[m]
    } else {
        (v[m - 1] + v[m]) / 2.0
    })
}

/// TCP Transfer Time Ratio (RFC 6349 §4.1): the actual transfer time over the ideal one,
/// the ideal being the bytes at the maximum achievable TCP throughput. For a timed
/// transfer that is the maximum over the rate achieved. `None` if nothing moved or the
/// maximum is not positive.
pub fn transfer_time_ratio(achieved_bps: f64, max_tcp_bps: f64) -> Option<f64> {
    (achieved_bps > 0.0 && max_tcp_bps > 0.0).then(|| max_tcp_bps / achieved_bps)
}

/// The mean of RTT samples; `None` without any.
pub fn mean_rtt(samples: &[Duration]) -> Option<Duration> {
    let n = u32::try_from(samples.len()).ok().filter(|n| *n > 0)?;
    Some(samples.iter().sum::<Duration>() / n)
}

/// Buffer Delay Percentage (RFC 6349 §4.3), %: how much the mean RTT during the transfer
/// (of its per-interval samples) exceeds the baseline RTT, relative to it. `None` without
/// samples or with a zero baseline. (TCP Efficiency, §4.2, is
/// [`model::results::TcpBytes::efficiency_percent`].)
pub fn buffer_delay_percent(during: &[Duration], baseline: Duration) -> Option<f64> {
    let mean = mean_rtt(during)?.as_secs_f64();
    let base = baseline.as_secs_f64();
    (base > 0.0).then(|| (mean - base) / base * 100.0)
}

/// A packetization-layer path MTU search (RFC 4821 §7): probes of one size at a time,
/// each answered (it arrived) or not; a size is too large after [`PmtuSearch::MAX_PROBES`]
/// unanswered probes in a row, and fits with one answer. Binary search between the largest
/// size known to fit and the smallest known not to, until they meet.
///
/// The runner asks [`PmtuSearch::next_probe`] for a size, sends a probe of it (IP packet
/// bytes, the don't-fragment bit set) and reports with [`PmtuSearch::answered`] or
/// [`PmtuSearch::lost`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PmtuSearch {
    /// The largest size known to fit.
    low: u32,
    /// The smallest size known not to fit (one above the interface's MTU at the start).
    high: u32,
    /// The interface's MTU, where the search started.
    interface_mtu: u32,
    /// The size being probed and its unanswered probes so far.
    probing: Option<(u32, u32)>,
    /// Probes sent.
    probes: u32,
}

/// What a path MTU search found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct PmtuResult {
    /// The path MTU, bytes.
    pub mtu: u32,
    /// Probes sent.
    pub probes: u32,
    /// The interface's MTU, where the search started.
    pub interface_mtu: u32,
}

impl PmtuSearch {
    /// Unanswered probes of one size before it is taken as too large (RFC 4821 §7.6.1's
    /// MAX_PROBES).
    pub const MAX_PROBES: u32 = 3;

    /// A search between `floor` (a size known to fit: 1280 for IPv6, 576 or the
    /// interface's own smaller MTU for IPv4) and the interface's MTU.
    pub fn new(floor: u32, interface_mtu: u32) -> Self {
        let floor = floor.min(interface_mtu);
        Self {
            low: floor,
            high: interface_mtu + 1,
            interface_mtu,
            probing: None,
            probes: 0,
        }
    }

    /// The size to probe next; `None` when the search is over. The first probe is the
    /// interface's MTU, the common case being a path that carries it.
    pub fn next_probe(&mut self) -> Option<u32> {
        if self.high - self.low <= 1 {
            return None;
        }
        let size = match self.probing {
            Some((size, _)) => size,
            None => {
                let size = if self.probes == 0 {
                    self.high - 1
                } else {
                    self.low + (self.high - self.low) / 2
                };
                self.probing = Some((size, 0));
                size
            }
        };
        self.probes += 1;
        Some(size)
    }

    /// A probe of `size` arrived: it fits.
    pub fn answered(&mut self, size: u32) {
        if size > self.low && size < self.high {
            self.low = size;
        }
        if self.probing.is_some_and(|(s, _)| s <= self.low) {
            self.probing = None;
        }
    }

    /// A probe of `size` went unanswered; after [`Self::MAX_PROBES`] of them in a row the
    /// size is too large.
    pub fn lost(&mut self, size: u32) {
        if let Some((s, lost)) = self.probing.as_mut() {
            if *s == size {
                *lost += 1;
                if *lost >= Self::MAX_PROBES {
                    self.high = self.high.min(size).max(self.low + 1);
                    self.probing = None;
                }
            }
        }
    }

    /// What was found, once [`PmtuSearch::next_probe`] says the search is over (or the
    /// largest size known to fit so far).
    pub fn result(&self) -> PmtuResult {
        PmtuResult {
            mtu: self.low,
            probes: self.probes,
            interface_mtu: self.interface_mtu,
        }
    }
}

#[cfg(test)]
mod test {
    use super::*;

    fn ms(v: f64) -> Duration {
        Duration::from_secs_f64(v / 1e3)
    }

    #[test]
    fn the_trains_median_ignores_one_disturbed_train() {
        assert_eq!(median(&[]), None);
        assert_eq!(median(&[50e6, 12e6, 51e6]), Some(50e6));
        assert_eq!(median(&[50e6, 52e6]), Some(51e6));
        assert_eq!(median(&[f64::NAN, 3.0]), Some(3.0));
    }

    #[test]
    fn max_throughput_matches_the_rfc_examples() {
        // §4.1.1: 100 Mbit/s Ethernet, 1500 MTU: 8,127 frames/s, 94.9 Mbit/s of TCP.
        let fe = max_tcp_throughput(100e6, 1500, 1460, ETHERNET_OVERHEAD);
        assert!((fe - 94.9e6).abs() < 0.05e6, "{fe}");
        // 1 GbE: 949.3 Mbit/s; 10 GbE: 9.49 Gbit/s.
        let ge = max_tcp_throughput(1e9, 1500, 1460, ETHERNET_OVERHEAD);
        assert!((ge - 949.3e6).abs() < 0.1e6, "{ge}");
        let xge = max_tcp_throughput(10e9, 1500, 1460, ETHERNET_OVERHEAD);
        assert!((xge - 9.493e9).abs() < 1e6, "{xge}");
        // T3 over PPP: 3,664 frames/s, 42.8 Mbit/s.
        let t3 = max_tcp_throughput(44.21e6, 1500, 1460, PPP_OVERHEAD);
        assert!((t3 - 42.8e6).abs() < 0.05e6, "{t3}");
        // With the timestamp option the payload is 1448 bytes: less.
        assert!(max_tcp_throughput(1e9, 1500, 1448, ETHERNET_OVERHEAD) < ge);
        assert_eq!(max_tcp_throughput(0.0, 1500, 1460, ETHERNET_OVERHEAD), 0.0);
    }

    #[test]
    fn bdp_and_window_match_the_rfc_table() {
        // §3.3.1's table: (Mbit/s, RTT ms, BDP bits).
        for (mbps, rtt, bits) in [
            (1.536, 20.0, 30_720u64),
            (44.21, 25.0, 1_105_250),
            (100.0, 5.0, 500_000),
            (1000.0, 1.0, 1_000_000),
            (10_000.0, 0.3, 3_000_000),
        ] {
            let bytes = bdp_bytes(ms(rtt), mbps * 1e6);
            assert!(bytes.abs_diff(bits / 8) <= 1, "{mbps} {rtt}: {bytes}");
        }
        // §3.3.1's worked example: 16 KB over 5 ms is 25.6 Mbit/s.
        let bps = window_limited_bps(16_000, ms(5.0));
        assert!((bps - 25.6e6).abs() < 1.0, "{bps}");
    }

    #[test]
    fn a_bdp_larger_than_one_window_takes_several_connections() {
        // 50 Mbit/s x 40 ms = 250,000 bytes: one window when it may be 4 MiB.
        let bdp = bdp_bytes(ms(40.0), 50e6);
        assert_eq!(bdp, 250_000);
        assert_eq!(
            window_plan(bdp, 4 << 20, 16),
            WindowPlan {
                bdp_bytes: bdp,
                connections: 1,
                window_bytes: 250_000
            }
        );
        // A window of at most 64 KiB: four connections of 62,500 bytes.
        let p = window_plan(bdp, 65_536, 16);
        assert_eq!((p.connections, p.window_bytes), (4, 62_500));
        // At most two connections: each at its largest window, short of the BDP.
        let p = window_plan(bdp, 65_536, 2);
        assert_eq!((p.connections, p.window_bytes), (2, 65_536));
        assert!(u64::from(p.connections) * p.window_bytes < bdp);
    }

    #[test]
    fn the_three_metrics_match_the_rfc_examples() {
        // §4.1: 100 MB per connection, 5 connections over 500 Mbit/s: ideal 8 s, actual
        // 12 s, TTR 1.5 (the maximum taken as the CAR itself here).
        let ttr = transfer_time_ratio(5.0 * 100e6 * 8.0 / 12.0, 500e6);
        assert!((ttr.unwrap_or_default() - 1.5).abs() < 1e-9, "{ttr:?}");
        // §4.2: 100,000 original and 2,000 retransmitted bytes: 98.03 %.
        let bytes = |sent, retransmitted| model::results::TcpBytes {
            sent,
            retransmitted,
        };
        let eff = bytes(102_000, 2_000)
            .efficiency_percent()
            .unwrap_or_default();
        assert!((eff - 98.039).abs() < 0.001, "{eff}");
        // §4.3: baseline 25 ms, mean 32 ms during the transfer: 28 %.
        let bd = buffer_delay_percent(&[ms(30.0), ms(34.0), ms(32.0)], ms(25.0));
        assert!((bd.unwrap_or_default() - 28.0).abs() < 1e-9, "{bd:?}");
        // Nothing to say without figures.
        assert_eq!(transfer_time_ratio(0.0, 1e9), None);
        assert_eq!(bytes(0, 0).efficiency_percent(), None);
        assert_eq!(buffer_delay_percent(&[], ms(25.0)), None);
        assert_eq!(buffer_delay_percent(&[ms(1.0)], Duration::ZERO), None);
    }

    #[test]
    fn baseline_rtt_is_the_least_sample() {
        assert_eq!(
            baseline_rtt(&[ms(41.2), ms(40.1), ms(40.7)]),
            Some(ms(40.1))
        );
        assert_eq!(baseline_rtt(&[]), None);
    }

    #[test]
    fn bottleneck_bandwidth_is_the_trains_dispersion() {
        // 1472-byte datagrams (1500-byte packets) leaving a 50 Mbit/s link: one every
        // 1538 x 8 / 50e6 s = 246.08 us.
        let gap = 1538.0 * 8.0 / 50e6;
        let arrivals: Vec<(Duration, u32)> = (0..100)
            .map(|i| (Duration::from_secs_f64(1.0 + i as f64 * gap), 1500))
            .collect();
        let bb = bottleneck_bps(&arrivals, ETHERNET_OVERHEAD).unwrap_or_default();
        assert!((bb - 50e6).abs() < 1.0, "{bb}");
        assert_eq!(bottleneck_bps(&arrivals[..1], ETHERNET_OVERHEAD), None);
        let same = [(ms(1.0), 1500), (ms(1.0), 1500)];
        assert_eq!(bottleneck_bps(&same, ETHERNET_OVERHEAD), None);
    }

    /// Runs a search against a path that carries packets up to `path_mtu` and loses each
    /// probe whose number is in `lose` (counting from 1) whatever its size.
    fn search(interface: u32, path_mtu: u32, lose: &[u32]) -> PmtuResult {
        let mut s = PmtuSearch::new(1280, interface);
        let mut n = 0;
        while let Some(size) = s.next_probe() {
            n += 1;
            assert!(n < 100, "the search ends");
            if size <= path_mtu && !lose.contains(&n) {
                s.answered(size);
            } else {
                s.lost(size);
            }
        }
        s.result()
    }

    #[test]
    fn the_mtu_search_finds_the_path_mtu_exactly() {
        // A path that carries the interface's MTU: one probe.
        let r = search(1500, 1500, &[]);
        assert_eq!((r.mtu, r.probes), (1500, 1));
        // A tunnel of 1420 behind a 1500 interface: three losses at 1500, then a binary
        // search down to the byte.
        let r = search(1500, 1420, &[]);
        assert_eq!(r.mtu, 1420);
        assert!(r.probes <= 3 + 8 * 3, "{r:?}");
        // Jumbo frames through a 9000 path, and a path of exactly the floor.
        assert_eq!(search(9000, 9000, &[]).mtu, 9000);
        assert_eq!(search(9000, 1280, &[]).mtu, 1280);
        assert_eq!(search(9000, 8192, &[]).mtu, 8192);
    }

    #[test]
    fn a_lost_probe_is_retried_before_a_size_is_given_up() {
        // The first two probes of 1500 are lost at random, the third arrives: 1500.
        let r = search(1500, 1500, &[1, 2]);
        assert_eq!((r.mtu, r.probes), (1500, 3));
        // Random loss elsewhere in the search does not move the result.
        assert_eq!(search(1500, 1420, &[4, 7, 9]).mtu, 1420);
    }
}
