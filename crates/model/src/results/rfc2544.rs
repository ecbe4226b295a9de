//! The RFC 2544 benchmark tables (`wirebench rfc2544`), filled by `method::rfc2544`.

use serde::{Deserialize, Serialize};

/// Everything one `rfc2544` run measured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct Rfc2544Report {
    /// Link speed the percentages refer to, bit/s.
    pub line_rate_bps: u64,
    /// Throughput per frame size (§26.1).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub throughput: Vec<ThroughputResult>,
    /// Latency per frame size (§26.2).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub latency: Vec<LatencyResult>,
    /// Frame loss rate steps (§26.3).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub loss: Vec<LossRow>,
    /// Back-to-back bursts (§26.4, RFC 9004).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub b2b: Vec<BackToBack>,
    /// Every trial, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub trials: Vec<TrialLog>,
}

/// One line of the trial log.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TrialLog {
    /// Which benchmark and step: `throughput`, `verify`, `latency`, `loss`, `b2b`.
    pub purpose: String,
    /// Frame size.
    pub frame_len: u64,
    /// Asked load, frames/s (a burst: its length in frames).
    pub load: f64,
    /// `rate` or `burst`.
    pub kind: String,
    /// Trial duration, s (0 for a burst).
    pub duration_s: f64,
    /// Frames sent.
    pub sent: u64,
    /// Frames received.
    pub received: u64,
    /// Duplicates received.
    pub duplicates: u64,
    /// Loss ratio.
    pub loss_ratio: f64,
    /// Load offered, frames/s.
    pub offered_fps: f64,
    /// The generator fell behind.
    pub generator_limited: bool,
}

/// The throughput search algorithm.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Search {
    /// Classic bisection between a loss-free and a lossy load, one trial per load.
    Binary,
    /// RFC 9971 MLRsearch: loads classified from all their trials with an exceed ratio.
    Mlr,
}

/// The result of a throughput search for one frame size.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ThroughputResult {
    /// Frame size.
    pub frame_len: u64,
    /// Which search.
    pub search: Search,
    /// Highest load that met the loss goal (the relevant lower bound), frames/s; `None`
    /// when even the minimum load failed.
    pub fps: Option<f64>,
    /// Lowest load that failed (the relevant upper bound), frames/s; `None` if none did.
    pub upper_fps: Option<f64>,
    /// MLRsearch conditional throughput: forwarding rate at the lower bound.
    pub conditional_fps: Option<f64>,
    /// Theoretical maximum at the line rate.
    pub max_fps: f64,
    /// The maximum load searched was capped at what the generator reached.
    pub generator_cap_fps: Option<f64>,
    /// Why the result is irregular, if it is.
    pub irregular: Option<String>,
    /// Trials spent.
    pub trials: usize,
}

/// One row of the frame loss rate benchmark.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LossRow {
    /// Frame size.
    pub frame_len: u64,
    /// Offered load in % of line rate.
    pub percent: f64,
    /// Offered load, frames/s.
    pub fps: f64,
    /// Frames sent.
    pub sent: u64,
    /// Frames received.
    pub received: u64,
    /// `(sent − received) · 100 / sent`.
    pub loss_percent: f64,
    /// The generator could not offer this load: the step measures the tool.
    #[serde(default)]
    pub generator_limited: bool,
}

/// The back-to-back result for one frame size.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BackToBack {
    /// Frame size.
    pub frame_len: u64,
    /// Longest zero-loss burst of each repetition, frames.
    pub bursts: Vec<u64>,
    /// Their mean.
    pub mean: Option<f64>,
    /// Their standard deviation.
    pub std_dev: Option<f64>,
    /// RFC 9004 implied buffer time: mean burst / max frame rate, µs.
    pub buffer_time_us: Option<f64>,
    /// Why there is no figure (e.g. the device forwards at line rate, RFC 9004).
    pub note: Option<String>,
}

/// The latency result for one frame size.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LatencyResult {
    /// Frame size.
    pub frame_len: u64,
    /// Load the latency was measured at, frames/s.
    pub fps: f64,
    /// Trials run.
    pub trials: usize,
    /// Percentiles over all tagged frames of all trials.
    pub summary: Option<crate::stats::histogram::LatencySummary>,
    /// The merged histogram (base64 HdrHistogram V2, deflated).
    pub histogram: Option<String>,
}
