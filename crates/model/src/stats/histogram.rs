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
//! Decoding limits: the text handed to [`LatencyHistogram::from_base64`] comes from remote peers
//! and from files, so decoding is bounded before anything is sized from the input. The text may
//! be at most [`MAX_BASE64_LEN`] long; the "V2 + deflate" wrapper is parsed here and inflated
//! through a hard limit of [`MAX_DECODED_LEN`] bytes; the V2 header inside is checked (format,
//! bounds, and a counts array no longer than this type's own 1 ns..100 s, 3-digit layout needs,
//! with a payload no longer than that array can encode to) before the bytes reach the
//! `hdrhistogram` decoder, which would otherwise allocate whatever payload length (up to 4 GiB)
//! and counts array the header declares. Decoding never panics on bad input.

use std::fmt;
use std::time::Duration;

use base64::Engine as _;
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
/// Largest uncompressed V2 encoding (header and counts) that [`LatencyHistogram::from_base64`]
/// will inflate (1 MiB). The largest valid encoding of a histogram whose counts array fits this
/// type's range is about 250 KiB (28,672 counts of at most 9 bytes each, plus a 40-byte header).
pub const MAX_DECODED_LEN: usize = 1 << 20;

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
    /// The encoding declares a size beyond the decoding limits (see [`MAX_DECODED_LEN`]): a
    /// payload or counts array larger than a histogram of this type's range can need.
    #[error("encoded histogram declares a {what} of {len}, more than the limit of {max}")]
    TooLarge {
        /// Which declared size is too large.
        what: &'static str,
        /// The declared size.
        len: u64,
        /// The limit it exceeds.
        max: u64,
    },
}

fn decode_error(msg: impl Into<String>) -> HistogramError {
    HistogramError::Decode(msg.into())
}

// HdrHistogram V2 format (as hdrhistogram's `serialization` module and the Java and C
// implementations write it). Everything is big-endian.
//
// "V2 + deflate" wrapper:  cookie u32 | deflate length u32 | zlib stream (of a plain V2 encoding)
// plain V2 header (40 B):  cookie u32 | payload length u32 | normalizing index offset u32 |
//                          significant digits u32 | lowest discernible value u64 |
//                          highest trackable value u64 | integer-to-double ratio f64
// followed by the payload: the counts array as zig-zag LEB128 varints (at most 9 bytes each, the
// ninth carrying 8 bits), a negative number standing for a run of that many zero counts.
//
// Cookies carry the counter word size in bits 4..8 (hdrhistogram writes 0x10); as in the Java
// implementation only the base (the cookie with those bits cleared) identifies the format.
const V2_COOKIE_BASE: u32 = 0x1c84_9303;
const V2_COMPRESSED_COOKIE_BASE: u32 = 0x1c84_9304;
const COOKIE_WORD_SIZE_BITS: u32 = 0xf0;
/// The cookies this type writes (hdrhistogram's, 64-bit counts).
const V2_COOKIE: u32 = V2_COOKIE_BASE | 0x10;
const V2_COMPRESSED_COOKIE: u32 = V2_COMPRESSED_COOKIE_BASE | 0x10;
const V2_HEADER_LEN: usize = 40;
const MAX_VARINT_LEN: usize = 9;
/// zlib level of the encoding (zlib's and hdrhistogram's default).
const DEFLATE_LEVEL: u8 = 6;

fn be_u32(bytes: &[u8], at: usize) -> Option<u32> {
    let b = bytes.get(at..at.checked_add(4)?)?;
    Some(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
}

fn be_u64(bytes: &[u8], at: usize) -> Option<u64> {
    let b = bytes.get(at..at.checked_add(8)?)?;
    let mut a = [0u8; 8];
    a.copy_from_slice(b);
    Some(u64::from_be_bytes(a))
}

/// Where each count of an HDR counts array sits: the bucket layout that
/// `hdrhistogram::Histogram::new_with_bounds(low, high, digits)` builds.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Layout {
    unit_magnitude: u32,
    half_count_magnitude: u32,
    /// Length of the counts array.
    counts: u64,
}

impl Layout {
    /// The layout for these bounds, without allocating a histogram; `None` where
    /// `new_with_bounds` would fail. This mirrors hdrhistogram 7.x (`new_with_bounds`,
    /// `buckets_to_cover`, `num_bins`), including its floating-point magnitudes, so that the
    /// result is exact; a test checks it against the crate.
    fn of(low: u64, high: u64, digits: u32) -> Option<Layout> {
        if !(1..=u64::MAX / 2).contains(&low) || high < 2 * low || digits > 5 {
            return None;
        }
        let largest = 2 * 10_u32.pow(digits);
        let unit_magnitude = (low as f64).log2().floor() as u32;
        let sub_bucket_count_magnitude = f64::from(largest).log2().ceil() as u32;
        if unit_magnitude + sub_bucket_count_magnitude > 63 {
            return None;
        }
        let sub_bucket_count = 1_u64 << sub_bucket_count_magnitude;
        let mut smallest_untrackable = sub_bucket_count << unit_magnitude;
        let mut buckets: u64 = 1;
        while smallest_untrackable <= high {
            if smallest_untrackable > u64::MAX / 2 {
                buckets += 1;
                break;
            }
            smallest_untrackable <<= 1;
            buckets += 1;
        }
        Some(Layout {
            unit_magnitude,
            half_count_magnitude: sub_bucket_count_magnitude.max(1) - 1,
            counts: (buckets + 1) * (sub_bucket_count / 2),
        })
    }

    /// The highest value counted at `index` (hdrhistogram's `highest_equivalent` of its
    /// `value_for(index)`), saturating at `u64::MAX`.
    fn highest_value(&self, index: u64) -> u64 {
        let half = 1_u64 << self.half_count_magnitude;
        let mut bucket = (index >> self.half_count_magnitude) as i64 - 1;
        let mut sub = (index & (half - 1)) + half;
        if bucket < 0 {
            sub -= half;
            bucket = 0;
        }
        let shift = bucket as u32 + self.unit_magnitude;
        let low = u128::from(sub) << shift.min(127);
        let next = low + (1_u128 << shift.min(127));
        u64::try_from(next - 1).unwrap_or(u64::MAX)
    }
}

/// Length of the counts array of these bounds (see [`Layout::of`]).
#[cfg(test)]
fn counts_len(low: u64, high: u64, digits: u32) -> Option<u64> {
    Layout::of(low, high, digits).map(|l| l.counts)
}

/// Length of the counts array of this type's own histogram (1 ns..100 s, 3 digits): no decoded
/// histogram may need more.
fn max_counts_len() -> u64 {
    // The constants are valid bounds (see `new_histogram`), so this is always `Some`.
    Layout::of(LOWEST_NS, HIGHEST_NS, u32::from(SIGNIFICANT_DIGITS)).map_or(0, |l| l.counts)
}

/// Checks a plain V2 header against the decoding limits; returns its payload length and layout.
fn check_v2_header(header: &[u8]) -> Result<(usize, Layout), HistogramError> {
    if header.len() < V2_HEADER_LEN {
        return Err(decode_error("shorter than a V2 header"));
    }
    let field = |at| be_u32(header, at).unwrap_or(0);
    let cookie = field(0);
    if cookie & !COOKIE_WORD_SIZE_BITS != V2_COOKIE_BASE {
        return Err(decode_error(format!(
            "cookie {cookie:#010x} is not an HdrHistogram V2 cookie"
        )));
    }
    let payload_len = field(4);
    if field(8) != 0 {
        return Err(decode_error("normalizing index offsets are not supported"));
    }
    let digits = field(12);
    let low = be_u64(header, 16).unwrap_or(0);
    let high = be_u64(header, 24).unwrap_or(0);
    let ratio = f64::from_bits(be_u64(header, 32).unwrap_or(0));
    if ratio != 1.0 {
        return Err(decode_error(format!(
            "integer-to-double conversion ratio {ratio} is not supported (only 1.0)"
        )));
    }
    let layout = Layout::of(low, high, digits).ok_or_else(|| {
        decode_error(format!(
            "invalid bounds: lowest {low}, highest {high}, {digits} significant digits"
        ))
    })?;
    let max_counts = max_counts_len();
    if layout.counts > max_counts {
        return Err(HistogramError::TooLarge {
            what: "counts array length",
            len: layout.counts,
            max: max_counts,
        });
    }
    // Every count takes at most one varint, so no valid payload is longer than this.
    let max_payload =
        (layout.counts * MAX_VARINT_LEN as u64).min((MAX_DECODED_LEN - V2_HEADER_LEN) as u64);
    if u64::from(payload_len) > max_payload {
        return Err(HistogramError::TooLarge {
            what: "payload length",
            len: u64::from(payload_len),
            max: max_payload,
        });
    }
    // Bounded by `MAX_DECODED_LEN` just above, so this always fits.
    let payload_len = usize::try_from(payload_len)
        .map_err(|_| decode_error("payload length does not fit usize"))?;
    Ok((payload_len, layout))
}

/// Turns a V2 or V2 + deflate encoding into a checked plain V2 encoding (header and payload,
/// nothing after), at most [`MAX_DECODED_LEN`] bytes long, and its layout.
fn checked_v2_bytes(bytes: &[u8]) -> Result<(Vec<u8>, Layout), HistogramError> {
    let cookie = be_u32(bytes, 0).ok_or_else(|| decode_error("shorter than a cookie"))?;
    let (v2, inflated) = match cookie & !COOKIE_WORD_SIZE_BITS {
        V2_COMPRESSED_COOKIE_BASE => (inflate_v2(&bytes[4..])?, true),
        V2_COOKIE_BASE => (bytes.to_vec(), false),
        _ => {
            return Err(decode_error(format!(
                "cookie {cookie:#010x} is not an HdrHistogram V2 cookie"
            )))
        }
    };
    let (payload_len, layout) = check_v2_header(&v2)?;
    let total = V2_HEADER_LEN + payload_len;
    match v2.len().cmp(&total) {
        std::cmp::Ordering::Equal => Ok((v2, layout)),
        std::cmp::Ordering::Greater if inflated => Err(decode_error(
            "compressed data continues after the end of the histogram",
        )),
        _ => Err(decode_error(format!(
            "V2 header declares {total} bytes, {} present",
            v2.len()
        ))),
    }
}

/// Inflates the part of a "V2 + deflate" encoding after its cookie, producing at most
/// [`MAX_DECODED_LEN`] bytes. When the stream would inflate to more, the header at its start
/// is checked first, so an oversized claim is reported as such.
fn inflate_v2(wrapped: &[u8]) -> Result<Vec<u8>, HistogramError> {
    use miniz_oxide::inflate::{decompress_to_vec_zlib_with_limit, TINFLStatus};
    let declared = be_u32(wrapped, 0).ok_or_else(|| decode_error("truncated deflate wrapper"))?;
    let data = &wrapped[4..];
    if u64::from(declared) != data.len() as u64 {
        return Err(decode_error(format!(
            "wrapper declares {declared} bytes of compressed data, {} present",
            data.len()
        )));
    }
    match decompress_to_vec_zlib_with_limit(data, MAX_DECODED_LEN) {
        Ok(v2) => Ok(v2),
        Err(e) if e.status == TINFLStatus::HasMoreOutput => {
            check_v2_header(&e.output)?;
            Err(decode_error(
                "compressed data continues after the end of the histogram",
            ))
        }
        Err(e) => Err(decode_error(format!("bad deflate data: {e}"))),
    }
}

/// Reads the zig-zag LEB128 varint at the start of `bytes` (hdrhistogram's form: the ninth
/// byte carries 8 bits); the value and its length.
fn read_varint(bytes: &[u8]) -> Option<(i64, usize)> {
    let mut v: u64 = 0;
    for (i, b) in bytes.iter().take(MAX_VARINT_LEN).enumerate() {
        if i == MAX_VARINT_LEN - 1 {
            v |= u64::from(*b) << 56;
            return Some((zigzag_decode(v), MAX_VARINT_LEN));
        }
        v |= u64::from(b & 0x7f) << (7 * i);
        if b & 0x80 == 0 {
            return Some((zigzag_decode(v), i + 1));
        }
    }
    None
}

fn write_varint(value: i64, out: &mut Vec<u8>) {
    let mut v = ((value << 1) ^ (value >> 63)) as u64;
    for _ in 0..MAX_VARINT_LEN - 1 {
        if v < 0x80 {
            out.push(v as u8);
            return;
        }
        out.push((v as u8 & 0x7f) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn zigzag_decode(v: u64) -> i64 {
    ((v >> 1) as i64) ^ -((v & 1) as i64)
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

    /// Encodes the histogram as HdrHistogram V2 + deflate, then standard base64 (what
    /// hdrhistogram's `V2DeflateSerializer` writes, so other HdrHistogram tools read it).
    ///
    /// The V2 format stores bucket counts as signed 64-bit numbers; in the (practically
    /// unreachable) case of a bucket holding more than `i64::MAX` samples, those counts are clamped
    /// to `i64::MAX` in the encoding.
    pub fn to_base64(&self) -> String {
        let mut counts: Vec<u64> = self.h.iter_all().map(|v| v.count_at_value()).collect();
        let used = counts.iter().rposition(|c| *c > 0).map_or(1, |i| i + 1);
        counts.truncate(used.max(1));
        let mut v2 = Vec::with_capacity(V2_HEADER_LEN + counts.len() * 2);
        v2.extend(V2_COOKIE.to_be_bytes());
        v2.extend(0u32.to_be_bytes()); // payload length, set below
        v2.extend(0u32.to_be_bytes()); // normalizing index offset
        v2.extend(u32::from(SIGNIFICANT_DIGITS).to_be_bytes());
        v2.extend(LOWEST_NS.to_be_bytes());
        v2.extend(HIGHEST_NS.to_be_bytes());
        v2.extend(1.0f64.to_be_bytes()); // integer-to-double ratio
        let mut i = 0;
        while i < counts.len() {
            let zeros = counts[i..].iter().take_while(|c| **c == 0).count();
            if zeros > 1 {
                write_varint(-(zeros as i64), &mut v2);
                i += zeros;
            } else {
                write_varint(counts[i].min(i64::MAX as u64) as i64, &mut v2);
                i += 1;
            }
        }
        let payload = (v2.len() - V2_HEADER_LEN) as u32;
        v2[4..8].copy_from_slice(&payload.to_be_bytes());
        let z = miniz_oxide::deflate::compress_to_vec_zlib(&v2, DEFLATE_LEVEL);
        let mut bytes = Vec::with_capacity(8 + z.len());
        bytes.extend(V2_COMPRESSED_COOKIE.to_be_bytes());
        bytes.extend((z.len() as u32).to_be_bytes());
        bytes.extend(z);
        base64::engine::general_purpose::STANDARD.encode(bytes)
    }

    /// Decodes the output of [`to_base64`](Self::to_base64) (or any HdrHistogram V2 encoding,
    /// compressed or not, in standard base64).
    ///
    /// A histogram encoded with other bounds is re-recorded into this type's fixed range
    /// (values above 100 s count as 100 s). Its counts array may be no longer than this type's
    /// own (e.g. 1 µs..1000 s at 3 digits or 1 ns..100 s at 2 digits are accepted, 1 ns..100 s at
    /// 4 digits is not).
    ///
    /// Safe on untrusted input: memory use is bounded (see [`MAX_DECODED_LEN`]) whatever sizes
    /// the encoding declares.
    ///
    /// # Errors
    /// [`HistogramError::TooLong`] above [`MAX_BASE64_LEN`], [`HistogramError::Base64`] for bad
    /// base64, [`HistogramError::TooLarge`] when the encoding declares a payload or counts array
    /// beyond the limits, [`HistogramError::Decode`] for bytes that are not a V2 histogram
    /// (including truncated ones and data after the end). Never panics.
    pub fn from_base64(text: &str) -> Result<LatencyHistogram, HistogramError> {
        let text = text.trim();
        if text.len() > MAX_BASE64_LEN {
            return Err(HistogramError::TooLong {
                len: text.len(),
                max: MAX_BASE64_LEN,
            });
        }
        let bytes = base64::engine::general_purpose::STANDARD.decode(text)?;
        let (v2, layout) = checked_v2_bytes(&bytes)?;
        let mut out = LatencyHistogram::new();
        let mut payload = &v2[V2_HEADER_LEN..];
        let mut index: u64 = 0;
        while !payload.is_empty() {
            let (v, n) =
                read_varint(payload).ok_or_else(|| decode_error("a count is cut short"))?;
            payload = &payload[n..];
            if v < 0 {
                index = index.saturating_add(v.unsigned_abs());
            } else if index < layout.counts {
                out.record_n_ns(layout.highest_value(index), v as u64);
                index += 1;
            } else {
                index = u64::MAX;
            }
            if index > layout.counts {
                return Err(decode_error(
                    "more counts than the histogram's layout holds",
                ));
            }
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
    use base64::engine::general_purpose::STANDARD;
    use proptest::prelude::*;

    /// Written by hdrhistogram 7.6's `V2DeflateSerializer` and `V2Serializer` for
    /// [`sample_histogram`], for a 1 µs..1000 s, 2-digit histogram holding 4 × 5 µs and
    /// 1 × 500 s, and for an empty histogram of this type's layout.
    const SAMPLE_DEFLATED: &str = include_str!("testdata/sample-deflated.b64");
    const SAMPLE_PLAIN: &str = include_str!("testdata/sample-plain.b64");
    const FOREIGN_DEFLATED: &str =
        "HISTFAAAACd4nJNpmSzMwMDAygABTBCK+QWQeHFlqQCD/QeIiCDHbn0mAIfkBt4=";
    const EMPTY_DEFLATED: &str = "HISTFAAAACB4nJNpmSzMwMDAyAABzFAaxBf3KHvBYP8BKgIAUR8EOA==";

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
        // 4 × 5 µs and one 500 s (above our range) in a 1 µs..1000 s, 2-digit histogram.
        let h = LatencyHistogram::from_base64(FOREIGN_DEFLATED).unwrap();
        assert_eq!(h.len(), 5);
        assert!(h.max_ns().unwrap() <= HIGHEST_NS + HIGHEST_NS / 1000);
        assert!(h.max_ns().unwrap() >= HIGHEST_NS);
        let p50 = h.percentile_us(50.0).unwrap();
        // 2 digits of a 1 µs unit: 5 µs falls in the bucket 4.608..=5.119 µs.
        assert!((5.0..=5.12).contains(&p50), "{p50}");
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
        // A valid encoding cut short, or with bytes added after it, is an error.
        let mut h = LatencyHistogram::new();
        h.record(us(3));
        h.record(us(3_000));
        let bytes = STANDARD.decode(h.to_base64()).unwrap();
        for cut in 0..bytes.len() {
            let r = LatencyHistogram::from_base64(&STANDARD.encode(&bytes[..cut]));
            assert!(r.is_err(), "cut at {cut} of {}", bytes.len());
        }
        let mut longer = bytes.clone();
        longer.push(0);
        assert!(matches!(
            LatencyHistogram::from_base64(&STANDARD.encode(&longer)),
            Err(HistogramError::Decode(_))
        ));
    }

    /// A plain V2 header (hdrhistogram's cookie) with the given fields.
    fn v2_header(payload_len: u32, low: u64, high: u64, digits: u32) -> Vec<u8> {
        let mut v = Vec::with_capacity(V2_HEADER_LEN);
        v.extend(V2_COOKIE.to_be_bytes());
        v.extend(payload_len.to_be_bytes());
        v.extend(0u32.to_be_bytes()); // normalizing index offset
        v.extend(digits.to_be_bytes());
        v.extend(low.to_be_bytes());
        v.extend(high.to_be_bytes());
        v.extend(1.0f64.to_be_bytes()); // integer-to-double ratio
        v
    }

    /// `v2_header` with this type's own bounds.
    fn own_header(payload_len: u32) -> Vec<u8> {
        v2_header(
            payload_len,
            LOWEST_NS,
            HIGHEST_NS,
            u32::from(SIGNIFICANT_DIGITS),
        )
    }

    fn zlib(bytes: &[u8]) -> Vec<u8> {
        miniz_oxide::deflate::compress_to_vec_zlib(bytes, DEFLATE_LEVEL)
    }

    /// The "V2 + deflate" wrapper (hdrhistogram's cookie) around a zlib stream.
    fn wrap(zlib_data: &[u8]) -> Vec<u8> {
        let mut v = (V2_COMPRESSED_COOKIE_BASE | 0x10).to_be_bytes().to_vec();
        v.extend(u32::try_from(zlib_data.len()).unwrap().to_be_bytes());
        v.extend(zlib_data);
        v
    }

    fn decode_bytes(bytes: &[u8]) -> Result<LatencyHistogram, HistogramError> {
        LatencyHistogram::from_base64(&STANDARD.encode(bytes))
    }

    fn sample_histogram() -> LatencyHistogram {
        let mut h = LatencyHistogram::new();
        for i in 1..=500u64 {
            h.record_ns(i * 7_919);
        }
        h.record(Duration::from_secs(3));
        h
    }

    #[test]
    fn hand_built_wrapper_matches_hdrhistogram() {
        // The test helpers produce what hdrhistogram produces, so the hostile inputs below differ
        // from valid ones only where intended.
        let h = sample_histogram();
        let plain = STANDARD.decode(SAMPLE_PLAIN.trim()).unwrap();
        let payload_len = u32::try_from(plain.len() - V2_HEADER_LEN).unwrap();
        assert_eq!(plain[..V2_HEADER_LEN], own_header(payload_len)[..]);
        assert_eq!(decode_bytes(&wrap(&zlib(&plain))).unwrap(), h);
        let deflated = STANDARD.decode(SAMPLE_DEFLATED.trim()).unwrap();
        assert_eq!(deflated[..4], wrap(&[])[..4]);
    }

    #[test]
    fn hostile_payload_length_is_rejected_before_allocating() {
        // hdrhistogram's own decoder sizes its buffer from this field (up to 4 GiB) before
        // reading. Here it is checked against the counts array first: the error names the
        // header field, so nothing was sized from it.
        for claimed in [u32::MAX, 1 << 31, (MAX_DECODED_LEN as u32) + 1, 258_049] {
            let header = own_header(claimed);
            let compressed = wrap(&zlib(&header));
            assert!(STANDARD.encode(&compressed).len() < 100);
            for bytes in [compressed, header] {
                match decode_bytes(&bytes) {
                    Err(HistogramError::TooLarge {
                        what: "payload length",
                        len,
                        max,
                    }) => {
                        assert_eq!(len, u64::from(claimed));
                        assert_eq!(max, max_counts_len() * MAX_VARINT_LEN as u64);
                    }
                    other => panic!("claimed {claimed}: {other:?}"),
                }
            }
        }
        // The claim is checked against the histogram's own counts array, not only the limit.
        let small_max = counts_len(1_000, 1_000_000, 1).unwrap() * MAX_VARINT_LEN as u64;
        assert!(small_max < 2_000);
        let small = v2_header(small_max as u32 + 1, 1_000, 1_000_000, 1);
        assert!(matches!(
            decode_bytes(&wrap(&zlib(&small))),
            Err(HistogramError::TooLarge {
                what: "payload length",
                ..
            })
        ));
    }

    #[test]
    fn hostile_counts_array_is_rejected() {
        // 1..u64::MAX at 5 digits would be a ~50 MB counts array.
        for (low, high, digits) in [
            (1, u64::MAX, 5),
            (1, HIGHEST_NS, 4),
            (1, HIGHEST_NS * 100, 3),
        ] {
            let header = v2_header(0, low, high, digits);
            for bytes in [wrap(&zlib(&header)), header] {
                assert!(
                    matches!(
                        decode_bytes(&bytes),
                        Err(HistogramError::TooLarge { what: "counts array length", len, max })
                            if len > max && max == max_counts_len()
                    ),
                    "{low} {high} {digits}"
                );
            }
        }
        // Bounds hdrhistogram refuses are plain decode errors.
        for (low, high, digits) in [(0, 100, 3), (10, 19, 3), (1, 100, 6), (1, 100, u32::MAX)] {
            let header = v2_header(0, low, high, digits);
            assert!(
                matches!(
                    decode_bytes(&wrap(&zlib(&header))),
                    Err(HistogramError::Decode(_))
                ),
                "{low} {high} {digits}"
            );
        }
        // Unsupported header features.
        let mut offset = own_header(0);
        offset[8..12].copy_from_slice(&1u32.to_be_bytes());
        let mut ratio = own_header(0);
        ratio[32..40].copy_from_slice(&2.0f64.to_be_bytes());
        let mut cookie = own_header(0);
        cookie[3] = 0x01; // V1 cookie base
        for header in [offset, ratio, cookie] {
            assert!(matches!(
                decode_bytes(&wrap(&zlib(&header))),
                Err(HistogramError::Decode(_))
            ));
        }
    }

    #[test]
    fn inflate_bomb_is_rejected() {
        let zeros = vec![0u8; 4 * MAX_DECODED_LEN];
        // A header claiming a payload of 2 MiB (zero bytes, i.e. zero counts) that is really
        // there.
        let mut claims_big = own_header(2 * MAX_DECODED_LEN as u32);
        claims_big.extend(&zeros[..2 * MAX_DECODED_LEN]);
        // A valid empty histogram followed by 4 MiB of zero bytes.
        let mut trailing = own_header(1);
        trailing.push(0);
        assert!(decode_bytes(&wrap(&zlib(&trailing))).unwrap().is_empty());
        trailing.extend(&zeros);
        // 4 MiB of zero bytes with no header at all.
        let headless = &zeros[..];
        for (name, inflated) in [
            ("claims big", &claims_big[..]),
            ("trailing", &trailing[..]),
            ("headless", headless),
        ] {
            let compressed = wrap(&zlib(inflated));
            assert!(inflated.len() > MAX_DECODED_LEN);
            assert!(compressed.len() < 8 * 1024, "{name}: {}", compressed.len());
            let r = checked_v2_bytes(&compressed);
            assert!(r.is_err(), "{name}");
            match (name, decode_bytes(&compressed)) {
                ("claims big", Err(HistogramError::TooLarge { what, .. })) => {
                    assert_eq!(what, "payload length");
                }
                ("trailing" | "headless", Err(HistogramError::Decode(_))) => {}
                (_, other) => panic!("{name}: {other:?}"),
            }
        }
    }

    #[test]
    fn largest_valid_histogram_decodes() {
        // Every bucket used, with counts that need long varints: the longest encoding a
        // histogram of this range can have must stay within the limits.
        let mut h = LatencyHistogram::new();
        let mut v = 0;
        let mut i = 0u64;
        while v <= HIGHEST_NS {
            let count = if i.is_multiple_of(8) {
                1 << 60
            } else {
                (1 << 48) + i
            };
            h.record_n_ns(v, count);
            v = h.h.next_non_equivalent(v);
            i += 1;
        }
        // Every index up to the one holding 100 s (the last bucket is only partly in range).
        assert!(i > 28_000 && i <= max_counts_len(), "{i}");
        let (v2, _) = checked_v2_bytes(&STANDARD.decode(h.to_base64()).unwrap()).unwrap();
        assert!(v2.len() > 200_000, "{}", v2.len());
        assert!(v2.len() <= MAX_DECODED_LEN);
        assert_eq!(LatencyHistogram::from_base64(&h.to_base64()).unwrap(), h);
    }

    #[test]
    fn counts_len_matches_hdrhistogram() {
        assert_eq!(
            Some(new_histogram().distinct_values() as u64),
            counts_len(LOWEST_NS, HIGHEST_NS, u32::from(SIGNIFICANT_DIGITS))
        );
        assert_eq!(max_counts_len(), 28_672);
        const _: () = assert!(28_672 * MAX_VARINT_LEN + V2_HEADER_LEN <= MAX_DECODED_LEN);
        for (low, high, digits) in [
            (1, 2, 0),
            (1, u64::MAX, 0),
            (1, u64::MAX, 3),
            (1 << 40, u64::MAX, 2),
            (1 << 52, u64::MAX, 2),
            ((1 << 53) + 1, u64::MAX, 1),
            (u64::MAX / 2, u64::MAX, 0),
            (u64::MAX / 2 + 1, u64::MAX, 0),
            (1_000, 1_000_000_000_000, 2),
            (0, 10, 3),
            (5, 9, 3),
        ] {
            let expected = Histogram::<u64>::new_with_bounds(low, high, digits as u8)
                .ok()
                .map(|h| h.distinct_values() as u64);
            assert_eq!(
                counts_len(low, high, digits),
                expected,
                "{low} {high} {digits}"
            );
        }
    }

    #[test]
    fn hdrhistogram_encodings_still_decode() {
        let h = sample_histogram();
        let deflated = STANDARD.decode(SAMPLE_DEFLATED.trim()).unwrap();
        assert_eq!(decode_bytes(&deflated).unwrap(), h);
        // This encoder writes what hdrhistogram writes, byte for byte.
        assert_eq!(SAMPLE_DEFLATED.trim(), h.to_base64());
        assert_eq!(EMPTY_DEFLATED, LatencyHistogram::new().to_base64());
        let plain = STANDARD.decode(SAMPLE_PLAIN.trim()).unwrap();
        assert_eq!(decode_bytes(&plain).unwrap(), h);
        // Cookies are matched on their base, as HdrHistogram (Java) does: 0x1c849304 and
        // 0x1c849303 work like hdrhistogram's 0x1c849314 and 0x1c849313.
        let mut inner = plain.clone();
        inner[..4].copy_from_slice(&V2_COOKIE_BASE.to_be_bytes());
        let mut outer = wrap(&zlib(&inner));
        outer[..4].copy_from_slice(&V2_COMPRESSED_COOKIE_BASE.to_be_bytes());
        assert_eq!(decode_bytes(&outer).unwrap(), h);
        assert_eq!(decode_bytes(&inner).unwrap(), h);
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
        fn truncated_encodings_are_errors(
            values in proptest::collection::vec(0u64..200_000_000_000, 0..200),
            cut in any::<prop::sample::Index>(),
        ) {
            let mut h = LatencyHistogram::new();
            for v in &values {
                h.record_ns(*v);
            }
            let bytes = STANDARD.decode(h.to_base64()).unwrap();
            let cut = cut.index(bytes.len());
            prop_assert!(decode_bytes(&bytes[..cut]).is_err());
            // Also cut inside the zlib stream while keeping the wrapper length consistent.
            if cut >= 8 {
                prop_assert!(decode_bytes(&wrap(&bytes[8..cut])).is_err());
            }
        }

        #[test]
        fn random_headers_and_payloads_never_panic(
            payload_len in prop_oneof![0u32..64, any::<u32>()],
            low in prop_oneof![Just(1u64), 0u64..4, any::<u64>()],
            high in prop_oneof![Just(HIGHEST_NS), any::<u64>()],
            digits in prop_oneof![0u32..7, any::<u32>()],
            payload in proptest::collection::vec(any::<u8>(), 0..64),
            compress in any::<bool>(),
        ) {
            let mut v2 = v2_header(payload_len, low, high, digits);
            v2.extend(&payload);
            let bytes = if compress { wrap(&zlib(&v2)) } else { v2 };
            if let Ok((checked, _)) = checked_v2_bytes(&bytes) {
                prop_assert!(checked.len() <= MAX_VARINT_LEN * 28_672 + V2_HEADER_LEN);
            }
            let _ = decode_bytes(&bytes);
        }

        #[test]
        fn counts_len_matches_hdrhistogram_anywhere(
            low in prop_oneof![1u64..10_000, any::<u64>()],
            high in any::<u64>(),
            digits in 0u32..7,
        ) {
            let ours = counts_len(low, high, digits);
            // Only build histograms of moderate size (the formula is what keeps this cheap).
            if ours.is_none_or(|n| n <= 1 << 20) {
                let theirs = u8::try_from(digits)
                    .ok()
                    .and_then(|d| Histogram::<u64>::new_with_bounds(low, high, d).ok())
                    .map(|h| h.distinct_values() as u64);
                prop_assert_eq!(ours, theirs);
            }
        }

        #[test]
        fn random_deflate_data_never_panics(
            data in proptest::collection::vec(any::<u8>(), 0..256),
            zlib_header in any::<bool>(),
        ) {
            // Random bytes inside a well-formed wrapper, optionally behind a valid zlib header.
            let mut z = if zlib_header { vec![0x78, 0x9c] } else { Vec::new() };
            z.extend(&data);
            let _ = decode_bytes(&wrap(&z));
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
