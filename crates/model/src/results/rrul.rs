//! The result of `rrul`: throughput each way and latency idle against loaded (latency under
//! load, as flent's RRUL test measures it).

use serde::{Deserialize, Serialize};

use super::LatencyUs;

/// Throughput each way and the latency it added.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RrulResult {
    /// TCP streams in each direction.
    pub streams: u16,
    /// Seconds of load.
    pub load_s: f64,
    /// Seconds of idle baseline before the load, and again after it.
    pub idle_s: f64,
    /// Pings per second.
    pub ping_hz: f64,
    /// Upload (client to server): what its receivers got while the load ran (the interval
    /// sums; not the tail still in send buffers and queues when the senders stopped), bits/s.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub up_bps: Option<f64>,
    /// Download (server to client) received rate over the load, bits/s.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub down_bps: Option<f64>,
    /// Round trips of the pings sent before and after the load.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub idle: Option<LatencyUs>,
    /// Round trips of the pings sent during the load.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub loaded: Option<LatencyUs>,
    /// Loaded minus idle: median, 90th and 99th percentile, µs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub added_us: Option<AddedLatency>,
    /// The loaded median over the idle median.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub loaded_over_idle: Option<f64>,
    /// The TCP streams' smoothed RTT (`TCP_INFO`) under load, mean over streams and
    /// intervals, µs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tcp_rtt_us: Option<f64>,
    /// Pings sent.
    pub pings_sent: u64,
    /// Pings whose answer never came (or came after the wait at the end).
    pub pings_lost: u64,
    /// When the load ran, seconds from the start of the pings.
    pub load_from_s: f64,
    /// Until when.
    pub load_to_s: f64,
    /// Throughput over time: (interval end, seconds from the start of the pings; upload
    /// bits/s; download bits/s).
    pub throughput: Vec<(f64, f64, f64)>,
    /// The answered pings: (send time, seconds from the start of the pings; round trip
    /// µs); every one up to 10,000, every k-th beyond (the figures above use them all).
    pub pings: Vec<(f64, f64)>,
    /// The idle and loaded round trips (HdrHistogram V2 + deflate, base64).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub idle_histogram: Option<String>,
    /// See `idle_histogram`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub loaded_histogram: Option<String>,
}

/// Latency added by the load, µs (loaded − idle, per percentile).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct AddedLatency {
    /// Median.
    pub p50: f64,
    /// 90th percentile.
    pub p90: f64,
    /// 99th percentile.
    pub p99: f64,
}
