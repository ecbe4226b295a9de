//! Latency histograms: a thin wrapper over an HDR histogram of nanoseconds.
//!
//! What this module does:
//! - [`LatencyHistogram`] records durations as nanoseconds in an `hdrhistogram::Histogram<u64>`
//!   with a fixed range of 1 ns ..= 100 s and 3 significant digits (every value is kept to within
//!   0.1 %). Recording never panics: values above 100 s are counted as 100 s (saturating), so the
//!   count is always exact even when a value is not.
//! - Histograms with the same configuration merge exactly ([`LatencyHistogram::merge`]), which is
//!   how per-thread or per-interval histograms are combined.
//! - [`LatencyHistogram::summary`] gives the figures that reports print (min, mean, P50 … P99.99,
//!   max) in microseconds; delay-metrics.md §2 asks for these together with the sample count.
//! - [`LatencyHistogram::to_base64`] / [`LatencyHistogram::from_base64`] store the raw histogram
//!   in the standard HdrHistogram "V2 + deflate" encoding, base64 (standard alphabet), so reports
//!   can be recomputed later and other HdrHistogram tools can read them (STYLE §5).
//!
//! What it does not do: no coordinated-omission correction (the pacer records its own lateness
//! instead), no time-windowed histograms, no auto-resize (the range is fixed on purpose so that all
//! histograms of a run merge without error).
//!
//! Decoding limits: [`LatencyHistogram::from_base64`] rejects input longer than
//! [`MAX_BASE64_LEN`] and never panics on bad input, but the V2 header inside the deflate stream
//! declares its own payload length (up to 4 GiB) and the `hdrhistogram` decoder allocates that
//! buffer before reading it, so a hostile peer could force a large transient allocation. Callers
//! that take histograms from the network should bound their message size (the control protocol
//! does) and treat this as a known limit.

use std::fmt;
use std::time::Duration;

use base64::Engine as _;
use hdrhistogram::serialization::{Deserializer, Serializer, V2DeflateSerializer};
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

use crate::clock::duration_to_nanos_saturating;

/// Lowest discernible value: 1 ns.
pub const LOWEST_NS: u64 = 1;
/// Highest trackable value: 100 s in nanoseconds. Larger values are recorded as this value.
pub const HIGHEST_NS: u64 = 100_000_000_000;
/// Significant decimal digits kept for every value (3 ⇒ within 0.1 %).
pub const SIGNIFICANT_DIGITS: u8 = 3;
/// Longest base64 text accepted by [`LatencyHistogram::from_base64`] (1 MiB). A full 1 ns..100 s
/// histogram with every bucket used encodes to well under 100 KiB.
pub const MAX_BASE64_LEN: usize = 1 << 20;

/// Errors from [`LatencyHistogram::from_base64`].
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HistogramError {
    /// The text is longer than [`MAX_BASE64_LEN`].
    #[error("encoded histogram is {len} bytes long, more than the limit of {max}")]
    TooLong {
        /// Length of the rejected text.
        len: usize,
        /// The limit, [`MAX_BASE64_LEN`].
        max: usize,
    },
    /// The text is not valid standard base64.
    #[error("encoded histogram is not valid base64: {0}")]
    Base64(#[from] base64::DecodeError),
    /// The bytes are not a valid HdrHistogram V2 (optionally deflate-compressed) encoding.
    #[error("encoded histogram is not a valid HdrHistogram V2 encoding: {0}")]
    Decode(String),
}

/// An HDR histogram of durations, kept in nanoseconds (1 ns ..= 100 s, 3 significant digits).
#[derive(Clone, PartialEq)]
pub struct LatencyHistogram {
    h: Histogram<u64>,
}

/// The figures a report prints for one latency distribution, in microseconds.
///
/// Values carry the histogram's precision (within 0.1 %); percentiles are the highest value
/// equivalent to the bucket that holds the percentile (HdrHistogram convention).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct LatencySummary {
    /// Number of samples.
    pub count: u64,
    /// Smallest sample.
    pub min_us: f64,
    /// Mean of the samples.
    pub avg_us: f64,
    /// Median.
    pub p50_us: f64,
    /// 90th percentile.
    pub p90_us: f64,
    /// 99th percentile.
    pub p99_us: f64,
    /// 99.9th percentile (needs ≥ 1,000 samples to mean anything).
    pub p999_us: f64,
    /// 99.99th percentile (needs ≥ 10,000 samples to mean anything).
    pub p9999_us: f64,
    /// Largest sample.
    pub max_us: f64,
}

fn ns_to_us(ns: u64) -> f64 {
    ns as f64 / 1_000.0
}

fn new_histogram() -> Histogram<u64> {
    // The bounds are compile-time constants that satisfy hdrhistogram's rules
    // (low ≥ 1, high ≥ 2·low, digits ≤ 5), so creation cannot fail.
    Histogram::new_with_bounds(LOWEST_NS, HIGHEST_NS, SIGNIFICANT_DIGITS)
        .expect("constant histogram bounds are valid")
}

impl LatencyHistogram {
    /// An empty histogram.
    pub fn new() -> LatencyHistogram {
        LatencyHistogram { h: new_histogram() }
    }

    /// Records one duration. Never panics; values above 100 s count as 100 s.
    pub fn record(&mut self, d: Duration) {
        self.record_ns(duration_to_nanos_saturating(d));
    }

    /// Records one value given in nanoseconds. Never panics; values above 100 s count as 100 s.
    pub fn record_ns(&mut self, ns: u64) {
        self.h.saturating_record(ns.min(HIGHEST_NS));
    }

    /// Records `count` samples of the same duration (counts saturate at `u64::MAX`).
    pub fn record_n(&mut self, d: Duration, count: u64) {
        self.record_n_ns(duration_to_nanos_saturating(d), count);
    }

    /// Records `count` samples of the same value in nanoseconds (counts saturate at `u64::MAX`).
    pub fn record_n_ns(&mut self, ns: u64, count: u64) {
        if count > 0 {
            self.h.saturating_record_n(ns.min(HIGHEST_NS), count);
        }
    }

    /// Adds every sample of `other` to `self`.
    pub fn merge(&mut self, other: &LatencyHistogram) {
        // Both histograms have the same fixed bounds, so `add` cannot run out of range. Should it
        // fail anyway, fall back to re-recording bucket by bucket (saturating).
        if self.h.add(&other.h).is_err() {
            for v in other.h.iter_recorded() {
                self.h
                    .saturating_record_n(v.value_iterated_to(), v.count_at_value());
            }
        }
    }

    /// Removes all samples.
    pub fn clear(&mut self) {
        self.h.reset();
    }

    /// True when no sample was recorded.
    pub fn is_empty(&self) -> bool {
        self.h.is_empty()
    }

    /// Number of samples (saturating at `u64::MAX`).
    pub fn len(&self) -> u64 {
        self.h.len()
    }

    /// Smallest sample in nanoseconds, `None` when empty.
    pub fn min_ns(&self) -> Option<u64> {
        (!self.is_empty()).then(|| self.h.min())
    }

    /// Largest sample in nanoseconds (highest equivalent value), `None` when empty.
    pub fn max_ns(&self) -> Option<u64> {
        (!self.is_empty()).then(|| self.h.max())
    }

    /// Mean in nanoseconds, `None` when empty.
    pub fn mean_ns(&self) -> Option<f64> {
        (!self.is_empty()).then(|| self.h.mean())
    }

    /// Value at percentile `p` (in percent, `0.0..=100.0`, e.g. `99.9`) in microseconds.
    /// `None` when empty or when `p` is NaN; `p` outside the range is clamped.
    pub fn percentile_us(&self, p: f64) -> Option<f64> {
        if p.is_nan() {
            return None;
        }
        self.quantile_us(p.clamp(0.0, 100.0) / 100.0)
    }

    /// Value at quantile `q` (`0.0..=1.0`, e.g. `0.999`) in microseconds.
    /// `None` when empty or when `q` is NaN; `q` outside the range is clamped.
    pub fn quantile_us(&self, q: f64) -> Option<f64> {
        if self.is_empty() || q.is_nan() {
            return None;
        }
        Some(ns_to_us(self.h.value_at_quantile(q.clamp(0.0, 1.0))))
    }

    /// The report figures, `None` when empty.
    pub fn summary(&self) -> Option<LatencySummary> {
        if self.is_empty() {
            return None;
        }
        let h = &self.h;
        let q = |q: f64| ns_to_us(h.value_at_quantile(q));
        Some(LatencySummary {
            count: h.len(),
            min_us: ns_to_us(h.min()),
            avg_us: h.mean() / 1_000.0,
            p50_us: q(0.5),
            p90_us: q(0.9),
            p99_us: q(0.99),
            p999_us: q(0.999),
            p9999_us: q(0.9999),
            max_us: ns_to_us(h.max()),
        })
    }

    /// Read-only access to the underlying HDR histogram (nanoseconds), e.g. to iterate buckets
    /// for a CDF plot.
    pub fn as_hdr(&self) -> &Histogram<u64> {
        &self.h
    }

    /// Encodes the histogram as HdrHistogram V2 + deflate, then standard base64.
    ///
    /// The V2 format stores bucket counts as signed 64-bit numbers; in the (practically
    /// unreachable) case of a bucket holding more than `i64::MAX` samples, those counts are clamped
    /// to `i64::MAX` in the encoding.
    pub fn to_base64(&self) -> String {
        let mut bytes = Vec::new();
        if V2DeflateSerializer::new()
            .serialize(&self.h, &mut bytes)
            .is_err()
        {
            // The only failure writing into a Vec is a bucket count above i64::MAX.
            let mut clamped = new_histogram();
            for v in self.h.iter_recorded() {
                let count = v.count_at_value().min(i64::MAX as u64);
                clamped.saturating_record_n(v.value_iterated_to(), count);
            }
            bytes.clear();
            if V2DeflateSerializer::new()
                .serialize(&clamped, &mut bytes)
                .is_err()
            {
                // Not reachable: every bucket count is now ≤ i64::MAX and writes into a Vec
                // cannot fail. An empty string decodes as an error, never as wrong data.
                return String::new();
            }
        }
        base64::engine::general_purpose::STANDARD.encode(bytes)
    }

    /// Decodes the output of [`to_base64`](Self::to_base64) (or any HdrHistogram V2 encoding,
    /// compressed or not, in standard base64).
    ///
    /// A histogram encoded with other bounds is re-recorded into this type's fixed range
    /// (values above 100 s count as 100 s).
    ///
    /// # Errors
    /// [`HistogramError::TooLong`] above [`MAX_BASE64_LEN`], [`HistogramError::Base64`] for bad
    /// base64, [`HistogramError::Decode`] for bytes that are not a V2 histogram. Never panics.
    pub fn from_base64(text: &str) -> Result<LatencyHistogram, HistogramError> {
        let text = text.trim();
        if text.len() > MAX_BASE64_LEN {
            return Err(HistogramError::TooLong {
                len: text.len(),
                max: MAX_BASE64_LEN,
            });
        }
        let bytes = base64::engine::general_purpose::STANDARD.decode(text)?;
        let decoded: Histogram<u64> = Deserializer::new()
            .deserialize(&mut bytes.as_slice())
            .map_err(|e| HistogramError::Decode(e.to_string()))?;
        let canonical = new_histogram();
        let same_layout = decoded.low() == canonical.low()
            && decoded.high() == canonical.high()
            && decoded.sigfig() == canonical.sigfig();
        if same_layout {
            return Ok(LatencyHistogram { h: decoded });
        }
        let mut out = LatencyHistogram { h: canonical };
        for v in decoded.iter_recorded() {
            out.record_n_ns(v.value_iterated_to(), v.count_at_value());
        }
        Ok(out)
    }
}

impl Default for LatencyHistogram {
    fn default() -> Self {
        LatencyHistogram::new()
    }
}

impl fmt::Debug for LatencyHistogram {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LatencyHistogram")
            .field("len", &self.len())
            .field("min_ns", &self.min_ns())
            .field("max_ns", &self.max_ns())
            .finish()
    }
}

/// Serialised as the base64 string of [`LatencyHistogram::to_base64`].
impl Serialize for LatencyHistogram {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.to_base64())
    }
}

/// Deserialised from the base64 string of [`LatencyHistogram::to_base64`].
impl<'de> Deserialize<'de> for LatencyHistogram {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        LatencyHistogram::from_base64(&text).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn us(x: u64) -> Duration {
        Duration::from_micros(x)
    }

    #[test]
    fn empty_histogram_has_no_summary() {
        let h = LatencyHistogram::new();
        assert!(h.is_empty());
        assert_eq!(h.len(), 0);
        assert_eq!(h.summary(), None);
        assert_eq!(h.percentile_us(50.0), None);
        assert_eq!(h.min_ns(), None);
        assert_eq!(h.max_ns(), None);
    }

    #[test]
    fn summary_of_1_to_1000_us() {
        let mut h = LatencyHistogram::new();
        for i in 1..=1000 {
            h.record(us(i));
        }
        let s = h.summary().unwrap();
        assert_eq!(s.count, 1000);
        let close = |a: f64, b: f64| (a - b).abs() <= b * 0.001 + 1e-9;
        assert!(close(s.min_us, 1.0), "{s:?}");
        assert!(close(s.avg_us, 500.5), "{s:?}");
        assert!(close(s.p50_us, 500.0), "{s:?}");
        assert!(close(s.p90_us, 900.0), "{s:?}");
        assert!(close(s.p99_us, 990.0), "{s:?}");
        assert!(close(s.p999_us, 999.0), "{s:?}");
        assert!(close(s.p9999_us, 1000.0), "{s:?}");
        assert!(close(s.max_us, 1000.0), "{s:?}");
        assert!(close(h.percentile_us(99.0).unwrap(), 990.0));
        assert_eq!(h.percentile_us(99.0), h.quantile_us(0.99));
        assert_eq!(h.percentile_us(f64::NAN), None);
        assert_eq!(h.percentile_us(1e9), h.percentile_us(100.0));
    }

    #[test]
    fn record_clamps_and_never_panics() {
        let mut h = LatencyHistogram::new();
        h.record(Duration::ZERO);
        h.record(Duration::from_secs(1_000));
        h.record(Duration::MAX);
        h.record_ns(u64::MAX);
        assert_eq!(h.len(), 4);
        assert_eq!(h.min_ns(), Some(0));
        let max = h.max_ns().unwrap();
        assert!((HIGHEST_NS..=HIGHEST_NS + HIGHEST_NS / 1000).contains(&max));
        h.record_n(Duration::from_nanos(5), u64::MAX);
        assert_eq!(h.len(), u64::MAX);
        h.record_n(Duration::from_nanos(5), 0);
        assert_eq!(h.len(), u64::MAX);
    }

    #[test]
    fn merge_adds_counts() {
        let mut a = LatencyHistogram::new();
        let mut b = LatencyHistogram::new();
        a.record_n(us(10), 3);
        b.record_n(us(20), 2);
        b.record(us(30));
        a.merge(&b);
        assert_eq!(a.len(), 6);
        assert!((a.max_ns().unwrap() as f64 - 30_000.0).abs() <= 30.0);
        a.merge(&LatencyHistogram::new());
        assert_eq!(a.len(), 6);
        let mut empty = LatencyHistogram::new();
        empty.merge(&a);
        assert_eq!(empty, a);
        a.clear();
        assert!(a.is_empty());
    }

    #[test]
    fn base64_round_trip() {
        let mut h = LatencyHistogram::new();
        for i in 0..10_000u64 {
            h.record_ns(i * i % 1_000_003 + 1);
        }
        h.record(Duration::from_secs(500));
        let text = h.to_base64();
        let back = LatencyHistogram::from_base64(&text).unwrap();
        assert_eq!(back, h);
        assert_eq!(back.summary(), h.summary());
        // Surrounding whitespace (e.g. from a text file) is accepted.
        assert_eq!(
            LatencyHistogram::from_base64(&format!(" {text}\n")).unwrap(),
            h
        );
        // Empty histograms round-trip too.
        let e = LatencyHistogram::new();
        assert_eq!(LatencyHistogram::from_base64(&e.to_base64()).unwrap(), e);
    }

    #[test]
    fn serde_round_trip_as_string() {
        let mut h = LatencyHistogram::new();
        h.record(us(7));
        let json = serde_json::to_string(&h).unwrap();
        assert!(json.starts_with('"'));
        let back: LatencyHistogram = serde_json::from_str(&json).unwrap();
        assert_eq!(back, h);
        assert!(serde_json::from_str::<LatencyHistogram>("\"!!\"").is_err());
    }

    #[test]
    fn foreign_bounds_are_rebucketed() {
        let mut other = Histogram::<u64>::new_with_bounds(1_000, 1_000_000_000_000, 2).unwrap();
        other.record_n(5_000, 4).unwrap();
        other.record(500_000_000_000).unwrap(); // 500 s: above our range
        let mut bytes = Vec::new();
        V2DeflateSerializer::new()
            .serialize(&other, &mut bytes)
            .unwrap();
        let text = base64::engine::general_purpose::STANDARD.encode(bytes);
        let h = LatencyHistogram::from_base64(&text).unwrap();
        assert_eq!(h.len(), 5);
        assert!(h.max_ns().unwrap() <= HIGHEST_NS + HIGHEST_NS / 1000);
    }

    #[test]
    fn bad_input_is_an_error() {
        assert!(matches!(
            LatencyHistogram::from_base64("not base64!"),
            Err(HistogramError::Base64(_))
        ));
        assert!(matches!(
            LatencyHistogram::from_base64(""),
            Err(HistogramError::Decode(_))
        ));
        assert!(matches!(
            LatencyHistogram::from_base64("AAAAAAAAAAAA"),
            Err(HistogramError::Decode(_))
        ));
        let long = "A".repeat(MAX_BASE64_LEN + 4);
        assert!(matches!(
            LatencyHistogram::from_base64(&long),
            Err(HistogramError::TooLong { .. })
        ));
        // A valid encoding cut short: an error, except that the decoder stops once the
        // histogram is complete and does not check the deflate end marker or the zlib Adler-32
        // trailer, so a cut in those last bytes still gives the exact histogram (never a wrong
        // one).
        let mut h = LatencyHistogram::new();
        h.record(us(3));
        h.record(us(3_000));
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(h.to_base64())
            .unwrap();
        for cut in 0..bytes.len() {
            let text = base64::engine::general_purpose::STANDARD.encode(&bytes[..cut]);
            match LatencyHistogram::from_base64(&text) {
                Err(_) => {}
                Ok(back) => {
                    assert!(cut + 8 >= bytes.len(), "cut at {cut} of {}", bytes.len());
                    assert_eq!(back, h);
                }
            }
        }
    }

    proptest! {
        #[test]
        fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..256)) {
            let text = base64::engine::general_purpose::STANDARD.encode(&bytes);
            let _ = LatencyHistogram::from_base64(&text);
        }

        #[test]
        fn mutated_encodings_never_panic(
            values in proptest::collection::vec(0u64..2_000_000_000, 1..50),
            flips in proptest::collection::vec((any::<usize>(), any::<u8>()), 1..4),
        ) {
            let mut h = LatencyHistogram::new();
            for v in &values {
                h.record_ns(*v);
            }
            let mut bytes = base64::engine::general_purpose::STANDARD
                .decode(h.to_base64())
                .unwrap();
            for (pos, x) in flips {
                let i = pos % bytes.len();
                bytes[i] ^= x;
            }
            let text = base64::engine::general_purpose::STANDARD.encode(&bytes);
            let _ = LatencyHistogram::from_base64(&text);
        }

        #[test]
        fn round_trip_any_values(values in proptest::collection::vec(any::<u64>(), 0..100)) {
            let mut h = LatencyHistogram::new();
            for v in &values {
                h.record_ns(*v);
            }
            prop_assert_eq!(h.len(), values.len() as u64);
            let back = LatencyHistogram::from_base64(&h.to_base64()).unwrap();
            prop_assert_eq!(back, h);
        }
    }
}
