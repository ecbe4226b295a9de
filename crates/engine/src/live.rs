//! Live per-stream counters: written by one data-plane thread, read by anyone.
//!
//! The data thread stores its running totals after each batch with relaxed atomic stores
//! (one writer, no locks); the controller reads a [`LiveSnapshot`] at every interval tick
//! and reports the difference to the previous one. Latency samples go into growing bucket
//! counts ([`model::stats::buckets`]), published bucket by bucket as they change, so an
//! interval's latency is a difference too.

use std::sync::atomic::{AtomicU64, Ordering};

use model::stats::buckets::{BucketCounts, LogBuckets, BUCKETS};
use model::stats::Counters;

/// Running totals of one stream.
#[derive(Debug)]
pub struct LiveCounters {
    /// Latency samples per bucket (a receiver's one-way delays or a sender's round trips).
    latency: Box<[AtomicU64]>,
    sent: AtomicU64,
    received: AtomicU64,
    lost: AtomicU64,
    duplicates: AtomicU64,
    reordered: AtomicU64,
    late: AtomicU64,
    bytes: AtomicU64,
    /// Every payload byte received (or, by a TCP sender, sent), a TCP warm-up's too (what
    /// a server meters).
    raw_bytes: AtomicU64,
    jitter_ns: AtomicU64,
    retransmits: AtomicU64,
    cwnd_bytes: AtomicU64,
    snd_wnd: AtomicU64,
    rtt_us: AtomicU64,
    rttvar_us: AtomicU64,
    pmtu: AtomicU64,
}

impl Default for LiveCounters {
    fn default() -> Self {
        let zero = || AtomicU64::new(0);
        LiveCounters {
            latency: (0..BUCKETS).map(|_| zero()).collect(),
            sent: zero(),
            received: zero(),
            lost: zero(),
            duplicates: zero(),
            reordered: zero(),
            late: zero(),
            bytes: zero(),
            raw_bytes: zero(),
            jitter_ns: zero(),
            retransmits: zero(),
            cwnd_bytes: zero(),
            snd_wnd: zero(),
            rtt_us: zero(),
            rttvar_us: zero(),
            pmtu: zero(),
        }
    }
}

/// A TCP sender's connection state at one moment, from `TCP_INFO` (levels, not counters;
/// all 0 when unknown: UDP, a receiver, or before the first reading).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct TcpNow {
    /// Congestion window, bytes (segments × MSS).
    pub cwnd_bytes: u64,
    /// The peer's advertised receive window, bytes.
    pub snd_wnd: u64,
    /// Smoothed round-trip time, µs.
    pub rtt_us: u64,
    /// Round-trip time variation, µs.
    pub rttvar_us: u64,
    /// Path MTU, bytes.
    pub pmtu: u64,
}

impl TcpNow {
    /// No reading yet.
    pub fn is_empty(&self) -> bool {
        *self == TcpNow::default()
    }
}

/// A copy of [`LiveCounters`] at one moment.
///
/// On the wire (control protocol version 2, [`LiveWire`]) a snapshot carries one `packets`
/// count, a sender's `sent` or a receiver's `received` (a side keeps the other at 0); a
/// decoded snapshot has it in both, and a reader takes the one of the snapshot's side.
#[derive(Debug, Default, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(from = "LiveWire", into = "LiveWire")]
pub struct LiveSnapshot {
    /// A sender's `sent`; a receiver's `received`, `lost` (numbers not yet seen below the
    /// highest seen), `duplicates`, `reordered` and `late`.
    pub counters: Counters,
    /// Payload bytes sent or received.
    pub bytes: u64,
    /// Receiver: current RFC 3550 jitter in nanoseconds.
    pub jitter_ns: u64,
    /// TCP sender: retransmitted segments so far.
    pub retransmits: u64,
    /// TCP sender: the connection's state at the last reading.
    pub tcp: TcpNow,
    /// Latency samples so far per bucket: a receiver's one-way delays, a sender's round
    /// trips (empty when the stream measures none).
    pub latency: BucketCounts,
}

/// The wire form of a [`LiveSnapshot`] (control protocol version 2).
#[derive(serde::Serialize, serde::Deserialize)]
struct LiveWire {
    packets: u64,
    bytes: u64,
    lost: u64,
    duplicates: u64,
    reordered: u64,
    jitter_ns: u64,
    retransmits: u64,
    #[serde(default, skip_serializing_if = "TcpNow::is_empty")]
    tcp: TcpNow,
    #[serde(default, skip_serializing_if = "BucketCounts::is_empty")]
    latency: BucketCounts,
}

impl From<LiveSnapshot> for LiveWire {
    fn from(s: LiveSnapshot) -> Self {
        let c = s.counters;
        LiveWire {
            packets: c.sent.max(c.received),
            bytes: s.bytes,
            lost: c.lost,
            duplicates: c.duplicates,
            reordered: c.reordered,
            jitter_ns: s.jitter_ns,
            retransmits: s.retransmits,
            tcp: s.tcp,
            latency: s.latency,
        }
    }
}

impl From<LiveWire> for LiveSnapshot {
    fn from(w: LiveWire) -> Self {
        LiveSnapshot {
            counters: Counters {
                sent: w.packets,
                received: w.packets,
                lost: w.lost,
                duplicates: w.duplicates,
                reordered: w.reordered,
                late: 0,
            },
            bytes: w.bytes,
            jitter_ns: w.jitter_ns,
            retransmits: w.retransmits,
            tcp: w.tcp,
            latency: w.latency,
        }
    }
}

impl LiveCounters {
    /// Publishes every payload byte a receiver has read (a TCP sender: sent), a warm-up's
    /// too.
    pub fn publish_raw_bytes(&self, total: u64) {
        self.raw_bytes.store(total, Ordering::Relaxed);
    }

    /// Payload bytes moved so far, a TCP warm-up (`-O`) included: the larger of what
    /// was published with [`LiveCounters::publish_raw_bytes`] and the counted bytes.
    pub fn raw_bytes(&self) -> u64 {
        self.raw_bytes
            .load(Ordering::Relaxed)
            .max(self.bytes.load(Ordering::Relaxed))
    }

    /// Publishes the latency buckets that changed (`touched`, called by the single writer
    /// thread after [`LogBuckets::record`]).
    pub fn publish_latency(&self, buckets: &LogBuckets, touched: &[usize]) {
        for &i in touched {
            if let Some(cell) = self.latency.get(i) {
                cell.store(buckets.count(i), Ordering::Relaxed);
            }
        }
    }

    /// Publishes new totals (called by the single writer thread; the latency buckets go
    /// through [`LiveCounters::publish_latency`]).
    pub fn publish(&self, s: &LiveSnapshot) {
        let c = &s.counters;
        for (cell, v) in [
            (&self.sent, c.sent),
            (&self.received, c.received),
            (&self.lost, c.lost),
            (&self.duplicates, c.duplicates),
            (&self.reordered, c.reordered),
            (&self.late, c.late),
            (&self.bytes, s.bytes),
            (&self.jitter_ns, s.jitter_ns),
            (&self.retransmits, s.retransmits),
            (&self.cwnd_bytes, s.tcp.cwnd_bytes),
            (&self.snd_wnd, s.tcp.snd_wnd),
            (&self.rtt_us, s.tcp.rtt_us),
            (&self.rttvar_us, s.tcp.rttvar_us),
            (&self.pmtu, s.tcp.pmtu),
        ] {
            cell.store(v, Ordering::Relaxed);
        }
    }

    /// Reads the current totals.
    pub fn snapshot(&self) -> LiveSnapshot {
        let get = |cell: &AtomicU64| cell.load(Ordering::Relaxed);
        LiveSnapshot {
            counters: Counters {
                sent: get(&self.sent),
                received: get(&self.received),
                lost: get(&self.lost),
                duplicates: get(&self.duplicates),
                reordered: get(&self.reordered),
                late: get(&self.late),
            },
            bytes: get(&self.bytes),
            jitter_ns: get(&self.jitter_ns),
            retransmits: get(&self.retransmits),
            tcp: TcpNow {
                cwnd_bytes: get(&self.cwnd_bytes),
                snd_wnd: get(&self.snd_wnd),
                rtt_us: get(&self.rtt_us),
                rttvar_us: get(&self.rttvar_us),
                pmtu: get(&self.pmtu),
            },
            latency: BucketCounts(
                self.latency
                    .iter()
                    .enumerate()
                    .filter_map(|(i, c)| {
                        let n = get(c);
                        (n > 0).then_some((i as u8, n))
                    })
                    .collect(),
            ),
        }
    }
}

impl LiveSnapshot {
    /// Counter increase since `earlier`, latency samples included (jitter and the TCP state
    /// are levels, so the current values are kept).
    pub fn since(&self, earlier: &LiveSnapshot) -> LiveSnapshot {
        LiveSnapshot {
            counters: self.counters.since(&earlier.counters),
            bytes: self.bytes.saturating_sub(earlier.bytes),
            jitter_ns: self.jitter_ns,
            retransmits: self.retransmits.saturating_sub(earlier.retransmits),
            tcp: self.tcp,
            latency: self.latency.since(&earlier.latency),
        }
    }
}

#[cfg(test)]
mod test {
    use super::*;

    fn received(received: u64, lost: u64, bytes: u64, jitter_ns: u64) -> LiveSnapshot {
        LiveSnapshot {
            counters: Counters {
                received,
                lost,
                ..Counters::default()
            },
            bytes,
            jitter_ns,
            retransmits: 0,
            tcp: TcpNow::default(),
            latency: BucketCounts::default(),
        }
    }

    #[test]
    fn latency_buckets_are_published_and_differenced() {
        let c = LiveCounters::default();
        let mut b = LogBuckets::default();
        let touched = [b.record(100_000), b.record(100_000)];
        c.publish_latency(&b, &touched);
        let first = c.snapshot();
        assert_eq!(first.latency.total(), 2);
        let touched = [b.record(3_000_000)];
        c.publish_latency(&b, &touched);
        let d = c.snapshot().since(&first);
        assert_eq!(d.latency.total(), 1);
        let p50 = d.latency.summary().unwrap().p50_us;
        assert!((p50 - 3_000.0).abs() < 3_000.0 * 0.061, "{p50}");
        // On the wire only when there are samples.
        let v = serde_json::to_value(&d).unwrap();
        let back: LiveSnapshot = serde_json::from_value(v).unwrap();
        assert_eq!(back.latency, d.latency);
        assert!(serde_json::to_value(LiveSnapshot::default())
            .unwrap()
            .get("latency")
            .is_none());
    }

    #[test]
    fn publish_then_snapshot_and_delta() {
        let c = LiveCounters::default();
        let a = received(10, 1, 1000, 5);
        c.publish(&a);
        assert_eq!(c.snapshot(), a);
        let b = received(25, 1, 2500, 7);
        c.publish(&b);
        let d = c.snapshot().since(&a);
        assert_eq!(d.counters.received, 15);
        assert_eq!(d.bytes, 1500);
        assert_eq!(d.counters.lost, 0);
        assert_eq!(d.jitter_ns, 7);
    }

    #[test]
    fn wire_form_is_protocol_version_2() {
        let v = serde_json::to_value(received(25, 1, 2500, 7)).unwrap();
        assert_eq!(
            v,
            serde_json::json!({"packets": 25, "bytes": 2500, "lost": 1, "duplicates": 0,
                "reordered": 0, "jitter_ns": 7, "retransmits": 0})
        );
        let back: LiveSnapshot = serde_json::from_value(v).unwrap();
        assert_eq!((back.counters.received, back.counters.sent), (25, 25));
        assert_eq!((back.counters.lost, back.bytes), (1, 2500));
    }
}
