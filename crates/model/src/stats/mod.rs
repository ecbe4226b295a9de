//! Per-stream receive statistics (pure: packets and timestamps in, counters out).
//!
//! - [`seq`]: exact loss / duplicate / reorder / late accounting over a bitmap window
//!   (RFC 4737 Type-P-Reordered, RFC 5560 "only the first copy is evaluated");
//! - [`jitter`]: RFC 3550 §6.4.1 interarrival jitter;
//! - [`histogram`]: the HDR latency histogram (ns, 1 ns ..= 100 s, 3 digits), its report summary
//!   and its base64 V2 + deflate encoding for results files;
//! - [`buckets`]: a coarse latency histogram whose readings subtract (latency per interval);
//! - [`slots`]: packets counted by send time, to place a loss in the interval it was due;
//! - [`receiver`]: one receive stream's accumulator combining the three, with cheap snapshots;
//! - [`intervals`]: frame streams' totals at each interval's end, as interval rows;
//! - [`table`]: many streams interleaved on one receiver, told apart by their test header;
//! - [`paths`]: one stream's copies over redundant (FRER) paths: per path and merged;
//! - [`spread`]: a repeated figure's median and confidence interval, and the comparison of
//!   two such figures.
//!
//! What this module does not do: read sockets or clocks, parse packets, or decide verdicts
//! (RFC 2544 pass/fail and SLA checks live in the method crate).

pub mod buckets;
pub mod counters;
pub mod histogram;
pub mod intervals;
pub mod jitter;
pub mod paths;
pub mod receiver;
pub mod seq;
pub mod slots;
pub mod spread;
pub mod table;

pub use counters::Counters;
pub use histogram::{HistogramError, LatencyHistogram, LatencySummary};
pub use jitter::Rfc3550Jitter;
pub use receiver::{RxSnapshot, StreamReceiver};
pub use seq::{Arrival, SeqTracker, DEFAULT_WINDOW};
pub use spread::Spread;
