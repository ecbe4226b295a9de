//! A small latency histogram of fixed logarithmic buckets whose counts only grow, so two
//! readings can be subtracted: the latency of one interval is `now − previous`.
//!
//! What this module does: [`LogBuckets`] counts nanosecond samples in 256 buckets, eight per
//! octave (each an eighth of the octave's base wide: 12.5 % at its start, 6.7 % at its end)
//! from 64 ns to 2^38 ns (≈ 275 s); samples below
//! 64 ns share bucket 0 and those above the top share the last. A quantile is read as the
//! geometric middle of the bucket holding it, so per-interval figures are within ±6.1 % of
//! the exact sample (the whole test's figures come from the HDR histogram of
//! [`super::histogram`], which keeps three significant digits). [`BucketCounts`] is the
//! sparse reading (only the buckets that hold samples) sent with every interval sample.
//!
//! What it does not do: no atomics (the engine publishes readings), no merging of differently
//! sized buckets, no exact minimum or maximum.

use serde::{Deserialize, Serialize};

/// Number of buckets.
pub const BUCKETS: usize = 256;
/// Buckets per octave.
const PER_OCTAVE: u32 = 8;
/// The first octave with its own buckets: 2^6 = 64 ns.
const FIRST_OCTAVE: u32 = 6;

/// The bucket of a sample of `ns` nanoseconds.
pub fn bucket_of(ns: u64) -> usize {
    if ns < 1 << FIRST_OCTAVE {
        return 0;
    }
    let octave = 63 - ns.leading_zeros();
    let sub = (ns >> (octave - 3)) & u64::from(PER_OCTAVE - 1);
    let index = (octave - FIRST_OCTAVE) as usize * PER_OCTAVE as usize + sub as usize;
    index.min(BUCKETS - 1)
}

/// The lower edge of bucket `i`, ns.
pub fn lower_edge(i: usize) -> f64 {
    let octave = FIRST_OCTAVE + (i / PER_OCTAVE as usize) as u32;
    let sub = (i % PER_OCTAVE as usize) as f64;
    (1u64 << octave) as f64 * (1.0 + sub / f64::from(PER_OCTAVE))
}

/// The value a quantile in bucket `i` is read as: the geometric middle of its edges, ns.
pub fn middle(i: usize) -> f64 {
    (lower_edge(i) * lower_edge(i + 1)).sqrt()
}

/// Growing counts of latency samples per bucket.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LogBuckets {
    counts: Box<[u64; BUCKETS]>,
}

impl Default for LogBuckets {
    fn default() -> Self {
        LogBuckets {
            counts: Box::new([0; BUCKETS]),
        }
    }
}

impl LogBuckets {
    /// Counts one sample; returns its bucket (so a publisher can store only that one).
    pub fn record(&mut self, ns: u64) -> usize {
        let i = bucket_of(ns);
        self.counts[i] = self.counts[i].saturating_add(1);
        i
    }

    /// The count of bucket `i`.
    pub fn count(&self, i: usize) -> u64 {
        self.counts.get(i).copied().unwrap_or(0)
    }

    /// The sparse reading.
    pub fn reading(&self) -> BucketCounts {
        BucketCounts(
            self.counts
                .iter()
                .enumerate()
                .filter(|(_, c)| **c > 0)
                .map(|(i, c)| (i as u8, *c))
                .collect(),
        )
    }
}

/// A sparse reading: `(bucket, count)` for the buckets that hold samples, ascending. A
/// reading decoded from a peer is put in that order (duplicates merged, counts saturated)
/// whatever it was sent in.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(from = "Vec<(u8, u64)>")]
pub struct BucketCounts(pub Vec<(u8, u64)>);

impl From<Vec<(u8, u64)>> for BucketCounts {
    fn from(v: Vec<(u8, u64)>) -> Self {
        let mut all = [0u64; BUCKETS];
        for (i, c) in v {
            all[usize::from(i)] = all[usize::from(i)].saturating_add(c);
        }
        BucketCounts::dense(&all)
    }
}

/// Latency over some samples, read from buckets (µs; see the module docs for the precision).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BucketSummary {
    /// Samples.
    pub count: u64,
    /// The lowest sample's bucket, read at its middle.
    pub min_us: f64,
    /// Median.
    pub p50_us: f64,
    /// 99th percentile.
    pub p99_us: f64,
    /// The highest sample's bucket, read at its middle.
    pub max_us: f64,
}

impl BucketCounts {
    /// True when no bucket holds a sample.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Samples in all buckets.
    pub fn total(&self) -> u64 {
        self.0.iter().fold(0u64, |a, (_, c)| a.saturating_add(*c))
    }

    fn dense(all: &[u64; BUCKETS]) -> BucketCounts {
        BucketCounts(
            all.iter()
                .enumerate()
                .filter(|(_, c)| **c > 0)
                .map(|(i, c)| (i as u8, *c))
                .collect(),
        )
    }

    /// The samples added since `earlier` (a reading of the same buckets taken before).
    pub fn since(&self, earlier: &BucketCounts) -> BucketCounts {
        BucketCounts(
            self.0
                .iter()
                .filter_map(|&(i, c)| {
                    let before = earlier
                        .0
                        .iter()
                        .find(|(j, _)| *j == i)
                        .map_or(0, |(_, c)| *c);
                    let d = c.saturating_sub(before);
                    (d > 0).then_some((i, d))
                })
                .collect(),
        )
    }

    /// Adds another reading's samples (the sum of several streams).
    pub fn plus(&self, other: &BucketCounts) -> BucketCounts {
        let mut all = [0u64; BUCKETS];
        for &(i, c) in self.0.iter().chain(&other.0) {
            all[usize::from(i)] = all[usize::from(i)].saturating_add(c);
        }
        BucketCounts::dense(&all)
    }

    /// The value below which a share `q` (0..=1) of the samples lie, ns (`None` when empty).
    pub fn quantile_ns(&self, q: f64) -> Option<f64> {
        let total = self.total();
        if total == 0 {
            return None;
        }
        // The rank of the sample asked for, 1-based (the nearest-rank definition).
        let rank = ((q.clamp(0.0, 1.0) * total as f64).ceil() as u64).clamp(1, total);
        let mut seen = 0u64;
        for &(i, c) in &self.0 {
            seen = seen.saturating_add(c);
            if seen >= rank {
                return Some(middle(usize::from(i)));
            }
        }
        self.0.last().map(|(i, _)| middle(usize::from(*i)))
    }

    /// Minimum, median, 99th percentile and maximum, µs (`None` when empty).
    pub fn summary(&self) -> Option<BucketSummary> {
        let us = |q: f64| self.quantile_ns(q).map(|ns| ns / 1_000.0);
        Some(BucketSummary {
            count: self.total(),
            min_us: us(0.0)?,
            p50_us: us(0.5)?,
            p99_us: us(0.99)?,
            max_us: us(1.0)?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_ordered_and_read_within_six_percent() {
        assert_eq!(bucket_of(0), 0);
        assert_eq!(bucket_of(63), 0);
        assert_eq!(bucket_of(64), 0);
        assert_eq!(bucket_of(72), 1);
        assert_eq!(bucket_of(128), 8);
        assert_eq!(bucket_of(u64::MAX), BUCKETS - 1);
        let mut last = 0;
        for ns in (64..10_000_000u64).step_by(997) {
            let b = bucket_of(ns);
            assert!(b >= last, "{ns}");
            last = b;
            // The sample lies within its bucket's edges, and the middle is within 6.1 %.
            assert!(
                lower_edge(b) <= ns as f64 && (ns as f64) < lower_edge(b + 1),
                "{ns}"
            );
            assert!((middle(b) - ns as f64).abs() / ns as f64 <= 0.061, "{ns}");
        }
        assert!(lower_edge(BUCKETS - 1) > 250e9);
    }

    #[test]
    fn interval_readings_subtract_and_add() {
        let mut b = LogBuckets::default();
        for _ in 0..99 {
            b.record(100_000); // 100 µs
        }
        b.record(5_000_000); // 5 ms
        let first = b.reading();
        let s = first.summary().unwrap();
        assert_eq!(s.count, 100);
        assert!((s.p50_us - 100.0).abs() < 6.1, "{s:?}");
        assert!((s.p99_us - 100.0).abs() < 6.1, "{s:?}");
        assert!((s.max_us - 5_000.0).abs() < 305.0, "{s:?}");
        // The next interval holds only what came after the first reading.
        for _ in 0..10 {
            b.record(2_000_000);
        }
        let second = b.reading().since(&first);
        assert_eq!(second.total(), 10);
        let s2 = second.summary().unwrap();
        assert!((s2.min_us - 2_000.0).abs() < 122.0, "{s2:?}");
        assert!((s2.max_us - 2_000.0).abs() < 122.0, "{s2:?}");
        // Two streams' samples add up.
        let both = first.plus(&second);
        assert_eq!(both.total(), 110);
        assert_eq!(both, b.reading());
        assert!(BucketCounts::default().summary().is_none());
        // A peer's reading out of order, with a bucket twice and huge counts, decodes sorted,
        // merged and saturated.
        let odd: BucketCounts =
            serde_json::from_str("[[9,1],[3,2],[9,18446744073709551615]]").unwrap();
        assert_eq!(odd, BucketCounts(vec![(3, 2), (9, u64::MAX)]));
        assert_eq!(odd.total(), u64::MAX);
        assert!(odd.summary().is_some());
        assert!(b.reading().since(&b.reading()).is_empty());
    }
}
