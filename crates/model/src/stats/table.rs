//! Per-stream receive accounting for many streams arriving interleaved on one or several
//! receivers: frames are told apart by the stream id of their test header, and each
//! stream keeps its own sequence window, byte count, latency histogram and arrival span.
//! Pure: frames and times come in as arguments.

use std::collections::BTreeMap;

use crate::clock::UnixNanos;
use crate::stats::buckets::LogBuckets;
use crate::stats::counters::Counters;
use crate::stats::histogram::LatencyHistogram;
use crate::stats::seq::SeqTracker;
use crate::stats::slots::TxSlots;

/// What one stream received.
#[derive(Debug, Clone)]
pub struct StreamRx {
    seq: SeqTracker,
    /// Bytes of the distinct frames received (as received, no FCS).
    pub bytes: u64,
    /// Transmit-to-receive latency of distinct frames with a receive stamp.
    pub latency: LatencyHistogram,
    /// Distinct frames without a receive stamp.
    pub unstamped: u64,
    /// First and last receive stamp of a distinct frame.
    pub span: Option<(UnixNanos, UnixNanos)>,
    /// The same latencies in growing buckets, for the latency per interval.
    pub buckets: LogBuckets,
    /// Distinct frames per slot of send time (see [`TxSlots`]; empty unless asked for).
    pub slots: TxSlots,
}

impl StreamRx {
    fn new(slot_ns: u64) -> Self {
        Self {
            seq: SeqTracker::new(1 << 16),
            bytes: 0,
            latency: LatencyHistogram::new(),
            unstamped: 0,
            span: None,
            buckets: LogBuckets::default(),
            slots: TxSlots::new(slot_ns),
        }
    }

    /// Received / duplicates / reordered / late.
    pub fn counters(&self) -> Counters {
        self.seq.counters()
    }
}

/// Streams of one test, by stream id.
#[derive(Debug, Clone)]
pub struct StreamTable {
    test_id: u16,
    streams: BTreeMap<u8, StreamRx>,
    /// Frames that were not of this test.
    pub foreign: u64,
    /// Frames of this test's other streams (addressed elsewhere, or flooded here), by
    /// stream id.
    strays: BTreeMap<u8, StreamRx>,
}

impl StreamTable {
    /// A table for test `test_id` and the streams `ids`.
    pub fn new(test_id: u16, ids: impl IntoIterator<Item = u8>) -> Self {
        Self {
            test_id,
            streams: ids.into_iter().map(|id| (id, StreamRx::new(0))).collect(),
            foreign: 0,
            strays: BTreeMap::new(),
        }
    }

    /// Counts each stream's distinct frames per slot of `width_ns` of send time too (to
    /// place losses in the interval they were due).
    pub fn with_slots(mut self, width_ns: u64) -> Self {
        for s in self.streams.values_mut() {
            s.slots = TxSlots::new(width_ns);
        }
        self
    }

    /// Every stream, by id.
    pub fn streams(&self) -> impl Iterator<Item = (u8, &StreamRx)> {
        self.streams.iter().map(|(id, s)| (*id, s))
    }

    /// Accounts one received frame of `len` bytes whose test header (if any) is `hdr`,
    /// received at `rx` (kernel stamp). Returns whether it belonged to a stream.
    pub fn on_frame(
        &mut self,
        hdr: Option<&wire::testhdr::TestHeaderRepr>,
        len: usize,
        rx: Option<UnixNanos>,
    ) -> bool {
        let Some(h) = hdr.filter(|h| h.test_id == self.test_id) else {
            self.foreign += 1;
            return false;
        };
        let (s, ours) = match self.streams.get_mut(&h.stream_id) {
            Some(s) => (s, true),
            None => (
                self.strays
                    .entry(h.stream_id)
                    .or_insert_with(|| StreamRx::new(0)),
                false,
            ),
        };
        if s.seq.on_packet(h.seq).is_accepted() {
            s.bytes += len as u64;
            s.slots.record(UnixNanos(h.tx_ns), 1);
            match rx {
                Some(t) => {
                    s.latency.record_ns(t.0.saturating_sub(h.tx_ns));
                    s.buckets.record(t.0.saturating_sub(h.tx_ns));
                    s.span = Some(match s.span {
                        Some((a, b)) => (a.min(t), b.max(t)),
                        None => (t, t),
                    });
                }
                None => s.unstamped += 1,
            }
        }
        ours
    }

    /// Frames of this test's streams that are not this table's, by stream id: a switch
    /// flooded them here, or they were addressed elsewhere.
    pub fn strays(&self) -> impl Iterator<Item = (u8, &StreamRx)> {
        self.strays.iter().map(|(id, s)| (*id, s))
    }

    /// One stream's figures.
    pub fn stream(&self, id: u8) -> Option<&StreamRx> {
        self.streams.get(&id)
    }

    /// Distinct frames received over all streams.
    pub fn total_received(&self) -> u64 {
        self.streams.values().map(|s| s.counters().received).sum()
    }

    /// Frames accounted for over all streams: received, or arrived too late for the window.
    pub fn total_settled(&self) -> u64 {
        self.streams
            .values()
            .map(|s| {
                let c = s.counters();
                c.received + c.late
            })
            .sum()
    }
}

#[cfg(test)]
mod test {
    use super::*;
    use wire::testhdr::{TestFlags, TestHeaderRepr};

    fn h(test_id: u16, stream_id: u8, seq: u64) -> TestHeaderRepr {
        TestHeaderRepr {
            flags: TestFlags::empty(),
            test_id,
            stream_id,
            seq,
            tx_ns: 1_000,
        }
    }

    #[test]
    fn interleaved_streams_are_counted_apart() {
        let mut t = StreamTable::new(7, [1, 2, 3]);
        // Stream 1: 0..100 in order; stream 2: evens of 0..100 with 10 twice and 50 late;
        // stream 3: nothing. Interleaved frame by frame, plus foreign traffic.
        let mut arrivals = Vec::new();
        for i in 0..100u64 {
            arrivals.push(h(7, 1, i));
            if i % 2 == 0 && i != 50 {
                arrivals.push(h(7, 2, i));
            }
            if i == 10 {
                arrivals.push(h(7, 2, 10));
            }
            if i == 60 {
                arrivals.push(h(7, 2, 50));
            }
            arrivals.push(h(8, 1, i)); // another test
            arrivals.push(h(7, 9, i)); // another stream of the test: a stray
        }
        for (n, a) in arrivals.iter().enumerate() {
            t.on_frame(Some(a), 100, Some(UnixNanos(2_000 + n as u64)));
        }
        t.on_frame(None, 60, None);
        let s1 = t.stream(1).unwrap().counters();
        assert_eq!((s1.received, s1.duplicates, s1.reordered), (100, 0, 0));
        let s2 = t.stream(2).unwrap();
        let c2 = s2.counters();
        assert_eq!((c2.received, c2.duplicates, c2.reordered), (50, 1, 1));
        assert_eq!(s2.bytes, 50 * 100);
        assert_eq!(s2.latency.len(), 50);
        assert_eq!(t.stream(3).unwrap().counters().received, 0);
        assert_eq!(t.foreign, 100 + 1);
        let strays: Vec<(u8, u64)> = t
            .strays()
            .map(|(id, s)| (id, s.counters().received))
            .collect();
        assert_eq!(strays, [(9, 100)]);
        assert_eq!(t.strays().next().unwrap().1.latency.len(), 100);
        assert_eq!(t.total_received(), 150);
        let (a, b) = t.stream(1).unwrap().span.unwrap();
        assert!(a < b);
    }
}
