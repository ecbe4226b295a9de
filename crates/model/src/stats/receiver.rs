//! One receive stream's accumulator: sequence accounting, bytes, jitter and latency histograms.
//!
//! What this module does: [`StreamReceiver::on_packet`] takes one decoded probe (sequence
//! number, sender timestamp, receive timestamp, size) in arrival order and updates
//! - the [`SeqTracker`] (loss, duplicates, reordering, late packets);
//! - for accepted packets only (first copies inside the window, see [`Arrival::is_accepted`]):
//!   the byte count, the RFC 3550 jitter, and — when the caller says the clocks are comparable
//!   (`one_way`) — the one-way latency histogram `rx − tx`. A negative one-way sample means the
//!   clocks are not synchronised well enough; it is counted in `clock_skew_samples` and never
//!   recorded (RFC 5560: only the first copy of a packet is evaluated);
//! - for every arrival (duplicates and late ones too, since they occupy the link): the
//!   inter-arrival gap histogram `rx − previous rx`, which shows how the sender's pacing looks
//!   where it lands, and the first/last receive times.
//!
//! - for accepted packets: the count per slot of sender time ([`TxSlots`], when given a slot
//!   width), to place losses in the interval they were due; and the one-way delay in the
//!   growing [`LogBuckets`] too, whose readings give the latency per interval.
//!
//! [`StreamReceiver::snapshot`] copies the plain counters (no histogram) so a reporter can take
//! one every interval cheaply.
//!
//! What it does not do: no parsing (the caller decodes the packet), no clocks (timestamps are
//! inputs), no per-interval reset (diff two snapshots instead), no PDV/IPDV (computed from the
//! latency histogram by the report).

use serde::{Deserialize, Serialize};

use crate::clock::UnixNanos;
use crate::stats::buckets::LogBuckets;
use crate::stats::counters::Counters;
use crate::stats::histogram::LatencyHistogram;
use crate::stats::jitter::Rfc3550Jitter;
use crate::stats::seq::{Arrival, SeqTracker};
use crate::stats::slots::TxSlots;

/// Plain counters of one receive stream at one moment.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RxSnapshot {
    /// Received, duplicates, reordered, late, and lost so far (in-flight view; see
    /// [`SeqTracker::lost_so_far`]).
    pub counters: Counters,
    /// Bytes of the unique packets (as passed to [`StreamReceiver::on_packet`]).
    pub bytes: u64,
    /// Highest sequence number received.
    pub highest_seq: Option<u64>,
    /// RFC 3550 interarrival jitter, µs.
    pub jitter_us: f64,
    /// One-way samples dropped because `rx < tx` (clocks not synchronised).
    pub clock_skew_samples: u64,
    /// Receive time of the first arrival (of any kind).
    pub first_rx: Option<UnixNanos>,
    /// Receive time of the latest arrival (of any kind).
    pub last_rx: Option<UnixNanos>,
}

/// Accumulates the statistics of one receive stream (sans I/O; see the module docs).
#[derive(Clone, Debug)]
pub struct StreamReceiver {
    seq: SeqTracker,
    bytes: u64,
    jitter: Rfc3550Jitter,
    one_way: LatencyHistogram,
    buckets: LogBuckets,
    /// Buckets changed since the last [`StreamReceiver::take_latency_changes`], one bit each.
    touched: [u64; 4],
    slots: TxSlots,
    inter_arrival: LatencyHistogram,
    clock_skew_samples: u64,
    first_rx: Option<UnixNanos>,
    last_rx: Option<UnixNanos>,
}

impl StreamReceiver {
    /// A receiver for a wirebench stream, whose sequence numbers start at 0
    /// (`SeqTracker::with_origin(window, 0)`, so a lost first packet counts as lost).
    pub fn new(window: u64) -> StreamReceiver {
        StreamReceiver::with_tracker(SeqTracker::with_origin(window, 0))
    }

    /// A receiver around a given tracker (e.g. [`SeqTracker::new`] for a foreign sender whose
    /// first sequence number is unknown).
    pub fn with_tracker(seq: SeqTracker) -> StreamReceiver {
        StreamReceiver {
            seq,
            bytes: 0,
            jitter: Rfc3550Jitter::new(),
            one_way: LatencyHistogram::new(),
            buckets: LogBuckets::default(),
            touched: [0; 4],
            slots: TxSlots::new(0),
            inter_arrival: LatencyHistogram::new(),
            clock_skew_samples: 0,
            first_rx: None,
            last_rx: None,
        }
    }

    /// Counts accepted packets per slot of `width_ns` of sender time (see [`TxSlots`]).
    pub fn with_slots(mut self, width_ns: u64) -> StreamReceiver {
        self.slots = TxSlots::new(width_ns);
        self
    }

    /// Accounts for one arriving packet, in arrival order.
    ///
    /// `tx` is the sender's timestamp from the packet, `rx` the receive timestamp, `bytes` the
    /// size to count, and `one_way` whether `rx − tx` is a meaningful one-way delay (same host or
    /// synchronised clocks). Returns how the sequence number was classified.
    pub fn on_packet(
        &mut self,
        seq: u64,
        tx: UnixNanos,
        rx: UnixNanos,
        bytes: usize,
        one_way: bool,
    ) -> Arrival {
        // Every arrival: where the traffic lands on the time line.
        if let Some(prev) = self.last_rx {
            // A receive clock that steps back gives a 0 gap rather than a huge one.
            self.inter_arrival.record(rx.saturating_sub(prev));
        }
        self.first_rx.get_or_insert(rx);
        self.last_rx = Some(rx);

        let arrival = self.seq.on_packet(seq);
        if arrival.is_accepted() {
            self.bytes = self
                .bytes
                .saturating_add(u64::try_from(bytes).unwrap_or(u64::MAX));
            // RFC 3550 §6.4.1: every packet, in arrival order (first copies only).
            self.jitter.on_packet(tx, rx);
            self.slots.record(tx, 1);
            if one_way {
                match rx.checked_sub(tx) {
                    Some(delay) => {
                        self.one_way.record(delay);
                        let ns = u64::try_from(delay.as_nanos()).unwrap_or(u64::MAX);
                        let i = self.buckets.record(ns);
                        self.touched[i / 64] |= 1 << (i % 64);
                    }
                    None => self.clock_skew_samples += 1,
                }
            }
        }
        arrival
    }

    /// The plain counters, cheap to take every interval.
    pub fn snapshot(&self) -> RxSnapshot {
        RxSnapshot {
            counters: self.seq.counters(),
            bytes: self.bytes,
            highest_seq: self.seq.highest(),
            jitter_us: self.jitter.jitter_us(),
            clock_skew_samples: self.clock_skew_samples,
            first_rx: self.first_rx,
            last_rx: self.last_rx,
        }
    }

    /// The sequence tracker (for `lost_given_sent`, `max_reorder_distance`, …).
    pub fn seq(&self) -> &SeqTracker {
        &self.seq
    }

    /// The sequence counters.
    pub fn seq_counters(&self) -> Counters {
        self.seq.counters()
    }

    /// The RFC 3550 jitter estimator.
    pub fn jitter(&self) -> &Rfc3550Jitter {
        &self.jitter
    }

    /// One-way latency (`rx − tx`, ns) of accepted packets received with `one_way = true`.
    pub fn latency(&self) -> &LatencyHistogram {
        &self.one_way
    }

    /// The one-way delays so far in growing buckets, and the buckets changed since the last
    /// call (for a publisher that stores only those).
    pub fn take_latency_changes(&mut self) -> (&LogBuckets, Vec<usize>) {
        let bits = std::mem::take(&mut self.touched);
        let changed = (0..256)
            .filter(|i| bits[i / 64] & (1 << (i % 64)) != 0)
            .collect();
        (&self.buckets, changed)
    }

    /// Accepted packets per slot of sender time (empty without [`Self::with_slots`]).
    pub fn slots(&self) -> &TxSlots {
        &self.slots
    }

    /// Gaps between consecutive arrivals (ns), over all arrivals.
    pub fn gaps(&self) -> &LatencyHistogram {
        &self.inter_arrival
    }

    /// One-way samples dropped because `rx < tx`.
    pub fn clock_skew_samples(&self) -> u64 {
        self.clock_skew_samples
    }

    /// Bytes of accepted packets.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::{Clock, VirtualClock};
    use std::time::Duration;

    const WALL0: UnixNanos = UnixNanos(1_700_000_000_000_000_000);

    fn tx_of(seq: u64) -> UnixNanos {
        WALL0.saturating_add(Duration::from_micros(100 * seq))
    }

    /// Sets the virtual clock to `at_us` and delivers `seq` stamped by the sender at
    /// `tx_of(seq)` (one packet every 100 µs) and received at the clock's wall time.
    fn deliver(
        rx: &mut StreamReceiver,
        clock: &VirtualClock,
        seq: u64,
        at_us: u64,
        one_way: bool,
    ) -> Arrival {
        clock.set_mono(Duration::from_micros(at_us));
        rx.on_packet(seq, tx_of(seq), clock.wall(), 100, one_way)
    }

    #[test]
    fn scripted_stream_covers_every_counter() {
        let clock = VirtualClock::new(WALL0);
        let mut rx = StreamReceiver::new(64);
        let r = &mut rx;
        let c = &clock;

        // seq 0 lost; 1 and 2 in order with 50 µs transit.
        assert_eq!(deliver(r, c, 1, 150, true), Arrival::Gap { skipped: 1 });
        assert_eq!(deliver(r, c, 2, 250, true), Arrival::InOrder);
        // 4 overtakes 3.
        assert_eq!(deliver(r, c, 4, 450, true), Arrival::Gap { skipped: 1 });
        assert_eq!(deliver(r, c, 3, 460, true), Arrival::Reordered);
        // 4 duplicated.
        assert_eq!(deliver(r, c, 4, 470, true), Arrival::Duplicate);
        // 5 (sent at 500 µs) received at 465 µs by a receiver clock that is behind: negative
        // one-way delay (skew) and a receive time that goes backwards.
        assert_eq!(deliver(r, c, 5, 465, true), Arrival::InOrder);
        // 6 without a one-way sample (clocks not comparable).
        assert_eq!(deliver(r, c, 6, 650, false), Arrival::InOrder);
        // Jump to 100: then 30 is older than the 64-packet window.
        assert_eq!(
            deliver(r, c, 100, 10_050, true),
            Arrival::Gap { skipped: 93 }
        );
        assert_eq!(deliver(r, c, 30, 10_060, true), Arrival::Late);

        let s = rx.snapshot();
        assert_eq!(
            s,
            RxSnapshot {
                counters: Counters {
                    sent: 0,
                    received: 7, // 1 2 4 3 5 6 100
                    lost: 101 - 7,
                    duplicates: 1,
                    reordered: 1,
                    late: 1,
                },
                bytes: 700,
                highest_seq: Some(100),
                jitter_us: s.jitter_us,
                clock_skew_samples: 1,
                first_rx: Some(WALL0.saturating_add(Duration::from_micros(150))),
                last_rx: Some(WALL0.saturating_add(Duration::from_micros(10_060))),
            }
        );
        assert!(s.jitter_us > 0.0);
        assert_eq!(rx.seq().lost_given_sent(101), 94);
        assert_eq!(rx.seq().max_reorder_distance(), 1);
        assert_eq!(rx.bytes(), 700);
        assert_eq!(rx.clock_skew_samples(), 1);
        assert_eq!(rx.seq_counters().received, 7);

        // One-way: 1, 2, 4 (50 µs), 3 (160 µs), 100 (50 µs); not 5 (skew), 6 (off), the
        // duplicate or the late packet.
        let ow = rx.latency();
        assert_eq!(ow.len(), 5);
        let close = |a: f64, b: f64| (a - b).abs() <= b * 0.001;
        let sum = ow.summary().unwrap();
        assert!(close(sum.min_us, 50.0), "{sum:?}");
        assert!(close(sum.max_us, 160.0), "{sum:?}");

        // Inter-arrival gaps over all 9 arrivals: 8 gaps (100, 200, 10, 10, 0, 185, 9400, 10 µs)
        // including the duplicate and the late one; the receive time that went backwards
        // gives a 0 gap.
        // The same one-way samples in the growing buckets, handed out once.
        let (b, touched) = rx.take_latency_changes();
        assert_eq!((b.reading().total(), touched.len()), (5, 2)); // 50 and 160 µs
        assert!(rx.take_latency_changes().1.is_empty());

        let ia = rx.gaps();
        assert_eq!(ia.len(), 8);
        assert_eq!(ia.min_ns(), Some(0));
        assert!(close(ia.max_ns().unwrap() as f64, 9_400_000.0));

        // RFC 3550 over the 7 accepted arrivals, recomputed independently.
        let transits: [i64; 7] = [50_000, 50_000, 50_000, 160_000, -35_000, 50_000, 50_000];
        let mut j = 0.0f64;
        for w in transits.windows(2) {
            j += ((w[1] - w[0]).abs() as f64 - j) / 16.0;
        }
        assert!((rx.jitter().jitter_ns() - j).abs() < 1e-6);
        assert!((s.jitter_us - j / 1_000.0).abs() < 1e-9);
        assert_eq!(clock.mono(), Duration::from_micros(10_060));
    }

    #[test]
    fn accepted_packets_are_counted_by_send_time() {
        let mut rx = StreamReceiver::new(64).with_slots(1_000_000);
        let ms = |m: u64| UnixNanos(1_000_000 * m);
        rx.on_packet(0, ms(0), ms(1), 10, false);
        rx.on_packet(0, ms(0), ms(2), 10, false); // duplicate: not counted again
        rx.on_packet(2, ms(2), ms(3), 10, false);
        assert_eq!(rx.slots().counts, vec![1, 0, 1]);
        assert!(StreamReceiver::new(64).slots().counts.is_empty());
    }

    #[test]
    fn empty_receiver_snapshot() {
        let rx = StreamReceiver::new(seq_window());
        let s = rx.snapshot();
        assert_eq!(s, RxSnapshot::default());
        assert!(rx.latency().is_empty());
        assert!(rx.gaps().is_empty());
        assert_eq!(rx.seq().window(), 65_536);
    }

    fn seq_window() -> u64 {
        crate::stats::seq::DEFAULT_WINDOW
    }

    #[test]
    fn foreign_stream_origin_from_first_packet() {
        let mut rx = StreamReceiver::with_tracker(SeqTracker::new(64));
        let t = UnixNanos(1_000);
        assert_eq!(rx.on_packet(500, t, t, 10, false), Arrival::InOrder);
        assert_eq!(rx.snapshot().counters.lost, 0);
    }

    #[test]
    fn snapshot_serialises() {
        let mut rx = StreamReceiver::new(64);
        rx.on_packet(0, UnixNanos(1), UnixNanos(2), 64, true);
        let json = serde_json::to_string(&rx.snapshot()).unwrap();
        let back: RxSnapshot = serde_json::from_str(&json).unwrap();
        assert_eq!(back, rx.snapshot());
    }
}
