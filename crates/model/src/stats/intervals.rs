//! Interval rows of frame streams (`streams`, `gen --rx`): each stream's totals taken at the
//! end of every interval become per-interval differences, one row per stream and their sum.
//!
//! What this module does: [`rows`] turns [`Tick`]s (totals at each interval's end: what the
//! generator sent, what the receiver counted, the latency buckets) into
//! [`IntervalRow`]s, and [`attribute_loss`] replaces each row's noticed loss by the frames
//! due in it that never arrived, from both sides' slots of send time ([`super::slots`]).
//! What it does not do: take the ticks (the engine's receive loop does, against its clock)
//! or print.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::clock::UnixNanos;
use crate::results::{IntervalLatency, IntervalRow, LatencyKind};
use crate::stats::buckets::BucketCounts;
use crate::stats::counters::Counters;
use crate::stats::slots::{lost_per_interval, TxSlots};

/// One stream's totals at a tick.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StreamTotals {
    /// Stream id.
    pub id: u8,
    /// Frames the generator sent so far.
    pub sent: u64,
    /// Their bytes.
    pub sent_bytes: u64,
    /// What the receiver counted so far (`lost` in flight: numbers missing below the
    /// highest seen).
    pub received: Counters,
    /// Bytes of the distinct frames received.
    pub received_bytes: u64,
    /// Latency samples so far.
    pub latency: BucketCounts,
}

/// Every stream's totals at the end of an interval.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Tick {
    /// The interval's end, from the start of the run.
    pub end: Duration,
    /// The streams, by id.
    pub streams: Vec<StreamTotals>,
}

/// Interval rows (direction `tx`: frames from the generator to the receiver): per interval,
/// one row per stream when there are several, then their sum; latency of `kind`.
pub fn rows(ticks: &[Tick], kind: LatencyKind) -> Vec<IntervalRow> {
    let mut out = Vec::new();
    let mut prev: BTreeMap<u8, &StreamTotals> = BTreeMap::new();
    let mut start = Duration::ZERO;
    let empty = StreamTotals::default();
    for t in ticks {
        let secs = t.end.saturating_sub(start).as_secs_f64();
        let per_s = |b: u64| {
            if secs > 0.0 {
                b as f64 * 8.0 / secs
            } else {
                0.0
            }
        };
        let row = |stream: Option<u8>, d: &StreamTotals| IntervalRow {
            start_s: start.as_secs_f64(),
            end_s: t.end.as_secs_f64(),
            direction: "tx".into(),
            stream,
            sent_bytes: Some(d.sent_bytes),
            received_bytes: Some(d.received_bytes),
            sent_bps: Some(per_s(d.sent_bytes)),
            received_bps: Some(per_s(d.received_bytes)),
            sent_packets: Some(d.sent),
            received_packets: Some(d.received.received),
            lost_packets: Some(d.received.lost),
            loss_attributed: false,
            duplicate_packets: Some(d.received.duplicates),
            reordered_packets: Some(d.received.reordered),
            latency: d
                .latency
                .summary()
                .map(|s| IntervalLatency::from_buckets(kind, &s)),
            jitter_us: None,
            retransmits: None,
            tcp: None,
        };
        let mut sum = StreamTotals::default();
        for s in &t.streams {
            let p = prev.get(&s.id).copied().unwrap_or(&empty);
            let d = StreamTotals {
                id: s.id,
                sent: s.sent.saturating_sub(p.sent),
                sent_bytes: s.sent_bytes.saturating_sub(p.sent_bytes),
                received: s.received.since(&p.received),
                received_bytes: s.received_bytes.saturating_sub(p.received_bytes),
                latency: s.latency.since(&p.latency),
            };
            if t.streams.len() > 1 {
                out.push(row(Some(s.id), &d));
            }
            sum.sent += d.sent;
            sum.sent_bytes += d.sent_bytes;
            sum.received = sum.received.plus(&d.received);
            sum.received_bytes += d.received_bytes;
            sum.latency = sum.latency.plus(&d.latency);
        }
        out.push(row(None, &sum));
        for s in &t.streams {
            prev.insert(s.id, s);
        }
        start = t.end;
    }
    out
}

/// One stream's counts per slot of send time: what it sent, what arrived, and the
/// sender's clock at the start of interval 0.
#[derive(Debug, Clone, Copy)]
pub struct SlotCounts<'a> {
    /// Frames (packets) sent per slot.
    pub sent: &'a TxSlots,
    /// Distinct ones received per slot.
    pub received: &'a TxSlots,
    /// The sender's clock when interval 0 began.
    pub origin: UnixNanos,
}

/// Replaces the noticed loss of `rows` (one direction's) by the frames due in each interval
/// that never arrived, from each stream's slot counts; sum rows get the sum. All or
/// nothing: when a stream of the rows has no counts, or its counts cannot place a loss
/// (see [`lost_per_interval`]), no row changes and it returns false.
pub fn attribute_loss(rows: &mut [IntervalRow], streams: &BTreeMap<u8, SlotCounts<'_>>) -> bool {
    let per_stream = rows.iter().any(|r| r.stream.is_some());
    let mut ids: Vec<u8> = if per_stream {
        rows.iter().filter_map(|r| r.stream).collect()
    } else if streams.len() == 1 {
        streams.keys().copied().collect()
    } else {
        return false;
    };
    ids.sort_unstable();
    ids.dedup();
    let mine =
        |r: &IntervalRow, id: u8| r.stream == Some(id) || (!per_stream && r.stream.is_none());
    let mut lost = Vec::new();
    for &id in &ids {
        let Some(c) = streams.get(&id) else {
            return false;
        };
        let ends: Vec<f64> = rows
            .iter()
            .filter(|x| mine(x, id))
            .map(|x| x.end_s)
            .collect();
        let Some(l) = lost_per_interval(c.sent, c.received, c.origin, &ends) else {
            return false;
        };
        lost.push((id, l));
    }
    for (id, l) in &lost {
        for (row, n) in rows.iter_mut().filter(|x| mine(x, *id)).zip(l) {
            row.lost_packets = Some(*n);
            row.loss_attributed = true;
        }
    }
    if per_stream {
        for (k, row) in rows.iter_mut().filter(|x| x.stream.is_none()).enumerate() {
            row.lost_packets = Some(lost.iter().filter_map(|(_, l)| l.get(k)).sum());
            row.loss_attributed = true;
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::buckets::LogBuckets;

    fn totals(id: u8, sent: u64, received: u64, lat: &LogBuckets) -> StreamTotals {
        StreamTotals {
            id,
            sent,
            sent_bytes: sent * 100,
            received: Counters {
                received,
                ..Counters::default()
            },
            received_bytes: received * 100,
            latency: lat.reading(),
        }
    }

    #[test]
    fn ticks_become_rows_per_stream_and_their_sum() {
        let mut lat = LogBuckets::default();
        lat.record(50_000);
        let t1 = Tick {
            end: Duration::from_secs(1),
            streams: vec![
                totals(1, 1000, 990, &lat),
                totals(2, 500, 500, &LogBuckets::default()),
            ],
        };
        lat.record(2_000_000);
        let t2 = Tick {
            end: Duration::from_millis(1500),
            streams: vec![
                totals(1, 1500, 1480, &lat),
                totals(2, 750, 750, &LogBuckets::default()),
            ],
        };
        let r = rows(&[t1, t2], LatencyKind::OneWay);
        let ids: Vec<_> = r.iter().map(|x| x.stream).collect();
        assert_eq!(ids, [Some(1), Some(2), None, Some(1), Some(2), None]);
        assert_eq!(r[2].sent_packets, Some(1500));
        assert_eq!(r[3].received_packets, Some(490));
        assert_eq!((r[5].start_s, r[5].end_s), (1.0, 1.5));
        // 250 frames of 100 bytes in 0.5 s on stream 2.
        assert_eq!(r[4].sent_bps, Some(250.0 * 800.0 / 0.5));
        // The second interval's latency is the 2 ms sample only.
        let l = r[3].latency.unwrap();
        assert_eq!(l.count, 1);
        assert!((l.p50_us - 2_000.0).abs() < 2_000.0 * 0.061);
        assert!(r[4].latency.is_none());
    }

    #[test]
    fn loss_goes_to_the_interval_its_frames_were_due() {
        let ms = |m: u64| UnixNanos(1_700_000_000_000_000_000 + m * 1_000_000);
        let (mut s, mut r) = (TxSlots::new(50_000_000), TxSlots::new(50_000_000));
        for m in 0..2_000 {
            s.record(ms(m), 1);
            if !(1_200..1_300).contains(&m) {
                r.record(ms(m), 1);
            }
        }
        let t = |end_ms: u64| Tick {
            end: Duration::from_millis(end_ms),
            streams: vec![totals(1, 0, 0, &LogBuckets::default())],
        };
        let mut out = rows(&[t(1_000), t(2_000)], LatencyKind::OneWay);
        let counts = SlotCounts {
            sent: &s,
            received: &r,
            origin: ms(0),
        };
        assert!(attribute_loss(&mut out, &BTreeMap::from([(1, counts)])));
        assert_eq!(
            out.iter().map(|x| x.lost_packets).collect::<Vec<_>>(),
            [Some(0), Some(100)]
        );
        assert!(out.iter().all(|x| x.loss_attributed));
        // Without a stream's counts the noticed loss stays.
        let mut kept = rows(&[t(1_000)], LatencyKind::OneWay);
        assert!(!attribute_loss(&mut kept, &BTreeMap::new()));
        assert!(!kept[0].loss_attributed);
    }
}
